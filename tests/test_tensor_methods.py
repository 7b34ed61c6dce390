"""Parity with torch of the Tensor methods written in Python (python/ferrograd/_random_ops.py,
_inplace_methods.py, _tensor_properties.py, and the compositions of _pointwise.py, _indexing.py,
_shape_ops.py, _reductions.py that came with them): in-place random fills (by
distribution, seeded and loose), in-place forms of out-of-place ops (values, gradients through a
non-leaf and through a view of one, identity, version counter), out-of-place compositions, small
properties, and errors (exception type and message)."""
import math

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op, same

I = np.int64
DUP = In(value=np.array([[0, 0, 2, 2], [0, 1, 0, 2], [1, 1, 1, 1]], dtype=I))   # into (3, 4) along dim 0
IDX1 = In(value=np.array([1, 0, 1], dtype=I))                                       # index_reduce: 3 rows into 2


def _ip(name, *args, **kw):
    """(x * 1).name(*inputs, *args): an in-place op on a non-leaf that requires grad."""
    def fn(L, x, *ts):
        y = x * 1
        return getattr(y, name)(*ts, *args, **kw)
    return fn


def _ip_view(name, *args, **kw):
    """y = x * 1; y[:, 1:].name(...): an in-place op on a view; y (the base) is the output."""
    def fn(L, x, *ts):
        y = x * 1
        getattr(y[:, 1:], name)(*ts, *args, **kw)
        return y
    return fn


A = In((3, 4))
P = In((3, 4), domain="pos")
U = In((3, 4), domain="unit")
A3 = In((3, 3))

INPLACE_CASES = [
    ("addcmul_", _ip("addcmul_", value=0.5), (A, A, A)),
    ("addcmul_-view", _ip_view("addcmul_", value=-2), (A, In((3, 3)), In((3,)))),
    ("addcdiv_", _ip("addcdiv_", value=2), (A, A, In((3, 4), domain="nonzero"))),
    ("addmm_", _ip("addmm_", beta=0.5, alpha=2), (In((2, 3)), In((2, 4)), In((4, 3)))),
    ("addmv_", _ip("addmv_"), (In((2,)), In((2, 3)), In((3,)))),
    ("addr_", _ip("addr_", alpha=3), (In((2, 3)), In((2,)), In((3,)))),
    ("addbmm_", _ip("addbmm_"), (In((2, 3)), In((4, 2, 5)), In((4, 5, 3)))),
    ("baddbmm_", _ip("baddbmm_", beta=2), (In((4, 2, 3)), In((4, 2, 5)), In((4, 5, 3)))),
    ("lerp_", _ip("lerp_", 0.25), (A, A)),
    ("lerp_-tensor-weight", _ip("lerp_"), (A, A, U)),
    ("clamp_min_", _ip("clamp_min_", 0.1), (A,)),
    ("clamp_max_", _ip("clamp_max_", 0.1), (A,)),
    ("copysign_", _ip("copysign_"), (A, In((3, 4), domain="nonzero")), {"double": False}),
    ("cumsum_", _ip("cumsum_", 1), (A,)),
    ("cumprod_", _ip("cumprod_", 0), (A,)),
    ("cumsum_-view", _ip_view("cumsum_", 0), (A,)),
    ("log10_", _ip("log10_"), (P,)),
    ("log2_", _ip("log2_"), (P,)),
    ("log1p_", _ip("log1p_"), (P,)),
    ("log1p_-view", _ip_view("log1p_"), (P,)),
    ("expm1_", _ip("expm1_"), (A,)),
    ("exp2_", _ip("exp2_"), (A,)),
    ("rsqrt_", _ip("rsqrt_"), (P,)),
    ("tan_", _ip("tan_"), (U,)),
    ("frac_", _ip("frac_"), (A,)),
    ("deg2rad_", _ip("deg2rad_"), (A,)),
    ("rad2deg_", _ip("rad2deg_"), (A,)),
    ("hypot_", _ip("hypot_"), (A, A)),
    ("heaviside_", _ip("heaviside_"), (In((3, 4), domain="ints"), A), {"grad": False}),
    ("float_power_", _ip("float_power_", 2.5), (P,)),
    ("true_divide_", _ip("true_divide_"), (A, In((3, 4), domain="nonzero"))),
    ("divide_", _ip("divide_", 4.0), (A,)),
    ("divide_-floor", _ip("divide_", rounding_mode="floor"), (A, In((3, 4), domain="nonzero")), {"grad": False}),
    ("multiply_", _ip("multiply_"), (A, A)),
    ("subtract_", _ip("subtract_", alpha=2), (A, A)),
    ("negative_", _ip("negative_"), (A,)),
    ("absolute_", _ip("absolute_"), (In((3, 4), domain="nonzero"),)),
    ("xlogy_", _ip("xlogy_"), (A, P)),
    ("logit_", lambda L, x: (x.sigmoid() * 1).logit_(), (A,)),
    ("logit_-eps", lambda L, x: (x.sigmoid() * 1).logit_(0.2), (A,)),
    ("sinc_", _ip("sinc_"), (A,)),
    ("ldexp_", _ip("ldexp_"), (A, In(value=np.array([[1, -2, 0, 3]], dtype=I)))),
    ("eq_", _ip("eq_"), (In((3, 4), domain="ints"), In((3, 4), domain="ints"))),
    ("ne_", _ip("ne_", 0.0), (In((3, 4), domain="ints"),)),
    ("lt_", _ip("lt_"), (A, A)),
    ("le_", _ip("le_"), (In((3, 4), domain="ints"), In((4,), domain="ints"))),
    ("gt_", _ip("gt_", 0.0), (A,)),
    ("ge_-view", _ip_view("ge_", 0.0), (A,)),
    ("greater_", _ip("greater_"), (A, A)),
    ("greater_equal_", _ip("greater_equal_"), (A, A)),
    ("less_", _ip("less_"), (A, A)),
    ("less_equal_", _ip("less_equal_"), (A, A)),
    ("not_equal_", _ip("not_equal_"), (In((3, 4), domain="ints"), In((3, 4), domain="ints"))),
    ("logical_and_", _ip("logical_and_"), (In((3, 4), domain="ints"), In((3, 4), domain="ints"))),
    ("logical_or_", _ip("logical_or_"), (In((3, 4), domain="ints"), In((3, 4), domain="ints"))),
    ("logical_xor_", _ip("logical_xor_"), (In((3, 4), domain="ints"), In((3, 4), domain="ints"))),
    ("logical_not_", _ip("logical_not_"), (In((3, 4), domain="ints"),)),
    ("bitwise_and_", _ip("bitwise_and_"), (In((3, 4), dtype="int64"), In((3, 4), dtype="int64"))),
    ("bitwise_or_", _ip("bitwise_or_", 6), (In((3, 4), dtype="int64"),)),
    ("bitwise_xor_", _ip("bitwise_xor_"), (In((3, 4), dtype="int64"), In((3, 4), dtype="int64"))),
    ("bitwise_not_", _ip("bitwise_not_"), (In((3, 4), dtype="int64"),)),
    ("gcd_", _ip("gcd_"), (In(value=np.array([12, -18, 0, 7], dtype=I)), In(value=np.array([8, 12, 5, 0], dtype=I)))),
    ("lcm_", _ip("lcm_"), (In(value=np.array([4, -6, 0, 7], dtype=I)), In(value=np.array([6, 4, 5, 3], dtype=I)))),
    ("scatter_reduce_", lambda L, x, i, s: (x * 1).scatter_reduce_(0, i, s, "amax"), (A, DUP, A), {"double": False}),
    ("index_reduce_", lambda L, x, i, s: (x * 1).index_reduce_(0, i, s, "mean"), (In((2, 4)), IDX1, A), {"double": False}),
    ("inplace-on-T-leaf-copy", lambda L, x, a: (x * 1).t().addcmul_(a, a), (In((4, 3)), A)),
]


@pytest.mark.parametrize("fn,specs,kw", [pytest.param(c[1], c[2], c[3] if len(c) > 3 else {}, id=c[0])
                                         for c in INPLACE_CASES])
def test_inplace_parity(fn, specs, kw):
    check_op(fn, *specs, **kw)


# ------------------------------------------------------------------ out of place
NAN = In(value=np.array([[1.0, np.nan, 2.0, -1.0], [np.nan, 0.5, 3.0, 3.0]]))
OTHER = In(value=np.array([[0.5, 1.0, np.nan, -1.0], [np.nan, 0.75, 3.0, 4.0]]))

CASES = [
    ("fmax", lambda L, a, b: L.fmax(a, b), (NAN, OTHER)),
    ("fmin", lambda L, a, b: a.fmin(b), (NAN, OTHER)),
    ("fmax-broadcast", lambda L, a, b: L.fmax(a, b), (A, In((4,)))),
    ("ldexp", lambda L, a, e: L.ldexp(a, e), (A, In(value=np.array([1, -2, 0, 3], dtype=I)))),
    ("frexp", lambda L, a: L.frexp(a), (In(value=np.array([[0.0, 1.0, -3.5], [1e-3, 1024.0, 7.25]])),)),
    ("msort", lambda L, a: L.msort(a), (In((4, 3)),)),
    ("hardshrink", lambda L, a: a.hardshrink(0.3), (A,)),
    ("prelu", lambda L, a, w: L.prelu(a, w), (In((2, 3, 4)), In((3,)))),
    ("angle", lambda L, a: L.angle(a), (In(value=np.array([-1.0, 0.0, 2.0, np.nan])),)),
    ("gcd", lambda L, a, b: L.gcd(a, b), (In(value=np.array([12, -18, 0, 7], dtype=I)), In(value=np.array([8, 12, 5, 0], dtype=I)))),
    ("lcm", lambda L, a, b: a.lcm(b), (In(value=np.array([4, -6, 0, 7], dtype=I)), In(value=np.array([6, 4, 5, 3], dtype=I)))),
    ("select_scatter", lambda L, a, s: L.select_scatter(a, s, 1, 2), (A, In((3,)))),
    ("slice_scatter", lambda L, a, s: a.slice_scatter(s, 1, 0, 4, 2), (A, In((3, 2)))),
    ("slice_scatter-dim0", lambda L, a, s: L.slice_scatter(a, s, start=1), (A, In((2, 4)))),
    ("diagonal_scatter", lambda L, a, s: L.diagonal_scatter(a, s), (A, In((3,)))),
    ("diagonal_scatter-offset", lambda L, a, s: a.diagonal_scatter(s, 1), (A, In((3,)))),
    ("diagonal_scatter-neg-dims", lambda L, a, s: a.diagonal_scatter(s, -1, 2, 0), (In((4, 2, 3)), In((2, 2)))),
    ("cov", lambda L, a: L.cov(a), (In((3, 5)),)),
    ("cov-1d-correction0", lambda L, a: a.cov(correction=0), (In((6,)),)),
    ("cov-weights", lambda L, a, w: L.cov(a, fweights=L.tensor([1, 2, 1, 3]), aweights=w),
     (In((2, 4)), In((4,), domain="pos"))),
    ("corrcoef", lambda L, a: L.corrcoef(a), (In((3, 6)),)),
    ("unfold", lambda L, a: a.unfold(1, 2, 1), (A,)),
    ("unfold-step", lambda L, a: a.unfold(0, 2, 2), (In((5, 3)),)),
    ("unfold-0d", lambda L, a: a.unfold(0, 1, 1), (In(()),)),
    ("unfold-T-dim0-overlap", lambda L, a: a.unfold(0, 3, 1), (In((4, 5), layout="T"),)),
    ("unfold-gaps", lambda L, a: a.unfold(-1, 2, 3), (In((2, 8)),)),
    ("unfold-twice", lambda L, a: a.unfold(0, 2, 1).unfold(1, 2, 1), (In((4, 3)),)),
    ("unfold-size0", lambda L, a: a.unfold(1, 0, 1), (A,)),
    ("unfold-inplace-on-window", lambda L, a: (lambda y: (y.unfold(1, 2, 2)[:, 1].mul_(3), y)[1])(a * 1), (A,)),
    ("ravel", lambda L, a: L.ravel(a), (In((3, 4), layout="T"),)),
    ("narrow_copy", lambda L, a: L.narrow_copy(a, 1, 1, 2), (A,)),
    ("split_with_sizes", lambda L, a: a.split_with_sizes([1, 3], 1), (A,)),
    ("unsafe_split", lambda L, a: L.unsafe_split(a, 2), (A,)),
    ("unsafe_split_with_sizes", lambda L, a: a.unsafe_split_with_sizes([2, 1]), (A,)),
    ("unsafe_chunk", lambda L, a: a.unsafe_chunk(2, 1), (A,)),
    ("sum_to_size", lambda L, a: a.sum_to_size(3, 1), (A,)),
    ("sum_to_size-lead", lambda L, a: a.sum_to_size((1, 4)), (In((2, 3, 4)),)),
    ("nonzero_static-pad", lambda L, a: L.nonzero_static(a, size=6), (In(value=np.array([[0.0, 1.0], [2.0, 0.0]])),)),
    ("nonzero_static-cut", lambda L, a: a.nonzero_static(size=1, fill_value=7), (In(value=np.array([[0.0, 1.0], [2.0, 0.0]])),)),
    ("adjoint", lambda L, a: L.adjoint(a), (In((2, 3, 4)),)),
    ("mH", lambda L, a: a.mH, (In((2, 3, 4)),)),
    ("H", lambda L, a: a.H, (A,)),
    ("bernoulli-p0-p1", lambda L, a: L.bernoulli(a), (In(value=np.array([0.0, 1.0, 1.0, 0.0])),), {"grad": False}),
]
for red in ("sum", "prod", "mean", "amax", "amin"):
    for inc in (True, False):
        CASES.append((f"scatter_reduce-{red}-{inc}",
                      (lambda r, i: lambda L, x, ix, s: x.scatter_reduce(0, ix, s, r, include_self=i))(red, inc),
                      (In((3, 4), domain="ints"), DUP, In((3, 4), domain="ints")), {"double": False}))
for red in ("prod", "mean", "amax", "amin"):
    CASES.append((f"index_reduce-{red}", (lambda r: lambda L, x, i, s: L.index_reduce(x, 0, i, s, r))(red),
                  (In((2, 4), domain="ints"), IDX1, In((3, 4), domain="ints")), {"double": False}))
CASES.append(("scatter_reduce-prod-zeros", lambda L, x, i, s: x.scatter_reduce(1, i, s, "prod"),
              (In(value=np.array([[0.0, 2.0], [3.0, 0.0]])), In(value=np.array([[0, 0, 1], [1, 1, 1]], dtype=I)),
               In(value=np.array([[5.0, 0.0, 1.5], [2.0, 0.0, -1.0]]))), {"double": False}))


@pytest.mark.parametrize("fn,specs,kw", [pytest.param(c[1], c[2], c[3] if len(c) > 3 else {}, id=c[0]) for c in CASES])
def test_parity(fn, specs, kw):
    check_op(fn, *specs, **kw)


# ------------------------------------------------------------------ in-place semantics
def test_inplace_returns_self_and_bumps_version():
    def run(L):
        y = L.arange(6.0).reshape(2, 3)
        out = []
        for f in (lambda: y.addcmul_(y, y), lambda: y.clamp_min_(2), lambda: y.log1p_(), lambda: y.eq_(y),
                  lambda: y.cumsum_(0), lambda: y.uniform_(), lambda: y.normal_(), lambda: y.fill_diagonal_(3.0),
                  lambda: y.random_(3), lambda: y.bernoulli_(), lambda: y.exponential_(), lambda: y.cauchy_()):
            v = y._version
            out.append((f() is y, y._version > v, tuple(y.shape)))
        return out
    same(run)


@pytest.mark.parametrize("name,args", [("t_", ()), ("unsqueeze_", (1,)), ("squeeze_", ()), ("transpose_", (0, 1)),
                                       ("swapaxes_", (1, 0)), ("resize_", ((3, 2),)), ("resize_as_", ("t",))])
def test_shape_inplace_returns_self_and_bumps_version(name, args):
    def run(L):
        y = L.arange(6.0).reshape(2, 3)
        args2 = [L.zeros(6, 1) if a == "t" else a for a in args]
        r = getattr(y, name)(*args2)
        return r is y, y._version, tuple(y.shape), y.stride(), y
    same(run)


def test_inplace_on_leaf_requiring_grad_raises():
    for name, args in (("addcmul_", ("x", "x")), ("log1p_", ()), ("uniform_", ()), ("normal_", ()), ("eq_", (0.0,)),
                       ("bernoulli_", ()), ("random_", (0, 3)), ("t_", ()), ("clamp_max_", (0.0,))):
        def run(L):
            x = L.ones(2, 2, requires_grad=True)
            with pytest.raises(RuntimeError) as e:
                getattr(x, name)(*[x if a == "x" else a for a in args])
            return str(e.value), x._version
        same(run)


def test_inplace_under_no_grad_on_leaf():
    def run(L):
        x = L.ones(2, 3, requires_grad=True)
        with L.no_grad():
            x.addcmul_(x, x).log2_().clamp_max_(0.5)
        return x.detach(), x.requires_grad, x.is_leaf, x.grad_fn is None
    same(run)


def test_inplace_makes_result_require_grad():
    def run(L):
        x = L.zeros(3)
        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x.addcmul_(a, a)
        x.sum().backward()
        return x.requires_grad, x.is_leaf, a.grad
    same(run)


def test_logical_inplace_keeps_history():
    def run(L):
        a = L.tensor([1.0, 0.0, 2.0], requires_grad=True)
        y = a * 3
        y.logical_not_()
        a.logical_and_(L.tensor([1.0, 1.0, 0.0]))  # allowed on a leaf: no derivative
        (y * L.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y, y._version, a, a._version, a.grad
    same(run)


def test_inplace_errors():
    cases = [
        lambda L: L.arange(3).addcmul_(L.ones(3), L.ones(3)),
        lambda L: L.arange(3).log10_(),
        lambda L: L.zeros(3).add(1).addcmul_(L.ones(2, 3), L.ones(3)),
        lambda L: L.arange(3.0).float_power_(2),
        lambda L: L.zeros(3).fill_diagonal_(1),
        lambda L: L.zeros(2, 3, 2).fill_diagonal_(1),
        lambda L: L.zeros(2, 2, requires_grad=True).resize_(3),
        lambda L: L.ones(2, requires_grad=True).apply_(lambda v: v),
    ]
    for c in cases:
        same(lambda L: _err(c, L))


def _err(fn, L):
    try:
        fn(L)
    except Exception as e:  # noqa: BLE001 -- the kind and message are what is compared
        return type(e).__name__, str(e).split("(Triggered")[0].strip()
    return None


# ------------------------------------------------------------------ shape in-place, fills, maps
def test_shape_inplace_views_and_resize():
    def run(L):
        base = L.arange(12.0)
        x = base[:6].view(2, 3)
        x.t_()
        x[0, 1] = 100.0  # still writes into base's storage
        y = L.arange(6.0)
        y.resize_(2, 2)
        z = L.arange(4.0)
        z.resize_as_(L.zeros(2, 2))
        return x, x.stride(), base, y, z, y.is_contiguous()
    same(run)


def test_resize_grows_keeping_values():
    def run(L):
        y = L.arange(4.0)
        y.resize_(2, 3)
        return tuple(y.shape), y.reshape(-1)[:4]
    same(run)


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((5, 3), False), ((7, 3), True), ((3, 5), True), ((3, 3, 3), False)])
def test_fill_diagonal_(shape, wrap):
    same(lambda L: L.zeros(*shape).fill_diagonal_(2.5, wrap))


def test_fill_diagonal_grad():
    def run(L):
        a = L.ones(3, 3, requires_grad=True)
        y = a * 2
        y.fill_diagonal_(0.0)
        y.sum().backward()
        return y, a.grad
    same(run)


def test_apply_and_maps():
    def run(L):
        x = L.arange(4.0)
        r = x.apply_(lambda v: v * v + 1)
        y = L.ones(4)
        y.map_(L.tensor([1.0, 2.0, 3.0, 4.0]), lambda a, b: a - b)
        z = L.zeros(2, 2)
        z.map2_(L.ones(2, 2), L.tensor([1.0, 3.0]), lambda a, b, c: a + b * c)
        return r is x, x, y, z
    same(run)


def test_module_load():
    def run(L):
        p = L.zeros(3)
        o = L.ones(3)
        a = p.module_load(o)
        b = p.module_load(o, assign=True)
        return a is p, a is o, a, p, b is o, b
    same(run)


# ------------------------------------------------------------------ properties and small methods
def test_properties():
    def run(L):
        x = L.zeros(2, 3)
        i = L.zeros(5, dtype=L.int32)
        u = L.zeros(1, dtype=L.uint8)
        return (x.is_cpu, x.nbytes, x.itemsize, i.nbytes, i.itemsize, x.get_device(), x.is_signed(), i.is_signed(),
                u.is_signed(), L.ones(1, dtype=L.bool).is_signed(), x.is_same_size(L.ones(2, 3)), x.is_same_size(i),
                L.tensor([2.0]).is_nonzero(), L.is_nonzero(L.tensor(0)), str(x.layout), str(L.strided),
                x.layout == L.strided, x.dim_order(), x.t().dim_order(), L.zeros(2, 3, 4).permute(2, 0, 1).dim_order(),
                x.is_complex(), x.is_conj(), x.is_neg(), x.conj() is x, x.resolve_conj() is x, x.resolve_neg() is x,
                x.real is x, x.is_pinned(), x.is_shared(), x.is_sparse, x.is_quantized, x.is_meta, x.is_nested)
    same(run)


def test_property_errors():
    cases = [
        lambda L: L.zeros(3).imag,
        lambda L: L.imag(L.zeros(3)),
        lambda L: L.zeros(3).H,
        lambda L: L.zeros(2, 2, 2).H,
        lambda L: L.zeros(3).mH,
        lambda L: L.zeros(3).adjoint(),
        lambda L: L.zeros(2).is_nonzero(),
        lambda L: L.zeros(0).is_nonzero(),
        lambda L: L.zeros(3, 2).sum_to_size(2, 2),
        lambda L: L.zeros(3).unfold(0, 4, 1),
        lambda L: L.zeros(3).unfold(0, 2, 0),
        lambda L: L.zeros(3).unfold(1, 2, 1),
        lambda L: L.zeros(3).unfold(0, -1, 1),
        lambda L: L.zeros(()).unfold(0, 2, 1),
        lambda L: L.zeros(2, 2, 2).cov(),
        lambda L: L.gcd(L.zeros(2), L.zeros(2)),
        lambda L: L.frexp(L.arange(3)),
        lambda L: L.zeros(3, 3).select_scatter(L.zeros(2), 0, 0),
        lambda L: L.zeros(3).slice_scatter(L.zeros(2), 0, 0, 1),
        lambda L: L.zeros(3, 3).diagonal_scatter(L.zeros(2)),
        lambda L: L.zeros(4).scatter_reduce(0, L.tensor([0]), L.zeros(4), "foo"),
        lambda L: L.zeros(4).scatter_reduce(0, L.tensor([0]), L.zeros(4, dtype=L.float64), "sum"),
        lambda L: L.zeros(4).index_reduce(0, L.tensor([0]), L.zeros(1), "sum"),
        lambda L: L.zeros(1).new_empty_strided((2, 3), (1,)),
    ]
    for c in cases:
        same(lambda L: _err(c, L))


def test_unfold_is_a_view():
    def run(L):
        x = L.arange(8.0).reshape(2, 4)
        w = x.unfold(1, 2, 1)
        x[0, 1] = 50.0  # seen through every window holding it
        a = L.ones(5, requires_grad=True)
        u = a.unfold(0, 3, 2)
        return w, w.stride(), w._is_view(), w._base is not None, type(u.grad_fn).__name__ if AGAINST_TORCH else \
            u.grad_fn.name()
    same(run)


def test_unfold_gradient_with_overlap():
    def run(L):
        a = L.arange(6.0, requires_grad=True)
        (a.unfold(0, 3, 1) * L.arange(12.0).reshape(4, 3)).sum().backward()
        return a.grad
    same(run)


# ------------------------------------------------------------------ random fills
N = 200_000


def _stats(t):
    a = t.double()
    return a.mean().item(), a.var().item(), a.min().item(), a.max().item()


def test_uniform_():
    fg.manual_seed(1)
    x = fg.empty(N)
    assert x.uniform_(-2, 3) is x
    m, v, lo, hi = _stats(x)
    assert -2 <= lo and hi < 3
    assert abs(m - 0.5) < 0.03 and abs(v - 25 / 12) < 0.05
    m, v, lo, hi = _stats(fg.empty(N, dtype=fg.float64).uniform_())
    assert 0 <= lo and hi < 1 and abs(m - 0.5) < 0.01


def test_normal_and_log_normal_():
    fg.manual_seed(2)
    m, v, _, _ = _stats(fg.empty(N).normal_(1.5, 2.0))
    assert abs(m - 1.5) < 0.03 and abs(v - 4.0) < 0.1
    y = fg.empty(N, dtype=fg.float64).log_normal_(0.5, 0.25)
    assert y.min().item() > 0
    m, v, _, _ = _stats(y.log())
    assert abs(m - 0.5) < 0.01 and abs(v - 0.0625) < 0.003


def test_exponential_geometric_cauchy_():
    fg.manual_seed(3)
    m, v, lo, _ = _stats(fg.empty(N).exponential_(4.0))
    assert lo >= 0 and abs(m - 0.25) < 0.005 and abs(v - 0.0625) < 0.005
    g = fg.empty(N).geometric_(0.2)
    m, v, lo, _ = _stats(g)
    assert lo == 1 and abs(m - 5) < 0.1 and abs(v - 20) < 1.0
    assert bool((g == g.floor()).all())
    c = fg.empty(N).cauchy_(2.0, 0.5)
    q = c.double().sort().values
    assert abs(q[N // 2].item() - 2.0) < 0.02 and abs(q[3 * N // 4].item() - q[N // 4].item() - 1.0) < 0.04


def test_bernoulli():
    fg.manual_seed(4)
    x = fg.empty(N).bernoulli_(0.3)
    assert set(x.unique().tolist()) == {0.0, 1.0} and abs(x.mean().item() - 0.3) < 0.01
    p = fg.tensor([0.0, 0.5, 1.0]).repeat(N // 3)
    y = fg.empty(p.shape[0]).bernoulli_(p)
    z = fg.bernoulli(p)
    for r in (y, z):
        r = r.reshape(-1, 3)
        assert r[:, 0].sum().item() == 0 and r[:, 2].min().item() == 1
        assert abs(r[:, 1].mean().item() - 0.5) < 0.01
    assert p.bernoulli().dtype == p.dtype and fg.ones(3).bernoulli(0.0).sum().item() == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool"])
def test_random_(dtype):
    dt = getattr(fg, dtype)
    fg.manual_seed(5)
    x = fg.zeros(N // 10, dtype=dt)
    assert x.random_(2) is x and x.dtype == dt
    assert set(x.unique().tolist()) == {0, 1}
    if dtype != "bool":
        y = fg.zeros(N // 10, dtype=dt).random_(3, 7)
        assert set(y.unique().tolist()) == {3, 4, 5, 6}
        z = fg.zeros(N // 10, dtype=dt).random_()
        assert z.double().min().item() >= 0 and z.double().max().item() > 100
        w = fg.zeros(N // 10, dtype=dt).random_(5, None)
        assert w.double().min().item() >= 5


def test_random_fill_follows_manual_seed_and_writes_through_views():
    fg.manual_seed(7)
    a = fg.empty(5, 4).normal_()
    fg.manual_seed(7)
    b = fg.empty(5, 4).normal_()
    assert bool((a == b).all())
    base = fg.zeros(4, 6)
    v = base.t()[::2]          # non-contiguous view
    v.uniform_(1, 2)
    assert bool((base[:, ::2] >= 1).all()) and bool((base[:, 1::2] == 0).all())
    assert base._version == v._version > 0


def test_random_fill_on_non_leaf_gives_zero_gradient():
    def run(L):
        a = L.ones(3, requires_grad=True)
        y = a * 2
        y.normal_()
        (y * 3).sum().backward()
        return y.requires_grad, a.grad
    same(run)


def test_multinomial():
    fg.manual_seed(8)
    p = fg.tensor([0.0, 1.0, 3.0])
    s = p.multinomial(N, replacement=True)
    assert s.dtype == fg.int64 and tuple(s.shape) == (N,)
    c = s.bincount(minlength=3).double() / N
    assert c[0].item() == 0 and abs(c[2].item() - 0.75) < 0.01
    rows = fg.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 5.0, 1.0]])
    w = fg.multinomial(rows, 4)
    assert tuple(w.shape) == (2, 4)
    assert sorted(w[0].tolist()) == [0, 1, 2, 3] and sorted(w[1].tolist()) == [0, 1, 2, 3]
    assert set(w[1, :2].tolist()) == {2, 3}
    # without replacement, first draws follow the weights
    firsts = fg.stack([fg.tensor([1.0, 3.0]).multinomial(1) for _ in range(2000)]).double().mean().item()
    assert abs(firsts - 0.75) < 0.04


def test_random_errors():
    cases = [
        lambda L: L.zeros(4, dtype=L.int64).uniform_(),
        lambda L: L.zeros(4, dtype=L.int64).normal_(),
        lambda L: L.zeros(4).uniform_(2, 1),
        lambda L: L.zeros(4).normal_(0, -1),
        lambda L: L.zeros(4).bernoulli_(1.5),
        lambda L: L.zeros(4).bernoulli_(L.tensor([0.5, 2.0, 0.0, 0.0])),
        lambda L: L.tensor([0.5, 2.0]).bernoulli(),
        lambda L: L.zeros(4).random_(5, 3),
        lambda L: L.zeros(4).random_(-1),
        lambda L: L.zeros(4).exponential_(-1),
        lambda L: L.zeros(4, dtype=L.int64).exponential_(),
        lambda L: L.zeros(4).geometric_(0),
        lambda L: L.zeros(4).geometric_(1),
        lambda L: L.zeros(4).log_normal_(1, 0),
        lambda L: L.zeros(4).cauchy_(0, -1),
        lambda L: L.ones(2, 2, 2).multinomial(1),
        lambda L: L.ones(3).multinomial(0),
        lambda L: L.ones(3).multinomial(4),
        lambda L: L.tensor([1.0, -1.0, 1.0]).multinomial(1),
        lambda L: L.zeros(3).multinomial(1),
        lambda L: L.tensor([1, 0, 0]).multinomial(2),
    ]
    for c in cases:
        same(lambda L: _err(c, L))


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's layout object and its torch-spelled repr")
def test_layout_object():
    assert repr(fg.strided) == "torch.strided" and isinstance(fg.strided, fg.layout)
    assert fg.zeros(2).layout is fg.strided


def test_frexp_roundtrip():
    def run(L):
        x = L.tensor([0.1, -3.0, 1e10, 0.0])
        m, e = L.frexp(x)
        return m, e, L.ldexp(m, e)
    same(run)


def test_math_constant_pi_in_angle():
    assert math.isclose(fg.angle(fg.tensor([-2.0])).item(), math.pi, rel_tol=1e-6)


# ------------------------------------------------------------------ identity and views
def test_grad_is_the_same_object_across_accesses():
    def run(L):
        x = L.ones(3, requires_grad=True)
        (x * 2).sum().backward()
        g = x.grad
        same_now = x.grad is x.grad and x.grad is g
        (x * 3).sum().backward()  # accumulates into the same tensor
        after = x.grad is g
        x.grad = None
        cleared = x.grad is None
        (x * 1).sum().backward()
        fresh = x.grad is not g and x.grad is x.grad
        return same_now, after, cleared, fresh, g
    same(run)


def test_base_and_is_view():
    def run(L):
        x = L.arange(6.0).reshape(2, 3)
        y = x[:, 1:]
        yy = y.t()
        out = [x._is_view(), y._is_view(), yy._is_view(), x.clone()._is_view(), (x * 1)._base is None,
               x.detach()._is_view()]
        for v in (y, yy, x.unsqueeze(0), x.view(6)):
            b = v._base
            out.append((b is not None, tuple(b.shape), b.data_ptr() == x.data_ptr() or b._base is not None))
        return out
    same(run)


@pytest.mark.parametrize("size,stride", [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3, 4), (1, 8, 2)), ((), ()),
                                         ((1, 3), (7, 1)), ((0, 2), (2, 1))])
def test_new_empty_strided(size, stride):
    def run(L):
        y = L.zeros(2, dtype=L.float64).new_empty_strided(size, stride)
        z = L.zeros(1).new_empty_strided(size, stride, dtype=L.int64, requires_grad=False)
        # (the stride of a size-1 dim is not compared: ferrograd's is the dense one)
        st = [s for s, n in zip(y.stride(), size) if n > 1] if y.numel() else None
        return tuple(y.shape), st, y.dtype, z.dtype, z.is_leaf
    same(run)


def test_shape_view_and_tolist_match_torch():
    """x.shape (one Size object may serve tensors of one shape: it follows in-place shape changes
    and takes no attributes), view of plain ints and the general parse, tolist's nesting and types."""
    for L in (fg, torch):
        a = L.ones(2, 3)
        s = a.shape
        assert s == (2, 3) and hash(s) == hash((2, 3)) and type(s[0:1]) is type(s) and L.ones(2, 3).shape == s
        a.t_()
        assert tuple(a.shape) == (3, 2) and tuple(s) == (2, 3)
        with pytest.raises(AttributeError):
            s.foo = 1
        x = L.arange(16.0).reshape(4, 4)
        assert x.view(-1).tolist() == list(map(float, range(16))) and tuple(x.view(2, -1).shape) == (2, 8)
        assert x.view(L.int32).dtype == L.int32 and tuple(x.view((16,)).shape) == (16,)
        for bad in ((True,), (4.0,), (2 ** 70,), (5,)):
            with pytest.raises((TypeError, RuntimeError)):
                x.view(*bad)
        assert L.tensor([[1, 2]]).tolist() == [[1, 2]] and type(L.tensor([[1, 2]]).tolist()[0][0]) is int
        assert L.tensor([True]).tolist() == [True] and L.ones(0, 3).tolist() == [] and L.tensor(2.5).tolist() == 2.5
        assert x.t().tolist() == [list(map(float, range(i, 16, 4))) for i in range(4)]
