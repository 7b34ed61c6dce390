"""nn.utils.parametrize / parametrizations / weight_norm / spectral_norm / stateless / fusion against torch.

Each case builds the same module in torch and in the library under test (weights copied, float64), applies
the same utility, and compares values, gradients of the original tensors, state_dict keys and errors.
"""
import numpy as np
import pytest
import torch

from conftest import fg

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

D = torch.float64


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def twin_linear(i=3, o=4, bias=True):
    t = torch.nn.Linear(i, o, bias=bias).double()
    f = fg.nn.Linear(i, o, bias=bias).double()
    with fg.no_grad():
        f.weight.copy_(fg.tensor(_np(t.weight)))
        if bias:
            f.bias.copy_(fg.tensor(_np(t.bias)))
    return t, f


def twin_conv(cls="Conv2d", i=2, o=3, k=3):
    t = getattr(torch.nn, cls)(i, o, k).double()
    f = getattr(fg.nn, cls)(i, o, k).double()
    with fg.no_grad():
        f.weight.copy_(fg.tensor(_np(t.weight)))
        f.bias.copy_(fg.tensor(_np(t.bias)))
    return t, f


def twin_input(*shape):
    x = torch.randn(*shape, dtype=D)
    return x, fg.tensor(_np(x))


# ---- parametrize ------------------------------------------------------------------------------------


class Symmetric:
    @staticmethod
    def make(lib):
        class Sym(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()

        return Sym()


def make_skew(lib):
    class Skew(lib.nn.Module):
        def forward(self, X):
            A = X.triu(1)
            return A - A.transpose(-1, -2)

    return Skew()


def make_scale(lib, k):
    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * k

        def right_inverse(self, X):
            return X / k

    return Scale()


def make_split(lib):
    # weight = a + b; right_inverse splits it as (weight / 2, weight / 2)
    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, w):
            return w / 2, w / 2

    return Split()


def test_register_value_grad_class_and_state_dict():
    t, f = twin_linear(4, 4)
    torch.nn.utils.parametrize.register_parametrization(t, "weight", Symmetric.make(torch))
    fg.nn.utils.parametrize.register_parametrization(f, "weight", Symmetric.make(fg))
    assert type(f).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert isinstance(f, fg.nn.Linear)
    assert fg.nn.utils.parametrize.type_before_parametrizations(f) is fg.nn.Linear
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    assert [n for n, _ in f.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert isinstance(f.parametrizations, fg.nn.ModuleDict)
    close(f.weight, t.weight)
    close(f.parametrizations.weight.original, t.parametrizations.weight.original)
    x, xf = twin_input(5, 4)
    t(x).pow(2).sum().backward()
    f(xf).pow(2).sum().backward()
    close(f.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad)
    close(f.bias.grad, t.bias.grad)
    assert fg.nn.utils.parametrize.is_parametrized(f)
    assert fg.nn.utils.parametrize.is_parametrized(f, "weight")
    assert not fg.nn.utils.parametrize.is_parametrized(f, "bias")


def test_assignment_runs_right_inverse_and_keeps_identity():
    t, f = twin_linear(4, 4)
    torch.nn.utils.parametrize.register_parametrization(t, "weight", make_scale(torch, 3.0))
    fg.nn.utils.parametrize.register_parametrization(f, "weight", make_scale(fg, 3.0))
    orig = f.parametrizations.weight.original
    close(orig, t.parametrizations.weight.original)  # right_inverse applied at registration
    new = torch.randn(4, 4, dtype=D)
    t.weight = new
    f.weight = fg.tensor(_np(new))
    assert f.parametrizations.weight.original is orig
    close(f.weight, t.weight)
    close(orig, t.parametrizations.weight.original)


def test_chained_parametrizations_and_remove():
    for leave in (True, False):
        t, f = twin_linear(4, 4)
        for lib, m in ((torch, t), (fg, f)):
            lib.nn.utils.parametrize.register_parametrization(m, "weight", make_skew(lib))
            lib.nn.utils.parametrize.register_parametrization(m, "weight", make_scale(lib, 2.0))
        assert len(f.parametrizations.weight) == 2
        close(f.weight, t.weight)
        orig = f.parametrizations.weight.original
        torch.nn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=leave)
        fg.nn.utils.parametrize.remove_parametrizations(f, "weight", leave_parametrized=leave)
        assert type(f) is fg.nn.Linear
        assert not hasattr(f, "parametrizations")
        assert f.weight is orig
        assert isinstance(f.weight, fg.nn.Parameter)
        close(f.weight, t.weight)
        assert sorted(f.state_dict()) == sorted(t.state_dict())


def test_sequence_right_inverse_original0_1():
    t, f = twin_linear(3, 2)
    torch.nn.utils.parametrize.register_parametrization(t, "weight", make_split(torch))
    fg.nn.utils.parametrize.register_parametrization(f, "weight", make_split(fg))
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    close(f.parametrizations.weight.original0, t.parametrizations.weight.original0)
    close(f.weight, t.weight)
    x, xf = twin_input(2, 3)
    t(x).sum().backward()
    f(xf).sum().backward()
    close(f.parametrizations.weight.original1.grad, t.parametrizations.weight.original1.grad)
    with pytest.raises(ValueError):
        fg.nn.utils.parametrize.remove_parametrizations(f, "weight", leave_parametrized=False)
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight")
    fg.nn.utils.parametrize.remove_parametrizations(f, "weight")
    close(f.weight, t.weight)
    assert isinstance(f.weight, fg.nn.Parameter)


def test_parametrize_buffer_and_cached():
    calls = []

    def make_counting(lib):
        class Double(lib.nn.Module):
            def forward(self, x):
                calls.append(1)
                return x * 2

        return Double()

    t = torch.nn.BatchNorm1d(3).double()
    f = fg.nn.BatchNorm1d(3).double()
    torch.nn.utils.parametrize.register_parametrization(t, "running_var", make_counting(torch))
    fg.nn.utils.parametrize.register_parametrization(f, "running_var", make_counting(fg))
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    calls.clear()
    with fg.nn.utils.parametrize.cached():
        a = f.running_var
        b = f.running_var
        assert a is b
    assert len(calls) == 1
    c = f.running_var
    assert c is not a and len(calls) == 2


def test_parametrize_errors():
    class Bad(fg.nn.Module):
        def forward(self, x):
            return x[:2]

    class BadT(torch.nn.Module):
        def forward(self, x):
            return x[:2]

    class ToFloat(fg.nn.Module):
        def forward(self, x):
            return x.float()

    class ToFloatT(torch.nn.Module):
        def forward(self, x):
            return x.float()

    t, f = twin_linear()
    for lib, m, p in ((torch, t, BadT()), (fg, f, Bad())):
        with pytest.raises(ValueError, match="shape"):
            lib.nn.utils.parametrize.register_parametrization(m, "weight", p)
    for lib, m, p in ((torch, t, ToFloatT()), (fg, f, ToFloat())):
        with pytest.raises(ValueError, match="dtype"):
            lib.nn.utils.parametrize.register_parametrization(m, "weight", p)
    # unsafe lets the shape change
    fg.nn.utils.parametrize.register_parametrization(f, "weight", Bad(), unsafe=True)
    assert tuple(f.weight.shape) == (2, 3)
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(ValueError, match="does not have a parameter"):
            lib.nn.utils.parametrize.register_parametrization(m, "nothere", make_skew(lib))
        with pytest.raises(ValueError, match="does not have a parametrization"):
            lib.nn.utils.parametrize.remove_parametrizations(m, "bias")
    # assigning without a right_inverse
    t2, f2 = twin_linear(3, 3)
    for lib, m in ((torch, t2), (fg, f2)):
        lib.nn.utils.parametrize.register_parametrization(m, "weight", make_skew(lib))
        with pytest.raises(RuntimeError, match="right_inverse"):
            m.weight = lib.zeros(3, 3, dtype=D)


# ---- parametrizations.weight_norm / spectral_norm ---------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_parametrizations_weight_norm(dim):
    t, f = twin_conv("Conv1d")
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    fg.nn.utils.parametrizations.weight_norm(f, dim=dim)
    pt, pf = t.parametrizations.weight, f.parametrizations.weight
    close(pf.original0, pt.original0)
    close(pf.original1, pt.original1)
    assert tuple(pf.original0.shape) == tuple(pt.original0.shape)
    x, xf = twin_input(2, 2, 7)
    t(x).pow(2).sum().backward()
    f(xf).pow(2).sum().backward()
    close(f.weight, t.weight)
    close(pf.original0.grad, pt.original0.grad, 1e-9)
    close(pf.original1.grad, pt.original1.grad, 1e-9)
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight")
    fg.nn.utils.parametrize.remove_parametrizations(f, "weight")
    close(f.weight, t.weight)


def _copy_buffers(src, dst, names):
    with fg.no_grad():
        for n in names:
            dst_t = dst.get_buffer(n)
            dst_t.copy_(fg.tensor(_np(src.get_buffer(n))))


@pytest.mark.parametrize("cls", ["Linear", "Conv2d", "ConvTranspose2d"])
def test_parametrizations_spectral_norm(cls):
    if cls == "Linear":
        t, f = twin_linear(5, 4)
        x, xf = twin_input(3, 5)
    else:
        t, f = twin_conv(cls)
        x, xf = twin_input(2, 2, 6, 6)
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
    fg.nn.utils.parametrizations.spectral_norm(f, n_power_iterations=2)
    names = ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    _copy_buffers(t, f, names)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    for _ in range(2):  # training: power iteration updates u, v in each forward
        t(x).pow(2).sum().backward()
        f(xf).pow(2).sum().backward()
        for n in names:
            close(f.get_buffer(n), t.get_buffer(n), 1e-9)
    close(f.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad, 1e-8)
    t.eval()
    f.eval()
    close(f(xf), t(x), 1e-9)
    for n in names:
        close(f.get_buffer(n), t.get_buffer(n), 1e-9)


def test_parametrizations_errors():
    t, f = twin_linear()
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.spectral_norm(m, "nothere")
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=0)


# ---- the hook forms: nn.utils.weight_norm / spectral_norm -------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, None])
def test_old_weight_norm(dim):
    t, f = twin_linear(3, 4)
    torch.nn.utils.weight_norm(t, dim=dim)
    fg.nn.utils.weight_norm(f, dim=dim)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    close(f.weight_g, t.weight_g)
    x, xf = twin_input(2, 3)
    t(x).pow(2).sum().backward()
    f(xf).pow(2).sum().backward()
    close(f.weight_g.grad, t.weight_g.grad)
    close(f.weight_v.grad, t.weight_v.grad)
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(RuntimeError, match="two weight_norm"):
            lib.nn.utils.weight_norm(m, dim=dim)
    torch.nn.utils.remove_weight_norm(t)
    fg.nn.utils.remove_weight_norm(f)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    close(f.weight, t.weight)
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(ValueError, match="not found"):
            lib.nn.utils.remove_weight_norm(m)


@pytest.mark.parametrize("cls", ["Linear", "ConvTranspose1d"])
def test_old_spectral_norm(cls):
    if cls == "Linear":
        t, f = twin_linear(5, 4)
        x, xf = twin_input(3, 5)
    else:
        t, f = twin_conv(cls)
        x, xf = twin_input(2, 2, 6)
    torch.nn.utils.spectral_norm(t, n_power_iterations=3)
    fg.nn.utils.spectral_norm(f, n_power_iterations=3)
    _copy_buffers(t, f, ["weight_u", "weight_v"])
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    for _ in range(2):
        t(x).pow(2).sum().backward()
        f(xf).pow(2).sum().backward()
        close(f.weight_u, t.weight_u, 1e-9)
        close(f.weight_v, t.weight_v, 1e-9)
    close(f.weight_orig.grad, t.weight_orig.grad, 1e-8)
    t.eval()
    f.eval()
    close(f(xf), t(x), 1e-9)
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(RuntimeError, match="two spectral_norm"):
            lib.nn.utils.spectral_norm(m)
    torch.nn.utils.remove_spectral_norm(t)
    fg.nn.utils.remove_spectral_norm(f)
    close(f.weight, t.weight, 1e-9)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(ValueError, match="not found"):
            lib.nn.utils.remove_spectral_norm(m)


# ---- stateless.functional_call ------------------------------------------------------------------------


def test_functional_call_values_grads_and_restore():
    t, f = twin_linear(3, 2)
    w = torch.randn(2, 3, dtype=D, requires_grad=True)
    wf = fg.tensor(_np(w), requires_grad=True)
    x, xf = twin_input(4, 3)
    out_t = torch.nn.utils.stateless.functional_call(t, {"weight": w}, (x,))
    out_f = fg.nn.utils.stateless.functional_call(f, {"weight": wf}, (xf,))
    close(out_f, out_t)
    out_t.sum().backward()
    out_f.sum().backward()
    close(wf.grad, w.grad)
    assert f.weight.grad is None and isinstance(f.weight, fg.nn.Parameter)
    close(f.weight, t.weight)  # restored
    # a single tensor as args, several dicts, kwargs
    out_t = torch.nn.utils.stateless.functional_call(t, {"weight": w, "bias": torch.zeros(2, dtype=D)}, x)
    out_f = fg.nn.utils.stateless.functional_call(f, {"weight": wf, "bias": fg.zeros(2, dtype=fg.float64)}, xf)
    close(out_f, out_t)
    out_t = torch.nn.utils.stateless.functional_call(t, {}, kwargs={"input": x})
    out_f = fg.nn.utils.stateless.functional_call(f, {}, kwargs={"input": xf})
    close(out_f, out_t)


def test_functional_call_tied_and_strict_errors():
    def tied(lib):
        m = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Linear(3, 3, bias=False)).double()
        m[1].weight = m[0].weight
        return m

    t, f = tied(torch), tied(fg)
    w = torch.randn(3, 3, dtype=D)
    x, xf = twin_input(2, 3)
    out_t = torch.nn.utils.stateless.functional_call(t, {"0.weight": w}, (x,))
    out_f = fg.nn.utils.stateless.functional_call(f, {"0.weight": fg.tensor(_np(w))}, (xf,))
    close(out_f, out_t)
    for lib, m, v in ((torch, t, w), (fg, f, fg.tensor(_np(w)))):
        with pytest.raises(ValueError):  # two different values for tied names
            lib.nn.utils.stateless.functional_call(m, {"0.weight": v, "1.weight": v.clone()}, (v,))
        with pytest.raises(RuntimeError, match="Unexpected key"):
            lib.nn.utils.stateless.functional_call(m, {"0.weight": v, "zz": v}, (v,), strict=True)


# ---- fusion, clip_grad_norm, skip_init ---------------------------------------------------------------


def _twin_bn(n):
    t = torch.nn.BatchNorm2d(n).double()
    f = fg.nn.BatchNorm2d(n).double()
    with torch.no_grad():
        t.running_mean.uniform_(-1, 1)
        t.running_var.uniform_(0.5, 2)
        t.weight.uniform_(0.5, 2)
        t.bias.uniform_(-1, 1)
    with fg.no_grad():
        for name in ("running_mean", "running_var", "weight", "bias"):
            getattr(f, name).copy_(fg.tensor(_np(getattr(t, name))))
    return t.eval(), f.eval()


def test_fuse_conv_bn_and_linear_bn():
    tc, fc = twin_conv("Conv2d")
    tb, fb = _twin_bn(3)
    tc.eval()
    fc.eval()
    x, xf = twin_input(2, 2, 5, 5)
    ft = torch.nn.utils.fuse_conv_bn_eval(tc, tb)
    ff = fg.nn.utils.fuse_conv_bn_eval(fc, fb)
    close(ff(xf), ft(x), 1e-9)
    close(ff(xf), fb(fc(xf)), 1e-9)
    with pytest.raises(AssertionError):
        fg.nn.utils.fuse_conv_bn_eval(fc.train(), fb)
    tl, fl = twin_linear(4, 3)
    tb1 = torch.nn.BatchNorm1d(3).double().eval()
    fb1 = fg.nn.BatchNorm1d(3).double().eval()
    with torch.no_grad():
        tb1.running_var.fill_(2.0)
    with fg.no_grad():
        fb1.running_var.fill_(2.0)
    tl.eval()
    fl.eval()
    x, xf = twin_input(5, 4)
    close(fg.nn.utils.fuse_linear_bn_eval(fl, fb1)(xf), torch.nn.utils.fuse_linear_bn_eval(tl, tb1)(x), 1e-9)
    w, b = fg.nn.utils.fuse_conv_bn_weights(fc.weight, None, fb.running_mean, fb.running_var, 1e-5, None, None)
    wt, bt = torch.nn.utils.fuse_conv_bn_weights(tc.weight, None, tb.running_mean, tb.running_var, 1e-5, None, None)
    close(w, wt)
    close(b, bt)
    assert isinstance(w, fg.nn.Parameter) and b.requires_grad == bt.requires_grad


def test_clip_grad_norm_alias_and_skip_init():
    t, f = twin_linear()
    x, xf = twin_input(2, 3)
    t(x).sum().backward()
    f(xf).sum().backward()
    with pytest.warns(FutureWarning):
        nt = torch.nn.utils.clip_grad_norm(t.parameters(), 0.5)
    with pytest.warns(FutureWarning):
        nf = fg.nn.utils.clip_grad_norm(f.parameters(), 0.5)
    close(nf, nt)
    close(f.weight.grad, t.weight.grad)
    m = fg.nn.utils.skip_init(fg.nn.Linear, 3, 4)
    assert isinstance(m, fg.nn.Linear) and tuple(m.weight.shape) == (4, 3)
    with pytest.raises(RuntimeError):
        fg.nn.utils.skip_init(int)


# ---- parametrizations.orthogonal ----------------------------------------------------------------------


def _gram_error(w):
    w = _np(w)
    g = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    return np.abs(g - np.eye(g.shape[0])).max()


@pytest.mark.parametrize("omap", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_square_matches_torch(omap):
    t, f = twin_linear(4, 4)
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=omap)
    fg.nn.utils.parametrizations.orthogonal(f, orthogonal_map=omap)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    close(f.weight, t.weight, 1e-9)
    close(f.parametrizations.weight.original, t.parametrizations.weight.original)
    # move the original away from the origin; the parametrized weight stays orthogonal and equal to torch's
    step = torch.arange(16.0, dtype=D).reshape(4, 4) * 0.05 * (1 - torch.eye(4, dtype=D))  # householder keeps diag ±1
    with torch.no_grad():
        t.parametrizations.weight.original.add_(step)
    with fg.no_grad():
        f.parametrizations.weight.original.add_(fg.tensor(_np(step)))
    close(f.weight, t.weight, 1e-9)
    assert _gram_error(f.weight) < 1e-9
    x, xf = twin_input(3, 4)
    t(x).pow(3).sum().backward()
    f(xf).pow(3).sum().backward()
    close(f.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad, 1e-8)


@pytest.mark.parametrize("shape,omap", [((5, 3), None), ((3, 5), None), ((5, 3), "cayley"), ((3, 5), "matrix_exp")])
def test_orthogonal_rectangular(shape, omap):
    _, f = twin_linear(shape[1], shape[0])
    fg.nn.utils.parametrizations.orthogonal(f, orthogonal_map=omap)
    assert _gram_error(f.weight) < 1e-9
    x = fg.randn(2, shape[1], dtype=fg.float64)
    f(x).sum().backward()
    assert f.parametrizations.weight.original.grad is not None
    # assigning an orthogonal matrix is kept as it is (the trivialization's base)
    q = fg.tensor(np.linalg.qr(np.random.randn(max(shape), min(shape)))[0])
    q = q if shape[0] >= shape[1] else q.t()
    f.weight = q
    close(f.weight, q, 1e-9)


def test_orthogonal_errors():
    t, f = twin_linear()
    for lib, m in ((torch, t), (fg, f)):
        with pytest.raises(ValueError, match="orthogonal_map"):
            lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map="qr")
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.orthogonal(m, "bias")
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.orthogonal(m, "nothere")
