"""torch.backends.opt_einsum: contraction-order search for einsum through the opt_einsum package.

ferrograd's einsum contracts left to right and never calls opt_einsum, so `is_available()` is False
(as torch without the package); `enabled` and `strategy` are settable as in torch."""

import sys
import types

from ._flags import FlagModule

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]


def is_available():
    return False


def get_opt_einsum():
    """The opt_einsum package if ferrograd used it: it does not."""
    return None


class _OptEinsumModule(FlagModule, types.ModuleType):
    _FLAG_NAMES = {"enabled": "opt_einsum.enabled", "strategy": "opt_einsum.strategy"}

    def __getattr__(self, name):
        # torch reports strategy None while opt_einsum is not available
        if name == "strategy" and not is_available():
            return None
        return super().__getattr__(name)


sys.modules[__name__].__class__ = _OptEinsumModule
