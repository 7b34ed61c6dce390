"""autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp) and gradcheck/gradgradcheck, each
compared with torch doing the same.

functional: single and several inputs and outputs, tensor vs tuple arguments (result structure),
v=None for single-element arguments, create_graph (results stay differentiable, and their gradients
match), strict-mode errors and argument errors. gradcheck: passes on correct ops (slow and fast mode,
several outputs, non-tensor arguments), fails on a deliberately wrong custom backward (False with
raise_exception=False, GradcheckError otherwise), and its argument checks.
"""
import importlib
import warnings

import pytest

from conftest import fg
from parity import same

A = [[0.5, -1.0, 0.3], [1.2, 0.25, -0.75]]
B = [0.7, -0.2, 1.1]


def t(L, values, grad=False):
    return L.tensor(values, dtype=L.float64, requires_grad=grad)


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__, str(e).replace("ferrograd.Size", "torch.Size")


# Functions of (lib) -> callable; each is used with torch and with the library under test.
def exp_reducer(L):
    return lambda x: x.exp().sum(1)


def two_in_two_out(L):
    return lambda x, y: (x * y + y.sin(), (x ** 2).sum(0) * y)


def scalar_of_two(L):
    return lambda x, y: (x.sin() * y).sum() + (x ** 3).sum() * (y ** 2).sum()


def cubic(L):
    return lambda x: (x ** 3).sum() + x.prod()


def F(L):
    return L.autograd.functional


# ---------------------------------------------------------------- vjp / jvp
def test_vjp():
    def f(L):
        x, y = t(L, A), t(L, B)
        single = F(L).vjp(exp_reducer(L), x, t(L, [1.0, -2.0]))
        multi = F(L).vjp(two_in_two_out(L), (x, y), (t(L, A), t(L, [0.5, 1.0, -1.0])))
        scalar = F(L).vjp(scalar_of_two(L), (x, y))  # v=None: single-element output
        return single, multi, scalar
    same(f)


def test_jvp():
    def f(L):
        x, y = t(L, A), t(L, B)
        single = F(L).jvp(exp_reducer(L), x, t(L, A))
        multi = F(L).jvp(two_in_two_out(L), (x, y), (t(L, A), t(L, [0.5, 1.0, -1.0])))
        scalar_in = F(L).jvp(lambda s: (s.exp(), s * 3), t(L, 0.5))  # v=None: single-element input
        return single, multi, scalar_in
    same(f)


def test_vjp_jvp_create_graph():
    def f(L):
        x = t(L, A, grad=True)
        out, vj = F(L).vjp(exp_reducer(L), x, t(L, [1.0, -2.0]), create_graph=True)
        out2, jv = F(L).jvp(exp_reducer(L), x, t(L, A), create_graph=True)
        flags = (out.requires_grad, vj.requires_grad, out2.requires_grad, jv.requires_grad)
        (vj.sum() + jv.sum()).backward()
        return flags, vj, jv, x.grad
    same(f)


def test_results_detached_without_create_graph():
    def f(L):
        x = t(L, A, grad=True)
        out, vj = F(L).vjp(exp_reducer(L), x, t(L, [1.0, -2.0]))
        out2, jv = F(L).jvp(exp_reducer(L), x, t(L, A))
        return out.requires_grad, vj.requires_grad, out2.requires_grad, jv.requires_grad, x.grad
    same(f)


def test_independent_input_gives_zeros_or_strict_error():
    def f(L):
        x, y = t(L, A), t(L, B)
        fn = lambda a, b: a * 2  # noqa: E731 - b unused
        loose = F(L).vjp(fn, (x, y), t(L, A))
        strict = outcome(lambda: F(L).vjp(fn, (x, y), t(L, A), strict=True))
        strict_jvp = outcome(lambda: F(L).jvp(lambda a: a.detach(), x, t(L, A), strict=True))
        return loose, strict, strict_jvp
    same(f)


def test_argument_errors():
    def f(L):
        x = t(L, A)
        return (
            outcome(lambda: F(L).vjp(exp_reducer(L), x)),  # v needed for a multi-element output
            outcome(lambda: F(L).vjp(exp_reducer(L), x, t(L, [1.0, 2.0, 3.0]))),
            outcome(lambda: F(L).jvp(exp_reducer(L), x, (t(L, A), t(L, A)))),
            outcome(lambda: F(L).vjp(exp_reducer(L), [1.0, 2.0])),
            outcome(lambda: F(L).hessian(exp_reducer(L), x)),
        )
    same(f)


# ---------------------------------------------------------------- jacobian / hessian
def test_jacobian():
    def f(L):
        x, y = t(L, A), t(L, B)
        return (
            F(L).jacobian(exp_reducer(L), x),
            F(L).jacobian(two_in_two_out(L), (x, y)),
            F(L).jacobian(lambda a: a.exp(), (x,)),  # tuple input of one: nested result
            F(L).jacobian(two_in_two_out(L), (x, y), vectorize=True),
        )
    same(f)


def test_jacobian_strict_and_create_graph():
    def f(L):
        x, y = t(L, A, grad=True), t(L, B)
        jac = F(L).jacobian(lambda a: (a ** 2).sum(1), x, create_graph=True)
        flag = jac.requires_grad
        jac.sum().backward()
        strict = outcome(lambda: F(L).jacobian(lambda a, b: a * 2, (x, y), strict=True))
        return jac, flag, x.grad, strict
    same(f)


def test_hessian():
    def f(L):
        x, y = t(L, A), t(L, B)
        return (
            F(L).hessian(cubic(L), x),
            F(L).hessian(scalar_of_two(L), (x, y)),
            F(L).hessian(lambda a: (a.exp() * a).sum(), t(L, B)),
        )
    same(f)


def test_hessian_create_graph():
    def f(L):
        x = t(L, B, grad=True)
        h = F(L).hessian(cubic(L), x, create_graph=True)
        flag = h.requires_grad
        h.sum().backward()
        return h, flag, x.grad
    same(f)


def test_hessian_strict_linear_function():
    same(lambda L: outcome(lambda: F(L).hessian(lambda a: (a * 2).sum(), t(L, B), strict=True)))


# ---------------------------------------------------------------- hvp / vhp
def test_hvp_vhp():
    def f(L):
        x, y = t(L, A), t(L, B)
        v = (t(L, [[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]]), t(L, [0.3, 0.3, -0.6]))
        return (
            F(L).hvp(scalar_of_two(L), (x, y), v),
            F(L).vhp(scalar_of_two(L), (x, y), v),
            F(L).hvp(cubic(L), t(L, B), t(L, [1.0, 2.0, 3.0])),
            F(L).vhp(cubic(L), t(L, B), t(L, [1.0, 2.0, 3.0])),
        )
    same(f)


def test_hvp_vhp_create_graph():
    def f(L):
        x = t(L, B, grad=True)
        v = t(L, [1.0, -1.0, 2.0])
        _, hv = F(L).hvp(cubic(L), x, v, create_graph=True)
        _, vh = F(L).vhp(cubic(L), x, v, create_graph=True)
        flags = (hv.requires_grad, vh.requires_grad)
        (hv * vh).sum().backward()
        return hv, vh, flags, x.grad
    same(f)


def test_hvp_errors():
    def f(L):
        x = t(L, A)
        return (
            outcome(lambda: F(L).hvp(exp_reducer(L), x, t(L, A))),  # not a scalar function
            outcome(lambda: F(L).vhp(lambda a: (a, a), x, t(L, A))),
            outcome(lambda: F(L).hvp(cubic(L), x)),  # v needed
        )
    same(f)


# ---------------------------------------------------------------- gradcheck
def gradcheck_module(L):
    return importlib.import_module(L.__name__ + ".autograd.gradcheck")


def wrong_square(L):
    class WrongSquare(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x  # should be 2x

    return WrongSquare


def test_gradcheck_passes_on_correct_ops():
    def f(L):
        gc = L.autograd.gradcheck
        x, w = t(L, A, grad=True), t(L, [[0.3, -0.1], [0.2, 0.5], [-0.4, 0.9]], grad=True)
        return [
            gc(lambda a, b: (a @ b).tanh(), (x, w)),
            gc(lambda a, b: (a @ b).tanh(), (x, w), fast_mode=True),
            gc(lambda a: (a.exp().sum(1), a * a), (x,)),  # several outputs
            gc(lambda a, k, b: a.sigmoid() * k + b.sum(), (x, 2.5, t(L, B))),  # non-tensor and no-grad inputs
            gc(lambda a: a.softmax(-1).log(), x, eps=1e-6, atol=1e-5, rtol=1e-3),
        ]
    same(f)


def test_gradgradcheck_passes_on_correct_ops():
    def f(L):
        ggc = L.autograd.gradgradcheck
        x, w = t(L, A, grad=True), t(L, [[0.3, -0.1], [0.2, 0.5], [-0.4, 0.9]], grad=True)
        return [
            ggc(lambda a, b: (a @ b).tanh(), (x, w)),
            ggc(lambda a: (a ** 3).sum(1), (x,), fast_mode=True),
            ggc(lambda a: a.exp() * a, (x,), grad_outputs=(t(L, A),)),
        ]
    same(f)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_fails_on_wrong_backward(fast_mode):
    def f(L):
        x = t(L, A, grad=True)
        quiet = L.autograd.gradcheck(wrong_square(L).apply, (x,), raise_exception=False, fast_mode=fast_mode)
        try:
            L.autograd.gradcheck(wrong_square(L).apply, (x,), fast_mode=fast_mode)
            raised = None
        except RuntimeError as e:
            raised = (type(e).__name__, isinstance(e, gradcheck_module(L).GradcheckError),
                      str(e).startswith("Jacobian mismatch for output 0 with respect to input 0"))
        return quiet, raised
    same(f)


def test_gradgradcheck_fails_on_wrong_double_backward():
    def f(L):
        class CubeWrongSecond(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                # right first derivative, wrong second: d/dx of x.detach()**2 * x is not 6x
                return g * 3 * x.detach() ** 2 * (x / x.detach())

        x = t(L, B, grad=True)
        first = L.autograd.gradcheck(CubeWrongSecond.apply, (x,))
        second = L.autograd.gradgradcheck(CubeWrongSecond.apply, (x,), raise_exception=False)
        return first, second
    same(f)


def test_gradcheck_not_multiplied_by_grad_output():
    def f(L):
        class Ignores(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.sum()

            @staticmethod
            def backward(ctx, g):
                return L.ones(3, dtype=L.float64)  # ignores g: right only for g == 1

        return outcome(lambda: L.autograd.gradcheck(Ignores.apply, (t(L, B, grad=True),)))
    same(f)


def test_gradcheck_argument_checks():
    def f(L):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            single = L.autograd.gradcheck(lambda a: a * 2, (L.tensor(B, requires_grad=True),), atol=1e-2, rtol=1e-2,
                                          eps=1e-3)
        warned = any("double precision" in str(i.message) for i in w)
        none_req = outcome(lambda: L.autograd.gradcheck(lambda a: a * 2, (t(L, B),)))
        return single, warned, none_req
    same(f)


def test_gradcheck_reports_numbers():
    """The message carries both Jacobians: numerical 2x on the diagonal, analytical 3x."""
    x = fg.tensor([1.0, 2.0], dtype=fg.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        fg.autograd.gradcheck(wrong_square(fg).apply, (x,))
    msg = str(info.value)
    numerical, analytical = msg.split("numerical:")[1].split("analytical:")
    assert "4." in numerical and "6." not in numerical
    assert "6." in analytical
