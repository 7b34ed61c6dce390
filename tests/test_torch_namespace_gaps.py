"""The torch.* names the API census found missing, against torch: the ATen-signature forms of nn ops
(torch.conv3d, torch.batch_norm, the losses with an integer reduction, the dropouts, native_*, RNN cells,
grid_sampler), the *_copy functions, sym_*, asarray/frombuffer/empty_strided/cond, binomial/poisson
and the runtime facts (constants, typename, get_device, interop threads, warn_always, seed)."""
import math
import warnings

import numpy as np
import pytest
import torch

from conftest import fg

D = torch.float64


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def twin(*shape, positive=False):
    x = torch.randn(*shape, dtype=D)
    if positive:
        x = x.abs() + 0.1
    return x.clone().requires_grad_(True), fg.tensor(_np(x), requires_grad=True)


def check(name, tensors, *args, tol=1e-10, pick=None, **kw):
    """fg.name and torch.name on the same float64 inputs: values and the grads of a random-weighted sum."""
    ts, fs = zip(*tensors) if tensors else ((), ())
    yt = getattr(torch, name)(*ts, *args, **kw)
    yf = getattr(fg, name)(*fs, *[fg.tensor(_np(a)) if isinstance(a, torch.Tensor) else a for a in args], **kw)
    if pick is not None:
        yt, yf = yt[pick], yf[pick]
    close(yf, yt, tol)
    if yt.requires_grad:
        w = torch.randn(yt.shape, dtype=yt.dtype)
        (yt * w).sum().backward()
        (yf * fg.tensor(_np(w))).sum().backward()
        for t, f in tensors:
            if t.grad is not None:
                close(f.grad, t.grad, tol)
    return yt, yf


# ---- nn ops at the top level ---------------------------------------------------------------------------


def test_conv_forms():
    check("conv3d", [twin(2, 3, 5, 6, 5), twin(4, 3, 2, 3, 2), twin(4)], 1, 1)
    check("conv_transpose3d", [twin(2, 3, 3, 4, 3), twin(3, 2, 2, 2, 2), twin(2)], 2)
    for nd in (1, 2, 3):
        x, w, b = twin(2, 4, *(5,) * nd), twin(6, 2, *(3,) * nd), twin(6)
        check("convolution", [x, w, b], [1] * nd, [1] * nd, [1] * nd, False, [0] * nd, 2)
        x, w = twin(2, 4, *(4,) * nd), twin(4, 3, *(2,) * nd)
        check("convolution", [x, w], None, [2] * nd, [0] * nd, [1] * nd, True, [1] * nd, 1)


def test_pool_pad_shuffle_forms():
    check("max_pool3d", [twin(2, 3, 5, 6, 5)], 2)
    check("max_pool3d", [twin(2, 3, 5, 6, 5)], 3, 2, 1, 1, True)
    yt, yf = check("max_pool1d_with_indices", [twin(2, 3, 9)], 3, 2, pick=0)
    it, i_f = torch.max_pool1d_with_indices(torch.ones(1, 1, 1), 1), fg.max_pool1d_with_indices(fg.ones(1, 1, 1), 1)
    assert len(it) == len(i_f) == 2
    x = torch.randn(2, 3, 7, dtype=D)
    vt, it = torch.adaptive_max_pool1d(x, 3)
    vf, i_f = fg.adaptive_max_pool1d(fg.tensor(_np(x)), 3)
    close(vf, vt)
    assert (_np(i_f) == _np(it)).all()
    check("constant_pad_nd", [twin(2, 3, 4)], [1, 2, 0, 1], 0.5)
    check("constant_pad_nd", [twin(2, 3)], [1, 1])
    check("channel_shuffle", [twin(2, 6, 3)], 3)
    x = torch.randn(2, 6, 3, dtype=D)
    close(fg.native_channel_shuffle(fg.tensor(_np(x)), 2), torch.native_channel_shuffle(x, 2))
    check("pdist", [twin(5, 3)])
    check("pdist", [twin(5, 3)], 1.5)


def test_norm_forms():
    x, w, b = twin(4, 3, 5), twin(3), twin(3)
    rm_t, rv_t = torch.zeros(3, dtype=D), torch.ones(3, dtype=D)
    rm_f, rv_f = fg.zeros(3, dtype=fg.float64), fg.ones(3, dtype=fg.float64)
    yt = torch.batch_norm(x[0], w[0], b[0], rm_t, rv_t, True, 0.1, 1e-5, False)
    yf = fg.batch_norm(x[1], w[1], b[1], rm_f, rv_f, True, 0.1, 1e-5, False)
    close(yf, yt)
    close(rm_f, rm_t)
    close(rv_f, rv_t)
    yt = torch.instance_norm(x[0], w[0], b[0], None, None, True, 0.1, 1e-5, False)
    yf = fg.instance_norm(x[1], w[1], b[1], None, None, True, 0.1, 1e-5, False)
    close(yf, yt)
    for norm_shape in ([5], [3, 5]):
        x2 = twin(2, 3, 5)
        for i in range(3):
            check("native_layer_norm", [x2], norm_shape, None, None, 1e-5, pick=i)
    for training in (True, False):
        rm_t, rv_t = torch.zeros(3, dtype=D), torch.ones(3, dtype=D)
        rm_f, rv_f = fg.zeros(3, dtype=fg.float64), fg.ones(3, dtype=fg.float64)
        x3 = torch.randn(4, 3, 2, dtype=D)
        ot = torch.native_batch_norm(x3, None, None, rm_t, rv_t, training, 0.1, 1e-5)
        of = fg.native_batch_norm(fg.tensor(_np(x3)), None, None, rm_f, rv_f, training, 0.1, 1e-5)
        for a, c in zip(of, ot):
            assert tuple(a.shape) == tuple(c.shape)
            close(a, c)
        close(rm_f, rm_t)
    x4 = torch.randn(2, 4, 3, dtype=D)
    for a, c in zip(fg.native_group_norm(fg.tensor(_np(x4)), None, None, 2, 4, 3, 2, 1e-5),
                    torch.native_group_norm(x4, None, None, 2, 4, 3, 2, 1e-5)):
        assert tuple(a.shape) == tuple(c.shape)
        close(a, c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check("frobenius_norm", [twin(2, 3, 4)], [1, 2])
        check("frobenius_norm", [twin(2, 3, 4)], [0], True)
        check("nuclear_norm", [twin(3, 4)], tol=1e-8)
        check("nuclear_norm", [twin(2, 3, 4)], [1, 2], True, tol=1e-8)
    check("norm_except_dim", [twin(4, 3, 2)], 2, 0)


def test_dropout_forms():
    x = fg.ones(200, 50)
    for name in ("alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        out = getattr(fg, name)(x, 0.5, False)
        close(out, torch.ones(200, 50))
        assert tuple(getattr(fg, name)(x, 0.3, True).shape) == (200, 50)
    out = fg.feature_dropout(fg.ones(8, 100, 6), 0.5, True)
    per_channel = _np(out).reshape(8, 100, 6)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel == per_channel[:, :, :1]).all()  # one draw per (sample, channel)
    assert 0.3 < (per_channel[:, :, 0] == 0).mean() < 0.7
    y = fg.ones(4, 5)
    assert fg.feature_dropout_(y, 1.0, True) is y and (_np(y) == 0).all()
    z = fg.ones(3, 4)
    assert fg.alpha_dropout_(z, 0.5, False) is z
    out, mask = fg.native_dropout(fg.ones(1000), 0.25, True)
    assert mask.dtype == fg.bool and 0.65 < _np(mask).mean() < 0.85
    np.testing.assert_allclose(_np(out)[_np(mask)], 1 / 0.75)
    assert (_np(out)[~_np(mask)] == 0).all()
    out, mask = fg.native_dropout(fg.ones(5), 0.25, False)
    assert _np(mask).all() and (_np(out) == 1).all()
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
        fg.feature_dropout(fg.ones(2, 3), 1.5, True)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_loss_forms(reduction):
    x, t = twin(4, 3), twin(4, 3)
    check("binary_cross_entropy_with_logits", [x, (t[0].detach().sigmoid(), t[1].detach().sigmoid())],
          reduction=reduction)
    pw = torch.rand(3, dtype=D)
    yt = torch.binary_cross_entropy_with_logits(x[0], t[0].detach().sigmoid(), None, pw, reduction)
    yf = fg.binary_cross_entropy_with_logits(x[1], t[1].detach().sigmoid(), None, fg.tensor(_np(pw)), reduction)
    close(yf, yt)
    lp = torch.randn(4, 3, dtype=D).log_softmax(1)
    check("kl_div", [twin(4, 3), (lp, fg.tensor(_np(lp)))], reduction, log_target=True)
    sign = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=D)
    check("cosine_embedding_loss", [twin(4, 3), twin(4, 3), (sign, fg.tensor(_np(sign)))], 0.1, reduction)
    check("hinge_embedding_loss", [twin(4, 3), (sign[:3], fg.tensor(_np(sign[:3])))], 1.0, reduction)
    check("margin_ranking_loss", [twin(4), twin(4), (sign, fg.tensor(_np(sign)))], 0.2, reduction)
    check("poisson_nll_loss", [twin(4, 3), twin(4, 3, positive=True)], True, False, 1e-8, reduction)
    check("triplet_margin_loss", [twin(4, 3), twin(4, 3), twin(4, 3)], 1.0, 2, 1e-6, True, reduction)
    # (ctc_loss's gradient is taken through log_softmax, as torch's backward assumes normalised inputs)
    logits_t, logits_f = twin(6, 2, 4)
    targets = torch.tensor([[1, 2], [3, 1]])
    yt = torch.ctc_loss(logits_t.log_softmax(2), targets, [6, 5], [2, 1], 0, reduction)
    yf = fg.ctc_loss(logits_f.log_softmax(2), fg.tensor(_np(targets)), [6, 5], [2, 1], 0, reduction)
    close(yf, yt)
    yt.sum().backward()
    yf.sum().backward()
    close(logits_f.grad, logits_t.grad)
    for r in (3, -1):  # any other integer is no reduction, as torch's kernels
        close(fg.kl_div(fg.ones(2), fg.full((2,), 0.5), r), torch.kl_div(torch.ones(2), torch.full((2,), 0.5), r))


def test_embedding_renorm_and_grids():
    w = torch.randn(6, 3, dtype=D) * 3
    wf = fg.tensor(_np(w))
    idx = torch.tensor([0, 2, 2, 5])
    assert fg.embedding_renorm_(wf, fg.tensor(_np(idx)), 1.0, 2.0) is wf
    torch.embedding_renorm_(w, idx, 1.0, 2.0)
    close(wf, w, 1e-6)
    theta = twin(2, 2, 3)
    grid = check("affine_grid_generator", [theta], [2, 3, 4, 5], False)[0]
    x = twin(2, 3, 4, 5)
    g = (grid.detach(), fg.tensor(_np(grid)))
    for mode in (0, 1):
        for pad in (0, 1, 2):
            check("grid_sampler", [x, g], mode, pad, False)
    check("grid_sampler_2d", [x, g], 0, 0, True)


def test_rnn_cells():
    x, h, c = twin(3, 4), twin(3, 5), twin(3, 5)
    for name, gates in (("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3)):
        w_ih, w_hh, b_ih, b_hh = twin(gates * 5, 4), twin(gates * 5, 5), twin(gates * 5), twin(gates * 5)
        check(name, [x, h, w_ih, w_hh, b_ih, b_hh])
        check(name, [x, h, w_ih, w_hh])
    w_ih, w_hh, b_ih, b_hh = twin(20, 4), twin(20, 5), twin(20), twin(20)
    ht, ct = torch.lstm_cell(x[0], (h[0], c[0]), w_ih[0], w_hh[0], b_ih[0], b_hh[0])
    hf, cf = fg.lstm_cell(x[1], (h[1], c[1]), w_ih[1], w_hh[1], b_ih[1], b_hh[1])
    close(hf, ht)
    close(cf, ct)
    (ht.sum() + 2 * ct.sum()).backward()
    (hf.sum() + 2 * cf.sum()).backward()
    for a, b in (x, h, c, w_ih, w_hh, b_ih, b_hh):
        close(b.grad, a.grad)


def test_binomial_poisson():
    fg.manual_seed(3)
    counts = fg.full((20000,), 10.0)
    draws = fg.binomial(counts, fg.full((20000,), 0.3))
    assert draws.dtype == fg.float32 and abs(_np(draws).mean() - 3.0) < 0.1 and abs(_np(draws).var() - 2.1) < 0.2
    assert (_np(draws) == np.round(_np(draws))).all() and _np(draws).min() >= 0 and _np(draws).max() <= 10
    p = fg.poisson(fg.full((20000,), 4.0, dtype=fg.float64))
    assert p.dtype == fg.float64 and abs(_np(p).mean() - 4.0) < 0.1 and abs(_np(p).var() - 4.0) < 0.3
    assert (_np(fg.binomial(fg.tensor([0.0, 5.0]), fg.tensor([0.7, 1.0]))) == [0.0, 5.0]).all()
    fg.manual_seed(1)
    a = fg.poisson(fg.full((5,), 3.0))
    fg.manual_seed(1)
    assert (_np(fg.poisson(fg.full((5,), 3.0))) == _np(a)).all()
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count"):
        fg.binomial(fg.tensor([10, 5]), fg.tensor([0.5, 0.2]))
    with pytest.raises(ValueError):
        torch.binomial(torch.tensor([10, 5]), torch.tensor([0.5, 0.2]))


# ---- *_copy, sym_*, creation, control flow ----------------------------------------------------------------


@pytest.mark.parametrize("name,shape,args", [
    ("alias_copy", (2, 3), ()), ("diagonal_copy", (3, 4), (1,)),
    ("expand_copy", (1, 3), ([4, 3],)), ("permute_copy", (2, 3, 4), ([2, 0, 1],)), ("select_copy", (3, 4), (1, 2)),
    ("slice_copy", (6, 4), (0, 1, 5, 2)), ("squeeze_copy", (2, 1, 3), ()), ("squeeze_copy", (2, 1, 3), (1,)),
    ("t_copy", (3, 4), ()), ("transpose_copy", (2, 3, 4), (0, 2)), ("unfold_copy", (7, 2), (0, 3, 2)),
    ("unsqueeze_copy", (2, 3), (1,)), ("view_copy", (2, 6), ([3, 4],)), ("as_strided_copy", (3, 4), ([2, 2], [1, 4])),
])
def test_view_copies(name, shape, args):
    xt, xf = twin(*shape)
    yt, yf = check(name, [(xt, xf)], *args)
    assert yf.is_contiguous()
    with fg.no_grad():
        yf.mul_(0)  # the copy shares no memory with its input
    assert (_np(xf) == _np(xt)).all()


def test_split_unbind_copies():
    xf = fg.randn(2, 3, requires_grad=True)
    d = fg.detach_copy(xf)
    assert (_np(d) == _np(xf)).all()
    x = torch.randn(5, 4, dtype=D)
    for name, args in (("split_copy", (2,)), ("split_with_sizes_copy", ([1, 4],)), ("unbind_copy", (1,))):
        pt, pf = getattr(torch, name)(x, *args), getattr(fg, name)(fg.tensor(_np(x)), *args)
        assert len(pt) == len(pf)
        for a, b in zip(pf, pt):
            close(a, b)


def test_sym_functions():
    cases = [("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_int", (5,)), ("sym_float", (3,)), ("sym_not", (True,)),
             ("sym_max", (2, 3)), ("sym_max", (2.0, 3)), ("sym_min", (2.0, 3)), ("sym_min", (4, 3)),
             ("sym_ite", (True, 1, 2)), ("sym_ite", (False, 1, 2)), ("sym_sqrt", (4,)), ("sym_sum", ([1, 2, 3],)),
             ("sym_sum", ([],))]
    for name, args in cases:
        got, want = getattr(fg, name)(*args), getattr(torch, name)(*args)
        assert got == want and type(got) is type(want), (name, args, got, want)


def test_asarray_frombuffer_empty_strided():
    a = np.arange(6.0)
    t = fg.asarray(a)
    a[0] = 9
    assert _np(t)[0] == 9  # shares memory, as torch's
    t2 = fg.asarray(a, copy=True)
    a[1] = 7
    assert _np(t2)[1] == 1
    assert fg.asarray(a, dtype=fg.float32).dtype == fg.float32
    base = fg.ones(3)
    assert fg.asarray(base) is base and fg.asarray(base, copy=True) is not base
    assert fg.asarray(base, dtype=fg.float64).dtype == fg.float64
    with pytest.raises(ValueError):
        fg.asarray(base, dtype=fg.float64, copy=False)
    close(fg.asarray([[1, 2], [3, 4]]), torch.asarray([[1, 2], [3, 4]]))
    assert fg.asarray([1, 2]).dtype == fg.int64 and fg.asarray(3.5).dim() == 0
    assert fg.asarray([1.0], requires_grad=True).requires_grad
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    close(fg.frombuffer(buf, dtype=fg.int32), torch.frombuffer(bytearray(buf), dtype=torch.int32))
    close(fg.frombuffer(buf, dtype=fg.int32, count=2, offset=4), torch.frombuffer(bytearray(buf), dtype=torch.int32,
                                                                                count=2, offset=4))
    shared = fg.frombuffer(buf, dtype=fg.int32)
    buf[0] = 42
    assert _np(shared)[0] == 42
    with pytest.raises(ValueError):
        fg.frombuffer(bytearray(6), dtype=fg.int32)
    e = fg.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
    assert fg.empty_strided((2, 3), (3, 1), dtype=fg.float64).dtype == fg.float64
    assert tuple(fg.empty_strided((0, 3), (3, 1)).shape) == (0, 3)


def test_cond():
    x = fg.ones(3)
    for pred in (True, False, fg.tensor(True), fg.tensor([0])):
        want = torch.cond(torch.tensor(bool(pred)) if isinstance(pred, fg.Tensor) else pred,
                          lambda v: v + 1, lambda v: v - 1, (torch.ones(3),))
        close(fg.cond(pred, lambda v: v + 1, lambda v: v - 1, (x,)), want)
    with pytest.raises(RuntimeError):
        fg.cond(fg.tensor([True, False]), lambda v: v, lambda v: v, (x,))


def test_runtime_facts():
    assert fg.e == torch.e and fg.pi == torch.pi and fg.inf == torch.inf and math.isnan(fg.nan)
    assert fg.newaxis is None and torch.newaxis is None
    assert fg.has_lapack is True and all(isinstance(getattr(fg, n), bool) for n in
                                         ("has_mkl", "has_openmp", "has_spectral"))
    assert fg.typename(fg.randn(2)) == torch.typename(torch.randn(2)) == "torch.FloatTensor"
    assert fg.typename(fg.randn(2).double()) == "torch.DoubleTensor"
    assert fg.typename(3) == torch.typename(3) == "int"
    assert fg.typename(fg.nn.Linear(2, 2)).endswith("Linear")
    assert fg.get_device(fg.randn(2)) == torch.get_device(torch.randn(2)) == -1
    assert fg.is_storage(fg.randn(2)) is False
    assert fg.get_num_interop_threads() >= 1
    fg.init_num_threads()
    fg.set_warn_always(True)
    assert fg.is_warn_always_enabled()
    fg.set_warn_always(False)
    assert not fg.is_warn_always_enabled()
    fg.set_anomaly_enabled(True)
    assert fg.is_anomaly_enabled()
    fg.set_anomaly_enabled(False)
    assert not fg.is_anomaly_enabled()
    s = fg.seed()
    assert isinstance(s, int) and fg.initial_seed() == s


@pytest.mark.parametrize("shape,kw", [
    ((5,), {}), ((4, 6), {}), ((4, 6), dict(spacing=2.0)), ((4, 6), dict(spacing=[0.5, 3.0])),
    ((4, 6), dict(dim=1)), ((4, 6), dict(dim=[0], spacing=[2.0])), ((3, 4, 5), dict(dim=(0, 2), edge_order=2)),
    ((6,), dict(edge_order=2, spacing=1.5)),
])
def test_gradient(shape, kw):
    xt, xf = twin(*shape)
    gt, gf = torch.gradient(xt, **kw), fg.gradient(xf, **kw)
    assert isinstance(gf, tuple) and len(gf) == len(gt)
    for a, b in zip(gf, gt):
        close(a, b)
    w = [torch.randn(g.shape, dtype=D) for g in gt]
    sum((g * v).sum() for g, v in zip(gt, w)).backward()
    sum((g * fg.tensor(_np(v))).sum() for g, v in zip(gf, w)).backward()
    close(xf.grad, xt.grad)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_coordinates(edge_order):
    xt, xf = twin(5, 4)
    c0, c1 = torch.tensor([0.0, 1.0, 3.0, 4.5, 7.0], dtype=D), torch.tensor([0.0, 0.5, 2.0, 2.5], dtype=D)
    gt = torch.gradient(xt, spacing=(c0, c1), edge_order=edge_order)
    gf = fg.gradient(xf, spacing=(fg.tensor(_np(c0)), fg.tensor(_np(c1))), edge_order=edge_order)
    for a, b in zip(gf, gt):
        close(a, b)
    (gt[0].sum() + 2 * gt[1].sum()).backward()
    (gf[0].sum() + 2 * gf[1].sum()).backward()
    close(xf.grad, xt.grad)


def test_gradient_dtypes_and_errors():
    got, want = fg.gradient(fg.tensor([1, 4, 9, 16])), torch.gradient(torch.tensor([1, 4, 9, 16]))
    assert str(got[0].dtype) == str(want[0].dtype)
    close(got[0], want[0])
    for kw, x in ((dict(spacing=[1.0, 2.0]), [1.0, 4.0, 9.0]), (dict(edge_order=2), [1.0, 4.0]), ({}, [1.0]),
                  (dict(edge_order=3), [1.0, 2.0, 3.0, 4.0])):
        with pytest.raises(RuntimeError) as want:
            torch.gradient(torch.tensor(x), **kw)
        with pytest.raises(RuntimeError) as got:
            fg.gradient(fg.tensor(x), **kw)
        assert str(got.value)[:40] == str(want.value)[:40]
    with pytest.raises(IndexError):
        fg.gradient(fg.tensor([1.0, 2.0]), dim=3)


def test_default_generator_and_thread_safe_generator():
    g = fg.default_generator
    assert isinstance(g, fg.Generator) and g.device == fg.device("cpu")
    g.manual_seed(5)
    a = fg.rand(3)
    fg.manual_seed(5)
    assert (_np(fg.rand(3)) == _np(a)).all() and g.initial_seed() == fg.initial_seed() == 5
    state = g.get_state()
    x = fg.rand(2)
    g.set_state(state)
    assert (_np(fg.rand(2)) == _np(x)).all()
    assert sorted(_np(fg.randperm(6, generator=g)).tolist()) == list(range(6))
    assert fg.thread_safe_generator() is None and torch.thread_safe_generator() is None


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [(1, False, False, True), (2, True, True, True),
                                                                  (2, False, False, False)])
def test_functional_rnns(kind, layers, bidirectional, batch_first, bias):
    mod = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}.get(kind, torch.nn.RNN)
    extra = {} if kind in ("lstm", "gru") else {"nonlinearity": kind.split("_")[1]}
    m = mod(3, 4, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional, **extra).double()
    params_t = [p.detach().clone().requires_grad_(True) for p in m._flat_weights]
    params_f = [fg.tensor(_np(p), requires_grad=True) for p in params_t]
    dirs = 2 if bidirectional else 1
    xt, xf = twin(*((2, 5, 3) if batch_first else (5, 2, 3)))
    ht, hf = twin(layers * dirs, 2, 4)
    ct, cf = twin(layers * dirs, 2, 4)
    args = (bias, layers, 0.0, False, bidirectional, batch_first)
    if kind == "lstm":
        out_t = torch.lstm(xt, (ht, ct), params_t, *args)
        out_f = fg.lstm(xf, (hf, cf), params_f, *args)
    else:
        out_t = getattr(torch, kind)(xt, ht, params_t, *args)
        out_f = getattr(fg, kind)(xf, hf, params_f, *args)
    assert len(out_t) == len(out_f)
    for a, b in zip(out_f, out_t):
        close(a, b)
    ws = [torch.randn(o.shape, dtype=D) for o in out_t]
    sum((o * w).sum() for o, w in zip(out_t, ws)).backward()
    sum((o * fg.tensor(_np(w))).sum() for o, w in zip(out_f, ws)).backward()
    for a, b in [(xt, xf), (ht, hf)] + list(zip(params_t, params_f)):
        close(b.grad, a.grad)
    if kind == "lstm":
        close(cf.grad, ct.grad)


@pytest.mark.parametrize("shape", [(5, 3), (2, 5, 3), (4, 4)])
def test_householder_qr(shape):
    A = torch.randn(*shape, dtype=D)
    a, tau = torch.geqrf(A)
    res = fg.geqrf(fg.tensor(_np(A)))
    close(res.a, a)
    close(res.tau, tau)
    close(fg.tensor(_np(A)).geqrf()[0], a)
    at, tt = a.clone().requires_grad_(True), tau.clone().requires_grad_(True)
    af, tf = fg.tensor(_np(a), requires_grad=True), fg.tensor(_np(tau), requires_grad=True)
    check("orgqr", [(at, af), (tt, tf)])
    close(af.orgqr(tf), torch.linalg.householder_product(a, tau))
    for left in (True, False):
        for transpose in (True, False):
            c_shape = shape[:-2] + ((shape[-2], 2) if left else (2, shape[-2]))
            at, af = a.clone().requires_grad_(True), fg.tensor(_np(a), requires_grad=True)
            tt, tf = tau.clone().requires_grad_(True), fg.tensor(_np(tau), requires_grad=True)
            check("ormqr", [(at, af), (tt, tf), twin(*c_shape)], left, transpose)


def test_householder_errors():
    with pytest.raises(RuntimeError):
        fg.geqrf(fg.ones(3, dtype=fg.float64))
    for f in (lambda lib: lib.orgqr(lib.randn(2, 3), lib.randn(2)), lambda lib: lib.orgqr(lib.randn(4, 3), lib.randn(4)),
              lambda lib: lib.ormqr(lib.randn(4, 3), lib.randn(4), lib.randn(4, 2)),
              lambda lib: lib.ormqr(lib.randn(4, 3), lib.randn(3), lib.randn(5, 2))):
        with pytest.raises(RuntimeError) as want:
            f(torch)
        with pytest.raises(RuntimeError) as got:
            f(fg)
        assert str(got.value) == str(want.value)


def test_is_inference_mode_enabled():
    for lib in (torch, fg):
        assert lib.is_inference_mode_enabled() is False
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled() is True and not lib.is_grad_enabled()
            with lib.inference_mode(False):
                assert lib.is_inference_mode_enabled() is False and lib.is_grad_enabled()
            assert lib.is_inference_mode_enabled() is True
        assert lib.is_inference_mode_enabled() is False

        @lib.inference_mode()
        def inside():
            return lib.is_inference_mode_enabled()

        assert inside() is True and lib.is_inference_mode_enabled() is False


def test_from_file(tmp_path):
    import gc

    path = str(tmp_path / "data.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    close(fg.from_file(path, size=6, dtype=fg.float32), torch.from_file(path, size=6, dtype=torch.float32))
    close(fg.from_file(path, size=4), torch.from_file(path, size=4))
    assert tuple(fg.from_file(path).shape) == (0,)
    with pytest.raises(RuntimeError) as want:
        torch.from_file(path, size=10)
    with pytest.raises(RuntimeError) as got:
        fg.from_file(path, size=10)
    assert str(got.value) == str(want.value)
    private = fg.from_file(path, shared=False, size=6)
    private[1] = 7
    assert np.fromfile(path, dtype=np.float32)[1] == 1  # copy-on-write: the file keeps its value
    shared = fg.from_file(path, shared=True, size=6)
    shared[0] = 42
    del shared
    gc.collect()
    assert np.fromfile(path, dtype=np.float32)[0] == 42
    new = str(tmp_path / "new.bin")
    t = fg.from_file(new, shared=True, size=3, dtype=fg.float64)
    t.fill_(2.5)
    del t
    gc.collect()
    assert np.fromfile(new).tolist() == [2.5, 2.5, 2.5]
