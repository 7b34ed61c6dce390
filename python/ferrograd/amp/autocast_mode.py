"""torch.amp.autocast and its helpers. ferrograd has no autocast dispatch (per-op dtype casting) yet, so an
autocast region that would really be active raises NotImplementedError instead of silently running in float32;
`enabled=False` regions, which scripts use to switch autocast off, work as context managers and decorators."""
import functools
import warnings

import ferrograd as _fg

__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def _check_device_type(device_type):
    """torch's checks on a device_type string: a str whose type part is a known device type."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type.split(":", 1)[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                           f"{device_type}")
    return device_type.split(":", 1)[0]


def is_autocast_available(device_type):
    """Whether torch would support autocast on `device_type` (ferrograd itself never activates it)."""
    return _check_device_type(device_type) in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "xla")


def is_autocast_enabled(device_type=None):
    """Always False in ferrograd: no autocast region can be active."""
    if device_type is not None:
        _check_device_type(device_type)
    return False


def get_autocast_dtype(device_type):
    """The dtype autocast would use by default on `device_type` (float16 on cuda/mps, else bfloat16)."""
    kind = _check_device_type(device_type)
    return _fg.float16 if kind in ("cuda", "mps") else _fg.bfloat16


class autocast:
    """Context manager / decorator `torch.amp.autocast(device_type, dtype=None, enabled=True,
    cache_enabled=None)`. Only disabled regions are supported; see the module docstring."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        kind = _check_device_type(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(kind) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        if not self._enabled:
            return
        if kind == "cuda" and not _fg.cuda.is_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
            self._enabled = False
            return
        if kind == "cpu" and self.fast_dtype not in (_fg.bfloat16, _fg.float16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          stacklevel=2)
            self._enabled = False
            return
        raise NotImplementedError(
            f"ferrograd does not implement autocast yet (torch.amp.autocast('{device_type}', "
            f"dtype={self.fast_dtype}) was requested). For mixed precision, cast the model and its inputs "
            f"instead, e.g. model.to(torch.bfloat16), or pass enabled=False.")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd.Function's forward: records the autocast state on ctx (autocast is never
    active in ferrograd, so inputs are never cast) and runs the forward."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        ctx._fwd_used_autocast = False
        return fwd(*args, **kwargs)

    return forward


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd.Function's backward: runs it under the forward's autocast state."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(*args, **kwargs):
        return bwd(*args, **kwargs)

    return backward
