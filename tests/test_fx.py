"""ferrograd.fx against torch.fx: the same models, written once for either library, traced by each.

For each model (MLP, CNN, residual block, a model calling functions and methods) the node list
(opcode, target name) equals torch.fx's, and the traced GraphModule computes torch's outputs and
gradients (the expectation is always the torch model, with the same weights). The printed graph and
the generated code equal torch's text once the library prefix is normalised; graph editing,
Interpreter/Transformer, replace_pattern, ShapeProp, concrete_args, tracing errors, state_dict
save/load and DOT export are checked the same way.
"""
import copy
import importlib
import io
import math
import operator
import re
import sys
import types
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch
import torch.fx

from conftest import AGAINST_TORCH, fg
from ferrograd.fx import to_dot

fx = importlib.import_module(fg.__name__ + ".fx")
replace_pattern = importlib.import_module(fg.__name__ + ".fx.subgraph_rewriter").replace_pattern
ShapeProp = importlib.import_module(fg.__name__ + ".fx.passes.shape_prop").ShapeProp
TraceError = importlib.import_module(fg.__name__ + ".fx.proxy").TraceError
relu_fn = importlib.import_module(fg.__name__ + ".nn.functional").relu  # a from-import, bound at module scope
torch_relu_fn = torch.nn.functional.relu


def scaled_if_positive(x, k):
    """Python control flow on `k`: traced only as a call, thanks to `wrap` below."""
    if k > 0:
        return x * k
    return x


fx.wrap("scaled_if_positive")
torch.fx.wrap("scaled_if_positive")  # the expectation's tracer needs it too


# ---------------------------------------------------------------- models, written for either library

def mlp(L):
    nn = L.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
            self.head = nn.Linear(8, 3)

        def forward(self, x):
            return self.head(self.layers(x.flatten(1))).log_softmax(-1)

    return MLP()


def cnn(L):
    nn, F = L.nn, L.nn.functional

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(4, 6, 3, stride=2)
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            x = self.pool(F.relu(self.bn(self.conv1(x))))
            x = L.relu(self.conv2(x))
            x = L.flatten(self.gap(x), 1)
            return self.fc(x.view(x.size(0), -1))

    return CNN()


def residual(L):
    nn, F = L.nn, L.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block(2, 3)
            self.out = nn.Linear(3, 2)

        def forward(self, x):
            return self.out(self.block(x).mean(dim=(2, 3)))

    return Net()


def functions_and_methods(L):
    nn, F = L.nn, L.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(4, 4)
            self.k = nn.Linear(4, 4)
            self.v = nn.Linear(4, 4)
            self.scale = nn.Parameter(L.tensor([0.5]))
            self.proj = nn.Linear(8, 4)

        def forward(self, x):
            q, k, v = self.q(x), self.k(x), self.v(x)
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            out = scores.softmax(dim=-1) @ v
            out = L.cat([out, x], dim=-1)
            out = F.gelu(self.proj(out)) + self.scale * x
            a, b = out.chunk(2, dim=-1)
            return L.tanh(a).sum(-1) - L.sigmoid(b).mean(dim=-1) * 2.0, L.stack([a, b]).abs().amax()

    return Attention()


MODELS = [("mlp", mlp, (2, 3, 4)), ("cnn", cnn, (2, 3, 8, 8)), ("residual", residual, (2, 2, 5, 5)),
          ("functions_and_methods", functions_and_methods, (2, 3, 4))]


def short(target):
    return target if isinstance(target, str) else target.__name__


def node_list(gm):
    return [(n.op, short(n.target)) for n in gm.graph.nodes]


def twin(factory):
    """The torch model and the model of the library under test, with torch's weights copied in."""
    torch.manual_seed(0)
    tm = factory(torch).double()
    fm = factory(fg).double()
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def fg_tensor(t, requires_grad=False):
    return fg.tensor(t.detach().numpy(), requires_grad=requires_grad)


def flat_outputs(out):
    return list(out) if isinstance(out, tuple) else [out]


def close(expected, got, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), expected.detach().numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- tracing matches torch.fx

@pytest.mark.parametrize("name,factory,shape", MODELS, ids=[m[0] for m in MODELS])
def test_node_list_matches_torch(name, factory, shape):
    tm, fm = twin(factory)
    assert node_list(fx.symbolic_trace(fm)) == node_list(torch.fx.symbolic_trace(tm))


@pytest.mark.parametrize("name,factory,shape", MODELS, ids=[m[0] for m in MODELS])
def test_outputs_and_gradients_match_torch(name, factory, shape):
    tm, fm = twin(factory)
    gm = fx.symbolic_trace(fm)
    assert isinstance(gm, fx.GraphModule) and isinstance(gm, fg.nn.Module)
    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    fx_in = fg_tensor(x, requires_grad=True)
    expected, got = flat_outputs(tm(x)), flat_outputs(gm(fx_in))
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        close(e, g)
    sum(((e * (i + 1)).sum() for i, e in enumerate(expected)), torch.zeros((), dtype=torch.float64)).backward()
    sum(((g * (i + 1)).sum() for i, g in enumerate(got)), fg.zeros((), dtype=fg.float64)).backward()
    close(x.grad, fx_in.grad)
    fparams = dict(gm.named_parameters())
    for k, p in tm.named_parameters():
        close(p.grad, fparams[k].grad)
    # the traced module shares the original's parameters: gradients land there too
    assert set(dict(fm.named_parameters())) == set(fparams)


def test_graph_print_and_code_match_torch():
    """`print(gm.graph)` and `gm.code` are torch.fx's text, the library's name aside."""
    def model(L):
        nn = L.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = nn.Linear(4, 8)
                self.w = nn.Parameter(L.ones(8))
                self.seq = nn.Sequential(nn.ReLU(), nn.Linear(2, 2))

            def forward(self, x, y=None):
                h = self.l1(x) + self.w
                h = L.relu(h) * 2
                h = h.sum(dim=-1, keepdim=True) + -h.mean() - 2 ** h.max()
                z = L.cat([h, h], dim=1)[:, 0:2]
                return self.seq(z[..., :8]), x.shape[0], {"s": h.to(L.float64)}

        return M()

    tgm = torch.fx.symbolic_trace(model(torch))
    fgm = fx.symbolic_trace(model(fg))

    def norm(s):
        return s.replace(fg.__name__ + ".", "torch.")

    assert norm(str(fgm.graph)) == str(tgm.graph)
    assert norm(fgm.code) == tgm.code
    assert str(fgm.graph).startswith("graph():\n    %x : [num_users=2] = placeholder[target=x]\n")
    assert "%y : [num_users=0] = placeholder[target=y](default=None)" in str(fgm.graph)
    assert "seq_0 = getattr(self.seq, \"0\")(getitem_1);  getitem_1 = None" in fgm.code
    assert repr(fgm) == repr(tgm)  # M( (l1): Linear(...) (seq): Module( (0): ReLU() ... ) )
    assert type(fgm).__name__ == type(tgm).__name__ == "M"
    assert list(fgm.state_dict()) == list(tgm.state_dict())
    assert norm(str(fgm)) == str(tgm)


def test_trace_function_and_sequential():
    def f(a, b, *args, c=3, **kw):
        return a.relu() + b.exp() - c

    for L, tracer in ((fg, fx), (torch, torch.fx)):
        gm = tracer.symbolic_trace(f)
        assert type(gm).__name__ == "f"
    got, expected = fx.symbolic_trace(f), torch.fx.symbolic_trace(f)
    assert node_list(got) == node_list(expected)
    assert got.code == expected.code
    a = torch.randn(3, dtype=torch.float64)
    close(f(a, a * 2), got(fg_tensor(a), fg_tensor(a * 2)))
    close(f(a, a, c=5), got(fg_tensor(a), fg_tensor(a), c=5))

    seqs = [L.nn.Sequential(L.nn.Linear(2, 3), L.nn.ReLU()) for L in (torch, fg)]
    tg, fgm = torch.fx.symbolic_trace(seqs[0]), fx.symbolic_trace(seqs[1])
    assert str(fgm.graph) == str(tg.graph)  # %input_1 ... call_module[target=0] ...
    assert fgm.code == tg.code


def test_tracer_subclass_leaf_modules():
    def model(L):
        nn = L.nn

        class Inner(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(3, 3)

            def forward(self, x):
                return self.lin(x).relu()

        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = Inner()
                self.lin = nn.Linear(3, 2)

            def forward(self, x):
                return self.lin(self.inner(x))

        return Outer(), Inner, nn.Linear

    def trace(L, tracer_base, leaf):
        m, inner_cls, linear_cls = model(L)
        kinds = {"inner": inner_cls, "linear": linear_cls}

        class T(tracer_base):
            def is_leaf_module(self, mod, qualname):
                if leaf == "inner_leaf":
                    return isinstance(mod, kinds["inner"]) or super().is_leaf_module(mod, qualname)
                return not isinstance(mod, kinds["linear"]) and super().is_leaf_module(mod, qualname)

        graph = T().trace(m)
        return [(n.op, short(n.target)) for n in graph.nodes], m, graph

    for leaf in ("inner_leaf", "linear_traced"):
        got, fm, graph = trace(fg, fx.Tracer, leaf)
        expected, tm, _ = trace(torch, torch.fx.Tracer, leaf)
        assert got == expected
    # Linear traced through: its weight and bias are get_attr nodes, F.linear a call_function
    assert ("get_attr", "inner.lin.weight") in got and ("call_function", "linear") in got
    gm = fx.GraphModule(fm, graph)
    fm.load_state_dict({k: fg_tensor(v) for k, v in tm.state_dict().items()})
    x = torch.randn(4, 3)
    close(tm(x), gm(fg_tensor(x)), 1e-6)


def test_parameters_buffers_and_constants_become_get_attr():
    def model(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("buf", L.ones(3))
                self.t = L.zeros(3) + 2  # a plain tensor attribute
                self.p = L.nn.Parameter(L.ones(3))

            def forward(self, x):
                c = L.ones(3) * 3  # made while tracing: a constant
                return x + self.buf + self.t + c + self.p + self.p + self.p.shape[0]

        return M()

    tg, fgm = torch.fx.symbolic_trace(model(torch)), fx.symbolic_trace(model(fg))
    assert node_list(fgm) == node_list(tg)
    assert [n.name for n in fgm.graph.nodes] == [n.name for n in tg.graph.nodes]
    assert sorted(dict(fgm.named_buffers())) == sorted(dict(tg.named_buffers())) == ["_tensor_constant0", "buf", "t"]
    x = torch.randn(3)
    close(tg(x), fgm(fg_tensor(x)))


def test_operators_methods_and_indexing_match_torch():
    def f(x, y):
        a = (2 - x) * (3 / y) + (x // 2) % 3 - x ** 2 + (x.unsqueeze(-1) @ y.unsqueeze(0)).sum(0) @ y
        b = (x > y) | (x <= 0) & ~(y == 1) ^ (x != y)
        c = abs(-x) + (+y)
        d = x[1:, None][..., 0] + y[::2].sum() + x[None].mT.shape[0] + x.size(0)
        return a, b, c, d, x.view(2, 2).T

    got, expected = fx.symbolic_trace(f), torch.fx.symbolic_trace(f)
    assert node_list(got) == node_list(expected)
    assert [n.name for n in got.graph.nodes] == [n.name for n in expected.graph.nodes]
    x, y = torch.rand(4, dtype=torch.float64) + 1, torch.rand(4, dtype=torch.float64) + 1
    for e, g in zip(f(x, y), got(fg_tensor(x), fg_tensor(y))):
        if e.dtype == torch.bool:
            assert e.tolist() == g.tolist()
        else:
            close(e, g)


def test_wrap_and_module_level_function_names():
    def f(x):
        return scaled_if_positive(relu_fn(x), 3) + x.shape[0]

    def f_torch(x):
        return scaled_if_positive(torch_relu_fn(x), 3) + x.shape[0]

    got, expected = fx.symbolic_trace(f), torch.fx.symbolic_trace(f_torch)
    assert node_list(got) == node_list(expected) == [
        ("placeholder", "x"), ("call_function", "relu"), ("call_function", "scaled_if_positive"),
        ("call_function", "getattr"), ("call_function", "getitem"), ("call_function", "add"), ("output", "output")]
    x = torch.randn(5, dtype=torch.float64)
    close(f_torch(x), got(fg_tensor(x)))
    assert relu_fn.__name__ == "relu" and scaled_if_positive.__name__ == "scaled_if_positive"  # unpatched


def test_patches_are_restored_after_a_failed_trace():
    before = (fg.relu, fg.nn.functional.relu, fg.nn.Module.__call__, fg.nn.Module.__getattr__, relu_fn)

    def bad(x):
        y = fg.relu(x)
        if y.sum() > 0:
            return y
        return x

    with pytest.raises(TraceError):
        fx.symbolic_trace(bad)
    assert (fg.relu, fg.nn.functional.relu, fg.nn.Module.__call__, fg.nn.Module.__getattr__, relu_fn) == before
    assert fg.relu(fg.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_retrace_and_replace_graph():
    tm, fm = twin(functions_and_methods)
    gm = fx.symbolic_trace(fm)
    again = fx.symbolic_trace(gm)  # a GraphModule traces like any module
    assert node_list(again) == node_list(gm)
    assert node_list(again) == node_list(torch.fx.symbolic_trace(torch.fx.symbolic_trace(tm)))
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    for e, g in zip(tm(x), again(fg_tensor(x))):
        close(e, g)
    # assigning a new graph recompiles forward
    g = fx.Graph()
    inp = g.placeholder("x")
    g.output(g.call_method("neg", (inp,)))
    gm.graph = g
    assert "neg = x.neg();  x = None" in gm.code
    assert gm(fg.tensor([1.0, -2.0])).tolist() == [-1.0, 2.0]
    # a root given as a dict of targets
    g2 = fx.Graph()
    inp = g2.placeholder("x")
    g2.output(g2.call_module("lin", (g2.call_function(operator.mul, (inp, g2.get_attr("scale"))),)))
    lin = fg.nn.Linear(2, 1)
    gm2 = fx.GraphModule({"lin": lin, "scale": fg.tensor([2.0, 3.0])}, g2)
    t = fg.tensor([[1.0, 1.0]])
    close(torch.tensor(lin(t * fg.tensor([2.0, 3.0])).tolist()), gm2(t))
    assert sorted(dict(gm2.named_buffers())) == ["scale"]


# ---------------------------------------------------------------- what cannot be traced

def test_control_flow_raises_trace_error():
    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(TraceError, match="symbolically traced variables cannot be used as inputs to control flow") \
            as info:
        fx.symbolic_trace(branchy)
    assert isinstance(info.value, ValueError)  # torch.fx's TraceError is a ValueError
    if not AGAINST_TORCH:  # ferrograd also says what to do
        assert "concrete_args" in str(info.value)

    def loop(x):
        for row in x:
            pass
        return x

    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing by default"):
        fx.symbolic_trace(lambda x: x + len(x))

    # unpacking a known number of values is fine
    def unpack(x):
        a, b = x.chunk(2)
        return a * b

    assert node_list(fx.symbolic_trace(unpack)) == node_list(torch.fx.symbolic_trace(unpack))


def norm_asserts(graph_text):
    """The specialisation asserts live in different modules (torch._assert, ferrograd.fx._assert)."""
    return re.sub(r"\[target=[\w.]*\.(_assert\w*)\]", r"[target=\1]", graph_text)


def test_concrete_args_specialise_the_trace():
    def model(L):
        class M(L.nn.Module):
            def forward(self, x, flag, scale=None):
                if flag:
                    x = x * 2
                if scale is not None:
                    x = x * scale
                return x - 1

        return M()

    for flag in (True, False):
        cargs = {"flag": flag, "scale": None}
        tg = torch.fx.symbolic_trace(model(torch), concrete_args=cargs)
        fgm = fx.symbolic_trace(model(fg), concrete_args=cargs)
        assert norm_asserts(str(fgm.graph)) == norm_asserts(str(tg.graph))
        assert node_list(fgm) == node_list(tg)
        x = torch.randn(3)
        close(tg(x, flag, None), fgm(fg_tensor(x), flag, None))
        with pytest.raises(AssertionError, match="flag has been specialized to have value"):
            fgm(fg_tensor(x), not flag, None)


# ---------------------------------------------------------------- editing graphs

def edit(L, tracer):
    """torch.fx's documentation recipe: double relu's output, then drop the dead node."""
    def f(x):
        y = L.relu(x) + 1
        unused = x * 3  # noqa: F841  (dead code)
        return y.neg()

    gm = tracer.symbolic_trace(f)
    g = gm.graph
    relu = next(n for n in g.nodes if n.op == "call_function" and short(n.target) == "relu")
    with g.inserting_after(relu):
        doubled = g.call_function(operator.mul, (relu, 2))
    replaced = relu.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    with g.inserting_before(doubled):
        g.create_node("call_method", "exp", (relu,), name="e")
    changed = g.eliminate_dead_code()
    g.lint()
    gm.recompile()
    return gm, [u.name for u in replaced], changed


def test_graph_editing_matches_torch():
    tg, treplaced, tchanged = edit(torch, torch.fx)
    fgm, freplaced, fchanged = edit(fg, fx)
    assert (freplaced, fchanged) == (treplaced, tchanged) == (["add"], True)
    assert node_list(fgm) == node_list(tg)
    assert [n.name for n in fgm.graph.nodes] == [n.name for n in tg.graph.nodes]
    assert fgm.code.replace(fg.__name__ + ".", "torch.") == tg.code
    x = torch.randn(5)
    close(tg(x), fgm(fg_tensor(x)))
    assert [n.name for n in reversed(fgm.graph.nodes)] == [n.name for n in reversed(tg.graph.nodes)]
    assert len(fgm.graph.nodes) == len(tg.graph.nodes)


def test_graph_building_errors_match_torch():
    for L, F in ((torch, torch.fx), (fg, fx)):
        g = F.Graph()
        x = g.placeholder("x")
        y = g.call_function(operator.add, (x, 1))
        z = g.call_method("relu", (y,))
        g.output(z)
        with pytest.raises(RuntimeError, match=r"Tried to erase Node add but it still had 1 users in the graph"):
            g.erase_node(y)
        # a node moved before its argument breaks topological order
        x.append(z)
        with pytest.raises(RuntimeError, match="used before it has been defined"):
            g.lint()
        y.append(z)
        g.lint()
        other = F.Graph()
        other.output(z)
        with pytest.raises(RuntimeError, match="does not belong to this Graph"):
            other.lint()
        names = [n.name for n in g.nodes]
        assert names == ["x", "add", "relu", "output"]
        assert [n.name for n in g.find_nodes(op="call_function", target=operator.add)] == ["add"]
        gm = F.GraphModule(L.nn.Module(), g)
        t = L.tensor([-2.0, 3.0])
        assert gm(t).tolist() == [0.0, 4.0]
        assert "relu = add.relu();  add = None" in gm.code


def test_node_api_matches_torch():
    def f(x):
        return (x + 1) * (x - 1)

    for F in (torch.fx, fx):
        g = F.symbolic_trace(f).graph
        x, add, sub, mul, out = list(g.nodes)
        assert (add.prev, add.next, mul.all_input_nodes) == (x, sub, [add, sub])
        assert list(x.users) == [add, sub] and repr(x) == "x"
        assert add.format_node() == "%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})"
        mul.args = (sub, sub)
        assert list(add.users) == [] and list(sub.users) == [mul]
        mul.replace_input_with(sub, add)
        assert mul.args == (add, add) and list(add.users) == [mul]
        mul.update_arg(1, 3)
        assert mul.args == (add, 3)
        assert out.format_node() == "return mul"


# ---------------------------------------------------------------- running and rebuilding graphs

def test_interpreter_runs_the_graph():
    tm, fm = twin(functions_and_methods)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    for F, m, xin in ((torch.fx, tm, x), (fx, fm, fg_tensor(x))):
        gm = F.symbolic_trace(m)
        out = F.Interpreter(gm).run(xin)
        ref = gm(xin)
        for a, b in zip(out, ref):
            assert a.tolist() == b.tolist()

    def add_to_mul(F):
        class AddToMul(F.Interpreter):
            def call_function(self, target, args, kwargs):
                if target is operator.add:
                    target = operator.mul
                return super().call_function(target, args, kwargs)

        return AddToMul

    def f(a, b):
        return (a + b).relu()

    a, b = torch.randn(4), torch.randn(4)
    expected = add_to_mul(torch.fx)(torch.fx.symbolic_trace(f)).run(a, b)
    close(expected, add_to_mul(fx)(fx.symbolic_trace(f)).run(fg_tensor(a), fg_tensor(b)))

    with pytest.raises(RuntimeError, match="Expected positional argument for parameter b"):
        fx.Interpreter(fx.symbolic_trace(f)).run(fg_tensor(a))


def transform(L, F):
    """relu -> sigmoid, and `x * c` -> neg(x * c), by overriding Transformer methods."""
    def f(x):
        return L.relu(x) * 3 + x.relu()

    class T(F.Transformer):
        def call_function(self, target, args, kwargs):
            if target is L.relu:
                return super().call_function(L.sigmoid, args, kwargs)
            if target is operator.mul:
                return L.neg(super().call_function(target, args, kwargs))
            return super().call_function(target, args, kwargs)

    return T(F.symbolic_trace(f)).transform()


def test_transformer_rebuilds_the_graph():
    tg, fgm = transform(torch, torch.fx), transform(fg, fx)
    assert isinstance(fgm, fx.GraphModule)
    assert node_list(fgm) == node_list(tg)
    assert ("call_function", "sigmoid") in node_list(fgm) and ("call_function", "neg") in node_list(fgm)
    x = torch.randn(6, dtype=torch.float64)
    close(tg(x), fgm(fg_tensor(x)))


def rewrite(L, F, rewriter):
    def model(x):
        y = (x * 2).relu()
        z = (y * 2).relu()
        return (z + 1) * 2, (x * 3).relu()

    def pattern(x):
        return (x * 2).relu()

    def replacement(x):
        return (x + x).clamp(min=0)

    gm = F.symbolic_trace(model)
    matches = rewriter(gm, pattern, replacement)
    return gm, matches


def test_replace_pattern_matches_torch():
    tg, tmatches = rewrite(torch, torch.fx, torch.fx.subgraph_rewriter.replace_pattern)
    fgm, fmatches = rewrite(fg, fx, replace_pattern)
    assert len(fmatches) == len(tmatches) == 2
    assert node_list(fgm) == node_list(tg)
    assert [(short(p.target), short(g.target)) for p, g in fmatches[0].nodes_map.items()] == \
        [(short(p.target), short(g.target)) for p, g in tmatches[0].nodes_map.items()]
    fgm.graph.lint()
    x = torch.randn(5)
    for e, g in zip(tg(x), fgm(fg_tensor(x))):
        close(e, g)


def test_shape_prop_annotates_nodes():
    tm, fm = twin(cnn)
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    tg, fgm = torch.fx.symbolic_trace(tm), fx.symbolic_trace(fm)
    torch.fx.passes.shape_prop.ShapeProp(tg).propagate(x)
    ShapeProp(fgm).propagate(fg_tensor(x))
    for tn, fn in zip(tg.graph.nodes, fgm.graph.nodes):
        if "tensor_meta" not in tn.meta:
            assert "tensor_meta" not in fn.meta, fn.name
            continue
        tmeta, fmeta = tn.meta["tensor_meta"], fn.meta["tensor_meta"]
        assert tuple(fmeta.shape) == tuple(tmeta.shape), fn.name
        assert str(fmeta.dtype).split(".")[-1] == str(tmeta.dtype).split(".")[-1]
        assert fmeta.requires_grad == tmeta.requires_grad
        assert tuple(fmeta.stride) == tuple(tmeta.stride)
        assert fn.meta["type"].__name__ == tn.meta["type"].__name__


# ---------------------------------------------------------------- saving, copying, drawing

def test_state_dict_save_and_load(tmp_path):
    tm, fm = twin(residual)
    gm = fx.symbolic_trace(fm)
    path = tmp_path / "gm.ckpt"
    fg.save(gm.state_dict(), path)
    fresh = fx.symbolic_trace(residual(fg).double())
    assert list(fresh.state_dict()) == list(gm.state_dict())
    fresh.load_state_dict(fg.load(path))
    x = torch.randn(2, 2, 5, 5, dtype=torch.float64)
    close(tm(x), fresh(fg_tensor(x)))


def test_deepcopy_is_independent():
    tm, fm = twin(mlp)
    gm = fx.symbolic_trace(fm)
    cp = copy.deepcopy(gm)
    assert cp.code == gm.code and str(cp.graph) == str(gm.graph)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    close(tm(x), cp(fg_tensor(x)))
    with fg.no_grad():
        for p in cp.parameters():
            p.zero_()
    close(tm(x), gm(fg_tensor(x)))  # the original keeps its weights


def test_print_tabular_rows():
    """print_tabular hands tabulate one row per node (opcode, name, target, args, kwargs)."""
    calls = []
    fake = types.ModuleType("tabulate")
    fake.tabulate = lambda rows, headers: calls.append((rows, headers)) or "TABLE"
    saved = sys.modules.get("tabulate")
    sys.modules["tabulate"] = fake
    try:
        for F in (torch.fx, fx):
            buf = io.StringIO()
            with redirect_stdout(buf):
                F.symbolic_trace(lambda x: x.relu() + 1).graph.print_tabular()
            assert buf.getvalue() == "TABLE\n"
    finally:
        if saved is None:
            del sys.modules["tabulate"]
        else:
            sys.modules["tabulate"] = saved
    (trows, theaders), (frows, fheaders) = calls
    assert fheaders == theaders == ["opcode", "name", "target", "args", "kwargs"]
    assert [[r[0], r[1], short(r[2]), str(r[3]), r[4]] for r in frows] == \
        [[r[0], r[1], short(r[2]), str(r[3]), r[4]] for r in trows]


def test_to_dot(tmp_path):
    """The DOT drawing of the traced graph is the one drawn for torch.fx's graph of the same model."""
    tm, fm = twin(cnn)
    tg, fgm = torch.fx.symbolic_trace(tm), fx.symbolic_trace(fm)
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    torch.fx.passes.shape_prop.ShapeProp(tg).propagate(x)
    ShapeProp(fgm).propagate(fg_tensor(x))

    def norm(s):
        return re.sub(r"call_function: [\w.]*\.(\w+)", r"call_function: \1", s)

    got, expected = to_dot(fgm, tmp_path / "g.dot"), to_dot(tg)
    assert norm(got) == norm(expected)
    assert (tmp_path / "g.dot").read_text() == got
    assert got.startswith("digraph fx {")
    assert '[label="conv1\\ncall_module: conv1\\n(2, 4, 8, 8) float64", fillcolor=lightgoldenrod1]' in got
    assert got.count(" -> ") == sum(len(n.all_input_nodes) for n in fgm.graph.nodes)
    if hasattr(fgm.graph, "to_dot"):
        assert fgm.graph.to_dot() == got
