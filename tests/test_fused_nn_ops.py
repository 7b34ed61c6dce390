"""Fused nn ops recorded as torch records them (issues #27, #29): gelu (GeluBackward0, its backward
GeluBackwardBackward0), layer_norm (NativeLayerNormBackward0), mse_loss (MseLossBackward0) and
binary_cross_entropy_with_logits (BinaryCrossEntropyWithLogitsBackward0). Values, gradients and
double-backward gradients against torch, in each float dtype, on empty and non-contiguous inputs;
the node's class name, next_functions and saved names; the errors' kinds. With
FERROGRAD_FAKE_CUDA=1 the device tests run the composed path on the stand-in device."""

import importlib

import numpy as np
import pytest
import torch

from conftest import fg

F_fg = importlib.import_module(fg.__name__ + ".nn.functional")
F_t = torch.nn.functional

TOL = {
    "float64": dict(rtol=1e-10, atol=1e-12),
    "float32": dict(rtol=2e-5, atol=2e-6),
    "float16": dict(rtol=2e-3, atol=2e-3),
    "bfloat16": dict(rtol=1.6e-2, atol=1.6e-2),
}


def pair(arr, dtype, requires_grad=False, noncontig=False):
    """The same values as a torch tensor and a ferrograd tensor of `dtype`."""
    out = []
    for lib in (torch, fg):
        t = lib.tensor(np.array(arr.T if noncontig else arr, order="C")).to(getattr(lib, dtype))
        if noncontig:
            t = t.t()
        out.append(t.requires_grad_(requires_grad))
    return out


def close(ours, theirs, dtype, scale=1.0):
    assert ours is not None and theirs is not None
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    tol = dict(TOL[dtype])
    tol["atol"] *= scale
    np.testing.assert_allclose(ours.detach().double().numpy(), theirs.detach().double().numpy(), **tol)


def kinds(node):
    return [None if n is None else type(n).__name__ for n, _ in node.next_functions]


def saved_names(node):
    return sorted(a for a in dir(node) if a.startswith("_saved_"))


# ------------------------------------------------------------------------------------- gelu


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,noncontig", [((16, 40), False), ((0, 3), False), ((7,), False), ((6, 5), True), ((64, 600), False)])
def test_gelu_values_and_grads(approximate, dtype, shape, noncontig):
    rng = np.random.default_rng(1)
    arr = rng.standard_normal(shape) * 3
    xt, xf = pair(arr, dtype, True, noncontig)
    yt, yf = F_t.gelu(xt, approximate=approximate), F_fg.gelu(xf, approximate=approximate)
    close(yf, yt, dtype)
    assert type(yf.grad_fn).__name__ == type(yt.grad_fn).__name__ == "GeluBackward0"
    assert yf.grad_fn._saved_approximate == yt.grad_fn._saved_approximate == approximate
    assert saved_names(yf.grad_fn) == saved_names(yt.grad_fn)
    assert kinds(yf.grad_fn) == kinds(yt.grad_fn)
    gt, gf = pair(rng.standard_normal(yt.shape), dtype)
    yt.backward(gt)
    yf.backward(gf)
    # torch's vectorised tanh reaches ±1 a little earlier than the scalar one (|inner| ≈ 9): ulps
    # of 1 - tanh², times the incoming gradient
    close(xf.grad, xt.grad, dtype, scale=5)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_double_backward(approximate):
    rng = np.random.default_rng(2)
    xt, xf = pair(rng.standard_normal((5, 7)) * 2, "float64", True)
    gt, gf = pair(rng.standard_normal((5, 7)), "float64", True)
    ht, hf = pair(rng.standard_normal((5, 7)), "float64")
    res = []
    for lib, F, x, g, h in ((torch, F_t, xt, gt, ht), (fg, F_fg, xf, gf, hf)):
        y = F.gelu(x, approximate=approximate)
        (dx,) = lib.autograd.grad(y, x, g, create_graph=True)
        assert type(dx.grad_fn).__name__ == "GeluBackwardBackward0"
        assert dx.grad_fn._saved_approximate == approximate
        names = saved_names(dx.grad_fn)
        d2x, d2g = lib.autograd.grad((dx * h).sum(), (x, g))
        res.append((dx, d2x, d2g, kinds(dx.grad_fn), names))
    (t, f) = res
    for a, b in zip(f[:3], t[:3]):
        close(a, b, "float64")
    assert f[3] == t[3] and f[4] == t[4]


def test_gelu_errors_and_integer_input():
    for F, lib in ((F_t, torch), (F_fg, fg)):
        with pytest.raises(RuntimeError):
            F.gelu(lib.randn(3), approximate="bogus")
        with pytest.raises(RuntimeError):
            F.gelu(lib.arange(3))


def test_gelu_module_and_no_grad():
    x = np.linspace(-4, 4, 33)
    xt, xf = pair(x, "float32")
    close(fg.nn.GELU("tanh")(xf), torch.nn.GELU("tanh")(xt), "float32")
    with fg.no_grad():
        y = F_fg.gelu(xf.requires_grad_())
    assert y.grad_fn is None and not y.requires_grad


# ------------------------------------------------------------------------------- layer_norm


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,nshape", [((2, 3, 8), (8,)), ((3, 4, 5), (4, 5)), ((0, 6), (6,)), ((6,), (6,)), ((40, 300), (300,))])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_values_and_grads(dtype, shape, nshape, affine):
    rng = np.random.default_rng(3)
    xt, xf = pair(rng.standard_normal(shape) * 2 + 1, dtype, True)
    wt = wf = bt = bf = None
    if affine in ("both", "weight"):
        wt, wf = pair(rng.standard_normal(nshape), dtype, True)
    if affine == "both":
        bt, bf = pair(rng.standard_normal(nshape), dtype, True)
    yt, yf = F_t.layer_norm(xt, nshape, wt, bt, 1e-5), F_fg.layer_norm(xf, nshape, wf, bf, 1e-5)
    close(yf, yt, dtype, scale=4)
    assert type(yf.grad_fn).__name__ == type(yt.grad_fn).__name__ == "NativeLayerNormBackward0"
    assert kinds(yf.grad_fn) == kinds(yt.grad_fn)
    assert saved_names(yf.grad_fn) == saved_names(yt.grad_fn)
    nf, nt = yf.grad_fn, yt.grad_fn
    assert nf._saved_normalized_shape == nt._saved_normalized_shape == tuple(nshape)
    close(nf._saved_result1, nt._saved_result1, dtype, scale=4)
    close(nf._saved_result2, nt._saved_result2, dtype, scale=4)
    assert (nf._saved_weight is None) == (nt._saved_weight is None)
    assert (nf._saved_bias is None) == (nt._saved_bias is None)
    gt, gf = pair(rng.standard_normal(shape), dtype)
    yt.backward(gt)
    yf.backward(gf)
    scale = 16 if dtype in ("float16", "bfloat16") else 4
    close(xf.grad, xt.grad, dtype, scale=scale)
    for ours, theirs in ((wf, wt), (bf, bt)):
        if theirs is not None:
            close(ours.grad, theirs.grad, dtype, scale=scale * 8)


def test_layer_norm_non_contiguous_and_half_with_float_params():
    rng = np.random.default_rng(4)
    xt, xf = pair(rng.standard_normal((6, 5)), "float32", True, noncontig=True)
    yt, yf = F_t.layer_norm(xt, (5,)), F_fg.layer_norm(xf, (5,))
    close(yf, yt, "float32")
    assert type(yf.grad_fn).__name__ == "NativeLayerNormBackward0"
    yt.sum().backward()
    yf.sum().backward()
    close(xf.grad, xt.grad, "float32")
    ht, hf = pair(rng.standard_normal((3, 8)), "bfloat16", True)
    wt, wf = pair(rng.standard_normal(8), "float32", True)
    close(F_fg.layer_norm(hf, (8,), wf), F_t.layer_norm(ht, (8,), wt), "bfloat16")


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_double_backward(affine):
    rng = np.random.default_rng(5)
    xt, xf = pair(rng.standard_normal((4, 6)), "float64", True)
    wt, wf = pair(rng.standard_normal(6), "float64", True)
    bt, bf = pair(rng.standard_normal(6), "float64", True)
    ht, hf = pair(rng.standard_normal((4, 6)), "float64")
    res = []
    for lib, F, x, w, b, h in ((torch, F_t, xt, wt, bt, ht), (fg, F_fg, xf, wf, bf, hf)):
        args = (w, b) if affine else (None, None)
        y = F.layer_norm(x, (6,), *args)
        loss = (y * y * h).sum()
        inputs = (x, w, b) if affine else (x,)
        grads = lib.autograd.grad(loss, inputs, create_graph=True)
        gsum = sum((g * g).sum() for g in grads)
        res.append(lib.autograd.grad(gsum, inputs))
    for a, b in zip(res[1], res[0]):
        close(a, b, "float64", scale=100)


def test_layer_norm_module_parity():
    rng = np.random.default_rng(6)
    mt = torch.nn.LayerNorm(8).double()
    mf = fg.nn.LayerNorm(8).double()
    xt, xf = pair(rng.standard_normal((2, 5, 8)), "float64", True)
    yt, yf = mt(xt), mf(xf)
    close(yf, yt, "float64")
    yt.pow(2).sum().backward()
    yf.pow(2).sum().backward()
    close(xf.grad, xt.grad, "float64")
    close(mf.weight.grad, mt.weight.grad, "float64")
    close(mf.bias.grad, mt.bias.grad, "float64")


def test_layer_norm_errors():
    for F, lib in ((F_t, torch), (F_fg, fg)):
        with pytest.raises(RuntimeError):
            F.layer_norm(lib.randn(3, 4), (5,))
        with pytest.raises(RuntimeError):
            F.layer_norm(lib.randn(3, 4), (4,), lib.randn(4, dtype=lib.float64))
        with pytest.raises(RuntimeError):
            F.layer_norm(lib.randn(3, 4), (4,), lib.randn(5))


# --------------------------------------------------------------------------------- mse_loss


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(4, 5), (0,), (3, 2, 2)])
def test_mse_loss(reduction, dtype, shape):
    rng = np.random.default_rng(7)
    xt, xf = pair(rng.standard_normal(shape), dtype, True)
    tt, tf = pair(rng.standard_normal(shape), dtype, True)
    lt, lf = F_t.mse_loss(xt, tt, reduction=reduction), F_fg.mse_loss(xf, tf, reduction=reduction)
    if reduction == "mean" and 0 in shape:
        assert np.isnan(lf.item()) and np.isnan(lt.item())
        return
    close(lf, lt, dtype)
    assert type(lf.grad_fn).__name__ == type(lt.grad_fn).__name__ == "MseLossBackward0"
    assert kinds(lf.grad_fn) == kinds(lt.grad_fn)
    assert saved_names(lf.grad_fn) == saved_names(lt.grad_fn)
    assert lf.grad_fn._saved_reduction == lt.grad_fn._saved_reduction
    gt, gf = pair(rng.standard_normal(lt.shape), dtype)
    lt.backward(gt)
    lf.backward(gf)
    close(xf.grad, xt.grad, dtype)
    close(tf.grad, tt.grad, dtype)


def test_mse_loss_double_backward_and_fallbacks():
    rng = np.random.default_rng(8)
    xt, xf = pair(rng.standard_normal((3, 4)), "float64", True)
    tt, tf = pair(rng.standard_normal((3, 4)), "float64", True)
    res = []
    for lib, F, x, t in ((torch, F_t, xt, tt), (fg, F_fg, xf, tf)):
        (dx,) = lib.autograd.grad(F.mse_loss(x, t), x, create_graph=True)
        res.append(lib.autograd.grad((dx * dx).sum() + (dx * x).sum(), (x, t)))
    for a, b in zip(res[1], res[0]):
        close(a, b, "float64")
    # broadcasting and mixed dtypes still run (the composed path), with torch's values
    xt, xf = pair(rng.standard_normal((3, 4)), "float32", True)
    tt, tf = pair(rng.standard_normal((4,)), "float64")
    with pytest.warns(UserWarning):
        lf = F_fg.mse_loss(xf, tf)
    with pytest.warns(UserWarning):
        lt = F_t.mse_loss(xt, tt)
    close(lf, lt, "float64" if lt.dtype == torch.float64 else "float32")
    with pytest.raises(ValueError):
        F_fg.mse_loss(xf, xf.detach(), reduction="avg")


# -------------------------------------------------------------------- BCE with logits


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("weights", ["none", "weight", "pos_weight", "both"])
def test_bce_with_logits(reduction, dtype, weights):
    rng = np.random.default_rng(9)
    xt, xf = pair(rng.standard_normal((6, 4)) * 4, dtype, True)
    tt, tf = pair(rng.random((6, 4)), dtype, True)
    wt = wf = pt = pf = None
    if weights in ("weight", "both"):
        wt, wf = pair(rng.random((6, 4)) + 0.5, dtype)
    if weights in ("pos_weight", "both"):
        pt, pf = pair(rng.random(4) * 3, dtype)
    lt = F_t.binary_cross_entropy_with_logits(xt, tt, wt, reduction=reduction, pos_weight=pt)
    lf = F_fg.binary_cross_entropy_with_logits(xf, tf, wf, reduction=reduction, pos_weight=pf)
    close(lf, lt, dtype)
    assert type(lf.grad_fn).__name__ == type(lt.grad_fn).__name__ == "BinaryCrossEntropyWithLogitsBackward0"
    assert kinds(lf.grad_fn) == kinds(lt.grad_fn)
    assert saved_names(lf.grad_fn) == saved_names(lt.grad_fn)
    assert lf.grad_fn._saved_reduction == lt.grad_fn._saved_reduction
    assert (lf.grad_fn._saved_weight is None) == (lt.grad_fn._saved_weight is None)
    assert (lf.grad_fn._saved_pos_weight is None) == (lt.grad_fn._saved_pos_weight is None)
    gt, gf = pair(rng.standard_normal(lt.shape), dtype)
    lt.backward(gt)
    lf.backward(gf)
    close(xf.grad, xt.grad, dtype)
    close(tf.grad, tt.grad, dtype)


@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_double_backward(pos_weight):
    rng = np.random.default_rng(10)
    xt, xf = pair(rng.standard_normal((5, 3)) * 3, "float64", True)
    tt, tf = pair(rng.random((5, 3)), "float64", True)
    pt, pf = pair(rng.random(3) * 2, "float64") if pos_weight else (None, None)
    res = []
    for lib, F, x, t, p in ((torch, F_t, xt, tt, pt), (fg, F_fg, xf, tf, pf)):
        loss = F.binary_cross_entropy_with_logits(x, t, pos_weight=p)
        dx, dt = lib.autograd.grad(loss, (x, t), create_graph=True)
        res.append(lib.autograd.grad((dx * dx).sum() + (dt * x).sum(), (x, t)))
    for a, b in zip(res[1], res[0]):
        close(a, b, "float64")


def test_bce_with_logits_extreme_logits_and_errors():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    t = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    xt, xf = pair(x, "float32", True)
    tt, tf = pair(t, "float32")
    lt, lf = F_t.binary_cross_entropy_with_logits(xt, tt), F_fg.binary_cross_entropy_with_logits(xf, tf)
    close(lf, lt, "float32")
    lt.backward()
    lf.backward()
    close(xf.grad, xt.grad, "float32")
    for F, lib in ((F_t, torch), (F_fg, fg)):
        with pytest.raises(ValueError):
            F.binary_cross_entropy_with_logits(lib.randn(3, 2), lib.rand(3))
        with pytest.raises(ValueError):
            F.binary_cross_entropy_with_logits(lib.randn(3), lib.rand(3), reduction="avg")


# --------------------------------------------------------------------- device (composed path)


@pytest.mark.skipif(not fg.cuda.is_available(), reason="no CUDA device (FERROGRAD_FAKE_CUDA=1 gives a host stand-in)")
def test_device_records_the_same_nodes():
    rng = np.random.default_rng(11)
    xt, _ = pair(rng.standard_normal((4, 8)), "float64", True)
    xf = fg.tensor(xt.detach().numpy()).cuda().requires_grad_()
    tt, _ = pair(rng.random((4, 8)), "float64")
    tf = fg.tensor(tt.numpy()).cuda()
    wt, _ = pair(rng.standard_normal(8), "float64", True)
    wf = fg.tensor(wt.detach().numpy()).cuda().requires_grad_()
    cases = [
        (lambda F, x, t, w: F.gelu(x), "GeluBackward0"),
        (lambda F, x, t, w: F.gelu(x, approximate="tanh"), "GeluBackward0"),
        (lambda F, x, t, w: F.layer_norm(x, (8,), w, w * 0.5), "NativeLayerNormBackward0"),
        (lambda F, x, t, w: F.mse_loss(x, t), "MseLossBackward0"),
        (lambda F, x, t, w: F.binary_cross_entropy_with_logits(x, t), "BinaryCrossEntropyWithLogitsBackward0"),
    ]
    for build, name in cases:
        xt.grad = wt.grad = None
        xf.grad = wf.grad = None
        yt, yf = build(F_t, xt, tt, wt), build(F_fg, xf, tf, wf)
        assert type(yf.grad_fn).__name__ == name
        assert yf.device.type == "cuda"
        close(yf.cpu(), yt, "float64")
        (yt * yt).sum().backward()
        (yf * yf).sum().backward()
        close(xf.grad.cpu(), xt.grad, "float64")
        if wt.grad is not None:
            close(wf.grad.cpu(), wt.grad, "float64")
