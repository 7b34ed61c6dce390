"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the law of sum_i x_i x_i^T over df
Gaussian vectors with covariance Sigma, on positive-definite matrices, as torch.distributions.Wishart.

rsample is Bartlett's construction: A lower triangular with A_ii = sqrt(chi2(df - i)) and A_ij ~ N(0, 1)
below the diagonal, the sample (L A)(L A)^T with L the Cholesky factor of Sigma. The chi-square draws are
reparameterised (gamma.py), so gradients reach df and Sigma. Samples that come out singular are drawn
again (up to `max_try_correction` times), with a warning; torch 2.15 warns on every draw (its check is
inverted), ferrograd only when a singular sample is actually seen."""
import math
import numbers
import warnings

import ferrograd as _fg

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma sum_{i<p} digamma(x - i/2)."""
    halves = _fg.arange(p, dtype=x.dtype, device=x.device) / 2
    return _fg.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): exactly one of the
    three matrix parameters."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        p = param.shape[-1]
        if isinstance(df, numbers.Number):
            batch_shape = _fg.Size(param.shape[:-2])
            self.df = _fg.tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = _fg.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        event_shape = _fg.Size(param.shape[-2:])
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(i + 1) for i in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _fg.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(self.df, batch_shape)

    def _chi2(self, df, batch_shape):
        """The chi-square laws of Bartlett's diagonal: df, df - 1, ..., df - p + 1."""
        p = self._event_shape[-1]
        steps = _fg.arange(p, dtype=self._unbroadcasted_scale_tril.dtype, device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (p,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = _fg.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(i + 1) for i in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(new.df, batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = _fg.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return _fg.cholesky_solve(eye.expand(tuple(L.shape)), L).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def _df_matrix(self, df):
        return df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = _fg.where(factor <= 0, _fg.full_like(factor, math.nan), factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        root = self._dist_chi2.rsample(sample_shape).sqrt()
        root = root.clamp(min=_fg.finfo(root.dtype).eps)
        L = self._unbroadcasted_scale_tril
        below = _fg.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p, p), dtype=L.dtype, device=L.device)
        A = _fg.diag_embed(root) + below.tril(-1)
        chol = L @ A
        return chol @ chol.mT

    def _singular(self, sample):
        bad = ~self.support.check(sample)
        if self._batch_shape:
            bad = bad.amax(self._batch_dims)
        return bad

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A reparameterised draw; singular draws are redrawn up to `max_try_correction` (10) times."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = _fg.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        bad = self._singular(sample)
        if bool(bad.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                mask = bad.reshape(tuple(bad.shape) + (1,) * (len(self._batch_shape) + 2))
                sample = _fg.where(mask, fresh, sample)
                bad = self._singular(sample)
                if not bool(bad.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        log_det_L = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = _fg.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + log_det_L) - _fg.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * _fg.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        log_det_L = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + log_det_L) + _fg.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        half_nu = y + (p + 1) / 2
        return half_nu * (p * _LOG_2 - _fg.linalg.slogdet(-2 * x).logabsdet) + _fg.mvlgamma(half_nu, p=p)
