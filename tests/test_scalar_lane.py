"""Note [Scalar lane] (src/autograd/engine.rs): one-element nodes run their backward on plain
numbers. Their gradients must be those of the tensor path to the bit (anomaly mode turns the lane
off) and torch's within rounding; everything around the lane (leaves, hooks, retain_grad,
non-scalar nodes, double backward, errors) behaves as before."""

import math
import random

import pytest
import torch

import ferrograd as fg

DTYPES = [("float32", 1e-5), ("float64", 1e-12)]

UNARY = ["tanh", "sigmoid", "exp", "log", "sqrt", "reciprocal", "sin", "relu"]


def program(lib, seed, dtype, n=60):
    """A random chain and DAG of one-element ops over two leaves; returns (leaves, output)."""
    rng = random.Random(seed)
    a = lib.tensor(0.7, dtype=getattr(lib, dtype), requires_grad=True)
    b = lib.tensor(-0.4, dtype=getattr(lib, dtype), requires_grad=True)
    vals = [a, b, a * b]
    for _ in range(n):
        x = rng.choice(vals[-6:])
        k = rng.randrange(10)
        c = rng.choice([0.5, 1.25, -0.75, 2, 3.0])
        if k == 0:
            y = x * c
        elif k == 1:
            y = x + c
        elif k == 2:
            y = c - x
        elif k == 3:
            y = x / c
        elif k == 4:
            y = c * x - 0.25
        elif k == 5:
            y = x * rng.choice(vals[-6:])  # a two-tensor op: no lane, tensor path around it
        elif k == 6:
            y = x + rng.choice(vals[-6:])
        else:
            op = rng.choice(UNARY)
            if op in ("log", "sqrt", "reciprocal"):
                x = x * x + 0.5
            y = getattr(lib, op)(x)
        vals.append(y)
    out = vals[-1] + vals[-2] * 0.5 + (a + b) * 0.125  # both leaves get a gradient
    return (a, b), out


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("seed", range(12))
def test_lane_matches_tensor_path_and_torch(seed, dtype, tol):
    (a, b), y = program(fg, seed, dtype)
    y.backward()
    lane = (a.grad.item(), b.grad.item())

    (a, b), y = program(fg, seed, dtype)
    with fg.autograd.detect_anomaly(check_nan=False):  # the lane is off in anomaly mode
        y.backward()
    tensors = (a.grad.item(), b.grad.item())
    assert [v.hex() for v in lane] == [v.hex() for v in tensors]

    (a, b), y = program(fg, seed, dtype)
    y.backward(inputs=[a, b])  # a row per node (Note [Slot mode] is for plain backward)
    assert [v.hex() for v in lane] == [a.grad.item().hex(), b.grad.item().hex()]

    (ta, tb), ty = program(torch, seed, dtype)
    ty.backward()
    for got, want in zip(lane, (ta.grad.item(), tb.grad.item())):
        assert math.isclose(got, want, rel_tol=tol * 50, abs_tol=tol), (got, want)


def test_long_chain_float32_matches_torch():
    def chain(lib):
        x = lib.tensor(0.5, requires_grad=True)
        y = x
        for _ in range(3000):
            y = (y * 1.0001 + 0.001).tanh()
        return x, y

    x, y = chain(fg)
    y.backward()
    x2, y2 = chain(fg)
    with fg.autograd.detect_anomaly(check_nan=False):
        y2.backward()
    assert x.grad.item().hex() == x2.grad.item().hex()
    tx, ty = chain(torch)
    ty.backward()
    assert x.grad.dtype == fg.float32
    # 3,000 float32 tanh steps: forward values within an ulp or two of torch's, compounded
    assert math.isclose(x.grad.item(), tx.grad.item(), rel_tol=2e-3)


def test_hooks_retain_grad_and_non_leaf_inputs_see_tensors():
    for lib in (fg, torch):
        x = lib.tensor(0.3, requires_grad=True)
        y = (x * 2.0).tanh()
        y.retain_grad()
        seen = []
        z = y * 3.0 + 1.0
        z.register_hook(lambda g: seen.append(g.item()) or g * 2)
        (z.exp() * 0.5).backward()
        if lib is fg:
            got = (x.grad.item(), y.grad.item(), seen[0])
        else:
            want = (x.grad.item(), y.grad.item(), seen[0])
    for g, w in zip(got, want):
        assert math.isclose(g, w, rel_tol=1e-6)


def test_grad_of_non_leaf_and_leaf():
    x = fg.tensor(0.3, dtype=fg.float64, requires_grad=True)
    h = (x * 2.0).sigmoid()
    y = (h + 1.0).log() * 3.0
    gx, gh = fg.autograd.grad(y, [x, h])
    tx = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    th = (tx * 2.0).sigmoid()
    ty = (th + 1.0).log() * 3.0
    tgx, tgh = torch.autograd.grad(ty, [tx, th])
    assert math.isclose(gx.item(), tgx.item(), rel_tol=1e-12)
    assert math.isclose(gh.item(), tgh.item(), rel_tol=1e-12)
    assert gx.shape == tgx.shape and gh.dtype == fg.float64


def test_second_backward_fails_and_retain_graph_works():
    x = fg.tensor(0.3, requires_grad=True)
    y = (x * 2.0).tanh() * 3.0
    y.backward(retain_graph=True)
    y.backward()
    assert math.isclose(x.grad.item(), 2 * 3.0 * 2.0 * (1 - math.tanh(0.6) ** 2), rel_tol=1e-5)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_inplace_modification_of_saved_output_is_caught():
    x = fg.tensor(0.3, requires_grad=True)
    y = x.tanh()
    z = y * 2.0
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_double_backward_through_lane_ops():
    for lib in (fg, torch):
        x = lib.tensor(0.4, dtype=lib.float64, requires_grad=True)
        y = (x * 3.0 + 1.0).tanh().exp()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g, x)
        if lib is fg:
            got = (g.item(), gg.item())
        else:
            want = (g.item(), gg.item())
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in zip(got, want))


def test_mixed_with_vector_nodes():
    for lib in (fg, torch):
        w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        s = (w * 2.0).sum()  # a vector node feeding the lane
        y = (s.tanh() * 0.5 + 0.25).sigmoid()
        z = (w * y).sum()  # the lane's value feeding a vector node
        z.backward()
        if lib is fg:
            got = w.grad.tolist()
        else:
            want = w.grad.tolist()
    assert all(math.isclose(a, b, rel_tol=1e-5) for a, b in zip(got, want))
