"""Facts and switches of the torch namespace about the runtime, not about tensors: what the build has
(has_lapack, has_mkl, has_openmp, has_spectral), the math constants torch re-exports (e, pi, inf, nan,
newaxis), the interop thread count (ferrograd has one pool: the setting is recorded and reported),
warn_always, set_anomaly_enabled, seed, typename, is_storage, get_device, get_device_module,
is_distributed, is_vulkan_available and set_flush_denormal."""

import math

from . import _C

# what this build of ferrograd has: dense linear algebra (yes), MKL, OpenMP, FFT (no)
has_lapack = True
has_mkl = False
has_openmp = False
has_spectral = False

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

_interop = {"threads": None, "set": False}
_warn_always = [False]


def get_num_interop_threads():
    """The inter-op thread count: ferrograd runs inter-op work on its one pool, so this is that pool's
    size unless set_num_interop_threads recorded another."""
    return _interop["threads"] if _interop["threads"] is not None else _C.get_num_threads()


def set_num_interop_threads(num):
    """Record the inter-op thread count (once, before any inter-op work, as torch: a second call raises)."""
    if not isinstance(num, int) or num <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _interop["set"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop["threads"], _interop["set"] = num, True


def init_num_threads():
    """Nothing to initialise per thread: ferrograd's pool is set up once."""


def set_warn_always(b):
    """Whether warnings torch gives once per process are given every time (recorded; read back by
    is_warn_always_enabled)."""
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    return _warn_always[0]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (as autograd.set_detect_anomaly, without a block)."""
    _C._set_anomaly_enabled(enabled, check_nan)


def seed():
    """Seed the default generator with a non-deterministic number and return it (torch.random.seed)."""
    from .random import seed as reseed

    return reseed()


def typename(obj):
    """The type's name as torch spells it: 'torch.FloatTensor' for a tensor, module.qualname otherwise."""
    if isinstance(obj, _C.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        qualname = type(obj).__qualname__
        module = type(obj).__module__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def is_storage(obj):
    """Whether obj is a storage object (ferrograd has none: tensors own their storage)."""
    return False


def is_distributed(input):
    """Whether the tensor is distributed: never (torch.is_distributed)."""
    return False


def is_vulkan_available():
    return False


def set_flush_denormal(mode):
    """Whether denormal flushing was set: ferrograd does not control the CPU's floating-point mode, so
    False (torch's answer where it is unsupported); nothing changes."""
    return False


def get_device_module(device=None):
    """The module of a device type: ferrograd.cuda for 'cuda', ferrograd.cpu for 'cpu'; without an
    argument, that of the current accelerator (cuda when available, else cpu)."""
    import importlib

    if device is None:
        from . import cuda
        kind = "cuda" if cuda.is_available() else "cpu"
    elif isinstance(device, _C.device):
        kind = device.type
    elif isinstance(device, str):
        kind = _C.device(device).type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")
    return importlib.import_module(f"ferrograd.{kind}")


def get_device(input):
    """The device index of a CUDA tensor, -1 for a CPU tensor."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.device.index if input.device.type == "cuda" else -1


__all__ = """has_lapack has_mkl has_openmp has_spectral e pi inf nan newaxis get_num_interop_threads
set_num_interop_threads init_num_threads set_warn_always is_warn_always_enabled set_anomaly_enabled seed
typename is_storage get_device is_distributed is_vulkan_available set_flush_denormal get_device_module""".split()
