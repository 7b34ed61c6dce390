"""Reliability: impossible allocations are errors, threads and fork work, errors leave state usable."""

import os
import sys
import threading

import pytest
import torch

import ferrograd as fg


@pytest.mark.parametrize("make", [
    lambda L: L.zeros(2**40, 2**20),
    lambda L: L.ones(10**13),
    lambda L: L.full((2**31, 2**31), 1.0),
    lambda L: L.zeros(2**62, 4),
], ids=["2^60", "10^13", "full_2^62", "overflow"])
def test_impossible_allocation_is_a_runtime_error(make):
    with pytest.raises(RuntimeError) as t_err:
        make(torch)
    with pytest.raises(RuntimeError) as f_err:
        make(fg)
    msg = str(f_err.value)
    assert "allocate" in msg or "too large" in msg or "overflow" in msg
    del t_err
    assert float(fg.ones(2).sum()) == 2.0  # the process is still fine


def test_negative_size_matches_torch():
    for L in (torch, fg):
        with pytest.raises(RuntimeError, match="non-negative"):
            L.zeros(2, -1)


def _grad_work(x, i, out, errors):
    try:
        for _ in range(30):
            y = ((x @ x).tanh() * (i + 1)).sum()
            (g,) = fg.autograd.grad(y, x)
        out[i] = g.numpy().copy()
    except Exception as e:  # pragma: no cover - reported below
        errors.append(e)


def test_threads_on_a_shared_leaf_give_correct_results():
    x = fg.randn(40, 40, requires_grad=True)
    out, errors = {}, []
    threads = [threading.Thread(target=_grad_work, args=(x, i, out, errors)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    for i in range(4):
        y = ((xt @ xt).tanh() * (i + 1)).sum()
        (g,) = torch.autograd.grad(y, xt)
        assert abs(out[i] - g.numpy()).max() < 1e-4


def test_threads_with_python_hooks_and_shared_graph_do_not_deadlock():
    x = fg.randn(20, requires_grad=True)
    y = (x * x).exp()
    calls = []
    y.register_hook(lambda g: calls.append(1) or g)
    z = y.sum()
    errors = []

    def run():
        try:
            for _ in range(20):
                fg.autograd.grad(z, x, retain_graph=True)
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors and len(calls) == 60


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_child_can_compute():
    fg.randn(200, 200) @ fg.randn(200, 200)  # start the thread pool in the parent first
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            x = fg.randn(300, 300, requires_grad=True)
            (x @ x).sum().backward()
            ok = x.grad.shape == (300, 300)
            os.write(w, b"ok" if ok else b"bad")
        finally:
            os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    assert os.read(r, 10) == b"ok"
    assert status == 0


def test_errors_leave_graph_usable():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError):
        y.backward()  # non-scalar
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_deep_python_chain_is_released():
    x = fg.tensor([1.0], requires_grad=True)
    before = fg.autograd.graph.stats()["live_nodes"]
    y = x
    for _ in range(200_000):
        y = y + 1.0
    y.backward()
    assert x.grad.item() == 1.0
    del y
    assert fg.autograd.graph.stats()["live_nodes"] == before
    assert sys.getrecursionlimit() > 0
