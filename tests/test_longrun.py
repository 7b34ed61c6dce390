"""Long runs keep memory flat: a 10,000-step training loop, and a loop over the graph
patterns that tend to leak (outputs dropped without backward, custom-Function ctx cycles, hooks that
capture tensors, retained and double-backward graphs, checkpointing, in-place ops on views, and every
error path of backward), with tensors large enough that one leaked buffer per iteration shows.

Measured after a warm-up: resident memory (/proc/self/statm), the number of gc-tracked Python objects
and, for ferrograd, live graph nodes (`autograd.graph.stats()`). Single-shot node-count checks of
these patterns are in test_leaks.py; this file runs them thousands of times and watches the process.
FERROGRAD_LONG_TESTS=1 runs 10x longer.
"""
import gc
import os
import sys

import pytest

from conftest import AGAINST_TORCH, fg

LONG = os.environ.get("FERROGRAD_LONG_TESTS") == "1"
SCALE = 10 if LONG else 1
RSS_BOUND = 20 * 2 ** 20   # bytes of resident-memory growth allowed after warm-up
OBJECTS_BOUND = 2000       # gc-tracked Python objects allowed to appear after warm-up

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Against torch (FG_TEST_AGAINST_TORCH=1), tiny steps run ~10x faster on one thread on a loaded
    2-core machine; the library under test keeps its own settings."""
    if not AGAINST_TORCH:
        yield
        return
    n = fg.get_num_threads()
    fg.set_num_threads(1)
    yield
    fg.set_num_threads(n)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def live_nodes():
    return None if AGAINST_TORCH else fg.autograd.graph.stats()["live_nodes"]


class Snapshot:
    def __init__(self):
        gc.collect()
        self.rss, self.objects, self.nodes = rss(), len(gc.get_objects()), live_nodes()

    def growth(self, before):
        return {"rss_MB": (self.rss - before.rss) / 2 ** 20, "objects": self.objects - before.objects,
                "live_nodes": None if self.nodes is None else self.nodes - before.nodes}


def assert_flat(before, after, what):
    g = after.growth(before)
    print(f"{what}: {g}", file=sys.stderr)
    assert after.rss - before.rss < RSS_BOUND, f"{what}: resident memory grew by {g['rss_MB']:.1f} MB"
    assert after.objects - before.objects < OBJECTS_BOUND, f"{what}: {g['objects']} more Python objects"
    if after.nodes is not None:
        assert after.nodes == before.nodes, f"{what}: {g['live_nodes']} graph nodes not released"


# ------------------------------------------------------------------ a training loop
def test_training_loop_memory_is_flat():
    fg.manual_seed(0)
    model = fg.nn.Sequential(fg.nn.Linear(8, 32), fg.nn.ReLU(), fg.nn.Linear(32, 4))
    opt = fg.optim.Adam(model.parameters(), lr=1e-3)
    x = fg.randn(16, 8)
    y = fg.tensor([k % 4 for k in range(16)])

    def step():
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    first = [step() for _ in range(300)]  # warm-up: optimizer state, allocator pools
    before = Snapshot()
    for _ in range(10_000 * SCALE):
        last = step()
    after = Snapshot()
    assert last < first[0], "the loop did not train"  # the steps did real work
    assert_flat(before, after, f"{10_000 * SCALE} Adam steps")


# ------------------------------------------------------------------ graph patterns that leak
class KeepsOutput(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x * 2
        ctx.out = out  # ctx -> output -> grad_fn -> ctx: a cycle through the native node
        ctx.save_for_backward(x)
        return out

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 + x * 0


class Boom(Exception):
    pass


def _expect(exc, fn):
    try:
        fn()
    except exc:
        return
    raise AssertionError(f"expected {exc.__name__}")


def one_round(base, w):
    """Every pattern once. Each round makes new 256 KiB tensors from `base` (64 x 1024 float32), so a
    leaked buffer per round shows in resident memory."""
    F = fg.nn.functional

    def b8():  # a new 256 KiB tensor in the graph, seen through a 64 x 8 view
        return (base * 1.5)[:, :8]
    # outputs dropped without backward
    y = ((b8() @ w).tanh() * 2).sum(1).softmax(0)
    del y
    # custom Function whose ctx holds its output; backward through it
    z = KeepsOutput.apply(w)
    (z * b8()[:8]).sum().backward()
    w.grad = None
    # hook capturing a tensor; post-accumulate hook
    h = b8()[:4] @ w
    keep = [h]
    h.register_hook(lambda g: g * keep[0].detach().sign())
    h.sum().backward()
    del keep, h
    w.grad = None
    # retained graph, backward twice; then autograd.grad with create_graph (double backward)
    s = (w * w).sum()
    s.backward(retain_graph=True)
    s.backward()
    (g,) = fg.autograd.grad((w ** 3).sum(), w, create_graph=True)
    g.sum().backward()
    w.grad = None
    # checkpointing, and an in-place op on a view of a non-leaf
    c = fg.utils.checkpoint.checkpoint(lambda t: (t @ w).relu(), b8()[:16], use_reentrant=False)
    c = c.clone()
    c[:, 0].mul_(2)
    c.sum().backward()
    w.grad = None
    # error paths: each must leave nothing behind
    t = w * 1
    u = t.exp()          # saves its output
    u.add_(1)            # ... which is then modified in place
    _expect(RuntimeError, lambda: u.sum().backward())
    v = (w * 2).sum()
    v.backward()
    _expect(RuntimeError, lambda: v.backward())  # second backward without retain_graph
    _expect(RuntimeError, lambda: (w * 2).backward())  # non-scalar output
    r = w.tanh()

    def hook(grad):
        raise Boom()
    r.register_hook(hook)
    _expect(Boom, lambda: r.sum().backward())
    w.grad = None
    # nn layers with big activations
    big = base * 1.5
    out = F.layer_norm(big, (big.shape[-1],)).exp()
    F.cross_entropy(out[:, :10], fg.zeros(out.shape[0], dtype=fg.int64)).backward()
    base.grad = None


def test_graph_patterns_and_error_paths_keep_memory_flat():
    fg.manual_seed(0)
    w = fg.randn(8, 8, requires_grad=True)
    base = fg.randn(64, 1024, requires_grad=True)
    for _ in range(50):
        one_round(base, w)
    before = Snapshot()
    rounds = 2_000 * SCALE
    for _ in range(rounds):
        one_round(base, w)
    after = Snapshot()
    assert_flat(before, after, f"{rounds} rounds of graph patterns")


def test_big_graphs_dropped_without_backward_do_not_accumulate():
    """Graphs holding ~160 MB of saved activations, built and dropped again and again: the process
    does not grow round after round (the allocator may keep the memory, but reuses it)."""
    x = fg.randn(1024, 1024, requires_grad=True)
    peaks = []
    before = Snapshot()
    for _ in range(5 * SCALE):
        y = x
        for _ in range(40):
            y = (y * 1.01).tanh()  # each step saves a 4 MiB tensor
        peaks.append(rss())
        del y
    after = Snapshot()
    # (the first round warms the allocator up)
    assert peaks[-1] - peaks[1] < RSS_BOUND, f"peak resident memory grew: {[p >> 20 for p in peaks]} MB"
    if after.nodes is not None:
        assert after.nodes == before.nodes
