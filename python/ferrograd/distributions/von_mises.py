"""VonMises(loc, concentration): the circular normal law, density exp(k cos(x - loc)) / (2 pi I0(k)), as
torch.distributions.VonMises.

log I0(k) and I1(k)/I0(k) are computed in float64 from ferrograd's (differentiable) i0/i1 while they fit,
and from the large-argument expansion I_v(k) ~ e^k / sqrt(2 pi k) * sum_n a_n(v) / k^n beyond
_ASYMPTOTIC_FROM, where the expansion is exact to double precision. Torch evaluates the same functions with
Abramowitz-Stegun polynomials (relative error ~1e-7), which bounds how closely the two agree.
Sampling is Best and Fisher's (1979) wrapped-Cauchy rejection sampler, vectorised over NumPy arrays and
seeded from ferrograd's generator; like torch's, the samples carry no gradient (no rsample)."""
import math

import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .utils import _from_numpy, _numpy_rng, _to_numpy, broadcast_all, lazy_property

__all__ = ["VonMises"]

_ASYMPTOTIC_FROM = 500.0
_TERMS = 12


def _log_bessel_asymptotic(k, order):
    """log I_order(k) for large k from the Hankel expansion (terms up to _TERMS)."""
    mu = 4.0 * order * order
    series = _fg.ones_like(k)
    term = _fg.ones_like(k)
    for n in range(1, _TERMS + 1):
        term = term * ((2 * n - 1) ** 2 - mu) / (n * 8.0 * k)
        series = series + term
    return k - 0.5 * _fg.log(2 * math.pi * k) + _fg.log(series)


def _log_bessel(k, order):
    """log I_order(k), order 0 or 1, for k > 0 (float64 inside, the caller's dtype out)."""
    kd = k.double()
    small = kd < _ASYMPTOTIC_FROM
    k_small = kd.clamp(max=_ASYMPTOTIC_FROM)
    k_large = kd.clamp(min=_ASYMPTOTIC_FROM)
    exact = _fg.log(_fg.special.i0(k_small) if order == 0 else _fg.special.i1(k_small))
    out = _fg.where(small, exact, _log_bessel_asymptotic(k_large, order))
    return out.to(k.dtype)


class VonMises(Distribution):
    """VonMises(loc, concentration): a circular distribution on angles, with mean direction `loc`."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, _fg.Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def _loc(self):
        return self.loc.double()

    @lazy_property
    def _concentration(self):
        return self.concentration.double()

    @lazy_property
    def _proposal_r(self):
        """The wrapped-Cauchy envelope's r; for small k a series avoids the cancellation in sqrt(1 + 4k^2)."""
        k = self._concentration
        tau = 1 + (1 + 4 * k.pow(2)).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        r_exact = (1 + rho.pow(2)) / (2 * rho)
        r_small = 1 / k + k
        return _fg.where(k < 1e-5, r_small, r_exact)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * _fg.cos(value - self.loc) - math.log(2 * math.pi) - _log_bessel(k, 0)

    def sample(self, sample_shape=()):
        """Angles in [-pi, pi), wrapped around `loc`."""
        import numpy as np

        shape = tuple(self._extended_shape(sample_shape))
        k = np.broadcast_to(_to_numpy(self._concentration), shape)
        r = np.broadcast_to(_to_numpy(self._proposal_r), shape)
        rng = _numpy_rng()
        x = np.empty(shape)
        todo = np.ones(shape, dtype=bool)
        while todo.any():
            kk, rr = k[todo], r[todo]
            u1, u2, u3 = rng.random((3,) + kk.shape)
            z = np.cos(math.pi * u1)
            f = (1 + rr * z) / (rr + z)
            c = kk * (rr - f)
            accept = (c * (2 - c) - u2 > 0) | (np.log(c / u2) + 1 - c >= 0)
            angle = np.sign(u3 - 0.5) * np.arccos(f)
            idx = np.flatnonzero(todo)[accept]
            x.flat[idx] = angle[accept]
            todo.flat[idx] = False
        loc = np.broadcast_to(_to_numpy(self._loc), shape)
        x = np.mod(x + math.pi + loc, 2 * math.pi) - math.pi
        return _from_numpy(np.ascontiguousarray(x), self.loc)

    @property
    def mean(self):
        """The circular mean, `loc`."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(k) / I0(k)."""
        k = self._concentration
        ratio = _fg.exp(_log_bessel(k, 1) - _log_bessel(k, 0))
        return (1 - ratio).to(self.loc.dtype)
