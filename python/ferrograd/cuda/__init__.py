"""torch.cuda: the CUDA device, its memory and its queue of work.

Tensors go to the GPU with ``x.to("cuda")``, ``x.cuda()``, ``device="cuda"`` on creation
functions or ``module.to("cuda")``. The driver, NVRTC and cuBLAS are loaded at run time (from the
system, or from the NVIDIA pip packages that torch installs), so ``ferrograd`` imports on machines
without a GPU; there ``is_available()`` is False and moving a tensor to "cuda" raises torch's
error.
"""

import sys as _sys

from .. import _C

_C._cuda_set_python_paths([p for p in _sys.path if p])

from .._tensor_types import CUDA_TYPES as _CUDA_TYPES  # torch.cuda.FloatTensor, ...

globals().update(_CUDA_TYPES)
del _CUDA_TYPES


def is_available():
    """True when a CUDA device can hold tensors (never raises, never warns)."""
    return _C._cuda_is_available()


def device_count():
    return _C._cuda_device_count()


def _index(device):
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    d = _C.device(device) if isinstance(device, str) else device
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return 0 if d.index is None else d.index


def get_device_name(device=None):
    return _C._cuda_device_name(_index(device))


def get_device_capability(device=None):
    return tuple(_C._cuda_capability(_index(device)))


def current_device():
    _C._cuda_device_name(0)  # raises torch's error without a device
    return 0


def set_device(device):
    if _index(device) != 0:
        raise NotImplementedError("ferrograd uses one CUDA device (cuda:0)")


def synchronize(device=None):
    """Wait until all queued work on the device has finished."""
    _C._cuda_synchronize()


def memory_allocated(device=None):
    """Bytes held by live tensors (rounded to the allocator's block sizes)."""
    return _C._cuda_memory_stats()[0]


def max_memory_allocated(device=None):
    return _C._cuda_memory_stats()[1]


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver (live blocks plus the cache)."""
    return _C._cuda_memory_stats()[2]


def reset_peak_memory_stats(device=None):
    _C._cuda_reset_peak_memory_stats()


def empty_cache():
    """Give cached, unused blocks back to the driver."""
    _C._cuda_empty_cache()


def manual_seed(seed):
    """Random numbers on the device come from the one generator (torch.manual_seed)."""
    _C.manual_seed(seed)


def manual_seed_all(seed):
    manual_seed(seed)


def is_initialized():
    return is_available()


def init():
    if not is_available():
        _C._cuda_device_name(0)


def precompile_kernels():
    """ferrograd's own: compile every CUDA kernel for this GPU into the on-disk kernel cache
    (``~/.cache/ferrograd/kernels`` or ``FERROGRAD_CACHE_DIR``), on all CPU threads at once, so
    that no later process waits for NVRTC on an op's first use (for example when building a
    container image). Returns the number of kernels."""
    if not is_available():
        _C._cuda_device_name(0)  # torch's error
    return _C._cuda_precompile()


def __getattr__(name):
    # torch.cuda.amp, imported on first use (it pulls in ferrograd.amp)
    if name == "amp":
        import importlib

        return importlib.import_module("ferrograd.cuda.amp")
    raise AttributeError(f"module 'ferrograd.cuda' has no attribute '{name}'")
