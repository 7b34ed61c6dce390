"""Pointwise ops as compositions of the engine's elementwise ops: hypot, lerp, addcmul, addcdiv,
logaddexp(2), fmod, copysign, xlogy, nan_to_num, sinc, signbit, heaviside, frac, deg2rad, rad2deg,
log10, exp2, logit, positive, float_power, polygamma, isposinf/isneginf/isreal, fmax, fmin, gcd, lcm,
ldexp, frexp, angle, hardshrink, prelu, diff (differences of neighbours along a dim) and gradient
(finite-difference derivatives, torch.gradient)."""

import builtins
import math
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from .overrides import overridable
from . import return_types as _rt
from ._argcheck import tensor_args
from ._op_utils import _FLOATS, Tensor, _floatish, _from_host, _host, _is_float, _result_dtype, _wrap_dim
from ._out import scalar_type_name as _tname
from ._autocast_ops import LOWER, NONE, PROMOTE, autocast_op


@tensor_args("input", "other")
def hypot(input, other):
    # scaled by the larger magnitude, so squares of large (small) values do not overflow (underflow);
    # an infinite side gives inf even against nan (C's hypot, as torch's)
    a, b = input.abs(), other.abs()
    big, small = a.maximum(b), a.minimum(b)
    ratio = small / big.masked_fill(big == 0, 1)
    h = big * (ratio * ratio + 1).sqrt()
    return h.masked_fill(a.isinf() | b.isinf(), float("inf"))


def _as_opmath(value, dtype):
    """A Python scalar as torch's CPU kernels use it for a tensor of `dtype`: rounded to float32 for
    float32 (and for float16/bfloat16, whose kernels compute in float32), kept as it is for float64."""
    if dtype == _C.float64 or isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return float(np.float32(value))


def _fma_ready(*ts):
    """Tensors on which a scalar-alpha `add` is torch's one-rounding fused multiply-add: float32 or
    float64, one dtype, on the CPU (the kernels behind `Tensor.add(other, alpha=)` use mul_add there)."""
    dt = ts[0].dtype
    return dt in (_C.float32, _C.float64) and builtins.all(t.dtype == dt and not t.is_cuda for t in ts)


@tensor_args("input", "end")
def lerp(input, end, weight):
    # torch's formula: from the nearer end (exact at weight 0 and 1), each branch one fused
    # multiply-add on the CPU: input + w*(end - input) for |w| < 0.5, end - (end - input)*(1 - w) else,
    # with w and 1 - w in the tensor's precision
    w = weight
    diff = end - input
    if isinstance(w, Tensor):
        return _C.where(w.abs() < 0.5, input + w * diff, end - diff * (1 - w))
    if _fma_ready(input, end):
        w = _as_opmath(w, input.dtype)
        if builtins.abs(w) < 0.5:
            return input.add(diff, alpha=w)
        return end.add(diff, alpha=-_as_opmath(1.0 - w, input.dtype))
    return input + w * diff if builtins.abs(w) < 0.5 else end - diff * (1 - w)


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "tensor1", "tensor2")
def addcmul(input, tensor1, tensor2, *, value=1):
    # torch's order: (value * tensor1) * tensor2 + input, the last multiply and the add fused (one
    # rounding) on the CPU. For float32 without autograd the fused step is taken in float64, where the
    # product of two float32 values is exact (a double rounding remains, wrong once in ~2^28 cases)
    p = tensor1 if value == 1 else tensor1 * value
    if (input.dtype == _C.float32 and _fma_ready(input, tensor1, tensor2)
            and not (_C.is_grad_enabled() and builtins.any(t.requires_grad for t in (input, tensor1, tensor2)))):
        f64 = _C.float64
        return (p.to(f64) * tensor2.to(f64) + input.to(f64)).to(_C.float32)
    return input + p * tensor2


@autocast_op(cpu=NONE, cuda=PROMOTE)
@tensor_args("input", "tensor1", "tensor2")
def addcdiv(input, tensor1, tensor2, *, value=1):
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    # torch's order: input + (value * tensor1) / tensor2
    return input + (tensor1 if value == 1 else tensor1 * value) / tensor2


@tensor_args("input", "other")
def logaddexp(input, other):
    m = input.maximum(other)
    # both -inf (or both +inf): the max itself; else max + log(1 + exp(-|a - b|))
    same_inf = m.isinf() & (input == other)
    delta = (input - other).masked_fill(same_inf, 0).abs()
    return _C.where(same_inf, m, m + (-delta).exp().log1p())


@tensor_args("input", "other")
def logaddexp2(input, other):
    ln2 = math.log(2.0)
    return logaddexp(input * ln2, other * ln2) / ln2


@tensor_args("input")
def fmod(input, other):
    # C's fmod from torch.remainder (floored): they differ by `other` where the signs differ
    r = input.remainder(other)
    fix = (r != 0) & ((r < 0) != (input < 0))
    return _C.where(fix, r - other, r)


def fmod_(self, other):
    return self.copy_(fmod(self, other))


@tensor_args("input")
def copysign(input, other):
    x = input if input.is_floating_point() else input.to(_C.float32)
    if not isinstance(other, Tensor):
        return -x.abs() if math.copysign(1.0, other) < 0 else x.abs()
    if other.is_floating_point():
        x = x.to(_result_dtype(x, other))
    neg = _from_host(np.signbit(_host(other)), other)  # -0.0 and -nan count as negative
    out = _C.where(neg, -x.abs(), x.abs())
    if other.requires_grad:  # torch's gradient for `other` is zeros, not None: subtract an exact 0
        out = out - other.masked_fill(_C.full((), True, dtype=_C.bool, device=other.device), 0)
    return out


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def xlogy(input, other):
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor argument")
    like = input if isinstance(input, Tensor) else other
    # torch's promotion of the two (a number weakest), then an integral result computes in the default float
    dt = _C.result_type(input, other)
    if not dt.is_floating_point:
        dt = _C.float32
    x = input.to(dt) if isinstance(input, Tensor) else _C.full((), float(input), dtype=dt, device=like.device)
    y = other.to(dt) if isinstance(other, Tensor) else _C.full((), float(other), dtype=dt, device=like.device)
    # 0 * log(y) is 0 where log(y) is not finite (y <= 0, y = inf); elsewhere x * log(y) is exactly 0 at
    # x = 0 and gives torch's gradient log(y) for x
    zero = (x == 0) & ((y <= 0) | y.isinf())
    safe_y = _C.where(zero, _C.ones((), dtype=y.dtype, device=y.device), y)
    return _C.where(zero, _C.zeros((), dtype=(x * safe_y).dtype, device=like.device), x * safe_y.log())


@tensor_args("input")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if not input.is_floating_point():
        return input.clone()
    info = np.finfo(np.float32 if str(input.dtype).endswith("float32") else np.float64)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    x = input.masked_fill(input.isnan(), nan)
    x = x.masked_fill(input == float("inf"), posinf)
    return x.masked_fill(input == float("-inf"), neginf)


def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return self.copy_(nan_to_num(self, nan, posinf, neginf))


@tensor_args("input")
def sinc(input):
    x = input if input.is_floating_point() else input.to(_C.float32)
    zero = x == 0
    px = _C.where(zero, _C.ones((), dtype=x.dtype, device=x.device), x) * math.pi
    return _C.where(zero, _C.ones((), dtype=x.dtype, device=x.device), px.sin() / px)


@tensor_args("input")
def signbit(input):
    return _from_host(np.signbit(_host(input)), input)


@tensor_args("input", "values")
def heaviside(input, values):
    step = (input > 0).to(_result_dtype(input, values))
    return _C.where(input == 0, values.to(step.dtype), step).detach()


@tensor_args("input")
def frac(input):
    return input - input.trunc()


@tensor_args("input")
def deg2rad(input):
    return _floatish(input) * (math.pi / 180.0)


@tensor_args("input")
def rad2deg(input):
    return _floatish(input) * (180.0 / math.pi)


@tensor_args("input")
def log10(input):
    return _floatish(input).log() / math.log(10.0)


@tensor_args("input")
def exp2(input):
    return 2.0 ** _floatish(input)


@tensor_args("input")
def logit(input, eps=None):
    z = input if eps is None else input.clamp(eps, 1 - eps)
    return (z / (1 - z)).log()


@tensor_args("input")
def positive(input):
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def float_power(input, exponent):
    if isinstance(input, Tensor):
        b = input.to(_C.float64)
        return b.pow(exponent.to(_C.float64) if isinstance(exponent, Tensor) else float(exponent))
    return float(input) ** exponent.to(_C.float64)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def polygamma(n, input):
    """torch.polygamma(n, input): the n-th derivative of digamma (Tensor.polygamma(n) in the engine)."""
    input = _C._parse_arg("Tensor", input, "polygamma", "input", 2)
    return input.polygamma(n)


@tensor_args("input")
def isposinf(input):
    return input == math.inf


@tensor_args("input")
def isneginf(input):
    return input == -math.inf


@tensor_args("input")
def isreal(input):
    # ferrograd has no complex dtypes: every element is real
    return _C.full(tuple(input.shape), True, dtype=_C.bool, device=input.device)


@tensor_args("input")
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of d input / d x_k along each dim k (torch.gradient): second-order central differences
    inside; one-sided differences of order edge_order (1 or 2) at the ends. spacing: one number for
    every dim, one per dim, or per dim a 1-d tensor of coordinates (unequal steps: the three-point
    formula of the neighbouring steps). A tuple, one tensor per dim. An integer input gives floats."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [_wrap_dim(d, input.dim()) for d in dims]
    if isinstance(spacing, (list, tuple)):
        spacing = list(spacing)
        if len(spacing) != len(dims):
            what = f"'self.dim() = {input.dim()}', since dim argument was not given" if dim is None else \
                f"'dim.size() = {len(dims)}'"
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to {what}, but got a list of length {len(spacing)}")
    else:
        spacing = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    x = input if input.is_floating_point() else input.to(_C._get_default_dtype())
    return tuple(_gradient_along(x, d, h, edge_order) for d, h in zip(dims, spacing))


def _gradient_along(f, d, h, edge_order):
    n = f.shape[d]

    def part(start, length):
        return f.narrow(d, start, length)

    if not isinstance(h, _C.Tensor):  # equal steps h
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (part(0, 1) * -3 + part(1, 1) * 4 - part(2, 1)) / (2 * h)
            last = (part(n - 1, 1) * 3 - part(n - 2, 1) * 4 + part(n - 3, 1)) / (2 * h)
        return _C.cat([first, inner, last], d)
    # coordinates: steps dx[i] = x[i+1] - x[i], seen along dim d
    shape = [1] * f.dim()
    shape[d] = n - 1
    dx = h.to(f.dtype).diff().reshape(shape)
    left, right = dx.narrow(d, 0, n - 2), dx.narrow(d, 1, n - 2)
    inner = (left * left * part(2, n - 2) - right * right * part(0, n - 2)
             + (right * right - left * left) * part(1, n - 2)) / (left * right * (left + right))
    if edge_order == 1:
        first = (part(1, 1) - part(0, 1)) / dx.narrow(d, 0, 1)
        last = (part(n - 1, 1) - part(n - 2, 1)) / dx.narrow(d, n - 2, 1)
    else:
        a, b = dx.narrow(d, 0, 1), dx.narrow(d, 1, 1)
        first = (-(2 * a + b) / (a * (a + b)) * part(0, 1) + (a + b) / (a * b) * part(1, 1)
                 - a / (b * (a + b)) * part(2, 1))
        a, b = dx.narrow(d, n - 3, 1), dx.narrow(d, n - 2, 1)
        last = (b / (a * (a + b)) * part(n - 3, 1) - (a + b) / (a * b) * part(n - 2, 1)
                + (2 * b + a) / (b * (a + b)) * part(n - 1, 1))
    return _C.cat([first, inner, last], d)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = _wrap_dim(dim, input.dim())
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _C.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi.logical_xor(lo) if x.dtype == _C.bool else hi - lo
    return x


def fmax(input, other):
    # NaN loses: where one side is NaN the other is taken (and gets the gradient); else maximum,
    # whose gradient splits ties evenly as torch's fmax does
    return _C.where(other.isnan(), input, _C.where(input.isnan(), other, input.maximum(other)))


def fmin(input, other):
    return _C.where(other.isnan(), input, _C.where(input.isnan(), other, input.minimum(other)))


def _integral(t, name):
    if t.dtype in _FLOATS:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_tname(t.dtype)}'")


def _host_binary(input, other, name, f):
    _integral(input, name)
    if isinstance(other, Tensor):
        _integral(other, name)
    b = _host(other) if isinstance(other, Tensor) else other
    # NumPy's promotion differs (a 0-d tensor counts there): the result in torch's dtype
    return _from_host(f(_host(input), b), input).to(_C.result_type(input, other))


def gcd(input, other):
    return _host_binary(input, other, "gcd", np.gcd)


def lcm(input, other):
    return _host_binary(input, other, "lcm", np.lcm)


def ldexp(input, other):
    # input * 2**other
    dt = _C.result_type(input, other)
    x = input.to(dt if dt.is_floating_point else _C.float32)
    return x * _C.full((), 2.0, dtype=x.dtype, device=x.device).pow(other)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1)."""
    if not _is_float(input):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    _, e = np.frexp(_host(input))
    exponent = _from_host(e.astype(np.int32), input)
    # the mantissa as input / 2**exponent: its gradient is torch's grad / 2**exponent
    return _rt.frexp(input / exponent.to(input.dtype).exp2(), exponent)


_rt.frexp = namedtuple("frexp", ["mantissa", "exponent"])


def hardshrink(input, lambd=0.5):
    from .nn import functional as F
    return F.hardshrink(input, lambd)


@autocast_op(cpu=LOWER, cuda=LOWER)
def prelu(input, weight):
    from .nn import functional as F
    return F.prelu(input, weight)


def angle(input):
    # a real number's argument: pi below zero, 0 otherwise (NaN stays NaN); zero gradient
    x = input if _is_float(input) else input.to(_C.float32)
    return _C.where(x < 0, math.pi, 0.0).to(x.dtype) + x * 0


# ------------------------------------------------------------------ exports
__all__ = """
gradient diff hypot lerp addcmul addcdiv logaddexp logaddexp2 fmod copysign xlogy nan_to_num sinc signbit heaviside
frac deg2rad rad2deg log10 exp2 logit positive float_power polygamma isposinf isneginf isreal fmax fmin gcd
lcm ldexp frexp hardshrink prelu angle
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
diff hypot lerp addcmul addcdiv logaddexp logaddexp2 fmod copysign xlogy nan_to_num sinc signbit heaviside
frac deg2rad rad2deg log10 exp2 logit positive float_power isposinf isneginf isreal fmod_ nan_to_num_ fmax
fmin gcd lcm ldexp frexp hardshrink prelu angle
""".split()
TENSOR_ATTRIBUTES = {}
