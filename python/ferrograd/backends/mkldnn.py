"""torch.backends.mkldnn: oneDNN. ferrograd's CPU kernels are its own; oneDNN is not used, so
`is_available()` is False; the switches are kept."""

import contextlib
import sys
import types

from ._flags import FlagModule, overridden

__all__ = ["is_available", "flags", "enabled", "deterministic"]


def is_available():
    return False


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True):
    with overridden("mkldnn.", enabled=enabled, deterministic=deterministic):
        yield


class _MkldnnModule(FlagModule, types.ModuleType):
    _FLAG_NAMES = {"enabled": "mkldnn.enabled", "deterministic": "mkldnn.deterministic"}


sys.modules[__name__].__class__ = _MkldnnModule
