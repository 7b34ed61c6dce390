"""KL divergence registry: `register_kl(TypeP, TypeQ)` adds a closed form, `kl_divergence(p, q)` finds the
most specific registered pair (by the classes' method resolution order) or raises NotImplementedError."""
import math
import warnings
from functools import total_ordering

import ferrograd as _fg

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .continuous_bernoulli import ContinuousBernoulli
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _batch_lowrank_logdet,
                                          _batch_lowrank_mahalanobis)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _F, _sum_rightmost, euler_constant

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}  # (type_p, type_q) -> function
_KL_MEMOIZE = {}  # (type_p, type_q) -> function, after dispatch


def register_kl(type_p, type_q):
    """Decorator registering `fn(p, q)` as KL(p || q) for p an instance of type_p, q of type_q."""
    if not isinstance(type_p, type):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun

    return decorator


@total_ordering
class _Match:
    """A registered (type_p, type_q) pair, ordered so that the more specific pair is smaller."""

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl"
                      f"({left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def kl_divergence(p, q):
    """KL(p || q) = E_p[log p(x) - log q(x)], over the batch shape."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and "
                                  f"q type {q.__class__.__name__}")
    return fun(p, q)


def _inf_like(t):
    return _fg.full_like(t, math.inf)


def _set_where(mask, t, value):
    return _fg.where(mask, _fg.full_like(t, value), t)


# ------------------------------------------------------------------ same family


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (_F().softplus(-q.logits) - _F().softplus(-p.logits))
    t1 = _set_where(q.probs == 0, t1, math.inf)
    t1 = _set_where(p.probs == 0, t1, 0.0)
    t2 = (1 - p.probs) * (_F().softplus(q.logits) - _F().softplus(p.logits))
    t2 = _set_where(q.probs == 1, t2, math.inf)
    t2 = _set_where(p.probs == 1, t2, 0.0)
    return t1 + t2


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * _fg.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * _fg.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * _fg.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (_F().softplus(-q.logits) - _F().softplus(-p.logits))
                          + (1 - p.probs) * (_F().softplus(q.logits) - _F().softplus(p.logits)))
    return _set_where(p.total_count > q.total_count, kl, math.inf)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _set_where((q.probs == 0).expand_as(t), t, math.inf)
    t = _set_where((p.probs == 0).expand_as(t), t, 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log() - (4 * p.scale * q.scale).log())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * _fg.log(p.rate / q.rate)
    t2 = _fg.lgamma(q.concentration) - _fg.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * _fg.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - _fg.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return _set_where(p.scale < q.scale, result, math.inf)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = _fg.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * _fg.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    # 1/2 [log det Sq - log det Sp + tr(Sq^-1 Sp) + (mq - mp)^T Sq^-1 (mq - mp) - n]
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot "
                         "be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    batch = _fg.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    A = _fg.linalg.solve_triangular(Lq.expand(tuple(batch) + (n, n)), Lp.expand(tuple(batch) + (n, n)),
                                    upper=False)
    term2 = A.pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (_fg.log(p.rate) - _fg.log(q.rate)) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra_event_dim = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra_event_dim)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _set_where((q.low > p.low) | (q.high < p.high), result, math.inf)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)


# ------------------------------------------------------------------ across families
# E_p[-log q] for a Normal q needs only p's mean and variance.


def _normal_cross_entropy(mean, variance, q):
    return q.scale.log() + 0.5 * math.log(2 * math.pi) + (variance + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


@register_kl(Exponential, Normal)
@register_kl(Gamma, Normal)
@register_kl(Laplace, Normal)
@register_kl(Gumbel, Normal)
@register_kl(Uniform, Normal)
def _kl_to_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(p.mean, p.variance, q)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    # E_p[log x] = -euler - log(rate)
    e_log_x = -euler_constant - p.rate.log()
    cross = (-_fg.xlogy(q.concentration, q.rate) - (q.concentration - 1) * e_log_x + q.rate / p.rate
             + _fg.lgamma(q.concentration))
    return -p.entropy() + cross


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return _set_where(p.low < 0, result, math.inf)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    # E_p[log x] over [low, high]: (h log h - h - l log l + l) / (h - l)
    e_log_x = (_fg.xlogy(p.high, p.high) - p.high - _fg.xlogy(p.low, p.low) + p.low) / (p.high - p.low)
    cross = (-_fg.xlogy(q.concentration, q.rate) + _fg.lgamma(q.concentration)
             - (q.concentration - 1) * e_log_x + q.rate * (p.high + p.low) / 2)
    return _set_where(p.low < 0, -p.entropy() + cross, math.inf)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    e_abs = (p.scale * math.sqrt(2 / math.pi) * _fg.exp(-d.pow(2) / (2 * p.scale.pow(2)))
             + d * _fg.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + _fg.log(2 * q.scale) + e_abs / q.scale


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    z_mean = (p.loc - q.loc) / q.scale
    e_exp = _fg.exp(-z_mean + p.scale.pow(2) / (2 * q.scale.pow(2)))
    return -p.entropy() + q.scale.log() + z_mean + e_exp


# A density that is positive where q's support is not gives infinite divergence.
def _infinite(p, q):
    return _inf_like(p.mean if not isinstance(p, (Laplace, Gumbel, Normal)) else p.loc)


for _p in (Normal, Laplace, Gumbel):
    for _q in (Beta, Exponential, Gamma, Uniform):
        register_kl(_p, _q)(_infinite)
for _p in (Exponential, Gamma):
    for _q in (Beta, Uniform):
        register_kl(_p, _q)(_infinite)
del _p, _q


# ------------------------------------------------------------------ exponential families


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """Two members of one exponential family: the Bregman divergence of the log-normaliser F,
    KL = F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with _fg.enable_grad():
        p_norm = p._log_normalizer(*p_params)
        grads = _fg.autograd.grad(p_norm.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - p_norm
    for tp, tq, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((tq - tp) * g, len(q.event_shape))
    return result


# ------------------------------------------------------------------ continuous Bernoulli


def _cb_cross_terms(mean_x, q):
    """-E_p[log q(x)] for q continuous Bernoulli, given E_p[x]."""
    return -mean_x * q.logits - _fg.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + _fg.log1p(-p.probs)
            - q._cont_bern_log_norm() - _fg.log1p(-q.probs))


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() + _cb_cross_terms(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = -p.entropy() + _cb_cross_terms(p.mean, q)
    # (torch marks as infinite every uniform that reaches either end of [0, 1])
    outside = (p.high >= q.support.upper_bound) | (p.low <= q.support.lower_bound)
    return _set_where(outside, result, math.inf)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - _fg.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    log_q_const = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + _fg.log(q.scale)
    quad = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + log_q_const + quad


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    # (torch's test: infinite unless the uniform covers [0, 1] strictly on both sides)
    outside = (q.low >= p.support.lower_bound) | (q.high <= p.support.upper_bound)
    return _set_where(outside, result, math.inf)


@register_kl(ContinuousBernoulli, Pareto)
def _kl_cb_pareto(p, q):
    return _inf_like(p.probs)


for _p in (Exponential, Gamma, Gumbel, Laplace, Normal, Pareto):
    register_kl(_p, ContinuousBernoulli)(_infinite)
del _p


# ------------------------------------------------------------------ more cross-family closed forms
# (each -H(p) + E_p[-log q(x)], with E_p written out; infinite where p puts mass outside q's support)


def _x_log_x(t):
    return t * t.log()


def _trace_xxt(x):
    """trace(X X^T) over the last two dimensions."""
    return x.pow(2).reshape(tuple(x.shape[:-2]) + (-1,)).sum(-1)


def _beta_mean(p):
    return p.concentration1 / (p.concentration1 + p.concentration0)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * _beta_mean(p)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    e_log_x = p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()
    log_norm_q = q.concentration.lgamma() - q.concentration * q.rate.log()
    return -p.entropy() + log_norm_q - (q.concentration - 1) * e_log_x + q.rate * _beta_mean(p)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    mean = _beta_mean(p)
    second_moment = mean * (1 - mean) / (p.concentration1 + p.concentration0 + 1) + mean.pow(2)
    var_q = q.scale.pow(2)
    quad = 0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)
    return -p.entropy() + 0.5 * (2 * math.pi * var_q).log() + quad / var_q


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _set_where((q.low > 0) | (q.high < 1), result, math.inf)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    rs = p.rate * q.scale
    ls = q.loc / q.scale
    return rs.log() - 1 - ls + _fg.exp(ls) * rs / (rs + 1) + rs.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    c = p.concentration
    bs = p.rate * q.scale
    ls = q.loc / q.scale
    neg_entropy_part = (c - 1) * c.digamma() - c.lgamma() - c
    return neg_entropy_part + bs.log() + c / bs + _fg.exp(ls) * (1 + bs.reciprocal()).pow(-c) - ls


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    sr = p.scale * q.rate
    result = (p.alpha / sr).log() - p.alpha.reciprocal() + p.alpha * sr / (p.alpha - 1) - 1
    return _set_where(p.alpha <= 1, result, math.inf)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    e_log_x = p.scale.log() + p.alpha.reciprocal()
    result = (p.alpha.log() - e_log_x + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * e_log_x + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    return _set_where(p.alpha <= 1, result, math.inf)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    two_var = 2 * q.scale.pow(2)
    shifted = p.scale / (p.alpha - 1)
    variance = p.alpha * shifted.pow(2) / (p.alpha - 2)
    bias2 = (p.alpha * shifted - q.loc).pow(2)
    result = ((math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log() - p.alpha.reciprocal()
              + (variance + bias2) / two_var - 1)
    return _set_where(p.alpha <= 2, result, math.inf)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    e_log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    e_log_1mx = (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    log_beta_fn = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    result = (q.concentration0 - 1) * e_log_1mx + log_beta_fn - width.log() - (q.concentration1 - 1) * e_log_x
    return _set_where((p.high > 1) | (p.low < 0), result, math.inf)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    ratio = q.scale / (p.high - p.low)
    zh = (p.high - q.loc) / q.scale
    zl = (p.low - q.loc) / q.scale
    return ratio.log() + 0.5 * (zh + zl) - ratio * (_fg.exp(-zh) - _fg.exp(-zl))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    e_log_x = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    result = e_log_x * (q.alpha + 1) - (q.alpha * q.scale.pow(q.alpha) * width).log()
    return _set_where(p.low < q.scale, result, math.inf)


for _p, _q in ((Beta, Pareto), (Exponential, Pareto), (Gamma, Pareto), (Gumbel, Pareto), (Laplace, Pareto),
               (Normal, Pareto), (Pareto, Beta), (Pareto, Uniform), (Poisson, Bernoulli), (Poisson, Binomial)):
    register_kl(_p, _q)(_infinite)
del _p, _q


# ------------------------------------------------------------------ low-rank multivariate normals


def _check_same_event(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")


def _lowrank_q_terms(p, q):
    """log|Sigma_q| and the Mahalanobis term of q's mean difference, for q low-rank; and A = C^-1 W_q^T D_q^-1
    (C q's capacitance factor), with which Sigma_q^-1 = D_q^-1 - A^T A."""
    Wq, Dq, Cq = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
    logdet = _batch_lowrank_logdet(Wq, Dq, Cq)
    maha = _batch_lowrank_mahalanobis(Wq, Dq, q.loc - p.loc, Cq)
    A = _fg.linalg.solve_triangular(Cq, Wq.mT / Dq.unsqueeze(-2), upper=False)
    return logdet, maha, A


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    _check_same_event(p, q, "Low Rank Multivariate Normals")
    logdet_q, maha, A = _lowrank_q_terms(p, q)
    Wp, Dp = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    logdet_p = _batch_lowrank_logdet(Wp, Dp, p._capacitance_tril)
    Dq = q._unbroadcasted_cov_diag
    # trace(Sigma_q^-1 Sigma_p) with Sigma_p = W_p W_p^T + D_p
    trace = ((Dp / Dq).sum(-1) + _trace_xxt(Wp * Dq.rsqrt().unsqueeze(-1))
             - _trace_xxt(A * Dp.sqrt().unsqueeze(-2)) - _trace_xxt(A @ Wp))
    return 0.5 * (logdet_q - logdet_p + trace + maha - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    _check_same_event(p, q, "(Low Rank) Multivariate Normals")
    logdet_q, maha, A = _lowrank_q_terms(p, q)
    Lp = p._unbroadcasted_scale_tril
    logdet_p = 2 * Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    trace = _trace_xxt(Lp * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)) - _trace_xxt(A @ Lp)
    return 0.5 * (logdet_q - logdet_p + trace + maha - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    _check_same_event(p, q, "(Low Rank) Multivariate Normals")
    Lq = q._unbroadcasted_scale_tril
    Wp, Dp = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    logdet_q = 2 * Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    logdet_p = _batch_lowrank_logdet(Wp, Dp, p._capacitance_tril)
    maha = _batch_mahalanobis(Lq, q.loc - p.loc)
    n = p.event_shape[0]
    batch = _fg.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Wp.shape[:-2]))
    Lq = Lq.expand(tuple(batch) + (n, n))
    trace = (_trace_xxt(_fg.linalg.solve_triangular(Lq, Wp.expand(tuple(batch) + tuple(Wp.shape[-2:])), upper=False))
             + _trace_xxt(_fg.linalg.solve_triangular(Lq, _fg.diag_embed(Dp.sqrt()).expand(tuple(batch) + (n, n)),
                                                      upper=False)))
    return 0.5 * (logdet_q - logdet_p + trace + maha - n)
