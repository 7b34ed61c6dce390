"""torch.histogram and torch.histogramdd (and Tensor.histogram): counts of a floating tensor's values
in equal-width bins (bins=int, range=(min, max)) or in given edges (bins=tensor / list of tensors),
optionally weighted and normalised to a density; torch.histc (equal-width bins over [min, max]) and
torch.bincount (counts of non-negative integers, optionally weighted), with their Tensor methods.

Histograms have no gradient in torch either; the counting is done on the host (NumPy, with the bin
edges computed by ferrograd's own linspace in the input's dtype, as torch does), and the results come
back on the input's device.
"""
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from . import return_types as _rt
from ._argcheck import tensor_args
from ._op_utils import _from_host, _host
from ._out import _CTYPE, out_call_many, scalar_type_name

Tensor = _C.Tensor

for _name, _fields in (("histogram", ["hist", "bin_edges"]), ("histogramdd", ["hist", "bin_edges"])):
    if not hasattr(_rt, _name):
        setattr(_rt, _name, namedtuple(_name, _fields))


def _key(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _check_input(input, fname):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{scalar_type_name(input.dtype)}'")


def _edges(fname, data, dim, bins, rng, input):
    """Edges of dimension dim as a ferrograd tensor (input's dtype and device)."""
    if isinstance(bins, Tensor):
        if bins.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                               f"got input with dtype {_CTYPE.get(_key(input.dtype))} and bins for dimension "
                               f"{dim} with dtype {_CTYPE.get(_key(bins.dtype))}")
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins.dim()} dimensions in the bins tensor for dimension {dim}")
        if bins.numel() < 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got "
                               f"{bins.numel()} elements in the bins tensor for dimension {dim}")
        return bins
    if not isinstance(bins, int) or isinstance(bins, bool):
        raise TypeError(f"{fname}(): argument 'bins' must be int or Tensor, not {type(bins).__name__}")
    if bins <= 0:
        raise RuntimeError(f"torch.{fname}(): bins must be > 0, but got {bins} for dimension {dim}")
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
    elif data.size:
        lo, hi = float(np.min(data)), float(np.max(data))
    else:
        lo, hi = 0.0, 0.0
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} for "
                           f"dimension {dim}")
    if lo == hi:
        if data.size == 0 and rng is None:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = lo - 0.5, hi + 0.5
    return _C.linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)


def _weights(weight, shape, input):
    if weight is None:
        return None
    if not isinstance(weight, Tensor):
        raise TypeError(f"histogram(): argument 'weight' must be Tensor, not {type(weight).__name__}")
    if tuple(weight.shape) != tuple(shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    if weight.dtype != input.dtype:
        raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor should "
                           f"have the same dtype, but got input({_CTYPE.get(_key(input.dtype))}), and "
                           f"weight({_CTYPE.get(_key(weight.dtype))})")
    return _host(weight).reshape(-1)


def _count(fname, points, bins_list, rng, weight, density, input):
    """points: (N, D) host array. Returns (hist tensor, list of edge tensors)."""
    d = points.shape[1]
    if rng is not None:
        rng = [float(r) for r in rng]
        if len(rng) != 2 * d:
            raise RuntimeError(f"torch.histogramdd: for a {d}-dimensional histogram range should have {2 * d} "
                               f"elements, but got {len(rng)}")
    edges = [_edges(fname, points[:, i], i, bins_list[i], None if rng is None else rng[2 * i:2 * i + 2], input)
             for i in range(d)]
    edges_h = [_host(e).astype(np.float64) for e in edges]
    pts = points.astype(np.float64)
    # outside the leftmost/rightmost edge: not counted (np.histogramdd does the same); torch's rightmost
    # bin is closed, as NumPy's
    hist, _ = np.histogramdd(pts, bins=edges_h, weights=None if weight is None else weight.astype(np.float64))
    if density:
        total = hist.sum()
        widths = np.ix_(*[np.diff(e) for e in edges_h]) if d else ()
        vol = np.ones(hist.shape)
        for w in widths:
            vol = vol * w
        with np.errstate(all="ignore"):
            hist = hist / (total * vol)
    out = _from_host(hist, input).to(input.dtype)
    return out, edges


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges) of input's flattened values; bins an int (equal widths over range, or over
    [min, max] of the input) or a 1-D tensor of increasing edges."""
    _check_input(input, "histogram")

    def compute():
        points = _host(input).reshape(-1, 1)
        w = _weights(weight, tuple(input.shape), input)
        hist, edges = _count("histogram", points, [bins], range, w, density, input)
        return _rt.histogram(hist, edges[0])

    return out_call_many("histogram", compute, out, (input,), kind=_rt.histogram, grad=False)


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points input[..., :] (the last dimension holds a point's D coordinates)."""
    _check_input(input, "histogramdd")
    if input.dim() < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, but got 0")
    d = input.shape[-1]
    if isinstance(bins, (int, Tensor)) and not isinstance(bins, bool):
        bins_list = [bins] * d
    else:
        bins_list = list(bins)
        if len(bins_list) != d:
            raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges for each of the {d} "
                               f"dimensions of the histogram but got {len(bins_list)}")
    points = _host(input).reshape(-1, d)
    w = _weights(weight, tuple(input.shape[:-1]), input)
    hist, edges = _count("histogramdd", points, bins_list, range, w, density, input)
    return _rt.histogramdd(hist, tuple(edges))


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


__all__ = ["histogram", "histogramdd", "bincount", "histc"]

# Tensor methods, installed once by _tensor_methods.py
TENSOR_METHODS = ["histogram", "bincount", "histc"]
TENSOR_ATTRIBUTES = {}
