"""Autograd and Tensor semantics, each compared with what torch does.

Most tests are `same(lambda L: ...)`: the lambda runs once with torch and once with the library under
test and returns what it observes (flags, names, values, tensors); torch's answer is the expectation.
Covers: requires_grad propagation, grad modes, detach, backward options, accumulation, retain_grad,
grad_fn names and next_functions, .data, higher-order gradients, Tensor attributes and conversions,
storage sharing (views, numpy), repr, creation functions.
"""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg
from parity import graph, node_name, same


def leaf(L, values, dtype=None):
    return L.tensor(values, requires_grad=True, dtype=dtype if dtype is not None else L.float32)


def fl(t):
    """Plain values of a tensor (or None)."""
    return None if t is None else t.detach().numpy().copy()


# ---------------------------------------------------------------- requires_grad propagation
def test_requires_grad_propagation():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        y = L.tensor([3.0, 4.0])
        a = x * y
        b = y * 2
        c = a + b
        d = y.sum()
        e = c.detach()
        g = (x > 1)
        h = x.argmax()
        ts = (x, y, a, b, c, d, e, g, h)
        return ([t.requires_grad for t in ts], [t.is_leaf for t in ts], [t.grad_fn is None for t in ts])
    same(f)


def test_requires_grad_defaults_and_setter():
    def f(L):
        a = L.zeros(2)
        r0 = a.requires_grad
        a.requires_grad = True
        b = L.ones(2, requires_grad=True)
        c = L.tensor([1.0], requires_grad=False)
        d = L.randn(2, requires_grad=True)
        return r0, a.requires_grad, a.is_leaf, b.requires_grad, c.requires_grad, d.requires_grad, (a * b).requires_grad
    same(f)


def test_requires_grad_():
    def f(L):
        a = L.zeros(3)
        r = a.requires_grad_()
        same_obj = r is a
        s1 = a.requires_grad
        a.requires_grad_(False)
        s2 = a.requires_grad
        a.requires_grad_(True)
        (a * 2).sum().backward()
        return same_obj, s1, s2, a.grad
    same(f)


# ---------------------------------------------------------------- grad modes
def test_no_grad_context():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        with L.no_grad():
            y = x * 2
            inner = L.is_grad_enabled()
            with L.enable_grad():
                z = x * 2
            w = x * 3
        v = x * 4
        return (y.requires_grad, y.grad_fn is None, y.is_leaf, inner, z.requires_grad, w.requires_grad,
                v.requires_grad, L.is_grad_enabled(), y)
    same(f)


def test_set_grad_enabled_context_and_function():
    def f(L):
        x = leaf(L, [1.0])
        with L.set_grad_enabled(False):
            a = x * 2
        with L.set_grad_enabled(True):
            b = x * 2
        L.set_grad_enabled(False)
        try:
            c = x * 2
            mid = L.is_grad_enabled()
        finally:
            L.set_grad_enabled(True)
        d = x * 2
        return a.requires_grad, b.requires_grad, c.requires_grad, mid, d.requires_grad, L.is_grad_enabled()
    same(f)


def test_grad_mode_decorators():
    def f(L):
        x = leaf(L, [1.0])

        @L.no_grad()
        def nog(t):
            return t * 2

        @L.no_grad
        def nog_bare(t):
            return t * 2

        @L.enable_grad()
        def eng(t):
            return t * 2

        @L.set_grad_enabled(False)
        def sge(t):
            return t * 2

        with L.no_grad():
            inside = eng(x).requires_grad  # enable_grad wins inside no_grad
        return (nog(x).requires_grad, nog_bare(x).requires_grad, inside, sge(x).requires_grad,
                L.is_grad_enabled(), nog.__name__)
    same(f)


def test_grad_mode_restored_after_exception():
    def f(L):
        x = leaf(L, [1.0])
        try:
            with L.no_grad():
                raise ValueError("boom")
        except ValueError:
            pass
        return L.is_grad_enabled(), (x * 2).requires_grad
    same(f)


def test_no_grad_inplace_update_of_leaf():
    """The optimizer pattern: update a leaf in place under no_grad; it stays a leaf that requires grad."""
    def f(L):
        w = leaf(L, [1.0, -2.0, 3.0])
        (w * w).sum().backward()
        with L.no_grad():
            w -= 0.1 * w.grad
            w.add_(1.0)
        w.grad = None
        (w * w).sum().backward()
        return w, w.is_leaf, w.requires_grad, w.grad_fn is None, w.grad
    same(f)


# ---------------------------------------------------------------- detach, detach_, .data
def test_detach():
    def f(L):
        x = leaf(L, [1.0, 2.0, 3.0])
        d = x.detach()
        flags = (d.requires_grad, d.is_leaf, d.grad_fn is None)
        d[0] = 10.0  # shares storage with x
        y = (x * d).sum()
        y.backward()
        return flags, x, x.grad
    same(f)


def test_detach_():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        y = x * 2
        r = y.detach_()
        return r is y, y.requires_grad, y.is_leaf, y.grad_fn is None, y
    same(f)


def test_data():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        d = x.data
        flags = (d.requires_grad, d.is_leaf, x.requires_grad)
        d.mul_(3)  # not recorded, seen by x
        y = (x * x).sum()
        y.backward()
        x.data = L.tensor([5.0, 6.0])
        return flags, x.grad, x, x.requires_grad, x.is_leaf
    same(f)


# ---------------------------------------------------------------- backward options
def test_backward_gradient_argument():
    def f(L):
        x = leaf(L, [1.0, 2.0, 3.0])
        (x * x).backward(gradient=L.tensor([1.0, 0.5, 2.0]))
        g1 = fl(x.grad)
        x.grad = None
        (x * 3).sum().backward(L.tensor(2.0))
        g2 = fl(x.grad)
        x.grad = None
        x.backward(L.tensor([1.0, 2.0, 3.0]))  # backward on a leaf
        return g1, g2, x.grad
    same(f)


def test_backward_retain_graph():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        y = (x * x).sum()
        y.backward(retain_graph=True)
        g1 = fl(x.grad)
        y.backward()
        return g1, x.grad
    same(f)


def test_backward_create_graph():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        y = (x ** 3).sum()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        g = x.grad
        info = (g.requires_grad, node_name(g.grad_fn) is not None, fl(g))
        x.grad = None
        g.sum().backward()
        return info, x.grad
    same(f)


def test_backward_plain_grad_has_no_graph():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        (x * x).sum().backward()
        return x.grad.requires_grad, x.grad.grad_fn is None, x.grad.is_leaf
    same(f)


def test_backward_inputs():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        y = leaf(L, [3.0, 4.0])
        a = x * y
        z = (a * a).sum()
        z.backward(inputs=[x], retain_graph=True)
        r1 = (fl(x.grad), y.grad)
        x.grad = None
        z.backward(inputs=y, retain_graph=True)
        r2 = (x.grad, fl(y.grad))
        y.grad = None
        z.backward(inputs=[a])  # a non-leaf input gets its .grad
        return r1, r2, a.grad, x.grad, y.grad
    same(f)


def test_accumulation():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        (x * 2).sum().backward()
        g1 = fl(x.grad)
        (x * x).sum().backward()
        g2 = fl(x.grad)
        x.grad.zero_()
        g3 = fl(x.grad)
        (x * 5).sum().backward()
        g4 = fl(x.grad)
        x.grad = None
        (x * 7).sum().backward()
        x.grad = L.tensor([0.5, 0.5])
        (x * 1).sum().backward()
        return g1, g2, g3, g4, x.grad
    same(f)


def test_accumulation_through_fan_out():
    def f(L):
        x = leaf(L, [0.5, -1.0, 2.0])
        y = x * x + x.exp() * x - x / 3
        z = y * x + y
        z.sum().backward()
        return x.grad
    same(f)


def test_unused_leaf_has_no_grad():
    def f(L):
        x = leaf(L, [1.0])
        u = leaf(L, [2.0])
        (x * 2).sum().backward()
        return x.grad, u.grad
    same(f)


def test_retain_grad():
    def f(L):
        x = leaf(L, [1.0, 2.0, 3.0])
        a = x * 2
        a.retain_grad()
        b = a.exp()
        c = b * a
        (c.sum()).backward()
        x.retain_grad()  # no-op on a leaf
        return a.retains_grad, b.retains_grad, a.grad, x.grad
    same(f)


def test_grad_of_non_leaf_is_none_with_warning():
    def f(L):
        x = leaf(L, [1.0])
        y = x * 2
        y.sum().backward()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g = y.grad
        return g, any(issubclass(i.category, UserWarning) for i in w)
    same(f)


def test_inplace_returns_self():
    def f(L):
        y = leaf(L, [1.0, 2.0]).clone()
        return (y.add_(1) is y, y.mul_(2) is y, y.zero_() is y, y.fill_(3) is y, y.clamp_(0, 1) is y,
                y.sub_(1) is y, y.div_(2) is y, y.copy_(L.ones(2)) is y)
    same(f)


def test_deep_chain_backward():
    """A long chain must backpropagate (and be freed) without recursion limits."""
    def f(L):
        x = leaf(L, [1.0], dtype=L.float64)
        y = x
        for _ in range(30000):
            y = y * 1.00001
        y.sum().backward()
        del y
        return x.grad
    same(f)


def test_backward_deterministic():
    """The same backward twice gives bitwise the same gradient (fixed accumulation order)."""
    def run(L):
        x = L.tensor(np.linspace(-1, 1, 4096).astype(np.float32), requires_grad=True)
        parts = [(x * (i + 1) / 7.0).sin() for i in range(40)]
        sum(parts).sum().backward()
        return x.grad.numpy().copy()

    for L in (torch, fg):
        a, b = run(L), run(L)
        assert a.tobytes() == b.tobytes()
    same(run, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- grad_fn names and graph structure
def test_grad_fn_names_from_issue():
    x = fg.tensor([2.0], requires_grad=True)
    assert node_name((x * 3).grad_fn) == "MulBackward0"
    assert node_name(x.mean().grad_fn) == "MeanBackward0"
    assert node_name((x * 3).grad_fn.next_functions[0][0]) == "AccumulateGrad"
    assert x.grad_fn is None


GRAD_FN_CASES = {
    "add": lambda L, x, y: x + y, "add_scalar": lambda L, x, y: x + 1, "radd": lambda L, x, y: 1 + x,
    "sub": lambda L, x, y: x - y, "rsub": lambda L, x, y: 1 - x, "mul": lambda L, x, y: x * y,
    "mul_scalar": lambda L, x, y: x * 2.0, "div": lambda L, x, y: x / y, "div_scalar": lambda L, x, y: x / 2,
    "rdiv": lambda L, x, y: 2 / x, "neg": lambda L, x, y: -x, "abs": lambda L, x, y: x.abs(),
    "pow_scalar": lambda L, x, y: x ** 2, "pow_tensor": lambda L, x, y: x ** y, "rpow": lambda L, x, y: 2 ** x,
    "remainder": lambda L, x, y: x % y,
    "exp": lambda L, x, y: x.exp(), "log": lambda L, x, y: x.abs().log(), "log2": lambda L, x, y: x.abs().log2(),
    "log1p": lambda L, x, y: x.abs().log1p(), "expm1": lambda L, x, y: x.expm1(),
    "sqrt": lambda L, x, y: x.abs().sqrt(), "rsqrt": lambda L, x, y: x.abs().rsqrt(),
    "sin": lambda L, x, y: x.sin(), "cos": lambda L, x, y: x.cos(), "tan": lambda L, x, y: x.tan(),
    "tanh": lambda L, x, y: x.tanh(), "sigmoid": lambda L, x, y: x.sigmoid(), "relu": lambda L, x, y: x.relu(),
    "sign": lambda L, x, y: x.sign(), "floor": lambda L, x, y: x.floor(), "ceil": lambda L, x, y: x.ceil(),
    "round": lambda L, x, y: x.round(), "trunc": lambda L, x, y: x.trunc(),
    "reciprocal": lambda L, x, y: x.reciprocal(), "square": lambda L, x, y: x.square(),
    "erf": lambda L, x, y: x.erf(),
    "where": lambda L, x, y: L.where(x > 0, x, y), "maximum": lambda L, x, y: L.maximum(x, y),
    "minimum": lambda L, x, y: L.minimum(x, y), "clamp": lambda L, x, y: x.clamp(-1, 1),
    "clamp_min": lambda L, x, y: x.clamp(min=0), "clip": lambda L, x, y: x.clip(-1, 1),
    "sum": lambda L, x, y: x.sum(), "sum_dim": lambda L, x, y: x.sum(0), "mean": lambda L, x, y: x.mean(),
    "mean_dim": lambda L, x, y: x.mean(1), "prod": lambda L, x, y: x.prod(), "prod_dim": lambda L, x, y: x.prod(1),
    "max": lambda L, x, y: x.max(), "max_dim": lambda L, x, y: x.max(1)[0], "min": lambda L, x, y: x.min(),
    "min_dim": lambda L, x, y: x.min(0).values, "amax": lambda L, x, y: x.amax(1),
    "amin": lambda L, x, y: x.amin(), "var": lambda L, x, y: x.var(), "var_dim": lambda L, x, y: x.var(1),
    "std": lambda L, x, y: x.std(0), "logsumexp": lambda L, x, y: x.logsumexp(1),
    "norm": lambda L, x, y: x.norm(), "norm_dim": lambda L, x, y: x.norm(dim=1),
    "cumsum": lambda L, x, y: x.cumsum(0),
    "matmul_2d": lambda L, x, y: x @ y.t(), "matmul_1d": lambda L, x, y: x[0] @ y[0],
    "matmul_mv": lambda L, x, y: x @ y[0], "mm": lambda L, x, y: L.mm(x, y.t()),
    "bmm": lambda L, x, y: L.bmm(x[None], y.t()[None]), "mv": lambda L, x, y: L.mv(x, y[0]),
    "dot": lambda L, x, y: L.dot(x[0], y[0]), "outer": lambda L, x, y: L.outer(x[0], y[0]),
    "softmax": lambda L, x, y: x.softmax(1), "log_softmax": lambda L, x, y: x.log_softmax(1),
    "F_softmax": lambda L, x, y: L.nn.functional.softmax(x, dim=0),
    "reshape": lambda L, x, y: x.reshape(-1), "reshape_copy": lambda L, x, y: x.t().reshape(-1),
    "view": lambda L, x, y: x.view(3, 2), "flatten": lambda L, x, y: x.flatten(),
    "squeeze": lambda L, x, y: x[None].squeeze(0), "squeeze_all": lambda L, x, y: x[None].squeeze(),
    "unsqueeze": lambda L, x, y: x.unsqueeze(0), "transpose": lambda L, x, y: x.transpose(0, 1),
    "t": lambda L, x, y: x.t(), "T": lambda L, x, y: x.T, "mT": lambda L, x, y: x.mT,
    "permute": lambda L, x, y: x.permute(1, 0), "expand": lambda L, x, y: x[None].expand(2, 2, 3),
    "expand_as": lambda L, x, y: x[0].expand_as(y), "broadcast_to": lambda L, x, y: x.broadcast_to((2, 2, 3)),
    "contiguous": lambda L, x, y: x.t().contiguous(), "clone": lambda L, x, y: x.clone(),
    "cat": lambda L, x, y: L.cat([x, y]), "stack": lambda L, x, y: L.stack([x, y]),
    "split": lambda L, x, y: x.split(1)[1], "chunk": lambda L, x, y: x.chunk(2, 1)[0],
    "repeat": lambda L, x, y: x.repeat(2, 1), "flip": lambda L, x, y: x.flip(0),
    "narrow": lambda L, x, y: x.narrow(1, 0, 2),
    "select": lambda L, x, y: x[0], "slice": lambda L, x, y: x[:, 1:], "index": lambda L, x, y: x[L.tensor([1, 0])],
    "mask": lambda L, x, y: x[x > 0], "none": lambda L, x, y: x[None],
    "gather": lambda L, x, y: x.gather(1, L.tensor([[0], [2]])),
    "index_select": lambda L, x, y: x.index_select(0, L.tensor([1])),
    "masked_fill": lambda L, x, y: x.masked_fill(x > 0, 0.0),
    "to": lambda L, x, y: x.to(L.float64), "float": lambda L, x, y: x.double().float(),
    "type_as": lambda L, x, y: x.type_as(L.zeros(1, dtype=L.float64)),
}


@pytest.mark.parametrize("name", sorted(GRAD_FN_CASES))
def test_grad_fn_name(name):
    def f(L):
        x = L.tensor([[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]], requires_grad=True)
        y = L.tensor([[1.1, 0.9, -0.4], [0.2, -2.0, 1.3]], requires_grad=True)
        out = GRAD_FN_CASES[name](L, x, y)
        return node_name(out.grad_fn)
    same(f)


def _inplace_case(op, structure=True):
    def f(L):
        x = L.tensor([[0.5, -1.2, 2.0], [1.5, 0.3, -0.7]], requires_grad=True)
        y = x.clone()
        op(L, y)
        return node_name(y.grad_fn), graph(y.grad_fn, 3) if structure else None
    return f


INPLACE_GRAD_FN = {
    "add_": lambda L, y: y.add_(1), "mul_": lambda L, y: y.mul_(y.detach()), "div_": lambda L, y: y.div_(2),
    "sub_": lambda L, y: y.sub_(1), "zero_": lambda L, y: y.zero_(), "fill_": lambda L, y: y.fill_(1),
    "clamp_": lambda L, y: y.clamp_(0, 1), "copy_": lambda L, y: y.copy_(L.ones(3)),
    "iadd": lambda L, y: y.__iadd__(2), "setitem": lambda L, y: y.__setitem__(0, 1.0),
    "setitem_view_op": lambda L, y: y[0].mul_(2),
}


@pytest.mark.parametrize("name", sorted(INPLACE_GRAD_FN))
def test_grad_fn_name_inplace(name):
    # CopySlices of an op on a view: only the name (its next_functions mirror torch internals)
    same(_inplace_case(INPLACE_GRAD_FN[name], structure=name != "setitem_view_op"))


def test_next_functions_structure():
    def f(L):
        x = leaf(L, [1.0, 2.0])
        w = leaf(L, [3.0, 4.0])
        c = L.tensor([5.0, 6.0])
        graphs = [
            graph((x * 2).grad_fn),
            graph((x * c).grad_fn),
            graph((c * x).grad_fn),
            graph((x + w).grad_fn),
            graph(((x * w).sum() + x.mean()).grad_fn),
            graph((x.exp() * x.exp()).grad_fn),
            graph(L.cat([x, c, w]).grad_fn),
            graph(L.where(x > 1, x, c).grad_fn),
        ]
        a, b = (x * 1).split(1)
        graphs.append(graph((a * b).grad_fn))
        acc = (x * 2).grad_fn.next_functions[0][0]
        return graphs, acc.next_functions, fl(acc.variable)
    same(f)


def test_is_leaf():
    def f(L):
        x = leaf(L, [1.0])
        c = L.tensor([1.0])
        with L.no_grad():
            n = x * 2
        return x.is_leaf, c.is_leaf, (x * 2).is_leaf, (c * 2).is_leaf, n.is_leaf, x.detach().is_leaf, \
            x.clone().is_leaf, x[0].is_leaf, c[0].is_leaf
    same(f)


# ---------------------------------------------------------------- higher-order gradients
def _nth_grads(L, fn, x, n):
    out = []
    y = fn(L, x).sum()
    for k in range(n):
        x.grad = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y.backward(create_graph=True)
        g = x.grad
        out.append(fl(g))
        if not g.requires_grad:
            break
        y = g.sum()
    return out


DOUBLE = {
    "tanh": lambda L, x: x.tanh(), "mul": lambda L, x: x * x * 3, "pow": lambda L, x: x ** 3,
    "pow_tensor": lambda L, x: x.abs() ** x, "exp": lambda L, x: x.exp(), "sigmoid": lambda L, x: x.sigmoid(),
    "log": lambda L, x: (x * x + 1).log(), "div": lambda L, x: 1 / (x * x + 1),
    "matmul": lambda L, x: (x.reshape(2, 2) @ x.reshape(2, 2)),
    "softmax": lambda L, x: x.softmax(0) * L.tensor([1.0, 2.0, 3.0, 4.0]),
    "log_softmax": lambda L, x: x.log_softmax(0) * L.tensor([1.0, 2.0, 3.0, 4.0]),
    "logsumexp": lambda L, x: x.logsumexp(0), "sin": lambda L, x: x.sin() * x.cos(),
    "sqrt": lambda L, x: (x * x + 1).sqrt(), "std": lambda L, x: x.std(), "norm": lambda L, x: x.norm(),
    "prod": lambda L, x: x.prod(), "erf": lambda L, x: x.erf(), "tan": lambda L, x: x.tan(),
    "relu": lambda L, x: x.relu() * x, "abs": lambda L, x: x.abs() * x,
    "where": lambda L, x: L.where(x > 0, x ** 2, x ** 3),
    "cumsum": lambda L, x: x.cumsum(0) ** 2, "max": lambda L, x: x.max() * x,
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_higher_order(name):
    """d/dx, d2/dx2, d3/dx3 of sum(fn(x)) via backward(create_graph=True) repeatedly."""
    def f(L):
        x = L.tensor([0.3, -0.8, 1.1, 0.6], dtype=L.float64, requires_grad=True)
        return _nth_grads(L, DOUBLE[name], x, 3)
    same(f)


# ---------------------------------------------------------------- Tensor attributes and conversion
def test_attributes():
    def f(L):
        x = L.arange(24, dtype=L.float32).reshape(2, 3, 4)
        v = L.tensor(3.5)
        return (x.shape, tuple(x.shape), isinstance(x.shape, tuple), x.size(), x.size(1), x.size(-1),
                x.size(dim=0), x.dim(), x.ndim, x.numel(), v.dim(), v.numel(), v.shape, x.dtype,
                str(x.device), x.device.type, x.mT, x[0].T, len(x), x.requires_grad, x.grad, x.grad_fn)
    same(f)


def test_item_tolist_conversions():
    def f(L):
        a = L.tensor([[1.5, 2.0], [3.0, -4.25]])
        i = L.tensor([[1, 2], [3, 4]])
        b = L.tensor([True, False])
        return (L.tensor(2.5).item(), L.tensor([7]).item(), L.tensor([[True]]).item(),
                L.tensor(2.5, dtype=L.float64).item(), a.tolist(), i.tolist(), b.tolist(), L.tensor(3).tolist(),
                L.zeros(0, 2).tolist(), float(L.tensor([2.5])), int(L.tensor(3.9)), int(L.tensor([[-3.9]])),
                bool(L.tensor([0.0])), bool(L.tensor(2)), float(L.tensor(7)), bool(L.tensor([True])))
    same(f)


def test_len_and_iteration():
    def f(L):
        x = L.arange(6.0).reshape(3, 2)
        rows = list(x)
        elems = [e for e in L.tensor([1, 2, 3])]
        return len(x), len(L.zeros(0, 3)), rows, elems, [r.shape for r in rows], list(L.zeros(0))
    same(f)


def test_numpy():
    def f(L):
        return (L.tensor([1.5, 2.0]).numpy(), L.tensor([1, 2]).numpy(), L.tensor([True]).numpy(),
                L.tensor([1.0], dtype=L.float64).numpy(), L.tensor(2.0).numpy(), L.zeros(0, 3).numpy(),
                L.ones(2, requires_grad=True).detach().numpy(), L.arange(6.0).reshape(2, 3).t().numpy())
    same(f)


def test_numpy_shares_memory():
    def f(L):
        a = np.zeros(3)
        t = L.from_numpy(a)
        a[0] = 5.0       # numpy -> tensor
        t[1] = 7.0       # tensor -> numpy
        n = t.numpy()
        n[2] = 9.0       # numpy() result -> tensor
        c = L.tensor(a)  # tensor() copies
        a[0] = -1.0
        s = L.as_tensor(a)  # as_tensor of a matching ndarray shares
        a[1] = -2.0
        u = L.ones(3)
        u.numpy()[0] = 4.0
        return t.clone(), a.copy(), c, s.clone(), u, t.dtype, L.from_numpy(np.zeros(2, np.float32)).dtype, \
            L.from_numpy(np.zeros(2, np.int64)).dtype, L.from_numpy(np.zeros(2, bool)).dtype
    same(f)


def test_views_share_storage():
    def f(L):
        base = L.zeros(2, 3)
        base[0].fill_(1.0)
        base[:, 2].add_(2.0)
        base.t()[0, 1] = 5.0
        base.view(-1)[1] = 6.0
        base.reshape(6)[4] = 7.0
        base.unsqueeze(0)[0, 1, 0] = 8.0
        base.permute(1, 0)[2].mul_(10)
        base.narrow(1, 1, 1).sub_(1)
        base[None].squeeze(0)[0, 0] = -1.0
        base.T[0].add_(100)
        base.flatten()[5] = 3.0  # flatten of a contiguous tensor is a view
        e = L.tensor([1.0, 2.0]).expand(3, 2)
        return base, e
    same(f)


def test_clone_and_contiguous_copy():
    def f(L):
        a = L.ones(2, 3)
        c = a.clone()
        c[0, 0] = 5.0
        t = a.t().contiguous()
        t[0, 0] = 6.0
        r = a.t().reshape(6)  # needs a copy
        r[0] = 7.0
        return a, c, t, r, a.contiguous() is a
    same(f)


def test_clone_of_large_tensors():
    """Copies big enough to run on several threads: contiguous, offset, dense-permuted, of every
    element size; values, strides and independence from the source."""
    def f(L):
        out = []
        for dt in (L.float32, L.float64, L.int64, L.int32, L.bool, L.float16, L.uint8):
            a = (L.arange(3 * 50_000) % 251).to(dt).reshape(3, 50_000)
            for v in (a, a[1:], a.t(), a[:, 7:]):
                c = v.clone()
                k = v.contiguous()
                out.append((c.stride(), k.stride(), c.dtype, bool((c == v).all()), bool((k == v).all())))
            c = a.clone()
            c[0, 0] = 1
            a[0, 1] = 0
            out.append((c[0, :3].tolist(), a[0, :3].tolist()))
        return out
    same(f)


# ---------------------------------------------------------------- repr
REPRS = {
    "grad_fn": lambda L: L.tensor([2.0], requires_grad=True) * 3,
    "requires_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True),
    "scalar": lambda L: L.tensor(3.0),
    "int": lambda L: L.tensor([1, 2]),
    "float64": lambda L: L.tensor([1.0, 2.0], dtype=L.float64),
    "float64_grad": lambda L: L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True),
    "matrix": lambda L: L.tensor([[1.5, -2.0], [3.0, 4.0]]),
    "decimals": lambda L: L.tensor([1.5, 2.25, 3.0]),
    "fractions": lambda L: L.tensor([0.1, 0.25]),
    "sci": lambda L: L.tensor([1e-5, 1e5]),
    "sci_single": lambda L: L.tensor([123456789.0]),
    "big_range": lambda L: L.tensor([1.0, 1000000.0]),
    "negative": lambda L: L.tensor([-1.0, 2.0]),
    "many_digits": lambda L: L.tensor([1.123456789]),
    "empty_2d": lambda L: L.zeros(0, 3),
    "empty": lambda L: L.tensor([]),
    "empty_int": lambda L: L.zeros(0, dtype=L.int64),
    "empty_grad": lambda L: L.zeros(0, requires_grad=True),
    "bool": lambda L: L.tensor([True, False]),
    "bool_scalar": lambda L: L.tensor(True),
    "nan_inf": lambda L: L.tensor([float("nan"), float("inf"), -1.0]),
    "int_widths": lambda L: L.tensor([1, -100, 10000]),
    "int_3d": lambda L: L.arange(24).reshape(2, 3, 4),
    "sum_grad_fn": lambda L: (L.tensor([2.0, 4.0], requires_grad=True) * 2).sum(),
    "scalar_f64_grad": lambda L: L.tensor(2.5, dtype=L.float64, requires_grad=True),
    "wrapped_grad_fn": lambda L: L.arange(6.0, dtype=L.float64).reshape(2, 3) * L.tensor(
        [1.12345, 2.0, 3.0], dtype=L.float64, requires_grad=True),
    "summarized_int": lambda L: L.arange(2000),
    "summarized_float": lambda L: L.arange(2000.0),
    "no_grad": lambda L: L.tensor([1.0], requires_grad=True).detach() * 2,
    "integral_floats": lambda L: L.tensor([1.0, 2.0, -3.0]),
    "zeros": lambda L: L.zeros(2, 2),
}


@pytest.mark.parametrize("name", sorted(REPRS))
def test_repr(name):
    t = REPRS[name](torch)
    f = REPRS[name](fg)
    assert repr(f).replace(fg.__name__ + ".", "torch.") == repr(t)
    assert str(f).replace(fg.__name__ + ".", "torch.") == str(t)


def test_dtype_repr():
    # torch's spelling, so a program printing or comparing str(dtype) gives torch's lines
    for name in ("float32", "float64", "int64", "bool", "float16", "bfloat16", "uint8"):
        assert str(getattr(fg, name)) == str(getattr(torch, name)) == f"torch.{name}"
        assert repr(getattr(fg, name)) == repr(getattr(torch, name))
    assert repr(fg.ones(2, dtype=fg.float64)) == repr(torch.ones(2, dtype=torch.float64))
    assert str(fg.channels_last) == str(torch.channels_last)


def test_dtype_aliases():
    def f(L):
        return (L.float == L.float32, L.double == L.float64, L.long == L.int64, L.float32 == L.float64,
                L.zeros(1, dtype=L.float).dtype, L.zeros(1, dtype=L.double).dtype, L.zeros(1, dtype=L.long).dtype,
                L.float32.is_floating_point, L.int64.is_floating_point, L.tensor([1.0]).is_floating_point(),
                L.tensor([1]).is_floating_point())
    same(f)


# ---------------------------------------------------------------- creation
def test_creation_values():
    def f(L):
        return (L.zeros(2, 3), L.zeros((2, 3)), L.zeros([4]), L.zeros(2, 3, dtype=L.int64), L.zeros(()),
                L.ones(2, 3), L.ones((3,), dtype=L.float64), L.ones(2, dtype=L.bool),
                L.full((2, 3), 1.5), L.full((2,), 7), L.full((2,), True), L.full((2, 2), 2.0, dtype=L.float64),
                L.full([3], -1, dtype=L.float32),
                L.arange(5), L.arange(1, 4), L.arange(0, 1, 0.25), L.arange(5.0), L.arange(0, 10, 3),
                L.arange(5, dtype=L.float64), L.arange(10, 0, -3), L.arange(0.5, 2.0), L.arange(1, 2.5, 0.5),
                L.linspace(0, 1, 5), L.linspace(-1, 1, steps=3), L.linspace(2, 3, 1), L.linspace(0, 1, 0),
                L.linspace(0, 10, 4, dtype=L.float64),
                L.eye(3), L.eye(2, 3), L.eye(3, 2), L.eye(3, dtype=L.int64), L.eye(0))
    same(f)


def test_tensor_constructor():
    def f(L):
        return (L.tensor([1.0, 2]), L.tensor([1, 2]), L.tensor([True]), L.tensor(3.5), L.tensor(3),
                L.tensor([]), L.tensor([[1, 2], [3, 4]]), L.tensor([1, 2.5]), L.tensor([[]]),
                L.tensor([1, 2], dtype=L.float64), L.tensor([1.7, -1.7], dtype=L.int64),
                L.tensor([0.0, 2.0], dtype=L.bool), L.tensor(np.array([1.5, 2.5], dtype=np.float32)),
                L.tensor(np.array([[1, 2]])), L.tensor(np.array(True)), L.tensor(np.float64(2.5)),
                L.tensor(np.arange(6.0).reshape(2, 3).T),
                L.tensor([True, False], dtype=L.float32), L.tensor([[1.0], [2.0]], requires_grad=True),
                L.as_tensor([1, 2]), L.as_tensor([1.0, 2.0], dtype=L.float64), L.as_tensor(np.ones(2)))
    same(f)


def test_default_dtypes():
    def f(L):
        return (L.arange(5).dtype, L.arange(5.0).dtype, L.tensor([1.0, 2]).dtype, L.tensor([1, 2]).dtype,
                L.tensor([True]).dtype, L.zeros(1).dtype, L.ones(1).dtype, L.rand(1).dtype, L.randn(1).dtype,
                L.randint(0, 3, (1,)).dtype, L.eye(1).dtype, L.linspace(0, 1, 2).dtype, L.full((1,), 1.0).dtype,
                L.empty(1).dtype, L.tensor(1).dtype, L.tensor(1.0).dtype, L.tensor(np.zeros(1)).dtype)
    same(f)


def test_creation_requires_grad_kwarg():
    def f(L):
        ts = (L.zeros(2, requires_grad=True), L.ones(2, requires_grad=True), L.full((2,), 1.0, requires_grad=True),
              L.empty(2, requires_grad=True), L.randn(2, requires_grad=True), L.rand(2, requires_grad=True),
              L.arange(3.0, requires_grad=True), L.linspace(0, 1, 3, requires_grad=True),
              L.eye(2, requires_grad=True), L.tensor([1.0], requires_grad=True),
              L.zeros_like(L.ones(2), requires_grad=True), L.zeros(2, requires_grad=False))
        return [(t.requires_grad, t.is_leaf, t.grad_fn is None) for t in ts]
    same(f)


def test_empty_shape_dtype():
    def f(L):
        return (L.empty(2, 3).shape, L.empty((4,)).dtype, L.empty(2, dtype=L.int64).dtype, L.empty(0).shape,
                L.empty_like(L.ones(2, 3, dtype=L.float64)).shape, L.empty_like(L.ones(2, dtype=L.int64)).dtype)
    same(f)


def test_like_functions():
    def f(L):
        x = L.tensor([[1.0, 2.0, 3.0]], dtype=L.float64, requires_grad=True)
        i = L.tensor([[1, 2], [3, 4]])
        r = (L.rand_like(x), L.randn_like(x), L.rand_like(x, dtype=L.float32))
        return (L.zeros_like(x), L.ones_like(x), L.full_like(x, 2.5), L.zeros_like(i), L.ones_like(i),
                L.full_like(i, 7), L.full_like(i, 2.7), L.zeros_like(x, dtype=L.int64), L.ones_like(i, dtype=L.float32),
                [(t.shape, t.dtype, t.requires_grad) for t in r])
    same(f)


def test_random_shapes_dtypes_ranges():
    def f(L):
        r = L.rand(300, 40)
        n = L.randn(300, 40)
        i = L.randint(3, 10, (2000,))
        j = L.randint(5, (7, 3))
        d = L.randn(4, dtype=L.float64)
        e = L.rand(2, 3, dtype=L.float64)
        return (r.shape, r.dtype, bool((r >= 0).all()), bool((r < 1).all()), abs(r.mean().item() - 0.5) < 0.02,
                n.shape, n.dtype, abs(n.mean().item()) < 0.03, abs(n.std().item() - 1) < 0.03,
                i.shape, i.dtype, i.min().item(), i.max().item(), j.shape, j.dtype, bool((j >= 0).all()),
                bool((j < 5).all()), d.dtype, e.dtype, e.shape, L.rand(()).shape, L.randn(0).shape,
                L.rand((2, 2)).shape, L.randn([3]).shape)
    same(f)


def test_manual_seed_reproducible():
    def f(L):
        L.manual_seed(1234)
        a = (L.rand(5), L.randn(5), L.randint(0, 100, (5,)), L.randn_like(L.ones(3)))
        L.manual_seed(1234)
        b = (L.rand(5), L.randn(5), L.randint(0, 100, (5,)), L.randn_like(L.ones(3)))
        L.manual_seed(4321)
        c = L.rand(5)
        return ([bool((u == v).all()) for u, v in zip(a, b)], bool((a[0] != c).any()),
                bool((a[0] != L.rand(5)).any()))
    same(f)


# ---- gradient buffers reused in place by the engine (sole-owner sums, fused backward kernels) --

def _reuse_scenarios(L):
    """Graphs where a gradient buffer is shared (so it must not be written in place) beside ones
    where it is not: the same gradients as torch in every case."""
    out = []
    # one gradient sent to two branches by an add, each branch with a fused backward (tanh,
    # sigmoid) and a sum of contributions into x
    x = L.linspace(-2.0, 2.0, 40, requires_grad=True)
    y = x * 1.5
    z = y + y.tanh()
    (z.tanh() + z.sigmoid() * 2 + z).sum().backward()
    out.append(x.grad.tolist())
    # an intermediate's retained grad and a hook that keeps the gradient it saw
    x.grad = None
    seen = []
    a = x * 2
    a.retain_grad()
    b = a.tanh()
    b.register_hook(lambda g: seen.append(g))
    (b * 3 + b.exp()).sum().backward()
    out.append((x.grad.tolist(), a.grad.tolist(), seen[0].tolist()))
    # .grad accumulated over two backward calls (the leaf's buffer grows in place), and a
    # reference to the first .grad taken before the second call
    w = L.linspace(0.1, 1.0, 30, requires_grad=True)
    (w.tanh() * w).sum().backward()
    first = w.grad
    first_values = first.tolist()
    (w.sigmoid() * 2).sum().backward()
    # (torch accumulates into the same tensor: the reference sees the sum)
    out.append((first_values, w.grad.tolist(), first.tolist()))
    # float64 and a 2-d shape
    v = L.linspace(-1.0, 1.0, 12, dtype=L.float64).reshape(3, 4).requires_grad_()
    ((v.tanh() + v) * (v.sigmoid() + v)).sum().backward()
    out.append(v.grad.tolist())
    return out


def test_gradient_buffers_reused_in_place_match_torch():
    got, want = _reuse_scenarios(fg), _reuse_scenarios(torch)
    np.testing.assert_allclose(np.array(got[0]), np.array(want[0]), rtol=1e-6, atol=1e-6)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-6, atol=1e-6)
    for g, w in zip(got[2], want[2]):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(got[3]), np.array(want[3]), rtol=1e-12, atol=1e-12)


def _grad_layouts(L):
    """torch's layout contract for .grad: a non-overlapping dense leaf's strides, else contiguous;
    kept through accumulation."""
    out = []
    x = L.ones(2, 3).t().requires_grad_()
    (x * 2).sum().backward()
    out.append((x.grad.stride(), x.grad.tolist()))
    (x.exp() * 3).sum().backward()
    out.append((x.grad.stride(), x.grad.tolist()))
    z = L.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).detach().requires_grad_()
    (z * z).sum().backward()
    out.append((z.grad.stride(), z.grad.tolist()))
    y = L.ones(4, 6)[:, ::2].detach().requires_grad_()  # not dense: contiguous .grad
    (y * y).sum().backward()
    out.append((y.grad.stride(), y.grad.tolist()))
    w = L.ones(3, 4).requires_grad_()
    (w.t() * 2).sum().backward()
    out.append((w.grad.stride(), w.grad.tolist()))
    return out


def test_grad_follows_the_leafs_layout():
    assert _grad_layouts(fg) == _grad_layouts(torch)


def test_size_repr_is_torch():
    # programs print shapes: the same line as torch's
    assert repr(fg.ones(2, 3).shape) == repr(torch.ones(2, 3).shape) == "torch.Size([2, 3])"
    assert str(fg.ones(()).shape) == str(torch.ones(()).shape)
