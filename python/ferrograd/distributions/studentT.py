"""Student's t distribution with `df` degrees of freedom, location `loc` and scale `scale`."""
import math
import numbers

import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .chi2 import Chi2
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return _fg.where(self.df > 1, self.loc, _fg.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        m = _fg.where(self.df > 2, finite, _fg.full_like(finite, math.inf))
        return _fg.where(self.df <= 1, _fg.full_like(finite, math.nan), m)

    def rsample(self, sample_shape=()):
        # X ~ Normal(0, 1), Z ~ Chi2(df): X / sqrt(Z / df) ~ StudentT(df)
        shape = self._extended_shape(sample_shape)
        X = _standard_normal(shape, self.df.dtype, self.df.device)
        Z = self._chi2.rsample(sample_shape)
        Y = X * _fg.rsqrt(Z / self.df)
        return self.loc + self.scale * Y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        Z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + _fg.lgamma(0.5 * self.df)
             - _fg.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * _fg.log1p(y ** 2.0 / self.df) - Z

    def entropy(self):
        lbeta = _fg.lgamma(0.5 * self.df) + math.lgamma(0.5) - _fg.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1)
                * (_fg.digamma(0.5 * (self.df + 1)) - _fg.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
