"""Poisson distribution with rate `rate` (sampling by NumPy, seeded from ferrograd's generator)."""
import numbers

import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _from_numpy, _numpy_rng, _to_numpy, broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson(rate) on the nonnegative integers."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = _fg.Size() if isinstance(rate, numbers.Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        import numpy as np

        with _fg.no_grad():
            rate = np.broadcast_to(_to_numpy(self.rate), shape)
            draws = _numpy_rng().poisson(rate).astype(np.float64)
            return _from_numpy(np.ascontiguousarray(draws), self.rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return _fg.xlogy(value, rate) - rate - _fg.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (_fg.log(self.rate),)

    def _log_normalizer(self, x):
        return _fg.exp(x)
