"""The nn / nn.functional names the API census found missing, against torch (float64 unless a test is about
dtypes): max pools returning indices (adaptive 1-d/2-d/3-d, max_pool3d), fractional max pools,
conv_tbc, linear_cross_entropy and its module/options, the functional-code helpers (boolean_dispatch,
BroadcastingList, the __torch_function__ checks), SyncBatchNorm (one process here; several under MPI),
CrossMapLRN2d, AdaptiveLogSoftmaxWithLoss, Container, factory_kwargs and DataParallel."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

D = torch.float64
TF, FF = torch.nn.functional, fg.nn.functional


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def twin(*shape, dtype=D):
    x = torch.randn(*shape, dtype=dtype)
    return x.clone().requires_grad_(True), fg.tensor(_np(x), requires_grad=True)


def same_grads(yt, yf, pairs, tol=1e-10):
    w = torch.randn(yt.shape, dtype=yt.dtype)
    (yt * w).sum().backward()
    (yf * fg.tensor(_np(w))).sum().backward()
    for a, b in pairs:
        close(b.grad, a.grad, tol)


def copy_params(src, dst):
    dst.load_state_dict({k: fg.tensor(_np(v)) for k, v in src.state_dict().items()})


# ---- max pools with indices ----------------------------------------------------------------------------


@pytest.mark.parametrize("name,shape,size", [
    ("adaptive_max_pool1d", (2, 3, 7), 3), ("adaptive_max_pool1d", (3, 9), 4),
    ("adaptive_max_pool2d", (2, 3, 7, 5), (3, 4)), ("adaptive_max_pool2d", (3, 7, 5), (None, 2)),
    ("adaptive_max_pool2d", (1, 2, 4, 4), 6),
    ("adaptive_max_pool3d", (2, 3, 5, 7, 5), (2, 3, 4)), ("adaptive_max_pool3d", (2, 5, 4, 3), 2),
])
def test_adaptive_max_pool_indices(name, shape, size):
    xt, xf = twin(*shape)
    yt, it = getattr(TF, name)(xt, size, return_indices=True)
    yf, i_f = getattr(FF, name)(xf, size, return_indices=True)
    close(yf, yt)
    assert i_f.dtype == fg.int64 and (_np(i_f) == _np(it)).all()
    same_grads(yt, yf, [(xt, xf)])
    if name != "adaptive_max_pool3d":
        yt2, it2 = getattr(TF, name + "_with_indices")(xt.detach(), size)
        yf2, if2 = getattr(FF, name + "_with_indices")(xf.detach(), size)
        close(yf2, yt2)
        assert (_np(if2) == _np(it2)).all()


def test_adaptive_max_pool_ties_and_nan():
    x = torch.tensor([[[1.0, 3.0, 3.0, 2.0, float("nan"), 1.0, float("nan"), 0.0]]], dtype=D)
    for size in (1, 2, 3, 5):
        yt, it = TF.adaptive_max_pool1d(x, size, True)
        yf, i_f = FF.adaptive_max_pool1d(fg.tensor(_np(x)), size, True)
        np.testing.assert_array_equal(_np(yf), _np(yt))
        np.testing.assert_array_equal(_np(i_f), _np(it))
    x = torch.full((1, 1, 3, 3), float("-inf"), dtype=D)
    assert (_np(FF.adaptive_max_pool2d(fg.tensor(_np(x)), 2, True)[1]) == _np(TF.adaptive_max_pool2d(x, 2, True)[1])).all()


@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 5, 7, 6), dict(kernel_size=3, stride=2, padding=1)),
    ((3, 5, 7, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((1, 2, 5, 7, 6), dict(kernel_size=(2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), dilation=(2, 1, 2))),
])
def test_max_pool3d_indices(shape, kw):
    xt, xf = twin(*shape)
    yt, it = TF.max_pool3d(xt, return_indices=True, **kw)
    yf, i_f = FF.max_pool3d(xf, return_indices=True, **kw)
    close(yf, yt)
    assert (_np(i_f) == _np(it)).all()
    same_grads(yt, yf, [(xt, xf)])
    mt, mf = torch.nn.MaxPool3d(return_indices=True, **kw), fg.nn.MaxPool3d(return_indices=True, **kw)
    assert (_np(mf(xf)[1]) == _np(mt(xt)[1])).all()
    if "dilation" in kw:
        return
    # the indices unpool back (max_unpool3d), as torch's
    close(FF.max_unpool3d(yf, i_f, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), shape[-3:]),
          TF.max_unpool3d(yt, it, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), shape[-3:]))


# ---- fractional max pools ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("nd,shape,k,out", [
    (2, (2, 3, 9, 11), (2, 3), (5, 6)), (2, (3, 8, 8), 2, (4, 5)), (2, (1, 1, 20, 20), 3, (7, 9)),
    (2, (2, 2, 7, 7), 3, (5, 5)),
    (3, (2, 2, 7, 8, 9), (2, 2, 3), (4, 5, 3)), (3, (2, 7, 7, 7), 3, (3, 4, 4)),
])
def test_fractional_max_pool_given_samples(dtype, nd, shape, k, out):
    xt, xf = twin(*shape, dtype=dtype)
    batch = 1 if len(shape) == nd + 1 else shape[0]
    samples = torch.rand(batch, shape[-nd - 1], nd, dtype=dtype)
    fn = "fractional_max_pool2d" if nd == 2 else "fractional_max_pool3d"
    yt, it = getattr(TF, fn)(xt, k, output_size=out, return_indices=True, _random_samples=samples)
    yf, i_f = getattr(FF, fn)(xf, k, output_size=out, return_indices=True,
                              _random_samples=fg.tensor(_np(samples)))
    assert str(yf.dtype) == str(yt.dtype) == str(dtype)
    np.testing.assert_array_equal(_np(i_f), _np(it))
    close(yf, yt, 1e-6)
    same_grads(yt, yf, [(xt, xf)], 1e-6)
    yt2, it2 = getattr(TF, fn + "_with_indices")(xt.detach(), k, out, None, False, samples)
    yf2, if2 = getattr(FF, fn + "_with_indices")(xf.detach(), k, out, None, False, fg.tensor(_np(samples)))
    np.testing.assert_array_equal(_np(if2), _np(it2))


def test_fractional_max_pool_random_and_ratio():
    x = fg.randn(2, 3, 10, 12)
    y, idx = FF.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5), return_indices=True)
    assert tuple(y.shape) == tuple(idx.shape) == (2, 3, 5, 6)
    # every value is the input at its index, and the maximum of the 2x2 window starting near it
    flat = x.reshape(2, 3, -1)
    close(y.reshape(2, 3, -1), flat.gather(2, idx.reshape(2, 3, -1)))
    y3 = FF.fractional_max_pool3d(fg.randn(1, 2, 6, 6, 6), 2, output_ratio=(0.5, 0.5, 0.5))
    assert tuple(y3.shape) == (1, 2, 3, 3, 3)
    m = fg.nn.FractionalMaxPool2d(3, output_size=(4, 5))
    assert tuple(m(fg.randn(2, 3, 10, 12)).shape) == (2, 3, 4, 5)
    assert repr(m) == repr(torch.nn.FractionalMaxPool2d(3, output_size=(4, 5)))
    s = torch.rand(2, 3, 3, dtype=D)
    mt = torch.nn.FractionalMaxPool3d(2, output_size=3, return_indices=True, _random_samples=s)
    mf = fg.nn.FractionalMaxPool3d(2, output_size=3, return_indices=True, _random_samples=fg.tensor(_np(s)))
    xt, xf = twin(2, 3, 6, 7, 8)
    np.testing.assert_array_equal(_np(mf(xf)[1]), _np(mt(xt)[1]))
    assert "_random_samples" in dict(mf.named_buffers())


def test_fractional_max_pool_errors():
    x = fg.randn(1, 7, 7)
    for ours, ref in [
        (lambda: FF.fractional_max_pool2d(x, 2), lambda: TF.fractional_max_pool2d(torch.randn(1, 7, 7), 2)),
        (lambda: FF.fractional_max_pool2d(x, 4, output_size=5),
         lambda: TF.fractional_max_pool2d(torch.randn(1, 7, 7), 4, output_size=5)),
        (lambda: FF.fractional_max_pool3d(fg.randn(1, 7, 7, 7), 3, output_size=5),
         lambda: TF.fractional_max_pool3d(torch.randn(1, 7, 7, 7), 3, output_size=5)),
        (lambda: FF.fractional_max_pool2d(x, 0, output_size=3),
         lambda: TF.fractional_max_pool2d(torch.randn(1, 7, 7), 0, output_size=3)),
        (lambda: FF.fractional_max_pool2d(fg.randn(7, 7), 2, output_size=3),
         lambda: TF.fractional_max_pool2d(torch.randn(7, 7), 2, output_size=3)),
        (lambda: FF.fractional_max_pool2d(fg.randn(2, 1, 7, 7), 2, output_size=3, _random_samples=fg.rand(1, 1, 2)),
         lambda: TF.fractional_max_pool2d(torch.randn(2, 1, 7, 7), 2, output_size=3,
                                          _random_samples=torch.rand(1, 1, 2))),
        (lambda: FF.fractional_max_pool2d(fg.ones(1, 7, 7, dtype=fg.int64), 2, output_size=3),
         lambda: TF.fractional_max_pool2d(torch.ones(1, 7, 7, dtype=torch.int64), 2, output_size=3)),
        (lambda: fg.nn.FractionalMaxPool2d(2), lambda: torch.nn.FractionalMaxPool2d(2)),
        (lambda: fg.nn.FractionalMaxPool2d(2, output_ratio=1.5), lambda: torch.nn.FractionalMaxPool2d(2, output_ratio=1.5)),
    ]:
        with pytest.raises(Exception) as want:
            ref()
        with pytest.raises(want.type) as got:
            ours()
        assert str(got.value).split(":")[0] == str(want.value).split(":")[0]
    assert tuple(FF.fractional_max_pool2d(fg.randn(0, 1, 7, 7), 2, output_size=3).shape) == (0, 1, 3, 3)
    assert tuple(FF.fractional_max_pool2d(fg.randn(1, 7, 7), 2, output_size=(0, 2)).shape) == (1, 0, 2)


# ---- conv_tbc, linear_cross_entropy ------------------------------------------------------------------


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc(pad):
    xt, xf = twin(5, 2, 3)
    wt, wf = twin(3, 3, 4)
    bt, bf = twin(4)
    yt, yf = TF.conv_tbc(xt, wt, bt, pad), FF.conv_tbc(xf, wf, bf, pad)
    close(yf, yt)
    same_grads(yt, yf, [(xt, xf), (wt, wf), (bt, bf)])
    close(fg.conv_tbc(xf, wf, bf, pad=pad), torch.conv_tbc(xt, wt, bt, pad=pad))


def test_conv_tbc_errors():
    args = [((5, 2), (3, 3, 4), (4,)), ((5, 2, 3), (3, 4), (4,)), ((5, 2, 3), (3, 3, 4), (4, 1)),
            ((5, 2, 3), (3, 2, 4), (4,)), ((5, 2, 3), (3, 3, 4), (5,))]
    for a, b, c in args:
        with pytest.raises(RuntimeError) as want:
            torch.conv_tbc(torch.randn(*a), torch.randn(*b), torch.randn(*c))
        with pytest.raises(RuntimeError, match=re.escape(str(want.value)[:30])):
            FF.conv_tbc(fg.randn(*a), fg.randn(*b), fg.randn(*c))
    with pytest.raises(TypeError):
        FF.conv_tbc(fg.randn(5, 2, 3), fg.randn(3, 3, 4), None)
    assert tuple(FF.conv_tbc(fg.randn(2, 2, 3), fg.randn(3, 3, 4), fg.randn(4)).shape) == (0, 2, 4)


@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(label_smoothing=0.1),
                                dict(ignore_index=1, reduction="none"), dict(weight=True)])
def test_linear_cross_entropy(kw):
    xt, xf = twin(6, 4)
    wt, wf = twin(5, 4)
    bt, bf = twin(5)
    target = torch.tensor([1, 0, 4, 1, 3, 2])
    if kw.get("weight"):
        cw = torch.rand(5, dtype=D)
        kw = dict(weight=cw)
        kf = dict(weight=fg.tensor(_np(cw)))
    else:
        kf = kw
    yt = TF.linear_cross_entropy(xt, wt, target, linear_bias=bt, **kw)
    yf = FF.linear_cross_entropy(xf, wf, fg.tensor(_np(target)), linear_bias=bf, **kf)
    close(yf, yt)
    same_grads(yt, yf, [(xt, xf), (wt, wf), (bt, bf)])


def test_linear_cross_entropy_kdim_options_module():
    x = torch.randn(2, 4, dtype=D)
    w = torch.randn(5, 3, 4, dtype=D)
    t = torch.randint(0, 5, (2, 3))
    close(FF.linear_cross_entropy(fg.tensor(_np(x)), fg.tensor(_np(w)), fg.tensor(_np(t))),
          TF.linear_cross_entropy(x, w, t))
    opts = fg.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    x2, w2, t2 = torch.randn(6, 4, dtype=D), torch.randn(5, 4, dtype=D), torch.randint(0, 5, (6,))
    close(FF.linear_cross_entropy(fg.tensor(_np(x2)), fg.tensor(_np(w2)), fg.tensor(_np(t2)), options=opts),
          TF.linear_cross_entropy(x2, w2, t2, options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2)))
    for bad in (dict(acc_policy="fast"), dict(chunking_method="rows"), dict(batch_chunk_size=0)):
        with pytest.raises(ValueError):
            torch.nn.LinearCrossEntropyOptions(**bad)
        with pytest.raises(ValueError):
            fg.nn.LinearCrossEntropyOptions(**bad)
    x3, w3 = torch.randn(3, 4, dtype=D), torch.randn(5, 4, dtype=D)
    for t3 in ([1, -100, 2], [1, 2, 3]):  # ignore_index=None: cross_entropy's default -100, as torch
        close(FF.linear_cross_entropy(fg.tensor(_np(x3)), fg.tensor(_np(w3)), fg.tensor(t3)),
              TF.linear_cross_entropy(x3, w3, torch.tensor(t3)))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        FF.linear_cross_entropy(fg.tensor(_np(x3)), fg.tensor(_np(w3)), fg.tensor([1, -1, 2]))
    mt = torch.nn.LinearCrossEntropyLoss(4, 5, bias=True).double()
    mf = fg.nn.LinearCrossEntropyLoss(4, 5, bias=True).double()
    copy_params(mt, mf)
    assert repr(mf) == repr(mt)
    xt, xf = twin(3, 4)
    t = torch.tensor([1, 2, 3])
    yt, yf = mt(xt, t), mf(xf, fg.tensor(_np(t)))
    close(yf, yt)
    yt.backward()
    yf.backward()
    close(xf.grad, xt.grad)
    close(mf.linear.weight.grad, mt.linear.weight.grad)
    with pytest.raises(RuntimeError):
        fg.nn.LinearCrossEntropyLoss(4, 5, label_smoothing=2.0)


# ---- helpers for functional code ---------------------------------------------------------------------


def test_functional_helpers():
    assert FF.Tensor is fg.Tensor
    assert FF.BroadcastingList2[int] is None and FF.BroadcastingList1[float] is None
    FF.assert_int_or_pair(3, "k", "{} bad")
    FF.assert_int_or_pair((1, 2), "k", "{} bad")
    with pytest.raises(AssertionError, match="k bad"):
        FF.assert_int_or_pair((1, 2, 3), "k", "{} bad")

    def with_flag(x, flag=False):
        """doc"""
        return ("true", x)

    def without_flag(x, flag=False):
        return ("false", x)

    fn = FF.boolean_dispatch("flag", 1, False, with_flag, without_flag, "mod", "fn")
    assert fn(1) == ("false", 1) and fn(1, True) == ("true", 1) and fn(1, flag=True) == ("true", 1)
    assert fn.__name__ == "fn" and fn.__module__ == "mod" and fn.__doc__ == "doc" and without_flag.__doc__ == "doc"
    with pytest.raises(RuntimeError, match="only one function can have a docstring"):
        FF.boolean_dispatch("flag", 1, False, with_flag, without_flag, None, None)

    class Like:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "handled"

    t = fg.ones(2)
    assert not FF.has_torch_function_unary(t) and FF.has_torch_function_unary(Like())
    assert not FF.has_torch_function_variadic(t, t) and FF.has_torch_function_variadic(t, Like())
    assert FF.has_torch_function((t, Like())) and not FF.has_torch_function((t,))
    assert FF.handle_torch_function(FF.relu, (Like(),), Like()) == "handled"


# ---- nn modules --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,momentum", [((4, 3), 0.1), ((4, 3, 5), None), ((2, 3, 2, 4), 0.3)])
def test_sync_batch_norm_one_process(shape, momentum):
    mt = torch.nn.SyncBatchNorm(3, momentum=momentum).double()
    mf = fg.nn.SyncBatchNorm(3, momentum=momentum).double()
    xt, xf = twin(*shape)
    for _ in range(2):
        yt, yf = mt(xt), mf(xf)
    close(yf, yt)
    same_grads(yt, yf, [(xt, xf), (mt.weight, mf.weight), (mt.bias, mf.bias)])
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        close(getattr(mf, name), getattr(mt, name))
    mt.eval()
    mf.eval()
    close(mf(xf), mt(xt))
    assert repr(mf) == repr(mt)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        mf(fg.randn(3))


def test_convert_sync_batchnorm():
    net = fg.nn.Sequential(fg.nn.Conv2d(3, 4, 3), fg.nn.BatchNorm2d(4), fg.nn.Sequential(fg.nn.BatchNorm1d(4)))
    bn = net[1]
    out = fg.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net and type(net[1]) is fg.nn.SyncBatchNorm and type(net[2][0]) is fg.nn.SyncBatchNorm
    assert net[1].weight is bn.weight and net[1].running_mean is bn.running_mean
    single = fg.nn.SyncBatchNorm.convert_sync_batchnorm(fg.nn.BatchNorm1d(5, affine=False))
    assert type(single) is fg.nn.SyncBatchNorm and single.weight is None


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's MPI process group (torch's SyncBatchNorm wants a GPU)")
def test_sync_batch_norm_across_processes():
    """tests/distributed/sync_batch_norm.py under `mpirun -n 2`: each rank holds half of one batch; values,
    running statistics and gradients are torch's BatchNorm over the whole batch."""
    import ferrograd.distributed as dist
    from test_distributed import MPIRUN, launch, result

    if not (dist.is_available() and MPIRUN):
        pytest.skip("needs mpi4py and mpirun (pip install -r requirements-test.txt)")
    code, out, _ = launch("sync_batch_norm.py", n=2)
    assert code == 0, out
    assert result(out) == {"world": 2, "checked": 3}


@pytest.mark.parametrize("size,channels", [(1, 3), (2, 8), (3, 3), (5, 8), (6, 4)])
def test_cross_map_lrn2d(size, channels):
    mt = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
    mf = fg.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
    xt, xf = twin(2, channels, 3, 4)
    close(mf(xf), mt(xt))
    assert repr(mf) == repr(mt)
    # the gradient is the derivative of these values: torch's autograd through the same window sums
    half = int((size - 1) / 2 + 1)
    window = torch.zeros(channels, channels, dtype=D)
    for i in range(channels):
        window[i, max(0, i - half + 1):min(i + half - 1, channels - 1) + 1] = 1
        window[i, 0] = 1
    x2 = xt.detach().clone().requires_grad_(True)
    ref = x2 * (1.5 + 0.5 / size * torch.einsum("cj,njhw->nchw", window, x2 * x2)).pow(-0.75)
    close(ref, mt(xt))  # (the reference composition is torch's forward)
    if not AGAINST_TORCH:  # torch's own hand-written backward is not the derivative of its forward
        same_grads(ref, mf(xf), [(x2, xf)])
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        mf(fg.randn(2, 3, 4))


def test_adaptive_log_softmax_with_loss():
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=True).double()
    mf = fg.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 10, 15], div_value=2.0, head_bias=True).double()
    assert repr(mf) == repr(mt)
    copy_params(mt, mf)
    xt, xf = twin(12, 16)
    t = torch.tensor([0, 3, 4, 9, 10, 14, 15, 19, 1, 5, 12, 18])
    ot, of = mt(xt, t), mf(xf, fg.tensor(_np(t)))
    close(of.output, ot.output)
    close(of.loss, ot.loss)
    ot.loss.backward()
    of.loss.backward()
    close(xf.grad, xt.grad)
    for (n, p), (n2, q) in zip(mt.named_parameters(), mf.named_parameters()):
        assert n == n2
        close(q.grad, p.grad)
    close(mf.log_prob(xf), mt.log_prob(xt))
    np.testing.assert_array_equal(_np(mf.predict(xf)), _np(mt.predict(xt)))
    close(mf(xf[0], fg.tensor(3)).output, mt(xt[0], torch.tensor(3)).output)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        mf(xf, fg.tensor([25] * 12))
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        fg.nn.AdaptiveLogSoftmaxWithLoss(16, 20, [4, 25])
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        mf(xf, fg.zeros(2, 2, dtype=fg.int64))


def test_container_factory_kwargs_data_parallel():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c = fg.nn.Container(a=fg.nn.Linear(2, 3), b=fg.nn.ReLU())
    assert any(issubclass(w.category, FutureWarning) for w in caught)
    assert [n for n, _ in c.named_children()] == ["a", "b"]
    kw = dict(device="cpu", dtype=fg.float64)
    assert fg.nn.factory_kwargs(kw) == torch.nn.factory_kwargs(dict(device="cpu", dtype=torch.float64)) | {
        "dtype": fg.float64}
    assert fg.nn.factory_kwargs(None) == {} and fg.nn.factory_kwargs({"factory_kwargs": {"device": "cpu"}}) == {
        "device": "cpu"}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        fg.nn.factory_kwargs({"bias": True})
    with pytest.raises(TypeError, match="specified twice"):
        fg.nn.factory_kwargs({"dtype": fg.float32, "factory_kwargs": {"dtype": fg.float64}})
    lin = fg.nn.Linear(3, 2)
    x = fg.randn(4, 3)
    want = lin(x)
    dp = fg.nn.DataParallel(lin)  # (with a GPU the module moves there: test_on_cuda_device)
    close(dp(x).cpu(), want)
    assert dp.module is lin and list(dp.state_dict()) == ["module.weight", "module.bias"]
    if not fg.cuda.is_available():
        assert dp.device_ids == []


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [True, False])
def test_grid_sample_volumetric(mode, padding_mode, align):
    xt, xf = twin(2, 3, 4, 5, 6)
    g = torch.rand(2, 3, 4, 2, 3, dtype=D) * 2.4 - 1.2  # some points outside [-1, 1]
    gt, gf = g.clone().requires_grad_(True), fg.tensor(_np(g), requires_grad=True)
    yt = TF.grid_sample(xt, gt, mode, padding_mode, align)
    yf = FF.grid_sample(xf, gf, mode, padding_mode, align)
    close(yf, yt)
    same_grads(yt, yf, [(xt, xf), (gt, gf)])
    if mode == "bilinear" and padding_mode == "zeros":
        close(fg.grid_sampler_3d(xf, gf, 0, 0, align), torch.grid_sampler_3d(xt, gt, 0, 0, align))


def test_grid_sample_volumetric_errors():
    for lib in (torch, fg):
        x = lib.zeros(1, 1, 2, 2, 2)
        with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
            lib.nn.functional.grid_sample(x, lib.zeros(1, 2, 2, 2, 2), align_corners=False)


@pytest.mark.skipif(AGAINST_TORCH or not fg.cuda.is_available(),
                    reason="ferrograd's CUDA device (a GPU, or FERROGRAD_FAKE_CUDA=1's host stand-in)")
def test_on_cuda_device():
    """The new layers on the CUDA device: the CPU path's values and gradients, results on the device."""
    x = torch.randn(2, 3, 8, 9, dtype=D)
    samples = torch.rand(2, 3, 2, dtype=D)
    grid = torch.rand(2, 2, 3, 4, 3, dtype=D) * 2 - 1
    outs = {}
    for dev in ("cpu", "cuda"):
        xf = fg.tensor(_np(x), requires_grad=True)
        xd = xf.to(dev)
        s = fg.tensor(_np(samples)).to(dev)
        y1, i1 = FF.fractional_max_pool2d(xd, 2, output_size=(4, 5), return_indices=True, _random_samples=s)
        y2, i2 = FF.adaptive_max_pool2d(xd, (3, 4), return_indices=True)
        y3 = FF.grid_sample(xd.unsqueeze(2).expand(2, 3, 2, 8, 9),
                            fg.tensor(_np(grid)).to(dev), align_corners=False)
        lrn = fg.nn.CrossMapLRN2d(3).to(dev)(xd)
        for y in (y1, i1, y2, i2, y3, lrn):
            assert y.device.type == dev
        (y1.sum() + y2.sum() + y3.sum() + lrn.sum()).backward()
        outs[dev] = [_np(t.cpu()) for t in (y1, i1, y2, i2, y3, lrn, xf.grad)]
    for a, b in zip(outs["cpu"], outs["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-10)
    lin = fg.nn.Linear(3, 2).double()
    dp = fg.nn.DataParallel(lin)
    assert dp.device_ids and lin.weight.device.type == "cuda"
    inp = fg.tensor(_np(torch.randn(4, 3, dtype=D)))
    out = dp(inp)  # the input is moved to the module's device
    assert out.device.type == "cuda"
    close(out.cpu(), lin.cpu()(inp))
