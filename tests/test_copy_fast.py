"""`Tensor.copy_` without a gradient to record writes straight into the target (one copy, split
over threads for large disjoint blocks): the results, checks and version counters are torch's."""
import numpy as np
import pytest
import torch

from conftest import fg


def _both(fn):
    return fn(torch), fn(fg)


@pytest.mark.parametrize("n", [7, 5000, 300_001])
def test_copy_values_casts_broadcasts_and_views(n):
    g = np.random.default_rng(n)
    a = g.standard_normal(n)

    def run(L):
        dst = L.zeros(n, dtype=L.float32)
        dst.copy_(L.tensor(a))                     # float64 -> float32
        v0 = dst._version
        half = L.zeros(2, n // 2 + 1)
        half[1].copy_(L.tensor(a[: n // 2 + 1]))  # into a view: the base sees it
        row = L.zeros(3, 4)
        row.copy_(L.tensor([1.0, 2.0, 3.0, 4.0]))  # broadcast
        same = L.tensor(a)
        same.copy_(same)                           # the same elements: allowed
        ints = L.zeros(n, dtype=L.int64)
        ints.copy_(L.tensor(a * 10))               # float -> int truncates
        return [dst.numpy(), half.numpy(), row.numpy(), same.numpy(), ints.numpy(), v0, half._version, dst.is_contiguous()]

    want, got = _both(run)
    for w, x in zip(want, got):
        if isinstance(w, np.ndarray):
            assert np.array_equal(w, x)
        else:
            assert w == x


def test_copy_errors_are_torchs():
    for L in (torch, fg):
        x = L.arange(10.0)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            x[2:8].copy_(x[0:6])
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            L.zeros(1).expand(4).copy_(L.ones(4))
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            L.zeros(3).copy_(L.ones(2, 3))


def test_copy_into_a_leaf_that_requires_grad_needs_no_grad():
    for L in (torch, fg):
        w = L.zeros(4, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            w.copy_(L.ones(4))
        with L.no_grad():
            w.copy_(L.full((4,), 2.0))
        assert w.requires_grad and w.grad_fn is None and w.detach().numpy().tolist() == [2.0] * 4
