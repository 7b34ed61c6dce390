"""torch.accelerator: the device-agnostic face of the current accelerator. ferrograd's one
accelerator is CUDA, so each function is ferrograd.cuda's (with torch's errors where there is
no GPU)."""

import contextlib

from . import _C

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
           "set_device_index", "set_device_idx", "synchronize", "device_index", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats"]


def _cuda():
    from . import cuda

    return cuda


def _built():
    return "cuda" in _C._build_info()["features"]


def is_available():
    """Whether an accelerator (a CUDA device) can be used now."""
    return _cuda().is_available()


def current_accelerator(check_available=False):
    """device("cuda") when ferrograd was built with CUDA (and, with check_available, when a GPU is
    there too); None otherwise."""
    if not _built() or (check_available and not is_available()):
        return None
    return _C.device("cuda")


def device_count():
    """How many accelerator devices there are (0 without a GPU)."""
    return _cuda().device_count() if _built() else 0


def current_device_index():
    return _cuda().current_device()


current_device_idx = current_device_index


def _require():
    """torch's error when there is no device to talk to."""
    if not is_available():
        _C._cuda_device_name(0)


def set_device_index(device, /):
    if device is None:
        return
    _require()
    if isinstance(device, int) and device < 0:
        return  # torch: a negative index leaves the current device unchanged
    _cuda().set_device(device)


set_device_idx = set_device_index


def synchronize(device=None, /):
    """Wait for the work queued on the accelerator."""
    _require()
    _cuda().synchronize(device)


@contextlib.contextmanager
def device_index(device, /):
    """Run the block with `device` (an index, or None for no change) as the current device."""
    if device is not None:
        set_device_index(device)
    yield


def empty_cache():
    if is_available():
        _cuda().empty_cache()


def memory_allocated(device_index=None, /):
    return _cuda().memory_allocated(device_index)


def max_memory_allocated(device_index=None, /):
    return _cuda().max_memory_allocated(device_index)


def memory_reserved(device_index=None, /):
    return _cuda().memory_reserved(device_index)


def reset_peak_memory_stats(device_index=None, /):
    _cuda().reset_peak_memory_stats(device_index)
