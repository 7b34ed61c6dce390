"""GeneralizedPareto(loc, scale, concentration): the peaks-over-threshold law, with survival function
S(x) = (1 + k z)^(-1/k), z = (x - loc) / scale (the exponential law exp(-z) at k = 0), as
torch.distributions.GeneralizedPareto. A concentration within 1e-8 of zero (torch.isclose's tolerance)
takes the exponential form; the other branch is evaluated with a safe stand-in concentration there, so
its gradient is finite."""
import math
import numbers

import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """GeneralizedPareto(loc, scale, concentration)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, numbers.Number) for v in (loc, scale, concentration)):
            batch_shape = _fg.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _z(self, x):
        return (x - self.loc) / self.scale

    def _split(self):
        """(mask of concentration ~ 0, concentration with those entries replaced by 1)."""
        k = self.concentration
        zero = k.abs() <= 1e-8
        return zero, _fg.where(zero, _fg.ones_like(k), k)

    def rsample(self, sample_shape=()):
        u = _fg.rand(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, k = self._split()
        power = 1.0 / k + _fg.ones_like(z)
        general = _fg.where(power == 0, power, power * _fg.log1p(k * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, numbers.Real) else self.scale.log()
        return -log_scale - _fg.where(zero, z, general)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        zero, k = self._split()
        return _fg.where(zero, -z, -_fg.log1p(k * z) / k)

    def log_cdf(self, value):
        return _fg.log1p(-_fg.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return _fg.exp(self.log_cdf(value))

    def icdf(self, value):
        zero, k = self._split()
        log_u = _fg.log1p(-value)
        general = self.loc + self.scale / k * _fg.expm1(-k * log_u)
        return _fg.where(zero, self.loc - self.scale * log_u, general)

    @property
    def mean(self):
        k = self.concentration
        ok = k < 1
        safe = _fg.where(ok, k, _fg.full_like(k, 0.5))
        return _fg.where(ok, self.loc + self.scale / (1 - safe), _fg.full_like(k, math.nan))

    @property
    def variance(self):
        k = self.concentration
        ok = k < 0.5
        safe = _fg.where(ok, k, _fg.full_like(k, 0.25))
        var = self.scale.pow(2) / ((1 - safe).pow(2) * (1 - 2 * safe))
        return _fg.where(ok, var, _fg.full_like(k, math.nan))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (_fg.log(self.scale) + self.concentration + 1).expand(tuple(self._batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        k = self.concentration
        upper = _fg.where(k < 0, self.loc - self.scale / k, _fg.full_like(k, math.inf))
        return constraints.interval(self.loc, upper)
