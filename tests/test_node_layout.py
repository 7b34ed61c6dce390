"""The compact node (src/autograd/node.rs): hooks found by the node's address, grad_fn names
interned to ids, one shared meta with a number operand beside it, edges inline or in a block.
Each layout case is checked against torch (names, next_functions, gradient dtypes and shapes)."""

import gc

import pytest
import torch

import ferrograd as fg


def next_names(gf):
    return [None if f is None else type(f).__name__ if not hasattr(f, "name") else f.name() for f, _ in gf.next_functions]


def test_hooks_do_not_outlive_their_node():
    # a node's hooks live in a side table keyed by its slot; a new node in the same slot must
    # not see them
    fired = []
    for _ in range(3):
        x = fg.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        y.register_hook(lambda g: fired.append(1))
        y.grad_fn.register_prehook(lambda g: fired.append(2))
        del y
        gc.collect()
    fired.clear()
    for _ in range(2000):  # reuse the freed slots
        x = fg.tensor([1.0, 2.0], requires_grad=True)
        x.exp().sum().backward()
    assert fired == []


@pytest.mark.parametrize("expr", [
    lambda L, x: x * 2.0,
    lambda L, x: 2.0 * x,
    lambda L, x: x + 3,
    lambda L, x: 3 - x,
    lambda L, x: x / 4.0,
    lambda L, x: x * L.tensor(2.0, dtype=L.float64),  # a 0-d tensor operand of another dtype
    lambda L, x: x * L.ones(3, dtype=L.float64),  # broadcast + promotion: metas differ
    lambda L, x: L.cat([x, x * 2, x, x + 1, x]),  # more than two edges
    lambda L, x: x.reshape(1, 3, 1).expand(2, 3, 4),  # a 3-d output: meta on the heap
    lambda L, x: x.unbind(0)[1] * 2,  # several outputs
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layouts_match_torch(expr, dtype):
    res = {}
    for L in (fg, torch):
        x = L.tensor([0.5, -1.5, 2.0], dtype=getattr(L, dtype), requires_grad=True)
        y = expr(L, x)
        names = (y.grad_fn.name(), next_names(y.grad_fn))
        y.sum().backward() if y.dim() else y.backward()
        res[L] = (names, x.grad.dtype == getattr(L, dtype), tuple(x.grad.shape), x.grad.tolist())
    (fn, fok, fs, fv), (tn, tok, ts, tv) = res[fg], res[torch]
    assert fn == tn and fok and tok and fs == ts
    assert fv == pytest.approx(tv, rel=1e-6)


def test_custom_function_names_are_kept():
    class Square(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = fg.tensor(3.0, requires_grad=True)
    ys = [Square.apply(x) for _ in range(3)]
    assert {y.grad_fn.name() for y in ys} == {"SquareBackward"}
    sum(ys).backward()
    assert x.grad.item() == 18.0


def test_wrapped_number_promotes_like_torch():
    # an int tensor times a float number: the number decides the dtype (no uniform meta)
    for L in (fg, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x.double() * 2.5).float() * 2
        y.sum().backward()
        if L is fg:
            got = (x.grad.dtype == fg.float32, x.grad.tolist())
        else:
            want = (x.grad.dtype == torch.float32, x.grad.tolist())
    assert got == want


def versions(L):
    """Version counters through .data, detach, view(dtype), set_data and views (Note [Version
    counters]: most tensors use their storage's counter)."""
    out = []
    x = L.zeros(4)
    d = x.data
    d.add_(1)  # .data: the same buffer under another counter
    out.append((x._version, d._version))
    x.detach().add_(1)  # detach shares the counter
    out.append(x._version)
    v = x.view(L.int32)  # a view of another dtype shares it too
    v.add_(1)
    out.append((x._version, v._version))
    s = x[1:3]
    s.mul_(2)
    out.append((x._version, s._version))
    y = L.ones(4)
    x.data = y  # set_data
    x.add_(1)
    out.append((x._version >= 1, y._version))
    w = L.ones(3, requires_grad=True)
    t = w.exp()
    t.data.mul_(0)  # not seen by autograd (torch's .data contract): backward uses the new values
    t.sum().backward()
    out.append(w.grad.tolist())
    return out


def test_version_counters_match_torch():
    assert versions(fg) == versions(torch)
