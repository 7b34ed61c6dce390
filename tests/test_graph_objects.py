"""Graph objects as torch's: one Python object per grad_fn node while it lives, one
AccumulateGrad per leaf whose `variable` is the leaf itself, a class per node kind (`MulBackward0`,
a subclass of autograd.graph.Node), the named saved values `_saved_<name>` / `_raw_saved_<name>`,
and fx Proxies passed to ferrograd's functions (`__torch_function__`). Every expectation is what
torch does with the same program."""

import gc
import importlib
import weakref

import numpy as np
import pytest
import torch
import torch.fx

from conftest import fg

F_fg = importlib.import_module(fg.__name__ + ".nn.functional")
fx_fg = importlib.import_module(fg.__name__ + ".fx")
proxy_fg = importlib.import_module(fg.__name__ + ".fx.proxy")


def both(build):
    """`build(lib)` run with torch and with ferrograd."""
    return build(torch), build(fg)


def test_grad_fn_is_the_same_object():
    for lib in (torch, fg):
        x = lib.randn(3, requires_grad=True)
        y = (x * 2).exp()
        assert y.grad_fn is y.grad_fn
        assert y.grad_fn.next_functions[0][0] is y.grad_fn.next_functions[0][0]
        z = y.sum()
        assert z.grad_fn.next_functions[0][0] is y.grad_fn


def test_accumulate_grad_is_one_object_per_leaf_and_knows_its_leaf():
    for lib in (torch, fg):
        x = lib.randn(3, requires_grad=True)
        w = lib.nn.Parameter(lib.randn(3))
        a, b = x * w, x + w
        acc = a.grad_fn.next_functions[0][0]
        assert acc is b.grad_fn.next_functions[0][0]
        assert acc.variable is x
        pw = a.grad_fn.next_functions[1][0].variable
        assert pw is w and type(pw).__name__ == "Parameter"
        assert type(acc).__name__ == "AccumulateGrad"
        assert isinstance(acc, lib.autograd.graph.Node)
        assert acc.name() == "torch::autograd::AccumulateGrad"
        assert acc.next_functions == ()
        # a leaf made requires_grad later, and through the setter
        v = lib.ones(2)
        v.requires_grad_()
        u = lib.zeros(2)
        u.requires_grad = True
        c = v * u
        assert c.grad_fn.next_functions[0][0].variable is v
        assert c.grad_fn.next_functions[1][0].variable is u


def test_kind_classes():
    t, f = both(lambda lib: lib.randn(2, 3, requires_grad=True))
    for lib, x in ((torch, t), (fg, f)):
        y = x * x
        z = (x + 1).relu()
        m = x @ x.t()
        cls = type(y.grad_fn)
        assert cls.__name__ == "MulBackward0"
        assert type(z.grad_fn).__name__ == "ReluBackward0"
        assert type(m.grad_fn).__name__ == "MmBackward0"
        assert isinstance(y.grad_fn, lib.autograd.graph.Node)
        assert type((x * 3).grad_fn) is cls  # once per kind
        assert y.grad_fn.name() == "MulBackward0"
        r = repr(y.grad_fn)
        assert r == f"<MulBackward0 object at {hex(id(y.grad_fn))}>"
        with pytest.raises(TypeError, match="cannot create 'MulBackward0' instances"):
            cls()


def saved_attrs(fn):
    return sorted(a for a in dir(fn) if a.startswith("_saved_") and not a.endswith(("_sym_sizes", "_sym_strides", "_sym_numel")))


# (program, the saved tensors torch names) for the common nodes; scalars (dim, alpha, ...) are not
# exposed by ferrograd's nodes and are left out of the comparison
CASES = {
    "mul": lambda lib, x, y, v: x * y,
    "div": lambda lib, x, y, v: x / y,
    "atan2": lambda lib, x, y, v: lib.atan2(x, y),
    "maximum": lambda lib, x, y, v: lib.maximum(x, y),
    "exp": lambda lib, x, y, v: x.exp(),
    "tanh": lambda lib, x, y, v: x.tanh(),
    "sigmoid": lambda lib, x, y, v: x.sigmoid(),
    "relu": lambda lib, x, y, v: x.relu(),
    "sqrt": lambda lib, x, y, v: (x * x + 1).sqrt(),
    "log": lambda lib, x, y, v: (x * x + 1).log(),
    "sin": lambda lib, x, y, v: x.sin(),
    "abs": lambda lib, x, y, v: x.abs(),
    "pow": lambda lib, x, y, v: x ** 2,
    "clamp": lambda lib, x, y, v: x.clamp(-0.5, 0.5),
    "where": lambda lib, x, y, v: lib.where(x > 0, x, y),
    "mm": lambda lib, x, y, v: x @ y.t(),
    "linear": lambda lib, x, y, v: lib.nn.functional.linear(x, y, v[:3]),
    "mv": lambda lib, x, y, v: x @ v,
    "dot": lambda lib, x, y, v: v @ v,
    "bmm": lambda lib, x, y, v: lib.bmm(x[None], y.t()[None]),
    "softmax": lambda lib, x, y, v: x.softmax(1),
    "log_softmax": lambda lib, x, y, v: x.log_softmax(1),
    "pow_int": lambda lib, x, y, v: x ** 2,
    "addmm": lambda lib, x, y, v: lib.addmm(v[:3], x, y.t()),
    "addmm_scaled": lambda lib, x, y, v: lib.addmm(v[:3], x, y.t(), beta=0.5, alpha=2),
    "pow_float": lambda lib, x, y, v: x.pow(2.5),
    "logsumexp": lambda lib, x, y, v: x.logsumexp(1),
    "prod": lambda lib, x, y, v: x.prod(),
    "max": lambda lib, x, y, v: x.max(),
    "std": lambda lib, x, y, v: x.std(),
    "norm": lambda lib, x, y, v: x.norm(),
    "masked_fill": lambda lib, x, y, v: x.masked_fill(y > 0, 0.0),
}


def inputs(lib):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, generator=g, dtype=torch.float64)
    y = torch.randn(3, 4, generator=g, dtype=torch.float64)
    v = torch.randn(4, generator=g, dtype=torch.float64)
    if lib is torch:
        return [t.clone().requires_grad_() for t in (x, y, v)]
    return [fg.tensor(t.tolist(), dtype=fg.float64, requires_grad=True) for t in (x, y, v)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_named_saved_tensors_match_torch(case):
    out_t = CASES[case](torch, *inputs(torch))
    out_f = CASES[case](fg, *inputs(fg))
    ft, ff = out_t.grad_fn, out_f.grad_fn
    assert type(ff).__name__ == type(ft).__name__
    names_t = [a for a in saved_attrs(ft) if isinstance(getattr(ft, a), torch.Tensor)]
    names_f = [a for a in saved_attrs(ff) if isinstance(getattr(ff, a), fg.Tensor)]
    assert names_f == names_t
    # the numbers a node shows (x ** 2's exponent, addmm's alpha and beta) are torch's, by name and value
    for a in saved_attrs(ff):
        vf = getattr(ff, a)
        if vf is not None and not isinstance(vf, fg.Tensor):
            assert a in saved_attrs(ft) and getattr(ft, a) == vf and type(getattr(ft, a)) is type(vf), a
    for a in names_t:
        vt, vf = getattr(ft, a), getattr(ff, a)
        assert list(vf.shape) == list(vt.shape) and str(vf.dtype).split(".")[-1] == str(vt.dtype).split(".")[-1], a
        assert vf.detach().reshape(-1).tolist() == pytest.approx(vt.detach().reshape(-1).tolist()), a
        raw = "_raw" + a
        assert hasattr(ff, raw) and hasattr(ft, raw)


def test_saved_tensors_tuple_is_unlisted():
    # ferrograd's own `_saved_tensors` stays readable but is not listed: a drawer taking every
    # `_saved_*` attribute from dir() would otherwise show each value twice
    x = fg.randn(3, requires_grad=True)
    fn = (x * x).grad_fn
    assert "_saved_tensors" not in dir(fn)
    assert len(fn._saved_tensors) == 2


def test_saved_values_follow_what_the_node_needs():
    # torch saves self only for other's gradient; the name is still there, reading None
    for lib in (torch, fg):
        x = lib.randn(3, requires_grad=True)
        c = lib.randn(3)
        fn = (x * c).grad_fn
        assert "_saved_self" in dir(fn) and "_saved_other" in dir(fn)
        assert fn._saved_self is None
        assert fn._saved_other.tolist() == c.tolist()
        # a saved output is the output itself, its grad_fn included
        y = x.exp()
        assert y.grad_fn._saved_result.tolist() == y.tolist()
        assert y.grad_fn._saved_result.grad_fn is y.grad_fn


def test_saved_errors_match_torch():
    for lib in (torch, fg):
        x = lib.randn(3, requires_grad=True)
        fn = (x * x).grad_fn
        with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_foo'"):
            fn._saved_foo
        with pytest.raises(AttributeError):
            fn.foo = 1
        y = x * x
        fn = y.grad_fn
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            fn._saved_self


def test_raw_saved_register_hooks():
    results = []
    for lib in (torch, fg):
        seen = []
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
        y = x * w
        raw = y.grad_fn._raw_saved_self
        raw.register_hooks(lambda t: (seen.append("pack"), t * 2)[1], lambda p: (seen.append("unpack"), p)[1])
        assert seen == ["pack"]
        with pytest.raises(RuntimeError, match="hooks"):
            raw.register_hooks(lambda t: t, lambda p: p)
        y.sum().backward()
        assert seen == ["pack", "unpack"]
        results.append((x.grad.tolist(), w.grad.tolist()))
    assert results[0] == results[1]  # w's gradient saw the doubled self


def test_graph_objects_do_not_keep_graphs_alive():
    x = fg.randn(3, requires_grad=True)
    live0 = fg.autograd.graph.stats()["live_nodes"]
    y = (x * 2).exp()
    fn = y.grad_fn
    ref = weakref.ref(fn)
    acc = fn.next_functions[0][0].next_functions[0][0]
    assert acc.variable is x
    del y, fn, acc
    gc.collect()
    assert ref() is None
    assert fg.autograd.graph.stats()["live_nodes"] == live0
    # read again after release: a fresh object for a fresh node in the same slot is not the old one
    for _ in range(100):
        z = (x * 3).sin()
        assert z.grad_fn.name() == "SinBackward0"
        assert z.grad_fn.next_functions[0][0].name() == "MulBackward0"


def test_metadata_persists():
    for lib in (torch, fg):
        y = lib.randn(2, requires_grad=True) * 2
        y.grad_fn.metadata["k"] = 1
        assert y.grad_fn.metadata == {"k": 1}


def test_torchviz_style_walk_labels_like_torch():
    """A drawer walking next_functions, naming nodes by class, parameters by id(), saved tensors
    by `_saved_*`: the same labels from both libraries."""

    def walk(lib):
        lin = lib.nn.Linear(4, 3, dtype=lib.float64)
        params = {id(p): n for n, p in lin.named_parameters()}
        x = lib.ones(2, 4, dtype=lib.float64)
        out = lib.tanh(lin(x)).sum()
        # (as torchviz: `seen` holds the objects, so an id is not reused by another node's)
        labels, seen, stack = [], {}, [out.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen[id(fn)] = fn
            if hasattr(fn, "variable"):
                labels.append(("param", params.get(id(fn.variable))))
            else:
                saved = [a for a in dir(fn) if a.startswith("_saved_") and isinstance(getattr(fn, a), lib.Tensor)]
                labels.append((type(fn).__name__, tuple(sorted(saved))))
            stack.extend(f for f, _ in fn.next_functions)
        return sorted(labels, key=repr)

    t, f = walk(torch), walk(fg)
    # torch's linear on a 2-d input is one AddmmBackward0 (mat1, mat2) over TBackward0
    assert [l for l in f if l[0] == "param"] == [l for l in t if l[0] == "param"]
    assert ("TanhBackward0", ("_saved_result",)) in f and ("TanhBackward0", ("_saved_result",)) in t


# ---- fx: a Proxy handed to ferrograd's functions ------------------------------------------------

def fx_graph(lib_fx, F, lib, body):
    graph = lib_fx.Graph()
    tracer = lib_fx.proxy.GraphAppendingTracer(graph) if lib_fx is torch.fx else proxy_fg.GraphAppendingTracer(graph)
    x = lib_fx.Proxy(graph.placeholder("x"), tracer)
    out = body(lib, F, x)
    graph.output(out.node)
    return graph


@pytest.mark.parametrize("body", [
    lambda lib, F, x: F.leaky_relu(x),
    lambda lib, F, x: F.leaky_relu(x, 0.2),
    lambda lib, F, x: lib.relu(x),
    lambda lib, F, x: lib.add(x, 1),
    lambda lib, F, x: lib.exp(lib.sum(x, 1)),
    lambda lib, F, x: F.gelu(x) + x,
    lambda lib, F, x: lib.cat([x, lib.relu(x)]),
    lambda lib, F, x: lib.stack((x, x), 1),
    lambda lib, F, x: lib.where(x > 0, x, 0.5),
])
def test_proxy_in_functions_records_call_function(body):
    gt = fx_graph(torch.fx, torch.nn.functional, torch, body)
    gf = fx_graph(fx_fg, F_fg, fg, body)
    desc = lambda g: [(n.op, getattr(n.target, "__name__", str(n.target)), len(n.args), sorted(n.kwargs.items()))
                      for n in g.nodes]
    assert desc(gf) == desc(gt)
    # the graph runs, giving torch's numbers
    gm_t = torch.fx.GraphModule(torch.nn.Module(), gt)
    gm_f = fx_fg.GraphModule(fg.nn.Module(), gf)
    xs = [[-1.0, 0.5, 2.0], [0.25, -3.0, 1.0]]
    assert gm_f(fg.tensor(xs)).reshape(-1).tolist() == pytest.approx(gm_t(torch.tensor(xs)).reshape(-1).tolist(), rel=1e-6)


def test_proxy_targets_are_the_public_functions():
    g = fx_fg.Graph()
    x = fx_fg.Proxy(g.placeholder("x"), proxy_fg.GraphAppendingTracer(g))
    F_fg.leaky_relu(x)
    fg.relu(x)
    targets = [n.target for n in g.nodes if n.op == "call_function"]
    assert targets == [F_fg.leaky_relu, fg.relu]


def test_non_proxy_errors_unchanged():
    for lib, F in ((torch, torch.nn.functional), (fg, F_fg)):
        with pytest.raises(TypeError):
            F.leaky_relu("x")
        with pytest.raises(TypeError):
            lib.relu([1.0])


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2), (0, 1), (0, -1.5), (2, 0)])
@pytest.mark.parametrize("bias_shape", [(3,), (2, 3), (1, 3), (2, 1)])
def test_torch_addmm_is_one_node_with_torch_values_and_gradients(beta, alpha, bias_shape):
    def run(L):
        g = np.random.default_rng(7)
        b = L.tensor(g.standard_normal(bias_shape), dtype=L.float64, requires_grad=True)
        m1 = L.tensor(g.standard_normal((2, 4)), dtype=L.float64, requires_grad=True)
        m2 = L.tensor(g.standard_normal((4, 3)), dtype=L.float64, requires_grad=True)
        if beta == 0:
            with L.no_grad():
                b[..., 0] = float("nan")  # beta 0: the bias's values are not read
        y = L.addmm(b, m1, m2, beta=beta, alpha=alpha)
        (y * L.arange(6.0, dtype=L.float64).view(2, 3)).sum().backward()
        return y, b.grad, m1.grad, m2.grad, type(y.grad_fn).__name__, y.grad_fn._saved_alpha, y.grad_fn._saved_beta
    t, f = run(torch), run(fg)
    for a, b in zip(t[:4], f[:4]):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert f[4:] == t[4:] and [type(v) for v in f[5:]] == [type(v) for v in t[5:]]
