"""nn.functional's group_norm, instance_norm, rms_norm and local_response_norm (batch_norm and
layer_norm are in functional.py). Compositions of differentiable engine ops; re-exported by
functional.py."""

import math
import numbers

from ..autograd.grad_mode import no_grad
from . import functional as _F
from .._autocast_ops import FP32, NONE, autocast_op


def _channel_view(t, ndim):
    return t.reshape((-1,) + (1,) * (ndim - 2))


@autocast_op(cpu=NONE, cuda=FP32)
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


@autocast_op(cpu=NONE, cuda=FP32)
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
