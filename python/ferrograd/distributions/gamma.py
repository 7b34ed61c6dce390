"""Gamma distribution, with reparameterised sampling by implicit differentiation.

Note [implicit gamma gradient]
A standard gamma sample x ~ Gamma(a, 1) is drawn by NumPy's sampler (seeded from ferrograd's
generator). Its derivative with respect to the concentration a follows from holding the CDF fixed:
P(a, x) = u  =>  dx/da = -(dP/da) / (dP/dx),  dP/dx = x^(a-1) e^(-x) / Gamma(a).
Two float64 evaluations of that ratio, each free of cancellation in its own region:
  * x < a + 1: the power series P = x^a e^-x / Gamma(a+1) * sum_n t_n, t_0 = 1, t_n = t_(n-1) x/(a+n).
    Differentiating term by term and dividing by the density (the common factor cancels):
    dx/da = -(x/a) * [S (log x - digamma(a+1)) - sum_n t_n H_n],  S = sum_n t_n,  H_n = sum_(k<=n) 1/(a+k).
  * x >= a + 1: the upper tail Q = 1 - P written from x: Q / density = int_0^inf (1+s/x)^(a-1) e^-s ds, and
    dx/da = dQ/da / density = int_0^inf (log(x+s) - digamma(a)) (1+s/x)^(a-1) e^-s ds,
    by Gauss-Legendre quadrature after mapping s = L v/(1-v), L the integrand's decay length.
The gradient is checked against finite differences of torch.special.gammainc (tests).
"""
import functools
import numbers

import ferrograd as _fg
from ferrograd.autograd import Function

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _from_numpy, _numpy_rng, _to_numpy, broadcast_all

__all__ = ["Gamma"]


def _digamma_np(a):
    """digamma for positive float64 arrays: recurrence up to 6, then the asymptotic series."""
    import numpy as np

    a = np.array(a, dtype=np.float64, copy=True)
    acc = np.zeros_like(a)
    while True:
        small = a < 6.0
        if not small.any():
            break
        acc -= np.where(small, 1.0 / np.where(small, a, 1.0), 0.0)
        a = np.where(small, a + 1.0, a)
    inv2 = 1.0 / (a * a)
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))
    return acc + np.log(a) - 0.5 / a - series


@functools.lru_cache(maxsize=1)
def _legendre():
    import numpy as np

    return np.polynomial.legendre.leggauss(160)


def _dx_da_series(a, x):
    import numpy as np

    term = np.ones_like(x)
    S = np.ones_like(x)
    H = np.zeros_like(x)
    TH = np.zeros_like(x)
    n = 0
    while True:
        n += 1
        term = term * x / (a + n)
        H = H + 1.0 / (a + n)
        S = S + term
        TH = TH + term * H
        if n > 20 and np.all(term * (1.0 + H) <= 1e-17 * np.maximum(S, TH)):
            break
        if n > 100000:
            break
    return -(x / a) * (S * (np.log(x) - _digamma_np(a + 1.0)) - TH)


def _dx_da_tail(a, x):
    import numpy as np

    lam = 1.0 - (a - 1.0) / x  # decay rate of the integrand at s = 0 (positive for x > a - 1)
    length = 1.0 / lam
    curved = a > 1.0
    gauss_width = np.where(curved, x / np.sqrt(np.where(curved, a - 1.0, 1.0)), np.inf)
    length = np.minimum(length, gauss_width)
    nodes, weights = _legendre()
    v = (nodes + 1.0) / 2.0  # (0, 1)
    w = weights / 2.0
    s = length[..., None] * v / (1.0 - v)
    ds = length[..., None] / (1.0 - v) ** 2
    xs = x[..., None]
    log_kernel = -s + (a[..., None] - 1.0) * np.log1p(s / xs)
    f = (np.log(xs + s) - _digamma_np(a)[..., None]) * np.exp(log_kernel) * ds
    return (f * w).sum(-1)


def _standard_gamma_grad_np(a, x):
    """dx/da for x ~ Gamma(a, 1) (see Note [implicit gamma gradient]); float64 arrays of one shape."""
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    lower = x < a + 1.0
    if lower.any():
        out[lower] = _dx_da_series(a[lower], x[lower])
    if (~lower).any():
        out[~lower] = _dx_da_tail(a[~lower], x[~lower])
    return out


def _gammainc_np(a, x):
    """Regularised lower incomplete gamma P(a, x) for float64 arrays of one shape: the power series below
    x = a + 1, one minus the upper tail (the quadrature of Note [implicit gamma gradient]) above."""
    import math

    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    lgam = np.vectorize(math.lgamma, otypes=[np.float64])
    pos = x > 0
    lower = pos & (x < a + 1.0)
    upper = pos & ~lower
    if lower.any():
        al, xl = a[lower], x[lower]
        term = np.ones_like(xl)
        S = np.ones_like(xl)
        n = 0
        while True:
            n += 1
            term = term * xl / (al + n)
            S = S + term
            if n > 20 and np.all(term <= 1e-17 * S) or n > 100000:
                break
        out[lower] = np.exp(al * np.log(xl) - xl - lgam(al + 1.0)) * S
    if upper.any():
        au, xu = a[upper], x[upper]
        lam = 1.0 - (au - 1.0) / xu
        curved = au > 1.0
        length = np.minimum(1.0 / lam, np.where(curved, xu / np.sqrt(np.where(curved, au - 1.0, 1.0)), np.inf))
        nodes, weights = _legendre()
        v = (nodes + 1.0) / 2.0
        s = length[..., None] * v / (1.0 - v)
        ds = length[..., None] / (1.0 - v) ** 2
        kernel = np.exp(-s + (au[..., None] - 1.0) * np.log1p(s / xu[..., None])) * ds
        q_over_pdf = (kernel * weights / 2.0).sum(-1)
        pdf = np.exp((au - 1.0) * np.log(xu) - xu - lgam(au))
        out[upper] = 1.0 - pdf * q_over_pdf
    return out


class _GammaInc(Function):
    """P(a, x), differentiable in both: dP/dx is the gamma density, dP/da = -(dx/da) dP/dx with dx/da of
    Note [implicit gamma gradient]."""

    @staticmethod
    def forward(ctx, a, x):
        import numpy as np

        ctx.save_for_backward(a, x)
        p = _gammainc_np(_to_numpy(a), _to_numpy(x))
        return _from_numpy(np.ascontiguousarray(p), x)

    @staticmethod
    def backward(ctx, grad):
        import numpy as np

        a, x = ctx.saved_tensors
        pdf = _fg.where(x > 0, _fg.exp(_fg.xlogy(a - 1, x) - x - _fg.lgamma(a)), _fg.zeros_like(x))
        grad_x = grad * pdf
        grad_a = None
        if ctx.needs_input_grad[0]:
            an, xn = _to_numpy(a), _to_numpy(x)
            dxda = np.zeros_like(xn)
            pos = xn > 0
            if pos.any():
                dxda[pos] = _standard_gamma_grad_np(an[pos], xn[pos])
            grad_a = -grad * pdf * _from_numpy(np.ascontiguousarray(dxda), x)
        return grad_a, grad_x


class _StandardGamma(Function):
    """x ~ Gamma(alpha, 1), differentiable in alpha by the implicit gradient."""

    @staticmethod
    def forward(ctx, alpha):
        import numpy as np

        a = _to_numpy(alpha)
        x = _numpy_rng().standard_gamma(a) if a.size else np.zeros(a.shape)
        x = np.maximum(x, np.finfo(np.float64).tiny)
        out = _from_numpy(np.ascontiguousarray(x), alpha)
        out = out.clamp(min=_fg.finfo(alpha.dtype).tiny)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        import numpy as np

        alpha, x = ctx.saved_tensors
        if alpha.numel() == 0:
            return grad * 0
        d = _standard_gamma_grad_np(_to_numpy(alpha), _to_numpy(x))
        return grad * _from_numpy(np.ascontiguousarray(d), alpha)


def _standard_gamma(alpha):
    if alpha.requires_grad and _fg.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    with _fg.no_grad():
        return _StandardGamma.forward(_NoCtx(), alpha)


class _NoCtx:
    def save_for_backward(self, *tensors):
        pass


class Gamma(ExponentialFamily):
    """Gamma(concentration, rate): density rate^c x^(c-1) e^(-rate x) / Gamma(c)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = _fg.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=_fg.finfo(value.dtype).tiny)

    def log_prob(self, value):
        value = _fg.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (_fg.xlogy(self.concentration, self.rate) + _fg.xlogy(self.concentration - 1, value)
                - self.rate * value - _fg.lgamma(self.concentration))

    def cdf(self, value):
        """P(concentration, rate * value), the regularised lower incomplete gamma function (differentiable
        in the concentration too, which torch's is not)."""
        if self._validate_args:
            self._validate_sample(value)
        a, y = _fg.broadcast_tensors(self.concentration, self.rate * value)
        return _GammaInc.apply(a, y)

    def entropy(self):
        return (self.concentration - _fg.log(self.rate) + _fg.lgamma(self.concentration)
                + (1.0 - self.concentration) * _fg.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _fg.lgamma(x + 1) + (x + 1) * _fg.log(-y.reciprocal())
