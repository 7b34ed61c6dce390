"""Custom autograd.Function written in Python, each behaviour compared with torch doing the same.

Covers: forward/backward values, several outputs, non-tensor arguments, None gradients, ctx flags
(needs_input_grad, mark_non_differentiable, mark_dirty, set_materialize_grads), the setup_context
style, once_differentiable, double backward through a Function whose backward uses library ops, the
errors torch raises (in-place change of a saved tensor, second backward, wrong count/shape/type of
gradients, exceptions from backward), grad_fn names, and release of a ctx that references its output.
"""
import gc
import weakref

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import same

X = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]


def leaf(L, values=X):
    return L.tensor(values, dtype=L.float64, requires_grad=True)


def outcome(fn):
    """What a call does: ('ok', result) or (exception type name, message)."""
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e)


def cube(L):
    class Cube(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2  # library ops: differentiable again

    return Cube


# ---------------------------------------------------------------- values
def test_forward_backward_values():
    def f(L):
        class MulAdd(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y + x

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * (y + 1), g * x

        x, y = leaf(L), L.tensor([2.0, -3.0, 0.5], dtype=L.float64, requires_grad=True)
        out = MulAdd.apply(x, y)
        (out * L.tensor(X, dtype=L.float64)).sum().backward()
        return out, x.grad, y.grad, out.grad_fn.name(), out.is_leaf
    same(f)


def test_multiple_outputs_and_materialized_zero_grad():
    def f(L):
        seen = []

        class SinAndTriple(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.sin(), x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1.clone(), g2.clone()))
                (x,) = ctx.saved_tensors
                return g1 * x.cos() + g2 * 3

        x = leaf(L)
        a, b = SinAndTriple.apply(x)
        (a * 2).sum().backward()  # b unused: its gradient arrives as zeros
        both = leaf(L)
        c, d = SinAndTriple.apply(both)
        (c + d * d).sum().backward()
        return a, b, x.grad, seen[0], both.grad, a.grad_fn.name(), a.grad_fn is not None and b.grad_fn is not None


def test_non_tensor_args_and_none_grads():
    def f(L):
        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k, mode, y):
                ctx.k, ctx.mode = k, mode
                return x * k + y if mode == "add" else x * k * y

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None, None, None  # y gets no gradient

        x, y = leaf(L), leaf(L)
        out = Scale.apply(x, 2.5, "add", y)
        out.sum().backward()
        return out, x.grad, y.grad
    same(f)


def test_grad_for_non_tensor_input_is_an_error():
    def f(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g

        kind, msg = outcome(lambda: Bad.apply(leaf(L), 2.0).sum().backward())
        return kind, "not a Variable" in msg
    same(f)


def needs_input_grad_log(L, no_grad):
    flags = []

    class Rec(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            flags.append(ctx.needs_input_grad)
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            flags.append(ctx.needs_input_grad)
            return g * 2 if ctx.needs_input_grad[0] else None, None, None

    x, y = leaf(L), L.tensor(X, dtype=L.float64)
    if no_grad:
        with L.no_grad():
            Rec.apply(x, y, 2.0)
    else:
        Rec.apply(x, y, 2.0).sum().backward()
    return flags, x.grad


def test_needs_input_grad():
    same(lambda L: needs_input_grad_log(L, no_grad=False))


def test_needs_input_grad_under_no_grad():
    same(lambda L: needs_input_grad_log(L, no_grad=True))


def with_mask(L):
    seen = []

    class WithMask(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(mask)
            return x * mask, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            seen.append(g_mask.clone())
            (mask,) = ctx.saved_tensors
            return g * mask

    return WithMask, seen


def test_mark_non_differentiable():
    def f(L):
        WithMask, _ = with_mask(L)
        y, mask = WithMask.apply(leaf(L))
        return y, mask, y.requires_grad, mask.requires_grad, mask.grad_fn is None, y.grad_fn.name()
    same(f)


def test_mark_non_differentiable_backward():
    def f(L):
        WithMask, seen = with_mask(L)
        x = leaf(L)
        y, mask = WithMask.apply(x)
        (y * 3).sum().backward()
        return x.grad, seen
    same(f)


def test_mark_dirty_inplace_on_input():
    def f(L):
        class Double_(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        x = leaf(L)
        a = x.clone()
        out = Double_.apply(a)
        (out * out).sum().backward()
        return out is a, a, a.grad_fn.name(), x.grad
    same(f)


def test_mark_dirty_on_leaf_is_an_error():
    def f(L):
        class Double_(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2

        kind, msg = outcome(lambda: Double_.apply(leaf(L)))
        return kind, "leaf Variable that requires grad" in msg
    same(f)


def test_set_materialize_grads_false_passes_none():
    def f(L):
        seen = []

        class Two(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2):
                seen.append((g1 is None, g2 is None))
                total = None
                if g1 is not None:
                    total = g1 * 2
                if g2 is not None:
                    total = g2 * 3 if total is None else total + g2 * 3
                return total

        x = leaf(L)
        a, b = Two.apply(x)
        b.sum().backward()
        return seen, x.grad
    same(f)


@pytest.mark.parametrize("materialize", [True, False])
def test_backward_runs_when_no_gradient_reaches_the_function(materialize):
    """torch calls a Function's backward even when every incoming gradient is None (here a later
    Function returns None): with zeros, or with None when materialize_grads is off. Built-in nodes
    are skipped: a leaf behind one gets no .grad."""
    def f(L):
        seen = []

        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                seen.append(None if g is None else g.tolist())
                return None if g is None else g * 2

        class Block(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                return None

        x, z = leaf(L), leaf(L)
        Block.apply(Scale.apply(x)).sum().backward()
        Block.apply(z * 3).sum().backward()
        return seen, x.grad, z.grad
    same(f)


def test_setup_context_style():
    def f(L):
        class Pow(L.autograd.Function):
            @staticmethod
            def forward(x, p):
                return x ** p

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, p = inputs
                ctx.p = p
                ctx.save_for_backward(x, output)

            @staticmethod
            def backward(ctx, g):
                x, out = ctx.saved_tensors
                return g * ctx.p * out / x, None

        x = leaf(L)
        y = Pow.apply(x, 3)
        y.sum().backward()
        return y, x.grad, y.grad_fn.name()
    same(f)


def test_returning_an_input_makes_a_new_tensor():
    def f(L):
        class Ident(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 5

        x = leaf(L)
        y = Ident.apply(x)
        y.sum().backward()
        return y is x, y.is_leaf, y.grad_fn.name(), x.grad
    same(f)


def test_grad_fn_name():
    def f(L):
        class MyFancyOp(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.exp()

            @staticmethod
            def backward(ctx, g):
                return g

        y = MyFancyOp.apply(leaf(L))
        return y.grad_fn.name(), [n.name().rsplit("::", 1)[-1] for n, _ in y.grad_fn.next_functions]
    same(f)


def test_no_grad_apply_records_nothing():
    def f(L):
        Cube = cube(L)
        with L.no_grad():
            y = Cube.apply(leaf(L))
        z = Cube.apply(L.tensor(X, dtype=L.float64))
        return y, y.requires_grad, y.grad_fn is None, z.requires_grad
    same(f)


# ---------------------------------------------------------------- higher order
def test_double_backward_through_function():
    def f(L):
        Cube = cube(L)
        x = leaf(L)
        y = Cube.apply(x)
        (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = L.autograd.grad((g * g).sum(), x, create_graph=True)
        (ggg,) = L.autograd.grad(gg.sum(), x)
        return g, gg, ggg, g.requires_grad
    same(f)


def test_double_backward_matches_builtin():
    """The second derivative through Cube equals the one through the built-in x ** 3."""
    x = fg.tensor(X, dtype=fg.float64, requires_grad=True)
    for fn in (cube(fg).apply, lambda t: t ** 3):
        y = fn(x)
        (g,) = fg.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 6 * np.array(X))


def test_once_differentiable():
    def f(L):
        class Cube(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            @L.autograd.function.once_differentiable
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 3 * x ** 2

        x = leaf(L)
        (g,) = L.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        second = outcome(lambda: g.sum().backward())[0]
        return g, g.requires_grad, second
    same(f)


# ---------------------------------------------------------------- errors
def test_saved_tensor_modified_inplace():
    def f(L):
        Cube = cube(L)
        a = leaf(L) * 1
        y = Cube.apply(a)
        a.add_(1)
        kind, msg = outcome(lambda: y.sum().backward())
        return kind, "modified by an inplace operation" in msg
    same(f)


def test_second_backward_without_retain_graph():
    def f(L):
        Cube = cube(L)
        y = Cube.apply(leaf(L)).sum()
        y.backward()
        kind, msg = outcome(lambda: y.backward())
        return kind, "backward through the graph a second time" in msg
    same(f)


def test_second_backward_with_retain_graph():
    def f(L):
        Cube = cube(L)
        x = leaf(L)
        y = Cube.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        return x.grad
    same(f)


def test_wrong_number_of_gradients():
    def f(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        kind, msg = outcome(lambda: Bad.apply(leaf(L), leaf(L)).sum().backward())
        return kind, msg
    same(f)


def test_wrong_gradient_shape():
    def f(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g.sum(0)

        return outcome(lambda: Bad.apply(leaf(L)).sum().backward())
    same(f)


def test_backward_returning_non_tensor():
    def f(L):
        class Bad(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return "not a tensor"

        return outcome(lambda: Bad.apply(leaf(L)).sum().backward())[0]
    same(f)


def test_exception_in_backward_keeps_type_and_message():
    def f(L):
        class Boom(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                raise ValueError("custom failure 42")

        x = leaf(L)
        first = outcome(lambda: (Boom.apply(x) * 3).sum().backward())
        second = outcome(lambda: L.autograd.grad(Boom.apply(x).sum(), x))
        return first, second
    same(f)


def test_exception_in_backward_is_the_raised_object():
    class Custom(Exception):
        pass

    class Boom(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise Custom("payload")

    with pytest.raises(Custom, match="payload") as info:
        Boom.apply(leaf(fg)).sum().backward()
    frames = [tb.tb_frame.f_code.co_name for tb in _walk(info.value.__traceback__)]
    assert "backward" in frames  # the traceback reaches into the user's backward


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


# ---------------------------------------------------------------- memory
def _live_nodes():
    return None if AGAINST_TORCH else fg.autograd.graph.stats()["live_nodes"]


def test_saved_output_is_released():
    class Save(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(fg)
    gc.collect()
    before = _live_nodes()
    y = Save.apply(x)
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
    assert _live_nodes() == before


def test_ctx_holding_its_output_is_released():
    class Keep(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 2
            ctx.out = out  # a cycle: out -> grad_fn -> ctx -> out
            return out

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(fg)
    gc.collect()
    before = _live_nodes()
    y = Keep.apply(x)
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
    assert _live_nodes() == before


def test_graph_released_after_backward_and_del():
    Cube = cube(fg)
    x = leaf(fg)
    gc.collect()
    before = _live_nodes()
    y = Cube.apply(Cube.apply(x) * 2).sum()
    y.backward()
    del y
    gc.collect()
    assert _live_nodes() == before
    np.testing.assert_allclose(x.grad.numpy(), 72 * np.array(X) ** 8)  # (2x^3)^3 = 8x^9



def test_input_returned_as_is_and_marked_non_differentiable():
    class F(fg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga, None

    x = fg.ones(2, requires_grad=True)
    out, y = F.apply(x, fg.ones(2, requires_grad=True))
    assert out.requires_grad and not y.requires_grad and y.grad_fn is None
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_inplace_on_input_returned_as_is_is_forbidden():
    class Id(fg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    a = fg.ones(2, requires_grad=True) * 1
    (x,) = (Id.apply(a),)
    with pytest.raises(RuntimeError, match="Output 0 of Id is a view and is being modified inplace"):
        x.mul_(2)
    with fg.no_grad():
        x.mul_(2)  # allowed without grad mode, as in torch
