"""torch.backends.cudnn: cuDNN's switches (benchmark, deterministic, allow_tf32, enabled).

ferrograd's CUDA backend has no cuDNN (convolutions are its own kernels), so `is_available()` is
False and `version()` None, as torch reports on a build without cuDNN; the switches are still
settable with torch's defaults (see backends/_flags.py)."""

import contextlib
import sys
import types

from ._flags import FLAGS, FlagModule, check_bool

__all__ = ["is_available", "version", "is_acceptable", "flags", "enabled", "benchmark", "benchmark_limit",
           "deterministic", "allow_tf32"]


def is_available():
    """Whether cuDNN can be used: never, in ferrograd."""
    return False


def version():
    """The cuDNN version, or None without cuDNN (as torch without it)."""
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never, without cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set all the cuDNN switches for the block (those not given to their defaults here, as torch),
    and restore them after."""
    keys = {"cudnn.enabled": enabled, "cudnn.benchmark": benchmark, "cudnn.benchmark_limit": benchmark_limit,
            "cudnn.deterministic": deterministic, "cudnn.allow_tf32": allow_tf32}
    saved = {k: FLAGS[k] for k in keys}
    try:
        for k, v in keys.items():
            FLAGS[k] = check_bool(f"set_{k.split('.')[1]}_cudnn", v) if isinstance(saved[k], bool) else v
        yield
    finally:
        FLAGS.update(saved)


class _CudnnModule(FlagModule, types.ModuleType):
    _FLAG_NAMES = {"enabled": "cudnn.enabled", "benchmark": "cudnn.benchmark",
                   "benchmark_limit": "cudnn.benchmark_limit", "deterministic": "cudnn.deterministic",
                   "allow_tf32": "cudnn.allow_tf32"}


sys.modules[__name__].__class__ = _CudnnModule
