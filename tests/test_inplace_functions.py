"""torch's top-level in-place functions (torch.relu_(x), torch.exp_(x), torch.fill_(x, v), ...) and
the out-of-place top-level names beside them (torch.dropout, torch.celu, torch.threshold, torch.fill):
values, identity of the returned tensor, gradients through the in-place op, errors."""
import numpy as np
import pytest
import torch

from conftest import fg

X = np.array([[0.3, -0.7, 0.2], [0.9, -0.1, 0.5]])  # in (-1, 1): every unary op below is defined


def _args(lib, name):
    t = lambda a: lib.tensor(np.asarray(a, dtype=np.float64))  # noqa: E731
    return {
        "addmv_": (t(np.ones((2, 4)) * 0.1), t(np.arange(4.0))),
        "clamp_": (-0.2, 0.4), "clip_": (-0.2, 0.4), "clamp_max_": (0.1,), "clamp_min_": (0.1,),
        "fill_": (0.25,), "xlogy_": (t(np.full((2, 3), 0.5)),), "logit_": (0.01,),
        "index_put_": ((lib.tensor([0, 1]), lib.tensor([2, 0])), t([5.0, 6.0])),
        "resize_as_": (t(np.zeros((3, 2))),),
    }.get(name, ())


UNARY = """abs_ acos_ arccos_ asin_ arcsin_ atan_ arctan_ atanh_ arctanh_ asinh_ arcsinh_ ceil_ cos_ cosh_
deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fix_ floor_ frac_ neg_ negative_ rad2deg_ reciprocal_ relu_ round_
sigmoid_ sin_ sinc_ sinh_ square_ tan_ tanh_ trunc_ zero_ nan_to_num_ i0_""".split()
POSITIVE = "log_ log10_ log1p_ log2_ sqrt_ rsqrt_ acosh_ arccosh_".split()
WITH_ARGS = "clamp_ clip_ clamp_max_ clamp_min_ fill_ xlogy_ logit_ index_put_".split()


NO_INPLACE_GRAD = "atanh_ arctanh_ asinh_ arcsinh_ acosh_ arccosh_".split()


def _input(lib, name):
    a = X + 1.5 if name in ("acosh_", "arccosh_") else (np.abs(X) + 0.1 if name in POSITIVE else X)
    if name == "logit_":
        a = np.abs(X) * 0.9 + 0.05
    return lib.tensor(a, dtype=lib.float64, requires_grad=True)


@pytest.mark.parametrize("name", UNARY + POSITIVE + WITH_ARGS)
def test_value_identity_grad(name):
    res = {}
    for lib in (fg, torch):
        leaf = _input(lib, name)
        y = leaf * 1.0  # a non-leaf: in-place ops on it are recorded
        r = getattr(lib, name)(y, *_args(lib, name))
        assert r is y
        if name in NO_INPLACE_GRAD:  # torch has no derivative for these in-place forms; values only
            res[lib] = (r.detach().numpy().copy(), None)
            continue
        w = lib.tensor(np.linspace(-1.0, 2.0, r.numel()).reshape(tuple(r.shape)), dtype=lib.float64)
        (r * w).sum().backward()
        res[lib] = (r.detach().numpy().copy(), leaf.grad.numpy().copy() if leaf.grad is not None else None)
    np.testing.assert_allclose(res[fg][0], res[torch][0], rtol=1e-12, atol=1e-12)
    if res[torch][1] is None:
        assert res[fg][1] is None
    else:
        np.testing.assert_allclose(res[fg][1], res[torch][1], rtol=1e-10, atol=1e-12)


def test_addmv_():
    out = {}
    for lib in (fg, torch):
        v = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
        m = lib.tensor(np.arange(8.0).reshape(2, 4), dtype=lib.float64, requires_grad=True)
        x = lib.tensor([1.0, 2.0, -1.0, 0.5], dtype=lib.float64)
        y = v * 1.0
        r = lib.addmv_(y, m, x, beta=0.5, alpha=2.0)
        assert r is y
        (r * lib.tensor([1.0, 3.0], dtype=lib.float64)).sum().backward()
        out[lib] = (r.detach().numpy(), v.grad.numpy(), m.grad.numpy())
    for a, b in zip(out[fg], out[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_detach_and_resize_as():
    for lib in (fg, torch):
        y = lib.tensor([1.0, 2.0], requires_grad=True) * 2
        r = lib.detach_(y)
        assert r is y and not y.requires_grad and y.grad_fn is None
    a, b = fg.zeros(2, 3), torch.zeros(2, 3)
    assert fg.resize_as_(a, fg.zeros(3, 2)) is a
    torch.resize_as_(b, torch.zeros(3, 2))
    assert tuple(a.shape) == tuple(b.shape)


def test_integer_and_dtype():
    for name in ("abs_", "neg_", "zero_", "square_"):
        if name == "square_":
            # torch refuses square_ on integers (the result is float); compare the kind
            continue
        a, b = fg.tensor([3, -4]), torch.tensor([3, -4])
        getattr(fg, name)(a)
        getattr(torch, name)(b)
        assert a.dtype == fg.int64
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    a, b = fg.tensor([1.0, 2.0], dtype=fg.float32), torch.tensor([1.0, 2.0], dtype=torch.float32)
    fg.exp_(a)
    torch.exp_(b)
    assert a.dtype == fg.float32
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)


def test_nn_forms():
    x = np.array([[1.0, -2.0, 0.5], [-0.3, 0.01, 3.0]])  # (no exact 0: see the report on elu-family grads at 0)
    for name, args in (("celu", (0.7,)), ("selu", ()), ("threshold", (0.2, -5.0)), ("rrelu", (0.1, 0.3))):
        out = {}
        for lib in (fg, torch):
            leaf = lib.tensor(x, requires_grad=True)
            r = getattr(lib, name)(leaf, *args)
            r.sum().backward()
            y = leaf.detach() * 1.0
            r2 = getattr(lib, name + "_")(y, *args)
            assert r2 is y
            out[lib] = (r.detach().numpy(), leaf.grad.numpy(), y.numpy())
        for u, v in zip(out[fg], out[torch]):
            np.testing.assert_allclose(u, v, rtol=1e-7, atol=1e-12)  # torch's celu grad is float-accurate


def test_fill():
    for v in (2.5, 3):
        a, b = fg.fill(fg.zeros(2, 3), v), torch.fill(torch.zeros(2, 3), v)
        assert a.dtype == fg.float32
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    vf = fg.tensor(1.5, requires_grad=True)
    vt = torch.tensor(1.5, requires_grad=True)
    a, b = fg.fill(fg.zeros(2, 3), vf), torch.fill(torch.zeros(2, 3), vt)
    (a * 2).sum().backward()
    (b * 2).sum().backward()
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert vf.grad.item() == vt.grad.item()
    for lib in (fg, torch):
        with pytest.raises(RuntimeError, match="0-dimension"):
            lib.fill(lib.zeros(2), lib.tensor([1.0, 2.0]))
        with pytest.raises(RuntimeError, match="0-dimension"):
            lib.fill_(lib.zeros(2), lib.tensor([1.0, 2.0]))


def test_dropout():
    x = np.arange(1.0, 201.0).reshape(10, 20)
    for lib in (fg, torch):
        t = lib.tensor(x)
        assert lib.dropout(t, 0.5, False) is t
        y = lib.dropout(t, 0.25, True)
        kept = y.numpy() != 0
        np.testing.assert_allclose(y.numpy()[kept], x[kept] / 0.75)
        assert 0.5 < kept.mean() < 0.95
        z = t.clone()
        r = lib.dropout_(z, 1.0, True)
        assert r is z and (z.numpy() == 0).all()
        with pytest.raises(TypeError, match="train"):
            lib.dropout(t, 0.5)
        with pytest.raises(RuntimeError):
            lib.dropout(t, 1.5, True)


def test_conj_physical_():
    for lib in (fg, torch):
        t = lib.tensor([1.0, -2.0])
        assert lib.conj_physical_(t) is t and t.conj_physical_() is t
        np.testing.assert_array_equal(t.numpy(), [1.0, -2.0])


@pytest.mark.parametrize("name", ["relu_", "exp_", "zero_", "fill_", "dropout_", "celu_", "threshold_"])
def test_errors(name):
    args = {"fill_": (1.0,), "dropout_": (0.5, True), "threshold_": (0.0, 1.0)}.get(name, ())
    kinds = []
    for lib in (fg, torch):
        with pytest.raises(TypeError) as e:
            getattr(lib, name)(3, *args)
        kinds.append(str(e.value) if not args else "")  # (torch's overload message for fill_ etc.)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            getattr(lib, name)(lib.tensor([1.0, 2.0], requires_grad=True), *args)
    assert kinds[0] == kinds[1]
