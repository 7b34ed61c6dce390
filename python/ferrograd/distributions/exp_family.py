"""ExponentialFamily: the base of the distributions whose density is
p(x; theta) = exp(<t(x), theta> - F(theta) + k(x)), as torch.distributions.ExponentialFamily.

A family states its natural parameters theta (`_natural_params`), its log-normaliser F
(`_log_normalizer`) and the expected carrier measure E[k(x)] (`_mean_carrier_measure`). The base entropy
is then H = F(theta) - <theta, grad F(theta)> - E[k(x)] (the Bregman divergence of F), the gradient taken
by autograd on detached copies of the natural parameters (as torch does). Families with a closed-form
entropy override it; the base form is what user subclasses get. kl.py registers the matching Bregman KL
for two members of one family."""
import ferrograd as _fg

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions (entropy and KL through the log-normaliser)."""

    @property
    def _natural_params(self):
        """The natural parameters, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """The log-normaliser F as a function of the natural parameters."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[k(x)], the expected carrier measure."""
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[k(x)]."""
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with _fg.enable_grad():
            log_norm = self._log_normalizer(*params)
            grads = _fg.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = log_norm - self._mean_carrier_measure
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
