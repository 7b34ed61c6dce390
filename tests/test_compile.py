"""ferrograd.compile against torch.compile: the interface (compile, decorators, OptimizedModule,
Module.compile, torch.compiler / torch._dynamo knobs), capture with guards (recompiles on dtype,
shape, stride, requires_grad and grad-mode changes; the recompile limit; dynamic and automatic-dynamic
sizes), graph breaks and fullgraph errors, observability, and parity: compiled programs give eager's
and torch's values and gradients (create_graph too), an nn.Module training loop compiled with
`model = torch.compile(model)` gives torch's losses, and random op chains with random shapes give
eager's results (FG_COMPILE_FUZZ=N runs N chains instead of 40).

Torch runs with backend="eager" where it is the reference for the interface (its inductor backend
costs minutes per function on this machine); values compare with torch eager, which torch.compile
matches. Tests that look into ferrograd's cache entries are skipped when the suite runs against torch.
"""
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

nn = fg.nn
F = fg.nn.functional
ours_only = pytest.mark.skipif(AGAINST_TORCH, reason="looks into ferrograd's cache entries")


@pytest.fixture(autouse=True)
def _fresh():
    fg.compiler.reset()
    yield
    fg.compiler.reset()


class captured_logs(logging.Handler):
    """Collects what the `ferrograd._dynamo` logger writes (this suite runs without pytest's caplog)."""

    def __init__(self, level=logging.INFO):
        super().__init__(level)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())

    @property
    def text(self):
        return "\n".join(self.records)

    def __enter__(self):
        self.logger = logging.getLogger("ferrograd._dynamo")
        self.old_level = self.logger.level
        self.logger.addHandler(self)
        self.logger.setLevel(min(self.level, self.logger.getEffectiveLevel()))
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)
        self.logger.setLevel(self.old_level)


def entries(compiled):
    """The cache entries of a compiled function, module or Module.compile()d module."""
    frame = getattr(compiled, "_ferrograd_frame", None) or getattr(compiled, "_frame", None)
    if frame is None:
        frame = compiled._compiled_call_impl._ferrograd_frame
    return frame.entries


def t(x, **kw):
    return fg.tensor(np.asarray(x, dtype=np.float32), **kw)


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               np.asarray(b.detach().numpy() if hasattr(b, "detach") else b), rtol=rtol, atol=atol)


# ---- the interface ---------------------------------------------------------------------------------

def chain(x, w):
    return ((x * w + 0.5).tanh() * x).sum()


def test_compile_function_forms():
    c = fg.compile(chain)
    assert c.__name__ == "chain" and c.__wrapped__ is chain and c._torchdynamo_orig_callable is chain
    assert fg.compile(chain, disable=True) is chain

    @fg.compile
    def a(x):
        return x + 1

    @fg.compile(backend="eager", fullgraph=True)
    def b(x):
        return x * 2

    x = t([1.0, 2.0])
    close(a(x), [2.0, 3.0])
    close(b(x), [2.0, 4.0])
    assert callable(fg.compile(backend="eager"))


@pytest.mark.parametrize("lib", ["torch", "fg"])
def test_compile_argument_errors(lib):
    m = torch if lib == "torch" else fg
    with pytest.raises(AssertionError, match="callable"):
        m.compile(3)
    if m is fg:  # torch raises the same, after importing every backend (seconds): its class is checked
        with pytest.raises(RuntimeError, match="Invalid backend"):
            m.compile(chain, backend="nope")
    assert issubclass(m._dynamo.exc.InvalidBackend, m._dynamo.exc.TorchDynamoException)
    assert issubclass(m._dynamo.exc.TorchDynamoException, RuntimeError)
    with pytest.raises(RuntimeError, match="Either mode or options"):
        m.compile(chain, mode="default", options={"a": 1})
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        m.compile(chain, mode="fastest")
    with pytest.raises(AssertionError):
        m.compile(chain, dynamic="yes", backend="eager")


def test_optimized_module_matches_torch():
    tm = torch.nn.Linear(3, 2)
    to = torch.compile(tm, backend="eager")
    fm = fg.nn.Linear(3, 2)
    fo = fg.compile(fm)
    assert type(fo).__name__ == type(to).__name__ == "OptimizedModule"
    assert isinstance(fo, fg.nn.Module) and fo._orig_mod is fm
    assert list(fo.state_dict()) == list(to.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert [n for n, _ in fo.named_parameters()] == [n for n, _ in to.named_parameters()]
    assert repr(fo) == repr(to)
    assert fo.weight is fm.weight and fo.in_features == 3
    fo.extra = 5  # attribute writes go to the original, as torch's
    to.extra = 5
    assert fm.extra == 5 and tm.extra == 5
    fo.eval()
    to.eval()
    assert fm.training is tm.training is False
    # a state_dict of the wrapper loads back into a wrapper
    fo2 = fg.compile(fg.nn.Linear(3, 2))
    fo2.load_state_dict(fo.state_dict())
    close(fo2.weight, fm.weight)


def test_module_compile_in_place():
    tm = torch.nn.Linear(3, 2)
    fm = fg.nn.Linear(3, 2)
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    assert fm.compile() is None and tm.compile(backend="eager") is None
    assert type(fm) is fg.nn.Linear and list(fm.state_dict()) == list(tm.state_dict())
    x = np.random.rand(4, 3).astype(np.float32)
    close(fm(fg.tensor(x)), tm(torch.tensor(x)), rtol=1e-5, atol=1e-6)
    if not AGAINST_TORCH:
        assert len(entries(fm)) == 1


def test_deepcopy_of_a_compiled_module_computes_with_its_own_parameters():
    import copy

    x = fg.ones(1, 2)
    for make in (lambda m: fg.compile(m, backend="eager"), lambda m: (m.compile(backend="eager"), m)[1]):
        model = make(fg.nn.Linear(2, 2))
        before = model(x)
        twin = copy.deepcopy(model)
        with fg.no_grad():
            for p in twin.parameters():
                p.zero_()
        close(twin(x), [[0.0, 0.0]])
        close(model(x), before)
    m = fg.nn.Linear(2, 2)
    assert m.compile(disable=True) is None
    close(m(x), x @ m.weight.T + m.bias)


def test_compiler_and_dynamo_knobs():
    for m in (torch, fg):
        cfg = m._dynamo.config
        assert cfg.cache_size_limit == cfg.recompile_limit == 8
        assert cfg.suppress_errors is False
        old = cfg.cache_size_limit
        cfg.cache_size_limit = 3
        assert cfg.recompile_limit == 3
        cfg.recompile_limit = old
        assert m.compiler.is_compiling() is False and m.compiler.is_dynamo_compiling() is False
        m._dynamo.reset()
        m.compiler.reset()
        assert "inductor" in m._dynamo.list_backends()
    assert fg._dynamo.list_backends() == torch._dynamo.list_backends()


def test_is_compiling_inside_and_disable():
    seen = []

    def f(x):
        seen.append(fg.compiler.is_compiling())
        return x + 1

    c = fg.compile(f, backend="eager")
    c(t([1.0]))
    assert seen[0] is True
    calls = []

    @fg.compiler.disable
    def helper(x):
        calls.append(1)
        return x * 3

    def g(x):
        return helper(x + 1) - 1

    cg = fg.compile(g)
    for _ in range(2):
        close(cg(t([1.0, 2.0])), [5.0, 8.0])
    assert len(calls) == 2  # a disabled function runs on every call
    if not AGAINST_TORCH:
        assert entries(cg)[0].breaks


# ---- guards and recompiles ---------------------------------------------------------------------------

@ours_only
def test_guards_recompile_on_metadata_changes():
    c = fg.compile(chain, dynamic=False)
    x = fg.randn(5)
    w = fg.randn(5)
    close(c(x, w), chain(x, w))
    close(c(x, w), chain(x, w))
    assert len(entries(c)) == 1
    cases = [
        (x.double(), w.double()),                        # dtype
        (fg.randn(6), fg.randn(6)),                      # shape
        (fg.randn(10)[::2], w),                          # strides
        (x.clone().requires_grad_(), w),                 # requires_grad
    ]
    for n, args in enumerate(cases, start=2):
        close(c(*args), chain(*args))
        assert len(entries(c)) == n
    with fg.no_grad():                                   # grad mode
        c(x, w)
    assert len(entries(c)) == 6
    fg._dynamo.config.error_on_recompile = True
    try:
        with pytest.raises(fg._dynamo.exc.RecompileError):
            c(fg.randn(3, 3), fg.randn(3))
    finally:
        fg._dynamo.config.error_on_recompile = False


@ours_only
def test_recompile_limit_falls_back_to_eager():
    c = fg.compile(lambda x: x.sin() + 1, dynamic=False)
    with captured_logs(logging.WARNING) as caplog:
        for n in range(1, 12):
            x = fg.randn(n)
            close(c(x), x.sin() + 1)
    assert len(entries(c)) == 8
    assert "recompile_limit (8)" in caplog.text


def test_in_place_on_inputs_and_decorated_methods():
    def inc(x):
        x.add_(1)
        x[0] = x[1] * 2
        return x

    for lib in (torch, fg):
        c = lib.compile(inc, backend="eager")
        v = lib.zeros(2)
        for _ in range(3):
            out = c(v)
        assert out is v
        close(v, [6.0, 3.0])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.scale = 2.0

        @fg.compile
        def forward(self, x, *, bias=None, n=2):
            y = self.lin(x) * self.scale
            for i in range(n):
                y = y.relu() + i
            return y if bias is None else y + bias

    def ref(m, x, bias=None, n=2):
        y = m.lin(x) * m.scale
        for i in range(n):
            y = y.relu() + i
        return y if bias is None else y + bias

    m = M()
    x = fg.randn(2, 3)
    for kwargs in ({}, {"bias": fg.ones(3)}, {"n": 3}, {}):
        close(m(x, **kwargs), ref(m, x, **kwargs))
    m.scale = 3.0
    close(m(x), ref(m, x))


@ours_only
def test_unused_pure_ops_are_not_replayed():
    def f(x):
        unused = x.exp().sum()  # noqa: F841  (pure, unused: not replayed)
        h = x.clone()
        h.mul_(2)  # in place: kept, with the clone it needs
        return (x * 3)[0:1] + x.shape[0]

    c = fg.compile(f)
    x = fg.randn(4)
    close(c(x), f(x))
    close(c(x), f(x))
    code = entries(c)[0].graph_code
    assert "exp" not in code and "mul_" in code and "clone" in code


@ours_only
def test_python_values_and_module_state_are_guarded():
    def f(x, scale, flag):
        return x * scale if flag else x - scale

    c = fg.compile(f)
    x = t([1.0, 2.0])
    close(c(x, 2.0, True), [2.0, 4.0])
    close(c(x, 3.0, True), [3.0, 6.0])
    close(c(x, 3.0, False), [-2.0, -1.0])
    m = nn.Dropout(0.5)
    cm = fg.compile(m)
    m.eval()
    close(cm(x), x)
    m.train()
    y = cm(fg.ones(1000))
    assert 300 < int((y == 0).sum()) < 700  # a new entry for training mode, not the eval replay
    lin = nn.Linear(2, 2)
    cl = fg.compile(lin)
    cl(x)
    with fg.no_grad():
        lin.weight = nn.Parameter(fg.zeros(2, 2))  # a replaced parameter is fetched again
    close(cl(x), lin.bias)


# ---- dynamic sizes ---------------------------------------------------------------------------------

def flatten_mlp(x, w):
    b = x.shape[0]
    h = x.view(b, -1) @ w
    return h.relu().sum(dim=1) * (b // 2)


@ours_only
def test_dynamic_true_and_automatic_dynamic():
    w = fg.randn(12, 3)
    c = fg.compile(flatten_mlp, dynamic=True)
    for b in (4, 6, 9):
        x = fg.randn(b, 3, 4)
        close(c(x, w), flatten_mlp(x, w), rtol=1e-5)
    assert len(entries(c)) == 1
    a = fg.compile(flatten_mlp)
    for b in (4, 6, 9, 17):
        x = fg.randn(b, 3, 4)
        close(a(x, w), flatten_mlp(x, w), rtol=1e-5)
    assert len(entries(a)) == 2  # static, then symbolic batch after the first size change


@ours_only
def test_mark_dynamic_and_mark_static():
    w = fg.randn(12, 3)
    c = fg.compile(flatten_mlp)
    for b in (4, 6, 9):
        x = fg.randn(b, 3, 4)
        fg._dynamo.mark_dynamic(x, 0)
        close(c(x, w), flatten_mlp(x, w), rtol=1e-5)
    assert len(entries(c)) == 1
    s = fg.compile(flatten_mlp)
    for b in (4, 6, 9):
        x = fg.randn(b, 3, 4)
        fg._dynamo.mark_static(x)
        s(x, w)
    assert len(entries(s)) == 3
    with pytest.raises(IndexError):
        fg._dynamo.mark_dynamic(fg.randn(2), 3)


@ours_only
def test_branch_on_a_size_specialises():
    def f(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1

    c = fg.compile(f, dynamic=True)
    for n in (3, 8, 3, 9):
        x = fg.randn(n)
        close(c(x), f(x))


# ---- graph breaks ----------------------------------------------------------------------------------

def with_breaks(x):
    y = (x * 2).sum()
    v = y.item()
    if bool(y > 0):
        x = x + v
    print("value", x)
    return x.exp()


def test_graph_breaks_keep_eager_semantics(capsys):
    c = fg.compile(with_breaks, backend="eager")
    for x in (t([1.0, 2.0]), t([-1.0, -2.0]), t([0.5, 0.25])):
        close(c(x), with_breaks(x), rtol=1e-6)
    assert capsys.readouterr().out.count("value") == 6  # the print runs on every compiled call

    def logs(x):
        print("step")
        return x * 2

    cl = fg.compile(logs, backend="eager")
    for _ in range(3):
        cl(t([1.0]))
    assert capsys.readouterr().out.count("step") == 3


@ours_only
def test_regions_around_breaks_run_captured():
    def f(x, w):
        y = (x * w).tanh()
        s = y.sum().item()
        print("s", round(s, 3))
        z = (y * 2 + 1).exp()
        return (z * s).sum() + z.mean()

    c = fg.compile(f)
    for _ in range(4):
        xa, wa = np.random.randn(5), np.random.randn(5)
        w1, w2 = fg.tensor(wa, requires_grad=True), fg.tensor(wa, requires_grad=True)
        a, b = c(fg.tensor(xa), w1), f(fg.tensor(xa), w2)
        a.backward()
        b.backward()
        close(a, b, rtol=1e-12)
        close(w1.grad, w2.grad, rtol=1e-12)
    seg = entries(c)[0].segmented
    assert len(entries(c)) == 1 and seg.misses == 0
    assert [r.speculate for r in seg.regions] == [True, True]
    assert seg.ahead == 6  # on each of the 3 replays, both regions computed as units (the second up to `* s`)


@ours_only
def test_regions_follow_python_paths_and_mutations():
    def branchy(x):
        y = x * 3
        if y.sum() > 0:
            return (y + 1).relu()
        return (y - 1).abs() * 2

    c = fg.compile(branchy)
    for v in (1.0, -1.0, 2.0, -3.0, 0.5):
        x = t([v, v / 2])
        close(c(x), branchy(x))

    def mutating(x, buf):
        v = x.sum().item()
        a = buf * 3
        if v > 100:
            buf.add_(1)  # never seen by the recording: the precomputed region must not be used
        return (a + buf).sum()

    cm = fg.compile(mutating)
    for v in (1.0, 2.0, 500.0, 3.0):
        b1, b2 = t([1.0, 2.0]), t([1.0, 2.0])
        close(cm(t([v]), b1), mutating(t([v]), b2))
        close(b1, b2)


def test_explain_counts_breaks_as_torch():
    x = np.array([1.0, 2.0], dtype=np.float32)

    def prog(lib):
        def f(x):
            y = x * 2
            s = y.sum().item()
            return y + s
        return f

    ours = fg._dynamo.explain(prog(fg))(fg.tensor(x))
    theirs = torch._dynamo.explain(prog(torch))(torch.tensor(x))
    assert ours.graph_break_count == theirs.graph_break_count == 1
    assert ours.graph_count == theirs.graph_count == 2
    assert "item" in str(ours.break_reasons[0].reason)
    assert "Graph Break Count: 1" in str(ours)


@pytest.mark.parametrize("body", ["tolist", "print", "bool"])
def test_fullgraph_raises_unsupported(body):
    def f(x):
        y = x * 2
        if body == "tolist":
            return y * len(y.tolist())
        if body == "print":
            print(y)
            return y
        return y if y.sum() > 0 else -y

    for m, tensor in ((fg, fg.ones(2)), (torch, torch.ones(2))):
        m._dynamo.reset()
        with pytest.raises(m._dynamo.exc.Unsupported):
            m.compile(f, fullgraph=True, backend="eager")(tensor)
        assert issubclass(m._dynamo.exc.Unsupported, RuntimeError)


@ours_only
def test_breaks_from_hooks_and_unknown_outputs():
    lin = nn.Linear(2, 2)
    seen = []
    lin.register_forward_hook(lambda mod, i, o: seen.append(1))
    c = fg.compile(lin)
    c(fg.ones(2))
    c(fg.ones(2))
    assert len(seen) == 2 and entries(c)[0].breaks

    class Box:
        def __init__(self, v):
            self.v = v

    cb = fg.compile(lambda x: Box(x * 2))
    assert cb(t([1.0])).v.item() == 2.0 and cb(t([3.0])).v.item() == 6.0


# ---- parity with eager and with torch ----------------------------------------------------------------

def attention(lib, x, wq, wk, wv):
    b, n, d = x.shape
    q = (x @ wq).view(b, n, 2, d // 2).transpose(1, 2)
    k = (x @ wk).view(b, n, 2, d // 2).transpose(1, 2)
    v = (x @ wv).view(b, n, 2, d // 2).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / (d // 2) ** 0.5)
    mask = lib.tril(lib.ones(n, n)).view(1, 1, n, n)
    att = att.masked_fill(mask == 0, float("-inf")).softmax(dim=-1)
    y = (att @ v).transpose(1, 2).contiguous().view(b, n, d)
    return lib.nn.functional.layer_norm(y + x, (d,)).sum()


def mixed(lib, x, w):
    h = lib.cat([x, x * 2], dim=1)[:, 1:]
    h = h.clone()
    h[:, 0] = 0.5
    h.mul_(w[: h.shape[1]])
    with lib.no_grad():
        scale = h.abs().max()
    out = lib.where(h > 0, h.sigmoid(), h.exp() - 1) / (scale + 1)
    return (out ** 2).mean() + lib.nn.functional.gelu(out).sum()


PROGRAMS = {
    "chain": (lambda lib, x, w: chain(x, w), [(4, 6), (4, 6)]),
    "attention": (attention, [(2, 5, 8), (8, 8), (8, 8), (8, 8)]),
    "mixed": (mixed, [(3, 4), (8,)]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_and_gradients_match_eager_and_torch(name):
    prog, shapes = PROGRAMS[name]
    arrays = [np.random.randn(*s) for s in shapes]

    def run(lib, compiled):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        f = (lambda *a: prog(lib, *a))
        if compiled:
            f = lib.compile(f, backend="eager")
        out = f(*xs)
        out.backward()
        out2 = f(*xs)  # the replay
        g2 = lib.autograd.grad(out2, xs)
        return out, [x.grad for x in xs], out2, g2

    ref_out, ref_g, _, _ = run(torch, False)
    for compiled in (False, True):
        out, grads, out2, grads2 = run(fg, compiled)
        close(out, ref_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        close(out2, ref_out.detach().numpy(), rtol=1e-10, atol=1e-12)
        for a, b, c in zip(grads, ref_g, grads2):
            close(a, b.numpy(), rtol=1e-10, atol=1e-12)
            close(c, b.numpy(), rtol=1e-10, atol=1e-12)


def test_create_graph_through_a_compiled_region():
    def f(x):
        return (x.sin() * x ** 3).sum()

    for lib in (torch, fg):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        c = lib.compile(f, backend="eager")
        c(x)
        y = c(x)
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        if lib is torch:
            ref = (g.detach().numpy(), gg.numpy())
        else:
            close(g, ref[0], rtol=1e-12)
            close(gg, ref[1], rtol=1e-12)


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(6, 16)
            self.norm = lib.nn.LayerNorm(16)
            self.fc2 = lib.nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(self.norm(self.fc1(x)).relu())

    return Net()


def test_training_loop_with_compiled_model_matches_torch():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(32, 6)).astype(np.float32)
    Y = rng.integers(0, 3, size=32)
    tnet = _net(torch)
    state = {k: v.detach().numpy().copy() for k, v in tnet.state_dict().items()}
    results = []
    for lib in (torch, fg):
        model = _net(lib)
        model.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        model = lib.compile(model, backend="eager")
        opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
        losses = []
        for step in range(6):
            xb = lib.tensor(X[(step % 2) * 16:(step % 2 + 1) * 16])
            yb = lib.tensor(Y[(step % 2) * 16:(step % 2 + 1) * 16])
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        model.eval()
        with lib.no_grad():
            results.append((losses, model(lib.tensor(X)).numpy()))
        if lib is fg and not AGAINST_TORCH:
            assert len(entries(model)) == 2  # train, then eval under no_grad
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-4, atol=1e-5)


def test_custom_backend_receives_an_fx_graph_module():
    x = np.random.randn(4, 3).astype(np.float32)
    for lib in (torch, fg):
        seen = []

        def backend(gm, example_inputs):
            seen.append((gm, example_inputs))
            return gm.forward

        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.ReLU())
        compiled = lib.compile(model, backend=backend)
        xt = lib.tensor(x)
        out = compiled(xt)
        out2 = compiled(xt)
        close(out, model(xt))
        close(out2, model(xt))
        assert len(seen) == 1  # once per captured graph, not per call
        gm, example = seen[0]
        assert isinstance(gm, lib.fx.GraphModule)
        assert all(isinstance(t, lib.Tensor) for t in example)
        ops = [n.op for n in gm.graph.nodes]
        assert ops[0] == "placeholder" and ops[-1] == "output"
        assert "linear" in gm.code and "relu" in gm.code
        assert len([o for o in ops if o == "placeholder"]) == len(example)


# ---- observability -----------------------------------------------------------------------------------

@ours_only
def test_logs_show_graph_guards_breaks_recompiles(monkeypatch):
    fg._logging.set_logs(graph_code=True, guards=True, graph_breaks=True, recompiles=True, dynamo=logging.INFO)
    try:
        with captured_logs(logging.INFO) as caplog:
            c = fg.compile(chain)
            c(fg.randn(3), fg.randn(3))
            c(fg.randn(3).double(), fg.randn(3).double())
            fg.compile(with_breaks)(t([1.0]))
        text = caplog.text
        assert "def replay" in text and "tanh" in text          # the graph
        assert "i0.shape == (3,)" in text                        # the guards
        assert "Recompiling function chain" in text and "dtype" in text
        assert "Graph break in with_breaks" in text and "item" in text
        assert "record" in text and "ms" in text                 # compile time per stage
    finally:
        fg._logging.set_logs()
    assert "record" in fg.compiler.compile_times()
    monkeypatch.setenv("TORCH_LOGS", "graph_breaks,recompiles")
    fg._logging._from_env()
    assert fg._logging.enabled("graph_breaks") and not fg._logging.enabled("graph_code")
    fg._logging.set_logs()


# ---- randomized programs ----------------------------------------------------------------------------

UNARY = ["exp", "tanh", "sigmoid", "relu", "sin", "abs", "neg", "square"]
BINARY = ["add", "mul", "sub", "maximum"]


def _random_program(rnd):
    kinds = [("unary", 30), ("binary", 25), ("scalar", 8), ("reduce", 6), ("view", 6), ("softmax", 4),
             ("slice", 5), ("inplace", 5), ("nograd", 4), ("cat", 4), ("item", 3)]
    steps = []
    for _ in range(rnd.randint(2, 9)):
        k = rnd.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        if k == "unary":
            steps.append(("unary", rnd.choice(UNARY)))
        elif k == "binary":
            steps.append(("binary", rnd.choice(BINARY), rnd.random() < 0.5))
        elif k == "scalar":
            steps.append(("scalar", rnd.choice([0.5, -1.5, 2.0])))
        elif k == "reduce":
            steps.append(("reduce", rnd.choice(["sum", "mean", "amax"])))
        else:
            steps.append((k,))
    return steps


def _run_program(steps, x, w):
    lib = fg
    h = x
    for s in steps:
        if s[0] == "unary":
            h = getattr(h, s[1])()
        elif s[0] == "binary":
            other = w if s[2] else x
            while other.dim() > h.dim():
                other = other.sum(0)
            if other.dim() and tuple(other.shape) != tuple(h.shape)[h.dim() - other.dim():]:
                other = other.mean()
            h = getattr(h, s[1])(other)
        elif s[0] == "scalar":
            h = h * s[1] + s[1]
        elif s[0] == "reduce":
            if h.dim() > 1:
                h = getattr(h, s[1])(dim=0)
        elif s[0] == "view":
            h = h.reshape(h.shape[0], -1) if h.dim() > 1 else h.view(-1, 1).transpose(0, 1).reshape(-1)
        elif s[0] == "softmax":
            h = h.softmax(dim=-1)
        elif s[0] == "slice":
            h = h[1:] if h.shape[0] > 1 else h[..., :1] * 3
        elif s[0] == "inplace":
            h = h.clone()
            h.mul_(1.5).add_(0.25)
        elif s[0] == "nograd":
            with lib.no_grad():
                m = h.detach().abs().mean()
            h = h / (m + 1)
        elif s[0] == "cat":
            h = lib.cat([h, h * 0.5], dim=-1)
        elif s[0] == "item":
            h = h * (1.0 + 0.1 * float(h.detach().sum().item() > 0))
    return h.tanh().sum()


def test_random_op_chains_match_eager():
    n = int(os.environ.get("FG_COMPILE_FUZZ", "40"))
    rnd = random.Random(1234)
    for i in range(n):
        steps = _random_program(rnd)
        shape = tuple(rnd.randint(1, 5) for _ in range(rnd.randint(1, 3)))
        f = fg.compile(lambda x, w, steps=steps: _run_program(steps, x, w), dynamic=rnd.choice([None, True, False]),
                       backend="eager")
        for call in range(3):
            s = shape if call < 2 else (shape[0] + 1,) + shape[1:]
            xa, wa = np.random.randn(*s), np.random.randn(*s[-1:])
            x = fg.tensor(xa, requires_grad=True)
            w = fg.tensor(wa, requires_grad=True)
            out = f(x, w)
            out.backward()
            x2 = fg.tensor(xa, requires_grad=True)
            w2 = fg.tensor(wa, requires_grad=True)
            ref = _run_program(steps, x2, w2)
            ref.backward()
            msg = f"program {i}: {steps} shape {s}"
            np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12, err_msg=msg)
            for a, b in ((x, x2), (w, w2)):
                assert (a.grad is None) == (b.grad is None), msg
                if b.grad is not None:
                    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-14, err_msg=msg)


@ours_only
def test_recurrent_modules_and_training_steps_compile():
    torch_free = nn.LSTM(3, 4, batch_first=True)
    c = fg.compile(torch_free)
    x = fg.randn(2, 5, 3)
    out, (h, cell) = c(x)
    ref, (rh, rc) = torch_free(x)
    close(out, ref)
    close(h, rh)
    assert not entries(c)[0].breaks  # the native cat/stack/zeros the module calls are recorded
    close(c(x)[0], ref)

    lin = nn.Linear(3, 1)
    opt = fg.optim.Adam(lin.parameters(), lr=0.1)
    ref_lin = nn.Linear(3, 1)
    ref_lin.load_state_dict(lin.state_dict())
    ref_opt = fg.optim.Adam(ref_lin.parameters(), lr=0.1)

    def step(model, optimizer, xb):
        optimizer.zero_grad()
        loss = model(xb).pow(2).mean()
        loss.backward()
        optimizer.step()
        return loss

    cstep = fg.compile(step)
    for _ in range(4):
        xb = fg.randn(8, 3)
        close(cstep(lin, opt, xb), step(ref_lin, ref_opt, xb))
    close(lin.weight, ref_lin.weight)  # Adam's step counts advanced on every compiled call
    assert entries(cstep)[0].breaks


@ours_only
def test_other_threads_are_not_recorded():
    import threading

    started, release = threading.Event(), threading.Event()
    other = []

    def slow(x):
        y = x * 2
        started.set()
        release.wait(5)
        return y + 1

    def worker():
        started.wait(5)
        for _ in range(50):
            other.append(float((t([1.0]) * 3).sum()))  # runs while `slow` records in the main thread
        release.set()

    th = threading.Thread(target=worker)
    th.start()
    c = fg.compile(slow)
    close(c(t([1.0])), [3.0])
    th.join()
    assert other == [3.0] * 50
    assert entries(c)[0].ops == ["__mul__", "__add__"]
    close(c(t([2.0])), [5.0])


# ---- the program corpus with every model call compiled (long: FG_COMPILE_PROGRAMS=1 or a list) ----

_CORPUS = Path(__file__).resolve().parent / "programs"
_WANTED = os.environ.get("FG_COMPILE_PROGRAMS", "")
_CORPUS_SCRIPTS = sorted(p.stem for p in _CORPUS.glob("*.py") if not p.name.startswith("_")) if _WANTED else []
if _WANTED not in ("", "1"):
    _CORPUS_SCRIPTS = [s for s in _CORPUS_SCRIPTS if s in _WANTED.split(",")]


@ours_only
@pytest.mark.skipif(not _WANTED, reason="long mode: set FG_COMPILE_PROGRAMS=1 (or a list of scripts)")
@pytest.mark.parametrize("script", _CORPUS_SCRIPTS or ["none"])
def test_corpus_programs_with_compiled_modules(script, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(Path(fg.__file__).resolve().parent.parent))
    launch = [sys.executable, str(_CORPUS / "_launch.py"), "ferrograd"]
    runs = []
    for extra in ([], [str(_CORPUS / "_autocompile.py")]):
        p = subprocess.run(launch + extra + [str(_CORPUS / f"{script}.py")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        runs.append(([ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")], p.returncode))
    assert runs[1] == runs[0]
