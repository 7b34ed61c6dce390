"""Reductions and scans as compositions of the engine's ops: median, nanmedian, mode, quantile,
nanquantile, var_mean, std_mean, aminmax, nansum, nanmean, count_nonzero, trace, cummax, cummin,
cumprod, logcumsumexp, trapezoid, cov and corrcoef.

Positions that are not differentiable (a median's or a mode's index, cummax's running argmax) are
found on the host; values are then taken with gather/index_select, whose backward scatters the
gradient back."""

import builtins
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from .overrides import overridable
from . import return_types as _rt
from ._argcheck import check_arg, tensor_args
from ._op_utils import Tensor, _arange, _from_host, _host, _index_from_host, _is_float, _needs_grad, _wrap_dim
from ._out import out_call
from ._shape_ops import diagonal
from ._sorting import _argsort_host, _bool_host, _pick, _select_kth
from ._autocast_ops import FP32, NONE, autocast_op


for _name in ("nanmedian", "mode"):
    setattr(_rt, _name, namedtuple(_name, ["values", "indices"]))


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


@autocast_op(cpu=NONE, cuda=FP32)
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


@autocast_op(cpu=FP32, cuda=NONE)
@tensor_args("input")
def trace(input):
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return diagonal(input).sum()


@tensor_args("input")
def count_nonzero(input, dim=None):
    nz = input != 0
    if dim is None:
        return nz.sum()
    return nz.sum(dim)


def _var_args(dim, unbiased, correction):
    kw = {}
    if correction is not None:
        kw["correction"] = correction
    elif unbiased is not None:
        kw["unbiased"] = unbiased
    return kw


def _spread_mean(spread, input, dim, unbiased, keepdim, correction):
    """(input.var or input.std, input.mean) over dim: var_mean and std_mean."""
    if isinstance(dim, bool):  # var_mean(x, False): the unbiased flag
        dim, unbiased = None, dim
    kw = _var_args(dim, unbiased, correction)
    return (getattr(input, spread)(dim, keepdim=keepdim, **kw),
            input.mean(dim, keepdim=keepdim) if dim is not None else
            (input.mean().reshape([1] * input.dim()) if keepdim else input.mean()))


@tensor_args("input")
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _spread_mean("var", input, dim, unbiased, keepdim, correction)


@tensor_args("input")
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _spread_mean("std", input, dim, unbiased, keepdim, correction)


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


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return out_call("quantile", lambda: _quantile(input, q, dim, keepdim, interpolation, False, "quantile"),
                    out, **_QUANTILE_OUT)


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return out_call("nanquantile", lambda: _quantile(input, q, dim, keepdim, interpolation, True, "quantile"),
                    out, **_QUANTILE_OUT)  # (torch's messages say quantile())


def cov(input, *, correction=1, fweights=None, aweights=None):
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    x = x if _is_float(x) else x.to(_C.float32)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = n - correction
        xm = x - avg.unsqueeze(1)
        c = xm.matmul(xm.t()) / builtins.max(norm, 0)
    else:
        w = w.to(x.dtype)
        wsum = w.sum()
        avg = (x * w).sum(1) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
        xm = x - avg.unsqueeze(1)
        c = (xm * w).matmul(xm.t()) / norm.clamp_min(0)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal().sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    return c.clamp(-1, 1)


# ------------------------------------------------------------------ exports
__all__ = """
median cummax cummin cumprod trace count_nonzero std_mean var_mean aminmax nansum nanmean logcumsumexp
trapezoid nanmedian mode quantile nanquantile cov corrcoef
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
median cummax cummin cumprod trace count_nonzero aminmax nansum nanmean logcumsumexp nanmedian mode quantile
nanquantile cov corrcoef
""".split()
TENSOR_ATTRIBUTES = {}
