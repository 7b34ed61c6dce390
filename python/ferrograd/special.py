"""torch.special's common functions, mapped onto ferrograd's ops.

The op table's special names (expit is sigmoid, gammaln is lgamma, psi is digamma, i1 the engine's
own kernel ...) are generated from its rows (`_function_forms.special_forms`); the rest are here
(multigammaln is mvlgamma ...); entr, ndtr and log_ndtr are
composed of differentiable ops, so their grad_fn names are those of the last op, not torch's
SpecialEntrBackward0 / SpecialLogNdtrBackward0.
"""

import math

from . import _C
from ._argcheck import tensor_args
from ._function_forms import special_forms

# the op table's torch.special names (expit, erf, erfc, erfinv, gammaln, digamma, psi, i0, i1, log1p,
# expm1, round, logsumexp ...), generated from its rows
_TABLE_FORMS = special_forms()
globals().update(_TABLE_FORMS)

__all__ = list(_TABLE_FORMS) + """logit polygamma multigammaln exp2 sinc xlogy softmax log_softmax entr ndtr
log_ndtr""".split()


def _float(x):
    return x if x.is_floating_point() else x.to(_C.float32)


def logit(input, eps=None):
    from ._pointwise import logit as _logit
    return _logit(input, eps)


def polygamma(n, input):
    from ._pointwise import polygamma as _polygamma
    return _polygamma(n, input)


@tensor_args("input")
def multigammaln(input, p):
    return input.mvlgamma(p)


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
def softmax(input, dim, *, dtype=None):
    return input.softmax(dim, dtype=dtype)


@tensor_args("input")
def log_softmax(input, dim, *, dtype=None):
    return input.log_softmax(dim, dtype=dtype)


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


def _install_out():
    import sys
    from ._out_compositions import install
    install({"special.": sys.modules[__name__]})


_install_out()
