"""Binomial distribution: `total_count` Bernoulli trials with success `probs` (or `logits`)."""
import ferrograd as _fg

from . import constraints
from .distribution import Distribution
from .utils import _from_numpy, _numpy_rng, _to_numpy, broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # x.clamp(min=0) with a gradient of 1/2 at 0, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_count_and_param(self, self._get_checked_instance(Binomial, _instance), batch_shape)

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        import numpy as np

        with _fg.no_grad():
            n = np.broadcast_to(_to_numpy(self.total_count), shape).astype(np.int64)
            p = np.broadcast_to(_to_numpy(self.probs), shape)
            draws = _numpy_rng().binomial(n, p).astype(np.float64)
            return _from_numpy(np.ascontiguousarray(draws), self._param)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = _fg.lgamma(self.total_count + 1)
        log_factorial_k = _fg.lgamma(value + 1)
        log_factorial_nmk = _fg.lgamma(self.total_count - value + 1)
        # log(1 + e^l) written to stay finite for either sign of l
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * _fg.log1p(_fg.exp(-_fg.abs(self.logits))) - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(_fg.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count == total_count).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = _fg.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


# Shared with NegativeBinomial: a count and one of probs/logits, broadcast together.
def _count_and_param(d, total_count, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        d.total_count, d.probs = broadcast_all(total_count, probs)
        d.total_count = d.total_count.type_as(d.probs)
    else:
        d.total_count, d.logits = broadcast_all(total_count, logits)
        d.total_count = d.total_count.type_as(d.logits)
    d._param = d.probs if probs is not None else d.logits


def _expand_count_and_param(d, new, batch_shape):
    batch_shape = _fg.Size(batch_shape)
    new.total_count = d.total_count.expand(batch_shape)
    if "probs" in d.__dict__:
        new.probs = d.probs.expand(batch_shape)
        new._param = new.probs
    if "logits" in d.__dict__:
        new.logits = d.logits.expand(batch_shape)
        new._param = new.logits
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = d._validate_args
    return new
