"""More of torch.nn.functional: the rest of the activations, distances, group/instance/RMS norms,
interpolation, pixel shuffle, non-constant padding, transposed convolution, adaptive max pooling and
the less common losses. Compositions of differentiable engine ops, as functional.py (no gradient math
here); re-exported by functional.py.
"""

import builtins
import math
import numbers

from .. import _C
from .._creation import tensor as _tensor
from ..autograd.grad_mode import no_grad
from .._out import supports_out
from . import functional as _F

# ---- activations --------------------------------------------------------------------------------


def _act(fn, input, inplace):
    return _F._inplace(fn, input, inplace)


def elu(input, alpha=1.0, inplace=False):
    # Note [safe where]: the negative branch sees min(x, 0), so expm1 never overflows unselected
    return _act(lambda x: _C.where(x > 0, x, x.clamp(max=0).expm1() * alpha), input, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _act(lambda x: _C.where(x > 0, x, (x.clamp(max=0) / alpha).expm1() * alpha), input, inplace)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    return _act(lambda x: _C.where(x > 0, x, x.clamp(max=0).expm1() * _SELU_ALPHA) * _SELU_SCALE, input, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")

    def f(x):
        # torch's gradient is 0 on the boundaries themselves (clamp's would be 1)
        outside = (x <= min_val) | (x >= max_val)
        return _C.where(outside, x.clamp(min_val, max_val).detach(), x)

    return _act(f, input, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    return _act(lambda x: hardtanh(x + 3, 0.0, 6.0) / 6, input, inplace)


def hardswish(input, inplace=False):
    return _act(lambda x: x * hardtanh(x + 3, 0.0, 6.0) / 6, input, inplace)


def mish(input, inplace=False):
    return _act(lambda x: x * _F.softplus(x).tanh(), input, inplace)


def prelu(input, weight):
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                f"{weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return _C.where(input > 0, input, weight * input)


def softsign(input):
    return input / (input.abs() + 1)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    return _C.where((input >= -lambd) & (input <= lambd), input * 0, input)


def tanhshrink(input):
    return input - input.tanh()


def threshold(input, threshold, value, inplace=False):
    # torch's test: x <= threshold takes value (so a nan x, or a nan threshold, keeps x)
    return _act(lambda x: _C.where(x <= threshold, value, x), input, inplace)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.dim()
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return (-input).softmax(_F._dim_for(input, dim), dtype=dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if not training:
        return _F.leaky_relu(input, (lower + upper) / 2, inplace)

    def f(x):
        slope = _C.rand(tuple(x.shape), dtype=x.dtype) * (upper - lower) + lower
        return _C.where(x >= 0, x, x * slope)

    return _act(f, input, inplace)


# ---- distances ----------------------------------------------------------------------------------


@supports_out(grad="div", dtype="cast")  # (torch: torch.div(input, denom, out=out))
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    # torch clamps each norm at eps without letting the clamp reach the gradient
    shape = _F._broadcast_shape(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1, n2 = x1.norm(2, dim, keepdim=True), x2.norm(2, dim, keepdim=True)
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    dim = max(x1.dim(), x2.dim(), 1) - 1
    return (x1 - x2 + eps).norm(p, dim, keepdim=keepdim)


# ---- normalization ------------------------------------------------------------------------------


def _channel_view(t, ndim):
    return t.reshape((-1,) + (1,) * (ndim - 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    if _F.half_with_float_params(input, weight, bias):
        return group_norm(input.float(), num_groups, weight, bias, eps).to(input.dtype)
    n, c = input.shape[0], input.shape[1]
    # torch's batch check (in every mode): one value per group cannot be normalised
    size = [n * c // num_groups, num_groups] + list(input.shape[2:])
    values = size[0]
    for d in size[2:]:
        values *= d
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(tuple(input.shape))
    if weight is not None:
        out = out * _channel_view(weight, input.dim())
    if bias is not None:
        out = out + _channel_view(bias, input.dim())
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher input (got {input.dim()}D input)")
    if _F.half_with_float_params(input, running_mean, running_var, weight, bias):
        return instance_norm(input.float(), running_mean, running_var, weight, bias, use_input_stats, momentum,
                             eps).to(input.dtype)
    n, c = input.shape[0], input.shape[1]
    dims = tuple(range(2, input.dim()))
    if use_input_stats:
        if math.prod(input.shape[2:]) <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                m = mean.detach().reshape(n, c).mean(0)
                v = input.detach().var(dims, unbiased=True).reshape(n, c).mean(0)
                running_mean.mul_(1 - momentum).add_(m * momentum)
                running_var.mul_(1 - momentum).add_(v * momentum)
    else:
        mean = _channel_view(running_mean, input.dim())
        var = _channel_view(running_var, input.dim())
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * _channel_view(weight, input.dim())
    if bias is not None:
        out = out + _channel_view(bias, input.dim())
    return out


_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16, "float16": 0.0009765625,
        "bfloat16": 0.0078125}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != normalized_shape or k > input.dim():
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = _EPS[str(input.dtype).split(".")[-1]]
    if _F.half_with_float_params(input, weight):
        return rms_norm(input.float(), normalized_shape, weight, eps).to(input.dtype)
    dims = tuple(range(input.dim() - k, input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    sq = _F.pad(input * input, (0, 0) * (input.dim() - 2) + (size // 2, (size - 1) // 2))
    c = input.shape[1]
    acc = sq.narrow(1, 0, c)
    for i in range(1, size):
        acc = acc + sq.narrow(1, i, c)
    return input / (acc * (alpha / size) + k).pow(beta)


# ---- resampling and padding ---------------------------------------------------------------------


def _nearest_indices(in_size, out_size, scale):
    s = in_size / out_size if scale is None else 1.0 / scale
    return [min(int(math.floor(i * s)), in_size - 1) for i in range(out_size)]


def _linear_weights(in_size, out_size, scale, align_corners):
    """(i0, i1, lambda) per output position of a 1-d linear resampling, as torch's upsample kernels."""
    out = []
    for i in range(out_size):
        if align_corners:
            src = i * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            s = in_size / out_size if scale is None else 1.0 / scale
            src = max((i + 0.5) * s - 0.5, 0.0)
        i0 = min(int(math.floor(src)), in_size - 1)
        i1 = min(i0 + 1, in_size - 1)
        out.append((i0, i1, src - i0))
    return out


_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: nearest "
            f"| linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {sizes}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        scales = [None] * nd
    else:
        scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * nd
        if len(scales) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scales}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        sizes = [int(math.floor(input.shape[2 + i] * scales[i])) for i in range(nd)]
        if recompute_scale_factor:
            scales = [None] * nd
    want = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}.get(mode)
    if want is not None and nd != want:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {want + 2}D input")
    if mode not in ("nearest", "linear", "bilinear", "bicubic"):
        raise NotImplementedError(f"interpolate: mode '{mode}' is not supported yet")
    # an impossible output is the allocator's RuntimeError up front (not a Python loop over its indices)
    _C.empty(tuple(input.shape[:2]) + tuple(sizes), dtype=input.dtype, device=input.device)
    out = input
    for i in range(nd):
        d = 2 + i
        n_in = input.shape[d]
        if mode == "bicubic":  # nn/_functional_interpolate.py
            from ._functional_interpolate import bicubic_along

            out = bicubic_along(out, d, sizes[i], scales[i], align_corners)
        elif mode == "nearest":
            idx = _tensor(_nearest_indices(n_in, sizes[i], scales[i]), device=input.device)
            out = out.index_select(d, idx)
        else:
            w = _linear_weights(n_in, sizes[i], scales[i], align_corners)
            i0 = _tensor([a for a, _, _ in w], device=input.device)
            i1 = _tensor([b for _, b, _ in w], device=input.device)
            lam = _tensor([lam for _, _, lam in w], dtype=input.dtype, device=input.device)
            lam = lam.reshape((-1,) + (1,) * (input.dim() - d - 1))
            out = out.index_select(d, i0) * (1 - lam) + out.index_select(d, i1) * lam
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape((*batch, c // (r * r), r, r, h, w))
    x = x.permute((*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return x.reshape((*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape((*batch, c, h // r, r, w // r, r))
    x = x.permute((*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return x.reshape((*batch, c * r * r, h // r, w // r))


def _pad_indices(size, left, right, mode):
    idx = []
    for i in range(-left, size + right):
        if mode == "reflect":
            j = -i if i < 0 else (2 * (size - 1) - i if i >= size else i)
        elif mode == "replicate":
            j = min(max(i, 0), size - 1)
        else:  # circular
            j = i % size
        idx.append(j)
    return idx


_constant_pad = _F.pad


def pad(input, pad, mode="constant", value=None):
    """F.pad: 'constant' (functional.py's), 'reflect', 'replicate' and 'circular' (by index_select)."""
    if mode == "constant":
        return _constant_pad(input, pad, mode, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > 3 or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
    out = input
    for i in range(k):
        d = input.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = input.shape[d]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
                f"({left}, {right}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size == 0 and (left or right):
            raise RuntimeError(f"padding of an empty dimension {d} of input {list(input.shape)}")
        if left < 0 or right < 0:
            out = _constant_pad(out, (0, 0) * i + (min(left, 0), min(right, 0)))
            size += min(left, 0) + min(right, 0)
            left, right = max(left, 0), max(right, 0)
        idx = _tensor(_pad_indices(size, left, right, mode), device=input.device)
        out = out.index_select(d, idx)
    return out


# ---- transposed convolution, pooling ------------------------------------------------------------


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


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def _adaptive_max(x, d, out_size):
    # an impossible output is the allocator's RuntimeError up front (not a Python loop over its windows)
    _C.empty(tuple(x.shape[:d]) + (out_size,) + tuple(x.shape[d + 1:]), dtype=x.dtype, device=x.device)
    n = x.shape[d]
    parts = []
    for i in range(out_size):
        start, end = (i * n) // out_size, -(-((i + 1) * n) // out_size)
        # max(dim): a tie's gradient goes to one element, as torch's kernel picks one
        parts.append(x.narrow(d, start, end - start).max(d, keepdim=True)[0])
    return _C.cat(parts, d)


def _check_adaptive_max(input, name):
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {i} being empty")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    if return_indices:
        raise NotImplementedError("adaptive_max_pool1d: return_indices=True is not supported yet")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got {list(input.shape)}")
    _check_adaptive_max(input, "adaptive_max_pool1d")
    size = output_size[0] if isinstance(output_size, (list, tuple)) else output_size
    return _adaptive_max(input, input.dim() - 1, size)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d: return_indices=True is not supported yet")
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {list(input.shape)}")
    oh, ow = output_size if isinstance(output_size, (list, tuple)) else (output_size, output_size)
    oh = input.shape[-2] if oh is None else oh
    ow = input.shape[-1] if ow is None else ow
    _check_adaptive_max(input, "adaptive_max_pool2d")
    # along the width first: a tie then goes to the first of the window in row-major order (torch's)
    return _adaptive_max(_adaptive_max(input, input.dim() - 1, ow), input.dim() - 2, oh)


# ---- losses -------------------------------------------------------------------------------------


def _red(reduction, size_average=None, reduce=None):
    return _F._get_reduction(reduction, size_average, reduce)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = _red(reduction)
    d = input - target
    a = d.abs()
    loss = _C.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _F._reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return _F._reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos * 0
    pos = _C.where(target == 1, 1 - cos, zeros)
    neg = _C.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _F._reduce(pos + neg, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    zeros = input * 0
    margin_part = _C.where(target != 1, (margin - input).clamp_min(0), zeros)
    self_part = _C.where(target != -1, input, zeros)
    return _F._reduce(margin_part + self_part, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    a, pz, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pz == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pz}D, and negative {n}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _F._reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = _C.where(target > 1, target, 2.0)  # Note [safe where]
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + _C.where(target > 1, stirling, 0.0)
    return _F._reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = _C.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()  # clamped without touching the gradient, as torch
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _F._reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    return _F._reduce((-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    loss = -(target * _F.logsigmoid(input) + (1 - target) * _F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _F._reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    c = x.shape[1]
    if t.shape[0] != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}")
    xy = x.gather(1, t.unsqueeze(1))
    z = (x - xy + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    is_target = _C.arange(c, device=x.device).reshape(1, c) == t.unsqueeze(1)
    loss = z.masked_fill(is_target, 0).sum(1) / c
    if input.dim() != 2:
        loss = loss.reshape(tuple(target.shape)) if reduction == "none" else loss
    return _F._reduce(loss, reduction)
