"""Names torch exports at the top level for ops ferrograd has elsewhere: the torch.* forms of
nn.functional ops (torch.conv2d, torch.layer_norm, torch.embedding(weight, indices), ...), torch.ger
(outer), torch.trapz (trapezoid), torch.cumulative_trapezoid, torch.scalar_tensor and the deprecated
inclusive torch.range. Each calls the existing differentiable op with torch's top-level signature."""
import math
import warnings

from . import _C
from ._argcheck import check_arg

Tensor = _C.Tensor


def _F():
    from .nn import functional
    return functional


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def pixel_shuffle(input, upscale_factor):
    return _F().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    return _F().pixel_unshuffle(input, downscale_factor)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def _stride(stride):
    return None if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    return _F().adaptive_avg_pool1d(input, output_size)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding(weight, indices): the rows of weight (arguments in the ATen order; padding_idx
    -1 means none)."""
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def ger(input, vec2, *, out=None):
    """torch.ger: the outer product (an alias of torch.outer)."""
    from . import outer
    return outer(input, vec2, out=out) if out is not None else outer(input, vec2)


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: torch.trapezoid."""
    from . import trapezoid
    if x is not None:
        return trapezoid(y, x, dim=dim)
    return trapezoid(y, dx=1 if dx is None else dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of y along dim (one element fewer than y there)."""
    y = check_arg("Tensor", y, "cumulative_trapezoid", "y", 1)
    if y.dim() == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    n = y.shape[dim]
    if n == 0:
        return y.narrow(dim, 0, 0)
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    if x is not None:
        if not isinstance(x, Tensor):
            raise TypeError(f"cumulative_trapezoid(): argument 'x' must be Tensor, not {type(x).__name__}")
        if x.dim() == 1:
            if x.shape[0] != n:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each sample point")
            shape = [1] * y.dim()
            shape[dim] = n - 1
            d = x.diff().reshape(shape)
        else:
            d = x.diff(dim=dim)
        return (mid * d).cumsum(dim)
    return (mid * (1 if dx is None else dx)).cumsum(dim)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False):
    """A 0-d tensor holding the number s (float32 unless dtype says otherwise)."""
    from ._creation import tensor
    if not isinstance(s, (int, float)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    t = tensor(float(s), dtype=dtype if dtype is not None else _C.float32, device=device)
    return t.requires_grad_(True) if requires_grad else t


def range(start, end, step=1, *, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False):
    """The deprecated torch.range: start, start + step, ... up to and including end (float32 default)."""
    from ._creation import tensor
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    values = [start + i * step for i in _pyrange(count)]
    t = tensor(values, dtype=dtype if dtype is not None else _C.float32, device=device)
    return t.requires_grad_(True) if requires_grad else t


def _pyrange(n):
    import builtins
    return builtins.range(n)


__all__ = """conv1d conv2d conv_transpose1d conv_transpose2d pixel_shuffle pixel_unshuffle cosine_similarity
pairwise_distance bilinear max_pool1d max_pool2d avg_pool1d adaptive_avg_pool1d rms_norm
layer_norm group_norm embedding ger trapz cumulative_trapezoid scalar_tensor range""".split()


def _tensor_ger(self, vec2):
    return ger(self, vec2)


# Tensor methods, installed once by _tensor_methods.py
TENSOR_METHODS = []
TENSOR_ATTRIBUTES = {"ger": _tensor_ger}
