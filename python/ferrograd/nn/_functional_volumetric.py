"""nn.functional's 3-d (volumetric) convolutions and pools, composed from the 2-d kernels.

- conv3d: a sum over the kernel's depth taps of 2-d convolutions; tap kd convolves the depth slices
  kd·dilation + stride·i (i = output depth) with weight[:, :, kd]. Same FLOPs as a direct conv3d, plus
  one strided copy of the (padded) input per depth tap.
- conv_transpose3d: per depth tap a 2-d transposed convolution of every input depth slice, scattered to
  output depths i·stride + kd·dilation (zero interleave + shift) and summed, then cropped by padding.
- pools: a 3-d window is the product of per-dim windows, so max / average / adaptive pools are separable:
  pool (H, W) with the 2-d function, then D with the 1-d one. Max picks the same element as torch
  (depth-major first maximum), so gradients match.
"""

from .. import _C
from .._autocast_ops import FP32, LOWER, NONE, autocast_op
from ..overrides import overridable


def _triple(v, name="kernel_size"):
    from .functional import _ntuple

    return tuple(_ntuple(v, 3))


def _batched5(input, name):
    if input.dim() not in (4, 5):
        raise RuntimeError(
            f"Expected 4D (unbatched) or 5D (batched) input to {name}, but got input of size: {list(input.shape)}"
        )
    return (input, True) if input.dim() == 5 else (input.unsqueeze(0), False)


@autocast_op(cpu=LOWER, cuda=LOWER)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution over (N, C, D, H, W) (or unbatched (C, D, H, W))."""
    from .functional import _conv2d, _conv_checks, pad

    x, batched = _batched5(input, "conv3d")
    stride, dilation = _triple(stride), _triple(dilation)
    padding = padding if isinstance(padding, str) else _triple(padding)
    sides = _conv_checks(x, weight, bias, stride, padding, dilation, groups)
    if any(a or b for a, b in sides):
        x = pad(x, (sides[2][0], sides[2][1], sides[1][0], sides[1][1], sides[0][0], sides[0][1]))
    n, c, d, h, w = x.shape
    kd = weight.shape[2]
    od = (d - dilation[0] * (kd - 1) - 1) // stride[0] + 1
    acc = None
    for t in range(kd):
        start = t * dilation[0]
        xs = x[:, :, start:start + stride[0] * (od - 1) + 1:stride[0]]  # (N, C, OD, H, W)
        xs = xs.transpose(1, 2).reshape(n * od, c, h, w)
        y = _conv2d(xs, weight[:, :, t], None, stride[1:], ((0, 0), (0, 0)), dilation[1:], groups)
        acc = y if acc is None else acc + y
    oc, oh, ow = acc.shape[1], acc.shape[2], acc.shape[3]
    out = acc.reshape(n, od, oc, oh, ow).transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, oc, 1, 1, 1)
    return out if batched else out.squeeze(0)


@autocast_op(cpu=LOWER, cuda=LOWER)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-d transposed convolution (the gradient of conv3d with respect to its input)."""
    from ._functional_conv_transpose import conv_transpose2d

    x, batched = _batched5(input, "conv_transpose3d")
    stride, padding = _triple(stride), _triple(padding)
    output_padding, dilation = _triple(output_padding), _triple(dilation)
    if weight.dim() != 5:
        raise RuntimeError("weight should have at least three dimensions")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{weight.shape[0]} channels, but got {x.shape[1]} channels instead"
        )
    for i in range(3):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {list(output_padding)} stride: {list(stride)} "
                               f"dilation: {list(dilation)}")
    n, c, d, h, w = x.shape
    kd = weight.shape[2]
    full = (d - 1) * stride[0] + dilation[0] * (kd - 1) + 1 + output_padding[0]
    od = full - 2 * padding[0]
    xs = x.transpose(1, 2).reshape(n * d, c, h, w)
    acc = None
    for t in range(kd):
        y = conv_transpose2d(xs, weight[:, :, t], None, stride[1:], padding[1:], output_padding[1:], groups,
                             dilation[1:])
        oc, oh, ow = y.shape[1:]
        y = y.reshape(n, d, oc, oh, ow)
        if stride[0] > 1:  # interleave stride-1 zero slices between the input depths
            z = _C.zeros((n, d, stride[0] - 1, oc, oh, ow), dtype=y.dtype, device=y.device)
            y = _C.cat([y.unsqueeze(2), z], 2).reshape(n, d * stride[0], oc, oh, ow)[:, :(d - 1) * stride[0] + 1]
        front = t * dilation[0]
        back = full - front - y.shape[1]
        parts = [y]
        if front:
            parts.insert(0, _C.zeros((n, front, oc, oh, ow), dtype=y.dtype, device=y.device))
        if back:
            parts.append(_C.zeros((n, back, oc, oh, ow), dtype=y.dtype, device=y.device))
        y = _C.cat(parts, 1) if len(parts) > 1 else y
        acc = y if acc is None else acc + y
    out = acc[:, padding[0]:padding[0] + od].transpose(1, 2)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out if batched else out.squeeze(0)


def _depth_last(y, n, c):
    """(N·C, D, H, W) -> (N·C·H·W... as (N·C·H, W, D)) for a 1-d pool over D; returns it and the shape."""
    nc, d, h, w = y.shape
    return y.permute(0, 2, 3, 1).reshape(nc * h, w, d), (nc, h, w)


def _depth_back(z, shape, n, c, batched):
    nc, h, w = shape
    od = z.shape[-1]
    out = z.reshape(nc, h, w, od).permute(0, 3, 1, 2).reshape(n, c, od, h, w)
    return out if batched else out.squeeze(0)


@autocast_op(cpu=FP32, cuda=NONE)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over 3-d windows: max_pool2d over (H, W), then max_pool1d over D."""
    from .functional import max_pool1d, max_pool2d

    x, batched = _batched5(input, "max_pool3d")
    if return_indices:
        return _max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p, d = _triple(padding), _triple(dilation)
    n, c = x.shape[:2]
    y = max_pool2d(x.reshape(n * c, *x.shape[2:]), k[1:], s[1:], p[1:], d[1:], ceil_mode)
    z, shape = _depth_last(y, n, c)
    return _depth_back(max_pool1d(z, k[0], s[0], p[0], d[0], ceil_mode), shape, n, c, batched)


def _pool_windows(n, k, s, p, d, ceil_mode):
    """The input positions of each window of a strided, padded, dilated pool over a length n (torch's
    output size, ceil_mode's last window only when it starts inside the input or left padding)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    windows = []
    for i in range(max(out, 0)):
        cells = [i * s - p + j * d for j in range(k) if 0 <= i * s - p + j * d < n]
        if not cells:
            raise NotImplementedError("max_pool3d(return_indices=True): a window wholly in the padding "
                                      "(dilation larger than the input allows) is not supported")
        windows.append(cells)
    return windows


def _max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool3d's values and indices (flat d·H·W + h·W + w positions in each volume), from the gather of
    each window's cells (the first maximum in depth-major order, the last NaN, as torch's kernel)."""
    import math

    from ._functional_pooling import _window_max, _window_positions

    k = _triple(kernel_size)
    s = k if stride is None or stride == [] or stride == () else _triple(stride)
    p, d = _triple(padding), _triple(dilation)
    for i in range(3):
        if p[i] > k[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[i]}, "
                               f"kernel_size={k[i]} and dilation={d[i]}")
    spatial = tuple(input.shape[-3:])
    windows = [_pool_windows(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    sizes = tuple(len(w) for w in windows)
    lead = tuple(input.shape[:-3])
    if 0 in sizes:
        raise RuntimeError(f"max_pool3d: given input size {list(input.shape)}, calculated output size "
                           f"{list(lead[-1:]) + list(sizes)} is too small")
    out, idx = _window_max(input.reshape(-1, math.prod(spatial)), _window_positions(windows, spatial))
    return out.reshape(lead + sizes), idx.reshape(lead + sizes)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@autocast_op(cpu=FP32, cuda=NONE)
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over 3-d windows: avg_pool2d over (H, W), then over D (the divisor is a product per dim)."""
    from .functional import avg_pool2d

    x, batched = _batched5(input, "avg_pool3d")
    k = _triple(kernel_size)
    s = k if stride is None or stride == [] else _triple(stride)
    p = _triple(padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    n, c = x.shape[:2]
    div = 1 if divisor_override is not None else None
    y = avg_pool2d(x.reshape(n * c, *x.shape[2:]), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, div)
    z, shape = _depth_last(y, n, c)
    z = avg_pool2d(z.unsqueeze(-2), (1, k[0]), (1, s[0]), (0, p[0]), ceil_mode, count_include_pad, div).squeeze(-2)
    out = _depth_back(z, shape, n, c, batched)
    return out / divisor_override if divisor_override is not None else out


def _adaptive_sizes(x, output_size):
    size = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    if len(size) != 3:
        raise ValueError(f"adaptive pool 3d: output_size must be 3, got {len(size)}")
    return tuple(x.shape[2 + i] if size[i] is None else size[i] for i in range(3))


@autocast_op(cpu=FP32, cuda=NONE)
def adaptive_avg_pool3d(input, output_size):
    """Adaptive average pooling to (D, H, W) = output_size (None keeps the input's size)."""
    from .functional import adaptive_avg_pool1d, adaptive_avg_pool2d

    x, batched = _batched5(input, "adaptive_avg_pool3d")
    od, oh, ow = _adaptive_sizes(x, output_size)
    n, c = x.shape[:2]
    y = adaptive_avg_pool2d(x.reshape(n * c, *x.shape[2:]), (oh, ow))
    z, shape = _depth_last(y, n, c)
    return _depth_back(adaptive_avg_pool1d(z, od), shape, n, c, batched)


@autocast_op(cpu=FP32, cuda=NONE)
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling to (D, H, W) = output_size (None keeps the input's size)."""
    from ._functional_pooling import _adaptive_max_nd, _check_adaptive_max, adaptive_max_pool1d, adaptive_max_pool2d

    x, batched = _batched5(input, "adaptive_max_pool3d")
    od, oh, ow = _adaptive_sizes(x, output_size)
    if return_indices:
        _check_adaptive_max(input, "adaptive_max_pool3d")
        return _adaptive_max_nd(input, (od, oh, ow), 3)
    n, c = x.shape[:2]
    y = adaptive_max_pool2d(x.reshape(n * c, *x.shape[2:]), (oh, ow))
    z, shape = _depth_last(y, n, c)
    return _depth_back(adaptive_max_pool1d(z, od), shape, n, c, batched)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)
