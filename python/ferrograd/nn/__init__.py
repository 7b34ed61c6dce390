"""torch.nn: Module and Parameter, layers, losses, `functional`, `init`, `parallel`, `utils` and `attention`.

Everything is composed from engine ops (autograd derives the backward); convolution and pooling are
built on the engine's unfold/fold (im2col/col2im) primitives.
"""

from . import attention, functional, init, parallel, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter



def factory_kwargs(kwargs):
    """The factory keyword arguments (device, dtype, memory_format) of a module constructor's **kwargs,
    merged with those of an explicit `factory_kwargs` dict; TypeError for any other key or a key given
    both ways (torch.nn.factory_kwargs)."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    unexpected = kwargs.keys() - simple - {"factory_kwargs"}
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for key in simple & kwargs.keys():
        if key in out:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        out[key] = kwargs[key]
    return out


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "attention", "functional", "init", "parallel", "utils", "DataParallel", "factory_kwargs",
           *_modules_all]
