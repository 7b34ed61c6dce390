"""The CPU kernels of gather, scatter_add, flip, cumsum, boolean-mask and single-tensor indexing
against torch, on the layouts their fast paths distinguish: contiguous and strided inputs (a
transposed view, a stepped slice, a view with an offset), an index narrower than the input in the
dims it does not index, the indexed or scanned dim first, in the middle and last, integer and bool
values, and inputs large enough to be split over threads. Values and gradients (with double
backward where torch has one) must equal torch's."""
import numpy as np
import pytest

from conftest import fg
from parity import In, check_op, same

RNG = np.random.default_rng(11)


def _idx(high, shape):
    return In(value=RNG.integers(0, high, size=shape).astype(np.int64))


def _views(L, x):
    """x itself, a transposed view, a stepped slice and an offset narrow view (same rank)."""
    return [x, x.transpose(0, -1), x[..., ::2], x[1:]]


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_gather_layouts(dim):
    # index shape (3, 4, 2): no larger than every view of the (6, 5, 8) input outside `dim`
    idx = _idx(2, (3, 4, 2))
    check_op(lambda L, x, i: [v.gather(dim, i) for v in _views(L, x)], (6, 5, 8), idx)


def test_gather_large_parallel():
    # more than 2**15 positions: rows filled in parallel
    check_op(lambda L, x, i: (x.gather(1, i), x.mT.gather(0, i.mT)), (64, 700), _idx(700, (64, 700)), double=False)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_scatter_add_with_duplicates(dtype):
    idx = _idx(3, (4, 6))
    grad = dtype != "int64"
    check_op(lambda L, x, i, s: (x.scatter_add(1, i, s), x.scatter_add(0, i % 2, s), L.scatter_add(x, 1, i[:, :4], s[:, :4]),
                                 x.clone().scatter_add_(1, i, s)),
             In((4, 6), dtype=dtype, domain="ints" if not grad else None, grad=grad),
             idx, In((4, 6), dtype=dtype, domain="ints" if not grad else None, grad=grad), grad=grad)


def test_scatter_add_int64_exact_and_errors():
    same(lambda L: L.zeros(2, 3, dtype=L.int64).scatter_add(1, L.tensor([[0, 0, 2]]), L.tensor([[2 ** 62, 2 ** 62, -1]])))
    for i in ([[0, 3]], [[-1, 0]]):
        for dt in ("float32", "int64"):
            with pytest.raises(RuntimeError, match="out of bounds for dimension 1 with size 3"):
                x = fg.zeros(2, 3, dtype=getattr(fg, dt))
                x.scatter_add(1, fg.tensor(i), x[:1, :2])


@pytest.mark.parametrize("dims", [(0,), (2,), (0, 2), (1, 2), (0, 1, 2)])
def test_flip_layouts(dims):
    check_op(lambda L, x: [v.flip(dims) for v in _views(L, x)], (4, 5, 6))


def test_flip_ints_and_bools():
    same(lambda L: (L.arange(24).reshape(2, 3, 4).flip(2), L.arange(24).reshape(2, 3, 4).mT.flip(0, 2),
                    (L.arange(12).reshape(3, 4) % 3 == 0).flip(1)))


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumsum_layouts(dim):
    check_op(lambda L, x: [v.cumsum(dim) for v in _views(L, x)], (4, 5, 6))


def test_cumsum_ints_bools_and_dtype():
    same(lambda L: (L.arange(30).reshape(5, 6).cumsum(1), L.arange(30).reshape(5, 6).mT.cumsum(0),
                    (L.arange(30).reshape(5, 6) % 4 == 0).cumsum(1), L.arange(6).cumsum(0, dtype=L.float32),
                    L.tensor([2 ** 62, 2 ** 62, 1]).cumsum(0)))


def test_mask_select_layouts():
    def fn(L, x):
        out = []
        for v in _views(L, x):
            out += [v[v > 0], v[(v.mT > 0).mT], v[L.zeros_like(v, dtype=L.bool)], v[L.ones_like(v, dtype=L.bool)]]
        return out
    check_op(fn, (4, 5, 6))
    # without a gradient (the one-pass path), ints and bools too
    check_op(fn, (4, 5, 6), grad=False)
    same(lambda L: (L.arange(12).reshape(3, 4)[L.arange(12).reshape(3, 4) % 5 > 1],
                    (L.arange(12).reshape(3, 4) > 4)[L.arange(12).reshape(3, 4) % 2 == 0]))


@pytest.mark.parametrize("grad", [True, False])
def test_single_index_tensor_any_dim(grad):
    i = In(value=np.array([[3, 0], [4, 3], [-1, 1]], dtype=np.int64))
    check_op(lambda L, x, i: [x[i], x[:, i], x[:, :, i], x[..., i], x[:, i.abs() % 5][..., 0], x.index_select(1, i.abs().flatten()),
                              x.mT[:, i], x[1:][:, i], L.index_select(x, 2, i.abs().flatten())],
             (5, 5, 6), i, grad=grad)


def test_single_index_ints_and_empty():
    same(lambda L: (L.arange(24).reshape(2, 3, 4)[:, L.tensor([2, 0, 2])],
                    L.arange(24).reshape(2, 3, 4)[..., L.tensor([], dtype=L.int64)],
                    (L.arange(24).reshape(2, 3, 4) > 5)[:, :, L.tensor([[1], [3]])]))


NZ = RNG.standard_normal((4, 5, 6))


def test_nonzero_layouts():
    same(lambda L: [(v > 0.3).nonzero() for v in _views(L, L.tensor(NZ))]
         + [L.tensor(5.0).nonzero(), L.zeros(0, 3).nonzero(), (L.arange(6) % 2).nonzero(as_tuple=True)])


def test_index_put_accumulate():
    i = In(value=np.array([[3, 0], [4, 3], [-1, 1]], dtype=np.int64))
    check_op(lambda L, x, v, i: (x.index_put((i,), v, accumulate=True), x.index_put((i, i.abs() % 4), v[..., 0], accumulate=True),
                                 x.mT.index_put((i.abs() % 4,), v[..., :1], accumulate=True),
                                 x.index_put((i[0],), v[0, :, 0, None], accumulate=True),
                                 x.index_put((L.tensor([True, False, True, True, False], device=x.device),), v[0, 0], accumulate=True)),
             (5, 4), (3, 2, 4), i)
    same(lambda L: (L.zeros(3, dtype=L.int64).index_put_((L.tensor([2, 2, 0]),), L.tensor([2 ** 62, 2 ** 62, 5]), accumulate=True),
                    L.zeros(3, dtype=L.int64).index_put_((L.tensor([2, 2, 0]),), L.tensor([2 ** 60, 1, 5]), accumulate=True),
                    L.zeros(2, 2, dtype=L.int64).index_put_((L.tensor([1, 1]),), L.tensor([[2 ** 60, 1], [1, 1]]), accumulate=True)))
    for L in (fg,):
        with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast to indexing result of shape \[2, 4\]"):
            L.zeros(3, 4).index_put_((L.tensor([0, 1]),), L.ones(3, 4), accumulate=True)


def test_empty_dims():
    # index positions whose rows are empty: nothing is read or written (the offsets may lie past an
    # empty storage)
    same(lambda L: (L.zeros(3, 4, 0)[L.tensor([2]), L.tensor([3])], L.zeros(3, 0)[L.tensor([0, 2])],
                    L.zeros(3, 4, 0).permute(2, 0, 1)[:, L.tensor([2]), L.tensor([3])],
                    L.zeros(3, 4, 0).index_put((L.tensor([2]), L.tensor([3])), L.zeros(1, 0), accumulate=True),
                    L.zeros(0, 3)[:, L.tensor([1, 2])], L.zeros(2, 0, 3).gather(2, L.zeros(2, 0, 1, dtype=L.int64)),
                    L.zeros(2, 0).flip(1), L.zeros(2, 0).cumsum(1), L.zeros(0, 3).cumsum(0),
                    L.zeros(2, 0)[L.zeros(2, 0, dtype=L.bool)], L.zeros(2, 0, dtype=L.bool).nonzero()))


@pytest.mark.parametrize("density", [0.0, 0.03, 0.5, 1.0])
def test_nonzero_and_mask_densities(density):
    # dense rows take the branch-free writes, sparse rows the visiting loop, mixed in one mask
    m = RNG.random((37, 130)) < density
    m[::5] = RNG.random((8, 130)) < 0.9
    x = RNG.standard_normal((37, 130))
    same(lambda L: [L.tensor(m).nonzero(), L.tensor(m[0]).nonzero(), L.tensor(m.reshape(37, 13, 10)).nonzero(),
                    L.tensor(m.reshape(37, 2, 5, 13)).nonzero(), L.tensor(m.reshape(37, 2, 5, 13, 1)).nonzero(),
                    L.tensor(x)[L.tensor(m)], L.tensor(x).float()[L.tensor(m)], L.tensor(x).long()[L.tensor(m)],
                    L.tensor(x).T[L.tensor(m).T]])
