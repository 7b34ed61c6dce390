"""nn.functional's activations beyond functional.py's core set: elu, celu, selu, hardtanh, relu6,
hardsigmoid, hardswish, mish, prelu, softsign, softshrink, hardshrink, tanhshrink, threshold, glu,
softmin and rrelu. Compositions of differentiable engine ops (no gradient math here); re-exported by
functional.py.
"""

from .. import _C
from . import functional as _F
from .._autocast_ops import LOWER, autocast_op


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


@autocast_op(cpu=LOWER, cuda=LOWER)
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
