"""torch.func's reverse-mode transforms (grad, grad_and_value, vjp, jacrev), functional_call,
stack_module_state and replace_all_batch_norm_modules_, against torch.func: values, gradients,
shapes, dtypes, requires_grad of the results, nesting (grad(grad), jacrev(jacrev), vmap(grad),
vmap(jacrev)) and torch's errors."""
import numpy as np
import pytest
import torch

from conftest import fg


R = np.random.default_rng(1)


def rn(*shape):
    return R.standard_normal(shape).astype(np.float32)


def _t(mod, a):
    if isinstance(a, np.ndarray):
        return mod.tensor(a)
    if isinstance(a, (tuple, list)):
        return type(a)(_t(mod, v) for v in a)
    if isinstance(a, dict):
        return {k: _t(mod, v) for k, v in a.items()}
    return a


def _close(want, got, tol=1e-5):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(want) == len(got), (type(got), got)
        for a, b in zip(want, got):
            _close(a, b, tol)
        return
    if isinstance(want, dict):
        assert want.keys() == got.keys()
        for k in want:
            _close(want[k], got[k], tol)
        return
    if isinstance(want, torch.Tensor):
        assert isinstance(got, fg.Tensor), type(got)
        assert tuple(want.shape) == tuple(got.shape), (want.shape, got.shape)
        assert str(want.dtype) == str(got.dtype).replace("ferrograd", "torch")
        assert want.requires_grad == got.requires_grad
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)
        return
    assert want == got


def both(make, *inputs, tol=1e-5):
    want = make(torch)(*_t(torch, inputs))
    got = make(fg)(*_t(fg, inputs))
    _close(want, got, tol)


def f1(m):
    return lambda x: (x.sin() * x.exp()).sum()


def f2(m):
    return lambda x, y: (x * y.tanh()).sum() + (x ** 2).mean()


# ---- grad / grad_and_value --------------------------------------------------------------------------------

def test_grad():
    both(lambda m: m.func.grad(f1(m)), rn(3, 2))
    both(lambda m: m.func.grad(f2(m), argnums=1), rn(3), rn(3))
    both(lambda m: m.func.grad(f2(m), argnums=(0, 1)), rn(3), rn(3))
    both(lambda m: m.func.grad(f2(m), argnums=-1), rn(3), rn(3))
    both(lambda m: m.func.grad_and_value(f2(m), argnums=(1,)), rn(3), rn(3))


def test_grad_pytree_and_aux():
    def make(m):
        def f(p, x):
            y = (p["w"] * x).sum() + p["b"][0].sum()
            return y, {"y": y, "n": (x * 3,)}
        return m.func.grad(f, has_aux=True)
    both(make, {"w": rn(3), "b": (rn(2), rn(1))}, rn(3))
    both(lambda m: m.func.grad_and_value(lambda x: (x.sum(), x * 2), has_aux=True), rn(3))


def test_grad_unused_and_constant():
    both(lambda m: m.func.grad(lambda x, y: x.sum(), argnums=(0, 1)), rn(3), rn(2))
    both(lambda m: m.func.grad(lambda x: m.tensor(1.0)), rn(3))


def test_grad_of_grad():
    both(lambda m: m.func.grad(m.func.grad(lambda x: x.sin().sum() * x.sum())), np.array(0.7, dtype=np.float32))
    both(lambda m: m.func.grad(lambda x: m.func.grad(f1(m))(x).sum()), rn(3))
    # the gradient of a gradient with respect to a closed-over argument of the outer function
    both(lambda m: m.func.grad(lambda y: m.func.grad(lambda x: (x * y).sin().sum())(y.cos()).sum()), rn(4))


def test_grad_keeps_the_callers_graph():
    """grad inside the caller's own autograd: the result is differentiable (torch: functorch is
    composable with autograd)."""
    for m in (torch, fg):
        x = m.tensor([0.3, -0.5, 1.2], requires_grad=True)
        g = m.func.grad(lambda v: (v ** 3).sum())(x)
        assert g.requires_grad
        g.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), (6 * x.detach()).numpy(), rtol=1e-6)


def test_grad_errors():
    def same(make, *inputs):
        with pytest.raises(Exception) as want:
            make(torch)(*_t(torch, inputs))
        with pytest.raises(Exception) as got:
            make(fg)(*_t(fg, inputs))
        assert type(got.value) is type(want.value), (got.value, want.value)
        assert str(got.value).split(":")[0] == str(want.value).split(":")[0]
    same(lambda m: m.func.grad(lambda x: x * 2), rn(3))
    same(lambda m: m.func.grad(lambda x: 2.0), rn(3))
    same(lambda m: m.func.grad(lambda x: x.sum(), argnums=1), rn(3))
    same(lambda m: m.func.grad(lambda x: x.sum(), argnums=1.0), rn(3))
    same(lambda m: m.func.grad(lambda x: x.sum(), argnums=()), rn(3))
    same(lambda m: m.func.grad(lambda x: x.sum(), has_aux=True), rn(3))
    same(lambda m: m.func.grad(lambda x: x.sum()), np.arange(3))
    same(lambda m: m.func.grad(lambda x: x), 3.0)
    same(lambda m: m.func.grad(lambda x: (x.sum(), 3), has_aux=True), rn(3))
    same(lambda m: m.func.vjp(lambda x: 1.0, m.ones(2)))
    same(lambda m: m.func.jacrev(lambda x: 1.0), rn(2))
    same(lambda m: lambda x: m.func.vjp(lambda v: v * 2, x)[1](m.ones(4)), rn(3))


# ---- vjp / jacrev -----------------------------------------------------------------------------------------

def test_vjp():
    def make(m):
        def run(x, y, v):
            out, fn = m.func.vjp(lambda a, b: (a * b, a.sum() * b), x, y)
            return out, fn((v, v * 2))
        return run
    both(make, rn(3), rn(3), rn(3))

    def make_aux(m):
        def run(x):
            out, fn, aux = m.func.vjp(lambda a: (a.exp(), a.sum()), x, has_aux=True)
            return out, fn(m.ones_like(out)), aux
        return run
    both(make_aux, rn(2, 2))


def test_jacrev():
    both(lambda m: m.func.jacrev(lambda x: x.sin() * x.sum()), rn(4))
    both(lambda m: m.func.jacrev(lambda x, y: x @ y, argnums=(0, 1)), rn(2, 3), rn(3))
    both(lambda m: m.func.jacrev(lambda x: (x, x.sum()), has_aux=False), rn(3))
    both(lambda m: m.func.jacrev(lambda x: (x * 2, x.max()), has_aux=True), rn(3))
    both(lambda m: m.func.jacrev(lambda x: x.exp(), chunk_size=2), rn(5))
    both(lambda m: m.func.jacrev(lambda d: {"a": d["x"] * d["y"]}), {"x": rn(2), "y": rn(2)})


def test_jacrev_of_jacrev():
    both(lambda m: m.func.jacrev(m.func.jacrev(lambda x: (x.sin() * x.prod()))), rn(3), tol=1e-4)


def test_mlp_jacobian():
    def make(m):
        W1, b1, W2 = _t(m, (W1n, b1n, W2n))

        def mlp(x):
            return m.nn.functional.linear(m.tanh(m.nn.functional.linear(x, W1, b1)), W2)
        return m.func.jacrev(mlp)
    W1n, b1n, W2n = rn(8, 5), rn(8), rn(3, 8)
    both(make, rn(5), tol=1e-5)


# ---- under vmap ----------------------------------------------------------------------------------------------

def test_vmap_of_grad_per_sample():
    def make(m):
        def loss(w, b, x, y):
            return ((x @ w + b - y) ** 2).mean()
        return m.func.vmap(m.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))
    both(make, rn(3, 2), rn(2), rn(6, 3), rn(6, 2))


def test_vmap_of_grad_and_value_and_jacrev():
    both(lambda m: m.func.vmap(m.func.grad_and_value(lambda x: (x.sin() ** 2).sum())), rn(5, 3))
    both(lambda m: m.func.vmap(m.func.jacrev(lambda x: x.sin() * x.sum())), rn(5, 3))
    both(lambda m: m.func.vmap(m.func.jacrev(lambda w, x: (w @ x).tanh()), in_dims=(None, 0)), rn(2, 3), rn(4, 3))
    both(lambda m: m.func.vmap(m.func.vmap(m.func.grad(lambda x: x.pow(3).sum()))), rn(2, 3, 4))


def test_grad_of_vmap():
    both(lambda m: m.func.grad(lambda x: m.func.vmap(lambda r: r.sin().sum())(x).pow(2).sum()), rn(4, 3))


def test_vmap_vjp_fn_over_cotangents():
    def make(m):
        def run(x, cts):
            _, fn = m.func.vjp(lambda a: a.sin() * 2, x)
            return m.func.vmap(fn)(cts)
        return run
    both(make, rn(3), np.eye(3, dtype=np.float32))


# ---- module helpers --------------------------------------------------------------------------------------------

class _Net:
    @staticmethod
    def build(m, sd):
        net = m.nn.Sequential(m.nn.Linear(4, 5), m.nn.ReLU(), m.nn.Linear(5, 3))
        net.load_state_dict(_t(m, sd))
        return net


SD = {"0.weight": rn(5, 4), "0.bias": rn(5), "2.weight": rn(3, 5), "2.bias": rn(3)}


def test_functional_call():
    def make(m):
        net = _Net.build(m, SD)
        new = _t(m, {k: v * 2 for k, v in SD.items()})
        return lambda x: (m.func.functional_call(net, new, (x,)), net(x).detach(),
                          m.func.functional_call(net, ({"0.weight": new["0.weight"]}, {"2.bias": new["2.bias"]}), x))
    both(make, rn(2, 4))


def test_functional_call_errors_and_tied_weights():
    for m in (torch, fg):
        net = _Net.build(m, SD)
        with pytest.raises(RuntimeError, match="Unexpected key"):
            m.func.functional_call(net, {"foo": m.ones(1), **{k: m.tensor(v) for k, v in SD.items()}},
                                   (m.ones(1, 4),), strict=True)
        with pytest.raises(ValueError, match="multiple dictionaries"):
            m.func.functional_call(net, ({"0.bias": m.ones(5)}, {"0.bias": m.ones(5)}), (m.ones(1, 4),))
        tied = m.nn.Module()
        tied.a = m.nn.Linear(2, 2, bias=False)
        tied.b = m.nn.Linear(2, 2, bias=False)
        tied.b.weight = tied.a.weight
        tied.forward = lambda x: tied.a(x) + tied.b(x)
        out = m.func.functional_call(tied, {"a.weight": m.ones(2, 2)}, (m.ones(1, 2),))
        assert out.tolist() == [[4.0, 4.0]]
        with pytest.raises(ValueError, match="tied"):
            m.func.functional_call(tied, {"a.weight": m.ones(2, 2), "b.weight": m.zeros(2, 2)}, (m.ones(1, 2),))


def test_stack_module_state():
    for m in (torch, fg):
        models = [_Net.build(m, {k: v + i for k, v in SD.items()}) for i in range(3)]
        params, buffers = m.func.stack_module_state(models)
        assert list(params) == list(SD) and buffers == {}
        assert params["0.weight"].shape == (3, 5, 4) and params["0.weight"].requires_grad
        assert params["0.weight"].is_leaf
        np.testing.assert_allclose(params["2.bias"][2].detach().numpy(), SD["2.bias"] + 2)
        with pytest.raises(RuntimeError, match="at least one model"):
            m.func.stack_module_state([])
        with pytest.raises(RuntimeError, match="same training/eval"):
            m.func.stack_module_state([models[0], _Net.build(m, SD).eval()])


def test_replace_all_batch_norm_modules():
    for m in (torch, fg):
        net = m.nn.Sequential(m.nn.Conv2d(2, 3, 1), m.nn.BatchNorm2d(3))
        assert m.func.replace_all_batch_norm_modules_(net) is net
        bn = net[1]
        assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats


def test_torch_vmap_alias():
    assert fg.vmap is fg.func.vmap


def test_jacrev_of_data_dependent_function():
    """A function with data-dependent control flow cannot run batched: its rows come one by one."""
    def make(m):
        return m.func.jacrev(lambda x: x.sin() * 2 if x.sum().item() > 0 else x.cos() * 3)
    both(make, np.abs(rn(4)))
    both(make, -np.abs(rn(4)))
    both(lambda m: m.func.jacrev(lambda x: (x, x.exp().sum()), chunk_size=1), rn(3))
