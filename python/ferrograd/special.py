"""torch.special's common functions, mapped onto ferrograd's ops.

Most are other names of existing ops (expit is sigmoid, gammaln is lgamma, psi is digamma,
multigammaln is mvlgamma ...). i1 is the engine's own kernel; entr, ndtr and log_ndtr are
composed of differentiable ops, so their grad_fn names are those of the last op, not torch's
SpecialEntrBackward0 / SpecialLogNdtrBackward0.
"""

import math

from . import _C
from ._argcheck import tensor_args

__all__ = """expit logit erf erfc erfinv gammaln digamma psi polygamma multigammaln i0 i1 log1p expm1 exp2
sinc xlogy logsumexp softmax log_softmax round entr ndtr log_ndtr""".split()


def _float(x):
    return x if x.is_floating_point() else x.to(_C.float32)


@tensor_args("input")
def expit(input):
    return input.sigmoid()


def logit(input, eps=None):
    from ._pointwise import logit as _logit
    return _logit(input, eps)


@tensor_args("input")
def erf(input):
    return input.erf()


@tensor_args("input")
def erfc(input):
    return input.erfc()


@tensor_args("input")
def erfinv(input):
    return input.erfinv()


@tensor_args("input")
def gammaln(input):
    return input.lgamma()


@tensor_args("input")
def digamma(input):
    return input.digamma()


psi = digamma


def polygamma(n, input):
    from ._pointwise import polygamma as _polygamma
    return _polygamma(n, input)


@tensor_args("input")
def multigammaln(input, p):
    return input.mvlgamma(p)


@tensor_args("input")
def i0(input):
    return input.i0()


@tensor_args("input")
def i1(input):
    """The modified Bessel function of the first kind of order 1 (grad_fn SpecialI1Backward0)."""
    return input._special_i1()


@tensor_args("input")
def log1p(input):
    return input.log1p()


@tensor_args("input")
def expm1(input):
    return input.expm1()


def exp2(input):
    from ._pointwise import exp2 as _exp2
    return _exp2(input)


def sinc(input):
    from ._pointwise import sinc as _sinc
    return _sinc(input)


def xlogy(input, other):
    from ._pointwise import xlogy as _xlogy
    return _xlogy(input, other)


@tensor_args("input")
def logsumexp(input, dim, keepdim=False):
    return input.logsumexp(dim, keepdim)


@tensor_args("input")
def softmax(input, dim, *, dtype=None):
    return input.softmax(dim, dtype=dtype)


@tensor_args("input")
def log_softmax(input, dim, *, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


@tensor_args("input")
def round(input, *, decimals=0):
    return input.round(decimals=decimals)


@tensor_args("input")
def entr(input):
    """-x log x for x > 0, 0 at 0, -inf below, NaN for NaN (the gradient off x > 0 is that of a constant)."""
    x = _float(input)
    pos = x > 0
    one = _C.ones((), dtype=x.dtype, device=x.device)
    safe = _C.where(pos, x, one)
    low = _C.full((), -math.inf, dtype=x.dtype, device=x.device)
    rest = _C.where(x == 0, _C.zeros((), dtype=x.dtype, device=x.device), low)
    return _C.where(pos, -safe * safe.log(), _C.where(x != x, x, rest))


@tensor_args("input")
def ndtr(input):
    """The standard normal CDF, (1 + erf(x/√2)) / 2 (torch's formula: 0 below about -8.3)."""
    return ((_float(input) * math.sqrt(0.5)).erf() + 1) * 0.5


@tensor_args("input")
def log_ndtr(input):
    """log of the standard normal CDF: log1p(-ndtr(-x)) above 0, log(ndtr(x)) down to -20, and the
    asymptotic series of the Mills ratio below (where erfc underflows)."""
    x = _float(input)
    one = _C.ones((), dtype=x.dtype, device=x.device)
    hi = x > 0
    lo = x < -20
    xh = _C.where(hi, x, one)
    xm = _C.where(hi | lo, -one, x)
    xl = _C.where(lo, x, -one * 30)
    upper = ((xh * math.sqrt(0.5)).erfc() * -0.5).log1p()  # ndtr(-x) = erfc(x/√2)/2
    middle = ((xm * -math.sqrt(0.5)).erfc() * 0.5).log()
    z = 1 / (xl * xl)
    series = 1 + z * (-1 + z * (3 + z * (-15 + z * (105 + z * (-945 + z * 10395)))))
    lower = -0.5 * xl * xl - (-xl).log() - 0.5 * math.log(2 * math.pi) + series.log()
    return _C.where(hi, upper, _C.where(lo, lower, middle))
