"""Parity with torch of the shape functions (python/ferrograd/_shape_ops.py: broadcasting and stacking
helpers, splits, unflatten/moveaxis, diagflat/combinations), and of put, inner/vdot/dist/renorm/
chain_matmul and the order statistics nanmedian/mode/quantile/nanquantile/histc: values, gradients and
second-order gradients through parity.check_op; errors by exception type and message."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op, error_kind, raised, same, same_semantics

I = np.int64
NAN = np.nan

CASES = [
    # broadcasting and stacking
    ("broadcast_tensors", lambda L, a, b, c: L.broadcast_tensors(a, b, c), (In((2, 1, 3)), In((4, 1)), In(()))),
    ("broadcast_tensors-one", lambda L, a: L.broadcast_tensors(a), (In((2, 3)),)),
    ("atleast_1d", lambda L, a, b: (L.atleast_1d(a), L.atleast_1d(a, b), L.atleast_1d([b])), (In(()), In((2, 3)))),
    ("atleast_2d", lambda L, a, b, c: (L.atleast_2d(a), L.atleast_2d((a, b, c))), (In(()), In((3,)), In((2, 2, 2)))),
    ("atleast_3d", lambda L, a, b, c, d: L.atleast_3d(a, b, c, d), (In(()), In((3,)), In((2, 3), layout="T"), In((1, 2, 2, 1)))),
    ("hstack", lambda L, a, b: L.hstack([a, b]), (In((2, 3)), In((2, 1)))),
    ("hstack-1d", lambda L, a, b, c: L.hstack((a, b, c)), (In((3,)), In(()), In((2,)))),
    ("vstack", lambda L, a, b: L.vstack([a, b]), (In((3,)), In((2, 3), layout="T"))),
    ("row_stack", lambda L, a, b: L.row_stack([a, b]), (In((2, 3)), In((1, 3)))),
    ("dstack", lambda L, a, b, c: L.dstack([a, b, c]), (In((2, 3)), In((2, 3, 2)), In((2, 3)))),
    ("dstack-1d", lambda L, a, b: L.dstack([a, b]), (In((3,)), In((3,)))),
    ("column_stack", lambda L, a, b, c: L.column_stack([a, b, c]), (In((3,)), In((3, 2)), In((3,), layout="step"))),
    # splitting
    ("tensor_split-sections", lambda L, x: L.tensor_split(x, 3), (In((7, 2)),)),
    ("tensor_split-indices", lambda L, x: x.tensor_split([1, 4], dim=1), (In((2, 6)),)),
    ("tensor_split-unordered", lambda L, x: L.tensor_split(x, (3, 1, -1, 9)), (In((5,)),)),
    ("tensor_split-tensor", lambda L, x: (L.tensor_split(x, L.tensor([1, 3])), L.tensor_split(x, L.tensor(2))), (In((4, 2)),)),
    ("tensor_split-more-sections", lambda L, x: x.tensor_split(5, -1), (In((2, 3)),)),
    ("hsplit", lambda L, x: (L.hsplit(x, 2), x.hsplit([1, 3])), (In((2, 4)),)),
    ("hsplit-1d", lambda L, x: L.hsplit(x, 3), (In((6,)),)),
    ("vsplit", lambda L, x: (L.vsplit(x, 2), x.vsplit([1])), (In((4, 3), layout="T"),)),
    ("dsplit", lambda L, x: (L.dsplit(x, 2), x.dsplit([3])), (In((2, 1, 4)),)),
    # shape helpers
    ("moveaxis", lambda L, x: (L.moveaxis(x, 0, -1), x.moveaxis((0, 1), (2, 0))), (In((2, 3, 4)),)),
    ("swapdims", lambda L, x: (L.swapdims(x, 0, 2), x.swapdims(-1, 1)), (In((2, 3, 4)),)),
    ("unflatten", lambda L, x: (L.unflatten(x, 1, (2, 3)), x.unflatten(-1, (3, -1)), x.unflatten(0, [2])), (In((2, 6)),)),
    ("unflatten-T", lambda L, x: x.unflatten(0, (2, 2)).sum(-1), (In((4, 3), layout="T"),)),
    ("diagflat", lambda L, x: (L.diagflat(x), x.diagflat(1), L.diagflat(x, -2)), (In((2, 2)),)),
    ("combinations", lambda L, x: (L.combinations(x), L.combinations(x, 3), L.combinations(x, with_replacement=True)), (In((4,)),)),
    ("combinations-r1", lambda L, x: L.combinations(x, 1), (In((3,)),)),
    ("put", lambda L, x, s: (L.put(x, L.tensor([[0, 5], [-1, 2]]), s), x.put(L.tensor([1, 1]), s[0], accumulate=True)), (In((2, 3)), In((2, 2)))),
    ("put_", lambda L, x, s: (x * 1).put_(L.tensor([4, 0, -2]), s), (In((2, 3), layout="T"), In((3,)))),
    ("put_-accumulate", lambda L, x, s: (x * 1).put_(L.tensor([0, 0, 3]), s, accumulate=True), (In((2, 2)), In((3,)))),
    # products and distances
    ("inner", lambda L, a, b: L.inner(a, b), (In((2, 3)), In((4, 3)))),
    ("inner-1d-3d", lambda L, a, b: a.inner(b), (In((3,)), In((2, 2, 3), layout="T"))),
    ("inner-0d", lambda L, a, b: L.inner(a, b), (In(()), In((2, 3)))),
    ("vdot", lambda L, a, b: (L.vdot(a, b), a.vdot(b)), (In((4,)), In((4,), layout="step"))),
    ("dist", lambda L, a, b: (L.dist(a, b), a.dist(b, 1), L.dist(a, b, 3.5), L.dist(a, b, float("inf"))), (In((2, 3)), In((3,)))),
    ("renorm", lambda L, x: (L.renorm(x, 2, 0, 1.0), x.renorm(1, 1, 2.5)), (In((3, 4)),)),
    ("renorm-3d", lambda L, x: L.renorm(x, 3, -1, 0.8), (In((2, 3, 2)),)),
    ("renorm_", lambda L, x: (x * 1).renorm_(2, 1, 0.5), (In((3, 2)),)),
    ("chain_matmul", lambda L, a, b, c: L.chain_matmul(a, b, c), (In((2, 3)), In((3, 4)), In((4, 2)))),
    # reductions
    ("nanmedian", lambda L, x: (L.nanmedian(x), x.nanmedian(1), L.nanmedian(x, 0, keepdim=True)), (In(value=np.array([[1.0, NAN, 3.0, 2.0], [NAN, 2.5, NAN, NAN], [0.5, -1.0, NAN, 4.0]])),)),
    ("nanmedian-no-nan", lambda L, x: (L.nanmedian(x), x.nanmedian(-1)), (In((3, 5)),)),
    ("nanmedian-T", lambda L, x: x.nanmedian(0), (In((4, 3), layout="T"),)),
    ("mode", lambda L, x: (L.mode(x), x.mode(0), L.mode(x, 1, keepdim=True)), (In((4, 5), domain="ints"),)),
    ("mode-ties", lambda L, x: L.mode(x), (In(value=np.array([[3.0, 1.0, 3.0, 1.0], [2.0, 2.0, 5.0, 5.0], [1.0, 2.0, 2.0, 3.0]])),)),
    ("mode-int", lambda L, x: L.mode(x, 0), (In((6, 2), dtype="int64"),)),
    ("quantile", lambda L, x: (L.quantile(x, 0.3), x.quantile(0.5, 1), L.quantile(x, 0.75, 0, keepdim=True)), (In((4, 5)),)),
    ("quantile-q-tensor", lambda L, x, q: (L.quantile(x, q), L.quantile(x, q, dim=1, keepdim=True)), (In((3, 4)), In(value=np.array([0.0, 0.25, 0.6, 1.0]), grad=False))),
    ("quantile-interpolation", lambda L, x: tuple(L.quantile(x, 0.4, 1, interpolation=m) for m in ("linear", "lower", "higher", "midpoint", "nearest")), (In((3, 6)),)),
    ("quantile-nearest-half", lambda L, x: (L.quantile(x, 0.5, interpolation="nearest"), L.quantile(x, 0.125, interpolation="nearest")), (In((5,)),)),
    ("quantile-nan", lambda L, x: (L.quantile(x, 0.5, 1), L.nanquantile(x, 0.5, 1), L.nanquantile(x, 0.2)), (In(value=np.array([[1.0, NAN, 3.0, 2.0], [NAN, 2.5, 1.0, 0.0], [0.5, -1.0, 7.0, 4.0]])),)),
    ("nanquantile", lambda L, x: (L.nanquantile(x, 0.9, 0), x.nanquantile(0.1)), (In((4, 3), layout="T"),)),
    ("quantile-0d", lambda L, x: (L.quantile(x, 0.5), L.quantile(x, 0.5, 0), L.quantile(x, 0.5, 0, keepdim=True)), (In(()),)),
    ("quantile-keepdim-all", lambda L, x: L.quantile(x, 0.5, keepdim=True), (In((2, 3)),)),
    ("histc", lambda L, x: (L.histc(x), x.histc(4, -1, 1), L.histc(x, 3, 5, 6)), (In((3, 5)),)),
    ("histc-edges", lambda L, x: (L.histc(x, 4, 0, 4), L.histc(x, 5)), (In(value=np.array([0.0, 1.0, 2.0, 3.0, 4.0, 4.0, -1.0, 5.0])),)),
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


@pytest.mark.parametrize("name", ["hstack", "tensor_split-indices", "renorm", "quantile", "nanmedian-no-nan", "inner"])
def test_float32(name):
    fn, specs = next((c[1], c[2]) for c in CASES if c[0] == name)
    check_op(fn, *[s.with_dtype("float32") if s.is_float else s for s in specs])


SEMANTICS = {
    "broadcast_shapes": lambda L: L.broadcast_shapes((2, 1), (3,), 1, ()),
    "broadcast_tensors-empty": lambda L: L.broadcast_tensors(L.zeros(0, 1), L.ones(3)),
    "broadcast_tensors-none": lambda L: L.broadcast_tensors(),
    "atleast_1d-none": lambda L: L.atleast_1d(),
    "atleast_2d-int": lambda L: L.atleast_2d(L.tensor(3)),
    "hstack-int": lambda L: L.hstack([L.tensor([1, 2]), L.tensor([3])]),
    "vstack-promote": lambda L: L.vstack([L.tensor([1, 2]), L.tensor([0.5, 1.0])]),
    "tensor_split-empty": lambda L: L.zeros(0, 2).tensor_split(3),
    "tensor_split-views": lambda L: [t._base is not None if hasattr(t, "_base") else True for t in L.arange(6.).tensor_split(2)],
    "unflatten-0d-dim": lambda L: L.arange(6.).unflatten(-1, (2, 3)),
    "unflatten-empty": lambda L: L.zeros(0, 2).unflatten(0, (0, 5)),
    "moveaxis-0d": lambda L: L.tensor(2.).moveaxis(0, 0),
    "diagflat-0d": lambda L: L.diagflat(L.tensor(3.)),
    "combinations-r0": lambda L: L.combinations(L.arange(3.), 0),
    "combinations-big-r": lambda L: L.combinations(L.arange(3.), 4),
    "combinations-int": lambda L: L.combinations(L.arange(4), 2, with_replacement=True),
    "combinations-empty": lambda L: L.combinations(L.zeros(0)),
    "put-int": lambda L: L.zeros(2, 2, dtype=L.int64).put(L.tensor([3, 3]), L.tensor([1, 2]), accumulate=True),
    "put-empty-index": lambda L: L.ones(2).put(L.tensor([], dtype=L.int64), L.ones(0)),
    "put_-returns-self": lambda L: (lambda x: x.put_(L.tensor([1]), L.tensor([5.])) is x)(L.zeros(3)),
    "inner-int": lambda L: L.inner(L.tensor([1, 2]), L.tensor([[3, 4]])),
    "vdot-int": lambda L: L.vdot(L.tensor([1, 2]), L.tensor([3, 4])),
    "dist-zero": lambda L: L.dist(L.ones(3), L.ones(3)),
    "dist-0": lambda L: L.dist(L.tensor([1., 2., 3.]), L.tensor([1., 0., 0.]), 0),
    "renorm-below": lambda L: L.renorm(L.ones(2, 2) * 0.1, 2, 0, 5.0),
    "chain_matmul-one": lambda L: L.chain_matmul(L.ones(2, 3)),
    "nanmedian-0d": lambda L: L.tensor(2.).nanmedian(),
    "nanmedian-0d-dim": lambda L: L.tensor(2.).nanmedian(0),
    "nanmedian-empty": lambda L: L.zeros(0).nanmedian(),
    "nanmedian-int": lambda L: L.tensor([[3, 1, 2, 5]]).nanmedian(1),
    "nanmedian-all-nan": lambda L: L.tensor([float("nan")] * 3).nanmedian(),
    # (the index of an all-NaN row's nanmedian is not pinned: torch's comes from an out-of-range nth_element)
    "nanmedian-all-nan-dim": lambda L: L.tensor([[float("nan")] * 3, [1.0, 2.0, 3.0]]).nanmedian(1).values,
    "nanquantile-all-nan": lambda L: L.tensor([[float("nan")] * 3, [1.0, 2.0, 3.0]]).nanquantile(0.3, 1),
    "mode-0d": lambda L: L.tensor(2.).mode(),
    "mode-1d": lambda L: L.tensor([1., 2, 2, 3, 3, 1]).mode(),
    "mode-bool": lambda L: L.tensor([True, False, True]).mode(),
    "quantile-f32": lambda L: L.quantile(L.arange(10.), L.tensor([0.1, 0.5])),
    "quantile-dim-neg": lambda L: L.arange(12.).reshape(3, 4).quantile(0.5, -2),
    "histc-empty": lambda L: L.zeros(0).histc(4),
    "histc-constant": lambda L: L.ones(3).histc(4),
    "histc-f64": lambda L: L.tensor([0.1, 0.2, 0.3], dtype=L.float64).histc(3, 0, 0.3),
    "histc-nan": lambda L: L.tensor([0.1, float("nan"), 0.3]).histc(3, 0, 1),
}


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_semantics(name):
    same_semantics(SEMANTICS[name])


def _message_gist(msg):
    return re.sub(r"\s+", " ", str(msg).replace("torch.", "").replace("ferrograd.", "")).strip()


# each: the call, and the part of torch's message that ferrograd's must also contain
ERRORS = {
    "broadcast_tensors-mismatch": (lambda L: L.broadcast_tensors(L.ones(2), L.ones(3)), None),
    "broadcast_shapes-mismatch": (lambda L: L.broadcast_shapes((2, 3), (4, 3)), None),
    "broadcast_tensors-not-tensor": (lambda L: L.broadcast_tensors(L.ones(2), [1.0]), None),
    "hstack-empty": (lambda L: L.hstack([]), "non-empty TensorList"),
    "hstack-not-list": (lambda L: L.hstack(L.ones(2)), None),
    "vstack-mismatch": (lambda L: L.vstack([L.ones(2), L.ones(3)]), None),
    "tensor_split-0": (lambda L: L.ones(3).tensor_split(0), "number of sections must be larger than 0, got 0"),
    "tensor_split-0d": (lambda L: L.tensor(1.).tensor_split(2), "at least a 1-dimensional tensor"),
    "tensor_split-2d-tensor": (lambda L: L.ones(3).tensor_split(L.tensor([[1]])), "zero-dimensional or one-dimensional tensor"),
    "tensor_split-float-tensor": (lambda L: L.ones(3).tensor_split(L.tensor([1.0])), None),
    "tensor_split-dim": (lambda L: L.ones(3).tensor_split(2, 1), "Dimension out of range"),
    "hsplit-divisible": (lambda L: L.ones(2, 4).hsplit(3), "not divisible by the split_size 3"),
    "hsplit-0d": (lambda L: L.hsplit(L.tensor(1.), 1), "at least 1 dimension"),
    "vsplit-1d": (lambda L: L.vsplit(L.ones(4), 2), "requires a tensor with at least 2 dimension"),
    "dsplit-2d": (lambda L: L.dsplit(L.ones(2, 4), 2), "requires a tensor with at least 3 dimension"),
    "vsplit-divisible": (lambda L: L.vsplit(L.ones(3, 4), 2), "attempted to split along dimension 0"),
    "moveaxis-count": (lambda L: L.ones(2, 3).moveaxis((0, 1), (0,)), "movedim: Invalid source or destination dims"),
    "moveaxis-int-and-tuple": (lambda L: L.ones(2, 3).moveaxis((0, 1), 0), "invalid combination of arguments"),
    "moveaxis-repeat": (lambda L: L.ones(2, 3).moveaxis((0, 0), (0, 1)), "repeated dim in `source`"),
    "moveaxis-range": (lambda L: L.ones(2, 3).moveaxis(2, 0), "Dimension out of range"),
    "swapdims-range": (lambda L: L.ones(2, 3).swapdims(0, 3), "Dimension out of range"),
    "unflatten-product": (lambda L: L.ones(6).unflatten(0, (4, -1)), "don't multiply up to the size of dim 0 (6)"),
    "unflatten-product-known": (lambda L: L.ones(6).unflatten(0, (4, 2)), "don't multiply up to the size of dim 0 (6)"),
    "unflatten-empty-sizes": (lambda L: L.ones(6).unflatten(0, ()), "sizes must be non-empty"),
    "unflatten-two-inferred": (lambda L: L.ones(6).unflatten(0, (-1, -1)), "only one dimension can be inferred"),
    "combinations-2d": (lambda L: L.combinations(L.ones(2, 2)), "Expect a 1D vector, but got shape [2, 2]"),
    "put-out-of-range": (lambda L: L.put(L.ones(3), L.tensor([3]), L.ones(1)), "out of range: tried to access index 3 on a tensor of 3 elements."),
    "put-negative-out-of-range": (lambda L: L.ones(3).put(L.tensor([-4]), L.ones(1)), "tried to access index -4"),
    "put-float-index": (lambda L: L.ones(3).put(L.tensor([0.0]), L.ones(1)), None),
    "put-count": (lambda L: L.ones(3).put(L.tensor([0, 1]), L.ones(1)), None),
    "put-dtype": (lambda L: L.ones(3).put(L.tensor([0]), L.ones(1, dtype=L.float64)), None),
    "inner-mismatch": (lambda L: L.inner(L.ones(2), L.ones(3)), "the last dimension must match on both input tensors but got shapes [2] and [3]"),
    "vdot-2d": (lambda L: L.vdot(L.ones(2, 2), L.ones(2, 2)), "1D tensors expected, but got 2D and 2D tensors"),
    "vdot-size": (lambda L: L.vdot(L.ones(2), L.ones(3)), None),
    "dist-mismatch": (lambda L: L.dist(L.ones(2), L.ones(3)), "must match the size of tensor b (3)"),
    "renorm-maxnorm": (lambda L: L.renorm(L.ones(3, 3), 2, 0, -1), "renorm: expected maxnorm to be >= 0 but got -1"),
    "renorm-1d": (lambda L: L.renorm(L.ones(3), 2, 0, 1.0), "renorm: input needs at least 2 dimensions, got 1 dimensions"),
    "renorm-int": (lambda L: L.renorm(L.ones(2, 2, dtype=L.int64), 2, 0, 1.0), "Expected a floating point or complex tensor as input. Got Long"),
    "histc-int32": (lambda L: L.histc(L.ones(2, dtype=L.int32)), "not implemented for 'Int'"),
    "renorm-p": (lambda L: L.renorm(L.ones(3, 3), 0, 0, 1.0), "renorm: non-positive-norm not supported"),
    "chain_matmul-shapes": (lambda L: L.chain_matmul(L.ones(2, 3), L.ones(2, 3)), None),
    "nanmedian-empty-dim": (lambda L: L.ones(2, 0).nanmedian(1), "Expected reduction dim 1 to have non-zero size."),
    "mode-empty-dim": (lambda L: L.ones(0).mode(), "mode(): Expected reduction dim 0 to have non-zero size."),
    "mode-dim": (lambda L: L.ones(2).mode(1), "Dimension out of range"),
    "quantile-q-range": (lambda L: L.ones(3).quantile(1.5), "quantile() q must be in the range [0, 1] but got 1.5"),
    "quantile-q-tensor-range": (lambda L: L.ones(3).quantile(L.tensor([0.5, -0.1])), "quantile() q values must be in the range [0, 1]"),
    "quantile-q-2d": (lambda L: L.ones(3).quantile(L.tensor([[0.5]])), "quantile() q must be a scalar or 1D tensor"),
    "quantile-int": (lambda L: L.ones(3, dtype=L.int64).quantile(0.5), "quantile() input tensor must be either float or double dtype"),
    "quantile-empty": (lambda L: L.ones(0).quantile(0.5), "quantile() input tensor must be non-empty"),
    "quantile-q-dtype": (lambda L: L.ones(3).quantile(L.tensor([0.5], dtype=L.float64)), "q tensor must be same dtype as the input tensor"),
    "quantile-interpolation": (lambda L: L.ones(3).quantile(0.5, interpolation="foo"), "interpolation must be one of linear, lower, higher, midpoint or nearest, but got foo"),
    "nanquantile-int": (lambda L: L.nanquantile(L.ones(3, dtype=L.int64), 0.5), "quantile() input tensor must be either float or double dtype"),
    "histc-int": (lambda L: L.histc(L.arange(4), 4), "not implemented for 'Long'"),
    "histc-bins": (lambda L: L.histc(L.ones(4), 0), "bins must be > 0"),
    "histc-range": (lambda L: L.histc(L.ones(4), 4, 2, 1), "max must be larger than min"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    fn, gist = ERRORS[name]
    te, fe = raised(fn, torch), raised(fn, fg)
    assert te is not None, f"torch accepts {name}"
    assert error_kind(fe) == error_kind(te), f"torch: {te!r}; got {fe!r}"
    if gist is not None:
        assert gist in _message_gist(te), f"test's gist not in torch's message {te}"
        assert gist in _message_gist(fe), f"{fe} lacks {gist!r}"


def test_views_share_storage():
    x = fg.arange(6.0).reshape(2, 3)
    for parts in (x.tensor_split(2, 1), x.hsplit([1]), fg.vsplit(x, 2)):
        parts[0].mul_(1)  # views: no error, same memory
    y = x.unflatten(1, (3, 1))
    y[0, 0, 0] = 100.0
    assert x[0, 0].item() == 100.0
    z = x.moveaxis(0, 1)
    z[2, 1] = -1.0
    assert x[1, 2].item() == -1.0


@pytest.mark.skipif(AGAINST_TORCH, reason="torch warns once per process (TORCH_WARN_ONCE)")
def test_chain_matmul_warns():
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        fg.chain_matmul(fg.ones(2, 2), fg.ones(2, 2))


def test_return_types():
    def fn(L):
        x = L.tensor([[1.0, 2.0, 2.0], [3.0, float("nan"), 1.0]])
        m, n = x.mode(1), x.nanmedian(1)
        return (type(m).__name__, len(m), type(n).__name__, len(n), m.values, n.indices, tuple(n)[0])
    same(fn)


@pytest.mark.skipif(AGAINST_TORCH, reason="checks ferrograd's own gradient flow through gather")
def test_reductions_grad_fn():
    x = fg.tensor([[1.0, 3.0, 2.0], [0.5, 0.5, 4.0]], requires_grad=True)
    for out in (x.nanmedian(1).values, x.mode(1).values, x.quantile(0.3, 1), fg.hstack([x, x]), x.renorm(2, 0, 1.0)):
        assert out.requires_grad and out.grad_fn is not None
    assert not x.histc(3).requires_grad


def test_tile_method_takes_varargs_as_torch():
    import numpy as np
    import torch as _t
    a = np.arange(6.0).reshape(2, 3)
    for args in ((2, 1), ((2, 1),), (2,), ([2, 1],), (1, 2, 2)):
        ours, theirs = fg.tensor(a).tile(*args), _t.tensor(a).tile(*args)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    for lib in (fg, _t):
        with pytest.raises(TypeError):
            lib.tile(lib.ones(2), 2, 1)
        with pytest.raises(TypeError):
            lib.ones(2).tile()
