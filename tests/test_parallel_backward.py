"""Backward over wide graphs of large tensors, where the engine runs independent nodes on several
threads, compared with torch doing the same: Python hooks of every kind, custom Functions,
retain_grad, checkpoint (saved-tensor hooks calling Python), anomaly mode, and an exception raised
in one branch. What Python observes (the order of the calls, which leaves got a gradient before an
error) and the gradients are torch's. The bitwise equality with the sequential engine is tested
in Rust (tests/engine.rs).
"""
import numpy as np
import pytest
import torch
import torch.utils.checkpoint  # noqa: F401 - makes torch.utils.checkpoint an attribute

from conftest import AGAINST_TORCH, fg
from parity import same

N = 256  # 256 x 256 operands: every matmul/tanh node is above the engine's parallel threshold


@pytest.fixture(autouse=True)
def parallel_engine():
    """The parallel engine whenever there are two threads: by default it waits for more."""
    if AGAINST_TORCH:
        yield
        return
    before = fg._C._set_parallel_backward("always")
    yield
    fg._C._set_parallel_backward(before)


def leaves(L, n_biases=0):
    rng = np.random.default_rng(5)
    x = L.tensor(rng.standard_normal((N, N)), dtype=L.float64, requires_grad=True)
    ws = [L.tensor(rng.standard_normal((N, N)) / 16, dtype=L.float64, requires_grad=True) for _ in range(3)]
    bs = [L.tensor(rng.standard_normal(N), dtype=L.float64, requires_grad=True) for _ in range(n_biases)]
    return x, ws, bs


@pytest.mark.skipif(AGAINST_TORCH or fg.get_num_threads() < 2, reason="ferrograd's engine, with threads")
def test_wide_graph_runs_nodes_on_several_threads():
    x, ws, _ = leaves(fg)
    total = 0
    for k in range(8):
        total = total + ((x @ ws[k % 3]).tanh() @ ws[(k + 1) % 3]).sum()
    with fg.autograd.profiler.profile() as prof:
        total.backward()
    assert len({e.thread for e in prof.function_events if e.is_backward}) >= 2


def test_hooks_and_custom_functions_run_in_torchs_order():
    def f(L):
        log = []

        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, t, k):
                ctx.k = k
                return t * 2

            @staticmethod
            def backward(ctx, g):
                log.append(f"function {ctx.k}")
                return g * 2, None

        x, ws, _ = leaves(L)
        for i, w in enumerate(ws):
            w.register_hook(lambda g, i=i: log.append(f"leaf hook {i}"))
            w.register_post_accumulate_grad_hook(lambda p, i=i: log.append(f"accumulated {i}"))
        total, kept = 0, None
        for k in range(9):
            h = (x @ ws[k % 3]).tanh()
            if k % 3 == 0:
                h = Scale.apply(h, k)
            if k % 4 == 1:
                h.register_hook(lambda g, k=k: log.append(f"tensor hook {k}") or g * 0.5)
            if k == 5:
                h.retain_grad()
                kept = h
            if k == 7:
                h.grad_fn.register_prehook(lambda go, k=k: log.append(f"pre-hook {k}"))
            total = total + (h @ ws[(k + 2) % 3]).sum()
        total.backward()
        return log, x.grad, [w.grad for w in ws], kept.grad
    same(f)


def test_exception_in_one_branch_leaves_the_gradients_torch_leaves():
    def f(L):
        class Boom(L.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 1

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom in backward")

        x, ws, bs = leaves(L, 8)
        total = 0
        for k in range(8):
            h = (x @ ws[k % 3] + bs[k]).tanh()
            if k == 4:
                h = Boom.apply(h)
            total = total + (h @ ws[(k + 1) % 3]).sum()
        with pytest.raises(ValueError, match="boom in backward"):
            total.backward()
        return [b.grad for b in bs], [w.grad is None for w in ws], x.grad is None
    same(f)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpointed_branches(use_reentrant):
    def f(L):
        x, ws, _ = leaves(L)
        calls = []

        def block(h, w):
            calls.append(1)
            return (h @ w).tanh()

        total = 0
        for k in range(6):
            h = L.utils.checkpoint.checkpoint(block, x, ws[k % 3], use_reentrant=use_reentrant)
            total = total + (h @ ws[(k + 1) % 3]).sum()
        total.backward()
        return len(calls), x.grad, [w.grad for w in ws]
    same(f)


@pytest.mark.parametrize("graph_in_anomaly_mode", [False, True])
def test_anomaly_mode_names_the_first_nan_node(graph_in_anomaly_mode):
    def f(L):
        x, ws, _ = leaves(L)

        def build():
            total = 0
            for k in range(6):
                h = (x @ ws[k % 3]).tanh()
                if k in (2, 4):
                    h = (h - 2).sqrt() if k == 4 else (h - 3).log()  # nan forward and backward
                total = total + (h @ ws[(k + 1) % 3]).sum()
            return total

        with L.autograd.detect_anomaly():
            total = build() if graph_in_anomaly_mode else None
        total = total if graph_in_anomaly_mode else build()
        with L.autograd.detect_anomaly():
            with pytest.raises(RuntimeError) as e:
                total.backward()
        return str(e.value).splitlines()[0]
    with pytest.warns(UserWarning):
        same(f)


def test_backward_nested_over_the_same_graph():
    """A custom Function's backward runs autograd.grad over the graph the outer pass is running
    (the nodes the outer pass holds): both passes get torch's gradients."""

    def f(L):
        x = L.tensor([0.3, -0.7, 1.1], dtype=L.float64, requires_grad=True)
        inner = (x * 1.5 + 0.25).tanh()

        class Probe(L.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                # walks inner's nodes, which the outer backward has discovered and not yet run
                with L.enable_grad():
                    (gx,) = L.autograd.grad(inner.sum(), x, retain_graph=True)
                seen.append(gx.detach().clone())
                return g * 2

        seen = []
        out = (Probe.apply(inner) * inner).sum()
        out.backward()
        return x.grad, seen[0]

    same(f)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's engine from two threads")
def test_two_threads_backward_over_one_retained_graph():
    """Two threads run backward over one retained graph at the same time (they hold the same
    nodes): each gets the sequential result."""
    import threading

    rng = np.random.default_rng(3)
    x = fg.tensor(rng.standard_normal(64), dtype=fg.float64, requires_grad=True)
    y = x
    for _ in range(2000):
        y = (y * 0.999 + 0.001).tanh()
    loss = y.sum()
    (want,) = fg.autograd.grad(loss, x, retain_graph=True)
    got, errors = [], []

    def work():
        try:
            for _ in range(5):
                got.append(fg.autograd.grad(loss, x, retain_graph=True)[0])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == 10
    for g in got:
        assert np.array_equal(g.numpy(), want.numpy())
