"""torch.Generator, generator= on the random functions, randperm and normal: the same seed gives the
same values, a generator leaves the global one alone, shapes/dtypes/errors as torch's (values come
from ferrograd's own streams, so they are compared by their distribution, not to torch's)."""
import numpy as np
import pytest

from conftest import fg, torch


@pytest.mark.parametrize("draw", [
    lambda L, g: L.rand(3, 4, generator=g),
    lambda L, g: L.randn(5, generator=g, dtype=L.float64),
    lambda L, g: L.randint(2, 9, (2, 5), generator=g),
    lambda L, g: L.randint(7, (6,), generator=g, dtype=L.int32),
    lambda L, g: L.randperm(10, generator=g),
    lambda L, g: L.normal(0.0, 2.0, (4,), generator=g),
    lambda L, g: L.normal(L.zeros(2, 1), L.ones(3), generator=g),
    lambda L, g: L.rand_like(L.zeros(3), generator=g) if hasattr(L, "rand_like") else None,
])
def test_same_seed_same_values_and_global_rng_untouched(draw):
    for L in (fg, torch):
        a = draw(L, L.Generator().manual_seed(5))
        b = draw(L, L.Generator().manual_seed(5))
        c = draw(L, L.Generator().manual_seed(6))
        assert a.tolist() == b.tolist()
        assert a.tolist() != c.tolist()
        ref = draw(torch, torch.Generator().manual_seed(5))
        assert tuple(a.shape) == tuple(ref.shape) and str(a.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
        # drawing from a generator does not advance the global generator
        L.manual_seed(0)
        x = L.rand(4)
        L.manual_seed(0)
        draw(L, L.Generator().manual_seed(1))
        assert L.rand(4).tolist() == x.tolist()


def test_generator_api():
    g = fg.Generator()
    assert g.manual_seed(3) is g and g.initial_seed() == 3 and str(g.device) == "cpu"
    state = g.get_state()
    a = fg.randn(4, generator=g)
    g.set_state(state)
    assert fg.randn(4, generator=g).tolist() == a.tolist()


@pytest.mark.parametrize("call", [
    lambda L: L.randn(3, generator=5),
    lambda L: L.rand(3, generator="x"),
    lambda L: L.randint(0, 5, (3,), generator=1.5),
    lambda L: L.normal(0.0, 1.0, (3,), generator=3),
    lambda L: L.randperm(4, generator=7),
    lambda L: L.multinomial(L.ones(3), 2, generator=7),
    lambda L: L.ones(3).uniform_(generator=7),
    lambda L: L.normal(0.0, 1.0),
    lambda L: L.randperm(4.0),
])
def test_type_errors_as_torch(call):
    for L in (fg, torch):
        with pytest.raises(TypeError):
            call(L)


@pytest.mark.parametrize("call", [
    lambda L: L.normal(L.zeros(3), -1.0),
    lambda L: L.normal(0.0, -1.0, (2,)),
    lambda L: L.randperm(-1),
    lambda L: L.randperm(4, requires_grad=True),
    lambda L: L.randint(9, 2, (2,), generator=L.Generator()),
])
def test_runtime_errors_as_torch(call):
    msgs = []
    for L in (fg, torch):
        with pytest.raises(RuntimeError) as e:
            call(L)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_normal_kernel_dtype_error():
    for L in (fg, torch):
        with pytest.raises(NotImplementedError, match="\"normal_kernel_cpu\" not implemented for 'Long'"):
            L.normal(L.zeros(3, dtype=L.int64), 1.0)


def test_randperm_is_a_permutation():
    for n in (0, 1, 17, 1000):
        p = fg.randperm(n)
        assert p.dtype == fg.int64 and sorted(p.tolist()) == list(range(n))
    assert fg.randperm(5, dtype=fg.float32).dtype == fg.float32
    out = fg.empty(0, dtype=fg.int64)
    assert fg.randperm(6, out=out) is out and sorted(out.tolist()) == list(range(6))


def test_normal_shapes_distribution_and_zero_gradient():
    for mean, std in [(lambda L: L.zeros(2, 1), lambda L: L.ones(3)), (lambda L: L.zeros(2, 1), lambda L: 2.0),
                      (lambda L: 1.0, lambda L: L.ones(3, dtype=L.float64))]:
        a, b = fg.normal(mean(fg), std(fg)), torch.normal(mean(torch), std(torch))
        assert tuple(a.shape) == tuple(b.shape) and str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    x = fg.normal(fg.full((40000,), 3.0), 2.0).numpy()
    # mean within 7 standard errors (0.07), std within 3%
    assert abs(x.mean() - 3.0) < 0.07 and abs(x.std() - 2.0) < 0.06
    grads = []
    for L in (fg, torch):
        m = L.zeros(3, requires_grad=True)
        s = L.ones(3, requires_grad=True)
        y = L.normal(m, s)
        (y * 2).sum().backward()
        grads.append((m.grad.tolist(), s.grad.tolist()))
    assert grads[0] == grads[1]
    assert np.array_equal(fg.normal(fg.zeros(0), 1.0).numpy(), np.zeros(0, np.float32))


def test_normal_out():
    res = []
    for L in (fg, torch):
        o = L.empty(0, dtype=L.float64)
        r1 = L.normal(0.0, 2.0, (3, 2), out=o)
        shape1, dt1 = tuple(o.shape), str(o.dtype).split(".")[1]
        o2 = L.empty(5)
        r2 = L.normal(L.zeros(2, 1), L.ones(3), out=o2)
        assert r1 is o and r2 is o2
        with pytest.raises(RuntimeError):
            L.normal(L.zeros(3), 1.0, out=L.empty(3, dtype=L.int64))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            L.normal(L.zeros(3, requires_grad=True), 1.0, out=L.empty(3))
        res.append((shape1, dt1, tuple(o2.shape)))
    assert res[0] == res[1]
