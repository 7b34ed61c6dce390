"""Copies through strided views (the general path of the CPU copy: row by row, in parallel when the
destination's elements are distinct): torch.cat along inner dims, copy_ into transposed and sliced
views, copies whose source aliases the destination, dtype conversion on the way — small and large
(above the parallel threshold), against torch."""

import numpy as np
import pytest
import torch

from conftest import fg


def both(arr):
    return torch.tensor(arr), fg.tensor(arr)


def same(ours, theirs):
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("shape", [(2, 3, 4), (16, 64, 128)])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("transposed", [False, True])
def test_cat_matches_torch(shape, dim, transposed):
    rng = np.random.default_rng(0)
    parts = [both(rng.standard_normal(shape).astype(np.float32)) for _ in range(3)]
    if transposed:
        parts = [(t.transpose(0, 2).contiguous().transpose(0, 2), f.transpose(0, 2).contiguous().transpose(0, 2)) for t, f in parts]
    same(fg.cat([f for _, f in parts], dim), torch.cat([t for t, _ in parts], dim))


def test_cat_mixed_dtypes_and_grad():
    rng = np.random.default_rng(1)
    a, b = both(rng.standard_normal((40, 30, 50)).astype(np.float32)), both(rng.integers(0, 9, (40, 7, 50)))
    same(fg.cat([a[1], b[1]], 1), torch.cat([a[0], b[0]], 1))
    x = [lib.tensor(rng.standard_normal((8, 300, 20))).requires_grad_() for lib in (torch, fg)]
    y = [lib.tensor(rng.standard_normal((8, 100, 20))).requires_grad_() for lib in (torch, fg)]
    g = rng.standard_normal((8, 400, 20))
    for i, lib in enumerate((torch, fg)):
        lib.cat([x[i], y[i]], 1).backward(lib.tensor(g))
    same(x[1].grad, x[0].grad)
    same(y[1].grad, y[0].grad)


@pytest.mark.parametrize("n", [5, 300])
def test_copy_into_views(n):
    rng = np.random.default_rng(2)
    src = rng.standard_normal((n, n + 3))
    for lib_pair in [both(np.zeros((n + 3, n)))]:
        t, f = lib_pair
        t.t().copy_(torch.tensor(src))
        f.t().copy_(fg.tensor(src))
        same(f, t)
    t, f = both(np.zeros((n, 2 * n + 6), dtype=np.float32))
    t[:, ::2].copy_(torch.tensor(src))  # float64 into a float32 strided view
    f[:, ::2].copy_(fg.tensor(src))
    same(f, t)


@pytest.mark.parametrize("n", [6, 400])
def test_copies_whose_source_aliases_the_destination(n):
    rng = np.random.default_rng(3)
    t, f = both(rng.standard_normal((n, n)))
    t[:, 1:] = t[:, :-1].clone()  # (torch refuses partially overlapping in-place copies; clone first)
    f[:, 1:] = f[:, :-1].clone()
    same(f, t)
    # a transposed view of itself: torch refuses it (the elements overlap)
    for lib in (torch, fg):
        x = lib.ones(n, n)
        with pytest.raises(RuntimeError):
            x.copy_(x.t())
    # a disjoint part of the same storage, transposed (aliased storage: read before writing)
    t, f = both(rng.standard_normal((n, 2 * n)))
    t[:, :n].copy_(t[:, n:].t())
    f[:, :n].copy_(f[:, n:].t())
    same(f, t)


def test_expanded_destination_raises_as_torch():
    for lib in (torch, fg):
        x = lib.zeros(3, 1).expand(3, 4)
        with pytest.raises(RuntimeError):
            x.copy_(lib.ones(3, 4))
