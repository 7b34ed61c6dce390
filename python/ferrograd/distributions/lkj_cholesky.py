"""LKJCholesky(dim, concentration): the LKJ law on correlation matrices, over their lower Cholesky factors
(density proportional to prod_i L_ii^(dim - i + 2 (eta - 1)), i = 2..dim), as
torch.distributions.LKJCholesky.

Sampling is the onion method (Ghosh and Henderson 2003): row i of the factor is a uniform direction on the
sphere scaled by the square root of a Beta(i/2, eta + (dim - 2 - i)/2) draw, the diagonal completing each row
to unit norm. The Beta parameters are torch's: row i >= 2 uses Beta(i/2 + 1/2, ...) where the onion
method has Beta(i/2, ...), so for dim >= 3 the lower rows of the samples are more spread than LKJ(eta)
(torch 2.15 behaviour, kept for parity; log_prob is the exact LKJ density)."""
import math

import ferrograd as _fg

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJCholesky(dim, concentration=1.0): lower Cholesky factors of dim x dim correlation matrices."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        c = self.concentration
        # the Beta parameters of rows 0..dim-1 (row 0 is fixed to e_1; its Beta is a placeholder)
        offset = _fg.cat([_fg.zeros(1, dtype=c.dtype, device=c.device),
                          _fg.arange(dim - 1, dtype=c.dtype, device=c.device)])
        marginal = c + 0.5 * (dim - 2)
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, _fg.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = _fg.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with _fg.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            g = _fg.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norm = g.norm(dim=-1, keepdim=True)
            direction = _fg.where(norm > 0, g / _fg.where(norm > 0, norm, _fg.ones_like(norm)), _fg.zeros_like(g))
            w = y.sqrt() * direction
            tiny = _fg.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + _fg.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = _fg.arange(2, d + 1, device=self.concentration.device)
        exponent = 2 * (self.concentration - 1).unsqueeze(-1) + d - order
        unnormalized = (exponent * diag.log()).sum(-1)
        alpha = self.concentration + 0.5 * (d - 1)
        log_norm = 0.5 * (d - 1) * math.log(math.pi) + _fg.mvlgamma(alpha - 0.5, p=d - 1) - _fg.lgamma(alpha) * (d - 1)
        return unnormalized - log_norm
