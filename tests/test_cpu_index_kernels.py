"""The CPU kernels of gather, scatter_add, cumsum and flip against torch, bit for bit: every dtype,
the indexed or scanned dim last (the dense-row paths) or not, contiguous and strided inputs and
indices, inputs large enough to be split over threads (scatter_add's rows in parts of whole groups,
cumsum's rows four at a time with a remainder, its columns in pieces with a partial one), empty and
0-d cases, the error for an index out of range found by a split kernel, and scatter_add as one node
(ScatterAddBackward0) with torch's gradients."""
import numpy as np
import pytest
import torch

from conftest import fg
from parity import In, check_op, dtype_name, graph, same

RNG = np.random.default_rng(23)
DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"]


def _tensor(L, a, dtype):
    """The numpy array `a` as a tensor of `dtype` in L: floats rounded from float32, integers from
    int64 (values in the dtype's range), bools as a > 0."""
    if dtype == "bool":
        return L.tensor(a > 0)
    if dtype.startswith(("int", "uint")):
        return L.tensor(a.astype(np.int64)).to(getattr(L, dtype))
    return L.tensor(a.astype(np.float32)).to(getattr(L, dtype))


def _values(shape, dtype):
    """Values that make sums round (floats of many magnitudes) or wrap (integers near the top of
    their range, int64's near 2**62)."""
    if dtype == "int64":
        return RNG.integers(-2 ** 62, 2 ** 62, size=shape)
    if dtype in ("int32", "int16", "int8"):
        top = {"int32": 2 ** 31, "int16": 2 ** 15, "int8": 2 ** 7}[dtype]
        return RNG.integers(-top, top, size=shape)
    if dtype == "uint8":
        return RNG.integers(0, 256, size=shape)
    return RNG.standard_normal(shape) * 10.0 ** RNG.integers(-3, 4, size=shape)


def _host(t):
    t = t.detach()
    if dtype_name(t.dtype) in ("float16", "bfloat16"):
        t = t.float()  # exact
    return t.numpy()


def exact(fn):
    """fn(torch) and fn(fg) (lists of tensors) agree in shape, dtype and every value."""
    expected, got = fn(torch), fn(fg)
    assert len(got) == len(expected)
    for k, (t, f) in enumerate(zip(expected, got)):
        assert tuple(f.shape) == tuple(t.shape), k
        assert dtype_name(f.dtype) == dtype_name(t.dtype), k
        np.testing.assert_array_equal(_host(f), _host(t), err_msg=f"result {k}")


def _idx(high, shape):
    return RNG.integers(0, high, size=shape)


# ---- gather

X = _values((40, 1000), "float64")
I_LAST = _idx(1000, (40, 900))      # 36000 positions: rows split over threads, the dense-row path
I_FIRST = _idx(40, (30, 1000))      # along dim 0, split by rows
I_MID = _idx(5, (8, 4, 1000))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_dtypes_and_layouts(dtype):
    def fn(L):
        x, i1, i0, i3 = _tensor(L, X, dtype), L.tensor(I_LAST), L.tensor(I_FIRST), L.tensor(I_MID)
        return [x.gather(1, i1), x.gather(-1, i1[:7, :50]), x.gather(0, i0), x.mT.gather(1, i0.mT),
                x.mT.gather(0, i1.mT), x[:, ::2].gather(1, i1[:, :400] % 500), x[3:].gather(1, i1[:37]),
                x.reshape(8, 5, 1000).gather(1, i3), L.gather(x, 1, i1[:, ::3])]
    exact(fn)


def test_gather_empty_and_0d():
    same(lambda L: (L.tensor(3.5).gather(0, L.tensor(0)), L.tensor([1.5, 2.5]).gather(0, L.tensor(1)),
                    L.tensor(2.5).gather(0, L.tensor([0, 0])), L.zeros(3, 0).gather(1, L.zeros(3, 0, dtype=L.int64)),
                    L.ones(3, 4).gather(1, L.zeros(3, 0, dtype=L.int64)), L.ones(3, 4).gather(0, L.zeros(0, 4, dtype=L.int64))))


@pytest.mark.parametrize("bad", [1000, -1, 2 ** 40])
def test_gather_out_of_range_in_a_split_kernel(bad):
    i = I_LAST.copy()
    i[33, 17] = bad  # in the last part
    for L in (torch, fg):
        x = L.tensor(X)
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 1 with size 1000"):
            x.gather(1, L.tensor(i))
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 0 with size 40"):
            x.gather(0, L.tensor(np.where(i == bad, bad, i % 40)))


# ---- scatter_add

S_LAST = _idx(50, (40, 1000))       # many duplicates per row: every add rounds or wraps
S_MID = _idx(5, (10, 4, 1000))      # along a middle dim: rows in groups of 4, split over threads


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_dtypes_and_layouts(dtype):
    xv, sv = _values((40, 1000), dtype), _values((40, 1000), dtype)
    x3, s3 = _values((10, 5, 1000), dtype), _values((10, 4, 1000), dtype)

    def fn(L):
        x, s, i, i0 = _tensor(L, xv, dtype), _tensor(L, sv, dtype), L.tensor(S_LAST), L.tensor(I_FIRST)
        return [x.scatter_add(1, i, s), x.scatter_add(-1, i[:7, :50], s[:7, :50]), x.scatter_add(0, i0, s),
                x.scatter_add(1, i[:, :600], s), x.mT.scatter_add(0, i.mT, s.mT), x.scatter_add(1, i.mT.contiguous().mT, s),
                x[:, ::2].scatter_add(1, i[:, :400] % 500, s[:, 1::2]), L.scatter_add(x, 1, i[::2], s[::2]),
                _tensor(L, x3, dtype).scatter_add(1, L.tensor(S_MID), _tensor(L, s3, dtype))]
    exact(fn)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_in_place(dtype):
    # scatter_add_ adds into a copy in index order and writes it back: torch's values bit for bit,
    # through views too
    xv, sv = _values((40, 1000), dtype), _values((40, 1000), dtype)

    def fn(L):
        x, s, i = _tensor(L, xv, dtype), _tensor(L, sv, dtype), L.tensor(S_LAST)
        a = x.clone()
        a.scatter_add_(1, i, s)
        b = x.clone()
        b.mT.scatter_add_(0, i.mT[:, :7], s.mT[:, :7])
        return [a, b]
    exact(fn)


def test_scatter_add_in_place_gradients():
    check_op(lambda L, x, i, s: (x * 1).scatter_add_(1, i, s), (3, 5), In(value=_idx(5, (3, 4))), (3, 4))


def test_scatter_add_empty_and_0d():
    same(lambda L: (L.tensor(1.5).scatter_add(0, L.tensor([0, 0]), L.tensor([2.0, 3.0])),
                    L.tensor(1.5).scatter_add(0, L.tensor(0), L.tensor(4.0)),
                    L.tensor([1.0, 2.0]).scatter_add(0, L.tensor(1), L.tensor(5.0)),
                    L.ones(3, 4).scatter_add(1, L.zeros(3, 0, dtype=L.int64), L.ones(3, 0)),
                    L.ones(3, 0).scatter_add(1, L.zeros(3, 0, dtype=L.int64), L.ones(3, 0))))


@pytest.mark.parametrize("bad", [50, -1, 2 ** 40])
def test_scatter_add_out_of_range_in_a_split_kernel(bad):
    i = S_LAST.copy()
    i[35, 900] = bad
    for L in (torch, fg):
        x = L.ones(40, 50)
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 1 with size 50"):
            x.scatter_add(1, L.tensor(i), L.ones(40, 1000))
        i3 = S_MID.copy()
        i3[9, 3, 999] = bad
        with pytest.raises(RuntimeError, match=f"index {bad} is out of bounds for dimension 1 with size 5"):
            L.ones(10, 5, 1000).scatter_add(1, L.tensor(i3), L.ones(10, 4, 1000))


def test_scatter_add_is_one_node():
    def fn(L):
        x, s = L.ones(3, 4, requires_grad=True), L.ones(3, 4, requires_grad=True)
        i = L.tensor([[0, 0, 1, 3]] * 3)
        return [graph(x.scatter_add(1, i, s).grad_fn), graph(x.scatter_add(1, i, s.detach()).grad_fn),
                graph(x.detach().scatter_add(1, i, s).grad_fn), graph(L.scatter_add(x, 0, i[:2] % 3, s[:2]).grad_fn)]
    same(fn)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_add_gradients(dim):
    idx = np.stack([_idx(3, (3, 4, 5)), _idx(4, (3, 4, 5)), _idx(5, (3, 4, 5))])[dim]
    check_op(lambda L, x, i, s: (x.scatter_add(dim, i, s), x.mT.scatter_add(dim, i[:, :, :4] % 4, s[:, :, :4]),
                                 x.scatter_add(dim, i[:2, :3], s[:2, :3])),
             (3, 4, 5), In(value=idx), (3, 4, 5))
    check_op(lambda L, x, i, s: x.scatter_add(1, i, s), (20, 2000), In(value=_idx(2000, (20, 1900))), (20, 1900), double=False)


# ---- cumsum

@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_dtypes_and_layouts(dtype):
    a = _values((37, 1000), dtype)   # 37 rows: nine groups of four and one more
    b = _values((5, 40, 700), dtype)  # along dim 1: pieces of 256 columns, the last one partial

    def fn(L):
        x, y = _tensor(L, a, dtype), _tensor(L, b, dtype)
        return [x.cumsum(1), x[:3].cumsum(1), x[:9, :20].cumsum(-1), x.cumsum(0), x.mT.cumsum(1), x.mT.cumsum(0),
                x[:, ::3].cumsum(1), y.cumsum(1), y.cumsum(2), y.cumsum(0), y[:, 1:, :300].cumsum(1),
                x.cumsum(1, dtype=L.float64), x.cumsum(0, dtype=L.float32), x.cumsum(1, dtype=L.int64)]
    exact(fn)


def test_cumsum_empty_0d_and_one_element_rows():
    same(lambda L: (L.tensor(2.5).cumsum(0), L.zeros(0, 5).cumsum(1), L.zeros(5, 0).cumsum(0), L.zeros(3, 0, 4).cumsum(2),
                    L.arange(40000.0).reshape(40000, 1).cumsum(1), L.arange(40000.0).reshape(1, 40000).cumsum(0),
                    L.arange(40000).reshape(2, 20000, 1).cumsum(1)), rtol=0, atol=0)


# ---- flip

@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_dtypes_and_layouts(dtype):
    a = _values((30, 1200), dtype)

    def fn(L):
        x = _tensor(L, a, dtype)
        y = x.reshape(6, 5, 1200)
        return [x.flip(1), x.flip(0), x.flip(0, 1), x.mT.flip(1), x.mT.flip(0), x[:, ::2].flip(1), x[1:, 3:].flip(0),
                y.flip(1), y.flip(0, 2), y.permute(2, 0, 1).flip(1, 2), x[:4, :5].flip(1)]
    exact(fn)
