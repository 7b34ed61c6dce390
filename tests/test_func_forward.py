"""torch.func's forward-mode transforms (jvp, jacfwd, linearize, hessian) against torch.func: values,
structures (pytrees, argnums, has_aux), nesting, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.func as tfunc

from conftest import fg, AGAINST_TORCH

if AGAINST_TORCH:
    ffunc = tfunc
else:
    from ferrograd.func import _forward_transforms as ffunc


def _pair(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return [torch.tensor(a) for a in arrays], [fg.tensor(a) for a in arrays]


def _close(a, b, tol=1e-10):
    if isinstance(b, (tuple, list)):
        assert isinstance(a, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _close(a[k], b[k], tol)
        return
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def _mlp(L, W1, b1, W2):
    return lambda x: L.tanh(x @ W1.T + b1) @ W2.T


def test_jvp_values_and_tangents():
    (x, t, W1, b1, W2), (X, T, V1, c1, V2) = _pair((2, 4), (2, 4), (5, 4), (5,), (3, 5))
    ep, et = tfunc.jvp(_mlp(torch, W1, b1, W2), (x,), (t,))
    gp, gt = ffunc.jvp(_mlp(fg, V1, c1, V2), (X,), (T,))
    _close(gp, ep)
    _close(gt, et)


def test_jvp_several_primals_pytrees_and_aux():
    (a, b, ta, tb), (A, B, TA, TB) = _pair((3,), (3,), (3,), (3,))

    def f(L):
        return lambda x, d: ({"s": (x * d["y"]).sin(), "c": [x.cos()]}, x.sum())

    e = tfunc.jvp(f(torch), (a, {"y": b}), (ta, {"y": tb}), has_aux=True)
    g = ffunc.jvp(f(fg), (A, {"y": B}), (TA, {"y": TB}), has_aux=True)
    assert len(g) == 3
    _close(g[0], e[0])
    _close(g[1], e[1])
    _close(g[2], e[2])


def test_jvp_output_independent_of_input_has_zero_tangent():
    (x, t), (X, T) = _pair((3,), (3,))
    e = tfunc.jvp(lambda v: torch.ones(2, dtype=torch.float64), (x,), (t,))
    g = ffunc.jvp(lambda v: fg.ones(2, dtype=fg.float64), (X,), (T,))
    _close(g[1], e[1])


@pytest.mark.parametrize("call", [
    lambda J, L, X, T: J.jvp(L.sin, X, T),                               # primals not a tuple
    lambda J, L, X, T: J.jvp(L.sin, (X,), (T, T)),                      # structures differ
    lambda J, L, X, T: J.jvp(L.sin, (), ()),                            # no tensor
    lambda J, L, X, T: J.jvp(lambda x: 3, (X,), (T,)),                  # output not a tensor
    lambda J, L, X, T: J.jvp(lambda x: x.sin(), (X,), (T,), has_aux=True),  # aux missing
    lambda J, L, X, T: J.jvp(L.sin, (X,), (L.ones(4, dtype=L.float64),)),   # tangent's shape
])
def test_jvp_errors(call):
    (x, t), (X, T) = _pair((3,), (3,))
    with pytest.raises(RuntimeError) as e:
        call(tfunc, torch, x, t)
    with pytest.raises(RuntimeError) as g:
        call(ffunc, fg, X, T)
    assert type(g.value) is type(e.value)


def test_jvp_int_primal_is_value_error():
    with pytest.raises(ValueError):
        tfunc.jvp(torch.sin, (torch.ones(3, dtype=torch.int64),), (torch.ones(3),))
    with pytest.raises(ValueError, match="floating point"):
        ffunc.jvp(fg.sin, (fg.ones(3, dtype=fg.int64),), (fg.ones(3),))


def test_jvp_nests_in_jvp():
    (x, t), (X, T) = _pair((4,), (4,))

    def inner(J, L):
        return lambda v: J.jvp(lambda y: L.sin(y) * y * y, (v,), (L.ones_like(v),))[1]

    _close(ffunc.jvp(inner(ffunc, fg), (X,), (T,))[1], tfunc.jvp(inner(tfunc, torch), (x,), (t,))[1])


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), -1, (1,)])
def test_jacfwd_argnums(argnums):
    (a, b), (A, B) = _pair((3,), (2, 3))

    def f(L):
        return lambda x, W: L.tanh(W @ x) * x.sum()

    # (against torch's jacrev: torch 2.x's jacfwd returns zeros for a negative argnums, a torch bug)
    if AGAINST_TORCH and argnums == -1:
        pytest.skip("torch's jacfwd with a negative argnums returns zeros")
    _close(ffunc.jacfwd(f(fg), argnums=argnums)(A, B), tfunc.jacrev(f(torch), argnums=argnums)(a, b))


def test_jacfwd_pytree_input_output_and_aux():
    (a, b), (A, B) = _pair((3,), (2,))

    def f(L):
        return lambda d: ((d["x"].sin(), L.outer(d["x"], d["y"])), d["y"].sum())

    e = tfunc.jacfwd(f(torch), has_aux=True)({"x": a, "y": b})
    g = ffunc.jacfwd(f(fg), has_aux=True)({"x": A, "y": B})
    _close(g, e)


def test_jacfwd_of_mlp_matches_jacrev_of_torch():
    (x, W1, b1, W2), (X, V1, c1, V2) = _pair((4,), (6, 4), (6,), (3, 6))
    _close(ffunc.jacfwd(_mlp(fg, V1, c1, V2))(X), tfunc.jacrev(_mlp(torch, W1, b1, W2))(x))


def test_jacfwd_errors():
    (x,), (X,) = _pair((3,))
    for J, L, v in ((tfunc, torch, x), (ffunc, fg, X)):
        with pytest.raises(RuntimeError, match="argnums must be int"):
            J.jacfwd(L.sin, argnums=1.0)(v)
        with pytest.raises(RuntimeError, match="only 1 positional inputs"):
            J.jacfwd(L.sin, argnums=1)(v)
        with pytest.raises(RuntimeError, match="randomness"):
            J.jacfwd(L.sin, randomness="foo")(v)


def test_jacfwd_randomness():
    (x,), (X,) = _pair((3,))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ffunc.jacfwd(lambda v: fg.rand(3, dtype=fg.float64) * v)(X)
    # 'same': every column sees the same random numbers, so the Jacobian of r*x is diag(r)
    fg.manual_seed(3)
    j = ffunc.jacfwd(lambda v: fg.rand(3, dtype=fg.float64) * v, randomness="same")(X)
    assert np.allclose(j.numpy(), np.diag(np.diag(j.numpy())))
    j = ffunc.jacfwd(lambda v: fg.rand(3, dtype=fg.float64) * v, randomness="different")(X)
    assert j.shape == (3, 3)


def test_linearize():
    (x, t, W1, b1, W2), (X, T, V1, c1, V2) = _pair((4,), (4,), (6, 4), (6,), (3, 6))
    eo, efn = tfunc.linearize(_mlp(torch, W1, b1, W2), x)
    go, gfn = ffunc.linearize(_mlp(fg, V1, c1, V2), X)
    _close(go, eo)
    _close(gfn(T), efn(t))
    for bad in (fg.ones(5, dtype=fg.float64), fg.ones(4, dtype=fg.float32)):
        with pytest.raises(RuntimeError, match="doesn't match"):
            gfn(bad)


def _scalar(L):
    return lambda x: (L.tanh(x) * x.exp()).sum() + (x @ x) ** 2 + L.logsumexp(x, 0)


def test_hessian():
    (x,), (X,) = _pair((5,))
    _close(ffunc.hessian(_scalar(fg))(X), tfunc.hessian(_scalar(torch))(x), 1e-9)


def test_hessian_of_mlp_loss_wrt_weights_argnums():
    (x, W, y), (X, V, Y) = _pair((3, 4), (2, 4), (3, 2))

    def loss(L):
        return lambda W, x: ((L.tanh(x @ W.T) - Y_of(L)) ** 2).mean()

    Y_of = lambda L: y if L is torch else Y  # noqa: E731
    _close(ffunc.hessian(loss(fg))(V, X), tfunc.hessian(loss(torch))(W, x), 1e-9)


def test_jacfwd_of_jacfwd_is_the_hessian():
    (x,), (X,) = _pair((4,))
    _close(ffunc.jacfwd(ffunc.jacfwd(_scalar(fg)))(X), tfunc.hessian(_scalar(torch))(x), 1e-9)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's dual wrapper")
def test_results_are_plain_tensors():
    (x, t), (X, T) = _pair((3,), (3,))
    p, tan = ffunc.jvp(fg.sin, (X,), (T,))
    assert type(p) is fg.Tensor and type(tan) is fg.Tensor
    h = ffunc.hessian(_scalar(fg))(X)
    assert type(h) is fg.Tensor and not h.requires_grad


# torch.autograd.functional with forward mode

def _functional_program(L, x, y):
    AF = L.autograd.functional

    def f(a, b):
        return L.tanh(b @ a).exp(), (a * a).sum() * b

    def g(a, b):
        return (L.sin(a) * (b @ a).sum()).sum() + (b * b * a).sum()

    out = [AF.jacobian(f, (x, y), vectorize=True, strategy="forward-mode"),
           AF.jacobian(lambda a: a.sin(), x, vectorize=True, strategy="forward-mode"),
           AF.hessian(g, (x, y), vectorize=True, outer_jacobian_strategy="forward-mode"),
           AF.hessian(lambda a: g(a, y), x, vectorize=True, outer_jacobian_strategy="forward-mode"),
           AF.hessian(lambda a: g(a, y), x, vectorize=True)]
    errors = []
    for bad in (lambda: AF.jacobian(lambda a: a.sin(), x, strategy="forward-mode"),
                lambda: AF.jacobian(lambda a: a.sin(), x, strategy="fwd"),
                lambda: AF.jacobian(lambda a: a.sin(), x, create_graph=True, strategy="forward-mode", vectorize=True)):
        try:
            bad()
            errors.append(None)
        except Exception as e:  # noqa: BLE001 (the type is compared)
            errors.append(type(e))
    return out, errors


def test_autograd_functional_forward_mode():
    (x, y), (X, Y) = _pair((3,), (2, 3))
    eo, ee = _functional_program(torch, x, y)
    go, ge = _functional_program(fg, X, Y)
    _close(go, eo, 1e-9)
    assert ge == ee == [NotImplementedError, AssertionError, NotImplementedError]


# compositions with the reverse-mode transforms and vmap (ferrograd.func)

def _func_module():
    if AGAINST_TORCH:
        return tfunc
    try:
        from ferrograd.func import grad, vmap  # noqa: F401
    except ImportError:
        pytest.skip("ferrograd.func's reverse transforms and vmap are not here")
    import ferrograd.func as m
    return m


def _g(L):
    return lambda v: (L.sin(v) * v.exp()).sum() + (v @ v) ** 2


def _h(L, W):
    return lambda v: (L.tanh(v @ W.T) * v.sum()).sin()


_COMPOSITIONS = {
    "vmap(jvp)": lambda F, L, x, t, W: F.vmap(lambda a, b: F.jvp(_h(L, W), (a,), (b,))[1])(x, t),
    "jvp(vmap)": lambda F, L, x, t, W: F.jvp(F.vmap(_h(L, W)), (x,), (t,))[1],
    "jvp(grad)": lambda F, L, x, t, W: F.jvp(F.grad(_g(L)), (x[0],), (t[0],))[1],
    "jacfwd(jacrev)": lambda F, L, x, t, W: F.jacfwd(F.jacrev(_g(L)))(x[0]),
    "hessian": lambda F, L, x, t, W: F.hessian(_g(L))(x[0]),
    "jacrev(jacfwd)": lambda F, L, x, t, W: F.jacrev(F.jacfwd(_g(L)))(x[0]),
    "vmap(jacfwd)": lambda F, L, x, t, W: F.vmap(F.jacfwd(_h(L, W)))(x),
    "grad(jvp)": lambda F, L, x, t, W: F.grad(lambda v: F.jvp(_g(L), (v,), (t[0],))[1])(x[0]),
    "jvp(jvp)": lambda F, L, x, t, W: F.jvp(lambda v: F.jvp(_g(L), (v,), (t[1],))[1], (x[0],), (t[0],))[1],
}


@pytest.mark.parametrize("name", list(_COMPOSITIONS))
def test_compositions_with_func(name):
    F = _func_module()
    (x, t, W), (X, T, V) = _pair((5, 4), (5, 4), (3, 4))
    fn = _COMPOSITIONS[name]
    _close(fn(F, fg, X, T, V), fn(tfunc, torch, x, t, W), 1e-9)
