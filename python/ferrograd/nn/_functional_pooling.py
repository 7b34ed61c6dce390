"""nn.functional's power-average pools (lp_pool1d/2d/3d), the 1-d / 3-d max unpooling and the 1-d / 2-d
adaptive max pools (adaptive_max_pool1d/2d, with indices), and the window-maximum helper of the max pools
that return indices (`_window_max`: a gather of each window's cells, the first maximum, the last NaN).

lp_pool: (Σ xᵖ over the window)^(1/p), computed as the average of xᵖ times the window size, with torch's
sign·relu(|·|) guard before the root. max_unpool1d runs max_unpool2d on a (L, 1) plane; max_unpool3d writes
each value at its flat (D·H·W) index in a zero volume.
"""

import math

from .. import _C
from .._autocast_ops import FP32, NONE, autocast_op


def _lp(avg, norm_type, window):
    return (avg.sign() * avg.abs().relu()).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 1-d windows."""
    from .functional import _single, avg_pool1d

    k = _single(kernel_size)
    out = avg_pool1d(input.pow(norm_type), k, stride if stride is not None else k, 0, ceil_mode)
    return _lp(out, norm_type, k)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 2-d windows."""
    from .functional import _pair, avg_pool2d

    kh, kw = _pair(kernel_size)
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride if stride is not None else (kh, kw), 0, ceil_mode)
    return _lp(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over 3-d windows."""
    from ._functional_volumetric import _triple, avg_pool3d

    kd, kh, kw = _triple(kernel_size)
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride if stride is not None else (kd, kh, kw), 0,
                     ceil_mode)
    return _lp(out, norm_type, kd * kh * kw)


def _unpool_size(input, k, s, p, output_size, nd):
    default = [(input.shape[-nd + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for i in range(nd):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < output_size[i] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between {lo} and {hi})')
    return output_size


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool1d: each value written at its index in a zero line."""
    from .functional import _single, max_unpool2d

    k = _single(kernel_size)
    s = _single(stride) if stride not in (None, [], ()) else k
    p = _single(padding)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input to max_unpooling1d should be a 2d or 3d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    (length,) = _unpool_size(input, (k,), (s,), (p,), output_size, 1)
    return max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), (k, 1), (s, 1), (p, 0),
                        (length, 1)).squeeze(-1)


@autocast_op(cpu=FP32, cuda=NONE)
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool3d: each value written at its flat index in a zero volume."""
    from ._functional_volumetric import _triple

    k = _triple(kernel_size)
    s = _triple(stride) if stride not in (None, [], ()) else k
    p = _triple(padding)
    if input.dim() not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if indices.dtype != _C.int64:
        raise RuntimeError("elements in indices should be type int64")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    od, oh, ow = _unpool_size(input, k, s, p, output_size, 3)
    lead = tuple(input.shape[:-3])
    values = input.reshape(-1, input.shape[-3] * input.shape[-2] * input.shape[-1])
    flat = indices.reshape(values.shape)
    if flat.numel() and ((flat < 0) | (flat >= od * oh * ow)).any().item():
        raise RuntimeError(f"Found an invalid max index (output volumes are of size {od}x{oh}x{ow})")
    out = _C.zeros((values.shape[0], od * oh * ow), dtype=input.dtype, device=input.device)
    out[_C.arange(values.shape[0], device=input.device).unsqueeze(1), flat] = values
    return out.reshape((*lead, od, oh, ow))


def _adaptive_windows(n, out_size):
    """torch's adaptive windows over a length n: [floor(i·n/o), ceil((i+1)·n/o)) for each output i."""
    return [list(range((i * n) // out_size, -(-((i + 1) * n) // out_size))) for i in range(out_size)]


def _window_positions(windows, sizes):
    """The flat positions (row-major over `sizes`) of each cell of each window of a separable pool.

    windows: per dim, a list (one per output index) of the input positions in that window (non-empty).
    Returns a long tensor [prod(outputs), prod(max window lengths)]: each window's cells in row-major
    window order, a short window padded by repeating its last cell (which changes neither its maximum
    nor which cell is the first maximum)."""
    import numpy as np

    dims = []
    for wins in windows:
        width = max(len(w) for w in wins)
        dims.append(np.array([w + [w[-1]] * (width - len(w)) for w in wins], dtype=np.int64))
    flat = np.zeros([1] * (2 * len(dims)), dtype=np.int64)
    step = 1
    nd = len(dims)
    for i in range(nd - 1, -1, -1):
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = dims[i].shape
        flat = flat + dims[i].reshape(shape) * step
        step *= sizes[i]
    outs = int(np.prod([d.shape[0] for d in dims]))
    return np.ascontiguousarray(flat.reshape(outs, -1))


def _window_max(flat, positions):
    """The maximum of each window of each plane, and its flat index in the plane.

    flat: [P, S] (planes flattened); positions: a [O, L] or [P, O, L] int64 NumPy array (see
    `_window_positions`). As torch's CPU kernels: the first maximum in window order, the last NaN.
    The values are gathered from `flat` at the indices, so the gradient goes to them alone."""
    from ..autograd.grad_mode import no_grad

    planes = flat.shape[0]
    pos = _C.from_numpy(positions).to(flat.device)
    shared = pos.dim() == 2  # one window layout for every plane: index it once, not per plane
    o, width = pos.shape[-2], pos.shape[-1]
    with no_grad():
        if shared:
            cand = flat.detach().index_select(1, pos.reshape(-1)).reshape(planes, o, width)
        else:
            cand = flat.detach().gather(1, pos.reshape(planes, o * width)).reshape(planes, o, width)
        best = cand.argmax(2, keepdim=True) if cand.numel() else _C.zeros((planes, o, 1), dtype=_C.int64)
        nan = cand != cand
        if nan.any().item():
            last_nan = (width - 1) - nan.flip(2).to(_C.float64).argmax(2, keepdim=True)
            best = _C.where(nan.any(2, keepdim=True), last_nan, best)
        if shared:
            cell = best.squeeze(2) + _C.arange(o, device=flat.device).unsqueeze(0) * width
            indices = pos.reshape(-1)[cell.reshape(-1)].reshape(planes, o)
        else:
            indices = pos.gather(2, best).squeeze(2)
    return flat.gather(1, indices), indices


def _adaptive_max_nd(input, sizes, nd):
    """Adaptive max pool over the last nd dims to `sizes`: (values, indices into each plane)."""
    # an impossible output is the allocator's RuntimeError up front (not a Python loop over its windows)
    lead = tuple(input.shape[:-nd])
    _C.empty(lead + tuple(sizes), dtype=input.dtype, device=input.device)
    spatial = tuple(input.shape[-nd:])
    positions = _window_positions([_adaptive_windows(n, o) for n, o in zip(spatial, sizes)], spatial)
    out, idx = _window_max(input.reshape(-1, math.prod(spatial)), positions)
    return out.reshape(lead + tuple(sizes)), idx.reshape(lead + tuple(sizes))


def _check_adaptive_max(input, name):
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {i} being empty")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling over the last dim; indices: the position of each maximum in it."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    _check_adaptive_max(input, "adaptive_max_pool1d")
    size = output_size[0] if isinstance(output_size, (list, tuple)) else output_size
    out, idx = _adaptive_max_nd(input, (size,), 1)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive max pooling over (H, W); indices: flat positions h·W + w of each maximum in its plane."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(input.shape)}")
    oh, ow = output_size if isinstance(output_size, (list, tuple)) else (output_size, output_size)
    oh = input.shape[-2] if oh is None else oh
    ow = input.shape[-1] if ow is None else ow
    _check_adaptive_max(input, "adaptive_max_pool2d")
    out, idx = _adaptive_max_nd(input, (oh, ow), 2)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)
