"""torch functions built as compositions of the engine's differentiable ops: scatter/index family,
sort family, triangular/diagonal/shape helpers, einsum and friends, pointwise composites and
reductions. No gradient rule lives here: every result is made by ops the engine differentiates, so
gradients (and create_graph) come from their rules.

Index computations that are not differentiable (a sort's permutation, cummax's running argmax,
repeat_interleave's positions) run in NumPy on the host; the values are then taken with gather /
index_select, whose backward scatters the gradient back (as torch's rules for these ops do).

Note [scatter_add through gather's adjoint]: `_scatter_add_zeros` (index_add, scatter with
reduce='add', scatter_add_ and scatter_add on a GPU) reaches the engine's scatter-add into zeros (the
backward of gather) as the gradient of `zeros.gather(dim, index)` with `src` as the incoming gradient
(create_graph=True when src needs a gradient, so the result is differentiable: its backward is gather
again, ScatterAddBackward0). Without autograd the host computes it with np.add.at. scatter_add on the
CPU is the engine's own op, `_C._scatter_add`: one node, ScatterAddBackward0, as torch's.
"""

import builtins
import functools
import inspect
import math
import warnings
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from . import return_types as _rt
from ._argcheck import check_arg, tensor_args
from ._out import store as _store_out

Tensor = _C.Tensor

for _name, _fields in (("sort", ("values", "indices")), ("topk", ("values", "indices")),
                       ("kthvalue", ("values", "indices")), ("median", ("values", "indices")),
                       ("cummax", ("values", "indices")), ("cummin", ("values", "indices")),
                       ("aminmax", ("min", "max"))):
    setattr(_rt, _name, namedtuple(_name, list(_fields)))


# ------------------------------------------------------------------ helpers
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


# ------------------------------------------------------------------ scatter / index family
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


# ------------------------------------------------------------------ sort family
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
def median(input, dim=None, keepdim=False):
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _C.full((), float("nan"), dtype=input.dtype, device=input.device)
        a = _bool_host(_host(flat))
        if np.issubdtype(a.dtype, np.floating) and np.isnan(a).any():
            pos = int(np.argmax(np.isnan(a)))
        else:
            pos = int(np.argsort(a, kind="stable")[(a.size - 1) // 2])
        return flat[pos]
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.dim() and input.is_floating_point():
        a = _host(input)
        if np.isnan(a).any():  # a NaN in a row is that row's median (its first NaN)
            order = _argsort_host(a, d, False)
            first_nan = np.argmax(np.isnan(a), axis=d)
            has_nan = np.isnan(a).any(axis=d)
            med = np.take(order, [(n - 1) // 2], axis=d)
            med = np.where(np.expand_dims(has_nan, d), np.expand_dims(first_nan, d), med)
            idx = _index_from_host(med, input)
            vals = input.gather(d, idx)
            if not keepdim:
                vals, idx = vals.squeeze(d), idx.squeeze(d)
            return _rt.median(vals, idx)
    return _select_kth(input, d, (n - 1) // 2, keepdim, _rt.median)


def _cum_extreme(input, dim, largest, kind):
    d = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return kind(input.clone(), _C.zeros((), dtype=_C.int64, device=input.device))
    a = _bool_host(_host(input))
    acc = (np.maximum if largest else np.minimum).accumulate(a, axis=d)
    hit = a == acc
    if np.issubdtype(a.dtype, np.floating):
        hit |= np.isnan(a)
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    pos = np.where(hit, np.arange(a.shape[d]).reshape(shape), 0)
    idx = _index_from_host(np.maximum.accumulate(pos, axis=d) if a.size else pos, input)
    return kind(input.gather(d, idx), idx)


@tensor_args("input")
def cummax(input, dim):
    return _cum_extreme(input, dim, True, _rt.cummax)


@tensor_args("input")
def cummin(input, dim):
    return _cum_extreme(input, dim, False, _rt.cummin)


@tensor_args("input")
def cumprod(input, dim, *, dtype=None):
    d = _wrap_dim(dim, input.dim())
    x = input.to(dtype) if dtype is not None else input
    if not x.is_floating_point() and dtype is None:
        x = x.to(_C.int64)
    if x.dim() == 0:
        return x.clone()
    n = x.shape[d]
    if not _needs_grad(x):
        a = _host(x)
        return _from_host(np.cumprod(a, axis=d).astype(a.dtype), x)
    # out[..., i] = prod_{j <= i} x[..., j]: the row i of a lower-triangular mask over x, with 1 elsewhere
    xt = x.movedim(d, -1)
    mask = _arange(n, x).reshape(n, 1) >= _arange(n, x).reshape(1, n)
    rows = xt.unsqueeze(-2).expand((*xt.shape[:-1], n, n))
    out = rows.masked_fill(~mask, 1).prod(-1)
    return out.movedim(-1, d)


# ------------------------------------------------------------------ triangular, diagonal, shape helpers
def _tri_mask(input, diagonal, lower):
    if input.dim() < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 dimensions")
    r, c = input.shape[-2], input.shape[-1]
    diff = _arange(c, input).reshape(1, c) - _arange(r, input).reshape(r, 1)  # col - row
    return diff <= diagonal if lower else diff >= diagonal


@tensor_args("input")
def tril(input, diagonal=0):
    return input.masked_fill(~_tri_mask(input, diagonal, True), 0)


@tensor_args("input")
def triu(input, diagonal=0):
    return input.masked_fill(~_tri_mask(input, diagonal, False), 0)


def tril_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, True), 0)


def triu_(self, diagonal=0):
    return self.masked_fill_(~_tri_mask(self, diagonal, False), 0)


@tensor_args("input")
def diagonal(input, offset=0, dim1=0, dim2=1):
    return _C.Tensor.diagonal(input, offset, dim1, dim2)  # a view (torch.diagonal is _functional's)


@tensor_args("input")
def diag(input, diagonal=0):
    if input.dim() == 2:
        return globals()["diagonal"](input, diagonal)
    if input.dim() != 1:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.dim()}D")
    n = input.shape[0]
    m = n + builtins.abs(diagonal)
    out = _zeros((m, m), input)
    i = _arange(n, input)
    out[i + builtins.max(-diagonal, 0), i + builtins.max(diagonal, 0)] = input
    return out


@tensor_args("input")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    n = input.shape[-1]
    m = n + builtins.abs(offset)
    out = _zeros(tuple(input.shape[:-1]) + (m, m), input)
    i = _arange(n, input)
    out[..., i + builtins.max(-offset, 0), i + builtins.max(offset, 0)] = input
    return out.movedim((-2, -1), (dim1, dim2))


@tensor_args("input")
def trace(input):
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return diagonal(input).sum()


@tensor_args("input")
def roll(input, shifts, dims=None):
    if isinstance(shifts, int):
        shifts = (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    if isinstance(dims, int):
        dims = (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    x = input
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    for s, dm in zip(shifts, dims):
        d = _wrap_dim(dm, x.dim())
        n = x.shape[d] if x.dim() else 1
        if n == 0 or s % n == 0:
            x = x.clone() if x is input else x
            continue
        s %= n
        x = _C.cat([x.narrow(d, n - s, s), x.narrow(d, 0, n - s)], d)
    return x


@tensor_args("input")
def tile(input, dims):
    dims = tuple(dims) if not isinstance(dims, int) else (dims,)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims) if dims else input.clone()


def _check_repeat_total(r):
    # NumPy's repeat does not check its output size (a huge count crashes it): refuse it first
    total = builtins.sum(int(v) for v in np.asarray(r).reshape(-1)) if np.asarray(r).size < 4096 else \
        int(np.asarray(r, dtype=np.float64).sum())
    if total > 2 ** 48:
        raise RuntimeError(f"repeat_interleave: the result would have {total} elements, too many to allocate")


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # torch.repeat_interleave(repeats): the indices 0..n-1, each repeated
        r = _host(input)
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        _check_repeat_total(r)
        return _index_from_host(np.repeat(np.arange(r.size), r), input)
    if not isinstance(input, Tensor):
        raise TypeError(f"repeat_interleave(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, x.dim())
    n = x.shape[d] if x.dim() else 1
    if isinstance(repeats, Tensor):
        r = _host(repeats).reshape(-1)
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if r.size == 1:
            r = np.repeat(r, n)
        if r.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{r.size} and input.size({d}) = {n}")
    else:
        r = np.full(n, repeats)
    if (r < 0).any():
        raise RuntimeError("repeats can not be negative")
    _check_repeat_total(r)
    if x.dim() == 0:
        x = x.reshape(1)
    return x.index_select(d, _index_from_host(np.repeat(np.arange(n), r), x))


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for k, t in enumerate(ts):
        view = [1] * len(ts)
        view[k] = -1
        out.append(t.reshape(view).expand(shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


@tensor_args("input")
def diff(input, n=1, dim=-1, prepend=None, append=None):
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = _wrap_dim(dim, input.dim())
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _C.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi.logical_xor(lo) if x.dtype == _C.bool else hi - lo
    return x


def _as_dims(dims):
    return [dims] if isinstance(dims, int) else list(dims)


def tensordot(a, b, dims=2, out=None):
    if out is None:
        return _tensordot(a, b, dims)
    # torch's tensordot is composite: its out= is a copy recorded by autograd
    r = _tensordot(a, b, dims)
    if isinstance(out, Tensor) and out.requires_grad and _C.is_grad_enabled() and tuple(out.shape) != tuple(r.shape):
        raise RuntimeError("tensordot(): the 'out' tensor was specified and requires gradients, and its shape does "
                           "not match the expected result. Either remove the 'out' argument, ensure it does not "
                           "require gradients, or make sure its shape matches the expected output.")
    if not isinstance(out, Tensor):
        raise TypeError(f"tensordot(): argument 'out' must be Tensor, not {type(out).__name__}")
    return _store_out(r, out, track=True, dtype="tensordot: Expected the output tensor to have dtype {r}, but got "
                                                 "an output tensor with dtype {o}")


def _tensordot(a, b, dims):
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    elif isinstance(dims, Tensor):
        return _tensordot(a, b, dims.tolist())
    else:
        da, db = _as_dims(dims[0]), _as_dims(dims[1])
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [_wrap_dim(x, a.dim()) for x in da]
    db = [_wrap_dim(x, b.dim()) for x in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[i]} in dim {i} "
                               f"and second has size {b.shape[j]} in dim {j}")
    ka = [i for i in range(a.dim()) if i not in da]
    kb = [j for j in range(b.dim()) if j not in db]
    k = math.prod(a.shape[i] for i in da)
    am = a.permute(ka + da).reshape(math.prod(a.shape[i] for i in ka), k)
    bm = b.permute(db + kb).reshape(k, math.prod(b.shape[j] for j in kb))
    return am.mm(bm).reshape((*[a.shape[i] for i in ka], *[b.shape[j] for j in kb]))


@tensor_args("input", "other")
def kron(input, other):
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    va, vb = [], []
    for i in range(nd):
        va += [a.shape[i], 1]
        vb += [1, b.shape[i]]
    return (a.reshape(va) * b.reshape(vb)).reshape([a.shape[i] * b.shape[i] for i in range(nd)])


@tensor_args("input", "other")
def cross(input, other, dim=None):
    shape = _broadcast_shape(tuple(input.shape), tuple(other.shape))
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.", UserWarning, stacklevel=2)
        dim = next((k for k, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input, other, dim, shape)


def _cross(input, other, dim, shape):
    d = _wrap_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d] if input.dim() > d else 1} "
                           f"and {other.shape[d] if other.dim() > d else 1}")
    a, b = input.expand(shape), other.expand(shape)
    a0, a1, a2 = (a.narrow(d, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(d, i, 1) for i in range(3))
    return _C.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


# ------------------------------------------------------------------ einsum
def _check_einsum_subscripts(eq):
    """torch's error for a character that is no subscript (letters, and the ',', ' ', '...' and
    '->' around them), at its index in the equation as written."""
    i = 0
    while i < len(eq):
        c = eq[i]
        if c == "-" and eq[i + 1:i + 2] == ">":
            i += 2
            continue
        if not ((c.isascii() and c.isalpha()) or c in " ,."):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        i += 1


def _parse_einsum(eq, operands):
    _check_einsum_subscripts(eq)
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
        explicit = True
    else:
        lhs, out, explicit = eq, None, False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                         if len(operands) > len(terms) else
                         "einsum(): fewer operands were provided than specified in the equation")
    ell_nd = 0
    parsed = []
    for t, x in zip(terms, operands):
        if "..." in t:
            pre, post = t.split("...")
            k = x.dim() - len(pre) - len(post)
            if k < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(pre) + len(post)}) "
                                   f"is more than the number of dimensions ({x.dim()}) for operand")
            ell_nd = builtins.max(ell_nd, k)
            parsed.append((list(pre), k, list(post)))
        else:
            if len(t) != x.dim():
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(t)}) does not match "
                                   f"the number of dimensions ({x.dim()}) for operand and no ellipsis was given")
            parsed.append((list(t), None, []))
    ell = [f"\x00{i}" for i in range(ell_nd)]
    labels = []
    for pre, k, post in parsed:
        labs = pre + (ell[ell_nd - k:] if k is not None else []) + post
        labels.append(labs)
    if explicit:
        if "..." in out:
            pre, post = out.split("...")
            out_labels = list(pre) + ell + list(post)
        else:
            out_labels = list(out)
    else:
        counts = {}
        for labs in labels:
            for c in labs:
                counts[c] = counts.get(c, 0) + 1
        out_labels = ell + sorted(c for c, n in counts.items() if n == 1 and not c.startswith("\x00"))
    return labels, out_labels


def _einsum_prep(x, labs, keep):
    """Take diagonals of repeated labels and sum labels not in `keep`."""
    labs = list(labs)
    while True:
        dup = next((c for c in labs if labs.count(c) > 1), None)
        if dup is None:
            break
        i = labs.index(dup)
        j = labs.index(dup, i + 1)
        x = diagonal(x, 0, i, j)  # the diagonal goes last
        labs = [c for k, c in enumerate(labs) if k not in (i, j)] + [dup]
    drop = [k for k, c in enumerate(labs) if c not in keep]
    if drop:
        x = x.sum(drop)
        labs = [c for c in labs if c in keep]
    return x, labs


# einsum's common case, two operands contracted by one bmm: the plan of the general path's ops
# (below) for an equation and two shapes, made once. Its ops without those that leave the values
# as they are (permutes by the identity, expands to the same shape, sums over no label).
_EINSUM_PLANS = {}


def _einsum2_plan(eq, xs, ys):
    """(x's permutation or None, x as (batch, m, k), y's permutation or None, y as (batch, k, n),
    the product's shape, its permutation to the output or None) for x (shape xs) and y (shape ys),
    as einsum's general path computes them; None where that path does more (an ellipsis, a label
    repeated in an operand, a label summed in one operand only, sizes that broadcast) or raises."""
    eq = eq.replace(" ", "")
    if "." in eq or eq.count("->") > 1:
        return None
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    xl, yl = terms
    if len(xl) != len(xs) or len(yl) != len(ys) or len(set(xl)) != len(xl) or len(set(yl)) != len(yl):
        return None
    labels = xl + yl + out
    if labels and not (labels.isascii() and labels.isalpha()):
        return None
    if arrow:
        out_labels = list(out)
        if len(set(out)) != len(out) or any(c not in xl and c not in yl for c in out):
            return None
    else:
        out_labels = sorted(c for c in set(xl + yl) if (xl + yl).count(c) == 1)
    size = dict(zip(xl, xs))
    for c, n in zip(yl, ys):
        if size.setdefault(c, n) != n:
            return None
    keep = set(out_labels)
    if any(c not in keep for c in xl if c not in yl) or any(c not in keep for c in yl if c not in xl):
        return None
    batch = [c for c in xl if c in yl and c in keep]
    contr = [c for c in xl if c in yl and c not in keep]
    xo = [c for c in xl if c not in yl]
    yo = [c for c in yl if c not in xl]

    def perm(labs, order):
        p = [labs.index(c) for c in order]
        return None if p == sorted(p) else p

    prod = math.prod
    nb, m, k, n = prod(size[c] for c in batch), prod(size[c] for c in xo), prod(size[c] for c in contr), \
        prod(size[c] for c in yo)
    labs = batch + xo + yo
    return (perm(xl, batch + xo + contr), (nb, m, k), perm(yl, batch + contr + yo), (nb, k, n),
            tuple(size[c] for c in labs), perm(labs, out_labels))


def einsum(*args):
    if len(args) == 3 and isinstance(args[1], Tensor) and isinstance(args[2], Tensor) and type(args[0]) is str:
        eq, x, y = args
        key = (eq, x.shape, y.shape)
        plan = _EINSUM_PLANS.get(key, False)
        if plan is False:
            if len(_EINSUM_PLANS) >= 1024:
                _EINSUM_PLANS.clear()
            plan = _EINSUM_PLANS[key] = _einsum2_plan(eq, x.shape, y.shape)
        if plan is not None:
            xperm, x3, yperm, y3, shape, operm = plan
            if xperm is not None:
                x = x.permute(xperm)
            if yperm is not None:
                y = y.permute(yperm)
            r = x.reshape(x3).bmm(y.reshape(y3)).reshape(shape)
            return r if operm is None else r.permute(operm)
    return _einsum(*args)


def _einsum(*args):
    if len(args) < 1 or not isinstance(args[0], str):
        raise TypeError("einsum(): argument 'equation' must be str")
    eq, ops = args[0], args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = tuple(ops[0])
    labels, out_labels = _parse_einsum(eq, ops)
    sizes = {}
    for x, labs in zip(ops, labels):
        for c, s in zip(labs, x.shape):
            if c in sizes and sizes[c] != s and s != 1 and sizes[c] != 1:
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped)")
            sizes[c] = builtins.max(sizes.get(c, 1), s) if c in sizes else s
    terms = list(zip(ops, labels))
    x, labs = terms[0]
    rest = [l for _, l in terms[1:]]
    x, labs = _einsum_prep(x, labs, set(out_labels).union(*rest) if rest else set(out_labels))
    for k in range(1, len(terms)):
        y, ylabs = terms[k]
        later = set(out_labels).union(*[l for _, l in terms[k + 1:]]) if k + 1 < len(terms) else set(out_labels)
        y, ylabs = _einsum_prep(y, ylabs, later | set(labs))
        x, labs = _contract(x, labs, y, ylabs, later)
    # labels summed after the last contraction (single operand)
    x, labs = _einsum_prep(x, labs, set(out_labels))
    for c in out_labels:
        if c not in labs:  # an ellipsis dim absent from every operand
            x = x.unsqueeze(-1)
            labs.append(c)
    x = x.permute([labs.index(c) for c in out_labels]) if labs else x
    return x


def _contract(x, xl, y, yl, keep):
    """x (labels xl) times y (labels yl), summing the shared labels not in keep: via bmm."""
    batch = [c for c in xl if c in yl and c in keep]
    contr = [c for c in xl if c in yl and c not in keep]
    xo = [c for c in xl if c not in yl]
    yo = [c for c in yl if c not in xl]
    # labels of one side that are not kept are summed first
    if [c for c in xo if c not in keep] or [c for c in yo if c not in keep]:
        x, xl = _einsum_prep(x, xl, keep | set(yl))
        y, yl = _einsum_prep(y, yl, keep | set(xl))
        return _contract(x, xl, y, yl, keep)
    size = {}
    for c, s in list(zip(xl, x.shape)) + list(zip(yl, y.shape)):
        size[c] = s if size.get(c, 1) == 1 else size[c]  # a size 1 broadcasts (to 0 too)
    xp = x.permute([xl.index(c) for c in batch + xo + contr]) if xl else x
    yp = y.permute([yl.index(c) for c in batch + contr + yo]) if yl else y
    xp = xp.expand((*[size[c] for c in batch], *[size[c] for c in xo], *xp.shape[len(batch) + len(xo):])) \
        if batch else xp
    yp = yp.expand((*[size[c] for c in batch], *yp.shape[len(batch):])) if batch else yp
    # a contracted label of size 1 on one side broadcasts: expand both to the common size
    xp = xp.expand((*xp.shape[:len(batch) + len(xo)], *[size[c] for c in contr]))
    yp = yp.expand((*yp.shape[:len(batch)], *[size[c] for c in contr], *yp.shape[len(batch) + len(contr):]))
    nb = math.prod(size[c] for c in batch)
    m = math.prod(xp.shape[len(batch) + i] for i in range(len(xo)))
    kk = math.prod(size[c] for c in contr)
    n = math.prod(yp.shape[len(batch) + len(contr) + i] for i in range(len(yo)))
    r = xp.reshape(nb, m, kk).bmm(yp.reshape(nb, kk, n))
    r = r.reshape((*[size[c] for c in batch], *xp.shape[len(batch):len(batch) + len(xo)],
                  *yp.shape[len(batch) + len(contr):]))
    return r, batch + xo + yo


# ------------------------------------------------------------------ pointwise composites
@tensor_args("input", "other")
def hypot(input, other):
    # scaled by the larger magnitude, so squares of large (small) values do not overflow (underflow);
    # an infinite side gives inf even against nan (C's hypot, as torch's)
    a, b = input.abs(), other.abs()
    big, small = a.maximum(b), a.minimum(b)
    ratio = small / big.masked_fill(big == 0, 1)
    h = big * (ratio * ratio + 1).sqrt()
    return h.masked_fill(a.isinf() | b.isinf(), float("inf"))


@tensor_args("input", "end")
def lerp(input, end, weight):
    # torch's formula: from the nearer end (exact at weight 0 and 1)
    w = weight
    diff = end - input
    if isinstance(w, Tensor):
        return _C.where(w.abs() < 0.5, input + w * diff, end - diff * (1 - w))
    return input + w * diff if builtins.abs(w) < 0.5 else end - diff * (1 - w)


@tensor_args("input", "tensor1", "tensor2")
def addcmul(input, tensor1, tensor2, *, value=1):
    p = tensor1 * tensor2
    return input + (p if value == 1 else p * value)


@tensor_args("input", "tensor1", "tensor2")
def addcdiv(input, tensor1, tensor2, *, value=1):
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    q = tensor1 / tensor2
    return input + (q if value == 1 else q * value)


def _addmm_like(input, prod, beta, alpha):
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:  # input is ignored (its NaNs too), as in torch; its gradient is zeros, not None
        return p - input.masked_fill(_C.full((), True, dtype=_C.bool, device=input.device), 0) \
            if input.requires_grad else p
    return (input if beta == 1 else input * beta) + p


@tensor_args("input", "mat1", "mat2")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    if mat1.dim() != 2 or mat2.dim() != 2:
        raise RuntimeError(f"{'mat1' if mat1.dim() != 2 else 'mat2'} must be a matrix, got "
                           f"{(mat1 if mat1.dim() != 2 else mat2).dim()}-D tensor")
    return _addmm_like(input, mat1.mm(mat2), beta, alpha)


@tensor_args("input", "mat", "vec")
def addmv(input, mat, vec, *, beta=1, alpha=1):
    return _addmm_like(input, mat.mv(vec), beta, alpha)


@tensor_args("input", "batch1", "batch2")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm_like(input, batch1.bmm(batch2), beta, alpha)


@tensor_args("input", "batch1", "batch2")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _addmm_like(input, batch1.bmm(batch2).sum(0), beta, alpha)


@tensor_args("input", "vec1", "vec2")
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    return _addmm_like(input, vec1.outer(vec2), beta, alpha)


@tensor_args("input", "other")
def logaddexp(input, other):
    m = input.maximum(other)
    # both -inf (or both +inf): the max itself; else max + log(1 + exp(-|a - b|))
    same_inf = m.isinf() & (input == other)
    delta = (input - other).masked_fill(same_inf, 0).abs()
    return _C.where(same_inf, m, m + (-delta).exp().log1p())


@tensor_args("input", "other")
def logaddexp2(input, other):
    ln2 = math.log(2.0)
    return logaddexp(input * ln2, other * ln2) / ln2


@tensor_args("input")
def fmod(input, other):
    # C's fmod from torch.remainder (floored): they differ by `other` where the signs differ
    r = input.remainder(other)
    fix = (r != 0) & ((r < 0) != (input < 0))
    return _C.where(fix, r - other, r)


def fmod_(self, other):
    return self.copy_(fmod(self, other))


def _result_dtype(a, b):
    return (_C.zeros(1, dtype=a.dtype) + _C.zeros(1, dtype=b.dtype)).dtype


@tensor_args("input")
def copysign(input, other):
    x = input if input.is_floating_point() else input.to(_C.float32)
    if not isinstance(other, Tensor):
        return -x.abs() if math.copysign(1.0, other) < 0 else x.abs()
    if other.is_floating_point():
        x = x.to(_result_dtype(x, other))
    neg = _from_host(np.signbit(_host(other)), other)  # -0.0 and -nan count as negative
    out = _C.where(neg, -x.abs(), x.abs())
    if other.requires_grad:  # torch's gradient for `other` is zeros, not None: subtract an exact 0
        out = out - other.masked_fill(_C.full((), True, dtype=_C.bool, device=other.device), 0)
    return out


def xlogy(input, other):
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor argument")
    like = input if isinstance(input, Tensor) else other
    # torch's promotion of the two (a number weakest), then an integral result computes in the default float
    dt = _C.result_type(input, other)
    if not dt.is_floating_point:
        dt = _C.float32
    x = input.to(dt) if isinstance(input, Tensor) else _C.full((), float(input), dtype=dt, device=like.device)
    y = other.to(dt) if isinstance(other, Tensor) else _C.full((), float(other), dtype=dt, device=like.device)
    # 0 * log(y) is 0 where log(y) is not finite (y <= 0, y = inf); elsewhere x * log(y) is exactly 0 at
    # x = 0 and gives torch's gradient log(y) for x
    zero = (x == 0) & ((y <= 0) | y.isinf())
    safe_y = _C.where(zero, _C.ones((), dtype=y.dtype, device=y.device), y)
    return _C.where(zero, _C.zeros((), dtype=(x * safe_y).dtype, device=like.device), x * safe_y.log())


@tensor_args("input")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if not input.is_floating_point():
        return input.clone()
    info = np.finfo(np.float32 if str(input.dtype).endswith("float32") else np.float64)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    x = input.masked_fill(input.isnan(), nan)
    x = x.masked_fill(input == float("inf"), posinf)
    return x.masked_fill(input == float("-inf"), neginf)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return self.copy_(nan_to_num(self, nan, posinf, neginf))


@tensor_args("input")
def sinc(input):
    x = input if input.is_floating_point() else input.to(_C.float32)
    zero = x == 0
    px = _C.where(zero, _C.ones((), dtype=x.dtype, device=x.device), x) * math.pi
    return _C.where(zero, _C.ones((), dtype=x.dtype, device=x.device), px.sin() / px)


# ------------------------------------------------------------------ comparisons and reductions
@tensor_args("input")
def count_nonzero(input, dim=None):
    nz = input != 0
    if dim is None:
        return nz.sum()
    return nz.sum(dim)


@tensor_args("input", "other")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if input.dtype == _C.bool or not input.is_floating_point():
        a, b = input.to(_C.float64), other.to(_C.float64)
    else:
        a, b = input, other
    eq = a == b
    if equal_nan:
        eq = eq | (a.isnan() & b.isnan())
    with_tol = ((a - b).abs() <= atol + rtol * b.abs()) & a.isfinite() & b.isfinite()
    return (eq | with_tol).detach()


@tensor_args("input", "other")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@tensor_args("input", "other")
def equal(input, other):
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input == other).all().item())


def _var_args(dim, unbiased, correction):
    kw = {}
    if correction is not None:
        kw["correction"] = correction
    elif unbiased is not None:
        kw["unbiased"] = unbiased
    return kw


@tensor_args("input")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):  # var_mean(x, False): the unbiased flag
        dim, unbiased = None, dim
    kw = _var_args(dim, unbiased, correction)
    return (input.var(dim, keepdim=keepdim, **kw),
            input.mean(dim, keepdim=keepdim) if dim is not None else
            (input.mean().reshape([1] * input.dim()) if keepdim else input.mean()))


@tensor_args("input")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    kw = _var_args(dim, unbiased, correction)
    return (input.std(dim, keepdim=keepdim, **kw),
            input.mean(dim, keepdim=keepdim) if dim is not None else
            (input.mean().reshape([1] * input.dim()) if keepdim else input.mean()))


@tensor_args("input")
def aminmax(input, *, dim=None, keepdim=False):
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        if keepdim:
            return _rt.aminmax(input.amin().reshape([1] * input.dim()), input.amax().reshape([1] * input.dim()))
        return _rt.aminmax(input.amin(), input.amax())
    return _rt.aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


@tensor_args("input")
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    x = input.masked_fill(input.isnan(), 0) if input.is_floating_point() else input
    if dtype is not None:
        x = x.to(dtype)
    return x.sum(dim, keepdim) if dim is not None else x.sum()


@tensor_args("input")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if not input.is_floating_point():
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{str(input.dtype).replace('ferrograd.', '').capitalize()}")
    cnt = (~input.isnan()).sum(dim, keepdim) if dim is not None else (~input.isnan()).sum()
    return nansum(input, dim, keepdim, dtype=dtype) / cnt


# ------------------------------------------------------------------ set-like and search ops (not differentiable)
def _index_tensor(a, like):
    return _index_from_host(np.asarray(a), like)


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


@tensor_args("input", "weights?")
def bincount(input, weights=None, minlength=0):
    if input.dim() != 1 or input.is_floating_point() or input.dtype == _C.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    a = _host(input)
    if (a < 0).any():
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else _host(weights)
    out = np.bincount(a, weights=w, minlength=minlength)
    if weights is not None:
        out = out.astype(w.dtype if w.dtype.kind == "f" else np.float64)
    return _from_host(out, input)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    like = elements if isinstance(elements, Tensor) else test_elements
    if not isinstance(like, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    e = _host(elements) if isinstance(elements, Tensor) else np.asarray(elements)
    t = _host(test_elements) if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    return _from_host(np.isin(e, t, invert=invert), like)


@tensor_args("input")
def argwhere(input):
    return input.nonzero()


def _tri_indices(row, col, offset, dtype, device, upper):
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    from ._creation import tensor as _tensor
    return _tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype=dtype or _C.int64, device=device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, True)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, False)


@tensor_args("input")
def signbit(input):
    return _from_host(np.signbit(_host(input)), input)


@tensor_args("input", "values")
def heaviside(input, values):
    step = (input > 0).to(_result_dtype(input, values))
    return _C.where(input == 0, values.to(step.dtype), step).detach()


# ------------------------------------------------------------------ more shape helpers
@tensor_args("input")
def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap_dim(dims[0], input.dim()), _wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


@tensor_args("input")
def fliplr(input):
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


@tensor_args("input")
def flipud(input):
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def block_diag(*tensors):
    mats = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {len(mats)} "
                               f"has {t.dim()} dimensions")
        mats.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t)
    if not mats:
        return _C.zeros((1, 0))
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _result_dtype(_C.zeros(1, dtype=dt), m)
    out = _C.zeros((builtins.sum(m.shape[0] for m in mats), builtins.sum(m.shape[1] for m in mats)), dtype=dt,
                   device=mats[0].device)
    r = c = 0
    for m in mats:
        h, w = m.shape
        if h and w:
            out[r:r + h, c:c + w] = m.to(dt)
        r, c = r + h, c + w
    return out


def cartesian_prod(*tensors):
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


@tensor_args("input")
def logcumsumexp(input, dim):
    d = _wrap_dim(dim, input.dim())
    if input.dim() == 0 or input.numel() == 0:
        return input.clone()
    # out[..., i] = logsumexp over x[..., :i+1]: row i of x with -inf past i (stable wherever the max is)
    xt = input.movedim(d, -1)
    n = xt.shape[-1]
    mask = _arange(n, input).reshape(n, 1) >= _arange(n, input).reshape(1, n)
    rows = xt.unsqueeze(-2).expand((*xt.shape[:-1], n, n)).masked_fill(~mask, float("-inf"))
    out = rows.logsumexp(-1)
    return out.movedim(-1, d) if d != input.dim() - 1 else out


@tensor_args("x1", "x2")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2} got: "
                           f"{(x1 if x1.dim() < 2 else x2).dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, dim=-1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    d = _wrap_dim(dim, y.dim())
    n = y.shape[d]
    if n == 0:
        return y.sum(d)
    avg = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) / 2
    if x is not None:
        if not isinstance(x, Tensor):
            raise TypeError("trapezoid(): x must be a Tensor")
        xd = x.diff(dim=-1 if x.dim() == 1 else d)
        if x.dim() == 1:
            shape = [1] * y.dim()
            shape[d] = -1
            xd = xd.reshape(shape)
        return (avg * xd).sum(d)
    s = avg.sum(d)
    return s if dx is None or dx == 1 else s * dx


# ------------------------------------------------------------------ more pointwise
def _floatish(x):
    return x if x.is_floating_point() else x.to(_C.float32)


@tensor_args("input")
def frac(input):
    return input - input.trunc()


@tensor_args("input")
def deg2rad(input):
    return _floatish(input) * (math.pi / 180.0)


@tensor_args("input")
def rad2deg(input):
    return _floatish(input) * (180.0 / math.pi)


@tensor_args("input")
def log10(input):
    return _floatish(input).log() / math.log(10.0)


@tensor_args("input")
def exp2(input):
    return 2.0 ** _floatish(input)


@tensor_args("input")
def logit(input, eps=None):
    z = input if eps is None else input.clamp(eps, 1 - eps)
    return (z / (1 - z)).log()


@tensor_args("input")
def positive(input):
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def float_power(input, exponent):
    if isinstance(input, Tensor):
        b = input.to(_C.float64)
        return b.pow(exponent.to(_C.float64) if isinstance(exponent, Tensor) else float(exponent))
    return float(input) ** exponent.to(_C.float64)


# ------------------------------------------------------------------ special-function helpers
def polygamma(n, input):
    """torch.polygamma(n, input): the n-th derivative of digamma (Tensor.polygamma(n) in the engine)."""
    input = _C._parse_arg("Tensor", input, "polygamma", "input", 2)
    return input.polygamma(n)


@tensor_args("input")
def isposinf(input):
    return input == math.inf


@tensor_args("input")
def isneginf(input):
    return input == -math.inf


@tensor_args("input")
def isreal(input):
    # ferrograd has no complex dtypes: every element is real
    return _C.full(tuple(input.shape), True, dtype=_C.bool, device=input.device)


# ------------------------------------------------------------------ exports
_FUNCTIONS = """
scatter scatter_add index_add index_copy index_fill masked_scatter take_along_dim index_put take
sort argsort topk kthvalue median cummax cummin cumprod
tril triu diag diag_embed trace roll tile repeat_interleave meshgrid diff tensordot kron cross einsum
hypot lerp addcmul addcdiv addmm addmv baddbmm addbmm addr logaddexp logaddexp2 fmod copysign xlogy nan_to_num
sinc count_nonzero isclose allclose equal std_mean var_mean aminmax nansum nanmean
unique unique_consecutive searchsorted bucketize bincount isin argwhere triu_indices tril_indices signbit heaviside
rot90 fliplr flipud block_diag cartesian_prod logcumsumexp cdist trapezoid frac deg2rad rad2deg log10 exp2 logit
positive float_power polygamma isposinf isneginf isreal
""".split()

# Tensor methods (torch has no method form of meshgrid, tensordot, einsum, std_mean, var_mean)
_METHODS = [n for n in _FUNCTIONS if n not in (
    "meshgrid", "tensordot", "einsum", "std_mean", "var_mean", "searchsorted", "isin", "triu_indices",
    "tril_indices", "block_diag", "cartesian_prod", "cdist", "trapezoid", "bucketize",
    "polygamma")] + """
scatter_ scatter_add_ index_add_ index_copy_ index_fill_ masked_scatter_ tril_ triu_ fmod_ nan_to_num_ index_put_
""".split()

__all__ = list(_FUNCTIONS)


def _as_method(fn):
    """fn(input, ...) as the Tensor method fn(self, ...), with that signature (for the type stub)."""
    @functools.wraps(fn)
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    sig = inspect.signature(fn)
    ps = list(sig.parameters.values())
    method.__signature__ = sig.replace(parameters=[ps[0].replace(name="self")] + ps[1:])
    return method


def _install_methods():
    g = globals()
    for n in _METHODS:
        setattr(Tensor, n, _as_method(g[n]))
    # topk's method is its fast form itself (one frame), with the method's signature
    method = _fast_topk(_topk)
    method.__signature__ = inspect.signature(Tensor.topk)
    Tensor.topk = method


_install_methods()
