"""Parity with torch of the torch functions composed in Python from the engine's ops (python/ferrograd/
_indexing.py: the scatter/index family; _sorting.py: sort, topk, unique, searchsorted; _shape_ops.py:
triangular/diagonal/shape helpers; _linalg_products.py: einsum, tensordot, addmm; _pointwise.py;
_reductions.py): values, gradients and second-order gradients through parity.check_op; errors by
exception kind."""
import inspect
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op, same

I = np.int64
IDX = In(value=np.array([[0, 1, 2, 0], [1, 2, 0, 1]], dtype=I))          # into a (3, 4), dim 0, no duplicates
IDX1 = In(value=np.array([[2, 0, 1], [0, 1, 2]], dtype=I))               # into (2, 4) dim 1, prefix shape (2, 3)
DUP = In(value=np.array([[0, 0, 2, 2], [0, 1, 0, 2], [1, 1, 1, 1]], dtype=I))  # with duplicates
V3 = In(value=np.array([2, 0], dtype=I))

CASES = [
    # scatter / index family
    ("scatter_add", lambda L, x, i, s: L.scatter_add(x, 0, i, s), (In((3, 4)), DUP, In((3, 4)))),
    ("scatter_add-src-bigger", lambda L, x, i, s: x.scatter_add(1, i, s), (In((2, 4)), IDX1, In((3, 5))), {"grad": False}),  # torch's backward fails
    ("scatter_add-T", lambda L, x, i, s: x.scatter_add(0, i, s), (In((3, 4), layout="T"), IDX, In((2, 4), layout="T"))),
    ("scatter", lambda L, x, i, s: L.scatter(x, 0, i, s), (In((3, 4)), IDX, In((2, 4)))),
    ("scatter-dim1", lambda L, x, i, s: x.scatter(1, i, s), (In((2, 4)), IDX1, In((2, 5))), {"grad": False}),  # torch's backward fails
    ("scatter-value", lambda L, x, i: x.scatter(1, i, 2.5), (In((2, 4)), IDX1)),
    ("scatter-reduce-add", lambda L, x, i, s: x.scatter(0, i, s, reduce="add"), (In((3, 4)), DUP, In((3, 4))), {"grad": False}),
    ("scatter_", lambda L, x, i, s: (x * 1).scatter_(0, i, s), (In((3, 4)), IDX, In((2, 4)))),
    ("scatter_add_", lambda L, x, i, s: (x * 1).scatter_add_(0, i, s), (In((3, 4)), DUP, In((3, 4)))),
    ("index_add", lambda L, x, i, s: L.index_add(x, 0, i, s), (In((3, 2)), In(value=np.array([0, 2, 0], dtype=I)), In((3, 2)))),
    ("index_add-alpha-dim1", lambda L, x, i, s: x.index_add(1, i, s, alpha=-2.0), (In((2, 3)), V3, In((2, 2)))),
    ("index_add_", lambda L, x, i, s: (x * 1).index_add_(0, i, s), (In((3, 2)), In(value=np.array([1, 1], dtype=I)), In((2, 2)))),
    ("index_copy", lambda L, x, i, s: L.index_copy(x, 1, i, s), (In((2, 3)), V3, In((2, 2)))),
    ("index_copy_", lambda L, x, i, s: (x * 1).index_copy_(0, i, s), (In((3, 2)), V3, In((2, 2)))),
    ("index_fill", lambda L, x, i: L.index_fill(x, 1, i, -1.5), (In((2, 3)), V3)),
    ("index_fill-tensor-value", lambda L, x, i, v: x.index_fill(0, i, v), (In((3, 2)), V3, In(()))),
    ("index_fill_", lambda L, x, i: (x * 1).index_fill_(0, i, 0.0), (In((3, 2)), V3)),
    ("masked_scatter", lambda L, x, m, s: L.masked_scatter(x, m, s), (In((2, 3)), In((2, 3), dtype="bool"), In((7,)))),
    ("masked_scatter-broadcast", lambda L, x, m, s: x.masked_scatter(m, s), (In((2, 3)), In((3,), dtype="bool"), In((2, 4)))),
    ("masked_scatter_", lambda L, x, m, s: (x * 1).masked_scatter_(m, s), (In((2, 3)), In((2, 3), dtype="bool"), In((6,)))),
    ("take_along_dim", lambda L, x, i: L.take_along_dim(x, i, 1), (In((2, 4)), IDX1)),
    ("take_along_dim-flat", lambda L, x, i: L.take_along_dim(x, i), (In((2, 4)), V3)),
    ("take_along_dim-broadcast", lambda L, x, i: x.take_along_dim(i, 1), (In((3, 4)), In(value=np.array([[3, 0]], dtype=I)))),
    # sort family
    ("sort", lambda L, x: L.sort(x), (In((3, 5)),)),
    ("sort-desc-dim0", lambda L, x: x.sort(0, descending=True), (In((4, 3), layout="T"),)),
    ("sort-stable-ties", lambda L, x: L.sort(x, stable=True), (In((3, 6), domain="ints"),)),
    ("sort-stable-ties-desc", lambda L, x: L.sort(x, descending=True, stable=True), (In((3, 6), domain="ints"),)),
    ("sort-int", lambda L, x: L.sort(x, 0), (In((5, 2), dtype="int64"),)),
    ("sort-0d", lambda L, x: L.sort(x), (In(()),)),
    ("sort-empty", lambda L, x: L.sort(x, 0), (In((0, 3)),)),
    ("argsort", lambda L, x: L.argsort(x, 1, descending=True), (In((3, 5)),)),
    ("topk", lambda L, x: L.topk(x, 2), (In((3, 5)),)),
    ("topk-smallest-dim0", lambda L, x: x.topk(3, 0, largest=False), (In((4, 2)),)),
    ("kthvalue", lambda L, x: L.kthvalue(x, 2), (In((3, 5)),)),
    ("kthvalue-keepdim", lambda L, x: x.kthvalue(3, 0, True), (In((4, 2)),)),
    ("median", lambda L, x: L.median(x), (In((3, 5)),)),
    ("median-dim", lambda L, x: x.median(1), (In((3, 4)),)),
    ("median-dim-keepdim", lambda L, x: L.median(x, 0, keepdim=True), (In((5, 3)),)),
    ("median-nan", lambda L, x: (L.median(x, 1), L.median(x)), (In(value=np.array([[1.0, np.nan, 0.5], [2.0, 0.0, 3.0]])),)),
    ("cummax", lambda L, x: L.cummax(x, 1), (In((3, 5)),)),
    ("cummax-ties", lambda L, x: x.cummax(0), (In((6, 2), domain="ints"),)),
    ("cummin", lambda L, x: L.cummin(x, 0), (In((4, 3)),)),
    ("cummax-nan", lambda L, x: L.cummax(x, 0), (In(value=np.array([1.0, np.nan, 3.0, np.nan, 0.0])),)),
    ("cumprod", lambda L, x: L.cumprod(x, 1), (In((3, 5)),)),
    ("cumprod-zeros", lambda L, x: x.cumprod(0), (In(value=np.array([[2.0, 0.0], [0.0, 3.0], [1.5, -2.0], [0.5, 0.0]])),)),
    ("cumprod-int", lambda L, x: L.cumprod(x, 0), (In((4,), dtype="int64"),)),
    # triangular, diagonal, shape helpers
    ("tril", lambda L, x: L.tril(x), (In((4, 3)),)),
    ("tril-k", lambda L, x: x.tril(-1), (In((2, 3, 4)),)),
    ("triu", lambda L, x: L.triu(x, 1), (In((3, 4), layout="T"),)),
    ("tril_", lambda L, x: (x * 1).tril_(), (In((3, 3)),)),
    ("triu_", lambda L, x: (x * 1).triu_(-1), (In((3, 3)),)),
    ("diag-vec", lambda L, x: L.diag(x), (In((3,)),)),
    ("diag-vec-k", lambda L, x: x.diag(-2), (In((3,)),)),
    ("diag-mat", lambda L, x: L.diag(x, 1), (In((3, 4)),)),
    ("diag_embed", lambda L, x: L.diag_embed(x), (In((2, 3)),)),
    ("diagonal", lambda L, x: L.diagonal(x), (In((3, 4)),)),
    ("diagonal-dims", lambda L, x: x.diagonal(-1, 0, 2), (In((3, 2, 4)),)),
    ("trace", lambda L, x: L.trace(x), (In((3, 4)),)),
    ("trace-int", lambda L, x: x.trace(), (In((3, 3), dtype="int64"),)),
    ("roll", lambda L, x: L.roll(x, 1, 0), (In((3, 4)),)),
    ("roll-multi", lambda L, x: x.roll((-1, 5), (1, 0)), (In((3, 4)),)),
    ("roll-flat", lambda L, x: L.roll(x, 2), (In((3, 4)),)),
    ("tile", lambda L, x: L.tile(x, (2,)), (In((2, 3)),)),
    ("tile-more-dims", lambda L, x: x.tile((2, 1, 2)), (In((2, 3)),)),
    ("repeat_interleave", lambda L, x: L.repeat_interleave(x, 2), (In((2, 3)),)),
    ("repeat_interleave-dim", lambda L, x: x.repeat_interleave(3, dim=1), (In((2, 2)),)),
    ("repeat_interleave-tensor", lambda L, x, r: L.repeat_interleave(x, r, dim=0), (In((3, 2)), In(value=np.array([1, 0, 2], dtype=I)))),
    ("repeat_interleave-repeats-only", lambda L, r: L.repeat_interleave(r), (In(value=np.array([2, 0, 3], dtype=I)),)),
    ("meshgrid-ij", lambda L, a, b: L.meshgrid(a, b, indexing="ij"), (In((3,)), In((2,)))),
    ("meshgrid-xy", lambda L, a, b, c: L.meshgrid([a, b, c], indexing="xy"), (In((3,)), In((2,)), In((4,)))),
    ("diff", lambda L, x: L.diff(x), (In((3, 5)),)),
    ("diff-n2-dim0", lambda L, x: x.diff(n=2, dim=0), (In((5, 2)),)),
    ("diff-prepend-append", lambda L, x, p, a: L.diff(x, 1, -1, p, a), (In((2, 3)), In((2, 1)), In((2, 2)))),
    ("diff-bool", lambda L, x: L.diff(x), (In((6,), dtype="bool"),)),
    ("tensordot", lambda L, a, b: L.tensordot(a, b, 1), (In((2, 3)), In((3, 4)))),
    ("tensordot-lists", lambda L, a, b: L.tensordot(a, b, ([1, 0], [0, 2])), (In((3, 2, 4)), In((2, 5, 3)))),
    ("tensordot-0", lambda L, a, b: L.tensordot(a, b, 0), (In((2,)), In((3,)))),
    ("kron", lambda L, a, b: L.kron(a, b), (In((2, 3)), In((2, 2)))),
    ("kron-ranks", lambda L, a, b: a.kron(b), (In((3,)), In((2, 2)))),
    ("cross", lambda L, a, b: L.cross(a, b, dim=1), (In((2, 3)), In((2, 3)))),
    ("cross-broadcast", lambda L, a, b: a.cross(b, -1), (In((4, 3)), In((1, 3)))),
    # einsum
    ("einsum-mm", lambda L, a, b: L.einsum("ij,jk->ik", a, b), (In((2, 3)), In((3, 4)))),
    ("einsum-bmm", lambda L, a, b: L.einsum("bij,bjk->bik", a, b), (In((2, 2, 3)), In((2, 3, 4)))),
    ("einsum-implicit", lambda L, a, b: L.einsum("ij,kj", a, b), (In((2, 3)), In((4, 3)))),
    ("einsum-outer", lambda L, a, b: L.einsum("i,j->ij", a, b), (In((2,)), In((3,)))),
    ("einsum-dot", lambda L, a, b: L.einsum("i,i->", a, b), (In((3,)), In((3,)))),
    ("einsum-trace-diag", lambda L, a: (L.einsum("ii", a), L.einsum("ii->i", a)), (In((3, 3)),)),
    ("einsum-transpose-sum", lambda L, a: (L.einsum("ijk->kj", a), L.einsum("ijk->", a)), (In((2, 3, 4)),)),
    ("einsum-ellipsis", lambda L, a, b: L.einsum("...ij,...jk->...ik", a, b), (In((2, 2, 3)), In((3, 4)))),
    ("einsum-attention", lambda L, q, k: L.einsum("bhqd,bhkd->bhqk", q, k), (In((2, 2, 3, 4)), In((2, 2, 5, 4)))),
    ("einsum-3", lambda L, a, b, c: L.einsum("ij,jk,kl->il", a, b, c), (In((2, 3)), In((3, 4)), In((4, 2)))),
    ("einsum-3-bilinear", lambda L, a, w, b: L.einsum("bi,oij,bj->bo", a, w, b), (In((2, 3)), In((4, 3, 5)), In((2, 5)))),
    ("einsum-list", lambda L, a, b: L.einsum("ij,ij->i", [a, b]), (In((2, 3)), In((2, 3)))),
    ("einsum-broadcast-1", lambda L, a, b: L.einsum("bij,bjk->bik", a, b), (In((1, 2, 3)), In((4, 3, 2)))),
    # pointwise composites
    ("hypot", lambda L, a, b: L.hypot(a, b), (In((2, 3)), In((3,)))),
    ("lerp", lambda L, a, b: L.lerp(a, b, 0.3), (In((2, 3)), In((2, 3)))),
    ("lerp-hi", lambda L, a, b: a.lerp(b, 0.8), (In((2, 3)), In((2, 3)))),
    ("lerp-tensor-weight", lambda L, a, b, w: L.lerp(a, b, w), (In((2, 3)), In((2, 3)), In((3,), domain="small"))),
    ("addcmul", lambda L, x, a, b: L.addcmul(x, a, b, value=0.5), (In((2, 3)), In((2, 3)), In((3,)))),
    ("addcdiv", lambda L, x, a, b: x.addcdiv(a, b, value=-2), (In((2, 3)), In((2, 3)), In((2, 3), domain="nonzero"))),
    ("addmm", lambda L, x, a, b: L.addmm(x, a, b), (In((2, 4)), In((2, 3)), In((3, 4)))),
    ("addmm-beta-alpha", lambda L, x, a, b: x.addmm(a, b, beta=0.5, alpha=2), (In((4,)), In((2, 3)), In((3, 4)))),
    ("addmm-beta0", lambda L, x, a, b: L.addmm(x, a, b, beta=0), (In((2, 4)), In((2, 3)), In((3, 4)))),
    ("addmv", lambda L, x, a, v: L.addmv(x, a, v, alpha=3), (In((2,)), In((2, 3)), In((3,)))),
    ("baddbmm", lambda L, x, a, b: L.baddbmm(x, a, b, beta=2), (In((2, 2, 4)), In((2, 2, 3)), In((2, 3, 4)))),
    ("addbmm", lambda L, x, a, b: L.addbmm(x, a, b), (In((2, 4)), In((3, 2, 3)), In((3, 3, 4)))),
    ("addr", lambda L, x, a, b: L.addr(x, a, b), (In((2, 3)), In((2,)), In((3,)))),
    ("logaddexp", lambda L, a, b: L.logaddexp(a, b), (In((2, 3)), In((3,)))),
    ("logaddexp-inf", lambda L, a, b: a.logaddexp(b), (In(value=np.array([-np.inf, np.inf, -np.inf, 1.0])), In(value=np.array([-np.inf, np.inf, 2.0, -np.inf]))), {"grad": False}),
    ("logaddexp2", lambda L, a, b: L.logaddexp2(a, b), (In((2, 3)), In((2, 3)))),
    ("fmod", lambda L, a, b: L.fmod(a, b), (In(value=np.array([5.5, -5.5, 5.5, -5.5, 3.0, -4.5])), In(value=np.array([2.0, 2.0, -2.0, -2.0, 1.5, 1.0])))),
    ("fmod-number", lambda L, a: a.fmod(1.5), (In((2, 3), domain="ints"),)),
    ("fmod-int", lambda L, a, b: L.fmod(a, b), (In((6,), dtype="int64"), In((6,), dtype="int64", domain="nonzero"))),
    ("fmod_", lambda L, a: (a * 1).fmod_(2.0), (In(value=np.array([5.5, -5.5, -3.0])),)),
    ("copysign", lambda L, a, b: L.copysign(a, b), (In((2, 3)), In(value=np.array([-1.0, 0.0, -0.0])))),
    ("copysign-number", lambda L, a: (a.copysign(-2.0), a.copysign(0.0)), (In((3,)),)),
    ("xlogy", lambda L, a, b: L.xlogy(a, b), (In(value=np.array([0.0, 1.5, -2.0, 0.0])), In(value=np.array([2.0, 2.0, 0.5, 3.0])))),
    ("xlogy-zero-neg", lambda L, a, b: L.xlogy(a, b), (In(value=np.array([0.0, 1.0])), In(value=np.array([-1.0, 2.0]))), {"double": False}),
    ("xlogy-zero-zero", lambda L, a, b: L.xlogy(a, b), (In(value=np.array([0.0, 0.0, 1.0])), In(value=np.array([0.0, np.inf, np.nan]))), {"grad": False}),
    ("xlogy-number", lambda L, b: L.xlogy(2.0, b), (In((3,), domain="pos"),)),
    ("nan_to_num", lambda L, x: L.nan_to_num(x), (In(value=np.array([np.nan, np.inf, -np.inf, 1.5])),)),
    ("nan_to_num-args", lambda L, x: x.nan_to_num(1.0, 2.0, -3.0), (In(value=np.array([np.nan, np.inf, -np.inf, 1.5]), dtype="float32"),)),
    ("sinc", lambda L, x: L.sinc(x), (In((2, 3)),)),
    ("sinc-zero", lambda L, x: x.sinc(), (In(value=np.array([0.0, 0.5, -1.0])),), {"double": False}),
    # comparisons and reductions
    ("count_nonzero", lambda L, x: (L.count_nonzero(x), x.count_nonzero(1)), (In((3, 4), domain="ints"),)),
    ("isclose", lambda L, a, b: L.isclose(a, a + b * 1e-6), (In((2, 3)), In((2, 3)))),
    ("isclose-nan", lambda L, a, b: (L.isclose(a, b), a.isclose(b, equal_nan=True), L.isclose(a, b, atol=1.0)), (In(value=np.array([np.nan, np.inf, 1.0, -np.inf])), In(value=np.array([np.nan, np.inf, 1.5, np.inf])))),
    ("allclose", lambda L, a: (L.allclose(a, a + 1e-9), a.allclose(a + 1)), (In((2, 3)),)),
    ("equal", lambda L, a, b: (L.equal(a, a.clone()), a.equal(b), L.equal(a, a[:1])), (In((2, 3)), In((2, 3)))),
    ("var_mean", lambda L, x: (L.var_mean(x), L.var_mean(x, 1), L.var_mean(x, 0, keepdim=True, correction=0)), (In((3, 4)),)),
    ("std_mean", lambda L, x: (L.std_mean(x, unbiased=False), L.std_mean(x, (0, 1)), L.std_mean(x, dim=1, keepdim=True)), (In((3, 4)),)),
    ("aminmax", lambda L, x: (L.aminmax(x), x.aminmax(dim=1), L.aminmax(x, dim=0, keepdim=True)), (In((3, 4)),)),
    ("nansum", lambda L, x: (L.nansum(x), x.nansum(1), L.nansum(x, 0, keepdim=True)), (In(value=np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 0.5]])),)),
    ("nanmean", lambda L, x: (L.nanmean(x), x.nanmean(1)), (In(value=np.array([[1.0, np.nan, 2.0], [np.nan, 4.0, 0.5]])),)),
]


def _case(c):
    name, fn, specs = c[:3]
    kw = c[3] if len(c) > 3 else {}
    return pytest.param(fn, specs, kw, id=name)


@pytest.mark.parametrize("fn,specs,kw", [_case(c) for c in CASES])
def test_parity(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *specs, **kw)


def test_float32_cases():
    check_op(lambda L, x, i, s: x.scatter_add(0, i, s), In((3, 4), dtype="float32"), DUP, In((3, 4), dtype="float32"))
    check_op(lambda L, x: L.sort(x, 0), In((4, 3), dtype="float32"))
    check_op(lambda L, a, b: L.einsum("ij,jk->ik", a, b), In((2, 3), dtype="float32"), In((3, 4), dtype="float32"))


def test_grad_fn_present():
    def fn(L):
        x = L.tensor([[1.0, 3.0], [2.0, 0.5]], requires_grad=True)
        i = L.tensor([[1, 0]])
        outs = [L.scatter_add(x, 0, i, x[:1]), L.sort(x).values, L.cumprod(x, 0), L.tril(x), L.einsum("ij->j", x),
                L.logaddexp(x, x), L.index_add(x, 0, i[0], x), x.topk(1).values, L.diag(x)]
        return [o.grad_fn is not None for o in outs]
    same(fn)


def test_no_grad_results():
    def fn(L):
        x = L.tensor([[1.0, 3.0], [2.0, 0.5]], requires_grad=True)
        with L.no_grad():
            return [x.scatter_add(0, L.tensor([[1, 1]]), x).requires_grad, x.cumprod(1), x.sort(0).indices]
    same(fn)


def test_integer_scatter_add_is_exact():
    same(lambda L: L.zeros(3, dtype=L.int64).scatter_add(0, L.tensor([0, 2, 2, 2]),
                                                          L.tensor([2 ** 60, 1, 2 ** 60, 3])))
    same(lambda L: L.zeros(4, dtype=L.int64).index_add(0, L.tensor([1, 1, 3]), L.ones(3, dtype=L.int64)))


def test_inplace_returns_self():
    def fn(L):
        x = L.zeros(2, 3)
        r = [x.scatter_(1, L.tensor([[2], [0]]), 1.0) is x, x.index_fill_(0, L.tensor([1]), 2.0) is x,
             x.tril_() is x, x.scatter_add_(0, L.tensor([[0, 1, 1]]), L.ones(1, 3)) is x]
        return r, x
    same(fn)


def test_inplace_on_leaf_raises():
    x = fg.zeros(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        x.scatter_(0, fg.tensor([[1, 0, 1]]), 1.0)
    with pytest.raises(RuntimeError):
        x.index_add_(0, fg.tensor([0]), fg.ones(1, 3))


def test_meshgrid_warns_without_indexing():
    with pytest.warns(UserWarning):
        fg.meshgrid(fg.arange(2), fg.arange(3))


def _kind(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(lib)
    except Exception as e:  # noqa: BLE001
        for k in (IndexError, TypeError, ValueError, RuntimeError):
            if isinstance(e, k):
                return k.__name__
        return type(e).__name__
    return None


ERRORS = {
    "scatter-dim": lambda L: L.zeros(2, 3).scatter(2, L.tensor([[0]]), 1.0),
    "scatter-oob": lambda L: L.zeros(2, 3).scatter(0, L.tensor([[2]]), 1.0),
    "scatter-neg": lambda L: L.zeros(2, 3).scatter_add(0, L.tensor([[-1]]), L.ones(1, 1)),
    "scatter-float-index": lambda L: L.zeros(2, 3).scatter(0, L.tensor([[0.0]]), 1.0),
    "scatter-rank": lambda L: L.zeros(2, 3).scatter_add(0, L.tensor([0]), L.ones(1)),
    "scatter-index-too-big": lambda L: L.zeros(2, 3).scatter_add(0, L.zeros(2, 4, dtype=L.int64), L.ones(2, 4)),
    "scatter_add-dtype": lambda L: L.zeros(2, 3).scatter_add(0, L.tensor([[0]]), L.ones(1, 1, dtype=L.float64)),
    "index_add-oob": lambda L: L.zeros(2, 3).index_add(0, L.tensor([2]), L.ones(1, 3)),
    "index_add-count": lambda L: L.zeros(2, 3).index_add(0, L.tensor([0, 1]), L.ones(1, 3)),
    "index_add-2d-index": lambda L: L.zeros(2, 3).index_add(0, L.tensor([[0]]), L.ones(1, 3)),
    "index_copy-dim": lambda L: L.zeros(2, 3).index_copy(3, L.tensor([0]), L.ones(1, 3)),
    "index_fill-vector-value": lambda L: L.zeros(2, 3).index_fill(0, L.tensor([0]), L.ones(2)),
    "masked_scatter-not-bool": lambda L: L.zeros(2).masked_scatter(L.ones(2), L.ones(2)),
    "masked_scatter-short": lambda L: L.zeros(3).masked_scatter(L.ones(3, dtype=L.bool), L.ones(2)),
    "take_along_dim-ranks": lambda L: L.zeros(2, 3).take_along_dim(L.tensor([0]), 1),
    "sort-dim": lambda L: L.zeros(2, 3).sort(2),
    "topk-k": lambda L: L.zeros(2, 3).topk(4),
    "kthvalue-k": lambda L: L.zeros(2, 3).kthvalue(4),
    "cummax-dim": lambda L: L.zeros(2, 3).cummax(-3),
    "cumprod-dim": lambda L: L.zeros(2, 3).cumprod(5),
    "tril-1d": lambda L: L.zeros(3).tril(),
    "diagonal-same-dims": lambda L: L.zeros(2, 3).diagonal(0, 1, 1),
    "trace-1d": lambda L: L.zeros(3).trace(),
    "diag-3d": lambda L: L.zeros(2, 2, 2).diag(),
    "roll-misaligned": lambda L: L.zeros(2, 3).roll((1, 2), 0),
    "diff-0d": lambda L: L.tensor(1.0).diff(),
    "tensordot-mismatch": lambda L: L.tensordot(L.zeros(2, 3), L.zeros(2, 3), 1),
    "kron-not-tensor": lambda L: L.kron(L.zeros(2), 3),
    "cross-size": lambda L: L.cross(L.zeros(2, 4), L.zeros(2, 4), dim=1),
    "einsum-operands": lambda L: L.einsum("ij,jk->ik", L.zeros(2, 3)),
    "einsum-rank": lambda L: L.einsum("ijk->i", L.zeros(2, 3)),
    "addmm-rank": lambda L: L.addmm(L.zeros(2, 2), L.zeros(2), L.zeros(2, 2)),
    "isclose-dtypes": lambda L: L.isclose(L.zeros(2), L.zeros(2, dtype=L.int64)),
    "nanmean-int": lambda L: L.nanmean(L.zeros(2, dtype=L.int64)),
    "median-empty-dim": lambda L: L.zeros(2, 0).median(1),
    "repeat_interleave-negative": lambda L: L.zeros(2).repeat_interleave(L.tensor([1, -1])),
    "scatter_add-not-tensor": lambda L: L.scatter_add([1.0], 0, L.tensor([0]), L.ones(1)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_kind(name):
    expected = _kind(ERRORS[name], torch)
    assert expected is not None, f"torch accepts {name}"
    assert _kind(ERRORS[name], fg) == expected


# Small cases (0-d, empty, integer/bool dtypes, NaN order, broadcasting): the same result or the same
# exception kind as torch.
SEMANTICS = {
 "sort-empty1d": lambda L: L.sort(L.zeros(0)),
 "topk-0": lambda L: L.zeros(3).topk(0),
 "cumprod-empty": lambda L: L.zeros(0, 3).cumprod(0),
 "cumprod-0d": lambda L: L.tensor(2.0).cumprod(0),
 "cumprod-bool": lambda L: L.tensor([True, False]).cumprod(0),
 "cumprod-dtype": lambda L: L.tensor([1, 2, 3]).cumprod(0, dtype=L.float64),
 "cummax-empty": lambda L: L.zeros(0).cummax(0),
 "cummax-0d": lambda L: L.tensor(3.0).cummax(0),
 "median-0d": lambda L: L.tensor(3.0).median(),
 "median-int": lambda L: L.tensor([3, 1, 2, 5]).median(),
 "median-even": lambda L: L.tensor([3., 1, 2, 5]).median(),
 "kth-0d": lambda L: L.tensor(3.0).kthvalue(1),
 "einsum-0d": lambda L: L.einsum("i,i", L.arange(3.), L.arange(3.)),
 "einsum-empty": lambda L: L.einsum("ij,jk->ik", L.zeros(2, 0), L.zeros(0, 3)),
 "einsum-spaces": lambda L: L.einsum("i j , j k -> i k", L.ones(2, 3), L.ones(3, 2)),
 "einsum-batch-diag": lambda L: L.einsum("bii->bi", L.arange(18.).reshape(2, 3, 3)),
 "einsum-4op": lambda L: L.einsum("a,b,c,d->abcd", L.ones(2), L.arange(3.), L.ones(1), L.arange(2.)).sum(),
 "einsum-ell-out": lambda L: L.einsum("i...->...", L.arange(6.).reshape(2, 3)),
 "einsum-shared-sum": lambda L: L.einsum("ij,ij->", L.arange(6.).reshape(2, 3), L.ones(2, 3)),
 "einsum-keep-both": lambda L: L.einsum("ij,ik->ijk", L.arange(6.).reshape(2, 3), L.ones(2, 2)),
 "tril-empty": lambda L: L.zeros(0, 3).tril(),
 "tril-int": lambda L: L.ones(3, 3, dtype=L.int64).tril(),
 "tril-bool": lambda L: L.ones(2, 2, dtype=L.bool).triu(),
 "diag-int": lambda L: L.tensor([1, 2]).diag(),
 "diagonal-big-offset": lambda L: L.ones(2, 3).diagonal(5),
 "roll-empty": lambda L: L.zeros(0).roll(1),
 "roll-0d": lambda L: L.tensor(1.).roll(1, 0),
 "repeat_interleave-0d": lambda L: L.tensor(2.).repeat_interleave(3),
 "tile-0d": lambda L: L.tensor(2.).tile((2, 2)),
 "diff-n0": lambda L: L.arange(3.).diff(n=0),
 "diff-int": lambda L: L.tensor([1, 4, 9]).diff(),
 "kron-0d": lambda L: L.kron(L.tensor(2.), L.ones(2)),
 "count_nonzero-tuple": lambda L: L.ones(2, 3).count_nonzero((0, 1)),
 "nansum-int": lambda L: L.tensor([1, 2]).nansum(),
 "nanmean-allnan": lambda L: L.tensor([float("nan")]).nanmean(),
 "isclose-int": lambda L: L.isclose(L.tensor([1, 2]), L.tensor([1, 3])),
 "isclose-bool": lambda L: L.isclose(L.tensor([True]), L.tensor([True])),
 "allclose-bcast": lambda L: L.allclose(L.ones(2, 3), L.ones(3)),
 "equal-dtype": lambda L: L.equal(L.ones(2), L.ones(2, dtype=L.int64)),
 "hypot-f32": lambda L: L.hypot(L.ones(2), L.ones(2)),
 "lerp-tensor-w": lambda L: L.lerp(L.zeros(3), L.ones(3), L.tensor([0., .5, 1.])),
 "addcmul-int": lambda L: L.addcmul(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64), value=2),
 "fmod-neg-int": lambda L: L.fmod(L.tensor([-7, 7]), 3),
 "fmod-zero": lambda L: L.fmod(L.tensor([1.0, -1.0]), 0.0),
 "fmod-scalar-tensor": lambda L: L.fmod(L.tensor([-7.5, 7.5]), L.tensor(2.0)),
 "copysign-int": lambda L: L.copysign(L.tensor([1, -2]), L.tensor([-1, 1])),
 "copysign-f32-f64": lambda L: L.copysign(L.ones(2), L.tensor([-1., 1.], dtype=L.float64)),
 "xlogy-int": lambda L: L.xlogy(L.tensor([1, 0]), L.tensor([2, 0])),
 "sinc-int": lambda L: L.sinc(L.tensor([0, 1, 2])),
 "nan_to_num-int": lambda L: L.tensor([1, 2]).nan_to_num(),
 "var_mean-f32": lambda L: L.var_mean(L.arange(6.).reshape(2, 3), 1),
 "aminmax-int": lambda L: L.tensor([[3, 1], [2, 5]]).aminmax(dim=0),
 "aminmax-0d": lambda L: L.tensor(2.).aminmax(),
 "scatter-0d": lambda L: L.tensor(1.).scatter(0, L.tensor(0), L.tensor(5.)),
 "scatter_add-int": lambda L: L.zeros(3, dtype=L.int64).scatter_add(0, L.tensor([0, 0]), L.tensor([1, 2])),
 "scatter-dup": lambda L: L.zeros(3).scatter(0, L.tensor([1, 1, 1]), L.tensor([1., 2., 3.])),
 "scatter-value-int": lambda L: L.zeros(2, 2, dtype=L.int64).scatter(1, L.tensor([[1], [0]]), 7),
 "index_add-0d": lambda L: L.tensor(1.).index_add(0, L.tensor([0]), L.tensor([2.])),
 "index_add-int": lambda L: L.zeros(3, dtype=L.int64).index_add(0, L.tensor([0, 0]), L.tensor([1, 2]), alpha=3),
 "index_fill-neg-dim": lambda L: L.zeros(2, 3).index_fill(-1, L.tensor([0, 2]), 1.),
 "index_fill-bool": lambda L: L.zeros(2, 3, dtype=L.bool).index_fill(1, L.tensor([1]), True),
 "index_copy-0d-index": lambda L: L.zeros(3, 2).index_copy(0, L.tensor(1), L.ones(1, 2)),
 "masked_scatter-0": lambda L: L.zeros(3).masked_scatter(L.zeros(3, dtype=L.bool), L.ones(0)),
 "take_along_dim-neg-dim": lambda L: L.arange(6.).reshape(2, 3).take_along_dim(L.tensor([[2], [0]]), -1),
 "meshgrid-1": lambda L: L.meshgrid(L.arange(3), indexing="xy"),
 "meshgrid-0d": lambda L: L.meshgrid(L.tensor(1.), L.arange(2.), indexing="ij"),
 "cross-int": lambda L: L.cross(L.tensor([1, 0, 0]), L.tensor([0, 1, 0]), dim=0),
 "tensordot-neg": lambda L: L.tensordot(L.ones(2, 3), L.ones(3, 2), dims=([-1], [0])),
 "addmm-int": lambda L: L.addmm(L.ones(2, 2, dtype=L.int64), L.ones(2, 2, dtype=L.int64), L.ones(2, 2, dtype=L.int64)),
 "logaddexp-f32": lambda L: L.logaddexp(L.tensor([1., 2.]), L.tensor([1., -1e30])),
 "argsort-bool": lambda L: L.tensor([True, False, True]).argsort(stable=True),
 "sort-nan": lambda L: L.tensor([1., float("nan"), 0.]).sort(descending=True),
 "sort-nan-asc": lambda L: L.tensor([1., float("nan"), 0.]).sort(),
 "topk-nan": lambda L: L.tensor([1., float("nan"), 0.]).topk(2),
}


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_semantics(name):
    fn = SEMANTICS[name]
    expected = _kind(fn, torch)
    assert _kind(fn, fg) == expected
    if expected is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same(fn, rtol=1e-6, atol=1e-8)


CASES3 = [
    ("index_put", lambda L, x, v: L.index_put(x, (L.tensor([0, 2]), L.tensor([1, 0])), v), (In((3, 2)), In((2,)))),
    ("index_put-accumulate", lambda L, x, v: x.index_put((L.tensor([0, 0, 2]),), v, accumulate=True), (In((3, 2)), In((3, 2)))),
    ("index_put-accumulate-bcast", lambda L, x, v: x.index_put((L.tensor([1, 1]), L.tensor([0, 0])), v, True), (In((3, 2)), In(()))),
    ("index_put_-accumulate-mask", lambda L, x, v: (x * 1).index_put_((L.tensor([True, False, True]),), v, accumulate=True), (In((3, 2)), In((2,)))),
    ("take", lambda L, x: (L.take(x, L.tensor([[0, 5], [-1, 2]])), x.take(L.tensor(3))), (In((2, 3)),)),
]


@pytest.mark.parametrize("fn,specs,kw", [_case(c) for c in CASES3])
def test_parity_3(fn, specs, kw):
    check_op(fn, *specs, **kw)


def test_index_put_accumulate_int_and_errors():
    same(lambda L: L.zeros(3, dtype=L.int64).index_put_((L.tensor([0, 0, 2]),), L.tensor([2 ** 60, 1, 3]), True))
    for fn in (lambda L: L.zeros(3).index_put_((L.tensor([3]),), L.ones(1), True),
               lambda L: L.zeros(3).index_put_((L.tensor([0]),), L.ones(1, dtype=L.float64)),
               lambda L: L.zeros(3).take(L.tensor([3])),
               lambda L: L.zeros(3).take(L.tensor([0.0]))):
        assert _kind(fn, fg) == _kind(fn, torch) is not None


# ops of the second batch: set-like/search ops (not differentiable), shape helpers, pointwise
CASES2 = [
    ("rot90", lambda L, x: (L.rot90(x), x.rot90(2), L.rot90(x, 3, [1, 0]), x.rot90(-1, (0, 1))), (In((2, 3)),)),
    ("fliplr-flipud", lambda L, x: (L.fliplr(x), x.flipud()), (In((2, 3)),)),
    ("block_diag", lambda L, a, b, c: L.block_diag(a, b, c), (In((2, 2)), In((3,)), In(()))),
    ("cartesian_prod", lambda L, a, b: L.cartesian_prod(a, b), (In((2,)), In((3,)))),
    ("logcumsumexp", lambda L, x: L.logcumsumexp(x, 1), (In((2, 4)),)),
    ("logcumsumexp-dim0-far", lambda L, x: x.logcumsumexp(0), (In(value=np.array([[-1000.0, 1.0], [0.0, 2.0], [3.0, -5.0]])),)),
    ("cdist", lambda L, a, b: L.cdist(a, b), (In((3, 2)), In((4, 2)))),
    ("cdist-p1-batched", lambda L, a, b: L.cdist(a, b, p=1.0), (In((2, 3, 2)), In((2, 4, 2))), {"double": False}),
    ("trapezoid", lambda L, y: (L.trapezoid(y), L.trapezoid(y, dx=0.5, dim=0)), (In((3, 4)),)),
    ("trapezoid-x", lambda L, y, x: L.trapezoid(y, x), (In((2, 4)), In((4,)))),
    ("frac", lambda L, x: L.frac(x * 3), (In((2, 3)),)),
    ("deg2rad-rad2deg", lambda L, x: (L.deg2rad(x), x.rad2deg()), (In((2, 3)),)),
    ("log10", lambda L, x: L.log10(x), (In((2, 3), domain="pos"),)),
    ("exp2", lambda L, x: x.exp2(), (In((2, 3)),)),
    ("logit", lambda L, x: (L.logit(x), x.logit(eps=0.2)), (In(value=np.array([0.1, 0.5, 0.7, 0.95])),)),
    ("float_power", lambda L, x, e: (L.float_power(x, e), x.float_power(2), L.float_power(2, e)), (In((3,), domain="pos", dtype="float32"), In((3,)))),
    ("positive", lambda L, x: L.positive(x), (In((2,)),)),
]


@pytest.mark.parametrize("fn,specs,kw", [_case(c) for c in CASES2])
def test_parity_2(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *specs, **kw)


SEMANTICS_2 = {
    "unique": lambda L: L.unique(L.tensor([3, 1, 3, 2, 1])),
    "unique-all": lambda L: L.tensor([[3., 1.], [3., 0.]]).unique(return_inverse=True, return_counts=True),
    "unique-dim": lambda L: L.unique(L.tensor([[1, 2], [0, 5], [1, 2]]), dim=0, return_inverse=True),
    "unique_consecutive": lambda L: L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1]), return_inverse=True,
                                                         return_counts=True),
    "unique_consecutive-dim": lambda L: L.tensor([[1, 1, 2], [1, 1, 3]]).unique_consecutive(dim=1, return_counts=True),
    "searchsorted": lambda L: L.searchsorted(L.tensor([1., 3., 5., 7.]), L.tensor([[3., 6.], [0., 9.]])),
    "searchsorted-right": lambda L: L.searchsorted(L.tensor([1, 3, 5]), L.tensor([3, 5]), right=True),
    "searchsorted-side": lambda L: L.searchsorted(L.tensor([1, 3, 5]), L.tensor([3]), side="right"),
    "searchsorted-scalar": lambda L: L.searchsorted(L.tensor([1., 3., 5.]), 4.0),
    "searchsorted-batched": lambda L: L.searchsorted(L.tensor([[1, 3], [2, 4]]), L.tensor([[2], [5]])),
    "searchsorted-bad-batch": lambda L: L.searchsorted(L.tensor([[1, 3], [2, 4]]), L.tensor([[2]])),
    "bucketize": lambda L: L.bucketize(L.tensor([0.5, 3., 9.]), L.tensor([1., 3., 5.])),
    "bucketize-right": lambda L: L.bucketize(L.tensor([3, 5]), L.tensor([1, 3, 5]), right=True),
    "bincount": lambda L: L.bincount(L.tensor([0, 2, 2, 5])),
    "bincount-weights": lambda L: L.tensor([0, 2, 2]).bincount(L.tensor([0.5, 1., 2.]), minlength=5),
    "bincount-negative": lambda L: L.bincount(L.tensor([-1, 2])),
    "bincount-float": lambda L: L.bincount(L.tensor([1.0])),
    "isin": lambda L: L.isin(L.tensor([[1, 2], [3, 4]]), L.tensor([2, 3])),
    "isin-invert-scalar": lambda L: L.isin(L.tensor([1, 2]), 2, invert=True),
    "argwhere": lambda L: L.argwhere(L.tensor([[1, 0], [0, 3]])),
    "triu_indices": lambda L: (L.triu_indices(3, 4), L.triu_indices(3, 3, 1), L.tril_indices(4, 3, -1)),
    "signbit": lambda L: L.signbit(L.tensor([-0.0, 0.0, -1.0, 2.0])),
    "heaviside": lambda L: L.heaviside(L.tensor([-1.0, 0.0, 2.0]), L.tensor([0.5])),
    "rot90-1d": lambda L: L.rot90(L.zeros(3)),
    "rot90-same-dims": lambda L: L.rot90(L.zeros(2, 2), 1, (0, 0)),
    "fliplr-1d": lambda L: L.fliplr(L.zeros(3)),
    "block_diag-int-float": lambda L: L.block_diag(L.tensor([[1, 2]]), L.tensor([3.0])),
    "block_diag-3d": lambda L: L.block_diag(L.zeros(1, 1, 1)),
    "cartesian_prod-1": lambda L: L.cartesian_prod(L.tensor([1, 2])),
    "cdist-cols": lambda L: L.cdist(L.zeros(2, 3), L.zeros(2, 2)),
    "positive-bool": lambda L: L.positive(L.tensor([True])),
    "exp2-int": lambda L: L.exp2(L.tensor([1, 3])),
    "deg2rad-int": lambda L: L.deg2rad(L.tensor([180])),
}


@pytest.mark.parametrize("name", sorted(SEMANTICS_2))
def test_semantics_2(name):
    fn = SEMANTICS_2[name]
    expected = _kind(fn, torch)
    assert _kind(fn, fg) == expected
    if expected is None:
        same(fn, rtol=1e-6, atol=1e-8)


SORT_DATA = {
    "nan_and_ties": [[3.0, float("nan"), 1.0, 3.0, -0.0, 0.0, float("nan"), float("-inf")], [1.0] * 8],
    "bools": [[True, False, True, False], [False, False, True, True]],
    "int_big": [[2 ** 62, -2 ** 62, 2 ** 62 - 1, 5], [0, 0, -1, 1]],
}


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("data", SORT_DATA.values(), ids=SORT_DATA.keys())
def test_sort_argsort_topk_orders_like_torch(data, descending):
    """NaN after numbers ascending and first descending, ties in their original order, bools and
    int64 beyond float64's integers; on 2-d, 3-d (middle dim) and transposed inputs."""
    def run(L):
        x = L.tensor(data)
        out = []
        for t, d in ((x, 1), (x, 0), (x.t(), 0), (x.reshape(2, 2, -1), 1)):
            s = t.sort(dim=d, descending=descending, stable=True)
            k = t.topk(2, d, largest=descending) if t.dtype != L.bool else None
            # (topk's order among equal values is unspecified in torch: values, and indices that
            # point at them)
            out.append((s.values.tolist(), s.indices.tolist(), t.argsort(d, descending=descending).tolist(),
                        None if k is None else (k.values.tolist(), repr(t.gather(d, k.indices).tolist()) == repr(k.values.tolist()))))
        return repr(out)  # (repr: NaN == NaN)
    assert run(fg) == run(torch)


def _result(fn, L):
    try:
        r = fn(L)
    except Exception as e:  # noqa: BLE001 (the kind is compared)
        return type(e).__name__
    ts = r if isinstance(r, tuple) else (r,)
    return [(str(t.dtype).split(".")[-1], tuple(t.shape), np.round(np.array(t.tolist(), dtype=float), 4).tolist())
            for t in ts]


def test_topk_calls_match_torch():
    """topk's common calls (one call into the engine) and those of the general path, as a function
    and as a method: k at 0 and at the dim's size, dims from either end, largest and sorted by
    position and keyword; k out of range, a dim out of range."""
    x = np.random.RandomState(0).randn(3, 5).astype(np.float32)
    calls = [((2,), {}), ((2, 0), {}), ((2,), dict(dim=0)), ((2,), dict(largest=False)), ((2, -1, False), {}),
             ((0,), {}), ((5,), {}), ((2, 1, True, False), {}), ((2,), dict(sorted=False, dim=-2)),
             ((6,), {}), ((-1,), {}), ((2, 2), {}), ((2, -3), {})]
    for args, kw in calls:
        for fn in (lambda L: L.tensor(x).topk(*args, **kw), lambda L: L.topk(L.tensor(x), *args, **kw)):
            assert _result(fn, fg) == _result(fn, torch), (args, kw)
    # the indices are a new contiguous tensor, as torch's (strides of a size-1 dim, k of 0)
    for L in (fg, torch):
        assert L.tensor([[3, 1, 2]]).topk(2).indices.stride() == (2, 1)
        assert L.ones(2, 3, 4).topk(2, 1).indices.stride() == (8, 4, 1)
        assert L.tensor(x).topk(0).indices.shape == (3, 0)
    # the values' gradient, and the method's signature
    a, b = fg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a.topk(2)[0].sum().backward()
    b.topk(2)[0].sum().backward()
    assert a.grad.tolist() == b.grad.tolist()
    if not AGAINST_TORCH:
        assert list(inspect.signature(fg.Tensor.topk).parameters) == ["self", "k", "dim", "largest", "sorted"]


EINSUM_CASES = [("ij,jk->ik", "mn"), ("ij,jk", "mn"), ("bij,bjk->bik", "ab"), ("bij,bjk->bki", "ab"), ("ij,j->i", "mv"),
                ("i,i->", "vv"), ("i,j->ij", "vw"), ("ij,kj->ik", "mn"), ("ij,ij->ij", "mn"), ("ij,ij->ji", "mn"),
                ("ij,jk->ki", "mn"), ("ij , jk -> ik", "mn"), ("ij,jk->k", "mn"), ("Ab,bC->AC", "mn"), ("bij,bjk", "ab"),
                ("ij,ij->", "mn"), ("ij,jk->ik", "zm"),
                # the general path: ellipsis, repeated labels, broadcasting, sums in one operand, errors
                ("ii,ij->ij", "mn"), ("...j,jk->...k", "mn"), ("ij,jk->ik", "mo"), ("ij,jk->ik", "on"), ("ij,jk->", "mn"),
                ("ij,jk,kl->il", "mnm"), ("ij,jk->ik", "mv"), ("ij,jk->ik", "ma")]


@pytest.mark.parametrize("eq,idx", [("b1j,bjk->bk", 1), ("b i1,bik->bk", 3), ("bij,bj-k->bk", 6),
                                    ("bij,bjk->b_", 10), ("bij;bjk->bk", 3)])
def test_einsum_invalid_subscript(eq, idx):
    for L in (fg, torch):
        with pytest.raises(RuntimeError, match=f"einsum\\(\\): invalid subscript given at index {idx} in the equation "
                                               r"string, subscripts must be in \[a-zA-Z\]"):
            L.einsum(eq, L.ones(2, 3, 4), L.ones(2, 4, 5))


@pytest.mark.parametrize("eq,names", EINSUM_CASES)
def test_einsum_two_operands_match_torch(eq, names):
    """einsum of two operands in one bmm (a plan per equation and shapes) and through the general
    path: values, shape, dtype and the operands' gradients as torch's; the same call twice (the
    second from the plan)."""
    rs = np.random.RandomState(1)
    data = {"a": rs.randn(2, 3, 4), "b": rs.randn(2, 4, 5), "m": rs.randn(4, 4), "n": rs.randn(4, 4), "v": rs.randn(4),
            "w": rs.randn(3), "o": rs.randn(1, 4), "z": rs.randn(0, 4)}

    def run(L):
        ops = [L.tensor(data[c], dtype=L.float32, requires_grad=True) for c in names]
        try:
            r = L.einsum(eq, *ops)
        except RuntimeError:
            return "RuntimeError"
        (r * r).sum().backward()
        return [str(r.dtype).split(".")[-1], tuple(r.shape), r.detach().numpy()] + [o.grad.numpy() for o in ops]
    for _ in range(2):
        a, b = run(fg), run(torch)
        assert type(a) is type(b) and len(a) == len(b)
        if isinstance(a, list):
            assert a[:2] == b[:2]
            for u, v in zip(a[2:], b[2:]):
                np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k", [2.0, True, "2", None])
def test_topk_k_must_be_an_int(k):
    for L in (torch, fg):
        with pytest.raises(TypeError, match=f"topk\\(\\): argument 'k' .*must be int, not {type(k).__name__}"):
            L.ones(5).topk(k)
    with pytest.raises(TypeError, match="argument 'dim' .*must be int, not float"):
        fg.ones(5).topk(2, 1.0)
    assert fg.ones(5).topk(np.int64(2)).values.shape == (2,)
