"""nn.functional's in-place activation spellings (relu_, elu_, ...), max_pool1d_with_indices,
channel_shuffle, pdist, triplet_margin_with_distance_loss and conv_tbc: thin compositions of existing
functions."""

import numpy as np

from .. import _C
from .._autocast_ops import FP32, NONE, autocast_op


def relu_(input):
    from .functional import relu

    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    from .functional import elu

    return elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    from .functional import celu

    return celu(input, alpha, inplace=True)


def selu_(input):
    from .functional import selu

    return selu(input, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    from .functional import leaky_relu

    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    from .functional import hardtanh

    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    from .functional import threshold as _threshold

    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    from .functional import rrelu

    return rrelu(input, lower, upper, training, inplace=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    from .functional import max_pool1d

    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def channel_shuffle(input, groups):
    """(N, g·k, *) -> channels regrouped as (N, k·g, *): channel i·k + j goes to j·g + i."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


@autocast_op(cpu=NONE, cuda=FP32)
def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input: the upper triangle, row by row."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    if n < 2:
        return _C.zeros(0, dtype=input.dtype, device=input.device)
    i, j = np.triu_indices(n, 1)
    ii = _C.from_numpy(i.astype(np.int64)).to(input.device)
    jj = _C.from_numpy(j.astype(np.int64)).to(input.device)
    return (input[ii] - input[jj]).norm(p, dim=1)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(d(a, p) − d(a, n) + margin, 0), d defaulting to pairwise_distance; `swap` uses min(d(a, n), d(p, n))."""
    from .functional import _reduce, pairwise_distance

    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    a_dim, p_dim, n_dim = anchor.dim(), positive.dim(), negative.dim()
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
            f"anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
        )
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (d_pos - d_neg + margin).clamp_min(0)
    return _reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Σ over target classes j and non-target classes i of max(0, 1 − (x_j − x_i)), over C; the targets of
    a sample are the entries of `target` before its first -1."""
    from .functional import _get_reduction, _reduce

    if size_average is not None or reduce is not None:
        reduction = _get_reduction(reduction, size_average, reduce)
    if input.dim() not in (1, 2) or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    unbatched = input.dim() == 1
    x = input.unsqueeze(0) if unbatched else input
    tg = (target.unsqueeze(0) if unbatched else target).tolist()
    n, c = x.shape
    counts = np.zeros((n, c))
    for row, labels in enumerate(tg):
        for lab in labels:
            if lab < 0:
                break
            if lab >= c:
                raise RuntimeError(f"multilabel_margin_loss: target index {lab} is out of bounds for {c} classes")
            counts[row, lab] += 1
    cnt = _C.from_numpy(counts).to(x.dtype).to(x.device)
    non_target = (cnt == 0).to(x.dtype)
    hinge = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)  # [n, j, i]
    loss = (hinge * cnt.unsqueeze(2) * non_target.unsqueeze(1)).sum((1, 2)) / c
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution in the time-batch-channel layout: input (T, B, C_in), weight (K, C_in, C_out), bias
    (C_out), `pad` zeros at both ends of time; out (T + 2·pad - K + 1, B, C_out). conv1d on the
    (B, C_in, T) view with the weight as (C_out, C_in, K)."""
    from .functional import conv1d

    for name, value, pos in (("input", input, 1), ("weight", weight, 2), ("bias", bias, 3)):
        if not isinstance(value, _C.Tensor):
            raise TypeError(f"conv_tbc(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(value).__name__}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.dtype != weight.dtype:
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16"}
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {names.get(str(input.dtype)[6:])} and "
                           f"{names.get(str(weight.dtype)[6:])}")
    time, batch = input.shape[0], input.shape[1]
    out_time = time + 2 * pad - weight.shape[0] + 1
    if out_time <= 0:
        return _C.zeros((max(out_time, 0), batch, weight.shape[2]), dtype=input.dtype, device=input.device)
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return y.permute(2, 0, 1)
