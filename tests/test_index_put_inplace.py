"""index_put_(..., accumulate=True) without a gradient adds into the tensor in place (one pass,
atomics on a GPU): against torch on views (the write reaches the base), repeated and negative
indices, broadcast values, values that share the tensor's memory, integer exactness, masks, and
torch's errors (raised before anything is written)."""
import numpy as np
import pytest

from conftest import fg, torch
from parity import same

RNG = np.random.default_rng(5)
X = RNG.standard_normal((6, 5, 4))
V = RNG.standard_normal((7, 5, 4))
I = RNG.integers(-6, 6, size=7)


def _put(L, x, idx, v):
    r = x.index_put_(idx, v, accumulate=True)
    assert r is x
    return x


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_in_place_accumulate(dtype):
    def f(L):
        dt = getattr(L, dtype)
        x = L.tensor(X * 10).to(dt)
        v = L.tensor(V * 10).to(dt)
        i = L.tensor(I)
        base = x.clone()
        view = base.transpose(0, 1)  # writes through a transposed view reach the base
        _put(L, view, (L.tensor([0, 4, 4]), i[:3]), v[:3, 0])
        sl = base[1:, ::2]
        _put(L, sl, (i.abs() % 5,), v[:, :3])
        return (_put(L, x.clone(), (i,), v), _put(L, x.clone(), (i, i.abs() % 5), v[:, 0]),
                _put(L, x.clone(), (i[:, None], L.tensor([[1, 2]])), v[0, 0]),   # broadcast indices and values
                _put(L, x.clone(), (L.tensor([True, False, True, True, False, True]),), v[0]),
                _put(L, x.clone(), (i,), L.tensor(3).to(dt)), base)
    same(f)


def test_int64_exact_and_values_in_the_same_memory():
    def f(L):
        w = L.zeros(3, dtype=L.int64)
        _put(L, w, (L.tensor([2, 2, 0]),), L.tensor([2 ** 62, 2 ** 62, 5]))
        z = L.arange(8.0)
        _put(L, z[:4], (L.tensor([0, 0, 3]),), z[5:])  # the same storage, no shared element
        return w, z
    same(f)
    for lib in (fg, torch):
        z = lib.arange(6.0)
        with pytest.raises(RuntimeError, match="unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location"):
            z.index_put_((lib.tensor([0, 0, 5]),), z[:3], accumulate=True)


def test_errors_leave_the_tensor_unchanged():
    for lib in (fg, torch):
        x = lib.zeros(3, 4)
        with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
            x.index_put_((lib.tensor([0, 3]),), lib.ones(4), accumulate=True)
        with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
            x.index_put_((lib.tensor([0]),) * 3, lib.ones(1), accumulate=True)
        with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast to indexing result of shape \[2, 4\]"):
            x.index_put_((lib.tensor([0, 1]),), lib.ones(3, 4), accumulate=True)
        # (torch's CPU kernel adds the rows before a bad index; ferrograd checks every index first)
        assert lib is torch or x.abs().sum().item() == 0


def test_with_a_gradient_records_the_op():
    # a tensor that needs a gradient takes the recorded path: values and gradients as torch's
    def f(L):
        x = L.tensor(X, requires_grad=True)
        v = L.tensor(V[:, 0], requires_grad=True)
        y = (x * 1).index_put_((L.tensor(I), L.tensor(I % 5)), v, accumulate=True)
        (y * L.tensor(X)).sum().backward()
        return y, x.grad, v.grad
    same(f)


def test_version_counter_bumps():
    x = fg.zeros(4)
    v0 = x._version
    x.index_put_((fg.tensor([1]),), fg.ones(1), accumulate=True)
    assert x._version == v0 + 1
