"""Channel-wise/alpha dropout, nn.Buffer, lazy modules, EmbeddingBag, the 3-d layers, MaxUnpool1d, LPPool,
gumbel_softmax, grid_sample/affine_grid and the nn.init additions, against torch (float64, weights copied)."""
import math

import numpy as np
import pytest
import torch

from conftest import fg

D = torch.float64


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def twin(*shape, grad=True, lo=None):
    x = torch.randn(*shape, dtype=D)
    if lo is not None:
        x = x.abs() + lo
    xt = x.clone().requires_grad_(grad)
    xf = fg.tensor(_np(x), requires_grad=grad)
    return xt, xf


def copy_params(src, dst):
    with fg.no_grad():
        for (n, p), (n2, q) in zip(src.named_parameters(), dst.named_parameters()):
            assert n == n2
            q.copy_(fg.tensor(_np(p)))


def check_module(tm, fm, xt, xf, tol=1e-10, **kw):
    """Same output and same gradients (input and parameters) for a random-weighted sum."""
    yt, yf = tm(xt, **kw), fm(xf, **kw)
    close(yf, yt, tol)
    w = torch.randn(yt.shape, dtype=D)
    (yt * w).sum().backward()
    (yf * fg.tensor(_np(w))).sum().backward()
    if xt.requires_grad:
        close(xf.grad, xt.grad, tol)
    for (n, p), (_, q) in zip(tm.named_parameters(), fm.named_parameters()):
        close(q.grad, p.grad, tol)


# ---- dropout ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,shape", [("dropout1d", (3, 8, 5)), ("dropout1d", (8, 5)),
                                        ("dropout2d", (3, 8, 4, 4)), ("dropout3d", (2, 8, 2, 3, 3)),
                                        ("dropout3d", (8, 2, 3, 3))])
def test_feature_dropout_zeroes_whole_channels(name, shape):
    x = fg.ones(*shape, dtype=fg.float64)
    y = getattr(fg.nn.functional, name)(x, 0.5, True)
    batched = len(shape) in (3, 4, 5) and not (name == "dropout3d" and len(shape) == 4)
    vals = _np(y.reshape(shape[0] * shape[1], -1) if batched else y.reshape(shape[0], -1))
    # each channel is all 0 or all 1/(1-p)
    assert np.all((vals.min(-1) == vals.max(-1)))
    assert set(np.unique(vals)) <= {0.0, 2.0}
    # eval / p=0: identity; p=1: zeros
    close(getattr(fg.nn.functional, name)(x, 0.5, False), x)
    assert float(getattr(fg.nn.functional, name)(x, 1.0, True).abs().sum()) == 0.0
    # gradient flows through the kept channels with the same mask
    xg = fg.ones(*shape, dtype=fg.float64, requires_grad=True)
    fg.manual_seed(3)
    out = getattr(fg.nn.functional, name)(xg, 0.25, True)
    out.sum().backward()
    close(xg.grad, out)


def test_dropout_errors_and_modules():
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            lib.nn.functional.dropout1d(lib.ones(2, 3), 1.5)
        with pytest.raises(RuntimeError, match="dropout1d"):
            lib.nn.functional.dropout1d(lib.ones(2, 3, 4, 5), 0.5)
        with pytest.raises(ValueError):
            lib.nn.Dropout2d(-0.1)
        with pytest.raises(RuntimeError):
            lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True)
        with pytest.warns(UserWarning):
            lib.nn.functional.dropout2d(lib.ones(2, 3, 4), 0.5)
    for cls in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        m, mt = getattr(fg.nn, cls)(0.3), getattr(torch.nn, cls)(0.3)
        assert repr(m) == repr(mt)
        x = {"Dropout1d": fg.randn(2, 3, 4), "Dropout2d": fg.randn(2, 3, 2, 2)}.get(cls, fg.randn(2, 3, 2, 2, 2))
        assert m.eval()(x) is x


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_values(feature):
    p = 0.3
    fn = fg.nn.functional.feature_alpha_dropout if feature else fg.nn.functional.alpha_dropout
    x = fg.randn(4, 6, 5, dtype=fg.float64)
    assert fn(x, p) is x  # training defaults to False, as torch
    y = fn(x, p, True)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha**2 * p + 1) * (1 - p))
    kept = np.isclose(_np(y), _np(x) * a + alpha * a * p)
    dropped = np.isclose(_np(y), -alpha * a + alpha * a * p)
    assert np.all(kept | dropped) and kept.any() and dropped.any()
    if feature:
        assert np.all(kept.all(-1) | dropped.all(-1))
    # mean and variance of a standard normal input survive (statistically)
    big = fg.randn(200000, dtype=fg.float64)
    out = fg.nn.functional.alpha_dropout(big, 0.2, True)
    assert abs(out.mean().item()) < 0.02 and abs(out.std().item() - 1) < 0.02


# ---- Buffer -------------------------------------------------------------------------------------------


def test_buffer():
    for lib in (torch, fg):
        m = lib.nn.Module()
        m.a = lib.nn.Buffer(lib.ones(2))
        m.b = lib.nn.Buffer(lib.zeros(3), persistent=False)
        assert sorted(n for n, _ in m.named_buffers()) == ["a", "b"]
        assert list(m.state_dict()) == ["a"]
        assert isinstance(m.a, lib.nn.Buffer) and not isinstance(lib.ones(1), lib.nn.Buffer)
        assert list(m.parameters()) == []


# ---- lazy modules -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,args,shape", [
    ("LazyLinear", (4,), (3, 5)),
    ("LazyConv1d", (4, 3), (2, 3, 9)),
    ("LazyConv2d", (4, 3), (2, 2, 6, 6)),
    ("LazyConv2d", (4, 3), (2, 6, 6)),
    ("LazyConvTranspose1d", (4, 3), (2, 3, 5)),
    ("LazyConvTranspose2d", (4, 2), (2, 3, 4, 4)),
    ("LazyBatchNorm1d", (), (4, 3, 5)),
    ("LazyBatchNorm2d", (), (4, 3, 2, 2)),
    ("LazyInstanceNorm1d", (), (2, 3, 5)),
    ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
])
def test_lazy_modules(cls, args, shape):
    tm = getattr(torch.nn, cls)(*args, dtype=D)
    fm = getattr(fg.nn, cls)(*args, dtype=fg.float64)
    assert fm.has_uninitialized_params() and tm.has_uninitialized_params()
    xt, xf = twin(*shape)
    tm(xt)
    fm(xf)
    assert type(fm).__name__ == type(tm).__name__
    assert not hasattr(fm, "_initialize_hook")
    assert sorted(fm.state_dict()) == sorted(tm.state_dict())
    for (n, p), (n2, q) in zip(tm.named_parameters(), fm.named_parameters()):
        assert n == n2 and tuple(p.shape) == tuple(q.shape) and type(q) is fg.nn.Parameter
    assert repr(fm) == repr(tm)
    copy_params(tm, fm)
    xt.grad = None
    xf.grad = None
    check_module(tm, fm, xt, xf, 1e-9)


def test_lazy_errors():
    for lib in (torch, fg):
        m = lib.nn.LazyConv2d(4, 3)
        with pytest.raises(RuntimeError, match="Expected 3D"):
            m(lib.ones(2, 2, 2, 6, 6))
        p = lib.nn.UninitializedParameter()
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3)


# ---- EmbeddingBag ---------------------------------------------------------------------------------------


def _twin_bag(**kw):
    tm = torch.nn.EmbeddingBag(10, 3, dtype=D, **kw)
    fm = fg.nn.EmbeddingBag(10, 3, dtype=fg.float64, **kw)
    copy_params(tm, fm)
    return tm, fm


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag_offsets(mode, padding_idx):
    tm, fm = _twin_bag(mode=mode, padding_idx=padding_idx)
    assert repr(fm) == repr(tm)
    idx = [1, 2, 4, 5, 4, 3, 2, 9, 2, 2]
    for offsets, last in (([0, 3, 3, 7], False), ([0, 2, 5, 10], True), ([0, 8], False)):
        it, oft = torch.tensor(idx), torch.tensor(offsets)
        fm.zero_grad()
        tm.zero_grad()
        yt, yf = tm(it, oft), fm(fg.tensor(idx), fg.tensor(offsets))
        if last:
            tm.include_last_offset = fm.include_last_offset = True
            yt, yf = tm(it, oft), fm(fg.tensor(idx), fg.tensor(offsets))
            tm.include_last_offset = fm.include_last_offset = False
        close(yf, yt)
        w = torch.randn(yt.shape, dtype=D)
        (yt * w).sum().backward()
        (yf * fg.tensor(_np(w))).sum().backward()
        close(fm.weight.grad, tm.weight.grad)


def test_embedding_bag_2d_and_per_sample_weights():
    tm, fm = _twin_bag(mode="sum")
    it = torch.randint(0, 10, (4, 3))
    psw = torch.rand(4, 3, dtype=D, requires_grad=True)
    pswf = fg.tensor(_np(psw), requires_grad=True)
    yt = tm(it, per_sample_weights=psw)
    yf = fm(fg.tensor(_np(it)), per_sample_weights=pswf)
    close(yf, yt)
    yt.pow(2).sum().backward()
    yf.pow(2).sum().backward()
    close(pswf.grad, psw.grad)
    close(fm.weight.grad, tm.weight.grad)
    # functional form, mean over 2-d input
    w = torch.randn(10, 3, dtype=D)
    close(fg.nn.functional.embedding_bag(fg.tensor(_np(it)), fg.tensor(_np(w))),
          torch.nn.functional.embedding_bag(it, w))
    # from_pretrained
    fb = fg.nn.EmbeddingBag.from_pretrained(fg.tensor(_np(w)), mode="max")
    tb = torch.nn.EmbeddingBag.from_pretrained(w, mode="max")
    close(fb(fg.tensor(_np(it))), tb(it))
    assert fb.weight.requires_grad == tb.weight.requires_grad


def test_embedding_bag_errors():
    for lib in (torch, fg):
        w = lib.randn(10, 3)
        with pytest.raises(ValueError):
            lib.nn.functional.embedding_bag(lib.tensor([1, 2]), w)  # 1-d needs offsets
        with pytest.raises(ValueError):
            lib.nn.functional.embedding_bag(lib.tensor([[1, 2]]), w, lib.tensor([0]))
        with pytest.raises(ValueError):
            lib.nn.functional.embedding_bag(lib.tensor([1, 2]), w, lib.tensor([0]), mode="median")
        with pytest.raises(NotImplementedError):
            lib.nn.functional.embedding_bag(lib.tensor([1, 2]), w, lib.tensor([0]), mode="mean",
                                            per_sample_weights=lib.ones(2))
        with pytest.raises(ValueError):
            lib.nn.functional.embedding_bag(lib.tensor([[[1]]]), w)


# ---- nn.init ----------------------------------------------------------------------------------------------


def test_init_orthogonal_sparse_dirac_and_aliases():
    for shape in ((3, 5), (6, 2, 3), (4, 4)):
        w = fg.empty(*shape, dtype=fg.float64)
        fg.nn.init.orthogonal_(w, gain=2.0)
        m = _np(w).reshape(shape[0], -1)
        gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 4 * np.eye(gram.shape[0]), atol=1e-10)
    w = fg.empty(10, 4)
    fg.nn.init.sparse_(w, 0.3)
    np.testing.assert_array_equal((_np(w) == 0).sum(0), [3, 3, 3, 3])
    for shape, groups in (((4, 2, 3, 3), 2), ((3, 5, 3), 1), ((2, 2, 3, 3, 3), 1)):
        wt, wf = torch.empty(*shape), fg.empty(*shape)
        torch.nn.init.dirac_(wt, groups)
        fg.nn.init.dirac_(wf, groups)
        close(wf, wt)
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            lib.nn.init.orthogonal_(lib.empty(3))
        with pytest.raises(ValueError):
            lib.nn.init.sparse_(lib.empty(3, 3, 3), 0.1)
        with pytest.raises(ValueError):
            lib.nn.init.dirac_(lib.empty(3, 3))
        with pytest.raises(ValueError):
            lib.nn.init.dirac_(lib.empty(3, 3, 3), groups=2)
        for name in ("uniform", "normal", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
                     "orthogonal"):
            with pytest.warns(FutureWarning, match=f"nn.init.{name}_"):
                getattr(lib.nn.init, name)(lib.empty(3, 4))
        with pytest.warns(FutureWarning):
            t = lib.nn.init.constant(lib.empty(2, 2), 3.0)
        assert float(t.sum()) == 12.0
        with pytest.warns(FutureWarning):
            lib.nn.init.eye(lib.empty(2, 2))
        with pytest.warns(FutureWarning):
            lib.nn.init.dirac(lib.empty(2, 2, 3))
        with pytest.warns(FutureWarning):
            lib.nn.init.sparse(lib.empty(4, 2), 0.5)


# ---- the 3-d family -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,args", [
    ("conv3d", dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)),
    ("conv3d", dict(padding="same")),
    ("conv3d", dict(padding="valid", stride=2)),
    ("conv_transpose3d", dict(stride=(2, 1, 2), padding=(1, 0, 1), output_padding=(1, 0, 0), dilation=(1, 2, 1))),
    ("conv_transpose3d", dict(stride=2, groups=2)),
])
def test_conv3d_functional(name, args):
    xt, xf = twin(2, 4, 6, 7, 5)
    groups = args.get("groups", 1)
    shape = (6, 4 // groups, 3, 2, 3) if name == "conv3d" else (4, 3, 3, 2, 2)
    wt, wf = twin(*shape)
    bt, bf = twin(6 if name == "conv3d" else 3 * groups)
    yt = getattr(torch.nn.functional, name)(xt, wt, bt, **args)
    yf = getattr(fg.nn.functional, name)(xf, wf, bf, **args)
    close(yf, yt, 1e-9)
    g = torch.randn(yt.shape, dtype=D)
    (yt * g).sum().backward()
    (yf * fg.tensor(_np(g))).sum().backward()
    for a, b in ((xf, xt), (wf, wt), (bf, bt)):
        close(a.grad, b.grad, 1e-9)


@pytest.mark.parametrize("name,args", [
    ("max_pool3d", dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0), ceil_mode=True)),
    ("max_pool3d", dict(kernel_size=2, dilation=(2, 1, 1))),
    ("avg_pool3d", dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0), ceil_mode=True,
                        count_include_pad=False)),
    ("avg_pool3d", dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
    ("adaptive_avg_pool3d", dict(output_size=(4, 3, None))),
    ("adaptive_max_pool3d", dict(output_size=(4, 3, 2))),
])
def test_pool3d_functional(name, args):
    for shape in ((2, 3, 6, 7, 5), (3, 6, 7, 5)):
        xt, xf = twin(*shape)
        yt = getattr(torch.nn.functional, name)(xt, **args)
        yf = getattr(fg.nn.functional, name)(xf, **args)
        close(yf, yt)
        g = torch.randn(yt.shape, dtype=D)
        (yt * g).sum().backward()
        (yf * fg.tensor(_np(g))).sum().backward()
        close(xf.grad, xt.grad)


@pytest.mark.parametrize("cls,args", [
    ("Conv3d", (4, 6, 3)), ("Conv3d", (4, 4, (1, 2, 3), 1, 1, 1, 2, False)), ("ConvTranspose3d", (4, 3, 2, 2)),
    ("MaxPool3d", (2,)), ("AvgPool3d", (3, 1, 1)), ("AdaptiveAvgPool3d", (2,)), ("AdaptiveMaxPool3d", ((2, 1, 3),)),
    ("BatchNorm3d", (4,)), ("InstanceNorm3d", (4,)), ("InstanceNorm3d", (4, 1e-5, 0.1, True, True)),
])
def test_modules_3d(cls, args):
    tm = getattr(torch.nn, cls)(*args).double()
    fm = getattr(fg.nn, cls)(*args).double()
    copy_params(tm, fm)
    assert repr(fm) == repr(tm)
    xt, xf = twin(2, 4, 5, 6, 4)
    check_module(tm, fm, xt, xf, 1e-9)
    for name, b in tm.named_buffers():
        close(fm.get_buffer(name), b)


@pytest.mark.parametrize("cls,args", [("LazyConv3d", (4, 2)), ("LazyConvTranspose3d", (4, 2)),
                                      ("LazyBatchNorm3d", ()), ("LazyInstanceNorm3d", ())])
def test_lazy_3d(cls, args):
    test_lazy_modules(cls, args, (2, 3, 4, 4, 4))


def test_3d_errors():
    for lib in (torch, fg):
        with pytest.raises(RuntimeError):
            lib.nn.functional.conv3d(lib.ones(2, 3, 4, 4), lib.ones(2, 3, 2, 2, 2, 2))
        with pytest.raises(RuntimeError):
            lib.nn.functional.conv3d(lib.ones(1, 3, 4, 4, 4), lib.ones(2, 2, 2, 2, 2))  # channel mismatch
        with pytest.raises(RuntimeError):
            lib.nn.functional.max_pool3d(lib.ones(3, 4, 4), 2)
        with pytest.raises(ValueError):
            lib.nn.BatchNorm3d(3)(lib.ones(2, 3, 4, 4))


# ---- LPPool, MaxUnpool1d/3d ----------------------------------------------------------------------------


@pytest.mark.parametrize("cls,args,shape", [
    ("LPPool1d", (2, 3, 2), (2, 3, 8)), ("LPPool1d", (1.5, 2), (3, 7)),
    ("LPPool2d", (3, (3, 2), None, True), (2, 3, 8, 6)), ("LPPool3d", (2, 2), (2, 3, 4, 5, 4)),
])
def test_lp_pool(cls, args, shape):
    tm, fm = getattr(torch.nn, cls)(*args), getattr(fg.nn, cls)(*args)
    assert repr(fm) == repr(tm)
    xt, xf = twin(*shape, lo=0.1)
    check_module(tm, fm, xt, xf)


@pytest.mark.parametrize("nd,shape,k", [(1, (2, 3, 9), 2), (1, (3, 8), 3), (3, (2, 3, 4, 6, 6), 2)])
def test_max_unpool(nd, shape, k):
    x = torch.randn(*shape, dtype=D)
    y, idx = getattr(torch.nn.functional, f"max_pool{nd}d")(x, k, return_indices=True)
    size = list(shape[-nd:])
    tm, fm = getattr(torch.nn, f"MaxUnpool{nd}d")(k), getattr(fg.nn, f"MaxUnpool{nd}d")(k)
    assert repr(fm) == repr(tm)
    yt = y.clone().requires_grad_()
    yf = fg.tensor(_np(y), requires_grad=True)
    it, i_f = idx, fg.tensor(_np(idx))
    ot, of = tm(yt, it, output_size=size), fm(yf, i_f, output_size=size)
    close(of, ot)
    w = torch.randn(ot.shape, dtype=D)
    (ot * w).sum().backward()
    (of * fg.tensor(_np(w))).sum().backward()
    close(yf.grad, yt.grad)
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            getattr(lib.nn.functional, f"max_unpool{nd}d")(lib.ones(*y.shape, dtype=lib.float64),
                                                           lib.zeros(*y.shape, dtype=lib.int64), k,
                                                           output_size=[s + 5 for s in size])


# ---- grid_sample / affine_grid / gumbel_softmax ---------------------------------------------------------


@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 3, 4, 5, 3), (1, 1, 1, 6)])
@pytest.mark.parametrize("align", [True, False])
def test_affine_grid(size, align):
    nd = len(size) - 2
    tt, tf = twin(size[0], nd, nd + 1)
    gt = torch.nn.functional.affine_grid(tt, size, align)
    gf = fg.nn.functional.affine_grid(tf, size, align)
    close(gf, gt)
    w = torch.randn(gt.shape, dtype=D)
    (gt * w).sum().backward()
    (gf * fg.tensor(_np(w))).sum().backward()
    close(tf.grad, tt.grad)


def test_affine_grid_errors():
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            lib.nn.functional.affine_grid(lib.ones(1, 2, 3, dtype=lib.int64), (1, 1, 2, 2), False)
        with pytest.raises(ValueError):
            lib.nn.functional.affine_grid(lib.ones(1, 3, 3), (1, 1, 2, 2), False)
        with pytest.raises(NotImplementedError):
            lib.nn.functional.affine_grid(lib.ones(1, 2, 3), (1, 1, 2), False)
        with pytest.raises(ValueError):
            lib.nn.functional.affine_grid(lib.ones(1, 2, 3), (1, 1, 0, 2), False)
        with pytest.warns(UserWarning):
            lib.nn.functional.affine_grid(lib.ones(1, 2, 3), (1, 1, 2, 2))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
def test_grid_sample(mode, padding_mode, align):
    xt, xf = twin(2, 3, 5, 6)
    g = torch.rand(2, 4, 7, 2, dtype=D) * 3 - 1.5  # reaches outside [-1, 1]
    gt = g.clone().requires_grad_()
    gf = fg.tensor(_np(g), requires_grad=True)
    yt = torch.nn.functional.grid_sample(xt, gt, mode, padding_mode, align)
    yf = fg.nn.functional.grid_sample(xf, gf, mode, padding_mode, align)
    close(yf, yt)
    w = torch.randn(yt.shape, dtype=D)
    (yt * w).sum().backward()
    (yf * fg.tensor(_np(w))).sum().backward()
    close(xf.grad, xt.grad)
    close(gf.grad, gt.grad, 1e-9)


def test_grid_sample_errors():
    for lib in (torch, fg):
        x, g = lib.ones(1, 1, 3, 3), lib.zeros(1, 2, 2, 2)
        with pytest.raises(ValueError):
            lib.nn.functional.grid_sample(x, g, mode="cubic", align_corners=False)
        with pytest.raises(ValueError):
            lib.nn.functional.grid_sample(x, g, padding_mode="wrap", align_corners=False)
        with pytest.raises(RuntimeError):
            lib.nn.functional.grid_sample(x, lib.zeros(2, 2, 2, 2), align_corners=False)
        with pytest.raises(RuntimeError):
            lib.nn.functional.grid_sample(x, lib.zeros(1, 2, 2, 3), align_corners=False)
        with pytest.warns(UserWarning):
            lib.nn.functional.grid_sample(x, g)


def test_gumbel_softmax():
    logits = fg.randn(5, 7, dtype=fg.float64, requires_grad=True)
    soft = fg.nn.functional.gumbel_softmax(logits, tau=0.5)
    close(soft.sum(-1), fg.ones(5, dtype=fg.float64))
    assert float(soft.min()) >= 0
    hard = fg.nn.functional.gumbel_softmax(logits, tau=0.5, hard=True, dim=-1)
    h = _np(hard)
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)
    (hard * fg.randn(5, 7, dtype=fg.float64)).sum().backward()
    g = _np(logits.grad)
    assert np.all(np.isfinite(g)) and np.abs(g).sum() > 0
    np.testing.assert_allclose(g.sum(-1), 0, atol=1e-10)  # the softmax Jacobian's rows sum to zero
    # the argmax follows the logits when the temperature noise is negligible relative to them
    big = fg.tensor(np.eye(4) * 1000.0)
    np.testing.assert_array_equal(_np(fg.nn.functional.gumbel_softmax(big, hard=True)), np.eye(4))


# ---- small additions: in-place activations, channel_shuffle, pdist, Softmax2d, 3-d pads, triplet loss ----


@pytest.mark.parametrize("name,args", [("relu_", ()), ("elu_", (0.7,)), ("celu_", (1.3,)), ("selu_", ()),
                                       ("leaky_relu_", (0.2,)), ("hardtanh_", (-0.5, 0.5)),
                                       ("threshold_", (0.1, -2.0)), ("rrelu_", (0.1, 0.3, False))])
def test_inplace_activations(name, args):
    x = torch.randn(4, 5, dtype=D)
    xt, xf = x.clone(), fg.tensor(_np(x))
    rt = getattr(torch.nn.functional, name)(xt, *args)
    rf = getattr(fg.nn.functional, name)(xf, *args)
    assert rf is xf and rt is xt
    close(xf, xt)


def test_channel_shuffle_pdist_softmax2d_pads():
    xt, xf = twin(2, 6, 3, 2)
    check_module(torch.nn.ChannelShuffle(3), fg.nn.ChannelShuffle(3), xt, xf)
    assert repr(fg.nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    for lib in (torch, fg):
        with pytest.raises(RuntimeError):
            lib.nn.functional.channel_shuffle(lib.ones(2, 5, 3), 2)
    xt, xf = twin(5, 4)
    for p in (2, 1, 3.5):
        close(fg.nn.functional.pdist(xf, p), torch.nn.functional.pdist(xt, p))
    xt.grad = None
    yt, yf = torch.nn.functional.pdist(xt), fg.nn.functional.pdist(xf)
    yt.sum().backward()
    yf.sum().backward()
    close(xf.grad, xt.grad)
    for shape in ((2, 3, 4, 4), (3, 4, 4)):
        xt, xf = twin(*shape)
        check_module(torch.nn.Softmax2d(), fg.nn.Softmax2d(), xt, xf)
    for cls, args in (("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 2.5)), ("ZeroPad3d", (1,)), ("ReflectionPad3d", (1,)),
                      ("ReplicationPad3d", ((1, 2, 0, 1, 2, 0),)), ("CircularPad3d", (1,))):
        tm, fm = getattr(torch.nn, cls)(*args), getattr(fg.nn, cls)(*args)
        assert repr(fm) == repr(tm)
        xt, xf = twin(2, 2, 3, 4, 3)
        check_module(tm, fm, xt, xf)


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_triplet_margin_with_distance_loss(swap, reduction):
    (at, af), (pt, pf), (nt, nf) = twin(6, 4), twin(6, 4), twin(6, 4)
    for dist in (None, "cos"):
        dt = None if dist is None else (lambda a, b: 1 - torch.nn.functional.cosine_similarity(a, b))
        df = None if dist is None else (lambda a, b: 1 - fg.nn.functional.cosine_similarity(a, b))
        lt = torch.nn.TripletMarginWithDistanceLoss(distance_function=dt, margin=0.7, swap=swap, reduction=reduction)
        lf = fg.nn.TripletMarginWithDistanceLoss(distance_function=df, margin=0.7, swap=swap, reduction=reduction)
        yt, yf = lt(at, pt, nt), lf(af, pf, nf)
        close(yf, yt)
        yt.sum().backward()
        yf.sum().backward()
        for a, b in ((af, at), (pf, pt), (nf, nt)):
            close(a.grad, b.grad)
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            lib.nn.TripletMarginWithDistanceLoss(margin=0)
        with pytest.raises(RuntimeError):
            lib.nn.functional.triplet_margin_with_distance_loss(lib.ones(2, 3), lib.ones(2, 3), lib.ones(3))


# ---- CTC loss -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss(reduction, concatenated):
    T, N, C, S = 12, 3, 5, 4
    logits_t, logits_f = twin(T, N, C)
    tg = torch.randint(1, C, (N, S))
    tg[0, 2] = tg[0, 1]  # a repeated label needs a blank between
    il, tl = torch.tensor([12, 10, 7]), torch.tensor([4, 2, 3])
    targets = torch.cat([tg[0, :4], tg[1, :2], tg[2, :3]]) if concatenated else tg
    lt = torch.nn.CTCLoss(reduction=reduction)(logits_t.log_softmax(2), targets, il, tl)
    lf = fg.nn.CTCLoss(reduction=reduction)(logits_f.log_softmax(2), fg.tensor(_np(targets)), fg.tensor(_np(il)),
                                            fg.tensor(_np(tl)))
    close(lf, lt)
    # torch's CTC backward assumes log_softmax inputs; through log_softmax the logits' gradients agree
    lt.sum().backward()
    lf.sum().backward()
    close(logits_f.grad, logits_t.grad, 1e-9)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_infeasible(zero_infinity):
    logits_t, logits_f = twin(6, 2, 4)
    tg = torch.tensor([[1, 1, 2, 3], [2, 3, 0, 0]])
    il, tl = [3, 6], [4, 2]  # the first target needs 5 frames (1 blank 1 2 3): infeasible in 3
    lt = torch.nn.functional.ctc_loss(logits_t.log_softmax(2), tg, il, tl, reduction="none",
                                      zero_infinity=zero_infinity)
    lf = fg.nn.functional.ctc_loss(logits_f.log_softmax(2), fg.tensor(_np(tg)), il, tl, reduction="none",
                                   zero_infinity=zero_infinity)
    close(lf, lt)
    if zero_infinity:
        lt.sum().backward()
        lf.sum().backward()
        close(logits_f.grad, logits_t.grad, 1e-9)


# ---- bicubic interpolate ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [dict(size=(9, 4)), dict(scale_factor=2.5), dict(scale_factor=(0.6, 1.7)),
                                dict(size=(9, 13), align_corners=True), dict(size=(1, 3), align_corners=True),
                                dict(scale_factor=1.5, recompute_scale_factor=True)])
def test_interpolate_bicubic(kw):
    xt, xf = twin(2, 3, 5, 7)
    yt = torch.nn.functional.interpolate(xt, mode="bicubic", **kw)
    yf = fg.nn.functional.interpolate(xf, mode="bicubic", **kw)
    close(yf, yt)
    w = torch.randn(yt.shape, dtype=D)
    (yt * w).sum().backward()
    (yf * fg.tensor(_np(w))).sum().backward()
    close(xf.grad, xt.grad)
    um_t = torch.nn.Upsample(scale_factor=2, mode="bicubic")
    um_f = fg.nn.Upsample(scale_factor=2, mode="bicubic")
    close(um_f(xf), um_t(xt))
    for lib in (torch, fg):
        with pytest.raises(NotImplementedError):
            lib.nn.functional.interpolate(lib.ones(1, 1, 4), size=3, mode="bicubic")


# ---- MultiLabelMarginLoss, NLLLoss2d, convert_conv*_weight_memory_format ------------------------------


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss(reduction):
    xt, xf = twin(4, 5)
    tg = torch.tensor([[3, 0, -1, 1, 2], [1, 1, 2, -1, 0], [-1, 2, 3, 4, 0], [0, 1, 2, 3, 4]])
    lt = torch.nn.MultiLabelMarginLoss(reduction=reduction)(xt, tg)
    lf = fg.nn.MultiLabelMarginLoss(reduction=reduction)(xf, fg.tensor(_np(tg)))
    close(lf, lt)
    lt.sum().backward()
    lf.sum().backward()
    close(xf.grad, xt.grad)
    x1 = torch.randn(5, dtype=D)
    close(fg.nn.functional.multilabel_margin_loss(fg.tensor(_np(x1)), fg.tensor(_np(tg[0]))),
          torch.nn.functional.multilabel_margin_loss(x1, tg[0]))
    for lib in (torch, fg):
        with pytest.raises(RuntimeError):
            lib.nn.functional.multilabel_margin_loss(lib.ones(2, 3), lib.zeros(2, 4, dtype=lib.int64))


def test_nll_loss2d_and_memory_format():
    xt, xf = twin(2, 3, 4, 4)
    tg = torch.randint(0, 3, (2, 4, 4))
    close(fg.nn.NLLLoss2d()(xf, fg.tensor(_np(tg))), torch.nn.NLLLoss2d()(xt, tg))
    assert issubclass(fg.nn.NLLLoss2d, fg.nn.NLLLoss)
    for lib in (torch, fg):
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.Sequential(lib.nn.Conv3d(3, 2, 1)))
        w = m[0].weight
        assert lib.nn.utils.convert_conv2d_weight_memory_format(m, lib.channels_last) is m
        assert lib.nn.utils.convert_conv3d_weight_memory_format(m, lib.channels_last_3d) is m
        assert m[0].weight is w
