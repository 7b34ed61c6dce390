"""More torch functions as compositions of the engine's differentiable ops: broadcasting and
stacking helpers (broadcast_tensors, atleast_*d, hstack/vstack/dstack, hsplit/vsplit/dsplit,
tensor_split, unflatten, ...), small products and distances (inner, vdot, dist, renorm,
chain_matmul), `put`, and the reductions nanmedian, mode, quantile, nanquantile, histc.

As in _more_ops.py, no gradient rule lives here: positions that are not differentiable (a sort's
order, a mode's index) are found on the host; values are then taken with gather/index_select, whose
backward scatters the gradient back.
"""

import builtins
import itertools
import warnings

from ._lazy import numpy as np

from . import _C
from . import return_types as _rt
from ._argcheck import check_arg, tensor_args
from ._out import out_call
from ._more_ops import (_as_method, _argsort_host, _host, _index_from_host, _pick, _from_host, _wrap_dim,
                        index_put)
from ._size import Size
from collections import namedtuple

Tensor = _C.Tensor

for _name in ("nanmedian", "mode"):
    setattr(_rt, _name, namedtuple(_name, ["values", "indices"]))


def _tensors(tensors, fname):
    """The tensors of a call f(t1, t2, ...) or f([t1, t2, ...])."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                            f"but found element of type {type(t).__name__} at pos {i}")
    return tensors


# ------------------------------------------------------------------ broadcasting and stacking
def broadcast_tensors(*tensors):
    tensors = _tensors(tensors, "broadcast_tensors")
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.broadcast_to(shape) for t in tensors)


def broadcast_shapes(*shapes):
    out = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for i, n in enumerate(reversed(s)):
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
            if i == len(out):
                out.append(n)
            elif out[i] == 1:
                out[i] = n
            elif n != 1 and n != out[i]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  "
                                   f"Mismatch is at dim {i} with size {n} and {out[i]}")
    return Size(reversed(out))


def _atleast(tensors, n, fname, fix):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    tensors = _tensors(tensors, fname)
    out = tuple(fix(t) if t.dim() < n else t for t in tensors)
    return out[0] if single else out


def atleast_1d(*tensors):
    return _atleast(tensors, 1, "atleast_1d", lambda t: t.reshape(1))


def atleast_2d(*tensors):
    return _atleast(tensors, 2, "atleast_2d", lambda t: t.reshape(1, -1) if t.dim() else t.reshape(1, 1))


def _to_3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1, 1)
    return t.unsqueeze(-1)


def atleast_3d(*tensors):
    return _atleast(tensors, 3, "atleast_3d", _to_3d)


def _stack_args(tensors, fname):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = _tensors(tuple(tensors), fname)
    if not tensors:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return tensors


def hstack(tensors):
    ts = [atleast_1d(t) for t in _stack_args(tensors, "hstack")]
    return _C.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    return _C.cat([atleast_2d(t) for t in _stack_args(tensors, "vstack")], 0)


def row_stack(tensors):
    return vstack(tensors)


def dstack(tensors):
    return _C.cat([atleast_3d(t) for t in _stack_args(tensors, "dstack")], 2)


def column_stack(tensors):
    ts = _stack_args(tensors, "column_stack")
    return _C.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in ts], 1)


# ------------------------------------------------------------------ splitting
def _split_at(input, bounds, d):
    """Views of input between consecutive bounds along d (bounds clamped to the size, as torch)."""
    n = input.shape[d]

    def at(v):  # a slice bound, as torch's slice reads it
        return builtins.min(builtins.max(v + n if v < 0 else v, 0), n)

    out, start = [], 0
    for b in list(bounds) + [n]:
        s = at(start)
        e = builtins.max(at(b), s)
        out.append(input.narrow(d, s, e - s))
        start = b
    return tuple(out)


@tensor_args("input")
def tensor_split(input, indices_or_sections, dim=0):
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.dim())
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.dim()} dims")
        if ios.dtype != _C.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, "
                               f"but got {str(ios.dtype).replace('ferrograd.', 'torch.')}")
        ios = int(ios.item()) if ios.dim() == 0 else [int(v) for v in ios.tolist()]
    if isinstance(ios, int) and not isinstance(ios, bool):
        if ios <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {ios}")
        n = input.shape[d]
        q, r = divmod(n, ios)
        bounds = list(itertools.accumulate([q + 1] * r + [q] * (ios - r)))[:-1]
        return _split_at(input, bounds, d)
    ios = check_arg("int[]", ios, "tensor_split", "indices", 2)
    return _split_at(input, ios, d)


def _split_dir(input, ios, dim, fname, min_dims):
    if not isinstance(input, Tensor):
        check_arg("Tensor", input, fname, "input", 1)
    if input.dim() < min_dims:
        raise RuntimeError(f"torch.{fname} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.dim()} dimensions!")
    if isinstance(ios, int) and not isinstance(ios, bool):
        n = input.shape[dim]
        if ios != 0 and n % ios != 0 or ios == 0:
            raise RuntimeError(f"torch.{fname} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {n} is not divisible by the split_size {ios}!")
    return tensor_split(input, ios, dim)


def hsplit(input, indices_or_sections):
    d = 0 if isinstance(input, Tensor) and input.dim() == 1 else 1
    return _split_dir(input, indices_or_sections, d, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split_dir(input, indices_or_sections, 2, "dsplit", 3)


# ------------------------------------------------------------------ shape helpers
@tensor_args("input")
def moveaxis(input, source, destination):
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError(f"moveaxis() received an invalid combination of arguments - got ({type(source).__name__}, "
                        f"{type(destination).__name__}), but expected one of:\n * (int source, int destination)\n"
                        " * (tuple of ints source, tuple of ints destination)\n")
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    nd = input.dim()
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(s, nd) for s in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return input.reshape(())
    order = [None] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(k for k in range(nd) if k not in src)
    order = [o if o is not None else next(rest) for o in order]
    return input.permute(*order) if nd else input.reshape(())


@tensor_args("input")
def swapdims(input, dim0, dim1):
    return input.swapaxes(dim0, dim1)


@tensor_args("input")
def unflatten(input, dim, sizes):
    d = _wrap_dim(dim, input.dim())
    sizes = list(check_arg("int[]", sizes, "unflatten", "sizes", 3))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d] if input.dim() else 1
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                               f"({n}) in the input tensor")
        sizes[sizes.index(-1)] = n // known
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({n}) "
                           "in the input tensor")
    shape = list(input.shape)
    return input.view(shape[:d] + sizes + shape[d + 1:])


@tensor_args("input")
def diagflat(input, offset=0):
    from ._more_ops import diag
    return diag(input.reshape(-1), offset)


@tensor_args("input")
def combinations(input, r=2, with_replacement=False):
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.zeros((0,), dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(input.shape[0]), r))
    if not idx:
        return _C.zeros((0, r), dtype=input.dtype, device=input.device)
    cols = _index_from_host(np.asarray(idx, dtype=np.int64).T.copy(), input)
    return _C.stack([input.index_select(0, cols[k]) for k in range(r)], 1)


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


# ------------------------------------------------------------------ products and distances
@tensor_args("input", "other")
def inner(input, other):
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    from ._more_ops import tensordot
    return tensordot(input, other, ([input.dim() - 1], [other.dim() - 1]))


@tensor_args("input", "other")
def vdot(input, other):
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return input.dot(other)


@tensor_args("input", "other")
def dist(input, other, p=2):
    return (input - other).norm(p=float(p))


@tensor_args("input")
def renorm(input, p, dim, maxnorm):
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not input.is_floating_point():
        from .linalg import _word  # (torch's renorm is its vector_norm's message)
        raise NotImplementedError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                                  f"Got {_word(input.dtype)}")
    d = _wrap_dim(dim, input.dim())
    others = [k for k in range(input.dim()) if k != d]
    norm = input.norm(p=float(p), dim=others, keepdim=True) if others else input.abs()
    # torch's factor maxnorm / (norm + 1e-7) where the norm is above maxnorm; its backward (renorm_backward)
    # differentiates through the factor, as this composition does
    factor = _C.where(norm > maxnorm, maxnorm / (norm + 1e-7), _C.ones((), dtype=input.dtype, device=input.device))
    return input * factor


def renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self.clone(), p, dim, maxnorm))  # (renorm's backward reads the old values)


def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                  "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                  "than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:  # (torch: a copy, recorded by autograd, castable into out)
        return out_call("chain_matmul", matrices[0].clone, out, grad=False, track=True, dtype="cast")
    from .linalg import multi_dot
    return multi_dot(list(matrices), out=out)


# ------------------------------------------------------------------ reductions
@tensor_args("input")
def nanmedian(input, dim=None, keepdim=False):
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0:
            return _C.full((), float("nan"), dtype=input.dtype, device=input.device)
        a = _host(flat)
        if a.dtype.kind == "f":
            k = int((~np.isnan(a)).sum())
            if k == 0:
                return flat[0].clone()
            pos = int(np.argsort(a, kind="stable")[(k - 1) // 2])  # NaNs sort last
        else:
            pos = int(np.argsort(a, kind="stable")[(a.size - 1) // 2])
        return flat[pos]
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d] if input.dim() else 1
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {d} to have non-zero size.")
    if input.dim() == 0:
        return _rt.nanmedian(input.clone(), _C.zeros((), dtype=_C.int64, device=input.device))
    a = _host(input)
    order = _argsort_host(a.astype(np.int8) if a.dtype == np.bool_ else a, d, False)
    if a.dtype.kind == "f":
        k = (~np.isnan(a)).sum(axis=d, keepdims=True)
        at = np.maximum(k - 1, 0) // 2  # all NaN: the first (a NaN)
    else:
        at = np.full([1 if i == d else s for i, s in enumerate(a.shape)], (n - 1) // 2)
    pos = np.take_along_axis(order, at, axis=d)
    return _pick(input, d, pos, keepdim, _rt.nanmedian)


@tensor_args("input")
def mode(input, dim=-1, keepdim=False):
    d = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        return _rt.mode(input.clone(), _C.zeros((), dtype=_C.int64, device=input.device))
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    a = np.moveaxis(_host(input), d, -1)
    rows = a.reshape(-1, n)
    pos = np.zeros(rows.shape[0], dtype=np.int64)
    for r, row in enumerate(rows):
        vals, counts = np.unique(row, return_counts=True)  # sorted: a tie goes to the smallest value
        v = vals[int(np.argmax(counts))]
        hits = np.nonzero((row == v) | (np.isnan(row) & np.isnan(v)) if row.dtype.kind == "f" else row == v)[0]
        pos[r] = hits[-1]  # torch: the value's last position
    pos = np.expand_dims(pos.reshape(a.shape[:-1]), d)
    return _pick(input, d, pos, keepdim, _rt.mode)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, fname):
    if not isinstance(input, Tensor):
        check_arg("Tensor", input, fname, "input", 1)
    if input.numel() == 0:
        raise RuntimeError(f"{fname}() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.dim() > 1:
        raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor")
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{fname}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q.dtype != input.dtype:
        raise RuntimeError(f"{fname}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fname}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    qs = [float(v) for v in (q.reshape(-1).tolist() if isinstance(q, Tensor) else [q])]
    for v in qs:
        if not 0 <= v <= 1:
            raise RuntimeError(f"{fname}() q values must be in the range [0, 1]" if isinstance(q, Tensor)
                               else f"{fname}() q must be in the range [0, 1] but got {v}")
    scalar_q = not isinstance(q, Tensor) or q.dim() == 0
    if dim is None:
        x, d = input.reshape(-1), 0
    else:
        d = _wrap_dim(dim, input.dim())
        x = input if input.dim() else input.reshape(1)
    a = _host(x)
    order = _argsort_host(a, d, False)  # NaNs last
    xs = x.gather(d, _index_from_host(order, x))
    xs = xs.movedim(d, -1)
    n = xs.shape[-1]
    nan = np.moveaxis(np.isnan(a), d, -1)
    k = (~nan).sum(-1) if ignore_nan else np.full(nan.shape[:-1], n)
    outs = []
    # a row with a NaN (quantile) takes its last element, a NaN; one of only NaNs (nanquantile) its first
    bad = nan.any(-1) if not ignore_nan else k == 0
    for v in qs:
        rank = v * (k - 1).astype(np.float64)
        rank = np.where(bad, 0.0 if ignore_nan else n - 1.0, rank)
        lo = np.floor(rank).astype(np.int64)
        hi = np.ceil(rank).astype(np.int64)
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = np.round(rank).astype(np.int64)  # (numpy rounds half to even, as torch's round)
        w = rank - lo if interpolation == "linear" else np.full(rank.shape, 0.5)
        lo, hi = np.clip(lo, 0, n - 1), np.clip(hi, 0, n - 1)
        vlo = xs.gather(-1, _index_from_host(lo[..., None], xs)).squeeze(-1)
        vhi = xs.gather(-1, _index_from_host(hi[..., None], xs)).squeeze(-1)
        wt = _from_host(np.asarray(w, dtype=a.dtype), xs)
        r = vlo + (vhi - vlo) * wt if interpolation in ("linear", "midpoint") else vlo
        if keepdim:
            if dim is None:
                r = r.reshape([1] * input.dim())
            elif input.dim():
                r = r.unsqueeze(d)
        outs.append(r)
    return outs[0] if scalar_q else _C.stack(outs, 0)


_QUANTILE_OUT = dict(grad=False, track=True, dtype="quantile() out tensor must be same dtype as the input tensor")


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return out_call("quantile", lambda: _quantile(input, q, dim, keepdim, interpolation, False, "quantile"),
                    out, **_QUANTILE_OUT)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return out_call("nanquantile", lambda: _quantile(input, q, dim, keepdim, interpolation, True, "quantile"),
                    out, **_QUANTILE_OUT)  # (torch's messages say quantile())


@tensor_args("input")
def histc(input, bins=100, min=0, max=0):
    if not input.is_floating_point():
        from .linalg import _word
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_word(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    a = _host(input).reshape(-1)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    lo, hi = a.dtype.type(lo), a.dtype.type(hi)  # torch computes in the input's dtype
    a = a[(a >= lo) & (a <= hi)]
    pos = ((a - lo) * a.dtype.type(bins) / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    counts = np.bincount(pos, minlength=bins).astype(a.dtype)
    return _from_host(counts, input)


# ------------------------------------------------------------------ exports
_FUNCTIONS = """
broadcast_tensors broadcast_shapes atleast_1d atleast_2d atleast_3d hstack vstack dstack column_stack row_stack
hsplit vsplit dsplit tensor_split moveaxis swapdims unflatten diagflat combinations put inner vdot dist renorm
chain_matmul nanmedian mode quantile nanquantile histc
""".split()

_METHODS = """
hsplit vsplit dsplit tensor_split moveaxis swapdims unflatten diagflat put inner vdot dist renorm nanmedian mode
quantile nanquantile histc
""".split() + ["put_", "renorm_"]

__all__ = list(_FUNCTIONS)


def _install_methods():
    g = globals()
    for n in _METHODS:
        setattr(Tensor, n, _as_method(g[n]))


_install_methods()
