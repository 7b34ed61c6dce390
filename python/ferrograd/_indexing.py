"""Indexing ops as compositions of the engine's differentiable ops: the scatter family (scatter,
scatter_add, scatter_reduce, index_add/copy/fill/reduce, masked_scatter, index_put, put, the
select/slice/diagonal_scatter embeddings, fill_diagonal_), take, take_along_dim, argwhere and
nonzero_static. No gradient rule lives here: every result is made by ops the engine differentiates.

Note [scatter_add through gather's adjoint]: `_scatter_add_zeros` (index_add, scatter with
reduce='add', scatter_add_ and scatter_add on a GPU) reaches the engine's scatter-add into zeros (the
backward of gather) as the gradient of `zeros.gather(dim, index)` with `src` as the incoming gradient
(create_graph=True when src needs a gradient, so the result is differentiable: its backward is gather
again, ScatterAddBackward0). Without autograd the host computes it with np.add.at. scatter_add on the
CPU is the engine's own op, `_C._scatter_add`: one node, ScatterAddBackward0, as torch's.
"""

import builtins
import math

from ._lazy import numpy as np

from . import _C
from ._argcheck import check_arg, tensor_args
from ._inplace_methods import _inplace
from ._op_utils import (Tensor, _arange, _broadcast_shape, _from_host, _host, _is_float, _needs_grad, _wrap_dim,
                        _zeros)
from ._autocast_ops import NONE, PROMOTE, autocast_op


def _check_index(index, op):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dtype != _C.int64 and index.numel() > 0:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")


def _check_scatter(input, dim, index, src, op, device_checked=False):
    _check_index(index, op)
    d = _wrap_dim(dim, input.dim())
    if index.numel() == 0:
        return d
    if builtins.max(index.dim(), 1) != builtins.max(input.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor):
        if src.dtype != input.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        if builtins.max(src.dim(), 1) != builtins.max(index.dim(), 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ish, xsh = tuple(index.shape), tuple(input.shape)
    ssh = tuple(src.shape) if isinstance(src, Tensor) else None
    for k in range(len(ish)):
        if k != d and ish[k] > xsh[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ish)} to be "
                               f"no larger than self {list(xsh)} apart from dimension {d}")
        if ssh is not None and ish[k] > ssh[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(ish)} to be "
                               f"no larger than src {list(ssh)}")
    if device_checked and input.dim() and input.dtype in (_C.float32, _C.float64, _C.int64) \
            and isinstance(src, Tensor) and src.is_cuda == index.is_cuda == input.is_cuda:
        return d  # ferrograd's scatter_add (or gather, with a gradient) checks the indices, with this error
    size = input.shape[d] if input.dim() else 1
    idx = _host(index)
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise RuntimeError(f"index {int(bad.flat[0])} is out of bounds for dimension {d} with size {size}")
    return d


def _narrow_to(src, shape):
    if tuple(src.shape) == tuple(shape):
        return src
    return src[tuple(slice(0, s) for s in shape)]


def _scatter_add_zeros(src, shape, dim, index):
    """zeros(shape).scatter_add(dim, index, src), differentiable in src (Note [scatter_add through
    gather's adjoint]). `src` already has index's shape."""
    from .autograd.grad_mode import enable_grad
    if index.numel() == 0:
        return _zeros(shape, src) + src.sum() * 0 if src.requires_grad else _zeros(shape, src)
    if _needs_grad(src) and _is_float(src):
        z = _zeros(shape, src).requires_grad_()
        with enable_grad():
            g = z.gather(dim, index)
        return _C._grad([g], [z], [src], False, True, False, False)[0]
    if src.dtype in (_C.float32, _C.float64, _C.int64) and src.is_cuda == index.is_cuda:
        return _C._scatter_add_zeros(src, list(shape), dim, index)  # ferrograd's kernel (CPU or GPU)
    out = np.zeros(shape, dtype=_host(src).dtype)
    idx = _host(index)
    pos = list(np.indices(idx.shape, sparse=True))
    if len(shape) == 0:
        np.add.at(out.reshape(1), idx.reshape(-1) * 0, _host(src).reshape(-1))
    else:
        pos[dim] = idx
        np.add.at(out, tuple(pos), _host(src))
    return _from_host(out, src)


def _adv(index, dim):
    """The advanced-index tuple that addresses, for each position p of `index`, the element of the
    target with p's coordinates except index[p] along `dim` (scatter's placement)."""
    nd = index.dim()
    items = []
    for k in range(nd):
        if k == dim:
            items.append(index)
        else:
            shape = [1] * nd
            shape[k] = index.shape[k]
            items.append(_arange(index.shape[k], index).reshape(shape))
    return tuple(items)


def _value_like(value, input):
    if isinstance(value, Tensor):
        return value
    return _C.full((), value, dtype=input.dtype, device=input.device)


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "index")
def scatter_add(input, dim, index, src):
    d = _check_scatter(input, dim, index, src, "scatter_add", device_checked=True)
    if index.numel() == 0:
        return input.clone()
    src = _narrow_to(src, index.shape)
    if not (input.is_cuda or index.is_cuda or src.is_cuda):
        return _C._scatter_add(input, d, index, src)  # one node, ScatterAddBackward0 (torch's)
    return input + _scatter_add_zeros(src, tuple(input.shape), d, index)


@tensor_args("input", "index")
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    out = input.clone()
    return _scatter_into(out, dim, index, src, value, reduce, "scatter")


def _scatter_into(out, dim, index, src, value, reduce, op):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}() missing required argument 'src' or 'value'")
    d = _check_scatter(out, dim, index, src, op)
    if index.numel() == 0:
        return out
    if reduce is not None:
        if reduce != "add":
            raise RuntimeError(f"{op}(): reduce argument must be 'add' here (got {reduce!r})")
        src = _value_like(src, out).expand(index.shape) if not isinstance(src, Tensor) or src.dim() == 0 else src
        return out.add_(_scatter_add_zeros(_narrow_to(src, index.shape), tuple(out.shape), d, index))
    if out.dim() == 0:
        out[...] = src.reshape(-1)[index.numel() - 1] if isinstance(src, Tensor) and src.dim() else src
        return out
    if isinstance(src, Tensor) and src.dim() > 0:
        src = _narrow_to(src, index.shape)
    out[_adv(index, d)] = src
    return out


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    return _scatter_into(self, dim, index, src, value, reduce, "scatter_")


def scatter_add_(self, dim, index, src):
    d = _check_scatter(self, dim, index, src, "scatter_add_", device_checked=True)
    if index.numel() == 0:
        return self
    src = _narrow_to(src, index.shape)
    if not (self.is_cuda or index.is_cuda or src.is_cuda):
        # the CPU kernel adds into a copy of self in index order (torch's values bit for bit)
        return self.copy_(_C._scatter_add(self, d, index, src))
    return self.add_(_scatter_add_zeros(src, tuple(self.shape), d, index))


def _check_index_op(input, dim, index, source, op):
    """torch's checks for index_add / index_copy / index_fill; each raises its own exception kinds."""
    d = _wrap_dim(dim, input.dim())
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index.dim() > 1:
        if op.startswith("index_fill"):
            raise RuntimeError("Index has to be a vector/scalar")
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if index.dtype != _C.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    if source is not None:
        if source.dtype != input.dtype:
            raise RuntimeError(f"{op}(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                               "scalar type")
        n = index.numel()
        if source.dim() != input.dim() and builtins.min(source.dim(), input.dim()) == 0:
            raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, excluding the "
                               f"specified dimension. Got self.shape = {list(input.shape)} source.shape = "
                               f"{list(source.shape)}")
        if builtins.max(source.dim(), 1) != builtins.max(input.dim(), 1) or \
                (source.shape[d] if source.dim() else 1) != n:
            raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim) "
                               f"({source.shape[d] if source.dim() else 1})")
        for k in range(input.dim()):
            if k != d and source.shape[k] != input.shape[k]:
                raise RuntimeError(f"{op}(): Source/destination tensor must have same slice shapes. "
                                   f"Destination slice shape: {list(input.shape)} at dimension {d} and "
                                   f"source slice shape: {list(source.shape)} at dimension {d}.")
    size = input.shape[d] if input.dim() else 1
    idx = _host(index)
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        msg = f"index {int(bad.flat[0])} is out of bounds for dimension {d} with size {size}"
        if op.startswith("index_add"):
            raise RuntimeError(msg)
        raise IndexError(f"{op}(): {msg}" if op.startswith("index_copy") else msg)
    return d


def _index_expanded(index, d, source):
    shape = [1] * builtins.max(source.dim(), 1)
    shape[d] = -1
    return index.reshape(shape).expand(source.shape) if source.dim() else index.reshape(())


@tensor_args("input", "index", "source")
def index_add(input, dim, index, source, *, alpha=1):
    d = _check_index_op(input, dim, index, source, "index_add")
    if index.numel() == 0:
        return input.clone()
    added = _scatter_add_zeros(source, tuple(input.shape), d, _index_expanded(index, d, source))
    return input + (added if alpha == 1 else added * alpha)


def index_add_(self, dim, index, source, *, alpha=1):
    d = _check_index_op(self, dim, index, source, "index_add_")
    if index.numel() == 0:
        return self
    added = _scatter_add_zeros(source, tuple(self.shape), d, _index_expanded(index, d, source))
    return self.add_(added if alpha == 1 else added * alpha)


def _index_items(input, d, index):
    return (slice(None),) * d + (index.reshape(-1),)


def _index_put(out, dim, index, value, op, source=None):
    d = _check_index_op(out, dim, index, source, op)
    if index.numel() == 0:
        return out
    if out.dim() == 0:
        out[...] = value.reshape(()) if isinstance(value, Tensor) and value.dim() else value
        return out
    out[_index_items(out, d, index)] = value
    return out


@autocast_op(cpu=PROMOTE, cuda=NONE)
@tensor_args("input", "index", "source")
def index_copy(input, dim, index, source):
    return _index_put(input.clone(), dim, index, source, "index_copy", source)


def index_copy_(self, dim, index, source):
    return _index_put(self, dim, index, source, "index_copy_", source)


def _fill_value(value, input, op):
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    return value


@tensor_args("input", "index")
def index_fill(input, dim, index, value):
    return _index_put(input.clone(), dim, index, _fill_value(value, input, "index_fill_"), "index_fill")


def index_fill_(self, dim, index, value):
    return _index_put(self, dim, index, _fill_value(value, self, "index_fill_"), "index_fill_")


def _masked_scatter_into(out, mask, source, op):
    if not isinstance(mask, Tensor) or mask.dtype != _C.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if source.dtype != out.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{out.dtype} and {source.dtype}")
    m = mask.expand(out.shape) if tuple(mask.shape) != tuple(out.shape) else mask
    count = int(m.sum().item())
    if count > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    out[m] = source.reshape(-1)[:count]
    return out


@tensor_args("input", "mask", "source")
def masked_scatter(input, mask, source):
    shape = _broadcast_shape(tuple(input.shape), tuple(mask.shape))
    return _masked_scatter_into(input.expand(shape).clone() if shape else input.clone(), mask, source,
                                "masked_scatter")


def masked_scatter_(self, mask, source):
    return _masked_scatter_into(self, mask, source, "masked_scatter_")


@tensor_args("input", "indices")
def take_along_dim(input, indices, dim=None):
    if indices.dtype != _C.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int64 but got {indices.dtype}")
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    d = _wrap_dim(dim, input.dim())
    if input.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.dim()} dimensions for input, and {indices.dim()} "
                           "dimensions for indices")
    if input.dim() == 0:
        return input.gather(0, indices)
    si, sx = list(indices.shape), list(input.shape)
    si[d] = sx[d] = 1
    b = _broadcast_shape(tuple(si), tuple(sx))
    xs, js = list(b), list(b)
    xs[d], js[d] = input.shape[d], indices.shape[d]
    return input.expand(xs).gather(d, indices.expand(js))


def _index_put_accumulate(shape, indices, values, like):
    """zeros(shape).index_put_(indices, values, accumulate=True): the adjoint of x[indices] (whose
    backward scatter-adds), reached as in Note [scatter_add through gather's adjoint]."""
    from .autograd.grad_mode import enable_grad
    z = _zeros(shape, like)
    if _needs_grad(values) and like.is_floating_point():
        z.requires_grad_()
        with enable_grad():
            g = z[indices]
        v = values.to(g.dtype).expand(g.shape) if tuple(values.shape) != tuple(g.shape) else values
        return _C._grad([g], [z], [v], False, True, False, False)[0]
    if len(indices) <= len(shape) and builtins.all(i.dtype == _C.int64 for i in indices):
        return _C._index_put_accumulate(list(shape), list(indices), values, z)  # ferrograd's kernel (CPU or GPU)
    out = np.zeros(tuple(shape), dtype=_host(z).dtype)
    np.add.at(out, tuple(_host(i) for i in indices), _host(values))
    return _from_host(out, like)


def _check_indices(indices, op):
    if not isinstance(indices, (tuple, list)) or not builtins.all(isinstance(i, Tensor) for i in indices):
        raise TypeError(f"{op}(): argument 'indices' must be tuple of Tensors")
    return tuple(indices)


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "values")
def index_put(input, indices, values, accumulate=False):
    return index_put_(input.clone(), indices, values, accumulate)


def index_put_(self, indices, values, accumulate=False):
    indices = _check_indices(indices, "index_put_")
    if values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype} for "
                           f"the destination and {values.dtype} for the source.")
    if not accumulate:
        self[indices] = values
        return self
    if builtins.any(i.dtype == _C.bool for i in indices):  # masks as the integer positions they select
        idx = []
        for i in indices:
            idx += list(i.nonzero(as_tuple=True)) if i.dtype == _C.bool else [i]
        indices = tuple(idx)
    if not _needs_grad(self, values) and builtins.all(i.dtype == _C.int64 for i in indices):
        _C._index_put_accumulate_(list(indices), values, self)  # in place, torch's checks first
        return self
    self[indices]  # torch's checks (bounds, too many indices) and errors
    return self.add_(_index_put_accumulate(tuple(self.shape), indices, values, self))


@tensor_args("input", "index")
def take(input, index):
    if index.dtype != _C.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype}")
    n = input.numel()
    idx = _host(index)
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad.flat[0])} on a tensor of {n} elements.")
    return input.reshape(-1)[index]


@tensor_args("input")
def argwhere(input):
    return input.nonzero()


def _check_put(input, index, source, fname):
    if not isinstance(index, Tensor) or index.dtype != _C.int64:
        raise RuntimeError(f"{fname}(): Expected a long tensor for index, but got "
                           f"{getattr(index, 'dtype', type(index).__name__)}".replace("ferrograd.", ""))
    if not isinstance(source, Tensor):
        check_arg("Tensor", source, fname, "source", 3)
    if source.dtype != input.dtype:
        raise RuntimeError(f"{fname}(): Expected self and source to have same dtype but got self.dtype = "
                           f"{str(input.dtype).rsplit('.', 1)[-1].capitalize()} and source.dtype = "
                           f"{str(source.dtype).rsplit('.', 1)[-1].capitalize()}")
    if index.numel() != source.numel():
        raise IndexError(f"{fname}(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    if index.numel():
        idx = _host(index)
        bad = idx[(idx < -n) | (idx >= n)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad.flat[0])} on a tensor of {n} elements.")


@tensor_args("input", "index")
def put(input, index, source, accumulate=False):
    _check_put(input, index, source, "put_")  # (torch's put is put_ on a clone, and says so)
    if index.numel() == 0:
        return input.clone()
    flat = input.reshape(-1)
    n = input.numel()
    idx = (index.reshape(-1) + n) % n if n else index.reshape(-1)
    out = index_put(flat, (idx,), source.reshape(-1), accumulate)
    return out.view(tuple(input.shape))


def put_(self, index, source, accumulate=False):
    _check_put(self, index, source, "put_")
    if index.numel():
        self.copy_(put(self, index, source, accumulate))
    return self


def _check_embed(view_shape, src):
    if tuple(view_shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view_shape)}")


def _set_into(input, idx, src):
    out = input.clone()
    _check_embed(out[idx].shape, src)
    out[idx] = src  # index_put, differentiable in both
    return out


def select_scatter(input, src, dim, index):
    idx = [builtins.slice(None)] * input.dim()
    idx[_wrap_dim(dim, input.dim())] = index
    return _set_into(input, tuple(idx), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    idx = [builtins.slice(None)] * input.dim()
    idx[_wrap_dim(dim, input.dim())] = builtins.slice(start, end, step)
    return _set_into(input, tuple(idx), src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    d1, d2 = _wrap_dim(dim1, input.dim()), _wrap_dim(dim2, input.dim())
    moved = input.movedim((d1, d2), (-2, -1))
    n = builtins.max(0, builtins.min(moved.shape[-2] - builtins.max(-offset, 0), moved.shape[-1] - builtins.max(offset, 0)))
    rows = _C.arange(n, device=input.device) + builtins.max(-offset, 0)
    cols = _C.arange(n, device=input.device) + builtins.max(offset, 0)
    out = _set_into(moved, (Ellipsis, rows, cols), src)
    return out.movedim((-2, -1), (d1, d2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of input with src written at the elements input.as_strided(size, stride, storage_offset)
    sees (a copy of input is restrided, so the offset counts from input's first element, as torch's for a
    contiguous input). Differentiable in input (zero where overwritten) and src."""
    if tuple(src.shape) != tuple(size):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(size)}")
    out = input.contiguous().clone()
    out.as_strided(size, stride, storage_offset).copy_(src)
    return out


def _scatter_reduce_impl(input, dim, index, src, reduce, include_self, op):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _wrap_dim(dim, input.dim())
    if src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return input.clone()
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(builtins.slice(0, s) for s in index.shape)]
    # the values, on the host: every src element reduced into its destination (a flat index into input)
    x, s = _host(input), _host(src).reshape(-1)
    grids = list(np.indices(tuple(index.shape)))
    grids[d] = _host(index)
    flat = np.ravel_multi_index(tuple(grids), x.shape, mode="raise").reshape(-1)
    kind = x.dtype.kind
    big = np.inf if kind == "f" else np.iinfo(x.dtype).max
    ident = {"sum": 0, "mean": 0, "prod": 1, "amax": -big, "amin": big}[reduce]
    touched = np.zeros(x.size, dtype=bool)
    touched[flat] = True
    keep = np.ones(x.size, dtype=bool) if include_self else ~touched  # input's own value takes part
    acc = x.reshape(-1).astype(np.float64 if kind == "f" else np.int64)
    acc[~keep] = ident
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    ufunc.at(acc, flat, s)
    count = keep.astype(np.int64)
    np.add.at(count, flat, 1)
    count = np.maximum(count, 1)
    if reduce == "mean":
        acc = acc / count if kind == "f" else np.floor_divide(acc, count)
    value = _from_host(acc.reshape(x.shape).astype(x.dtype), input)
    if not (_C.is_grad_enabled() and (input.requires_grad or src.requires_grad)):
        return value
    # Gradient: out = value + (c - c.detach()) with c linear in input and src, its coefficients torch's
    # (mean: 1/count; amax/amin: split evenly among the elements equal to the result; prod: the product
    # of the other factors). The coefficients are constants, so there is no second-order gradient.
    if reduce in ("sum", "mean"):
        ci, cs = keep / count, 1.0 / count[flat]
        if reduce == "sum":
            ci, cs = keep.astype(np.float64), np.ones(flat.size)
    elif reduce in ("amax", "amin"):
        hit_i = keep & (x.reshape(-1) == acc)
        hit_s = s == acc[flat]
        hits = (x.reshape(-1) == acc).astype(np.int64)  # torch counts an excluded self that equals the result
        np.add.at(hits, flat, hit_s.astype(np.int64))
        hits = np.maximum(hits, 1)
        ci, cs = hit_i / hits, hit_s / hits[flat]
    else:
        xi = np.where(keep, x.reshape(-1), 1).astype(np.float64)
        zeros = (xi == 0).astype(np.int64)
        np.add.at(zeros, flat, (s == 0).astype(np.int64))
        nonzero_prod = np.where(xi == 0, 1.0, xi)
        np.multiply.at(nonzero_prod, flat, np.where(s == 0, 1.0, s))

        def others(v, at):  # the product of the other factors of v's group
            z, pr = zeros[at], nonzero_prod[at]
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(v == 0, np.where(z == 1, pr, 0.0), np.where(z == 0, pr / np.where(v == 0, 1, v), 0.0))
        ci, cs = others(xi, np.arange(x.size)) * keep, others(s.astype(np.float64), flat)
    cin = input * _from_host(ci.reshape(x.shape).astype(x.dtype), input)
    csrc = (src * _from_host(cs.reshape(tuple(index.shape)).astype(x.dtype), input)).reshape(-1)
    spread = _C.zeros(x.size, dtype=input.dtype, device=input.device).index_add(0, _from_host(flat, input), csrc)
    c = cin + spread.reshape(x.shape)
    return value + (c - c.detach())


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return _scatter_reduce_impl(input, dim, index, src, reduce, include_self, "scatter_reduce")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    shape = [1] * builtins.max(source.dim(), 1)
    shape[d] = -1
    full = index.reshape(shape).expand(tuple(source.shape)) if source.dim() else index.reshape(())
    return _scatter_reduce_impl(input, d, full, source, reduce, include_self, "index_reduce")


scatter_reduce_ = _inplace("scatter_reduce_", scatter_reduce)
index_reduce_ = _inplace("index_reduce_", index_reduce)


def fill_diagonal_(self, fill_value, wrap=False):
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and builtins.len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    shape = tuple(self.shape)
    mask = np.zeros(math.prod(shape), dtype=bool)
    if self.dim() == 2:
        step = shape[1] + 1
        stop = mask.size if wrap else builtins.min(shape) * shape[1]
        mask[0:stop:step] = True
    else:
        n = shape[0]
        mask[0:n ** self.dim():sum(n ** k for k in range(self.dim()))] = True
    return self.masked_fill_(_from_host(mask.reshape(shape), self), fill_value)


def nonzero_static(input, *, size, fill_value=-1):
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size]
    pad = _C.full((size - k, input.dim()), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([nz, pad])


# ------------------------------------------------------------------ exports
__all__ = """
scatter scatter_add index_add index_copy index_fill masked_scatter take_along_dim index_put take argwhere put
scatter_reduce index_reduce select_scatter slice_scatter diagonal_scatter nonzero_static as_strided_scatter
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
scatter scatter_add index_add index_copy index_fill masked_scatter take_along_dim index_put take argwhere
scatter_ scatter_add_ index_add_ index_copy_ index_fill_ masked_scatter_ index_put_ put put_ scatter_reduce
index_reduce select_scatter slice_scatter diagonal_scatter nonzero_static as_strided_scatter
""".split()
TENSOR_ATTRIBUTES = {n: globals()[n] for n in """
scatter_reduce_ index_reduce_ fill_diagonal_
""".split()}
