"""Helpers shared by the Python-composed ops (_indexing, _sorting, _shape_ops, _pointwise, ...): dim
wrapping, dtype tests, the host (NumPy) round trip for index computations that are not differentiable,
and `_as_method`, which turns a torch function fn(input, ...) into the Tensor method fn(self, ...)."""

import builtins
import functools
import inspect

from ._lazy import numpy as np

from . import _C

Tensor = _C.Tensor
_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _wrap_dim(dim, ndim):
    n = builtins.max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, not {type(dim).__name__}")
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _is_float(t):
    return t.is_floating_point()


def _needs_grad(*ts):
    return _C.is_grad_enabled() and builtins.any(isinstance(t, Tensor) and t.requires_grad for t in ts)


def _host(t):
    """A NumPy copy of a tensor's values (through the host for a CUDA tensor)."""
    return np.array(t.detach().cpu().numpy())


def _from_host(a, like):
    from ._creation import tensor as _tensor
    t = _tensor(np.array(a, order="C"))  # (np.ascontiguousarray makes 0-d 1-d)
    return t.to(like.device) if like.device.type != "cpu" else t


def _index_from_host(a, like):
    return _from_host(np.asarray(a, dtype=np.int64), like)


def _zeros(shape, like, dtype=None):
    return _C.zeros(tuple(shape), dtype=dtype or like.dtype, device=like.device)


def _arange(n, like):
    return _C.arange(n, device=like.device)


def _broadcast_shape(*shapes):
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        sizes = [s[len(s) - nd + k] for s in shapes if len(s) - nd + k >= 0]
        big = [v for v in sizes if v != 1]
        if big and builtins.any(v != big[0] for v in big):
            raise RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of tensor b "
                               f"({sizes[-1]}) at non-singleton dimension {k}")
        out.append(big[0] if big else 1)
    return tuple(out)


def _result_dtype(a, b):
    return (_C.zeros(1, dtype=a.dtype) + _C.zeros(1, dtype=b.dtype)).dtype


def _index_tensor(a, like):
    return _index_from_host(np.asarray(a), like)


def _floatish(x):
    return x if x.is_floating_point() else x.to(_C.float32)


def _as_method(fn):
    """fn(input, ...) as the Tensor method fn(self, ...), with that signature (for the type stub)."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    method.__signature__ = sig.replace(parameters=[ps[0].replace(name="self")] + ps[1:])
    return method
