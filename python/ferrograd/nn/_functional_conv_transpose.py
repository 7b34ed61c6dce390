"""nn.functional's 1-d and 2-d transposed convolutions (conv_transpose3d is in _functional_volumetric.py),
compositions of differentiable engine ops; re-exported by functional.py."""

import builtins

from .. import _C
from ..overrides import overridable
from . import functional as _F
from .._autocast_ops import LOWER, autocast_op


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    batched = input.dim() == nd + 2
    if not batched:
        if input.dim() != nd + 1:
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got "
                               f"input of size: {list(input.shape)}")
        input = input.unsqueeze(0)
    stride, padding = _F._pair(stride, nd), _F._pair(padding, nd)
    output_padding, dilation = _F._pair(output_padding, nd), _F._pair(dilation, nd)
    if weight.dim() != nd + 2:
        raise RuntimeError("weight should have at least three dimensions")
    cin, cout_g = weight.shape[0], weight.shape[1]
    k = tuple(weight.shape[2:])
    if input.shape[1] != cin:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} to have "
            f"{cin} channels, but got {input.shape[1]} channels instead")
    for i in range(nd):
        if output_padding[i] >= max(stride[i], dilation[i]):
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got output_padding_"
                               f"height: {output_padding[0]} output_padding_width: {output_padding[-1]} stride_height: "
                               f"{stride[0]} stride_width: {stride[-1]} dilation_height: {dilation[0]} "
                               f"dilation_width: {dilation[-1]}")
    x = input
    if nd == 1:  # run as 2-d with a unit height
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        k, stride, padding = (1,) + k, (1,) + stride, (0,) + padding
        output_padding, dilation = (0,) + output_padding, (1,) + dilation
    n, spatial = x.shape[0], tuple(x.shape[2:])
    out_size = tuple((spatial[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + output_padding[i] + 1
                     for i in range(2))
    if builtins.min(out_size) < 1:
        shown = slice(1, 2) if nd == 1 else slice(0, 2)
        raise RuntimeError(f"Given input size per channel: ({' x '.join(str(v) for v in (1,) * (2 - nd) + spatial[shown])}). "
                           f"Calculated output size per channel: ({' x '.join(str(v) for v in (1,) * (2 - nd) + out_size[shown])}). "
                           "Output size is too small")
    cin_g = cin // groups
    blocks = []
    for g in range(groups):
        xg = x.narrow(1, g * cin_g, cin_g).reshape(n, cin_g, -1)  # (N, Cin/g, L)
        wg = weight.narrow(0, g * cin_g, cin_g).reshape(cin_g, -1)  # (Cin/g, Cout/g·k)
        cols = wg.t().matmul(xg)  # (N, Cout/g·k, L)
        blocks.append(_F.fold(cols, out_size, k, dilation, padding, stride))
    out = blocks[0] if groups == 1 else _C.cat(blocks, 1)
    if bias is not None:
        out = out + bias.reshape(-1, 1, 1)
    if nd == 1:
        out = out.squeeze(2)
    return out if batched else out.squeeze(0)


@autocast_op(cpu=LOWER, cuda=LOWER)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


@autocast_op(cpu=LOWER, cuda=LOWER)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")
