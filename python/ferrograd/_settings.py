"""Process-wide settings that torch keeps at its top level: the default float dtype (and device),
the float32 matmul precision, deterministic-algorithm mode, and tensor print options.

The default dtype lives in the engine (`_C._set_default_dtype`: creation functions and type
promotion read it there); the matmul precision is stored with the other backend switches
(backends/_flags.py); the rest is here.
"""

import warnings

from . import _C

__all__ = ["set_default_dtype", "get_default_dtype", "set_default_tensor_type", "set_default_device", "get_default_device",
           "set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "set_printoptions"]


# ---- default dtype and device ---------------------------------------------------------------

def set_default_dtype(d):
    """Make the floating dtype `d` the default: of tensors made from Python floats and sizes
    (tensor, zeros, rand, arange(1.), ...), of nn layers' parameters, and of what Python floats
    and integer true division promote to. Only floating dtypes (torch's TypeError otherwise)."""
    if not isinstance(d, _C.dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    _C._set_default_dtype(d)


def get_default_dtype():
    """The default floating dtype (float32 unless set_default_dtype changed it)."""
    return _C._get_default_dtype()


def set_default_tensor_type(t):
    """The legacy form (deprecated in torch 2.1): a typed class or its name ("torch.DoubleTensor")
    sets the default dtype; a CUDA type would set the default device too (see set_default_device)."""
    from ._tensor_types import _BY_STRING, tensortype

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        if t not in _BY_STRING:
            raise ModuleNotFoundError(f"No module named '{t.rsplit('.', 1)[0]}'")
        t = _BY_STRING[t]
    if not isinstance(t, tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if t.is_cuda:
        set_default_device("cuda")
    _C._set_default_dtype(t.dtype)


_DEFAULT_DEVICE = None


def set_default_device(device):
    """The device creation functions use when none is given. ferrograd makes tensors on the CPU
    unless told otherwise; only the CPU (or None, to reset) can be the default for now."""
    global _DEFAULT_DEVICE
    if device is None:
        _DEFAULT_DEVICE = None
        return
    d = _C.device(device) if isinstance(device, (str, int)) else device
    if not isinstance(d, _C.device):
        raise TypeError(f"set_default_device(): expected a torch.device, str or int, got {type(device).__name__}")
    if d.type != "cpu":
        raise NotImplementedError(f"ferrograd: set_default_device({str(d)!r}) is not supported yet: creation "
                                  "functions make CPU tensors unless given device=; pass device= or move the "
                                  "tensors with .to(device)")
    _DEFAULT_DEVICE = d


def get_default_device():
    return _C.device("cpu")


# ---- float32 matmul precision ---------------------------------------------------------------

def set_float32_matmul_precision(precision):
    """"highest" (IEEE float32 products), "high" (TF32 allowed) or "medium" (bfloat16 allowed):
    sets torch.backends.cuda.matmul.allow_tf32 (True unless "highest"), as torch's: the CUDA
    float32 matmul then uses TF32 tensor-core math (cuBLAS). The CPU matmul is IEEE float32 always."""
    from .backends._flags import _PRECISIONS, set_matmul_precision

    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    set_matmul_precision(precision)


def get_float32_matmul_precision():
    from .backends._flags import FLAGS

    return FLAGS["float32_matmul_precision"]


# ---- deterministic algorithms ---------------------------------------------------------------
# ferrograd's kernels are deterministic (gradients are summed in a fixed order, see docs/engine.md), so
# the mode changes nothing that is computed; it is kept for the scripts that set and read it.

_DETERMINISTIC = {"mode": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = warn_only


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    return _DETERMINISTIC["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """"default"/0: off, "warn"/1: deterministic with warnings, "error"/2: deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _DETERMINISTIC["mode"]:
        return 0
    return 1 if _DETERMINISTIC["warn_only"] else 2


# ---- print options --------------------------------------------------------------------------

class _PrintOptions:
    """What tensor printing reads (ferrograd/_tensor_str.py), torch's defaults."""

    def __init__(self):
        self.precision = 4
        self.threshold = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode = None

    def __repr__(self):
        return (f"_PrintOptions(precision={self.precision}, threshold={self.threshold}, edgeitems={self.edgeitems}, "
                f"linewidth={self.linewidth}, sci_mode={self.sci_mode})")


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80),
}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print (torch.set_printoptions): a profile ("default", "short", "full") first,
    then each option given; sci_mode is set every call (None: chosen per tensor)."""
    if profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            setattr(PRINT_OPTS, name, value)
    PRINT_OPTS.sci_mode = sci_mode

