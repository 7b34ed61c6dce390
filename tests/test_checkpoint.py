"""utils.checkpoint: checkpoint and checkpoint_sequential, each compared with torch doing the same.

Gradients equal the un-checkpointed run (MLP-like function over closed-over weights, several outputs,
keyword arguments, autograd.grad, second derivatives), the function runs twice (forward, and again in
backward), a random op draws the same numbers when recomputed, and torch's argument errors and
warnings. A last test checks with the engine's live-node count that the activations are not kept.
"""
import gc
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint  # noqa: F401 - makes torch.utils.checkpoint an attribute

from conftest import AGAINST_TORCH, fg
from parity import same

REENTRANT = [False, True]


def weights(L, n=3, width=4):
    rng = np.random.default_rng(7)
    return [L.tensor(rng.standard_normal((width, width)) / 2, dtype=L.float64, requires_grad=True) for _ in range(n)]


def inputs(L, grad=True):
    rng = np.random.default_rng(3)
    return L.tensor(rng.standard_normal((2, 4)), dtype=L.float64, requires_grad=grad)


def mlp(ws, calls):
    def fn(h):
        calls.append(1)
        for w in ws:
            h = (h @ w).tanh()
        return h
    return fn


def ckpt(L):
    return L.utils.checkpoint


@pytest.mark.parametrize("reentrant", REENTRANT)
def test_gradients_equal_plain_run_and_fn_runs_twice(reentrant):
    def f(L):
        ws, x, calls = weights(L), inputs(L), []
        y = ckpt(L).checkpoint(mlp(ws, calls), x, use_reentrant=reentrant)
        after_forward = len(calls)
        (y * y).sum().backward()
        got = (y, x.grad, [w.grad for w in ws], after_forward, len(calls))
        for w in ws:
            w.grad = None
        x.grad = None
        plain = mlp(ws, [])(x)
        (plain * plain).sum().backward()
        return got, (plain, x.grad, [w.grad for w in ws])
    expected, got = same(f)
    assert expected[0][3:] == (1, 2)  # torch: once in forward, once more in backward


@pytest.mark.parametrize("reentrant", REENTRANT)
def test_non_tensor_args_and_several_outputs(reentrant):
    def f(L):
        ws, x, calls = weights(L), inputs(L), []

        def fn(h, scale, w):
            calls.append(1)
            a = (h @ w).sin() * scale
            return a, a.exp().sum(1)

        a, b = ckpt(L).checkpoint(fn, x, 0.5, ws[0], use_reentrant=reentrant)
        (a.sum() + (b * b).sum()).backward()
        return a, b, x.grad, ws[0].grad, len(calls)
    same(f)


@pytest.mark.parametrize("reentrant", REENTRANT)
def test_checkpoint_sequential(reentrant):
    def f(L):
        ws, x = weights(L, n=5), inputs(L)
        counts = [0] * 6

        def layer(i, w):
            def run(h):
                counts[i] += 1
                return (h @ w).tanh()
            return run

        def last(h):
            counts[5] += 1
            return h.sum(1)

        functions = [layer(i, w) for i, w in enumerate(ws)] + [last]
        out = ckpt(L).checkpoint_sequential(functions, 3, x, use_reentrant=reentrant)
        out.sum().backward()
        got = (out, x.grad, [w.grad for w in ws], list(counts))
        x.grad = None
        for w in ws:
            w.grad = None
        h = x
        for fn in functions:
            h = fn(h)
        h.sum().backward()
        return got, (h, x.grad, [w.grad for w in ws])
    expected, _ = same(f)
    assert expected[0][3] == [2, 2, 2, 2, 1, 1]  # the last segment is not checkpointed


def test_non_reentrant_autograd_grad():
    def f(L):
        ws, x, calls = weights(L), inputs(L), []
        y = ckpt(L).checkpoint(mlp(ws, calls), x, use_reentrant=False)
        grads = L.autograd.grad((y ** 3).sum(), [x] + ws)
        return grads, [w.grad for w in ws], len(calls)
    same(f)


def test_non_reentrant_input_without_grad():
    """Closed-over weights get gradients even when no argument requires grad."""
    def f(L):
        ws, calls = weights(L), []
        x = inputs(L, grad=False)
        y = ckpt(L).checkpoint(mlp(ws, calls), x, use_reentrant=False)
        flag = y.requires_grad
        y.sum().backward()
        return flag, [w.grad for w in ws], len(calls)
    same(f)


def test_non_reentrant_keyword_arguments():
    def f(L):
        ws, x = weights(L), inputs(L)

        def fn(h, *, w, power):
            return (h @ w) ** power

        y = ckpt(L).checkpoint(fn, x, w=ws[1], power=2, use_reentrant=False)
        y.sum().backward()
        return y, x.grad, ws[1].grad
    same(f)


def test_non_reentrant_second_derivative():
    def f(L):
        ws, x = weights(L), inputs(L)
        y = ckpt(L).checkpoint(lambda h: ((h @ ws[0]) ** 3).sum(), x, use_reentrant=False)
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        return g, x.grad, ws[0].grad
    same(f)


def test_decorator_form():
    def f(L):
        ws, x, calls = weights(L), inputs(L), []
        fn = L.utils.checkpoint.checkpoint(use_reentrant=False)(mlp(ws, calls))
        y = fn(x)
        y.sum().backward()
        return y, x.grad, [w.grad for w in ws], len(calls)
    same(f)


@pytest.mark.parametrize("reentrant", REENTRANT)
def test_random_ops_replay_in_recomputation(reentrant):
    def f(L):
        x = inputs(L)
        L.manual_seed(0)
        y = ckpt(L).checkpoint(lambda a: L.nn.functional.dropout(a, 0.5, training=True) * a, x,
                               use_reentrant=reentrant)
        y.sum().backward()
        # d/dx (mask * x * x / (1 - p)) = 2 * y / x: the recomputed mask must be the forward's
        return bool(np.allclose(x.grad.numpy(), 2 * y.detach().numpy() / x.detach().numpy())), bool((y == 0).any())
    expected, _ = same(f)
    assert expected == (True, True)


@pytest.mark.parametrize("reentrant", REENTRANT)
def test_under_no_grad(reentrant):
    def f(L):
        ws, x, calls = weights(L), inputs(L), []
        with L.no_grad():
            y = ckpt(L).checkpoint(mlp(ws, calls), x, use_reentrant=reentrant)
        return y, y.requires_grad, len(calls)
    same(f)


def test_errors_and_warnings():
    def f(L):
        x = inputs(L)
        try:
            ckpt(L).checkpoint(lambda a, k: a * k, x, k=2.0, use_reentrant=True)
            kw = None
        except ValueError as e:
            kw = str(e)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = ckpt(L).checkpoint(lambda a: a * 2, x)  # use_reentrant not given: warns, reentrant
            ckpt(L).checkpoint(lambda a: a * 2, inputs(L, grad=False), use_reentrant=True)
        messages = [str(i.message) for i in w]
        return (kw, any("use_reentrant parameter should be passed explicitly" in m for m in messages),
                any("None of the inputs have requires_grad=True" in m for m in messages), y.grad_fn.name())
    same(f)


@pytest.mark.skipif(AGAINST_TORCH, reason="live-node count is ferrograd's")
@pytest.mark.parametrize("reentrant", REENTRANT)
def test_activations_not_kept(reentrant):
    ws, x = weights(fg, n=6), inputs(fg)
    gc.collect()
    live = lambda: fg.autograd.graph.stats()["live_nodes"]  # noqa: E731
    before = live()
    plain = mlp(ws, [])(x)
    plain_nodes = live() - before
    del plain
    y = fg.utils.checkpoint.checkpoint(mlp(ws, []), x, use_reentrant=reentrant)
    assert live() - before == 1 < plain_nodes  # one node for the whole region
    y.sum().backward()
    del y
    gc.collect()
    assert live() == before
