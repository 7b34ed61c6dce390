"""torch.nn.functional: activations, layers and losses as compositions of engine ops.

Every function is built from differentiable ferrograd ops, so autograd derives each backward; no
gradient formula is written here (the house rule: no gradient math in Python). Names, defaults,
reductions and error kinds follow torch.

Note [safe where]
`where(c, f(x), g)` differentiates both branches; a branch that is inf/nan where it is not selected
would poison the gradient (0 * inf = nan). Such branches first replace the inputs they cannot take
(`x_safe = where(c, x, harmless)`), so the unselected branch stays finite.
"""

import collections.abc
import math
import warnings

import numpy as np

from .. import _C
from ..overrides import overridable
from .._argcheck import check_arg, parse_args, tensor_args
from .._creation import tensor as _tensor
from .._creation import zeros_like
from ..autograd.grad_mode import no_grad
from .._autocast_ops import BANNED, FP32, LOWER, NONE, PROMOTE, autocast_op
from .._autocast_ops import call as _autocast_call

# ---- activations --------------------------------------------------------------------------------


def _float_kernel(input, kernel):
    """torch's CPU kernel `kernel` has no integer or bool version: its NotImplementedError."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_name(input.dtype)}'")


def _dim_for(input, dim):
    if dim is None:
        # torch's legacy implicit-dim rule
        return 0 if input.dim() in (0, 1, 3) else 1
    return dim


def _inplace(fn, input, inplace):
    """fn(input), or written into input: computed from a copy, so the saved values of fn's own
    backward are not the tensor being overwritten."""
    return input.copy_(fn(input.clone())) if inplace else fn(input)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.softmax(_dim_for(input, dim), dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.log_softmax(_dim_for(input, dim), dtype=dtype)


@tensor_args("input")
def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


@parse_args(input="Tensor", negative_slope="Number")
def leaky_relu(input, negative_slope=0.01, inplace=False):
    _float_kernel(input, "leaky_relu_cpu")
    return _inplace(lambda x: _C.where(x > 0, x, x * negative_slope), input, inplace)


@parse_args(input="Tensor", approximate="str")
def gelu(input, approximate="none"):
    """x·Φ(x) = x/2·(1 + erf(x/√2)); approximate='tanh': x/2·(1 + tanh(√(2/π)·(x + 0.044715x³)))."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_kernel(input, "GeluKernelImpl")
    fused = _C._gelu(input, approximate)  # one GeluBackward0 node, as torch's kernel
    if fused is not None:
        return fused
    if approximate == "none":
        return input * 0.5 * (1.0 + (input * (1.0 / math.sqrt(2.0))).erf())
    if approximate == "tanh":
        inner = (input + 0.044715 * input * input * input) * math.sqrt(2.0 / math.pi)
        return 0.5 * input * (1.0 + inner.tanh())
    raise RuntimeError("approximate argument must be either none or tanh.")


@tensor_args("input")
def silu(input, inplace=False):
    _float_kernel(input, "silu_cpu")
    return _inplace(lambda x: x * x.sigmoid(), input, inplace)


@autocast_op(cpu=NONE, cuda=FP32)
@parse_args(input="Tensor", beta="Number", threshold="Number")
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta·x)) / beta, and x itself where beta·x > threshold (torch.nn.functional.softplus).

    The log1p branch sees 0 where the linear branch is taken, so exp never overflows there and no
    inf·0 reaches the gradient of the branch not taken."""
    _float_kernel(input, "softplus_cpu")
    bx = input * beta
    linear = bx > threshold
    safe = _C.where(linear, zeros_like(bx), bx)
    return _C.where(linear, input, safe.exp().log1p() / beta)


@tensor_args("input")
def logsigmoid(input):
    """log σ(x): x - log(1 + eˣ) for x < 0, -log(1 + e⁻ˣ) otherwise. Each branch sees 0 where the
    other is taken, so exp never overflows and the gradient is exact at ±inf (1 and 0) and at 0."""
    _float_kernel(input, "log_sigmoid_cpu")
    neg = input < 0
    zero = zeros_like(input)
    x_neg = _C.where(neg, input, zero)
    x_pos = _C.where(neg, zero, input)
    return _C.where(neg, x_neg - x_neg.exp().log1p(), -(-x_pos).exp().log1p())


# ---- layers -------------------------------------------------------------------------------------


@tensor_args("input", "weight", "bias?")
def linear(input, weight, bias=None):
    """y = x Wᵀ + b (with its arguments checked as torch's; the common case is `_C._linear`, below)."""
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                           f"{weight.dim()}D")
    # torch's fused path (addmm on the input as a matrix) for a 2-d input, or a contiguous one with a
    # contiguous bias of one dim (after squeezing); its checks differ from matmul-then-add's
    if bias is not None and (input.dim() == 2 or input.is_contiguous() and bias.is_contiguous()
                             and (bias.dim() == 1 or bias.squeeze().dim() == 1)):
        return _linear_addmm(input, weight, bias)
    try:
        out = input.matmul(weight.t())
    except RuntimeError as e:
        raise _linear_error(input, weight, e) from None
    if bias is None:
        return out
    # else torch adds the bias in place: it broadcasts to the output and is cast to its dtype
    shape = _broadcast_shape(out.shape, bias.shape)
    if shape != tuple(out.shape):
        raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape {list(shape)}")
    if bias.dtype != out.dtype:
        rt = _C.result_type(out, bias)
        if rt != out.dtype and (rt.is_floating_point and not out.is_floating_point() or out.dtype == _C.bool):
            raise RuntimeError(f"result type {_scalar_name(rt)} can't be cast to the desired output type "
                               f"{_scalar_name(out.dtype)}")
        bias = bias.to(out.dtype)
    return out + bias


_linear_checked = linear


def linear(input, weight, bias=None):  # noqa: F811
    """y = x Wᵀ + b."""
    out = _C._linear(input, weight, bias)  # the common case, in one call (addmm as torch's; autocast too)
    if out is not None:
        return out
    if _C._autocast_active():  # torch's autocast lists: linear in lower precision
        return _autocast_call(LOWER, LOWER, _linear_checked, (input, weight, bias), {})
    return _linear_checked(input, weight, bias)


def _linear_addmm(input, weight, bias):
    """torch's addmm(bias, input as a (rows, in) matrix, weight.t()), viewed back to the input's shape."""
    for a, what in ((bias, "self"), (input, "mat1")):
        if a.dtype != weight.dtype:
            raise RuntimeError(f"{what} and mat2 must have the same dtype, but got {_scalar_name(a.dtype)} and "
                               f"{_scalar_name(weight.dtype)}")
    if weight.dim() != 2:
        raise RuntimeError(f"addmm: mat2 must be a matrix, got {weight.dim()}-D tensor")
    rows, n = math.prod(input.shape[:-1]), input.shape[-1]
    if n != weight.shape[1]:
        raise RuntimeError(f"addmm: mat1 and mat2 shapes cannot be multiplied ({rows}x{n} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    b = bias.expand(rows, weight.shape[0])
    if weight.dtype == _C.bool:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    return (input.reshape(rows, n).matmul(weight.t()) + b).reshape((*input.shape[:-1], weight.shape[0]))


def _linear_error(input, weight, error):
    """torch's message for a linear layer that cannot multiply (checked only once matmul has failed)."""
    if input.dim() == 0 or weight.dim() == 0:
        return RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                            f"{weight.dim()}D")
    if weight.dim() == 2 and input.shape[-1] != weight.shape[1]:
        rows = math.prod(input.shape[:-1])
        return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                            f"{weight.shape[1]}x{weight.shape[0]})")
    if input.dtype != weight.dtype:
        return RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_scalar_name(input.dtype)} and "
                            f"{_scalar_name(weight.dtype)}")
    return error


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input1", "input2", "weight", "bias?")
def bilinear(input1, input2, weight, bias=None):
    """y_o = Σ_ij x1_i · A_oij · x2_j + b_o, as one matmul (x1 against A laid out [in1, out·in2]) and a
    product summed over in2."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    out_f, in1, in2 = weight.shape
    for k, (x, n) in enumerate(((input1, in1), (input2, in2)), 1):
        if x.shape[-1] != n:
            raise RuntimeError(f"bilinear(): input{k} size does not match weight size: got {x.shape[-1]} but "
                               f"expected {n}")
    if bias is not None and bias.shape[-1] != out_f:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[-1]} but expected "
                           f"{out_f}")
    t = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out_f * in2))
    out = (t.reshape((*t.shape[:-1], out_f, in2)) * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    input = check_arg("Tensor", input, "dropout", "input", 1)
    p = check_arg("float", p, "dropout", "p", 2)
    training = check_arg("bool", training, "dropout", "train", 3)
    if not 0.0 <= p <= 1.0:  # nan
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        noise = zeros_like(input)
    else:
        noise = (_C.rand(tuple(input.shape), dtype=input.dtype, device=input.device) >= p).to(input.dtype) / (1.0 - p)
    return input.mul_(noise) if inplace else input * noise


@autocast_op(cpu=NONE, cuda=FP32)
@parse_args(input="Tensor", normalized_shape="int[]", weight="Tensor?", bias="Tensor?", eps="float")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the trailing `normalized_shape` dims (biased var), then affine."""
    n = len(normalized_shape)
    if n == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if input.dim() < n or tuple(input.shape[input.dim() - n:]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}"
        )
    if half_with_float_params(input, weight, bias):
        return layer_norm(input.float(), normalized_shape, weight, bias, eps).to(input.dtype)
    _check_same_dtype(input, weight, bias)
    fused = _C._layer_norm(input, list(normalized_shape), weight, bias, eps)  # one NativeLayerNormBackward0
    if fused is not None:
        return fused
    dims = tuple(range(-n, 0))
    input = input.contiguous()  # as torch's kernel: a contiguous result (and gradient)
    xc = input - input.mean(dims, keepdim=True)
    out = xc * ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def half_with_float_params(input, *others):
    """torch's CPU norms take a float16/bfloat16 input with float32 parameters and statistics (its
    mixed type): computed in float32, the result in the input's dtype."""
    given = [t for t in others if t is not None]
    return input.dtype in (_C.float16, _C.bfloat16) and bool(given) and all(t.dtype == _C.float32 for t in given)


def _check_same_dtype(input, *others):
    """Normalisation layers take parameters and statistics of the input's dtype (torch: no mixed dtypes on CPU)."""
    if any(t is not None and t.dtype != input.dtype for t in others):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _verify_batch_size(size):
    size_prods = size[0]
    for s in size[2:]:
        size_prods *= s
    if size_prods == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


@tensor_args("input", "running_mean?", "running_var?", "weight?", "bias?")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) by the batch's statistics (training) or the running ones.
    Training updates the running stats in place: r = (1 - momentum)·r + momentum·stat, with the
    unbiased variance for running_var, as torch."""
    if training:
        _verify_batch_size(input.shape)
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if input.numel() == 0:  # torch: nothing to normalise or check, the input's (affine) copy
        out = input.clone()
        out = out if weight is None else out * weight[0]
        return out if bias is None else out + bias[0]
    if input.dim() < 2:
        raise RuntimeError(f"batch_norm: expected an input with at least 2 dims (N, C, ...), got {input.dim()}D")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.requires_grad and _C.is_grad_enabled():
            raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with respect to argument "
                               f"'{name}'. This input cannot have requires_grad True.")
    _float_kernel(input, "batch_norm")
    if half_with_float_params(input, weight, bias, running_mean, running_var):
        return batch_norm(input.float(), running_mean, running_var, weight, bias, training, momentum,
                          eps).to(input.dtype)
    _check_same_dtype(input, weight, bias, running_mean, running_var)
    shape = (1, c) + (1,) * (input.dim() - 2)
    if training:
        n = input.numel() // c
        fused = _C._batch_norm_train(input, weight, bias, float(eps))
        if fused is not None:  # one NativeBatchNormBackward0 node (float32/float64 on the CPU)
            out, mean, var = fused
            with no_grad():
                if running_mean is not None:
                    running_mean.copy_(mean * momentum + running_mean * (1 - momentum))
                if running_var is not None:
                    running_var.copy_(var * (n / (n - 1)) * momentum + running_var * (1 - momentum))
            return out
        dims = (0,) + tuple(range(2, input.dim()))
        mean = input.mean(dims)
        xc = input - mean.reshape(shape)
        var_sum = (xc * xc).sum(dims)
        out = xc * (var_sum / n + eps).rsqrt().reshape(shape)
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(mean * momentum + running_mean * (1 - momentum))
            if running_var is not None:
                running_var.copy_(var_sum / (n - 1) * momentum + running_var * (1 - momentum))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (input - running_mean.reshape(shape)) * (running_var + eps).rsqrt().reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescale, in place, the rows `input` refers to whose norm exceeds max_norm (torch.embedding_renorm_)."""
    with no_grad():
        idx = _tensor(np.unique(input.numpy()).astype(np.int64))
        rows = weight.index_select(0, idx)
        norms = rows.norm(norm_type, 1, True)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[idx] = rows * scale.to(rows.dtype)


@tensor_args("input", "weight")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` picked by the integer `input`; rows at padding_idx get no gradient."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported (use sparse=False)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if weight.shape[0] == 0 and input.numel():
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    if input.dtype not in (_C.int64, _C.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got {input.type()} instead (while checking arguments for embedding)"
        )
    flat = input.reshape(-1)
    if flat.numel() and (flat.min().item() < 0 or flat.max().item() >= weight.shape[0]):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = weight.index_select(0, flat)
    if padding_idx is not None:
        # same values; the padding rows' copies are detached so no gradient reaches weight[padding_idx]
        out = _C.where((flat == padding_idx).unsqueeze(-1), out.detach(), out)
    if scale_grad_by_freq:
        # same values; the gradient of each row is divided by how often its index occurs in the batch
        counts = np.bincount(flat.numpy(), minlength=weight.shape[0]).astype(np.float64)
        inv = _tensor(1.0 / counts[flat.numpy()], dtype=out.dtype).unsqueeze(-1)
        out = out.detach() + (out - out.detach()) * inv
    return out.reshape((*input.shape, weight.shape[-1]))


@parse_args(input="Tensor", pad="int[]", mode="str", value="float?")
def pad(input, pad, mode="constant", value=None):
    """Constant padding: pad = (left_last, right_last, left_prev, right_prev, ...); negative values crop."""
    if mode != "constant":
        raise NotImplementedError(f"pad: mode '{mode}' is not supported yet (only 'constant')")
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.dim()}"
        )
    value = 0 if value is None else value
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = out.shape[dim]
        if size + left + right < 0:
            raise RuntimeError(
                f"The input size {size}, plus negative padding {left} and {right} resulted in a negative output "
                f"size, which is invalid. Check dimension {dim} of your input."
            )
        if left < 0:
            out, size, left = out.narrow(dim, -left, size + left), size + left, 0
        if right < 0:
            out, size, right = out.narrow(dim, 0, size + right), size + right, 0
        parts = []
        for width in (left, None, right):
            if width is None:
                parts.append(out)
            elif width > 0:
                shape = list(out.shape)
                shape[dim] = width
                parts.append(_C.full(shape, value, dtype=out.dtype, device=out.device))
        if len(parts) > 1:
            out = _C.cat(parts, dim)
    return out


@parse_args(tensor="Tensor", num_classes="int")
def one_hot(tensor, num_classes=-1):
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        top = tensor.max().item()
        if num_classes == -1:
            num_classes = top + 1
        elif top >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return (tensor.unsqueeze(-1) == _C.arange(num_classes, device=tensor.device)).long()


# ---- losses -------------------------------------------------------------------------------------


def _legacy_reduction(reduction, size_average=None, reduce=None):
    """The reduction the deprecated size_average / reduce arguments ask for (else `reduction`, unchecked)."""
    if size_average is not None or reduce is not None:
        warnings.warn("size_average and reduce args will be deprecated, please use reduction='...' instead.",
                      stacklevel=4)
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return ("mean" if size_average else "sum") if reduce else "none"
    return reduction


def _check_reduction(reduction):
    """torch's _Reduction.get_enum: 'none', 'mean' or 'sum', else a ValueError."""
    if not isinstance(reduction, str) or reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _get_reduction(reduction, size_average=None, reduce=None):
    return _check_reduction(_legacy_reduction(reduction, size_average, reduce))


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def _warn_size(input, target):
    if target.size() != input.size():  # as torch's: what a non-tensor argument raises comes from here
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def _pointwise_loss(loss, input, reduction, weight):
    """Reduce an elementwise loss, broadcast to the input's and target's common shape (as torch)."""
    shape = _broadcast_shape(input.shape, loss.shape)
    if tuple(loss.shape) != shape:
        loss = loss.expand(shape)
    if weight is None:
        return _reduce(loss, reduction)
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction)


def _broadcast_pair(input, target):
    """torch.broadcast_tensors of two tensors (its RuntimeError when they do not broadcast)."""
    shape = _broadcast_shape(input.shape, target.shape)
    return input.expand(shape), target.expand(shape)


def _common_float(input, target, kernel):
    """input and target in the dtype torch's loss kernel computes in, which must be a floating one."""
    dt = _C.result_type(input, target)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_scalar_name(dt)}'")
    return input.to(dt), target.to(dt)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _legacy_reduction(reduction, size_average, reduce)
    _broadcast_pair(input, target)
    if weight is None:
        _check_reduction(reduction)
        input, target = _common_float(input, target, "mse_cpu")
        fused = _C._mse_loss(input, target, reduction)  # one MseLossBackward0 node, as torch
        if fused is not None:
            return fused
    d = input - target
    return _pointwise_loss(d * d, input, reduction, weight)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    reduction = _legacy_reduction(reduction, size_average, reduce)
    _broadcast_pair(input, target)
    if weight is None:
        _check_reduction(reduction)
    return _pointwise_loss((input - target).abs(), input, reduction, weight)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5·d²/beta where |d| < beta, else |d| - 0.5·beta (beta = 0: the L1 loss)."""
    _warn_size(input, target)
    reduction = _check_reduction(_legacy_reduction(reduction, size_average, reduce))
    _broadcast_pair(input, target)
    if beta == 0.0:  # torch compares first (a tensor of several elements: its ambiguous-bool error)
        return _pointwise_loss((input - target).abs(), input, reduction, None)  # torch's l1_loss
    beta = check_arg("float", beta, "smooth_l1_loss", "beta", 4)
    if not beta >= 0:  # nan too
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _common_float(input, target, "smooth_l1_cpu")
    d = (input - target).abs()
    near = d < beta
    dn = _C.where(near, d, 0.0)  # the square only where it is taken: inf·0 would make the gradient nan
    loss = _C.where(near, 0.5 * dn * dn / beta, d - 0.5 * beta)
    return _pointwise_loss(loss, input, reduction, None)


@autocast_op(cpu=FP32, cuda=BANNED)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w·(t·log x + (1-t)·log(1-x)), each log clamped below at -100 (as torch)."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}) is deprecated. "
            "Please ensure they have the same size."
        )
    input = check_arg("Tensor", input, "binary_cross_entropy", "input", 1)
    target = check_arg("Tensor", target, "binary_cross_entropy", "target", 2)
    weight = check_arg("Tensor?", weight, "binary_cross_entropy", "weight", 3)
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_scalar_name(target.dtype)} but expected {_scalar_name(input.dtype)}")
    _float_kernel(input, "binary_cross_entropy")
    if input.numel() and ((input < 0) | (input > 1)).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    # see Note [safe where]: at x = 0 or 1 the clamped log is -100 with zero gradient, not 0·inf
    pos, neg = input > 0, input < 1
    log_x = _C.where(pos, _C.where(pos, input, 1.0).log().clamp(min=-100), -100.0)
    log_1mx = _C.where(neg, (-_C.where(neg, input, 0.0)).log1p().clamp(min=-100), -100.0)
    loss = (target - 1) * log_1mx - target * log_x
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """(1-t)·x - (1 + (pos_weight-1)·t)·log σ(x), times weight: BCE of sigmoid(x), computed stably. As
    torch's, the loss has the dtype of (1 - target): torch computes it in place in that tensor."""
    reduction = _get_reduction(reduction, size_average, reduce)
    if not (target.size() == input.size()):
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    input = check_arg("Tensor", input, "binary_cross_entropy_with_logits", "input", 1)
    target = check_arg("Tensor", target, "binary_cross_entropy_with_logits", "target", 2)
    weight = check_arg("Tensor?", weight, "binary_cross_entropy_with_logits", "weight", 3)
    pos_weight = check_arg("Tensor?", pos_weight, "binary_cross_entropy_with_logits", "pos_weight", 4)
    if target.dtype == _C.int64:
        raise RuntimeError(f"result type {_scalar_name(input.dtype)} can't be cast to the desired output type Long")
    # one BinaryCrossEntropyWithLogitsBackward0 node, as torch
    fused = _C._binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)
    if fused is not None:
        return fused
    log_sig = logsigmoid(input)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if target.is_floating_point() and loss.dtype != target.dtype:
        loss = loss.to(target.dtype)
    if weight is not None:
        loss = loss * weight if weight.dtype == loss.dtype or not loss.is_floating_point() else (loss * weight).to(loss.dtype)
    return _reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise t·(log t - x) (input is log-probabilities); log_target: target is log t too.
    reduction='batchmean' divides the sum by the batch size (the KL divergence proper)."""
    if size_average is not None or reduce is not None:
        reduction = _get_reduction(reduction, size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support size."
                "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                stacklevel=2,
            )
        if reduction != "batchmean":
            _get_reduction(reduction)
    input = check_arg("Tensor", input, "kl_div", "input", 1)
    target = check_arg("Tensor", target, "kl_div", "target", 2)
    if not (input.is_floating_point() and target.is_floating_point()):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t) - t·x, with 0·log 0 = 0 (Note [safe where])
        loss = target * _C.where(target == 0, 1.0, target).log() - target * input
    if reduction == "batchmean":
        loss = loss.sum()
        return loss / input.shape[0] if input.dim() != 0 else loss
    return _reduce(loss, reduction)


def _class_weight_shape(input, class_dim):
    shape = [1] * input.dim()
    shape[class_dim] = input.shape[class_dim]
    return shape


def _check_nll_shapes(input, target):
    """torch's shape checks of nll_loss (class-index targets), in its order."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    target_batch = target.shape[0] if target.dim() else 0  # torch reports a 0-d target's as 0
    if input.dim() != 1 and input.shape[0] != target_batch:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target_batch}).")
    if input.dim() <= 2:
        if target.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.dtype != _C.int64:
            raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_scalar_name(target.dtype)}")
        if input.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        if not (input.dim() == 1 and target.numel() == 1) and input.shape[0] != target.shape[0]:
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
    elif input.dim() == 4:
        if target.dim() != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                               f"{target.dim()}")
        if tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}")
    elif tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0], *input.shape[2:]]}, got {list(target.shape)}")


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-w[t]·input[n, t] for class-index targets; 'mean' divides by the summed weights of the targets
    not equal to ignore_index. input: (C), (N, C) or (N, C, d1, ...)."""
    if size_average is None and reduce is None and type(ignore_index) is int and type(reduction) is str:
        out = _C._nll_loss(input, target, weight, reduction, ignore_index)  # (N, C) in one node
        if out is not None:
            return out
    reduction = _get_reduction(reduction, size_average, reduce)
    input = check_arg("Tensor", input, "nll_loss_nd", "input", 1)
    target = check_arg("Tensor", target, "nll_loss_nd", "target", 2)
    weight = check_arg("Tensor?", weight, "nll_loss_nd", "weight", 3)
    ignore_index = check_arg("int", ignore_index, "nll_loss_nd", "ignore_index", 5)
    _check_nll_shapes(input, target)
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.reshape(1)
    c = input.shape[1]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(
            f"weight tensor should be defined either for all {c} classes or no classes but got weight tensor of "
            f"shape: {list(weight.shape)}"
        )
    if target.dtype == _C.uint8:
        target = target.long()
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_scalar_name(target.dtype)}")
    _float_kernel(input, "nll_loss_out_frame")
    ignored = target == ignore_index
    safe = target.masked_fill(ignored, 0)
    if safe.numel():
        bad = (safe < 0) | (safe >= c)
        if bad.any().item():
            raise IndexError(f"Target {safe[bad][0].item()} is out of bounds.")
    picked = input.gather(1, safe.unsqueeze(1)).squeeze(1)
    if weight is None:
        w = (~ignored).to(input.dtype)
    else:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape).masked_fill(ignored, 0.0)
    loss = -(picked * w)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 for unbatched input), then nll_loss for class-index
    targets, or -Σ target·logp for class-probability targets (target shaped like input).
    label_smoothing ε mixes in the uniform distribution: (1-ε)·loss + ε/C·(-Σ_c w_c·logp_c); as torch, an
    ε that is not above 0 (nan included) is no smoothing, and one above 1 is refused."""
    if (size_average is None and reduce is None and type(label_smoothing) is float and label_smoothing == 0.0
            and type(ignore_index) is int and type(reduction) is str and isinstance(input, _C.Tensor)
            and isinstance(target, _C.Tensor) and input.dim() == 2 and target.dim() == 1
            and input.dtype in (_C.float32, _C.float64)):
        # the common case: log_softmax, then nll_loss in one node (NllLossBackward0, as torch's)
        out = _C._nll_loss(input.log_softmax(1), target, weight, reduction, ignore_index)
        if out is not None:
            return out
    reduction = _get_reduction(reduction, size_average, reduce)
    input = check_arg("Tensor", input, "cross_entropy_loss", "input", 1)
    target = check_arg("Tensor", target, "cross_entropy_loss", "target", 2)
    weight = check_arg("Tensor?", weight, "cross_entropy_loss", "weight", 3)
    ignore_index = check_arg("int", ignore_index, "cross_entropy_loss", "ignore_index", 5)
    label_smoothing = check_arg("float", label_smoothing, "cross_entropy_loss", "label_smoothing", 6)
    probabilities = input.shape == target.shape
    if input.dim() == 0:
        # torch's order for a 0-d input: class probabilities check the target's dtype, then take the
        # class dim (1); class indices check the smoothing, then wrap dim 1
        if probabilities:
            if not target.is_floating_point():
                raise RuntimeError("Expected floating point type for target with class probabilities, got "
                                   f"{_scalar_name(target.dtype)}")
            raise IndexError("Dimension specified as 1 but tensor has no dimensions")
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if label_smoothing > 1.0 and not probabilities:  # (class probabilities: checked after log_softmax)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if probabilities:
        if not target.is_floating_point():
            raise RuntimeError(
                f"Expected floating point type for target with class probabilities, got {_scalar_name(target.dtype)}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
    class_dim = 0 if input.dim() == 1 else 1
    logp = input.log_softmax(class_dim)
    n_classes = input.shape[class_dim]
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not label_smoothing > 0.0:  # (nan too) no smoothing, as torch
        label_smoothing = 0.0
    wshape = _class_weight_shape(input, class_dim)
    if probabilities:
        if label_smoothing > 0.0:
            # no classes (an empty input): the uniform share is 0 / 0, NaN as in torch
            target = target * (1 - label_smoothing) + (label_smoothing / n_classes if n_classes else math.nan)
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        if reduction == "mean":
            return -prod.sum() / (input.numel() / n_classes) if input.numel() else prod.sum() * float("nan")
        return -prod.sum() if reduction == "sum" else -prod.sum(class_dim)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    if input.dim() == 1 and target.dim() == 1:  # torch's smoothing term fails on this shape pair
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {list(target.shape)}")
    ignored = target == ignore_index
    smooth = -(logp * weight.reshape(wshape) if weight is not None else logp).sum(class_dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is not None:
            safe = target.masked_fill(ignored, 0).reshape(-1)
            denom = weight.index_select(0, safe).masked_fill(ignored.reshape(-1), 0.0).sum()
        else:
            denom = (~ignored).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / n_classes if n_classes else math.nan)


_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long", "bool": "Bool", "float16": "Half",
                 "bfloat16": "BFloat16", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte"}


def _scalar_name(dtype):
    name = repr(dtype).split(".")[-1]
    return _SCALAR_NAMES.get(name, name)


# ---------------------------------------------------------------------------------------------
# Convolution and pooling: compositions of unfold (im2col, a Rust primitive with fold as its
# adjoint) with matmul / amax / mean, so autograd derives their backward.

def _pair(v, n=2):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(v) * n
        return tuple(v)
    return (v,) * n


def _ntuple(v, n):
    """torch's _single/_pair (nn.functional.unfold, the conv modules): any iterable as a tuple, kept as
    long as it is (a 0-d tensor: its TypeError), anything else repeated n times."""
    return tuple(v) if isinstance(v, collections.abc.Iterable) else (v,) * n


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a [N, C, H, W] (or unbatched [C, H, W]) input as columns [N, C·kh·kw, L],
    with torch's checks in torch's order (im2col)."""
    pairs = [_ntuple(v, 2) for v in (kernel_size, dilation, padding, stride)]
    input = check_arg("Tensor", input, "im2col", "input", 1)
    try:
        args = [check_arg("int[2]", v, "im2col", name, i + 2)
                for i, (name, v) in enumerate(zip(("kernel_size", "dilation", "padding", "stride"), pairs))]
    except RuntimeError:  # a bool tensor among the sizes: converted by torch after the size below
        args = None
    if input.requires_grad and _C.is_grad_enabled():
        input.size(-2)  # torch's autograd records the input's size first: its IndexError on a 1-d input
    if args is None:
        args = [check_arg("int[2]", v, "im2col", name, i + 2)
                for i, (name, v) in enumerate(zip(("kernel_size", "dilation", "padding", "stride"), pairs))]
    for name, v in zip(("kernel_size", "dilation", "padding", "stride"), args):
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = args
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kh} kernel_width: {kw}")
    if dh <= 0 or dw <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dh} dilation_width: {dw}")
    if ph < 0 or pw < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {ph} pad_width: {pw}")
    if sh <= 0 or sw <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {sh} stride_width: {sw}")
    ndim = input.dim()
    valid = input.size(1) != 0 and input.size(2) != 0  # a 0-d to 2-d input: torch's IndexError
    if not ((ndim == 3 and input.size(0) and valid) or (ndim == 4 and valid and input.size(3) != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    if input.dtype == _C.int64:
        raise NotImplementedError('"im2col_out_cpu" not implemented for \'Long\'')
    batched = ndim == 4
    out = _C._unfold(input if batched else input.unsqueeze(0), (kh, kw), (dh, dw), (ph, pw), (sh, sw))
    return out if batched else out.squeeze(0)


def _unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """unfold of a checked [N, C, H, W] input (convolution and pooling)."""
    return _C._unfold(input, _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return _C._fold(input, _pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride))


def _out_len(size, k, d, p, s):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_checks(x, weight, bias, stride, padding, dilation, groups):
    """torch's checks of a batched convolution [N, C, *spatial] (1 or 2 spatial dims), in torch's order;
    returns the padding of each side as ((before, after), ...) per spatial dim."""
    nd = x.dim() - 2
    if weight.dim() != x.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{list(weight.shape)}, but got {x.dim()}-dimensional input of size {list(x.shape)} instead")
    k = tuple(weight.shape[2:])
    if min(stride) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if isinstance(padding, str):
        if padding == "valid":
            sides = ((0, 0),) * nd
        elif padding == "same":
            if max(stride) != 1:
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [dilation[i] * (k[i] - 1) for i in range(nd)]
            if any(t % 2 for t in total):
                warnings.warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                              "zero-padded copy of the input be created", stacklevel=3)
            sides = tuple((t // 2, t - t // 2) for t in total)  # the odd one out goes after, as torch
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        if min(padding) < 0:
            raise RuntimeError("negative padding is not supported")
        sides = tuple((q, q) for q in padding)
    c, oc = x.shape[1], weight.shape[0]
    if oc % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(weight.shape)}] instead")
    if c != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{weight.shape[1] * groups} channels, but got {c} channels instead")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != oc):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with {oc} "
                           f"elements, but got bias of size {list(bias.shape)} instead")
    padded = [x.shape[2 + i] + sum(sides[i]) for i in range(nd)]
    span = [dilation[i] * (k[i] - 1) + 1 for i in range(nd)]
    if any(pi < si for pi, si in zip(padded, span)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, span))}). Kernel size can't be greater than actual input size")
    if weight.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(x.dtype)} but found {_scalar_name(weight.dtype)}")
    if bias is not None and bias.dtype != x.dtype:
        raise RuntimeError(f"Input type ({_type_word(x.dtype)}) and bias type ({_type_word(bias.dtype)}) should be "
                           "the same")
    return sides


def _type_word(dtype):
    return repr(dtype).split(".")[-1].replace("float32", "float").replace("float64", "double")


def _conv2d(x, weight, bias, stride, sides, dilation, groups):
    """The convolution of a batched [N, C, H, W] input: unfold, then one (grouped) matmul."""
    if sides[0][0] != sides[0][1] or sides[1][0] != sides[1][1]:
        x = pad(x, (sides[1][0], sides[1][1], sides[0][0], sides[0][1]))
        sides = ((0, 0), (0, 0))
    padding = (sides[0][0], sides[1][0])
    n, c, h, w = x.shape
    oc, cg, kh, kw = weight.shape
    oh = _out_len(h, kh, dilation[0], padding[0], stride[0])
    ow = _out_len(w, kw, dilation[1], padding[1], stride[1])
    cols = _unfold(x, (kh, kw), dilation, padding, stride)  # [N, C*kh*kw, L]
    cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
    wg = weight.reshape(groups, oc // groups, cg * kh * kw)
    out = (wg @ cols).reshape(n, oc, oh, ow)  # [N, G, OC/G, L] -> [N, OC, oh, ow]
    if bias is not None:
        out = out + bias.reshape(1, oc, 1, 1)
    return out


@autocast_op(cpu=LOWER, cuda=LOWER)
@parse_args(input="Tensor", weight="Tensor", bias="Tensor?", stride="int[2]", dilation="int[2]", groups="int")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    if not isinstance(padding, str):
        padding = check_arg("int[2]", padding, "conv2d", "padding", 5)
    if input.dim() not in (3, 4):
        raise RuntimeError("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _pair(stride), _pair(dilation)
    padding = padding if isinstance(padding, str) else _pair(padding)
    sides = _conv_checks(x, weight, bias, stride, padding, dilation, groups)
    if x.dtype == _C.bool:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    out = _conv2d(x, weight, bias, stride, sides, dilation, groups)
    return out if batched else out.squeeze(0)


@autocast_op(cpu=LOWER, cuda=LOWER)
@parse_args(input="Tensor", weight="Tensor", bias="Tensor?", stride="int[1]", dilation="int[1]", groups="int")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d on a [N, C, 1, L] view."""
    if not isinstance(padding, str):
        padding = check_arg("int[1]", padding, "conv1d", "padding", 5)
    if input.dim() not in (2, 3):
        raise RuntimeError("Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)}")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    stride, dilation = _pair(stride, 1)[:1], _pair(dilation, 1)[:1]
    padding = padding if isinstance(padding, str) else _pair(padding, 1)[:1]
    sides = _conv_checks(x, weight, bias, stride, padding, dilation, groups)
    if x.dtype == _C.bool:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    out = _conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, (1, stride[0]), ((0, 0), sides[0]), (1, dilation[0]),
                  groups).squeeze(2)
    return out if batched else out.squeeze(0)


# ---- pooling ------------------------------------------------------------------------------------
# Every (sample, channel) plane is pooled on its own: [N, C, H, W] is viewed as N*C planes of one
# channel, padded, and cut into windows by unfold: columns [N*C, kh*kw, L]. ceil_mode adds the
# windows that start inside the input but run past its end, by padding the end of each plane further.


def _pool_args(name, kernel_size, stride, padding, dilation=1):
    """The window's sizes, each a pair of C ints (torch checks them before anything else)."""
    k = _c_ints(_pair(kernel_size), f"{name}: kernel_size must either be a single int, or a tuple of two ints")
    s = _pair(stride) if stride not in (None, [], ()) else k
    s = _c_ints(s, f"{name}: stride must either be omitted, a single int, or a tuple of two ints")
    p = _c_ints(_pair(padding), f"{name}: padding must either be a single int, or a tuple of two ints")
    d = _c_ints(_pair(dilation), f"{name}: dilation must be either a single int, or a tuple of two ints")
    return k, s, p, d


def _c_ints(pair, length_error):
    if len(pair) != 2:
        raise RuntimeError(length_error)
    if any(not -2 ** 31 <= v < 2 ** 31 for v in pair):
        raise RuntimeError("value cannot be converted to type int without overflow")
    return pair


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _pool_check(input, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape (rows, then columns) and pool2d_shape_check, in torch's order, on an
    input of 3 or more dims; returns the output size."""
    h, w = input.shape[-2:]
    out = []
    for n, ki, si, pi, di in ((h, k[0], s[0], p[0], d[0]), (w, k[1], s[1], p[1], d[1])):
        if si == 0:
            raise RuntimeError("stride should not be zero")
        if pi < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pi}")
        if pi > _trunc_div((ki - 1) * di + 1, 2):
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pi}, "
                               f"kernel_size={ki} and dilation={di}")
        out.append(_pool_len(n, ki, si, pi, di, ceil_mode))
    if k[0] <= 0 or k[1] <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {k[0]} kW: {k[1]}")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}")
    shape = tuple(input.shape)
    valid = shape[-2] != 0 and shape[-1] != 0
    if not ((len(shape) == 3 and shape[0] != 0 and valid) or (len(shape) == 4 and valid and shape[1] != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                           f"but got:{list(shape)}")
    if k[1] // 2 < p[1] or k[0] // 2 < p[0]:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {p[1]}, "
                           f"padH = {p[0]}, kW = {k[1]}, kH = {k[0]}")
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(f"Given input size: ({shape[-3]}x{h}x{w}). Calculated output size: "
                           f"({shape[-3]}x{out[0]}x{out[1]}). Output size is too small")
    return out


def _pool_len(size, k, s, p, d, ceil_mode):
    """Output length of a pooling window sliding over `size` (torch's pooling_output_shape)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window would start in the right padding
    return out


def _pool_planes(input):
    """input (checked by _pool_check) as planes [N*C, 1, H, W], and a function giving the output back
    its batch shape."""
    lead = tuple(input.shape[:-2])
    h, w = input.shape[-2:]
    return input.reshape(-1, 1, h, w), lambda out, oh, ow: out.reshape((*lead, oh, ow))


def _pool_geometry(h, w, c, k, s, p, d, ceil_mode):
    """Output size and the extra bottom/right padding that makes unfold produce exactly those windows."""
    oh, ow = (_pool_len(n, k[i], s[i], p[i], d[i], ceil_mode) for i, n in enumerate((h, w)))
    if oh < 1 or ow < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
                           "Output size is too small")
    extra = tuple(max(0, (o - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (n + 2 * p[i]))
                  for i, (o, n) in enumerate(((oh, h), (ow, w))))
    return oh, ow, extra


def _padded(planes, p, extra, value):
    if not (p[0] or p[1] or extra[0] or extra[1]):
        return planes
    return pad(planes, (p[1], p[1] + extra[1], p[0], p[0] + extra[0]), value=value)


@parse_args(input="Tensor", kernel_size="int[2]", stride="int[2]?", padding="int[2]", dilation="int[2]",
            ceil_mode="bool")
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of each window; indices: its flat position in the input plane (the first maximum in
    window order, the last NaN, and for a window of -inf its first cell inside the input, as torch).
    The output gathers the input at those indices, so the gradient goes to them alone."""
    k, s, p, d = _pool_args("max_pool2d", kernel_size, stride, padding, dilation)
    if input.dim() not in (3, 4):
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    _pool_check(input, k, s, p, d, ceil_mode)
    if input.dtype == _C.bool:
        raise NotImplementedError("\"max_pool2d\" not implemented for 'Bool'")
    planes, unflatten = _pool_planes(input)
    h, w = planes.shape[-2:]
    oh, ow, extra = _pool_geometry(h, w, input.shape[-3], k, s, p, d, ceil_mode)
    flat = planes.reshape(-1, h * w)
    with no_grad():
        cols = _unfold(_padded(planes.detach(), p, extra, float("-inf")), k, d, 0, s)  # [P, K, L]
        pos = _C.arange(h * w, dtype=_C.float64, device=input.device).reshape(1, 1, h, w)
        pos = _unfold(_padded(pos, p, extra, -1.0), k, d, 0, s)  # [1, K, L]: input cell of each window cell, or -1
        pos_all = pos.expand(cols.shape[0], -1, -1)
        best = cols.argmax(1, keepdim=True)
        indices = pos_all.gather(1, best).squeeze(1).long()
    out = flat.gather(1, indices.clamp(min=0))
    if not math.isfinite(out.detach().sum().item()) or not (pos.amax(1) >= 0).all().item():
        # rare windows, fixed only when present: a NaN (torch takes the last one, argmax the first); a
        # maximum of -inf (argmax may pick a padding cell, torch the first cell inside the input); with
        # dilation, a window wholly in the padding (-inf; torch's index points outside the plane, here -1)
        with no_grad():
            nan = cols != cols
            if nan.any().item():
                last_nan = (cols.shape[1] - 1) - nan.flip(1).to(_C.float64).argmax(1, keepdim=True)
                best = _C.where(nan.any(1, keepdim=True), last_nan, best)
                indices = pos_all.gather(1, best).squeeze(1).long()
            first_inside = pos.gather(1, (pos >= 0).to(_C.float64).argmax(1, keepdim=True)).squeeze(1).long()
            indices = _C.where(cols.gather(1, best).squeeze(1) == float("-inf"), first_inside, indices)
        out = _C.where(indices < 0, float("-inf"), flat.gather(1, indices.clamp(min=0)))
    out = unflatten(out, oh, ow)
    return (out, unflatten(indices, oh, ow)) if return_indices else out


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@parse_args(input="Tensor", kernel_size="int[2]", stride="int[2]?", padding="int[2]", ceil_mode="bool",
            count_include_pad="bool", divisor_override="int?")
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The sum of each window divided by divisor_override, or by the number of its cells inside the input
    (plus those in the zero padding when count_include_pad; never those past it added by ceil_mode)."""
    k, s, p, d = _pool_args("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    input.size(-3)  # torch sizes the input's planes first: its IndexError below 3 dims
    _pool_check(input, k, s, p, d, ceil_mode)
    if input.dtype == _C.bool:
        raise NotImplementedError("\"avg_pool2d\" not implemented for 'Bool'")
    # an integer input: integer averages, truncated (as torch's)
    div = (lambda a, b: a.div(b, rounding_mode="trunc")) if not input.is_floating_point() else (lambda a, b: a / b)
    planes, unflatten = _pool_planes(input)
    h, w = planes.shape[-2:]
    oh, ow, extra = _pool_geometry(h, w, input.shape[-3], k, s, p, d, ceil_mode)
    if extra[0] or extra[1]:
        sums = _unfold(_padded(planes, p, extra, 0.0), k, 1, 0, s).sum(1)  # [P, L]
    else:
        sums = _unfold(planes, k, 1, p, s).sum(1)  # unfold pads with zeros itself
    if divisor_override is not None:
        out = div(sums, divisor_override)
    elif not (extra[0] or extra[1]) and (count_include_pad or not (p[0] or p[1])):
        out = div(sums, k[0] * k[1])
    else:
        with no_grad():
            if count_include_pad:
                ones = _padded(_C.ones(1, 1, h + 2 * p[0], w + 2 * p[1], dtype=sums.dtype, device=sums.device), (0, 0), extra, 0.0)
            else:
                ones = _padded(_C.ones(1, 1, h, w, dtype=sums.dtype, device=sums.device), p, extra, 0.0)
            counts = _unfold(ones, k, 1, 0, s).sum(1)  # [1, L]
        out = div(sums, counts)
    return unflatten(out, oh, ow)


def _adaptive_avg_dim(x, d, out_size):
    """The mean of each window floor(i·n/out) .. ceil((i+1)·n/out) - 1 along dim d: the windows'
    elements gathered into [out, K] (K: the longest window, short ones padded and masked out), so
    an infinite element reaches only its own windows (a matrix of weights would make inf·0 = nan)."""
    n = x.shape[d]
    i = _C.arange(out_size, device=x.device)  # an impossible size fails here, as torch's allocation
    lo = (i * n).div(out_size, rounding_mode="floor")
    hi = -((-(i + 1) * n).div(out_size, rounding_mode="floor"))
    k = int((hi - lo).max())
    at = lo.unsqueeze(1) + _C.arange(k, device=x.device)
    keep = at < hi.unsqueeze(1)
    idx = at.minimum(hi.unsqueeze(1) - 1).reshape(-1)
    x = x.movedim(d, -1)
    vals = x.index_select(-1, idx).unflatten(-1, (out_size, k))
    out = _C.where(keep, vals, _C.zeros((), dtype=x.dtype, device=x.device)).sum(-1) / (hi - lo).to(x.dtype)
    return out.movedim(-1, d)


def _list_with_default(out_size, defaults):
    """torch's: an int as it is; a sequence with None taking the input's size (the input must have more
    dims than the sequence has entries)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size: windows of uneven length where the sizes do not divide
    (rows, then columns, averaged by two small matrices). Output 1x1 is the mean over the last two dims,
    for an input of any rank above 1 (as torch's)."""
    output_size = _list_with_default(output_size, input.size())
    input = check_arg("Tensor", input, "adaptive_avg_pool2d", "input", 1)
    size = check_arg("int[2]", output_size, "adaptive_avg_pool2d", "output_size", 2)
    if len(size) != 2:
        raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    oh, ow = size
    if oh < 0 or ow < 0:
        raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {{{oh}, {ow}}}")
    if oh == 1 and ow == 1:
        return input.mean((-1, -2), keepdim=True)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    h, w = input.shape[-2:]
    if h == 0 or w == 0:
        raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)} with dimension {input.dim() - (2 if h == 0 else 1)}"
                           " being empty")
    out_shape = (*input.shape[:-2], oh, ow)
    if math.prod(out_shape) > 2 ** 63 - 1:
        raise RuntimeError("numel: integer multiplication overflow")
    if oh == 0 or ow == 0:
        return _C.zeros(out_shape, dtype=input.dtype)
    if h % oh == 0 and w % ow == 0:
        return avg_pool2d(input, (h // oh, w // ow))
    out = input if oh == h else _adaptive_avg_dim(input, input.dim() - 2, oh)
    return out if ow == w else _adaptive_avg_dim(out, input.dim() - 1, ow)


# ---- 1-d pooling: the 2-d forms on a [.., C, 1, L] view -----------------------------------------


def _single(v):
    return _pair(v, 1)[0] if isinstance(v, (tuple, list)) and len(v) == 1 else v


def _check_1d(input, name):
    if input.dim() not in (2, 3):
        if name == "max_pool1d":
            raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                               f"for input, but got:{list(input.shape)}")
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")


@parse_args(input="Tensor", kernel_size="int[1]", stride="int[1]?", padding="int[1]", dilation="int[1]",
            ceil_mode="bool")
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    _check_1d(input, "max_pool1d")
    stride = None if stride in (None, [], ()) else (1, _single(stride))
    out = max_pool2d(input.unsqueeze(-2), (1, _single(kernel_size)), stride, (0, _single(padding)),
                     (1, _single(dilation)), ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


@parse_args(input="Tensor", kernel_size="int[1]", stride="int[1]?", padding="int[1]", ceil_mode="bool",
            count_include_pad="bool")
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check_1d(input, "avg_pool1d")
    stride = None if stride in (None, [], ()) else (1, _single(stride))
    return avg_pool2d(input.unsqueeze(-2), (1, _single(kernel_size)), stride, (0, _single(padding)), ceil_mode,
                      count_include_pad).squeeze(-2)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@tensor_args("input")
def adaptive_avg_pool1d(input, output_size):
    _check_1d(input, "adaptive_avg_pool1d")
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _single(output_size))).squeeze(-2)


@autocast_op(cpu=FP32, cuda=NONE)
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The inverse of max_pool2d: each value written at its index in a zero plane of the input's size."""
    k = _pair(kernel_size)
    s = _pair(stride) if stride not in (None, [], ()) else k
    p = _pair(padding)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if indices.dtype != _C.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_scalar_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    default = [(input.shape[-2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in (0, 1)]
    if output_size is None:
        oh, ow = default
    else:
        if len(output_size) == 4:
            output_size = output_size[2:]
        if len(output_size) != 2:
            raise ValueError("output_size should be a sequence containing 2 or 4 elements, but it has a length of "
                             f"'{len(output_size)}'")
        for i in (0, 1):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < output_size[i] < hi:
                raise ValueError(f"invalid output_size \"{output_size}\" (dim {i} must be between {lo} and {hi})")
        oh, ow = output_size
    lead = tuple(input.shape[:-2])
    values = input.reshape(-1, input.shape[-2] * input.shape[-1])
    flat = indices.reshape(values.shape)
    bad = (flat < 0) | (flat >= oh * ow)
    if flat.numel() and bad.any().item():
        raise RuntimeError(f"Found an invalid max index: {flat[bad][0].item()} (output volumes are of size {oh}x{ow})")
    out = _C.zeros(values.shape[0], oh * ow, dtype=input.dtype, device=input.device)
    out[_C.arange(values.shape[0], device=input.device).unsqueeze(1), flat] = values
    return out.reshape((*lead, oh, ow))


# ---- the rest of torch.nn.functional, by topic (nn/_functional_*.py); `pad` there adds the non-constant modes --
from ._functional_activation import (  # noqa: E402,F401
    celu, elu, glu, hardshrink, hardsigmoid, hardswish, hardtanh, mish, prelu, relu6, rrelu, selu, softmin,
    softshrink, softsign, tanhshrink, threshold,
)
from ._functional_distance import cosine_similarity, normalize, pairwise_distance  # noqa: E402,F401
from ._functional_normalization import group_norm, instance_norm, local_response_norm, rms_norm  # noqa: E402,F401
from ._functional_interpolate import (  # noqa: E402,F401
    interpolate, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear, upsample_nearest,
)
from ._functional_padding import pad  # noqa: E402,F401
from ._functional_conv_transpose import conv_transpose1d, conv_transpose2d  # noqa: E402,F401
from ._functional_loss import (  # noqa: E402,F401
    cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, huber_loss, margin_ranking_loss,
    multi_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
    linear_cross_entropy,
)
from ._functional_dropout import (  # noqa: E402,F401
    alpha_dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout,
)
from ._functional_embedding import embedding_bag  # noqa: E402,F401
from ._functional_pooling import (  # noqa: E402,F401
    adaptive_max_pool1d, adaptive_max_pool1d_with_indices, adaptive_max_pool2d, adaptive_max_pool2d_with_indices,
    lp_pool1d, lp_pool2d, lp_pool3d, max_unpool1d, max_unpool3d,
)
from ._functional_sampling import affine_grid, grid_sample, gumbel_softmax  # noqa: E402,F401
from ._functional_ctc import ctc_loss  # noqa: E402,F401
from ._functional_misc import (  # noqa: E402,F401
    celu_, channel_shuffle, elu_, hardtanh_, leaky_relu_, max_pool1d_with_indices, native_channel_shuffle, pdist,
    multilabel_margin_loss, relu_, rrelu_, selu_, threshold_, triplet_margin_with_distance_loss, conv_tbc,
)
from ._functional_volumetric import (  # noqa: E402,F401
    adaptive_avg_pool3d, adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool3d, conv3d,
    conv_transpose3d, max_pool3d, max_pool3d_with_indices,
)
from ._functional_attention import (  # noqa: E402,F401
    _canonical_mask, _none_or_dtype, multi_head_attention_forward, scaled_dot_product_attention,
)
from ._functional_fractional_pooling import (  # noqa: E402,F401
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from ._functional_dispatch import (  # noqa: E402,F401
    BroadcastingList1, BroadcastingList2, BroadcastingList3, assert_int_or_pair, boolean_dispatch,
    handle_torch_function, has_torch_function, has_torch_function_unary, has_torch_function_variadic,
)
from .._C import Tensor  # noqa: E402,F401  (torch.nn.functional.Tensor is torch.Tensor)
