"""torch.nn: Module and Parameter, layers, losses, `functional`, `init`, `parallel`, `utils` and `attention`.

Everything is composed from engine ops (autograd derives the backward); convolution and pooling are
built on the engine's unfold/fold (im2col/col2im) primitives.
"""

from . import attention, functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "attention", "functional", "init", "parallel", "utils", *_modules_all]
