"""Graphs are released: live-node counts return to where they were (ferrograd.autograd.graph.stats)."""

import gc
import weakref

import ferrograd as fg


def live():
    gc.collect()
    return fg.autograd.graph.stats()["live_nodes"]


class KeepsOutput(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x * 2
        ctx.out = out  # ctx -> output -> grad_fn -> ctx: a cycle through the Rust node
        return out

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_ctx_holding_its_output_is_collected():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    before = live()
    y = KeepsOutput.apply(x)
    ref = weakref.ref(y)
    assert live() == before + 1
    del y
    assert live() == before
    assert ref() is None


def test_ctx_cycle_still_usable_for_backward_while_alive():
    x = fg.tensor([1.0, 2.0], requires_grad=True)
    y = KeepsOutput.apply(x)
    z = y * 3
    del y
    gc.collect()  # y is reachable through z's graph only: the node must keep its ctx
    z.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_graph_dropped_without_backward_is_released():
    x = fg.randn(4, 4, requires_grad=True)
    before = live()
    y = ((x @ x).tanh() * x).sum(1).softmax(0)
    assert live() > before
    del y
    assert live() == before


def test_hook_capturing_tensors_is_released():
    x = fg.randn(3, requires_grad=True)
    before = live()
    y = x.exp()
    keep = [y]
    y.register_hook(lambda g: g * keep[0].detach())
    y.sum().backward()
    del y, keep
    assert live() == before


def test_retained_graph_released_when_outputs_dropped():
    x = fg.randn(3, requires_grad=True)
    before = live()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    del y
    assert live() == before


def test_training_loop_keeps_node_count_flat():
    w = fg.randn(8, 8, requires_grad=True)
    x = fg.randn(16, 8)
    before = live()
    for _ in range(200):
        loss = ((x @ w).tanh() ** 2).mean()
        loss.backward()
        with fg.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
    del loss
    assert live() == before


def saved():
    gc.collect()
    return fg.autograd.graph.stats()["saved_bytes"]


def test_saved_bytes_counted_and_released():
    x = fg.randn(100, 50, dtype=fg.float64, requires_grad=True)
    base = saved()
    y = x.tanh()  # saves its output: 100*50 float64
    assert saved() - base == 100 * 50 * 8
    z = y.exp().sum()  # exp saves its output too
    assert saved() - base == 2 * 100 * 50 * 8
    z.backward()  # saved values are freed by a backward without retain_graph
    assert saved() == base
    w = x.sin()
    assert saved() - base == 100 * 50 * 8
    del w  # dropped without backward: the graph and its saved input go
    assert saved() == base
