"""Tensor and node hooks, each compared with torch doing the same.

Covers: Tensor.register_hook on leaves and intermediates (replacement gradient, None return, several
hooks in registration order, remove(), handles as context managers, summed gradients), retain_grad
seeing the hook-modified gradient, post-accumulate-grad hooks, grad_fn.register_hook and
register_prehook (arguments, replacement), the order of all kinds in one backward, hooks under
autograd.grad, and errors (a raising hook, a size change, hooks on tensors without grad).
"""
import pytest

from conftest import AGAINST_TORCH
from parity import same

X = [1.0, -2.0, 3.0]


def leaf(L, values=X):
    return L.tensor(values, dtype=L.float64, requires_grad=True)


def vals(g):
    return None if g is None else g.detach().tolist()


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)


# ---------------------------------------------------------------- tensor hooks
@pytest.mark.parametrize("on_leaf", [True, False])
def test_hooks_run_in_order_and_replace(on_leaf):
    def f(L):
        log = []
        x = leaf(L)
        t = x if on_leaf else x * 2
        t.register_hook(lambda g: log.append(("a", vals(g))) or g * 10)
        t.register_hook(lambda g: log.append(("b", vals(g))))  # None: keeps the gradient
        t.register_hook(lambda g: log.append(("c", vals(g))) or g + 1)
        (t * t).sum().backward()
        return log, x.grad
    same(f)


@pytest.mark.parametrize("on_leaf", [True, False])
def test_hook_remove(on_leaf):
    def f(L):
        log = []
        x = leaf(L)
        t = x if on_leaf else x.exp()
        h1 = t.register_hook(lambda g: log.append("h1") or g * 100)
        t.register_hook(lambda g: log.append("h2"))
        h1.remove()
        h1.remove()  # twice is harmless
        t.sum().backward(retain_graph=not on_leaf)
        with t.register_hook(lambda g: g * 0):  # removed on exit
            pass
        t.sum().backward()
        return log, x.grad
    same(f)


def test_hook_sees_summed_gradient():
    def f(L):
        log = []
        x = leaf(L)
        y = x * 2
        x.register_hook(lambda g: log.append(("x", vals(g))))
        y.register_hook(lambda g: log.append(("y", vals(g))))
        (y * 3 + y.exp() + x * 5).sum().backward()
        return log, x.grad
    same(f)


def test_leaf_hook_each_backward_and_accumulation():
    def f(L):
        log = []
        x = leaf(L)
        x.register_hook(lambda g: log.append(vals(g)) or g * 2)
        (x * 3).sum().backward()
        (x * x).sum().backward()
        return log, x.grad
    same(f)


@pytest.mark.parametrize("retain_first", [True, False])
def test_retain_grad_sees_hook_modified_gradient(retain_first):
    def f(L):
        x = leaf(L)
        y = x * 2
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 10)
        if not retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g + 1)
        (y * y).sum().backward()
        return y.grad, x.grad, y.retains_grad
    same(f)


def test_hooks_fire_under_autograd_grad():
    def f(L):
        log = []
        x = leaf(L)
        y = x * 2
        y.register_hook(lambda g: log.append(("y", vals(g))) or g * 3)
        x.register_hook(lambda g: log.append(("x", vals(g))))
        (g,) = L.autograd.grad(y.sum(), x)
        return log, g, x.grad
    same(f)


def test_hook_on_tensor_without_grad_is_an_error():
    same(lambda L: outcome(lambda: L.tensor(X).register_hook(lambda g: g)))


def test_hook_that_raises_propagates():
    def f(L):
        x = leaf(L)
        y = x * 2

        def bad(g):
            raise KeyError("hook failed")

        y.register_hook(bad)
        first = outcome(lambda: y.sum().backward())
        x.register_hook(lambda g: 1 / 0)
        second = outcome(lambda: (x * 3).sum().backward())
        return first, second
    same(f)


def test_hook_changing_size_is_an_error():
    def f(L):
        x = leaf(L)
        y = x * 2

        def shrink(g):
            return g[:2]

        y.register_hook(shrink)
        return outcome(lambda: y.sum().backward())
    same(f)


# ---------------------------------------------------------------- post-accumulate-grad hooks
def test_post_accumulate_grad_hook():
    def f(L):
        log = []
        x = leaf(L)
        x.register_hook(lambda g: g * 2)
        h = x.register_post_accumulate_grad_hook(lambda t: log.append(vals(t.grad)))
        (x * 3).sum().backward()
        (x * x).sum().backward()
        h.remove()
        (x * 1).sum().backward()
        return log, x.grad
    same(f)


def test_post_accumulate_grad_hook_can_reset_grad():
    def f(L):
        x = leaf(L)

        def step(t):  # the optimizer-in-backward pattern
            with L.no_grad():
                t.sub_(t.grad * 0.5)
            t.grad = None

        x.register_post_accumulate_grad_hook(step)
        (x * x).sum().backward()
        return x.detach(), x.grad
    same(f)


def test_post_accumulate_grad_hook_receives_the_leaf_itself():
    def f(L):
        x = leaf(L)
        names = {x: "x"}
        log = []
        x.register_post_accumulate_grad_hook(lambda t: log.append((t is x, names.get(t))))
        (x * 2).sum().backward()
        return log
    same(f)


def test_post_accumulate_hook_on_non_leaf_is_an_error():
    same(lambda L: outcome(lambda: (leaf(L) * 2).register_post_accumulate_grad_hook(lambda t: None))[0])


# ---------------------------------------------------------------- node hooks
def test_node_prehook_and_hook_arguments():
    def f(L):
        log = []
        x = leaf(L)
        w = leaf(L, [0.5, 0.25, -1.0])
        y = x * w
        z = y.exp()

        def pre(grad_outputs):
            log.append(("pre", [vals(g) for g in grad_outputs]))

        def post(grad_inputs, grad_outputs):
            log.append(("post", [vals(g) for g in grad_inputs], [vals(g) for g in grad_outputs]))

        y.grad_fn.register_prehook(pre)
        y.grad_fn.register_hook(post)
        z.sum().backward()
        return log, x.grad, w.grad
    same(f)


def test_node_prehook_replaces_grad_outputs():
    def f(L):
        log = []
        x = leaf(L)
        y = x * 2
        z = y.exp()
        y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        y.grad_fn.register_hook(lambda gi, go: log.append(([vals(g) for g in gi], [vals(g) for g in go])))
        z.sum().backward()
        return log, x.grad
    same(f)


def test_node_hook_replaces_grad_inputs():
    def f(L):
        x = leaf(L)
        w = leaf(L, [0.5, 0.25, -1.0])
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7, None))
        y.sum().backward()
        return x.grad, w.grad
    same(f)


def test_node_hook_wrong_count_is_an_error():
    def f(L):
        x = leaf(L)
        y = x * leaf(L)
        y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
        return outcome(lambda: y.sum().backward())[0]
    same(f)


def test_node_hook_remove():
    def f(L):
        log = []
        x = leaf(L)
        y = x * 2
        h1 = y.grad_fn.register_prehook(lambda go: log.append("pre"))
        h2 = y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        h1.remove()
        h2.remove()
        y.sum().backward()
        return log, x.grad
    same(f)


def test_order_of_all_hook_kinds():
    def f(L):
        log = []
        x = leaf(L)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: log.append("node pre"))
        y.grad_fn.register_hook(lambda gi, go: log.append("node post"))
        y.register_hook(lambda g: log.append("tensor"))
        x.register_hook(lambda g: log.append("leaf"))
        x.register_post_accumulate_grad_hook(lambda t: log.append("post accumulate"))
        y.sum().backward()
        return log
    same(f)


# ---------------------------------------------------------------- saved_tensors_hooks
SAVED_CASES = {
    "mul_number": lambda L, x, y: x * 2.5,
    "number_mul": lambda L, x, y: 3 * x,
    "div_number": lambda L, x, y: x / 4.0,
    "mul_tensor": lambda L, x, y: x * y,
    "div_tensor": lambda L, x, y: x / y,
    "exp_output": lambda L, x, y: x.exp(),
    "chain": lambda L, x, y: ((x * 1.5 + 0.5).tanh() / 2.0) * y,
}


@pytest.mark.parametrize("case", sorted(SAVED_CASES))
def test_saved_tensors_hooks_see_what_torch_saves(case):
    """saved_tensors_hooks pack exactly the tensors torch saves (a Python number operand is not
    one), unpack feeds backward, and the gradients match torch's."""
    def run(L):
        packed = []

        def pack(t):
            packed.append((tuple(t.shape), str(t.dtype).rsplit(".")[-1], t.detach().tolist()))
            return t * 1  # a copy: backward must use what unpack returns

        x = leaf(L)
        y = L.tensor([0.5, 2.0, -1.5], dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = SAVED_CASES[case](L, x, y)
        out.sum().backward()
        return sorted(packed), vals(x.grad), vals(y.grad)

    same(run)


@pytest.mark.parametrize("op", ["mul", "div"])
def test_second_backward_through_a_number_operand_raises(op):
    """x * 2.0 and x / 2.0 keep the number for backward as torch does (freed after backward)."""
    def run(L):
        x = leaf(L)
        out = (x * 2.0 if op == "mul" else x / 2.0).sum()
        out.backward()
        first = vals(x.grad)
        return first, outcome(lambda: out.backward())[0]

    same(run)
