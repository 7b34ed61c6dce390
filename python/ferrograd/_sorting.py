"""Sorting and searching: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive,
searchsorted, bucketize and isin.

Index computations that are not differentiable (a sort's permutation) run in NumPy on the host; the
values are then taken with gather / index_select, whose backward scatters the gradient back (as
torch's rules for these ops do)."""

import functools
import inspect
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from . import return_types as _rt
from ._argcheck import check_arg, tensor_args
from ._op_utils import Tensor, _as_method, _from_host, _host, _index_from_host, _index_tensor, _wrap_dim


for _name, _fields in (("sort", ("values", "indices")), ("topk", ("values", "indices")),
                       ("kthvalue", ("values", "indices")), ("median", ("values", "indices")),
                       ("cummax", ("values", "indices")), ("cummin", ("values", "indices")),
                       ("aminmax", ("min", "max"))):
    setattr(_rt, _name, namedtuple(_name, list(_fields)))


def _argsort_host(a, axis, descending, stable=True):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    # descending, ties in their original order, NaN first (torch's order)
    n = a.shape[axis]
    rev = np.flip(a, axis)
    return (n - 1) - np.flip(np.argsort(rev, axis=axis, kind="stable"), axis)


def _bool_host(a):
    return a.astype(np.int8) if a.dtype == np.bool_ else a


@tensor_args("input")
def argsort(input, dim=-1, descending=False, stable=False):
    d = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return _C.zeros((), dtype=_C.int64, device=input.device)
    idx = _C._argsort(input, d, bool(descending))  # CPU tensors in Rust
    if idx is not None:
        return idx
    return _index_from_host(_argsort_host(_bool_host(_host(input)), d, descending), input)


@tensor_args("input")
def sort(input, dim=-1, descending=False, stable=False):
    idx = argsort(input, dim, descending)
    if input.dim() == 0:
        return _rt.sort(input.clone(), idx)
    return _rt.sort(input.gather(_wrap_dim(dim, input.dim()), idx), idx)


@tensor_args("input")
def topk(input, k, dim=-1, largest=True, sorted=True):
    if type(k) is not int:
        k = check_arg("int", k, "topk", "k", 0)  # torch's TypeError for a k that is no int
    if type(dim) is not int:
        dim = check_arg("int", dim, "topk", "dim", 0)
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if not isinstance(k, int) or k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if input.dim() == 0:
        idx = _C.zeros((), dtype=_C.int64, device=input.device)
        return _rt.topk(input.clone(), idx)
    order = _C._argsort(input, d, bool(largest))  # CPU tensors in Rust
    if order is not None:
        idx = order.narrow(d, 0, k).contiguous()
    else:
        order = _argsort_host(_bool_host(_host(input)), d, largest)
        idx = _index_from_host(np.take(order, np.arange(k), axis=d), input)
    return _rt.topk(input.gather(d, idx), idx)


_TOPK_KEYWORDS = frozenset(("dim", "largest", "sorted"))


def _fast_topk(general):
    """topk with its common calls (a CPU tensor, plain int k and dim, bool largest; sorted, which
    the general path ignores too) made by one call into the engine (_C._topk, the same ops, None
    where the general path is needed); every other call is the general path's, as given."""
    @functools.wraps(general)
    def topk(*args, **kwargs):
        n = len(args)
        if not kwargs and 2 <= n <= 5:
            r = _C._topk(args[0], args[1], args[2] if n > 2 else -1, args[3] if n > 3 else True)
        elif n == 2 and kwargs.keys() <= _TOPK_KEYWORDS:
            r = _C._topk(args[0], args[1], kwargs.get("dim", -1), kwargs.get("largest", True))
        else:
            r = None
        if r is not None:
            return _rt.topk(*r)
        return general(*args, **kwargs)
    return topk


_topk = topk
topk = _fast_topk(_topk)


@tensor_args("input")
def kthvalue(input, k, dim=-1, keepdim=False):
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if not isinstance(k, int) or k < 1 or k > n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_kth(input, d, k - 1, keepdim, _rt.kthvalue)


def _select_kth(input, d, pos, keepdim, kind):
    if input.dim() == 0:
        return kind(input.clone(), _C.zeros((), dtype=_C.int64, device=input.device))
    order = _argsort_host(_bool_host(_host(input)), d, False)
    return _pick(input, d, np.take(order, [pos], axis=d), keepdim, kind)


def _pick(input, d, pos, keepdim, kind):
    """kind(values, indices) of the elements at host positions `pos` (keepdim-shaped) along d."""
    idx = _index_from_host(pos, input)
    vals = input.gather(d, idx)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return kind(vals, idx)


@tensor_args("input")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    a = _host(input)
    if dim is None:
        vals, inv, cnt = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(a.shape)
    else:
        d = _wrap_dim(dim, input.dim())
        vals, inv, cnt = np.unique(a, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    out = (_from_host(vals.astype(a.dtype), input),)
    if return_inverse:
        out += (_index_tensor(inv, input),)
    if return_counts:
        out += (_index_tensor(cnt, input),)
    return out[0] if len(out) == 1 else out


@tensor_args("input")
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    a = _host(input)
    if dim is None:
        flat = a.reshape(-1)
        new = np.ones(flat.size, dtype=bool)
        new[1:] = flat[1:] != flat[:-1]
        vals = flat[new]
        inv = (np.cumsum(new) - 1).reshape(a.shape)
    else:
        d = _wrap_dim(dim, input.dim())
        m = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
        new = np.ones(m.shape[0], dtype=bool)
        new[1:] = (m[1:] != m[:-1]).any(axis=1)
        vals = np.moveaxis(np.moveaxis(a, d, 0)[new], 0, d)
        inv = np.cumsum(new) - 1
    cnt = np.diff(np.append(np.flatnonzero(new), new.size))
    out = (_from_host(np.ascontiguousarray(vals), input),)
    if return_inverse:
        out += (_index_tensor(inv, input),)
    if return_counts:
        out += (_index_tensor(cnt, input),)
    return out[0] if len(out) == 1 else out


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError(f"searchsorted(): argument 'sorted_sequence' (position 1) must be Tensor, not "
                        f"{type(sorted_sequence).__name__}")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = _host(sorted_sequence)
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter), -1)
    scalar = not isinstance(input, Tensor)
    vals = np.asarray(input) if scalar else _host(input)
    how = "right" if right else "left"
    if seq.ndim <= 1:
        out = np.searchsorted(seq.reshape(-1), vals, side=how)
    else:
        if scalar or vals.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor "
                               f"{list(vals.shape)}")
        s2, v2 = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=how) for s, v in zip(s2, v2)]).reshape(vals.shape)
    return _index_tensor(out, sorted_sequence)  # (no int32 dtype yet: out_int32 gives int64)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    if not isinstance(boundaries, Tensor):
        raise TypeError(f"bucketize(): argument 'boundaries' must be Tensor, not {type(boundaries).__name__}")
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(like, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    e = _host(elements) if isinstance(elements, Tensor) else np.asarray(elements)
    t = _host(test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return _from_host(np.isin(e, t, invert=invert), like)


def msort(input):
    return input.sort(0).values


# ------------------------------------------------------------------ exports
__all__ = """
sort argsort topk kthvalue unique unique_consecutive searchsorted bucketize isin msort
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
sort argsort kthvalue unique unique_consecutive msort
""".split()


def _topk_method():
    """topk's method is its fast form itself (one frame), with the method's signature."""
    method = _fast_topk(_topk)
    method.__signature__ = inspect.signature(_as_method(topk))
    return method


TENSOR_ATTRIBUTES = {"topk": _topk_method()}
