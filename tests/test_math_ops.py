"""The elementwise math functions: inverse trigonometric and hyperbolic functions, atan2, erfc,
erfinv, lgamma, digamma, polygamma, mvlgamma, i0, sgn, fix, nextafter, isposinf/isneginf/isreal,
torch's arc* aliases and the `special` namespace, each against torch: values (edges included),
first and second derivatives, in-place forms, grad_fn names, integer inputs and torch's errors.
"""
import math
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op, node_name, same

INF, NAN = math.inf, math.nan

# name, input domain, shift added to the input (acosh needs x > 1), aliases, rtol for float64
UNARY = [
    ("asin", "unit", 0.0, ("arcsin",), 1e-7),
    ("acos", "unit", 0.0, ("arccos",), 1e-7),
    ("atan", None, 0.0, ("arctan",), 1e-7),
    ("sinh", None, 0.0, (), 1e-7),
    ("cosh", None, 0.0, (), 1e-7),
    ("asinh", None, 0.0, ("arcsinh",), 1e-7),
    ("acosh", "pos", 1.0, ("arccosh",), 1e-7),
    ("atanh", "unit", 0.0, ("arctanh",), 1e-7),
    ("erfc", None, 0.0, (), 1e-7),
    ("erfinv", "unit", 0.0, (), 1e-7),
    ("lgamma", "pos", 0.0, (), 1e-7),
    ("digamma", "pos", 0.0, (), 1e-6),
    ("i0", None, 0.0, (), 1e-7),
]
SHAPES = {
    "2d": [In((2, 3))],
    "0d": [In(())],
    "empty": [In((0, 3))],
    "T": [In((3, 4), layout="T")],
    "step": [In((2, 3), layout="step")],
    "f32": [In((2, 3), dtype="float32")],
}


def _unary_cases():
    for name, dom, shift, aliases, rtol in UNARY:
        for sid, specs in SHAPES.items():
            spec = specs[0].with_domain(dom)
            yield pytest.param(name, shift, aliases, rtol, spec, id=f"{name}-{sid}")


@pytest.mark.parametrize("name,shift,aliases,rtol,spec", list(_unary_cases()))
def test_unary_against_torch(name, shift, aliases, rtol, spec):
    def fn(L, x):
        if shift:
            x = x + shift
        outs = [getattr(L, name)(x), getattr(x, name)()]
        outs += [getattr(L, a)(x) for a in aliases] + [getattr(x, a)() for a in aliases]
        return tuple(outs)

    check_op(fn, spec, rtol=rtol, atol=1e-9)


def test_negative_arguments_of_the_gamma_family():
    # between the poles, where the reflection formulas run
    x = In(value=np.array([-0.5, -1.3, -2.7, -3.5, 0.25, 3.7, 12.5, 31.0]))
    check_op(lambda L, x: (x.lgamma(), x.digamma()), x, rtol=1e-6)
    check_op(lambda L, x: (L.polygamma(1, x), L.polygamma(2, x)), x, rtol=1e-6, double=False)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("sid", ["2d", "0d", "T", "f32"])
def test_polygamma_against_torch(n, sid):
    spec = SHAPES[sid][0].with_domain("pos")
    check_op(lambda L, x: (L.polygamma(n, x), x.polygamma(n)), spec, rtol=1e-6)


@pytest.mark.parametrize("p", [1, 2, 3])
@pytest.mark.parametrize("sid", ["2d", "0d", "step", "f32"])
def test_mvlgamma_against_torch(p, sid):
    spec = SHAPES[sid][0].with_domain("pos")
    check_op(lambda L, x: (L.mvlgamma(x + p, p), (x + p).mvlgamma(p)), spec, rtol=1e-6)


BINARY_SHAPES = {
    "same": (In((2, 3)), In((2, 3))),
    "bcast": (In((2, 3)), In((3,))),
    "bcast2": (In((4, 1, 3)), In((2, 1))),
    "0d": (In(()), In((2, 3))),
    "T": (In((3, 4), layout="T"), In((3, 4))),
    "f32": (In((2, 3), dtype="float32"), In((2, 3), dtype="float32")),
    "f32_f64": (In((2, 3), dtype="float32"), In((3,))),
}


@pytest.mark.parametrize("sid", sorted(BINARY_SHAPES))
def test_atan2_against_torch(sid):
    check_op(lambda L, a, b: (L.atan2(a, b), a.atan2(b), L.arctan2(a, b), a.arctan2(b)), *BINARY_SHAPES[sid])


@pytest.mark.parametrize("sid", sorted(BINARY_SHAPES))
def test_nextafter_against_torch(sid):
    check_op(lambda L, a, b: (L.nextafter(a, b), a.nextafter(b)), *BINARY_SHAPES[sid], rtol=0, atol=0,
             grad_rtol=1e-12, grad_atol=1e-12)


def test_atan2_at_the_origin():
    # the value of every quadrant and signed zero; the gradient at (0, 0) is 0, as torch's
    vals = np.array([0.0, -0.0, 1.0, -1.0, INF, -INF, NAN])
    a, b = np.meshgrid(vals, vals)
    check_op(lambda L, a, b: L.atan2(a, b), In(value=a.ravel()), In(value=b.ravel()), grad=False)
    check_op(lambda L, a, b: L.atan2(a, b), In(value=np.array([0.0, 0.0, 1.0])), In(value=np.array([0.0, 2.0, 0.0])))


EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, -2.5, 1e-30, -1e-30, 0.999999, -0.999999, 7.5, 25.0,
         40.0, -40.0, 88.0, 89.0, 100.0, 700.0, 1e10, -1e10, INF, -INF, NAN, 1.5, -1.5]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [u[0] for u in UNARY] + ["sgn", "fix", "isposinf", "isneginf", "isreal"])
def test_edge_values(name, dtype):
    rtol = 1e-6 if dtype == "float32" else 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: getattr(L, name)(L.tensor(EDGES, dtype=getattr(L, dtype))), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_polygamma_edge_values(n, dtype):
    rtol = 1e-6 if dtype == "float32" else 1e-7
    # the poles (0, negative integers), ±inf, NaN, and large/small arguments
    xs = [0.0, -1.0, -2.0, -1.5, -0.3, 1e-8, 0.5, 1.0, 3.0, 9.5, 10.0, 50.0, 1e6, INF, -INF, NAN]
    same(lambda L: L.polygamma(n, L.tensor(xs, dtype=getattr(L, dtype))), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_erfinv_round_trip_and_tails(dtype):
    xs = [1e-300 if dtype == "float64" else 1e-30, 1e-8, 0.3, -0.7, 0.9999, -0.999999999, 1 - 2 ** -40,
          1.0, -1.0, 1.0000001, -2.0, NAN]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: L.erfinv(L.tensor(xs, dtype=getattr(L, dtype))), rtol=1e-6 if dtype == "float32" else 1e-12,
             atol=0)
    x = fg.tensor([-0.99, -0.5, 0.0, 0.25, 0.9], dtype=fg.float64)
    np.testing.assert_allclose(x.erfinv().erf().numpy(), x.numpy(), rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_values(p):
    xs = [p + 0.25, p * 1.0, 10.0, 100.0, 1e5]
    same(lambda L: L.mvlgamma(L.tensor(xs, dtype=L.float64), p), rtol=1e-12, atol=0)


def test_large_and_tiny_bessel_arguments():
    xs = [1e-20, 0.1, 29.9, 30.0, 30.1, 60.0, -60.0, 500.0, 709.0, 709.7, 710.0]
    same(lambda L: (L.i0(L.tensor(xs, dtype=L.float64)), L.special.i1(L.tensor(xs, dtype=L.float64))),
         rtol=1e-12, atol=0)


def test_sgn_and_fix():
    check_op(lambda L, x: (L.sgn(x), x.sgn(), L.fix(x), x.fix()), In(value=np.array([-1.5, 0.0, 2.5, -0.0, NAN])))
    check_op(lambda L, x: (L.sgn(x), L.fix(x)), In((2, 3), domain="ints", dtype="int64"))
    check_op(lambda L, x: L.sgn(x), In((2, 3), dtype="bool"))


def test_isposinf_isneginf_isreal():
    x = In(value=np.array([INF, -INF, NAN, 0.0, 1e308]))
    check_op(lambda L, x: (L.isposinf(x), x.isposinf(), L.isneginf(x), x.isneginf(), L.isreal(x), x.isreal()),
             x, grad=False)
    for dt in ("int64", "bool"):
        check_op(lambda L, x: (L.isposinf(x), L.isneginf(x), L.isreal(x)), In((2, 3), dtype=dt), grad=False)


@pytest.mark.parametrize("name", [u[0] for u in UNARY] + ["sgn", "fix"])
def test_integer_inputs(name):
    # integers promote to float32 (sgn and fix keep the integer dtype), as torch's
    dom = {"acosh": "pos"}.get(name)
    check_op(lambda L, i: getattr(L, name)(i), In((2, 3), domain=dom, dtype="int64"), grad=False)
    if name != "fix":  # torch's trunc has no bool kernel
        check_op(lambda L, b: getattr(L, name)(b), In((2, 3), dtype="bool"), grad=False)


def test_integer_inputs_of_binary_and_parametrised_functions():
    i = In((2, 3), domain="pos", dtype="int64")
    check_op(lambda L, a, b: (L.atan2(a, b), L.polygamma(1, a), L.mvlgamma(a + 1, 2)), i, i, grad=False)
    check_op(lambda L, a, b: L.atan2(a, b), In((3,), dtype="int64"), In((3,), dtype="float64"), grad=False)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_floats(dtype):
    def fn(L):
        x = L.tensor([0.1, 0.5, 0.9], dtype=getattr(L, dtype))
        outs = (x.asin(), x.atanh(), x.erfc(), x.erfinv(), x.lgamma(), x.digamma(), x.i0(), x.polygamma(1),
                L.atan2(x, x + 1), L.nextafter(x, x + 1))
        assert all(o.dtype == x.dtype for o in outs)
        return tuple(o.float() for o in outs)
    same(fn, rtol=1e-2, atol=1e-3)


GRAD_FN = {
    "asin": "AsinBackward0", "arcsin": "AsinBackward0", "acos": "AcosBackward0", "arccos": "AcosBackward0",
    "atan": "AtanBackward0", "arctan": "AtanBackward0", "sinh": "SinhBackward0", "cosh": "CoshBackward0",
    "asinh": "AsinhBackward0", "arcsinh": "AsinhBackward0", "acosh": "AcoshBackward0",
    "arccosh": "AcoshBackward0", "atanh": "AtanhBackward0", "arctanh": "AtanhBackward0",
    "erfc": "ErfcBackward0", "erfinv": "ErfinvBackward0", "lgamma": "LgammaBackward0",
    "digamma": "DigammaBackward0", "i0": "I0Backward0", "sgn": "SgnBackward0", "fix": "TruncBackward0",
}


@pytest.mark.parametrize("name", sorted(GRAD_FN))
def test_grad_fn_names(name):
    x = fg.tensor([0.5, 0.25], requires_grad=True)
    assert node_name(getattr(fg, name)(x).grad_fn) == GRAD_FN[name]
    assert node_name(getattr(x, name)().grad_fn) == GRAD_FN[name]


def test_grad_fn_names_of_the_others():
    x = fg.tensor([0.5, 0.25], requires_grad=True)
    y = fg.tensor([1.5, 2.0], requires_grad=True)
    assert node_name(fg.atan2(x, y).grad_fn) == "Atan2Backward0"
    assert node_name(fg.arctan2(x, y).grad_fn) == "Atan2Backward0"
    assert node_name(fg.nextafter(x, y).grad_fn) == "NextafterBackward0"
    assert node_name(fg.polygamma(0, x).grad_fn) == "PolygammaBackward0"
    assert node_name(fg.polygamma(2, x).grad_fn) == "PolygammaBackward0"
    assert node_name(fg.mvlgamma(y, 2).grad_fn) == "MvlgammaBackward0"
    assert node_name(fg.special.i1(x).grad_fn) == "SpecialI1Backward0"
    assert node_name(fg.special.gammaln(x).grad_fn) == "LgammaBackward0"
    assert node_name(fg.special.psi(x).grad_fn) == "DigammaBackward0"
    assert node_name(fg.special.expit(x).grad_fn) == "SigmoidBackward0"
    assert node_name(fg.special.multigammaln(y, 2).grad_fn) == "MvlgammaBackward0"


def test_nextafter_gradient_is_torchs():
    # torch passes the gradient to the first operand and zeros to the second
    check_op(lambda L, a, b: L.nextafter(a, b), In((2, 3)), In((3,)), double=False)


def test_third_derivatives():
    # create_graph through two backward passes: the rules are differentiable ops all the way down
    def fn(L):
        x = L.tensor([0.3, -0.4, 0.7], dtype=L.float64, requires_grad=True)
        outs = []
        for f in (lambda v: v.asin(), lambda v: v.atanh(), lambda v: v.erfinv(), lambda v: (v + 2).lgamma(),
                  lambda v: (v + 2).digamma(), lambda v: v.i0(), lambda v: v.sinh() * v.cosh(),
                  lambda v: L.atan2(v, v * v + 1), lambda v: (v + 3).mvlgamma(2), lambda v: v.erfc()):
            y = f(x).sum()
            (g,) = L.autograd.grad(y, x, create_graph=True)
            (h,) = L.autograd.grad(g.sum(), x, create_graph=True)
            (k,) = L.autograd.grad(h.sum(), x)
            outs += [g.detach(), h.detach(), k]
        return outs
    same(fn, rtol=1e-6, atol=1e-9)


INPLACE = ["asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "asinh", "arcsinh", "acosh",
           "arccosh", "atanh", "arctanh", "erfc", "erfinv", "lgamma", "digamma", "i0", "sgn", "fix"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace(name):
    def fn(L):
        base = L.tensor([0.2, 0.4, 0.6], dtype=L.float64) + (1.0 if "cosh" in name and "a" in name else 0.0)
        leaf = base.clone().requires_grad_()
        x = leaf * 1.0
        v = x._version
        r = getattr(x, name + "_")()
        assert r is x and x._version == v + 1
        try:  # torch has no derivative for asinh_, acosh_, atanh_: backward raises
            r.sum().backward()
        except NotImplementedError as e:
            return x.detach(), node_name(x.grad_fn), str(e)
        return x.detach(), leaf.grad, node_name(x.grad_fn)
    same(fn)


def test_inplace_with_arguments():
    def fn(L):
        out = []
        for f in (lambda x: x.polygamma_(1), lambda x: x.polygamma_(0), lambda x: x.mvlgamma_(2),
                  lambda x: x.atan2_(L.tensor([1.0, -2.0, 3.0], dtype=L.float64)),
                  lambda x: x.arctan2_(L.tensor(0.5, dtype=L.float64)),
                  lambda x: x.nextafter_(L.tensor([0.0, 9.0, 1.5], dtype=L.float64))):
            leaf = L.tensor([1.2, 1.4, 1.6], dtype=L.float64, requires_grad=True)
            x = leaf * 1.0
            v = x._version
            r = f(x)
            assert r is x and x._version == v + 1
            r.sum().backward()
            out += [x.detach(), leaf.grad, node_name(x.grad_fn)]
        return out
    same(fn, rtol=1e-6)


def test_inplace_on_integers_is_refused():
    def kind(L, f):
        try:
            f(L.tensor([1, 0]))
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
        return None
    for f in (lambda t: t.asin_(), lambda t: t.lgamma_(), lambda t: t.polygamma_(1)):
        assert kind(fg, f) == kind(torch, f)
    assert kind(fg, lambda t: t.fix_()) is None and kind(fg, lambda t: t.sgn_()) is None


def _error(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(lib)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


ERRORS = {
    "polygamma-negative-n": (lambda L: L.polygamma(-1, L.ones(2)), "does not support negative n"),
    "polygamma-method-negative-n": (lambda L: L.ones(2).polygamma(-2), "does not support negative n"),
    "polygamma-float-n": (lambda L: L.polygamma(1.5, L.ones(2)), "must be int"),
    "polygamma-not-tensor": (lambda L: L.polygamma(1, [1.0]), "must be Tensor"),
    "mvlgamma-p0": (lambda L: L.mvlgamma(L.ones(2), 0), "p has to be greater than or equal to 1"),
    "mvlgamma-method-p-negative": (lambda L: L.ones(2).mvlgamma(-1), "p has to be greater than or equal to 1"),
    "mvlgamma-float-p": (lambda L: L.mvlgamma(L.ones(2), 1.5), "must be int"),
    "atan2-number": (lambda L: L.atan2(L.ones(2), 1.0), "must be Tensor"),
    "nextafter-number": (lambda L: L.nextafter(L.ones(2), 1.0), "must be Tensor"),
    "nextafter-int": (lambda L: L.nextafter(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
                      "not implemented for 'Long'"),
    "nextafter-bool": (lambda L: L.nextafter(L.ones(2, dtype=L.bool), L.ones(2, dtype=L.bool)),
                       "not implemented for 'Bool'"),
    "atan2-shapes": (lambda L: L.atan2(L.ones(2), L.ones(3)), "must match the size"),
    "asin-not-tensor": (lambda L: L.asin([0.5]), "must be Tensor"),
    "isposinf-not-tensor": (lambda L: L.isposinf(1.0), "must be Tensor"),
    "asin_-int": (lambda L: L.tensor([1, 0]).asin_(), "result type Float can't be cast to the desired output type Long"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    fn, fragment = ERRORS[name]
    expected = _error(fn, torch)
    assert expected is not None, f"torch accepts {name}"
    got = _error(fn, fg)
    assert got is not None, f"{name}: no error"
    assert got[0] is expected[0], f"{name}: {got} != torch {expected}"
    assert fragment in expected[1] and fragment in got[1], (got, expected)


def test_mvlgamma_below_its_domain_is_not_an_error():
    # torch no longer checks x > (p - 1) / 2: the lgamma terms give inf or finite values
    same(lambda L: L.mvlgamma(L.tensor([0.3, 0.5, 1.0], dtype=L.float64), 2))


# ---------------------------------------------------------------- the special namespace
SPECIAL_UNARY = {
    "expit": None, "logit": "pos01", "erf": None, "erfc": None, "erfinv": "unit", "gammaln": "pos",
    "digamma": "pos", "psi": "pos", "i0": None, "i1": None, "log1p": "pos", "expm1": None, "exp2": None,
    "sinc": None, "round": None, "entr": "pos", "ndtr": None, "log_ndtr": None,
}


@pytest.mark.parametrize("name", sorted(SPECIAL_UNARY))
def test_special_unary(name):
    dom = SPECIAL_UNARY[name]

    def fn(L, x):
        if dom == "pos01":
            x = x.sigmoid()
        return getattr(L.special, name)(x)

    check_op(fn, In((2, 3), domain=None if dom == "pos01" else dom), rtol=1e-6)
    check_op(fn, In((4,), domain=None if dom == "pos01" else dom, dtype="float32"), rtol=1e-6)


def test_special_with_arguments():
    x, y = In((2, 3), domain="pos"), In((2, 3), domain="pos")
    check_op(lambda L, x, y: (L.special.polygamma(2, x), L.special.multigammaln(x + 2, 3), L.special.xlogy(x, y),
                              L.special.logsumexp(x, 1), L.special.logsumexp(y, (0, 1), keepdim=True),
                              L.special.softmax(x, 0), L.special.log_softmax(y, -1),
                              L.special.round(x * 10, decimals=1), L.special.logit(x * 0.3, eps=0.1)),
             x, y, rtol=1e-6)


def test_special_edges():
    xs = [-50.0, -38.0, -30.0, -20.5, -19.5, -5.0, -1e-3, 0.0, 1e-3, 3.0, 10.0, 40.0, INF, -INF, NAN]
    same(lambda L: (L.special.ndtr(L.tensor(xs, dtype=L.float64)), L.special.log_ndtr(L.tensor(xs, dtype=L.float64))),
         rtol=1e-9, atol=1e-300)
    same(lambda L: L.special.entr(L.tensor([-1.0, 0.0, 0.5, 1.0, INF, NAN], dtype=L.float64)))
    # log_ndtr's gradient on both sides of its branch points
    check_op(lambda L, x: L.special.log_ndtr(x), In(value=np.array([-30.0, -20.5, -19.5, -3.0, 0.5, 4.0])),
             rtol=1e-6)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's module layout")
def test_special_module_is_importable():
    import ferrograd.special as sp

    assert fg.special is sp
    for n in sp.__all__:
        assert callable(getattr(sp, n)), n
        assert hasattr(torch.special, n), n
