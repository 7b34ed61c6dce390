"""Dirichlet distribution on the simplex; reparameterised sampling by normalising gamma draws (whose
implicit gradients are in gamma.py)."""
import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import _standard_gamma
from .utils import _F

__all__ = ["Dirichlet"]


def _sample_dirichlet(concentration):
    g = _standard_gamma(concentration)
    x = g / g.sum(-1, keepdim=True)
    tiny = _fg.finfo(x.dtype).tiny
    return x.clamp(min=tiny, max=1 - _fg.finfo(x.dtype).eps)


class Dirichlet(ExponentialFamily):
    """Dirichlet(concentration) on the simplex."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (_fg.xlogy(self.concentration - 1.0, value).sum(-1) + _fg.lgamma(self.concentration.sum(-1))
                - _fg.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, keepdim=True)
        mask = (self.concentration < 1).all(-1)
        if bool(mask.any()):
            one_hot = _F().one_hot(self.concentration.argmax(-1), concm1.shape[-1]).to(mode.dtype)
            mode = _fg.where(mask.unsqueeze(-1), one_hot, mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (_fg.lgamma(self.concentration).sum(-1) - _fg.lgamma(a0) - (k - a0) * _fg.digamma(a0)
                - ((self.concentration - 1.0) * _fg.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _fg.lgamma(x).sum(-1) - _fg.lgamma(x.sum(-1))
