"""Nestings of torch.func's reverse-mode transforms and vmap with the forward-mode ones (jvp, jacfwd,
hessian): forward-over-reverse (jacfwd(jacrev(f)), hessian, jvp(grad(f))), reverse-over-forward
(jacrev(jacfwd(f)), grad of a jvp), and vmap around and inside jvp, against torch.func."""
import numpy as np
import pytest
import torch

from conftest import fg

if not hasattr(fg.func, "jvp"):
    pytest.skip("forward-mode transforms are not built", allow_module_level=True)

R = np.random.default_rng(3)
x = R.standard_normal(3).astype(np.float32)
X = R.standard_normal((4, 3)).astype(np.float32)


def f(m):
    return lambda v: (v.sin() * v.exp()).sum() + (v ** 3).sum()


def g(m):
    return lambda v: v.sin() * v.sum()


CASES = {
    "hessian": (lambda m: lambda v: m.func.hessian(f(m))(v), x),
    "jacfwd_jacrev": (lambda m: lambda v: m.func.jacfwd(m.func.jacrev(g(m)))(v), x),
    "jacrev_jacfwd": (lambda m: lambda v: m.func.jacrev(m.func.jacfwd(g(m)))(v), x),
    "jvp_grad": (lambda m: lambda v: m.func.jvp(m.func.grad(f(m)), (v,), (v * 0 + 1,))[1], x),
    "grad_jvp": (lambda m: lambda v: m.func.grad(lambda y: m.func.jvp(g(m), (y,), (y * 0 + 1,))[1].sum())(v), x),
    "vmap_jvp": (lambda m: lambda V: m.func.vmap(lambda r: m.func.jvp(g(m), (r,), (r * 0 + 1,))[1])(V), X),
    "vmap_jacfwd": (lambda m: lambda V: m.func.vmap(m.func.jacfwd(g(m)))(V), X),
    "vmap_hessian": (lambda m: lambda V: m.func.vmap(m.func.hessian(f(m)))(V), X),
    "jvp_vmap": (lambda m: lambda V: m.func.jvp(m.func.vmap(g(m)), (V,), (V * 0 + 1,))[1], X),
    "vmap_jvp_grad": (lambda m: lambda V: m.func.vmap(
        lambda r: m.func.jvp(m.func.grad(f(m)), (r,), (r * 0 + 1,))[1])(V), X),
    "jacfwd_jacrev_other_arg": (lambda m: lambda v: m.func.jacfwd(
        m.func.jacrev(lambda w, y: (w * y).sin().sum(), argnums=0), argnums=1)(v, v * 2), x),
}


@pytest.mark.parametrize("name", list(CASES))
def test_composition(name):
    make, inp = CASES[name]
    want = make(torch)(torch.tensor(inp))
    got = make(fg)(fg.tensor(inp))
    assert tuple(want.shape) == tuple(got.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_hessian_of_mlp_per_sample():
    """vmap(hessian) of a small MLP's scalar output with respect to its input."""
    rng = np.random.default_rng(4)
    w1, w2, xs = rng.standard_normal((5, 3)), rng.standard_normal((1, 5)), rng.standard_normal((4, 3))

    def run(m):
        a, b = m.tensor(w1, dtype=m.float32), m.tensor(w2, dtype=m.float32)
        fn = lambda v: m.nn.functional.linear(m.tanh(m.nn.functional.linear(v, a)), b).sum()  # noqa: E731
        return m.func.vmap(m.func.hessian(fn))(m.tensor(xs, dtype=m.float32))
    np.testing.assert_allclose(run(fg).numpy(), run(torch).numpy(), rtol=1e-4, atol=1e-5)
