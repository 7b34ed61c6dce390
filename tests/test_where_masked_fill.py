"""where / masked_fill over broadcast and strided operands, against torch.

The CPU select kernel coalesces the three layouts and fills row segments from strided runs, split over
threads above the parallel threshold; these cases cover a broadcast causal mask (the attention idiom),
a transposed input, a scalar value, every storage width and both sides of the threshold.
"""
import numpy as np
import pytest
import torch

from conftest import fg

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "bool"]


def pair(shape, dtype, seed):
    r = np.random.default_rng(seed)
    a = r.standard_normal(shape) * 3
    t = torch.tensor(a).to(getattr(torch, dtype))
    return t, fg.tensor(t.tolist(), dtype=getattr(fg, dtype)) if t.dim() else fg.tensor(t.item())


def same(f, t):
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(f.shape) == tuple(t.shape)
    np.testing.assert_array_equal(np.asarray(f.tolist()), np.asarray(t.tolist()))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T", [5, 64])  # 4*2*64*64 = 32768 elements reaches the parallel path
def test_masked_fill_causal_mask(dtype, T):
    t, f = pair((4, 2, T, T), dtype, 1)
    tm = torch.tril(torch.ones(T, T)).view(1, 1, T, T) == 0
    fm = fg.tril(fg.ones(T, T)).view(1, 1, T, T) == 0
    v = True if dtype == "bool" else -7
    same(f.masked_fill(fm, v), t.masked_fill(tm, v))


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_strided_operands(dtype):
    ta, fa = pair((70, 600), dtype, 2)
    tb, fb = pair((600, 70), dtype, 3)
    tc = torch.tensor(np.random.default_rng(4).random((70, 1)) > 0.5)
    fc = fg.tensor(tc.tolist())
    # a transposed b, a column mask broadcast along rows, a row-major a
    same(fg.where(fc, fa, fb.t()), torch.where(tc, ta, tb.t()))
    # a sliced (non-contiguous) a, a scalar-shaped b
    same(fg.where(fc, fa[:, ::2], fb[:1, :1]), torch.where(tc, ta[:, ::2], tb[:1, :1]))


def test_masked_fill_gradient_through_broadcast_mask():
    x = np.random.default_rng(5).standard_normal((3, 4, 8, 8))
    tx = torch.tensor(x, requires_grad=True)
    fx = fg.tensor(x, requires_grad=True)
    tm = torch.triu(torch.ones(8, 8, dtype=torch.bool), 1)
    fm = fg.triu(fg.ones(8, 8, dtype=fg.bool), 1)
    g = np.random.default_rng(6).standard_normal((3, 4, 8, 8))
    tx.masked_fill(tm, float("-inf")).softmax(-1).backward(torch.tensor(g))
    fx.masked_fill(fm, float("-inf")).softmax(-1).backward(fg.tensor(g))
    np.testing.assert_allclose(np.asarray(fx.grad.tolist()), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


def _grad_pair(fn, x):
    tx = torch.tensor(x, requires_grad=True)
    fx = fg.tensor(x, requires_grad=True)
    fn(torch, tx).sum().backward()
    fn(fg, fx).sum().backward()
    return np.asarray(fx.grad.tolist()), tx.grad.numpy()


@pytest.mark.parametrize("name,fn", [
    # 1/(y-2) is inf/NaN-producing where the clamp cut the gradient off: torch gives 0 there
    ("clamp_min", lambda L, x: 1 / (x.clamp(min=2.0) - 2)),
    ("clamp_both", lambda L, x: (x.clamp(min=1.5, max=2.5) - 1.5).log()),
    ("where_nan_other_side", lambda L, x: L.where(x > 1, L.tensor(float("nan"), dtype=x.dtype), x) ** 2),
    ("where_inf_grad", lambda L, x: L.where(x > 2, x, L.zeros_like(x)).sqrt()),
])
def test_selection_gradients_do_not_leak_nan(name, fn):
    got, want = _grad_pair(fn, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(got, want)


def test_relu_half_gradient_does_not_leak_nan():
    x = [-1.0, 0.0, 2.0]
    tx = torch.tensor(x, dtype=torch.bfloat16, requires_grad=True)
    fx = fg.tensor(x, dtype=fg.bfloat16, requires_grad=True)
    g = [float("nan"), 1.0, 1.0]
    torch.relu(tx).backward(torch.tensor(g, dtype=torch.bfloat16))
    fg.relu(fx).backward(fg.tensor(g, dtype=fg.bfloat16))
    np.testing.assert_array_equal(np.asarray(fx.grad.float().tolist()), tx.grad.float().numpy())
