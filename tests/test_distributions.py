"""Parity with torch.distributions of ferrograd.distributions (python/ferrograd/distributions/): log_prob,
entropy, cdf/icdf, moments, transforms and closed-form KL divergences, values and gradients w.r.t. the
parameters (float64, through parity.check_op); shapes, expand and sample shapes; validate_args errors;
sample moments (seeded, generous); reparameterised gradients, including the implicit gamma gradient
against finite differences of torch.special.gammainc; a REINFORCE step and a VAE-style loss end to end."""
import math
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op

rng = np.random.default_rng(11)

P3 = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])            # rows on the simplex
BIN = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
IDX = np.array([[0, 2], [1, 1], [2, 0]])                       # category indices, shape (3, 2)
UNIT = np.array([[0.1, 0.45, 0.9], [0.3, 0.6, 0.75]])          # points of (0, 1)
SIMPLEX4 = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.4, 0.1]])
COUNTS = np.array([[1.0, 3.0, 1.0], [0.0, 2.0, 3.0]])         # 5 draws each
A3 = rng.standard_normal((3, 3))


def _tril(L, a):
    """A lower Cholesky factor from an unconstrained square matrix (differentiable in it)."""
    return L.tril(a, -1) + L.diag_embed(L.exp(L.diagonal(a, dim1=-2, dim2=-1)))


def _spd(L, a):
    return a @ a.mT + 3 * L.eye(a.shape[-1], dtype=a.dtype)


def _nograd(v):
    return In(value=np.asarray(v, dtype=np.float64), grad=False)


# (name, fn(lib, *inputs) -> tensors, inputs)
CASES = [
    ("normal", lambda L, m, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean, d.mode,
                                                  d.variance, d.stddev))(L.distributions.Normal(m, s)),
     (In((3,)), In((3,), "pos"), In((2, 3)), In(value=UNIT[0]))),
    ("normal-scalar-params", lambda L, v: L.distributions.Normal(0.5, 2.0).log_prob(v), (In((4,)),)),
    ("bernoulli-probs", lambda L, p, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.logits))(
        L.distributions.Bernoulli(probs=p)), (In(value=UNIT), _nograd(BIN))),
    ("bernoulli-logits", lambda L, lg, v: (lambda d: (d.log_prob(v), d.entropy(), d.probs, d.mode))(
        L.distributions.Bernoulli(logits=lg)), (In((2, 3)), _nograd(BIN))),
    ("categorical-probs", lambda L, p, i: (lambda d: (d.log_prob(i), d.entropy(), d.logits, d.probs))(
        L.distributions.Categorical(probs=p)), (In(value=P3 * 2.0), In(value=IDX, grad=False))),
    ("categorical-logits", lambda L, lg, i: (lambda d: (d.log_prob(i), d.entropy(), d.probs, d.mode))(
        L.distributions.Categorical(logits=lg)), (In((2, 4)), In(value=np.array([3, 0]), grad=False))),
    ("onehot-categorical", lambda L, lg, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.OneHotCategorical(logits=lg)), (In((2, 3)), _nograd(np.eye(3)[[0, 2]]))),
    ("uniform", lambda L, lo, w, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                   d.variance, d.stddev))(L.distributions.Uniform(lo, lo + w, validate_args=False)),
     (In((3,), "unit"), In((3,), "pos"), _nograd([[-0.95, 0.0, 0.5], [0.2, 2.0, 0.1]]), In(value=UNIT[1]))),
    ("exponential", lambda L, r, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                   d.variance, d.mode))(L.distributions.Exponential(r)),
     (In((3,), "pos"), In((2, 3), "pos"), In(value=UNIT))),
    ("laplace", lambda L, m, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                  d.variance, d.stddev))(L.distributions.Laplace(m, s)),
     (In((3,)), In((3,), "pos"), In((2, 3)), In(value=UNIT))),
    ("cauchy", lambda L, m, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mode))(
        L.distributions.Cauchy(m, s)), (In((3,)), In((3,), "pos"), In((2, 3)), In(value=UNIT))),
    ("gumbel", lambda L, m, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                 d.variance, d.stddev))(L.distributions.Gumbel(m, s)),
     (In((3,)), In((3,), "pos"), In((2, 3)), In(value=UNIT))),
    ("beta", lambda L, a, b, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.Beta(a, b)), (In((3,), "pos"), In((3,), "pos"), In(value=UNIT))),
    ("beta-large", lambda L, a, b, v: L.distributions.Beta(a * 5, b * 5).log_prob(v),
     (In((3,), "pos"), In((3,), "pos"), In(value=UNIT))),
    ("gamma", lambda L, c, r, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.Gamma(c, r)), (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("chi2", lambda L, df, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance))(L.distributions.Chi2(df)),
     (In((3,), "pos"), In((2, 3), "pos"))),
    ("dirichlet", lambda L, c, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance))(
        L.distributions.Dirichlet(c)), (In((2, 4), "pos"), In(value=SIMPLEX4))),
    ("dirichlet-mode", lambda L, c: L.distributions.Dirichlet(c + 1).mode, (In((2, 4), "pos"),)),
    ("lognormal", lambda L, m, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                    d.variance, d.mode))(L.distributions.LogNormal(m, s)),
     (In((3,)), In((3,), "pos"), In((2, 3), "pos"), In(value=UNIT))),
    ("poisson", lambda L, r, k: (lambda d: (d.log_prob(k), d.mean, d.variance, d.mode))(
        L.distributions.Poisson(r * 3)), (In((3,), "pos"), _nograd([[0.0, 2.0, 5.0], [1.0, 3.0, 0.0]]))),
    ("binomial-probs", lambda L, p, k: (lambda d: (d.log_prob(k), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.Binomial(6, probs=p)), (In(value=UNIT), _nograd([[0.0, 2.0, 6.0], [1.0, 3.0, 5.0]]))),
    ("binomial-logits-counts", lambda L, lg, k: L.distributions.Binomial(L.tensor([[4.0], [7.0]], dtype=lg.dtype),
                                                                         logits=lg).log_prob(k),
     (In((2, 3)), _nograd([[0.0, 2.0, 4.0], [1.0, 3.0, 7.0]]))),
    ("multinomial", lambda L, p, v: (lambda d: (d.log_prob(v), d.mean, d.variance, d.entropy()))(
        L.distributions.Multinomial(5, probs=p)), (In(value=P3), _nograd(COUNTS))),
    ("multinomial-logits", lambda L, lg, v: L.distributions.Multinomial(5, logits=lg).log_prob(v),
     (In((2, 3)), _nograd(COUNTS))),
    ("studentT", lambda L, df, m, s, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.StudentT(df * 2, m, s)), (In((3,), "pos"), In((3,)), In((3,), "pos"), In((2, 3)))),
    ("mvn-scale_tril", lambda L, m, a, v: (lambda d: (d.log_prob(v), d.entropy(), d.covariance_matrix,
                                                      d.precision_matrix, d.variance, d.mean))(
        L.distributions.MultivariateNormal(m, scale_tril=_tril(L, a))), (In((2, 3)), In(value=A3), In((4, 1, 3)))),
    ("mvn-covariance", lambda L, m, a, v: (lambda d: (d.log_prob(v), d.entropy(), d.scale_tril))(
        L.distributions.MultivariateNormal(m, covariance_matrix=_spd(L, a))), (In((3,)), In((2, 3, 3)), In((3,)))),
    ("mvn-precision", lambda L, m, a, v: (lambda d: (d.log_prob(v), d.entropy(), d.scale_tril, d.covariance_matrix))(
        L.distributions.MultivariateNormal(m, precision_matrix=_spd(L, a))), (In((3,)), In((3, 3)), In((2, 3)))),
    ("lowrank-mvn", lambda L, m, w, d, v: (lambda dd: (dd.log_prob(v), dd.entropy(), dd.variance, dd.scale_tril,
                                                       dd.covariance_matrix, dd.precision_matrix))(
        L.distributions.LowRankMultivariateNormal(m, w, d)), (In((2, 3)), In((3, 2)), In((2, 3), "pos"), In((4, 1, 3)))),
    ("independent", lambda L, m, s, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance))(
        L.distributions.Independent(L.distributions.Normal(m, s), 1)), (In((2, 3)), In((2, 3), "pos"), In((4, 2, 3)))),
    ("mixture", lambda L, lg, m, s, v: (lambda d: (d.log_prob(v), d.mean, d.variance, d.cdf(v)))(
        L.distributions.MixtureSameFamily(L.distributions.Categorical(logits=lg), L.distributions.Normal(m, s))),
     (In((2, 3)), In((2, 3)), In((2, 3), "pos"), In((4, 2)))),
    ("mixture-mvn", lambda L, lg, m, v: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(logits=lg),
        L.distributions.Independent(L.distributions.Normal(m, L.ones_like(m)), 1)).log_prob(v),
     (In((3,)), In((3, 2)), In((5, 2)))),
    ("transformed-affine-exp", lambda L, m, s, loc, sc, v, u: (lambda d: (d.log_prob(v), d.cdf(v), d.icdf(u)))(
        L.distributions.TransformedDistribution(L.distributions.Normal(m, s), [
            L.distributions.AffineTransform(loc, sc), L.distributions.ExpTransform()])),
     (In((3,)), In((3,), "pos"), In((3,)), In((3,), "pos"), In((2, 3), "pos"), In(value=UNIT))),
    ("transformed-decreasing", lambda L, m, v: L.distributions.TransformedDistribution(
        L.distributions.Normal(m, 1.0), L.distributions.AffineTransform(1.0, -2.0)).cdf(v), (In((3,)), In((3,)))),
    ("transformed-stickbreaking", lambda L, m, v: L.distributions.TransformedDistribution(
        L.distributions.Normal(m, L.ones_like(m)), L.distributions.StickBreakingTransform()).log_prob(v),
     (In((2, 3)), In(value=SIMPLEX4))),
    ("halfnormal", lambda L, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u), d.mean,
                                                  d.variance))(L.distributions.HalfNormal(s)),
     (In((3,), "pos"), In((2, 3), "pos"), In(value=UNIT))),
    ("halfcauchy", lambda L, s, v, u: (lambda d: (d.log_prob(v), d.entropy(), d.cdf(v), d.icdf(u)))(
        L.distributions.HalfCauchy(s)), (In((3,), "pos"), In((2, 3), "pos"), In(value=UNIT))),
    ("geometric", lambda L, p, k: (lambda d: (d.log_prob(k), d.entropy(), d.mean, d.variance))(
        L.distributions.Geometric(probs=p)), (In(value=UNIT), _nograd([[0.0, 2.0, 5.0], [1.0, 3.0, 0.0]]))),
    ("pareto", lambda L, s, a, v: (lambda d: (d.log_prob(v + s), d.entropy(), d.mean, d.variance, d.cdf(v + s)))(
        L.distributions.Pareto(s, a * 2 + 2)), (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("weibull", lambda L, s, c, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.Weibull(s, c * 2)), (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("relaxed-bernoulli", lambda L, t, p, v: L.distributions.RelaxedBernoulli(t, probs=p).log_prob(v),
     (In((), "pos"), In(value=UNIT), In(value=UNIT[::-1].copy()))),
    ("logit-relaxed-bernoulli", lambda L, t, lg, v: L.distributions.relaxed_bernoulli.LogitRelaxedBernoulli(t, logits=lg).log_prob(v),
     (In((), "pos"), In((2, 3)), In((2, 3)))),
    ("exp-relaxed-categorical", lambda L, t, p, v: L.distributions.relaxed_categorical.ExpRelaxedCategorical(t, probs=p).log_prob(v),
     (In((), "pos"), In(value=SIMPLEX4), In(value=np.log(SIMPLEX4[::-1].copy())))),
    ("weibull-cdf", lambda L, s, c, v: (lambda d: (d.cdf(v), d.icdf(d.cdf(v))))(L.distributions.Weibull(s, c)),
     (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("negative-binomial", lambda L, n, p, k: (lambda d: (d.log_prob(k), d.mean, d.variance, d.mode))(
        L.distributions.NegativeBinomial(n * 3, probs=p)), (In((3,), "pos"), In(value=UNIT), _nograd([[0.0, 2.0, 5.0], [1.0, 3.0, 0.0]]))),
    ("negative-binomial-logits", lambda L, lg, k: L.distributions.NegativeBinomial(L.tensor([0.0, 2.0, 5.0], dtype=lg.dtype),
                                                                                    logits=lg).log_prob(k),
     (In((2, 3)), _nograd([[0.0, 2.0, 5.0], [1.0, 3.0, 0.0]]))),
    ("inverse-gamma", lambda L, c, r, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.InverseGamma(c * 2, r)), (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("fishersnedecor", lambda L, a, b, v: (lambda d: (d.log_prob(v), d.mean, d.variance, d.mode))(
        L.distributions.FisherSnedecor(a * 3, b + 4)), (In((3,), "pos"), In((3,), "pos"), In((2, 3), "pos"))),
    ("kumaraswamy", lambda L, a, b, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean, d.variance, d.mode))(
        L.distributions.Kumaraswamy(a + 1, b + 1)), (In((3,), "pos"), In((3,), "pos"), In(value=UNIT))),
    ("logistic-normal", lambda L, m, s, v: L.distributions.LogisticNormal(m, s).log_prob(v),
     (In((2, 3)), In((2, 3), "pos"), In(value=SIMPLEX4))),
    ("expanded", lambda L, m, s, v: (lambda d: (d.log_prob(v), d.entropy(), d.mean))(
        L.distributions.Normal(m, s).expand((4, 3))), (In((1, 3)), In((3,), "pos"), In((4, 3)))),
    ("expanded-mvn", lambda L, m, a, v: L.distributions.MultivariateNormal(m, scale_tril=_tril(L, a)).expand((2, 3)).log_prob(v),
     (In((2,)), In((2, 2)), In((2, 3, 2)))),
    ("expanded-transformed", lambda L, m, v: L.distributions.LogNormal(m, 1.0).expand((2, 3)).log_prob(v),
     (In((3,)), In((2, 3), "pos"))),
    ("relaxed-onehot", lambda L, t, lg, v: L.distributions.RelaxedOneHotCategorical(t, logits=lg).log_prob(v),
     (In((), "pos"), In((2, 4)), In(value=SIMPLEX4))),
]


@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_parity(name, fn, inputs):
    check_op(fn, *inputs, rtol=1e-9, atol=1e-10, double=False)


def test_parity_double_backward():
    check_op(lambda L, m, s, v: L.distributions.Normal(m, s).log_prob(v), In((3,)), In((3,), "pos"), In((3,)))
    check_op(lambda L, c, v: L.distributions.Gamma(c, 1.5).log_prob(v), In((3,), "pos"), In((3,), "pos"))


# ------------------------------------------------------------------ transforms


def _tcase(make, domain="normal", shape=(2, 3)):
    """forward, inverse of the forward and log |det J| of a transform built by make(lib, param)."""
    def fn(L, p, x):
        t = make(L, p)
        y = t(x)
        return y, t.inv(y), t.log_abs_det_jacobian(x, y)
    return fn, (In((3,), "pos"), In(shape, domain))


TRANSFORMS = [
    ("exp", lambda L, p: L.distributions.ExpTransform()),
    ("affine", lambda L, p: L.distributions.AffineTransform(p, -p)),
    ("affine-number", lambda L, p: L.distributions.AffineTransform(0.5, 3.0)),
    ("affine-event", lambda L, p: L.distributions.AffineTransform(p, p, event_dim=1)),
    ("sigmoid", lambda L, p: L.distributions.SigmoidTransform()),
    ("tanh", lambda L, p: L.distributions.TanhTransform()),
    ("softplus", lambda L, p: L.distributions.SoftplusTransform()),
    ("power", lambda L, p: L.distributions.PowerTransform(p), "pos"),
    ("compose", lambda L, p: L.distributions.ComposeTransform([L.distributions.AffineTransform(p, 2.0),
                                                               L.distributions.ExpTransform()])),
    ("stickbreaking", lambda L, p: L.distributions.StickBreakingTransform()),
    ("inverse-exp", lambda L, p: L.distributions.ExpTransform().inv, "pos"),
]


@pytest.mark.parametrize("case", TRANSFORMS, ids=[c[0] for c in TRANSFORMS])
def test_transform_parity(case):
    fn, inputs = _tcase(case[1], *case[2:])
    check_op(fn, *inputs, rtol=1e-9, atol=1e-10, double=False)


def test_transform_non_bijective_and_matrix():
    check_op(lambda L, x: (L.distributions.SoftmaxTransform()(x), L.distributions.AbsTransform()(x),
                           L.distributions.AbsTransform().inv(x.abs())), In((2, 4)), double=False)
    check_op(lambda L, x: (lambda t: (t(x), t.inv(t(x))))(L.distributions.transforms.LowerCholeskyTransform()),
             In((2, 3, 3)), double=False)
    check_op(lambda L, x: (lambda t: (t(x), t.inv(t(x))))(L.distributions.transforms.PositiveDefiniteTransform()),
             In((3, 3)), double=False, rtol=1e-8)


def test_transform_properties():
    for L in (fg, torch):
        D = L.distributions
        t = D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, -2.0)])
        assert t.bijective and t.sign == -1
        assert t.inv.inv is t
        assert D.ExpTransform() == D.ExpTransform() and D.ExpTransform() != D.SigmoidTransform()
        assert D.StickBreakingTransform().forward_shape((2, 3)) == (2, 4)
        assert D.StickBreakingTransform().inverse_shape((2, 4)) == (2, 3)
        cached = D.ExpTransform(cache_size=1)
        x = L.randn(3)
        assert cached.inv(cached(x)) is x
        with pytest.raises(ValueError):
            D.ExpTransform(cache_size=2)
        assert repr(D.ExpTransform()) == "ExpTransform()"


def test_constraint_registry():
    x = np.array([[-1.5, 0.3, 2.0], [0.1, -0.4, 0.7]])
    for c in ("real", "positive", "nonnegative", "unit_interval", "simplex", "real_vector"):
        for reg in ("biject_to", "transform_to"):
            tc = getattr(torch.distributions, reg)(getattr(torch.distributions.constraints, c))
            fc = getattr(fg.distributions, reg)(getattr(fg.distributions.constraints, c))
            assert type(fc).__name__ == type(tc).__name__, (c, reg)
            np.testing.assert_allclose(fc(fg.tensor(x)).numpy(), tc(torch.tensor(x)).numpy(), rtol=1e-12)
    for make in (lambda C: C.interval(-1.0, 3.0), lambda C: C.greater_than(2.0), lambda C: C.less_than(-1.0)):
        t = torch.distributions.biject_to(make(torch.distributions.constraints))
        f = fg.distributions.biject_to(make(fg.distributions.constraints))
        np.testing.assert_allclose(f(fg.tensor(x)).numpy(), t(torch.tensor(x)).numpy(), rtol=1e-12)
        y = f(fg.tensor(x))
        np.testing.assert_allclose(f.log_abs_det_jacobian(fg.tensor(x), y).numpy(),
                                   t.log_abs_det_jacobian(torch.tensor(x), t(torch.tensor(x))).numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError):
        fg.distributions.biject_to(fg.distributions.constraints.positive_definite)
    with pytest.raises(NotImplementedError):
        fg.distributions.biject_to(fg.distributions.constraints.nonnegative_integer)


def test_constraints_check():
    C, TC = fg.distributions.constraints, torch.distributions.constraints
    v = np.array([[0.2, 0.8], [-0.1, 1.1], [0.5, 0.5]])
    for name in ("real", "positive", "nonnegative", "unit_interval", "simplex", "boolean", "real_vector",
                 "nonnegative_integer", "positive_integer"):
        np.testing.assert_array_equal(getattr(C, name).check(fg.tensor(v)).numpy(),
                                      getattr(TC, name).check(torch.tensor(v)).numpy(), err_msg=name)
        assert repr(getattr(C, name)) == repr(getattr(TC, name))
    m = np.array([[[2.0, 0.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [0.0, -1.0]]])
    for name in ("lower_triangular", "lower_cholesky", "positive_definite", "symmetric", "square"):
        np.testing.assert_array_equal(getattr(C, name).check(fg.tensor(m)).numpy(),
                                      getattr(TC, name).check(torch.tensor(m)).numpy(), err_msg=name)
    assert C.interval(0, 2).check(fg.tensor(1.0)).item() is True
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    assert C.independent(C.real, 1).event_dim == 1


# ------------------------------------------------------------------ KL divergences

KL_CASES = [
    ("normal", lambda D, a, b, c, d: (D.Normal(a, b), D.Normal(c, d)), ("normal", "pos", "normal", "pos")),
    ("bernoulli", lambda D, a, b: (D.Bernoulli(logits=a), D.Bernoulli(logits=b)), ("normal", "normal")),
    ("categorical", lambda D, a, b: (D.Categorical(logits=a), D.Categorical(logits=b)), ("normal", "normal")),
    ("onehot", lambda D, a, b: (D.OneHotCategorical(logits=a), D.OneHotCategorical(logits=b)), ("normal", "normal")),
    ("beta", lambda D, a, b, c, d: (D.Beta(a, b), D.Beta(c, d)), ("pos",) * 4),
    ("gamma", lambda D, a, b, c, d: (D.Gamma(a, b), D.Gamma(c, d)), ("pos",) * 4),
    ("dirichlet", lambda D, a, b: (D.Dirichlet(a), D.Dirichlet(b)), ("pos", "pos")),
    ("exponential", lambda D, a, b: (D.Exponential(a), D.Exponential(b)), ("pos", "pos")),
    ("laplace", lambda D, a, b, c, d: (D.Laplace(a, b), D.Laplace(c, d)), ("normal", "pos", "normal", "pos")),
    ("uniform", lambda D, a, b, c, d: (D.Uniform(a, a + b), D.Uniform(c - 3, c + d + 3)),
     ("normal", "pos", "unit", "pos")),
    ("uniform-inf", lambda D, a, b, c, d: (D.Uniform(a - 3, a + b), D.Uniform(c, c + d)),
     ("normal", "pos", "normal", "pos")),
    ("poisson", lambda D, a, b: (D.Poisson(a), D.Poisson(b)), ("pos", "pos")),
    ("binomial", lambda D, a, b: (D.Binomial(5, logits=a), D.Binomial(5, logits=b)), ("normal", "normal")),
    ("gumbel", lambda D, a, b, c, d: (D.Gumbel(a, b), D.Gumbel(c, d)), ("normal", "pos", "normal", "pos")),
    ("cauchy", lambda D, a, b, c, d: (D.Cauchy(a, b), D.Cauchy(c, d)), ("normal", "pos", "normal", "pos")),
    ("lognormal", lambda D, a, b, c, d: (D.LogNormal(a, b), D.LogNormal(c, d)), ("normal", "pos", "normal", "pos")),
    ("independent", lambda D, a, b, c, d: (D.Independent(D.Normal(a, b), 1), D.Independent(D.Normal(c, d), 1)),
     ("normal", "pos", "normal", "pos")),
    ("halfnormal", lambda D, a, b: (D.HalfNormal(a), D.HalfNormal(b)), ("pos", "pos")),
    ("geometric", lambda D, a, b: (D.Geometric(logits=a), D.Geometric(logits=b)), ("normal", "normal")),
    ("pareto", lambda D, a, b, c, d: (D.Pareto(a, b), D.Pareto(a * c, d)), ("pos",) * 4),
    ("exponential-gamma", lambda D, a, b, c: (D.Exponential(a), D.Gamma(b, c)), ("pos",) * 3),
    ("gamma-exponential", lambda D, a, b, c: (D.Gamma(a, b), D.Exponential(c)), ("pos",) * 3),
    ("exponential-normal", lambda D, a, b, c: (D.Exponential(a), D.Normal(b, c)), ("pos", "normal", "pos")),
    ("gamma-normal", lambda D, a, b, c, d: (D.Gamma(a, b), D.Normal(c, d)), ("pos", "pos", "normal", "pos")),
    ("laplace-normal", lambda D, a, b, c, d: (D.Laplace(a, b), D.Normal(c, d)), ("normal", "pos", "normal", "pos")),
    ("gumbel-normal", lambda D, a, b, c, d: (D.Gumbel(a, b), D.Normal(c, d)), ("normal", "pos", "normal", "pos")),
    ("uniform-normal", lambda D, a, b, c, d: (D.Uniform(a, a + b), D.Normal(c, d)), ("normal", "pos", "normal", "pos")),
    ("uniform-exponential", lambda D, a, b, c: (D.Uniform(a, a + b), D.Exponential(c)), ("pos", "pos", "pos")),
    ("uniform-gamma", lambda D, a, b, c, d: (D.Uniform(a, a + b), D.Gamma(c, d)), ("pos",) * 4),
    ("normal-laplace", lambda D, a, b, c, d: (D.Normal(a, b), D.Laplace(c, d)), ("normal", "pos", "normal", "pos")),
    ("normal-gumbel", lambda D, a, b, c, d: (D.Normal(a, b), D.Gumbel(c, d)), ("normal", "pos", "normal", "pos")),
    ("normal-exponential-inf", lambda D, a, b, c: (D.Normal(a, b), D.Exponential(c)), ("normal", "pos", "pos")),
]


@pytest.mark.parametrize("name,make,domains", KL_CASES, ids=[c[0] for c in KL_CASES])
def test_kl_parity(name, make, domains):
    shape = (2, 3)
    check_op(lambda L, *ps: L.distributions.kl_divergence(*make(L.distributions, *ps)),
             *[In(shape, d) for d in domains], rtol=1e-9, atol=1e-10, double=False)


def test_kl_mvn():
    def fn(L, m1, a1, m2, a2):
        D = L.distributions
        p = D.MultivariateNormal(m1, scale_tril=_tril(L, a1))
        q = D.MultivariateNormal(m2, covariance_matrix=_spd(L, a2))
        return D.kl_divergence(p, q), D.kl_divergence(q, p)
    check_op(fn, In((2, 3)), In((3, 3)), In((3,)), In((2, 3, 3)), rtol=1e-9, atol=1e-10, double=False)


def test_kl_errors_and_registry():
    D = fg.distributions
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Poisson(fg.tensor(1.0)), D.Categorical(logits=fg.zeros(3)))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(D.Normal(fg.zeros(2, 2), 1.0), 1),
                        D.Independent(D.Normal(fg.zeros(2, 2), 1.0), 2))
    with pytest.raises(ValueError):
        D.kl_divergence(D.MultivariateNormal(fg.zeros(2), fg.eye(2)), D.MultivariateNormal(fg.zeros(3), fg.eye(3)))

    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return fg.zeros(())

    assert D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0)).item() == 0.0
    # a subclass falls back to its base class's rule
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 2.0)
    tp, tq = torch.distributions.Normal(0.0, 1.0), torch.distributions.Normal(1.0, 2.0)
    assert abs(D.kl_divergence(p, q).item() - torch.distributions.kl_divergence(tp, tq).item()) < 1e-6
    with pytest.raises(TypeError):
        D.register_kl(5, D.Normal)


# ------------------------------------------------------------------ shapes, expand, samples


def _both(make):
    return make(fg, fg.distributions), make(torch, torch.distributions)


SHAPE_CASES = [
    ("normal", lambda L, D: D.Normal(L.zeros(2, 3), L.ones(3))),
    ("normal-scalar", lambda L, D: D.Normal(0.0, 1.0)),
    ("bernoulli", lambda L, D: D.Bernoulli(probs=L.full((4,), 0.3))),
    ("categorical", lambda L, D: D.Categorical(logits=L.zeros(2, 5))),
    ("onehot", lambda L, D: D.OneHotCategorical(probs=L.ones(3, 4))),
    ("uniform", lambda L, D: D.Uniform(L.zeros(3), 2.0)),
    ("exponential", lambda L, D: D.Exponential(L.ones(2, 1))),
    ("laplace", lambda L, D: D.Laplace(0.0, L.ones(3))),
    ("beta", lambda L, D: D.Beta(L.ones(3) * 2, 3.0)),
    ("gamma", lambda L, D: D.Gamma(L.ones(3) * 2, 3.0)),
    ("dirichlet", lambda L, D: D.Dirichlet(L.ones(2, 4))),
    ("lognormal", lambda L, D: D.LogNormal(L.zeros(3), 1.0)),
    ("poisson", lambda L, D: D.Poisson(L.ones(3) * 2)),
    ("binomial", lambda L, D: D.Binomial(5, probs=L.full((2, 3), 0.4))),
    ("multinomial", lambda L, D: D.Multinomial(7, probs=L.ones(2, 3))),
    ("studentT", lambda L, D: D.StudentT(L.ones(3) * 3)),
    ("cauchy", lambda L, D: D.Cauchy(L.zeros(3), 1.0)),
    ("gumbel", lambda L, D: D.Gumbel(L.zeros(3), 2.0)),
    ("mvn", lambda L, D: D.MultivariateNormal(L.zeros(4, 3), L.eye(3))),
    ("lowrank-mvn", lambda L, D: D.LowRankMultivariateNormal(L.zeros(4, 3), L.ones(3, 2), L.ones(3))),
    ("independent", lambda L, D: D.Independent(D.Normal(L.zeros(2, 3, 4), 1.0), 2)),
    ("mixture", lambda L, D: D.MixtureSameFamily(D.Categorical(logits=L.zeros(2, 3)),
                                                  D.Normal(L.zeros(2, 3), L.ones(2, 3)))),
    ("relaxed-bernoulli", lambda L, D: D.RelaxedBernoulli(L.tensor(0.5), probs=L.full((3,), 0.3))),
    ("relaxed-onehot", lambda L, D: D.RelaxedOneHotCategorical(L.tensor(0.5), logits=L.zeros(2, 4))),
    ("chi2", lambda L, D: D.Chi2(L.ones(3) * 2)),
    ("halfnormal", lambda L, D: D.HalfNormal(L.ones(3))),
    ("halfcauchy", lambda L, D: D.HalfCauchy(L.ones(3))),
    ("fishersnedecor", lambda L, D: D.FisherSnedecor(L.ones(3) * 3, 5.0)),
    ("kumaraswamy", lambda L, D: D.Kumaraswamy(L.ones(3) * 2, 3.0)),
    ("logistic-normal", lambda L, D: D.LogisticNormal(L.zeros(2, 3), 1.0)),
    ("negative-binomial", lambda L, D: D.NegativeBinomial(L.ones(3) * 4, probs=L.full((3,), 0.3))),
    ("inverse-gamma", lambda L, D: D.InverseGamma(L.ones(3) * 3, 2.0)),
    ("geometric", lambda L, D: D.Geometric(probs=L.full((3,), 0.3))),
    ("pareto", lambda L, D: D.Pareto(L.ones(3), 2.0)),
    ("weibull", lambda L, D: D.Weibull(L.ones(3), 2.0)),
    ("transformed", lambda L, D: D.TransformedDistribution(D.Normal(L.zeros(2, 3), 1.0), D.StickBreakingTransform())),
]


@pytest.mark.parametrize("name,make", SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_shapes_expand_and_samples(name, make):
    f, t = _both(make)
    assert tuple(f.batch_shape) == tuple(t.batch_shape)
    assert tuple(f.event_shape) == tuple(t.event_shape)
    assert f.has_rsample == t.has_rsample
    assert f.has_enumerate_support == t.has_enumerate_support
    for shape in ((), (5,), (2, 3)):
        fs, ts = f.sample(shape), t.sample(shape)
        assert tuple(fs.shape) == tuple(ts.shape), shape
        assert str(fs.dtype).rsplit(".")[-1] == str(ts.dtype).rsplit(".")[-1]
        assert not fs.requires_grad
        if f.has_rsample:
            assert tuple(f.rsample(shape).shape) == tuple(ts.shape)
        lp = f.log_prob(fs)
        assert tuple(lp.shape) == tuple(t.log_prob(ts).shape)
        assert bool(fg.isfinite(lp).all()), name
    new_batch = (4,) + tuple(t.batch_shape)
    fe, te = f.expand(new_batch), t.expand(new_batch)
    assert type(fe) is type(f)
    assert tuple(fe.batch_shape) == tuple(te.batch_shape) and tuple(fe.event_shape) == tuple(te.event_shape)
    assert tuple(fe.sample((2,)).shape) == tuple(te.sample((2,)).shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tuple(f.sample_n(3).shape) == tuple(t.sample_n(3).shape)


def test_enumerate_support():
    for make in (lambda L, D: D.Bernoulli(probs=L.full((2,), 0.3)), lambda L, D: D.Categorical(logits=L.zeros(2, 3)),
                 lambda L, D: D.OneHotCategorical(logits=L.zeros(2, 3)), lambda L, D: D.Binomial(3, probs=L.ones(2) * .5)):
        f, t = _both(make)
        for expand in (True, False):
            np.testing.assert_array_equal(f.enumerate_support(expand).numpy(), t.enumerate_support(expand).numpy())


def _repr(d):
    return repr(d).replace(fg.__name__ + ".", "torch.")


def test_repr_and_support():
    assert _repr(fg.distributions.Normal(fg.zeros(2), fg.ones(2))) == repr(torch.distributions.Normal(torch.zeros(2), torch.ones(2)))
    assert _repr(fg.distributions.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    f, t = _both(lambda L, D: D.Uniform(L.zeros(2), L.ones(2)))
    assert type(f.support).__name__ == type(t.support).__name__
    assert repr(fg.distributions.Categorical(logits=fg.zeros(3)).support) == "IntegerInterval(lower_bound=0, upper_bound=2)"


# ------------------------------------------------------------------ validation


def _raises_like(make):
    """make(L, D) raises the same exception type in both libraries."""
    kinds = []
    for L in (torch, fg):
        try:
            make(L, L.distributions)
        except Exception as e:  # noqa: BLE001
            kinds.append(type(e).__name__.lstrip("_"))  # (torch's LinAlgError class is torch._C._LinAlgError)
        else:
            kinds.append(None)
    assert kinds[0] is not None, "torch did not raise"
    assert kinds[0] == kinds[1], kinds


@pytest.mark.parametrize("make", [
    lambda L, D: D.Normal(L.zeros(2), -L.ones(2), validate_args=True),
    lambda L, D: D.Normal(L.zeros(2), L.ones(2), validate_args=True).log_prob(L.tensor([float("nan"), 0.0])),
    lambda L, D: D.Normal(0.0, 1.0, validate_args=True).log_prob(1.0),
    lambda L, D: D.Normal(L.zeros(3), L.ones(3), validate_args=True).log_prob(L.zeros(2)),
    lambda L, D: D.Exponential(L.ones(2), validate_args=True).log_prob(-L.ones(2)),
    lambda L, D: D.Bernoulli(probs=L.tensor([0.5, 1.5]), validate_args=True),
    lambda L, D: D.Bernoulli(probs=L.tensor([0.5]), logits=L.tensor([0.0])),
    lambda L, D: D.Bernoulli(probs=L.tensor([0.5]), validate_args=True).log_prob(L.tensor([0.5])),
    lambda L, D: D.Categorical(probs=L.tensor([0.5, -0.5, 1.0]), validate_args=True),
    lambda L, D: D.Categorical(probs=L.tensor([0.5, 0.5]), validate_args=True).log_prob(L.tensor([2])),
    lambda L, D: D.Categorical(),
    lambda L, D: D.Uniform(L.ones(2), L.zeros(2), validate_args=True),
    lambda L, D: D.Uniform(L.zeros(2), L.ones(2), validate_args=True).log_prob(L.tensor([0.5, 1.5])),
    lambda L, D: D.Beta(L.ones(2), L.zeros(2), validate_args=True),
    lambda L, D: D.Dirichlet(L.ones(3), validate_args=True).log_prob(L.tensor([0.5, 0.5, 0.5])),
    lambda L, D: D.Poisson(L.ones(2), validate_args=True).log_prob(L.tensor([0.5, 1.0])),
    lambda L, D: D.MultivariateNormal(L.zeros(2), L.eye(2), scale_tril=L.eye(2)),
    lambda L, D: D.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [2.0, 1.0]]), validate_args=True),
    lambda L, D: D.MultivariateNormal(L.tensor(0.0), L.eye(2)),
    lambda L, D: D.Independent(D.Normal(L.zeros(2), 1.0), 2),
    lambda L, D: D.LowRankMultivariateNormal(L.zeros(3), L.ones(2, 1), L.ones(3)),
    lambda L, D: D.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(2)),
    lambda L, D: D.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), -L.ones(3), validate_args=True),
    lambda L, D: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(L.zeros(3), 1.0)),
    lambda L, D: D.MixtureSameFamily(D.Categorical(logits=L.zeros(2)), D.Normal(L.zeros(3), 1.0)),
    lambda L, D: D.TransformedDistribution(D.Normal(0.0, 1.0), [1]),
    lambda L, D: D.Gamma(-L.ones(2), L.ones(2), validate_args=True),
    lambda L, D: D.Distribution.set_default_validate_args(3),
    lambda L, D: D.Poisson(L.ones(2)).entropy(),
])
def test_validation_errors(make):
    _raises_like(make)


def test_set_default_validate_args():
    D = fg.distributions
    old = D.Distribution._validate_args
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(fg.zeros(1), -fg.ones(1))  # no check
        D.Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError, match="scale"):
            D.Normal(fg.zeros(1), -fg.ones(1))
        D.Normal(fg.zeros(1), -fg.ones(1), validate_args=False)  # explicit wins
    finally:
        D.Distribution.set_default_validate_args(old)


# ------------------------------------------------------------------ sample statistics (seeded, generous)

MOMENT_CASES = [
    ("normal", lambda L, D: D.Normal(L.tensor([0.5, -1.0]), L.tensor([1.0, 2.0]))),
    ("uniform", lambda L, D: D.Uniform(L.tensor([0.0, -1.0]), L.tensor([1.0, 3.0]))),
    ("exponential", lambda L, D: D.Exponential(L.tensor([0.5, 2.0]))),
    ("laplace", lambda L, D: D.Laplace(L.tensor([0.5, -1.0]), L.tensor([1.0, 0.3]))),
    ("gamma", lambda L, D: D.Gamma(L.tensor([0.3, 2.0, 40.0]), L.tensor([1.0, 0.5, 4.0]))),
    ("beta", lambda L, D: D.Beta(L.tensor([0.5, 2.0]), L.tensor([0.7, 5.0]))),
    ("dirichlet", lambda L, D: D.Dirichlet(L.tensor([0.5, 2.0, 3.0]))),
    ("lognormal", lambda L, D: D.LogNormal(L.tensor([0.0, 0.5]), L.tensor([0.3, 0.2]))),
    ("poisson", lambda L, D: D.Poisson(L.tensor([0.3, 4.0, 50.0]))),
    ("binomial", lambda L, D: D.Binomial(L.tensor([3.0, 20.0]), probs=L.tensor([0.3, 0.8]))),
    ("bernoulli", lambda L, D: D.Bernoulli(probs=L.tensor([0.2, 0.9]))),
    ("multinomial", lambda L, D: D.Multinomial(6, probs=L.tensor([0.2, 0.3, 0.5]))),
    ("onehot", lambda L, D: D.OneHotCategorical(probs=L.tensor([0.2, 0.3, 0.5]))),
    ("studentT", lambda L, D: D.StudentT(L.tensor([5.0, 8.0]), L.tensor([0.0, 1.0]), L.tensor([1.0, 2.0]))),
    ("gumbel", lambda L, D: D.Gumbel(L.tensor([0.0, 1.0]), L.tensor([1.0, 0.5]))),
    ("chi2", lambda L, D: D.Chi2(L.tensor([1.0, 6.0]))),
    ("halfnormal", lambda L, D: D.HalfNormal(L.tensor([1.0, 3.0]))),
    ("negative-binomial", lambda L, D: D.NegativeBinomial(L.tensor([4.0, 10.0]), probs=L.tensor([0.3, 0.6]))),
    ("inverse-gamma", lambda L, D: D.InverseGamma(L.tensor([5.0, 9.0]), L.tensor([2.0, 1.0]))),
    ("fishersnedecor", lambda L, D: D.FisherSnedecor(L.tensor([5.0, 10.0]), L.tensor([12.0, 20.0]))),
    ("kumaraswamy", lambda L, D: D.Kumaraswamy(L.tensor([2.0, 0.7]), L.tensor([3.0, 1.5]))),
    ("geometric", lambda L, D: D.Geometric(probs=L.tensor([0.3, 0.8]))),
    ("pareto", lambda L, D: D.Pareto(L.tensor([1.0, 2.0]), L.tensor([5.0, 9.0]))),
    ("weibull", lambda L, D: D.Weibull(L.tensor([1.0, 2.0]), L.tensor([1.5, 3.0]))),
    ("mvn", lambda L, D: D.MultivariateNormal(L.tensor([1.0, -1.0]), L.tensor([[2.0, 0.5], [0.5, 1.0]]))),
    ("lowrank-mvn", lambda L, D: D.LowRankMultivariateNormal(L.tensor([1.0, -1.0]), L.tensor([[1.0], [0.5]]),
                                                              L.tensor([0.5, 1.0]))),
    ("mixture", lambda L, D: D.MixtureSameFamily(D.Categorical(probs=L.tensor([0.3, 0.7])),
                                                  D.Normal(L.tensor([-2.0, 2.0]), L.tensor([0.5, 1.0])))),
]


@pytest.mark.parametrize("name,make", MOMENT_CASES, ids=[c[0] for c in MOMENT_CASES])
def test_sample_moments(name, make):
    fg.manual_seed(0)
    f, t = _both(make)
    n = 20000
    s = f.sample((n,)).double().numpy()
    mean, var = t.mean.double().numpy(), t.variance.double().numpy()
    se = np.sqrt(var / n)
    np.testing.assert_array_less(np.abs(s.mean(0) - mean), 6 * se + 1e-9)
    np.testing.assert_allclose(s.var(0), var, rtol=0.1, atol=1e-9)


def test_categorical_frequencies():
    fg.manual_seed(0)
    p = np.array([0.1, 0.6, 0.3])
    s = fg.distributions.Categorical(probs=fg.tensor(p)).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(s, minlength=3) / 20000, p, atol=0.015)


def test_samples_reproducible():
    for make in (lambda D: D.Gamma(fg.ones(3), 1.0), lambda D: D.Poisson(fg.ones(3)), lambda D: D.Normal(0.0, fg.ones(3))):
        fg.manual_seed(3)
        a = make(fg.distributions).sample((4,))
        fg.manual_seed(3)
        b = make(fg.distributions).sample((4,))
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ------------------------------------------------------------------ reparameterised gradients


def test_rsample_gradients_location_scale():
    fg.manual_seed(0)
    for cls in ("Normal", "Laplace", "Cauchy"):
        loc = fg.tensor([0.5, -1.0], requires_grad=True)
        scale = fg.tensor([1.0, 2.0], requires_grad=True)
        x = getattr(fg.distributions, cls)(loc, scale).rsample((50,))
        x.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), [50.0, 50.0])
        # x = loc + scale * eps: d sum(x) / d scale = sum(eps) = sum((x - loc) / scale)
        eps = ((x.detach() - loc.detach()) / scale.detach()).sum(0)
        np.testing.assert_allclose(scale.grad.numpy(), eps.numpy(), rtol=1e-5)


def test_rsample_gradient_mvn_mean():
    loc = fg.zeros(3, requires_grad=True)
    A = fg.tensor([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.2, 0.3, 1.0]], requires_grad=True)
    x = fg.distributions.MultivariateNormal(loc, scale_tril=A).rsample((10,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [10.0] * 3)
    assert A.grad is not None and bool(fg.isfinite(A.grad).all())


@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 3.0, 25.0, 900.0])
def test_gamma_implicit_gradient_vs_cdf(alpha):
    """d x / d alpha of Gamma(alpha, 1) samples = -(dP/dalpha) / (dP/dx) at the drawn x, with dP/dalpha by
    central differences of torch.special.gammainc (gammaincc in the upper half, where it is the accurate one)."""
    fg.manual_seed(0)
    a = fg.full((400,), alpha, dtype=fg.float64, requires_grad=True)
    x = fg.distributions.Gamma(a, fg.ones((), dtype=fg.float64)).rsample()
    x.sum().backward()
    got = a.grad.numpy()
    xt = torch.tensor(x.detach().numpy())
    at = torch.full_like(xt, alpha)
    h = 1e-6 * max(alpha, 1.0)
    lower = (torch.special.gammainc(at + h, xt) - torch.special.gammainc(at - h, xt)) / (2 * h)
    upper = -(torch.special.gammaincc(at + h, xt) - torch.special.gammaincc(at - h, xt)) / (2 * h)
    dP = torch.where(xt < at, lower, upper)
    pdf = torch.exp((at - 1) * xt.log() - xt - torch.lgamma(at))
    want = (-dP / pdf).numpy()
    ok = pdf.numpy() > 1e-250
    # (torch's own gradient is an approximation good to a few 1e-3: the self-check runs at that tolerance)
    np.testing.assert_allclose(got[ok], want[ok], rtol=3e-2 if AGAINST_TORCH else 2e-5, atol=1e-300)
    # and torch's own (approximate) implicit gradient
    np.testing.assert_allclose(got, torch._standard_gamma_grad(at, xt).numpy(), rtol=5e-2)


def test_gamma_cdf():
    """Gamma.cdf = P(concentration, rate x): values and d/dx, d/drate against torch (whose gammainc is good
    to about 3e-10 for concentrations near 30); d/dconcentration (torch has none) against central
    differences of torch's gammainc."""
    conc = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 300.0])[:, None] * np.ones((1, 4))
    x = conc * np.array([0.3, 0.95, 1.05, 2.0]) + 1e-3
    check_op(lambda L, c, r, v: L.distributions.Gamma(c, r).cdf(v), In(value=conc, grad=False),
             In(value=np.full((1, 4), 1.3)), In(value=x), rtol=1e-8, atol=1e-9, double=False)
    if AGAINST_TORCH:  # torch: "the derivative for 'self' is not implemented"
        return
    c = fg.tensor(conc, requires_grad=True)
    fg.distributions.Gamma(c, fg.tensor(1.3, dtype=fg.float64)).cdf(fg.tensor(x)).sum().backward()
    ct, xt = torch.tensor(conc), torch.tensor(x) * 1.3
    h = 1e-6 * ct.clamp(min=1)
    want = (torch.special.gammainc(ct + h, xt) - torch.special.gammainc(ct - h, xt)) / (2 * h)
    np.testing.assert_allclose(c.grad.numpy(), want.numpy(), rtol=1e-4, atol=1e-8)


def test_gamma_family_gradient_statistics():
    """d/dparam E[x] estimated by rsample matches the derivative of the closed-form mean."""
    fg.manual_seed(1)
    n = 20000
    c = fg.tensor([0.5, 3.0], dtype=fg.float64, requires_grad=True)
    r = fg.tensor([2.0, 0.5], dtype=fg.float64, requires_grad=True)
    fg.distributions.Gamma(c, r).rsample((n,)).mean(0).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), 1 / np.array([2.0, 0.5]), rtol=0.05)  # d(c/r)/dc
    np.testing.assert_allclose(r.grad.numpy(), -np.array([0.5, 3.0]) / np.array([2.0, 0.5]) ** 2, rtol=0.05)
    a = fg.tensor(2.0, dtype=fg.float64, requires_grad=True)
    b = fg.tensor(3.0, dtype=fg.float64, requires_grad=True)
    fg.distributions.Beta(a, b).rsample((n,)).mean().backward()
    np.testing.assert_allclose([a.grad.item(), b.grad.item()], [3.0 / 25, -2.0 / 25], rtol=0.06)
    conc = fg.tensor([1.0, 2.0, 3.0], dtype=fg.float64, requires_grad=True)
    x = fg.distributions.Dirichlet(conc).rsample((n,)).mean(0)
    x[0].backward()  # d(c0 / sum c)/dc = [(s - c0)/s^2, -c0/s^2, -c0/s^2]
    np.testing.assert_allclose(conc.grad.numpy(), [5 / 36, -1 / 36, -1 / 36], rtol=0.1, atol=0.004)
    df = fg.tensor(10.0, dtype=fg.float64, requires_grad=True)
    fg.distributions.StudentT(df).rsample((n,)).pow(2).mean().backward()  # d/ddf df/(df-2) = -2/(df-2)^2
    np.testing.assert_allclose(df.grad.item(), -2 / 64, rtol=0.15)


def test_straight_through_gradient():
    for L in (fg, torch):
        logits = L.tensor([0.1, -0.3, 0.5], requires_grad=True)
        d = L.distributions.OneHotCategoricalStraightThrough(logits=logits)
        y = d.rsample((3,))
        assert bool(((y.detach() == 0) | (y.detach() == 1)).all())
        (y * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        p = L.softmax(logits.detach(), -1)
        # gradient of sum_k w_k p_k (times 3 samples) w.r.t. the logits: 3 p (w - p.w)
        w = L.tensor([1.0, 2.0, 3.0])
        want = 3 * p * (w - (p * w).sum())
        np.testing.assert_allclose(logits.grad.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)


def test_relaxed_rsample_gradients():
    logits = fg.tensor([0.1, -0.3, 0.5], requires_grad=True)
    y = fg.distributions.RelaxedOneHotCategorical(fg.tensor(0.5), logits=logits).rsample((4,))
    np.testing.assert_allclose(y.sum(-1).detach().numpy(), np.ones(4), rtol=1e-5)
    (y[:, 0]).sum().backward()
    assert logits.grad is not None and bool(fg.isfinite(logits.grad).all())
    p = fg.tensor([0.2, 0.7], requires_grad=True)
    z = fg.distributions.RelaxedBernoulli(fg.tensor(0.3), probs=p).rsample((5,))
    assert bool(((z > 0) & (z < 1)).all())
    z.sum().backward()
    assert bool((p.grad > 0).all())  # a larger p moves every relaxed sample up


# ------------------------------------------------------------------ end to end


def _mlp(L, w1, b1, w2, b2, x):
    return L.tanh(x @ w1 + b1) @ w2 + b2


def test_reinforce_gaussian_policy_against_torch():
    """A few REINFORCE steps of a Gaussian policy (state -> mean, learned log std) on the same initial weights
    and the same action noise; the losses and the updated weights match torch's."""
    r = np.random.default_rng(5)
    init = [r.standard_normal((3, 8)) * 0.5, np.zeros(8), r.standard_normal((8, 2)) * 0.5, np.zeros(2), np.zeros(2)]
    states = r.standard_normal((4, 16, 3))
    noise = r.standard_normal((4, 16, 2))
    target = np.array([0.5, -1.0])

    def run(L):
        params = [L.tensor(p.copy(), requires_grad=True) for p in init]
        losses = []
        for step in range(4):
            s = L.tensor(states[step])
            mean = _mlp(L, *params[:4], s)
            dist = L.distributions.Normal(mean, params[4].exp())
            with L.no_grad():
                action = mean + params[4].exp() * L.tensor(noise[step])
            reward = -((action - L.tensor(target)) ** 2).sum(-1)
            advantage = reward - reward.mean()
            loss = -(dist.log_prob(action).sum(-1) * advantage).mean() - 0.01 * dist.entropy().sum(-1).mean()
            grads = L.autograd.grad(loss, params)
            with L.no_grad():  # plain SGD (torch.optim's first import alone takes seconds)
                for p, g in zip(params, grads):
                    p -= 0.05 * g
            losses.append(loss.item())
        return losses, [p.detach().numpy() for p in params]

    fl, fp = run(fg)
    tl, tp = run(torch)
    np.testing.assert_allclose(fl, tl, rtol=1e-10)
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_vae_style_loss_against_torch():
    """Encoder -> Normal posterior, rsample (with shared noise), decoder -> Bernoulli likelihood,
    KL(q || N(0, 1)) through kl_divergence; loss and every gradient match torch."""
    r = np.random.default_rng(6)
    x = (r.random((8, 6)) > 0.5).astype(np.float64)
    weights = [r.standard_normal((6, 4)) * 0.3, np.zeros(4), r.standard_normal((2, 6)) * 0.3, np.zeros(6)]
    eps = r.standard_normal((8, 2))

    def run(L):
        ws = [L.tensor(w.copy(), requires_grad=True) for w in weights]
        h = L.tensor(x) @ ws[0] + ws[1]
        mu, log_sigma = h[:, :2], h[:, 2:]
        q = L.distributions.Normal(mu, log_sigma.exp())
        z = mu + log_sigma.exp() * L.tensor(eps)  # q.rsample() with the shared noise
        prior = L.distributions.Normal(L.zeros_like(mu), L.ones_like(mu))
        logits = z @ ws[2] + ws[3]
        rec = L.distributions.Bernoulli(logits=logits).log_prob(L.tensor(x)).sum(-1)
        kl = L.distributions.kl_divergence(q, prior).sum(-1)
        indep = L.distributions.kl_divergence(L.distributions.Independent(q, 1), L.distributions.Independent(prior, 1))
        loss = (kl - rec).mean() + 0 * indep.mean()
        loss.backward()
        return loss.item(), [w.grad.numpy() for w in ws]

    fl, fgr = run(fg)
    tl, tgr = run(torch)
    assert abs(fl - tl) <= 1e-10 * abs(tl)
    for a, b in zip(fgr, tgr):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    # and rsample itself is differentiable end to end
    mu = fg.zeros(2, requires_grad=True)
    z = fg.distributions.Normal(mu, 1.0).rsample((3,))
    fg.distributions.kl_divergence(fg.distributions.Normal(z.mean(0), 1.0), fg.distributions.Normal(0.0, 1.0)).sum().backward()
    assert mu.grad is not None


def test_import_paths():
    import importlib

    mod = importlib.import_module(fg.__name__ + ".distributions")
    assert mod is fg.distributions
    assert fg.distributions.Normal is mod.Normal
    from ferrograd.distributions import constraints, kl_divergence, transforms  # noqa: F401


def test_utils():
    from torch.distributions import utils as TU

    FU = fg.distributions.utils
    m = np.arange(16.0).reshape(4, 4)
    for diag in (0, -1):
        v = FU.tril_matrix_to_vec(fg.tensor(m), diag)
        np.testing.assert_array_equal(v.numpy(), TU.tril_matrix_to_vec(torch.tensor(m), diag).numpy())
        np.testing.assert_array_equal(FU.vec_to_tril_matrix(v, diag).numpy(),
                                      TU.vec_to_tril_matrix(torch.tensor(v.numpy()), diag).numpy())
    p = np.array([[0.0, 0.3, 1.0]])
    for binary in (True, False):
        np.testing.assert_allclose(FU.probs_to_logits(fg.tensor(p), binary).numpy(),
                                   TU.probs_to_logits(torch.tensor(p), binary).numpy(), rtol=1e-12)
        np.testing.assert_allclose(FU.logits_to_probs(fg.tensor(p), binary).numpy(),
                                   TU.logits_to_probs(torch.tensor(p), binary).numpy(), rtol=1e-12)
    a, b = FU.broadcast_all(fg.zeros(2, 1, dtype=fg.float64), 3)
    assert tuple(a.shape) == tuple(b.shape) == (2, 1) and b.dtype == fg.float64
    with pytest.raises(ValueError):
        FU.broadcast_all(fg.zeros(2), "x")
    with pytest.raises(ValueError):
        TU.broadcast_all(torch.zeros(2), "x")
    assert FU.euler_constant == TU.euler_constant
