"""NegativeBinomial: the number of successes (probability `probs` each) before `total_count` failures."""
import ferrograd as _fg

from . import constraints
from .binomial import _count_and_param, _expand_count_and_param
from .distribution import Distribution
from .gamma import Gamma
from .poisson import Poisson
from .utils import _F, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_count_and_param(self, self._get_checked_instance(NegativeBinomial, _instance), batch_shape)

    @property
    def mean(self):
        return self.total_count * _fg.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / _fg.sigmoid(-self.logits)

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
        # a Poisson whose rate is Gamma(total_count, (1 - p) / p)
        with _fg.no_grad():
            rate = Gamma(concentration=self.total_count, rate=_fg.exp(-self.logits), validate_args=False).sample(sample_shape)
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        F = _F()
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = -_fg.lgamma(self.total_count + value) + _fg.lgamma(1.0 + value) + _fg.lgamma(self.total_count)
        # the pmf is 1 at value 0 when total_count is 0
        log_normalization = _fg.where(self.total_count + value == 0, _fg.zeros_like(log_normalization), log_normalization)
        return log_unnormalized_prob - log_normalization
