"""nn: functional forms, layers and losses against torch (forward, gradients, second-order gradients
through `parity.check_op`; modules with torch's parameters copied in), the Module API (registration,
traversal, state_dict, hooks, repr), Parameter, nn.init distributions and nn.utils."""
import math
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

from conftest import fg
from parity import In, assert_tensor_close, check_op, same


def F(L):
    return L.nn.functional


def V(a, dtype="float64", grad=None):
    return In(value=np.asarray(a), dtype=dtype, grad=grad)


def idx(a):
    """An int64 input (class indices, embedding indices)."""
    return In(value=np.asarray(a, dtype=np.int64), dtype="int64")


RNG = np.random.default_rng(1234)
PROBS = np.exp(RNG.standard_normal((4, 5)))
PROBS /= PROBS.sum(1, keepdims=True)
UNIT = 1 / (1 + np.exp(-RNG.standard_normal((3, 4))))  # in (0, 1)
BINARY = (RNG.random((3, 4)) < 0.5).astype(np.float64)

# ---------------------------------------------------------------- functional: (id, fn, specs, options)
FUNCTIONAL = [
    # activations
    ("relu", lambda L, x: F(L).relu(x), [(2, 3)], {}),
    ("relu_inplace", lambda L, x: F(L).relu(x * 1, inplace=True), [(2, 3)], {}),
    ("leaky_relu", lambda L, x: F(L).leaky_relu(x), [(3, 4, 2)], {}),
    ("leaky_relu_0.2_inplace", lambda L, x: F(L).leaky_relu(x * 1, 0.2, inplace=True), [(5,)], {}),
    ("gelu", lambda L, x: F(L).gelu(x), [(3, 4)], {}),
    ("gelu_tanh", lambda L, x: F(L).gelu(x, approximate="tanh"), [(3, 4)], {}),
    ("silu", lambda L, x: F(L).silu(x), [(2, 3, 2)], {}),
    ("silu_inplace", lambda L, x: F(L).silu(x * 1, inplace=True), [(4,)], {}),
    ("sigmoid_tanh", lambda L, x: (F(L).sigmoid(x), F(L).tanh(x)), [(2, 3)], {}),
    ("softmax", lambda L, x: (F(L).softmax(x, 1), F(L).log_softmax(x, -1), F(L).softmax(x, dim=0)), [(3, 4)], {}),
    ("logsigmoid", lambda L, x: F(L).logsigmoid(x), [V([-50.0, -3.0, 0.0, 0.5, 40.0])], {}),
    # layers
    ("linear", lambda L, x, w, b: F(L).linear(x, w, b), [(5, 3), (4, 3), (4,)], {}),
    ("linear_3d_nobias", lambda L, x, w: F(L).linear(x, w), [(2, 5, 3), (4, 3)], {}),
    ("linear_1d", lambda L, x, w, b: F(L).linear(x, w, b), [(3,), (4, 3), (4,)], {}),
    ("layer_norm", lambda L, x, w, b: F(L).layer_norm(x, (4,), w, b), [(2, 3, 4), (4,), (4,)], {}),
    ("layer_norm_2d_plain", lambda L, x: F(L).layer_norm(x, [3, 4], eps=1e-3), [(2, 3, 4)], {}),
    ("batch_norm_train", lambda L, x, w, b: F(L).batch_norm(x, None, None, w, b, training=True),
     [(6, 3), (3,), (3,)], {}),
    ("batch_norm_train_3d", lambda L, x: F(L).batch_norm(x, None, None, training=True, eps=1e-3), [(4, 3, 5)], {}),
    ("batch_norm_eval", lambda L, x, m, v, w, b: F(L).batch_norm(x, m, v, w, b),
     [(4, 3, 2), In((3,), grad=False), In((3,), domain="pos", grad=False), (3,), (3,)], {}),
    ("embedding", lambda L, i, w: F(L).embedding(i, w), [idx([[1, 2, 4], [4, 3, 1]]), (6, 3)], {}),
    ("embedding_padding", lambda L, i, w: F(L).embedding(i, w, padding_idx=1), [idx([1, 2, 1, 0]), (5, 2)], {}),
    ("embedding_scale_grad", lambda L, i, w: F(L).embedding(i, w, scale_grad_by_freq=True),
     [idx([0, 2, 2, 2, 1, 0]), (4, 3)], {}),
    ("pad", lambda L, x: F(L).pad(x, (1, 2)), [(2, 3)], {}),
    ("pad_2d_value", lambda L, x: F(L).pad(x, (0, 1, 2, 0), value=-1.5), [(2, 3, 4)], {}),
    ("pad_negative", lambda L, x: F(L).pad(x, (-1, 2, 1, -1)), [(3, 4)], {}),
    ("dropout_eval", lambda L, x: (F(L).dropout(x, 0.5, training=False), F(L).dropout(x, 0.0)), [(2, 3)], {}),
    # losses
    ("mse", lambda L, x, t: [F(L).mse_loss(x, t, reduction=r) for r in ("mean", "sum", "none")], [(3, 4), (3, 4)], {}),
    ("mse_weight", lambda L, x, t, w: [F(L).mse_loss(x, t, reduction=r, weight=w) for r in ("mean", "sum", "none")],
     [(3, 4), (3, 4), In((3, 4), domain="pos", grad=False)], {}),
    ("l1", lambda L, x, t: [F(L).l1_loss(x, t, reduction=r) for r in ("mean", "sum", "none")], [(2, 5), (2, 5)], {}),
    ("l1_weight", lambda L, x, t, w: F(L).l1_loss(x, t, weight=w), [(2, 5), (2, 5), In((2, 5), domain="pos")], {}),
    ("smooth_l1", lambda L, x, t: [F(L).smooth_l1_loss(x, t, reduction=r) for r in ("mean", "sum", "none")],
     [(3, 4), (3, 4)], {}),
    ("smooth_l1_beta", lambda L, x, t: (F(L).smooth_l1_loss(x, t, beta=0.3), F(L).smooth_l1_loss(x, t, beta=0.0)),
     [(3, 4), (3, 4)], {}),
    ("bce", lambda L, x, t: [F(L).binary_cross_entropy(x, t, reduction=r) for r in ("mean", "sum", "none")],
     [V(UNIT), V(BINARY, grad=False)], {}),
    ("bce_soft_weight", lambda L, x, t, w: F(L).binary_cross_entropy(x, t, weight=w),
     [V(UNIT), V(UNIT[::-1].copy()), In((4,), domain="pos", grad=False)], {}),
    ("bce_logits", lambda L, x, t: [F(L).binary_cross_entropy_with_logits(x, t, reduction=r)
                                    for r in ("mean", "sum", "none")], [(3, 4), V(UNIT)], {}),
    ("bce_logits_at_0", lambda L, x, t: F(L).binary_cross_entropy_with_logits(x, t),
     [V([0.0, 0.0, 30.0, -30.0]), V([1.0, 0.0, 0.0, 1.0], grad=False)], {}),
    ("bce_logits_weights", lambda L, x, t, w, pw: F(L).binary_cross_entropy_with_logits(x, t, w, pos_weight=pw),
     [(3, 4), V(BINARY, grad=False), In((3, 1), domain="pos", grad=False), In((4,), domain="pos", grad=False)], {}),
    ("kl_div", lambda L, x, t: [F(L).kl_div(x, t, reduction=r) for r in ("batchmean", "sum", "none")],
     [V(np.log(PROBS)), V(PROBS[::-1].copy())], {}),
    ("kl_div_log_target", lambda L, x, t: [F(L).kl_div(x, t, reduction=r, log_target=True)
                                           for r in ("batchmean", "sum", "none")],
     [V(np.log(PROBS)), V(np.log(PROBS[::-1]).copy())], {}),
    ("kl_div_zero_target", lambda L, x, t: F(L).kl_div(x, t, reduction="sum"),
     [V(np.log(PROBS[0])), V([0.0, 0.5, 0.0, 0.25, 0.25], grad=False)], {}),
    ("nll", lambda L, x, t: [F(L).nll_loss(x, t, reduction=r) for r in ("mean", "sum", "none")],
     [(4, 5), idx([0, 4, 2, 2])], {}),
    ("nll_weight_ignore", lambda L, x, t, w: [F(L).nll_loss(x, t, w, ignore_index=2, reduction=r)
                                              for r in ("mean", "sum", "none")],
     [(4, 5), idx([0, 4, 2, 1]), In((5,), domain="pos", grad=False)], {}),
    ("nll_spatial", lambda L, x, t: F(L).nll_loss(x, t), [(2, 3, 4), idx([[0, 1, 2, 2], [1, 1, 0, 2]])], {}),
    ("nll_unbatched", lambda L, x, t: F(L).nll_loss(x, t, reduction="none"), [(5,), idx(3)], {}),
    ("cross_entropy", lambda L, x, t: [F(L).cross_entropy(x, t, reduction=r) for r in ("mean", "sum", "none")],
     [(4, 5), idx([0, 4, 2, 2])], {}),
    ("cross_entropy_weight_ignore", lambda L, x, t, w: F(L).cross_entropy(x, t, w, ignore_index=-1),
     [(4, 5), idx([0, -1, 3, 1]), In((5,), domain="pos", grad=False)], {}),
    ("cross_entropy_smoothing", lambda L, x, t: [F(L).cross_entropy(x, t, reduction=r, label_smoothing=0.1)
                                                 for r in ("mean", "sum", "none")],
     [(4, 5), idx([0, 4, 2, 2])], {}),
    ("cross_entropy_smoothing_all", lambda L, x, t, w: [
        F(L).cross_entropy(x, t, w, ignore_index=4, reduction=r, label_smoothing=0.25)
        for r in ("mean", "sum", "none")],
     [(4, 5), idx([0, 4, 2, 2]), In((5,), domain="pos", grad=False)], {}),
    ("cross_entropy_spatial", lambda L, x, t: F(L).cross_entropy(x, t, label_smoothing=0.2),
     [(2, 3, 4), idx([[0, 1, 2, 2], [1, 1, 0, 2]])], {}),
    ("cross_entropy_unbatched", lambda L, x, t: F(L).cross_entropy(x, t), [(5,), idx(1)], {}),
    ("cross_entropy_probs", lambda L, x, t: [F(L).cross_entropy(x, t, reduction=r) for r in ("mean", "sum", "none")],
     [(4, 5), V(PROBS)], {}),
    ("cross_entropy_probs_all", lambda L, x, t, w: [F(L).cross_entropy(x, t, w, reduction=r, label_smoothing=0.3)
                                                    for r in ("mean", "sum", "none")],
     [(4, 5), V(PROBS), In((5,), domain="pos", grad=False)], {}),
    # float32
    ("cross_entropy_f32", lambda L, x, t: F(L).cross_entropy(x, t),
     [In((4, 5), dtype="float32"), idx([1, 0, 3, 3])], {}),
    ("gelu_f32", lambda L, x: F(L).gelu(x), [In((3, 4), dtype="float32")], {}),
]


@pytest.mark.parametrize("fn,specs,kw", [pytest.param(f, s, k, id=i) for i, f, s, k in FUNCTIONAL])
def test_functional_parity(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's 'mean' warning, etc.
        check_op(fn, *specs, **kw)


def test_one_hot():
    same(lambda L: F(L).one_hot(L.tensor([[0, 3], [2, 1]])))
    same(lambda L: F(L).one_hot(L.tensor([1, 0]), num_classes=4))
    same(lambda L: F(L).one_hot(L.tensor(2), 3))


def test_dropout_statistics():
    fg.manual_seed(0)
    x = fg.ones(200, 100, requires_grad=True)
    y = F(fg).dropout(x, 0.3)
    kept = (y != 0).float()
    assert abs(kept.mean().item() - 0.7) < 0.02
    np.testing.assert_allclose(y[y != 0].detach().numpy(), 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy(), rtol=1e-6)  # d(x·mask/(1-p))/dx
    assert F(fg).dropout(x, 1.0).abs().sum().item() == 0
    m = fg.nn.Dropout(0.5).eval()
    assert np.array_equal(m(x).detach().numpy(), x.detach().numpy())


def test_embedding_max_norm_renormalises_used_rows():
    def run(L):
        w = L.tensor(np.arange(12, dtype=np.float64).reshape(4, 3) / 2, requires_grad=True)
        out = F(L).embedding(L.tensor([0, 2, 2]), w, max_norm=2.0)
        out.sum().backward()
        return out, w.detach(), w.grad

    same(run)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


@pytest.mark.parametrize("fn", [
    lambda L: F(L).cross_entropy(L.randn(3, 4), L.tensor([0.0, 1.0, 2.0])),
    lambda L: F(L).cross_entropy(L.randn(3, 4), L.tensor([0, 1])),
    lambda L: F(L).nll_loss(L.randn(3, 4), L.tensor([0, 1, 7])),
    lambda L: F(L).cross_entropy(L.randn(3, 4), L.rand(3, 4), ignore_index=1),
    lambda L: F(L).cross_entropy(L.randn(3, 4), L.tensor([0, 1, 2]), reduction="avg"),
    lambda L: F(L).binary_cross_entropy(L.rand(3), L.rand(4)),
    lambda L: F(L).binary_cross_entropy(L.tensor([0.5, 1.5]), L.tensor([0.0, 1.0])),
    lambda L: F(L).binary_cross_entropy_with_logits(L.rand(3), L.rand(3, 1)),
    lambda L: F(L).dropout(L.rand(3), 1.5),
    lambda L: F(L).layer_norm(L.rand(2, 3), (4,)),
    lambda L: F(L).pad(L.rand(2, 3), (1, 2, 3)),
    lambda L: F(L).gelu(L.rand(2), approximate="fast"),
    lambda L: F(L).one_hot(L.tensor([0, 3]), 2),
    lambda L: F(L).embedding(L.tensor([0.0]), L.rand(3, 2)),
    lambda L: L.nn.Linear(4, 3)(L.rand(2, 5)),
    lambda L: L.nn.BatchNorm1d(3)(L.rand(2, 3, 4, 5)),
    lambda L: L.nn.BatchNorm1d(3)(L.rand(1, 3)),
    lambda L: L.nn.Unflatten(1, (2, 3))(L.rand(2, 5)),
], ids=["ce_float_target", "ce_batch_mismatch", "nll_out_of_bounds", "ce_probs_ignore_index", "bad_reduction",
        "bce_size", "bce_range", "bce_logits_size", "dropout_p", "layer_norm_shape", "pad_odd", "gelu_approximate",
        "one_hot_classes", "embedding_float_index", "linear_shape", "batchnorm_dims", "batchnorm_one_value",
        "unflatten_sizes"])
def test_errors_as_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got[0] == expected[0], (got, expected)
    if "out of bounds" in expected[1] or "scalar type" in expected[1]:
        assert got[1] == expected[1]


# ---------------------------------------------------------------- modules with torch's parameters


def _copy_params(tm, fm):
    sd = OrderedDict((k, fg.tensor(v.detach().numpy())) for k, v in tm.state_dict().items())
    fm.load_state_dict(sd)


def check_module(make, *inputs, steps=1, train=True, rtol=1e-7, atol=1e-9):
    """Build the module in torch and fg, copy torch's parameters and buffers in, run `steps` forward
    passes (train or eval mode) and compare outputs, input and parameter gradients, and buffers."""
    torch.manual_seed(0)
    tm, fm = make(torch), make(fg)
    _copy_params(tm, fm)
    tm.train(train)
    fm.train(train)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        arrays = [a if isinstance(a, np.ndarray) else rng.standard_normal(a) for a in inputs]
        t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        f_in = [fg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        t_out, f_out = tm(*t_in), fm(*f_in)
        assert_tensor_close(t_out, f_out, rtol, atol)
        w = rng.standard_normal(tuple(t_out.shape))
        (t_out * torch.tensor(w, dtype=t_out.dtype)).sum().backward()
        (f_out * fg.tensor(w, dtype=f_out.dtype)).sum().backward()
        for i, (t, f) in enumerate(zip(t_in, f_in)):
            if t.requires_grad:
                assert_tensor_close(t.grad, f.grad, rtol, atol, f"grad of input {i}", check_grad_flag=False)
    t_params, f_params = dict(tm.named_parameters()), dict(fm.named_parameters())
    assert list(t_params) == list(f_params)
    for name, tp in t_params.items():
        fp = f_params[name]
        assert_tensor_close(tp.detach(), fp.detach(), rtol, atol, name, check_grad_flag=False)
        if tp.grad is None:
            assert fp.grad is None, name
        else:
            assert_tensor_close(tp.grad, fp.grad, rtol, atol, f"grad of {name}", check_grad_flag=False)
    t_bufs, f_bufs = dict(tm.named_buffers()), dict(fm.named_buffers())
    assert list(t_bufs) == list(f_bufs)
    for name, tb in t_bufs.items():
        assert_tensor_close(tb, f_bufs[name], rtol, atol, name, check_grad_flag=False)


def D(module):
    return module.double()


MODULES = [
    ("linear", lambda L: D(L.nn.Linear(3, 4)), [(5, 3)], {}),
    ("linear_3d_nobias", lambda L: D(L.nn.Linear(3, 2, bias=False)), [(2, 4, 3)], {}),
    ("linear_f32", lambda L: L.nn.Linear(6, 5), [np.float32(RNG.standard_normal((3, 6)))],
     {"rtol": 1e-5, "atol": 1e-6}),
    ("embedding", lambda L: D(L.nn.Embedding(10, 3)), [np.array([[1, 2, 3], [9, 1, 0]])], {}),
    ("embedding_padding", lambda L: D(L.nn.Embedding(10, 3, padding_idx=2)), [np.array([[1, 2, 3], [2, 1, 0]])], {}),
    ("embedding_max_norm", lambda L: D(L.nn.Embedding(6, 4, max_norm=1.0)), [np.array([0, 5, 5, 3])], {"steps": 2}),
    ("layer_norm", lambda L: D(L.nn.LayerNorm(4)), [(3, 2, 4)], {}),
    ("layer_norm_2d_noaffine", lambda L: D(L.nn.LayerNorm([2, 4], elementwise_affine=False)), [(3, 2, 4)], {}),
    ("layer_norm_nobias", lambda L: D(L.nn.LayerNorm(4, eps=1e-3, bias=False)), [(5, 4)], {}),
    ("batchnorm1d_train", lambda L: D(L.nn.BatchNorm1d(3)), [(6, 3)], {"steps": 3}),
    ("batchnorm1d_train_3d", lambda L: D(L.nn.BatchNorm1d(3, momentum=0.3)), [(4, 3, 5)], {"steps": 2}),
    ("batchnorm1d_cma", lambda L: D(L.nn.BatchNorm1d(3, momentum=None)), [(5, 3)], {"steps": 3}),
    ("batchnorm1d_eval", lambda L: D(L.nn.BatchNorm1d(3)), [(1, 3)], {"train": False}),
    ("batchnorm1d_noaffine_notrack", lambda L: D(L.nn.BatchNorm1d(4, affine=False, track_running_stats=False)),
     [(5, 4)], {"steps": 2}),
    ("batchnorm1d_notrack_eval", lambda L: D(L.nn.BatchNorm1d(4, track_running_stats=False)), [(5, 4)],
     {"train": False}),
    ("batchnorm2d", lambda L: D(L.nn.BatchNorm2d(2)), [(3, 2, 3, 3)], {"steps": 2}),
    ("batchnorm1d_f32", lambda L: L.nn.BatchNorm1d(3), [np.float32(RNG.standard_normal((8, 3)))],
     {"steps": 2, "rtol": 1e-5, "atol": 1e-6}),
    ("activations", lambda L: L.nn.Sequential(L.nn.ReLU(), L.nn.Tanh(), L.nn.LeakyReLU(0.3), L.nn.GELU(),
                                              L.nn.SiLU(), L.nn.Sigmoid(), L.nn.GELU("tanh")), [(3, 4)], {}),
    ("softmaxes", lambda L: L.nn.Sequential(L.nn.Softmax(dim=1), L.nn.LogSoftmax(dim=0)), [(3, 4)], {}),
    ("flatten", lambda L: L.nn.Sequential(L.nn.Flatten(), L.nn.Unflatten(1, (4, 6)), L.nn.Flatten(0, 1),
                                          L.nn.Unflatten(0, (2, -1)), L.nn.Identity(7, k=1)), [(2, 3, 8)], {}),
    ("dropout_eval", lambda L: L.nn.Dropout(0.4), [(3, 4)], {"train": False}),
    ("bilinear", lambda L: D(L.nn.Bilinear(3, 4, 5)), [(6, 3), (6, 4)], {}),
    ("bilinear_nobias_3d", lambda L: D(L.nn.Bilinear(2, 2, 3, bias=False)), [(2, 4, 2), (2, 4, 2)], {}),
    ("mlp", lambda L: D(L.nn.Sequential(OrderedDict([
        ("fc1", L.nn.Linear(4, 8)), ("norm", L.nn.LayerNorm(8)), ("act", L.nn.GELU()),
        ("fc2", L.nn.Linear(8, 8)), ("bn", L.nn.BatchNorm1d(8)), ("relu", L.nn.ReLU()),
        ("out", L.nn.Linear(8, 3)), ("logp", L.nn.LogSoftmax(-1))]))), [(6, 4)], {"steps": 2}),
]


@pytest.mark.parametrize("make,inputs,kw", [pytest.param(m, i, k, id=n) for n, m, i, k in MODULES])
def test_module_parity(make, inputs, kw):
    check_module(make, *inputs, **kw)


LOSS_MODULES = [
    ("cross_entropy", lambda L: L.nn.CrossEntropyLoss(label_smoothing=0.1), np.array([1, 0, 4])),
    ("cross_entropy_weight", lambda L: L.nn.CrossEntropyLoss(L.tensor([1.0, 2, 3, 4, 5], dtype=L.float64),
                                                             ignore_index=0, reduction="sum"), np.array([1, 0, 4])),
    ("nll", lambda L: L.nn.NLLLoss(reduction="none"), np.array([1, 0, 4])),
    ("mse", lambda L: L.nn.MSELoss(), RNG.standard_normal((3, 5))),
    ("l1", lambda L: L.nn.L1Loss(reduction="sum"), RNG.standard_normal((3, 5))),
    ("smooth_l1", lambda L: L.nn.SmoothL1Loss(beta=0.5), RNG.standard_normal((3, 5))),
    ("bce", lambda L: L.nn.BCELoss(), RNG.random((3, 5))),
    ("bce_logits", lambda L: L.nn.BCEWithLogitsLoss(pos_weight=L.tensor([2.0, 1, 1, 1, 0.5], dtype=L.float64)),
     RNG.random((3, 5))),
    ("kl_div", lambda L: L.nn.KLDivLoss(reduction="batchmean", log_target=True), RNG.standard_normal((3, 5))),
]


@pytest.mark.parametrize("make,target", [pytest.param(m, t, id=n) for n, m, t in LOSS_MODULES])
def test_loss_modules(make, target):
    x = 1 / (1 + np.exp(-np.random.default_rng(5).standard_normal((3, 5))))

    def run(L):
        inp = L.tensor(x, requires_grad=True)
        loss = make(L)(inp, L.tensor(target))
        loss.sum().backward()
        return loss, inp.grad

    same(run)
    same(lambda L: (repr(make(L)), list(make(L).state_dict().keys())))


# ---------------------------------------------------------------- Module API


class Net(object):
    """A model with nested modules, a shared module, a buffer and a non-persistent buffer."""

    @staticmethod
    def make(L):
        class Block(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(3, 3)
                self.register_buffer("scale", L.ones(3))
                self.register_buffer("tmp", L.zeros(1), persistent=False)

            def forward(self, x):
                return self.lin(x) * self.scale

        class Model(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.first = Block()
                self.layers = L.nn.ModuleList([L.nn.Linear(3, 3), L.nn.ReLU(), L.nn.ReLU(), L.nn.ReLU()])
                self.heads = L.nn.ModuleDict({"a": L.nn.Linear(3, 2), "b": L.nn.Identity()})
                self.alias = self.first  # the same module twice
                self.w = L.nn.Parameter(L.zeros(2, dtype=L.float32))
                self.bn = L.nn.BatchNorm1d(3)

            def forward(self, x):
                x = self.first(x)
                for layer in self.layers:
                    x = layer(x)
                return self.heads["a"](self.bn(x)) + self.w

        return Model()


def test_module_traversal_and_state_dict_keys():
    def run(L):
        m = Net.make(L)
        return (
            [n for n, _ in m.named_parameters()],
            [n for n, _ in m.named_buffers()],
            [n for n, _ in m.named_children()],
            [n for n, _ in m.named_modules()],
            [n for n, _ in m.named_modules(remove_duplicate=False)],
            [n for n, _ in m.named_parameters(remove_duplicate=False)],
            list(m.state_dict().keys()),
            list(m.state_dict(prefix="net.").keys()),
            [tuple(p.shape) for p in m.parameters()],
            [n for n, _ in m.first.named_parameters(prefix="x", recurse=False)],
            [type(c).__name__ for c in m.children()],
            len(list(m.modules())),
            sorted(m.state_dict()._metadata.keys()),
        )

    same(run)


def test_module_repr():
    def run(L):
        m = Net.make(L)
        mods = [
            m, L.nn.Linear(2, 3, bias=False), L.nn.Embedding(5, 2, padding_idx=0, max_norm=1.0),
            L.nn.Embedding(5, 2, norm_type=1.0, scale_grad_by_freq=True), L.nn.LayerNorm((2, 3), eps=1e-3),
            L.nn.LayerNorm(4, elementwise_affine=False), L.nn.BatchNorm1d(4, momentum=None, affine=False),
            L.nn.BatchNorm1d(2, bias=False),
            L.nn.LayerNorm(3, bias=False),
            L.nn.BatchNorm2d(2), L.nn.Dropout(0.2, inplace=True), L.nn.Flatten(0), L.nn.Unflatten(1, (2, 2)),
            L.nn.Identity(), L.nn.ReLU(inplace=True), L.nn.LeakyReLU(0.1, True), L.nn.GELU(approximate="tanh"),
            L.nn.SiLU(), L.nn.Tanh(), L.nn.Sigmoid(), L.nn.Softmax(dim=-1), L.nn.LogSoftmax(1), L.nn.Softmax(),
            L.nn.ModuleList(), L.nn.ModuleList([L.nn.ReLU(), L.nn.ReLU(), L.nn.Tanh(), L.nn.ReLU()]),
            L.nn.Sequential(), L.nn.ModuleDict({"x": L.nn.Tanh()}), L.nn.CrossEntropyLoss(), L.nn.MSELoss(),
        ]
        return [repr(x) for x in mods]

    same(run)


def test_load_state_dict_errors_and_results():
    def run(L):
        torch.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(4, 3), L.nn.BatchNorm1d(3))
        sd = m.state_dict()
        out = [repr(m.load_state_dict(sd))]
        bad = OrderedDict(sd)
        del bad["0.bias"]
        bad["0.extra"] = L.zeros(1)
        bad["2.weight"] = L.zeros(1)
        out.append(_error(lambda: m.load_state_dict(bad)))
        res = m.load_state_dict(bad, strict=False)
        out.append((res.missing_keys, res.unexpected_keys))
        wrong = OrderedDict(sd)
        wrong["0.weight"] = L.zeros(2, 4)
        out.append(_error(lambda: m.load_state_dict(wrong)))
        out.append(_error(lambda: m.load_state_dict(wrong, strict=False)))
        out.append(_error(lambda: m.load_state_dict([1, 2])))
        return out

    same(run)


def test_load_state_dict_copies_in_place():
    src, dst = fg.nn.Linear(3, 2), fg.nn.Linear(3, 2)
    w = dst.weight
    dst.load_state_dict(src.state_dict())
    assert dst.weight is w and w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(dst.weight.detach().numpy(), src.weight.detach().numpy())
    sd = src.state_dict()
    assert not sd["weight"].requires_grad  # detached unless keep_vars
    assert src.state_dict(keep_vars=True)["weight"] is src.weight
    with fg.no_grad():
        src.weight.add_(1.0)
    np.testing.assert_array_equal(sd["weight"].numpy(), src.weight.detach().numpy())  # shares storage
    dst.load_state_dict(OrderedDict((k, v.double()) for k, v in src.state_dict().items()))
    assert dst.weight.dtype == fg.float32


def test_setattr_registration_rules():
    def run(L):
        m = L.nn.Module()
        out = []
        m.p = L.nn.Parameter(L.zeros(2))
        m.sub = L.nn.Linear(1, 1)
        m.register_buffer("b", L.ones(1))
        m.plain = 3
        out.append((list(m._parameters), list(m._modules), list(m._buffers), m.plain))
        out.append(_error(lambda: setattr(m, "p", L.zeros(2))))
        out.append(_error(lambda: setattr(m, "sub", 3)))
        out.append(_error(lambda: setattr(m, "b", 3)))
        out.append(_error(lambda: m.register_buffer("plain", L.zeros(1))))
        out.append(_error(lambda: m.register_parameter("a.b", None)))
        out.append(_error(lambda: m.register_parameter("q", L.zeros(1))))
        out.append(_error(lambda: m.add_module("x", 3)))
        out.append(_error(lambda: m.missing))
        m.p = None
        m.b = L.zeros(3)
        m.sub = None
        out.append((list(m.state_dict()), m.p, [n for n, _ in m.named_modules()]))
        m.sub = L.nn.Parameter(L.zeros(1))  # a parameter replaces a module of the same name
        del m.b
        out.append((list(m._parameters), list(m._modules), list(m._buffers)))
        out.append(m.get_submodule("") is m)
        out.append(_error(lambda: m.get_submodule("nope")))
        return out

    same(run)


def test_parameter():
    x = fg.randn(3)
    p = fg.nn.Parameter(x)
    assert isinstance(p, fg.nn.Parameter) and isinstance(p, fg.Tensor) and issubclass(fg.nn.Parameter, fg.Tensor)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not isinstance(x, fg.nn.Parameter) and not isinstance(p * 2, fg.nn.Parameter)
    with fg.no_grad():
        x.add_(1.0)
    np.testing.assert_array_equal(p.detach().numpy(), x.numpy())  # shares x's storage, as torch
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * x.numpy(), rtol=1e-6)
    assert not fg.nn.Parameter(fg.zeros(2), requires_grad=False).requires_grad
    assert tuple(fg.nn.Parameter().shape) == (0,)
    assert not isinstance(fg.zeros(1), fg.nn.Parameter)


def test_train_eval_zero_grad_apply_to():
    m = Net.make(fg)
    assert m.training and m.first.lin.training
    m.eval()
    assert not m.training and not m.first.lin.training and not m.layers[1].training
    m.train()
    assert m.bn.training
    with pytest.raises(ValueError):
        m.train("no")
    m(fg.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Model" and seen.count("Linear") == 3
    weight = m.first.lin.weight
    m(fg.randn(4, 3)).sum().backward()
    m.to(fg.float64)
    assert m.first.lin.weight is weight and weight.dtype == fg.float64 and weight.grad.dtype == fg.float64
    assert m.bn.num_batches_tracked.dtype == fg.int64 and m.bn.running_mean.dtype == fg.float64
    assert m(fg.randn(4, 3, dtype=fg.float64)).dtype == fg.float64
    m.float()
    assert weight.dtype == fg.float32 and isinstance(m.first.lin.weight, fg.nn.Parameter)
    with pytest.raises(TypeError):
        m.to(fg.int64)
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_forward_hooks():
    def run(L):
        calls = []
        m = L.nn.Linear(2, 2)

        def pre(mod, args):
            calls.append(("pre", len(args)))
            return (args[0] * 0,)

        def pre_kw(mod, args, kwargs):
            calls.append(("pre_kw", sorted(kwargs)))

        def post(mod, args, out):
            calls.append(("post", tuple(out.shape)))
            return out + 1

        def first(mod, args, out):
            calls.append("first")

        h1 = m.register_forward_pre_hook(pre)
        h2 = m.register_forward_pre_hook(pre_kw, with_kwargs=True)
        h3 = m.register_forward_hook(post)
        m.register_forward_hook(first, prepend=True)
        with L.no_grad():
            m.bias.zero_()
        y1 = m(L.ones(3, 2))
        h1.remove()
        h2.remove()
        with h3:
            pass
        y2 = m(L.zeros(3, 2))
        return calls, y1.detach(), y2.detach()

    same(run)


def test_containers():
    def run(L):
        a, b, c = L.nn.ReLU(), L.nn.Tanh(), L.nn.Sigmoid()
        s = L.nn.Sequential(a, b)
        s.append(c)
        s.insert(0, L.nn.Identity())
        out = [len(s), repr(s[1:3]), type(s[-1]).__name__, [type(x).__name__ for x in s]]
        del s[1]
        out.append(list(s._modules))
        out.append(repr(s + L.nn.Sequential(L.nn.ReLU())))
        out.append(type(s.pop(0)).__name__)
        sd = L.nn.Sequential(OrderedDict([("x", L.nn.ReLU()), ("y", L.nn.Tanh())]))
        out.append((list(sd._modules), type(sd[1]).__name__))
        ml = L.nn.ModuleList([a, b])
        ml.extend([c])
        ml.insert(1, L.nn.Identity())
        ml[0] = L.nn.GELU()
        out.append((len(ml), repr(ml), repr(ml[1:]), type(ml[-1]).__name__))
        del ml[0]
        out.append(list(ml._modules))
        md = L.nn.ModuleDict([("p", a), ("q", b)])
        md["r"] = c
        out.append((list(md.keys()), "q" in md, len(md), type(md.pop("p")).__name__, list(md)))
        out.append(_error(lambda: s[10]))
        out.append(_error(lambda: ml[10]))
        out.append(_error(lambda: md["zz"]))
        x = L.tensor([[-1.0, 2.0]])
        out.append(L.nn.Sequential(L.nn.ReLU(), L.nn.Tanh())(x))
        return out

    same(run)


def _repr(m):
    """A module's repr without the library name (`[torch.float64 of size 3]`: dtype names)."""
    return re.sub(r"(torch|ferrograd)\.", "", repr(m))


def test_parameter_list():
    def run(L):
        p0 = L.nn.Parameter(L.ones(2, 3))
        t1 = L.zeros(4, dtype=L.float64)
        pl = L.nn.ParameterList([p0, t1, "text"])
        out = [len(pl), pl[0] is p0, type(pl[1]).__name__, pl[1].requires_grad, pl[-1], _repr(pl)]
        with L.no_grad():
            pl[1].add_(1)
        out.append(t1)  # the Parameter made from a tensor shares its storage
        pl.append(L.ones(1))
        pl += [L.nn.Parameter(L.ones(5))]
        pl.extend((L.zeros(2),))
        pl[2] = L.full((3,), 2.0)
        out += [len(pl), [n for n, _ in pl.named_parameters()], list(pl.state_dict()), _repr(pl[1:4]),
                [type(x).__name__ for x in pl], len(list(pl.parameters()))]
        out.append(_error(lambda: pl[10]))
        out.append(_error(lambda: pl.extend(L.ones(2))))
        out.append(_error(lambda: pl(1)))
        return out

    same(run)


def test_parameter_dict():
    def run(L):
        pd = L.nn.ParameterDict({"b": L.ones(2), "a": L.nn.Parameter(L.zeros(1, 2)), "c": 3})  # a plain dict: sorted
        out = [list(pd), list(pd.keys()), [type(v).__name__ for v in pd.values()], _repr(pd), "a" in pd, len(pd)]
        pd.update(OrderedDict([("z", L.ones(1)), ("y", L.ones(1))]))  # an OrderedDict keeps its order
        pd.update([("x", L.ones(3))])
        pd["w"] = L.nn.Parameter(L.ones(4))
        out += [list(pd), [n for n, _ in pd.named_parameters()], list(pd.state_dict())]
        out.append(type(pd.pop("c")).__name__)
        k, v = pd.popitem()
        out += [k, tuple(v.shape), pd.get("nope", "default"), pd.setdefault("s", L.zeros(2)).requires_grad]
        del pd["z"]
        merged = pd | L.nn.ParameterDict({"m": L.ones(1)})
        pd |= {"n": L.ones(1)}
        out += [list(pd), list(merged), list(pd.copy()), list(pd.fromkeys(["p", "q"])), list(reversed(pd))]
        out.append(_error(lambda: pd[1]))
        out.append(_error(lambda: pd.update(3)))
        out.append(_error(lambda: pd.update([("a", 1, 2)])))
        out.append(_error(lambda: pd(1)))
        pd.clear()
        out.append((len(pd), list(pd.parameters())))
        return out

    same(run)


def test_parameter_containers_in_a_model_train():
    class Net(object):
        @staticmethod
        def make(L):
            class M(L.nn.Module):
                def __init__(self):
                    super().__init__()
                    torch.manual_seed(0)
                    self.ws = L.nn.ParameterList([L.tensor(np.random.default_rng(i).standard_normal((3, 3)))
                                                  for i in range(2)])
                    self.bs = L.nn.ParameterDict({"first": L.zeros(3, dtype=L.float64),
                                                  "second": L.ones(3, dtype=L.float64)})

                def forward(self, x):
                    x = (x @ self.ws[0] + self.bs["first"]).tanh()
                    return x @ self.ws[1] + self.bs["second"]

            return M()

    def run(L):
        m = Net.make(L)
        x = L.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
        m(x).pow(2).sum().backward()
        return _repr(m), list(m.state_dict()), [(n, p.grad) for n, p in m.named_parameters()]

    same(run)


# ---------------------------------------------------------------- bad input, as torch raises it


def _raises(fn, exc, pattern):
    """fn(torch) and fn(fg) both raise `exc` with a message matching `pattern`."""
    for L in (torch, fg):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(exc, match=pattern):
                fn(L)


def _sd_with(L, **changes):
    torch.manual_seed(0)
    sd = OrderedDict(L.nn.Linear(3, 2).state_dict())
    for k, v in changes.items():
        if v is None:
            del sd[k]
        else:
            sd[k] = v
    return sd


BAD_INPUT = [
    ("linear_features", lambda L: L.nn.Linear(5, 2)(L.zeros(4, 3)), RuntimeError,
     re.escape("mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)")),
    ("linear_features_3d", lambda L: L.nn.Linear(5, 2)(L.zeros(2, 4, 3)), RuntimeError,
     re.escape("mat1 and mat2 shapes cannot be multiplied (8x3 and 5x2)")),
    ("linear_features_1d", lambda L: L.nn.Linear(5, 2)(L.zeros(3)), RuntimeError,
     re.escape("mat1 and mat2 shapes cannot be multiplied (1x3 and 5x2)")),
    ("linear_scalar", lambda L: L.nn.Linear(5, 2)(L.tensor(1.0)), RuntimeError,
     "both arguments to linear need to be at least 1D, but they are 0D and 2D"),
    ("linear_dtype", lambda L: L.nn.Linear(3, 2)(L.zeros(4, 3, dtype=L.float64)), RuntimeError,
     "mat1 and mat2 must have the same dtype, but got Double and Float"),
    ("batchnorm1d_channels", lambda L: L.nn.BatchNorm1d(3)(L.zeros(4, 5)), RuntimeError,
     "running_mean should contain 5 elements not 3"),
    ("batchnorm2d_channels_eval", lambda L: L.nn.BatchNorm2d(3).eval()(L.zeros(2, 4, 5, 5)), RuntimeError,
     "running_mean should contain 4 elements not 3"),
    ("batchnorm_no_stats_channels", lambda L: L.nn.BatchNorm1d(3, track_running_stats=False)(L.zeros(4, 5)),
     RuntimeError, "weight should contain 5 elements not 3"),
    ("batchnorm2d_rank", lambda L: L.nn.BatchNorm2d(3)(L.zeros(3, 5, 5)), ValueError,
     re.escape("expected 4D input (got 3D input)")),
    ("batchnorm_dtype", lambda L: L.nn.BatchNorm1d(3)(L.zeros(4, 3, dtype=L.float64)), RuntimeError,
     re.escape("mixed dtype (CPU)")),
    ("layer_norm_dtype", lambda L: L.nn.LayerNorm(3)(L.zeros(4, 3, dtype=L.float64)), RuntimeError,
     re.escape("mixed dtype (CPU)")),
    ("embedding_too_big", lambda L: L.nn.Embedding(5, 2)(L.tensor([1, 5])), IndexError, "index out of range in self"),
    ("embedding_negative", lambda L: L.nn.Embedding(5, 2)(L.tensor([[0, -1]])), IndexError,
     "index out of range in self"),
    ("nll_float_target", lambda L: F(L).nll_loss(L.zeros(3, 4), L.zeros(3)), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    ("nll_spatial_float_target", lambda L: F(L).nll_loss(L.zeros(3, 4, 2, 2), L.zeros(3, 2, 2)), RuntimeError,
     "but got Float"),
    ("cross_entropy_float_target", lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(3)), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    ("cross_entropy_float_target_shape", lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(3, 5)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    ("cross_entropy_target_batch", lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(2, 4)), ValueError,
     re.escape("Expected input batch_size (3) to match target batch_size (2).")),
    ("cross_entropy_int_probabilities", lambda L: F(L).cross_entropy(L.zeros(3, 4), L.zeros(3, 4, dtype=L.int64)),
     RuntimeError, "Expected floating point type for target with class probabilities, got Long"),
    ("nll_spatial_target_shape", lambda L: F(L).nll_loss(L.zeros(3, 4, 2, 2), L.zeros(3, 2, 3, dtype=L.int64)),
     RuntimeError, re.escape("size mismatch (got input: [3, 4, 2, 2] , target: [3, 2, 3]")),
    ("nll_3d_target_shape", lambda L: F(L).nll_loss(L.zeros(3, 4, 5), L.zeros(3, dtype=L.int64)), RuntimeError,
     re.escape("Expected target size [3, 5], got [3]")),
    ("bce_long_target", lambda L: F(L).binary_cross_entropy(L.full((3,), 0.5), L.zeros(3, dtype=L.int64)),
     RuntimeError, "Found dtype Long but expected Float"),
    ("bce_logits_long_target", lambda L: F(L).binary_cross_entropy_with_logits(L.zeros(3), L.zeros(3, dtype=L.int64)),
     RuntimeError, "can't be cast to the desired output type Long"),
    ("load_missing_key", lambda L: L.nn.Linear(3, 2).load_state_dict(_sd_with(L, bias=None)), RuntimeError,
     re.escape('Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "bias". ')),
    ("load_unexpected_key", lambda L: L.nn.Linear(3, 2).load_state_dict(_sd_with(L, extra=L.zeros(1))), RuntimeError,
     re.escape('Unexpected key(s) in state_dict: "extra". ')),
    ("load_size_mismatch", lambda L: L.nn.Linear(3, 2).load_state_dict(_sd_with(L, weight=L.zeros(2, 4)), strict=False),
     RuntimeError, re.escape("size mismatch for weight: copying a param with shape ") + r".*Size\(\[2, 4\]\) "
     + re.escape("from checkpoint, the shape in current model is ") + r".*Size\(\[2, 3\]\)\."),
]


@pytest.mark.parametrize("fn,exc,pattern", [pytest.param(*e[1:], id=e[0]) for e in BAD_INPUT])
def test_bad_input_raises_as_torch(fn, exc, pattern):
    _raises(fn, exc, pattern)


# ---------------------------------------------------------------- init


def test_default_init_distributions():
    fg.manual_seed(0)
    lin = fg.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert b.min() >= -bound and b.max() <= bound and abs(b.mean()) < 0.1 * bound
    emb = fg.nn.Embedding(500, 64, padding_idx=3).weight.detach().numpy()
    assert abs(emb.mean()) < 0.01 and abs(emb.std() - 1) < 0.01 and not emb[3].any()
    ln = fg.nn.LayerNorm(5)
    assert ln.weight.detach().numpy().tolist() == [1.0] * 5 and ln.bias.detach().numpy().tolist() == [0.0] * 5
    bn = fg.nn.BatchNorm1d(3)
    assert bn.running_var.numpy().tolist() == [1.0] * 3 and bn.num_batches_tracked.item() == 0


@pytest.mark.parametrize("name,args,expected_std,bound", [
    ("uniform_", (-2.0, 1.0), 3 / math.sqrt(12), (-2.0, 1.0)),
    ("normal_", (1.5, 0.5), 0.5, None),
    ("xavier_uniform_", (), math.sqrt(2 / (200 + 300)), math.sqrt(6 / 500)),
    ("xavier_normal_", (2.0,), 2 * math.sqrt(2 / 500), None),
    ("kaiming_uniform_", (), math.sqrt(2 / 200), math.sqrt(6 / 200)),  # a=0: gain √2
    ("kaiming_uniform_", (math.sqrt(5),), math.sqrt(1 / 3) / math.sqrt(200), 1 / math.sqrt(200)),  # Linear's
    ("kaiming_normal_", (0, "fan_out", "relu"), math.sqrt(2) / math.sqrt(300), None),
    ("trunc_normal_", (0.0, 1.0, -1.0, 1.0), 0.5379, (-1.0, 1.0)),
])
def test_init_distributions(name, args, expected_std, bound):
    fg.manual_seed(1)
    p = fg.nn.Parameter(fg.empty(300, 200))
    out = getattr(fg.nn.init, name)(p, *args)
    assert out is p and p.is_leaf and p.requires_grad and isinstance(p, fg.nn.Parameter)
    v = p.detach().numpy()
    assert abs(v.std() - expected_std) < 0.02 * expected_std
    if bound is not None:
        lo, hi = bound if isinstance(bound, tuple) else (-bound, bound)
        assert v.min() >= lo and v.max() <= hi


def test_init_constants_gain_fans():
    p = fg.nn.Parameter(fg.empty(2, 3))
    fg.nn.init.constant_(p, 0.25)
    assert p.detach().numpy().tolist() == [[0.25] * 3] * 2
    fg.nn.init.zeros_(p)
    assert not p.detach().numpy().any()
    fg.nn.init.ones_(p)
    assert p.detach().numpy().sum() == 6
    fg.nn.init.eye_(p)
    assert p.detach().numpy().tolist() == [[1, 0, 0], [0, 1, 0]]
    for nl, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                      ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert fg.nn.init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)
    same(lambda L: _error(lambda: L.nn.init.calculate_gain("nope")))
    same(lambda L: _error(lambda: L.nn.init.xavier_uniform_(L.empty(3))))
    same(lambda L: _error(lambda: L.nn.init.kaiming_uniform_(L.empty(3, 2), mode="fan")))
    g = fg.Generator() if hasattr(fg, "Generator") else __import__("ferrograd").utils._generator.Generator()
    a, b = fg.empty(4, 4), fg.empty(4, 4)
    fg.nn.init.normal_(a, generator=g.manual_seed(5))
    fg.nn.init.normal_(b, generator=g.manual_seed(5))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---------------------------------------------------------------- nn.utils


@pytest.mark.parametrize("max_norm,norm_type", [(0.5, 2.0), (100.0, 2.0), (0.3, 1.0), (0.2, float("inf"))])
def test_clip_grad_norm(max_norm, norm_type):
    def run(L):
        rng = np.random.default_rng(3)
        ps = [L.tensor(rng.standard_normal(s), requires_grad=True) for s in [(3, 2), (4,), (1,)]]
        for p in ps[:2]:
            p.grad = L.tensor(rng.standard_normal(tuple(p.shape)))
        total = L.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
        return total, [p.grad for p in ps]

    same(run)


def test_clip_grad_value_and_vectors():
    def run(L):
        rng = np.random.default_rng(4)
        ps = [L.tensor(rng.standard_normal(s), requires_grad=True) for s in [(3, 2), (4,)]]
        for p in ps:
            p.grad = L.tensor(rng.standard_normal(tuple(p.shape)))
        L.nn.utils.clip_grad_value_(ps, 0.5)
        vec = L.nn.utils.parameters_to_vector(ps)
        (vec * L.arange(10, dtype=L.float64)).sum().backward()
        L.nn.utils.vector_to_parameters(L.arange(10, dtype=L.float64), ps)
        return [p.grad for p in ps], vec.detach(), [p.detach() for p in ps]

    same(run)


def test_deepcopy_module():
    import copy

    def run(L):
        m = L.nn.Sequential(L.nn.Linear(2, 3), L.nn.BatchNorm1d(3))
        L.nn.init.constant_(m[0].weight, 0.5)
        L.nn.init.constant_(m[0].bias, 0.25)
        m[1](m[0](L.arange(8.0).reshape(4, 2))).sum().backward()
        m.alias = m[0]
        c = copy.deepcopy(m)
        with L.no_grad():
            m[0].weight.add_(1.0)
            m[1].running_mean.add_(1.0)
        return (c.alias is c[0], c[0].weight is m[0].weight, isinstance(c[0].weight, L.nn.Parameter),
                c[0].weight.requires_grad, c[0].weight.grad, (c[0].weight - m[0].weight).detach(),
                c[1].running_mean, c[1].num_batches_tracked, repr(c))

    same(run)


# ---- F.linear's one-call path (_C._linear): torch's graph, values and gradients ----------------

def _graph_names(t, L):
    """grad_fn names along the first edge that is not a leaf's, as torch lays linear out."""
    out, f = [], t.grad_fn
    while f is not None and len(out) < 5:
        out.append(type(f).__name__ if L is torch else f.name())
        nxt = [g for g, _ in f.next_functions if g is not None and "AccumulateGrad" not in (type(g).__name__ if L is torch else g.name())]
        f = nxt[0] if nxt else None
    return out


LINEAR_INPUTS = {
    "2d": lambda L: L.randn(5, 3, dtype=L.float64), "3d": lambda L: L.randn(2, 4, 3, dtype=L.float64),
    "1d": lambda L: L.randn(3, dtype=L.float64), "4d": lambda L: L.randn(2, 1, 2, 3, dtype=L.float64),
    "3d_transposed": lambda L: L.randn(4, 2, 3, dtype=L.float64).transpose(0, 1),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("make", LINEAR_INPUTS.values(), ids=LINEAR_INPUTS.keys())
def test_linear_graph_values_and_gradients_match_torch(make, input_grad, bias):
    torch.manual_seed(0)
    base = make(torch)
    res = {}
    for L in (torch, fg):
        x = L.tensor(base.tolist(), dtype=L.float64)
        if base.dim() == 3 and not base.is_contiguous():
            x = L.tensor(base.transpose(0, 1).tolist(), dtype=L.float64).transpose(0, 1)
        x.requires_grad_(input_grad)
        gen = np.random.default_rng(1)
        w = L.tensor(gen.standard_normal((4, 3)).tolist(), dtype=L.float64, requires_grad=True)
        b = L.tensor(gen.standard_normal(4).tolist(), dtype=L.float64, requires_grad=True) if bias else None
        y = L.nn.functional.linear(x, w, b)
        names = _graph_names(y, L)
        (y * y).sum().backward(create_graph=True)
        gw = w.grad
        (gw * gw).sum().backward()  # through the backward of the backward
        res[L] = (names, tuple(y.shape), y.tolist(), w.grad.tolist(), None if b is None else b.grad.tolist(),
                  x.grad.tolist() if input_grad else None)
    t, f = res[torch], res[fg]
    assert f[0] == t[0] and f[1] == t[1]
    for a, e in zip(f[2:], t[2:]):
        if e is None:
            assert a is None
        else:
            np.testing.assert_allclose(np.array(a), np.array(e), rtol=1e-12, atol=1e-12)


def test_linear_fast_path_hands_odd_cases_to_the_checked_one():
    """Arguments _C._linear does not take (other dtypes, mismatched sizes, a 2-d bias, non-tensors)
    still get torch's results or errors."""
    from test_errors import assert_same_error
    assert_same_error(lambda L: L.nn.functional.linear(L.zeros(2, 3), L.zeros(4, 5), L.zeros(4)), "mat1 and mat2 shapes")
    assert_same_error(lambda L: L.nn.functional.linear(L.zeros(2, 3), L.zeros(4, 3), L.zeros(5)))
    assert_same_error(lambda L: L.nn.functional.linear(L.zeros(2, 3), L.zeros(4, 3, dtype=L.float64)), "dtype")
    assert_same_error(lambda L: L.nn.functional.linear([1.0], L.zeros(4, 3)), "must be Tensor")
    assert_same_error(lambda L: L.nn.functional.linear(L.zeros(2, 3), L.zeros(4, 3), 1.0), "must be Tensor")
    for L in (torch, fg):
        y = L.nn.functional.linear(L.ones(2, 3), L.ones(4, 3), L.ones(2, 4))  # a 2-d bias
        assert y.tolist() == [[4.0] * 4] * 2
        y = L.nn.functional.linear(L.ones(2, 3, dtype=L.int64), L.ones(4, 3, dtype=L.int64))
        assert y.tolist() == [[3] * 4] * 2


MATMUL_CASES = {
    "3d_mv": (lambda L: L.randn(2, 3, 4, dtype=L.float64), lambda L: L.randn(4, dtype=L.float64, requires_grad=True)),
    "3d_mm_nograd": (lambda L: L.randn(2, 3, 4, dtype=L.float64, requires_grad=True), lambda L: L.randn(4, 5, dtype=L.float64)),
    "3d_strided_nograd": (lambda L: L.randn(3, 2, 4, dtype=L.float64, requires_grad=True).transpose(0, 1), lambda L: L.randn(4, 5, dtype=L.float64)),
    "3d_strided_grad": (lambda L: L.randn(3, 2, 4, dtype=L.float64).transpose(0, 1), lambda L: L.randn(4, 5, dtype=L.float64, requires_grad=True)),
    "1d_2d": (lambda L: L.randn(4, dtype=L.float64, requires_grad=True), lambda L: L.randn(4, 5, dtype=L.float64)),
}


@pytest.mark.parametrize("ma,mb", MATMUL_CASES.values(), ids=MATMUL_CASES.keys())
def test_matmul_folds_as_torch(ma, mb):
    """torch folds the batch dims of an n-d @ 2-d (or 1-d) product into one mm (mv) when the
    second operand requires grad or the fold needs no copy: same graph, values, gradients."""
    res = {}
    torch.manual_seed(0)
    a, b = ma(torch), mb(torch)
    for L in (torch, fg):
        a2 = L.tensor(a.detach().tolist(), dtype=L.float64)
        if not a.is_contiguous():
            a2 = L.tensor(a.detach().transpose(0, 1).tolist(), dtype=L.float64).transpose(0, 1)
        a2.requires_grad_(a.requires_grad)
        b2 = L.tensor(b.detach().tolist(), dtype=L.float64, requires_grad=b.requires_grad)
        y = a2 @ b2
        y.pow(2).sum().backward()
        res[L] = (_graph_names(y, L), y.tolist(), [t.grad.tolist() for t in (a2, b2) if t.requires_grad])
    # (the unfolded bmm path's operand reshapes of a strided input are ReshapeAliasBackward0 in
    # torch, ViewBackward0 here: compared down to the bmm)
    depth = 2 if "BmmBackward0" in res[torch][0] else None
    assert res[fg][0][:depth] == res[torch][0][:depth]
    np.testing.assert_allclose(np.array(res[fg][1]), np.array(res[torch][1]), rtol=1e-12)
    for g, e in zip(res[fg][2], res[torch][2]):
        np.testing.assert_allclose(np.array(g), np.array(e), rtol=1e-12)


# ---- nll_loss / cross_entropy in one node (_C._nll_loss) ----------------------------------------

NLL_TARGETS = {"plain": [0, 2, 1, 3, 2], "ignored": [0, -100, 1, 3, -100], "all_ignored": [-100] * 5,
               "custom_ignore": [0, 2, 2, 3, 1]}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("targets", NLL_TARGETS.keys())
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_nll_and_cross_entropy_one_node_match_torch(fn, targets, reduction, weighted, dtype):
    gen = np.random.default_rng(3)
    xv, wv = gen.standard_normal((5, 4)).tolist(), (gen.random(4) + 0.5).tolist()
    ignore = 2 if targets == "custom_ignore" else -100
    res = {}
    for L in (torch, fg):
        dt = getattr(L, dtype)
        x = L.tensor(xv, dtype=dt, requires_grad=True)
        t = L.tensor(NLL_TARGETS[targets])
        w = L.tensor(wv, dtype=dt) if weighted else None
        loss = getattr(L.nn.functional, fn)(x, t, weight=w, reduction=reduction, ignore_index=ignore)
        name = type(loss.grad_fn).__name__ if L is torch else loss.grad_fn.name()
        (g,) = L.autograd.grad(loss.sum(), x, create_graph=True)
        (g * g * x).sum().backward()  # second order: through the gradient's own graph
        res[L] = (name, loss.detach().double().tolist(), g.detach().double().tolist(), x.grad.double().tolist())
    t_, f_ = res[torch], res[fg]
    assert f_[0] == t_[0]
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, e in zip(f_[1:], t_[1:]):
        np.testing.assert_allclose(np.array(a, dtype=float), np.array(e, dtype=float), rtol=tol, atol=tol)


def test_nll_one_node_hands_errors_to_the_checked_path():
    from test_errors import assert_same_error
    F_ = lambda L: L.nn.functional
    assert_same_error(lambda L: F_(L).cross_entropy(L.zeros(2, 3), L.tensor([0, 3])), "out of bounds")
    assert_same_error(lambda L: F_(L).nll_loss(L.zeros(2, 3), L.tensor([-1, 0])), "out of bounds")
    assert_same_error(lambda L: F_(L).cross_entropy(L.zeros(2, 3), L.tensor([0, 1]), reduction="avg"), "is not a valid value")
    assert_same_error(lambda L: F_(L).cross_entropy(L.zeros(2, 3), L.tensor([0.0, 1.0])))
    assert_same_error(lambda L: F_(L).nll_loss(L.zeros(2, 3), L.tensor([0, 1]), weight=L.ones(4)), "weight tensor should be defined")
