"""ContinuousBernoulli: the density on [0, 1] proportional to lambda^x (1 - lambda)^(1 - x)
(Loaiza-Ganem and Cunningham, NeurIPS 2019), as torch.distributions.ContinuousBernoulli.

The normaliser C(lambda) = 2 atanh(1 - 2 lambda) / (1 - 2 lambda) and the moments have a removable
singularity at lambda = 1/2. Inside the interval (lims[0], lims[1]] (default (0.499, 0.501]) every closed form
is replaced by its Taylor polynomial in (lambda - 1/2), the closed forms being evaluated at lims[0]
instead so that their gradients stay finite; the same split as torch, so the values agree."""
import math
import numbers

import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _F, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)) on the unit interval."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            if validate_args is not None and not bool(constraints.unit_interval.check(param).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(param)
            self._param = self.probs
        else:
            self.logits = param
            self._param = self.logits
        self._lims = lims
        batch_shape = _fg.Size() if isinstance(given, numbers.Number) else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        batch_shape = _fg.Size(batch_shape)
        new._lims = self._lims
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    # -- the stable/unstable split

    def _outside_unstable_region(self):
        lo, hi = self._lims
        return (self.probs <= lo) | (self.probs > hi)

    def _cut_probs(self):
        """probs, with the values inside the unstable interval moved to its lower end."""
        return _fg.where(self._outside_unstable_region(), self.probs, _fg.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        """log C(probs)."""
        p = self._cut_probs()
        below = p <= 0.5
        # log |1 - 2p| with each branch's argument kept positive (so neither side makes a NaN gradient)
        log_gap = _fg.where(below, _fg.log1p(-2.0 * _fg.where(below, p, _fg.zeros_like(p))),
                            _fg.log(2.0 * _fg.where(p >= 0.5, p, _fg.ones_like(p)) - 1.0))
        exact = _fg.log(_fg.abs(_fg.log1p(-p) - _fg.log(p))) - log_gap
        d2 = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2
        return _fg.where(self._outside_unstable_region(), exact, taylor)

    # -- moments

    @property
    def mean(self):
        p = self._cut_probs()
        exact = p / (2.0 * p - 1.0) + 1.0 / (_fg.log1p(-p) - _fg.log(p))
        d = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d.pow(2)) * d
        return _fg.where(self._outside_unstable_region(), exact, taylor)

    @property
    def variance(self):
        p = self._cut_probs()
        exact = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / (_fg.log1p(-p) - _fg.log(p)).pow(2)
        d2 = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2
        return _fg.where(self._outside_unstable_region(), exact, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    # -- sampling, densities

    def rsample(self, sample_shape=()):
        u = _fg.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def sample(self, sample_shape=()):
        u = _fg.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype, device=self.probs.device)
        with _fg.no_grad():
            return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = _F().binary_cross_entropy_with_logits(logits, value, reduction="none")
        return self._cont_bern_log_norm() - bce

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        inner = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inner = _fg.where(self._outside_unstable_region(), inner, value)
        return _fg.where(value <= 0.0, _fg.zeros_like(value),
                         _fg.where(value >= 1.0, _fg.ones_like(value), inner))

    def icdf(self, value):
        p = self._cut_probs()
        exact = (_fg.log1p(-p + value * (2.0 * p - 1.0)) - _fg.log1p(-p)) / (_fg.log(p) - _fg.log1p(-p))
        return _fg.where(self._outside_unstable_region(), exact, value)

    def entropy(self):
        log_q = _fg.log1p(-self.probs)
        return self.mean * (log_q - _fg.log(self.probs)) - self._cont_bern_log_norm() - log_q

    # -- exponential family

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        cut = _fg.where(stable, x, _fg.full_like(x, lo))
        exact = _fg.log(_fg.abs(_fg.expm1(cut))) - _fg.log(_fg.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return _fg.where(stable, exact, taylor)
