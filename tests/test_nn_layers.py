"""nn layers against torch: activations, distances, group/instance/RMS norms, attention, interpolation,
padding modes, transposed convolution, adaptive max pooling and losses (functional forms through
`parity.check_op`: forward, gradients and second-order gradients), and the matching modules with torch's
parameters copied in (`test_nn.check_module`), RNN/GRU/LSTM, MultiheadAttention and Transformer layers
included; state_dict keys and shapes, reprs and error kinds."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg
from parity import In, check_op, same
from test_nn import _error, check_module

RNG = np.random.default_rng(4321)


def F(L):
    return L.nn.functional


def V(a, grad=None):
    return In(value=np.asarray(a, dtype=np.float64), grad=grad)


def idx(a):
    return In(value=np.asarray(a, dtype=np.int64), dtype="int64")


def signs(shape):
    return V(np.where(RNG.random(shape) < 0.5, -1.0, 1.0), grad=False)


# values away from the activations' kinks
KINKY = V([[-7.0, -3.5, -2.2, -0.9, -0.3], [0.2, 0.7, 1.3, 2.9, 6.6]])
BOOLMASK = np.array([[True, True, False, True], [True, False, True, True], [False, True, True, True]])

FUNCTIONAL = [
    ("elu", lambda L, x: (F(L).elu(x), F(L).elu(x, 0.5), F(L).elu(x * 1, inplace=True)), [KINKY], {}),
    ("celu_selu", lambda L, x: (F(L).celu(x, 2.0), F(L).selu(x)), [KINKY], {}),
    ("hardtanh_relu6", lambda L, x: (F(L).hardtanh(x), F(L).hardtanh(x, -2.0, 3.0), F(L).relu6(x * 3)), [KINKY], {}),
    ("hardsigmoid_hardswish", lambda L, x: (F(L).hardsigmoid(x), F(L).hardswish(x)), [KINKY],
     {"double": False}),  # torch has no double backward for these
    ("mish", lambda L, x: F(L).mish(x), [KINKY], {}),
    ("softsign_tanhshrink", lambda L, x: (F(L).softsign(x), F(L).tanhshrink(x)), [KINKY], {}),
    ("shrinks", lambda L, x: (F(L).softshrink(x), F(L).softshrink(x, 1.0), F(L).hardshrink(x),
                              F(L).hardshrink(x, 1.0)), [KINKY], {}),
    ("threshold", lambda L, x: F(L).threshold(x, 0.5, -2.0), [KINKY], {}),
    ("glu", lambda L, x: (F(L).glu(x), F(L).glu(x, 0)), [(4, 6)], {}),
    ("softmin", lambda L, x: (F(L).softmin(x, 1), F(L).softmin(x, dim=0)), [(3, 4)], {}),
    ("rrelu_eval", lambda L, x: F(L).rrelu(x), [KINKY], {}),
    ("prelu", lambda L, x, w: F(L).prelu(x, w), [(2, 3, 4), In((3,), domain="pos")], {}),
    ("prelu_scalar", lambda L, x, w: F(L).prelu(x, w), [(2, 3), In((1,), domain="pos")], {}),
    ("normalize", lambda L, x: (F(L).normalize(x), F(L).normalize(x, p=1.0, dim=0), F(L).normalize(x, dim=-1)),
     [(3, 4)], {}),
    ("cosine_similarity", lambda L, a, b: (F(L).cosine_similarity(a, b), F(L).cosine_similarity(a, b, dim=0)),
     [(3, 4), (3, 4)], {}),
    ("cosine_similarity_broadcast", lambda L, a, b: F(L).cosine_similarity(a, b, dim=-1), [(2, 3, 4), (3, 4)], {}),
    ("pairwise_distance", lambda L, a, b: (F(L).pairwise_distance(a, b), F(L).pairwise_distance(a, b, p=1.0),
                                           F(L).pairwise_distance(a, b, keepdim=True)), [(3, 4), (3, 4)], {}),
    # normalization
    ("group_norm", lambda L, x, w, b: (F(L).group_norm(x, 2, w, b), F(L).group_norm(x, 3, eps=1e-3)),
     [(2, 6, 5), (6,), (6,)], {}),
    ("group_norm_4d", lambda L, x: F(L).group_norm(x, 1), [(2, 4, 2, 3)], {}),
    ("instance_norm", lambda L, x, w, b: (F(L).instance_norm(x), F(L).instance_norm(x, weight=w, bias=b)),
     [(2, 3, 5), (3,), (3,)], {}),
    ("instance_norm_2d", lambda L, x: F(L).instance_norm(x, eps=1e-3), [(2, 3, 2, 4)], {}),
    ("rms_norm", lambda L, x, w: (F(L).rms_norm(x, (4,), w), F(L).rms_norm(x, [3, 4], eps=1e-3)),
     [(2, 3, 4), (4,)], {}),
    ("rms_norm_f32", lambda L, x: F(L).rms_norm(x, (4,)), [In((3, 4), dtype="float32")], {}),
    ("local_response_norm", lambda L, x: (F(L).local_response_norm(x, 2),
                                          F(L).local_response_norm(x, 3, 0.1, 0.5, 2.0)), [(2, 5, 3)], {}),
    # attention
    ("sdpa", lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v), [(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2)],
     {}),
    ("sdpa_causal_scale", lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3),
     [(2, 4, 3), (2, 4, 3), (2, 4, 3)], {"double": False}),
    ("sdpa_float_mask", lambda L, q, k, v, m: F(L).scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(2, 3, 5), (2, 4, 5), (2, 4, 5), (3, 4)], {}),
    ("sdpa_bool_mask", lambda L, q, k, v, m: F(L).scaled_dot_product_attention(q, k, v, attn_mask=m),
     [(2, 3, 5), (2, 4, 5), (2, 4, 5), In(value=BOOLMASK, dtype="bool")], {"double": False}),
    # resampling, padding
    ("interpolate_nearest", lambda L, x: (F(L).interpolate(x, scale_factor=2), F(L).interpolate(x, size=(5, 3)),
                                          F(L).interpolate(x, size=2), F(L).interpolate(x, scale_factor=(1.5, 0.7))),
     [(2, 2, 3, 4)], {}),
    ("interpolate_nearest_1d", lambda L, x: (F(L).interpolate(x, scale_factor=3), F(L).interpolate(x, size=7)),
     [(2, 3, 4)], {}),
    ("interpolate_bilinear", lambda L, x: [F(L).interpolate(x, size=(5, 7), mode="bilinear", align_corners=a)
                                           for a in (False, True)] +
     [F(L).interpolate(x, scale_factor=2, mode="bilinear"), F(L).interpolate(x, scale_factor=0.6, mode="bilinear"),
      F(L).interpolate(x, size=(2, 2), mode="bilinear", align_corners=True)], [(1, 2, 3, 4)], {}),
    ("interpolate_linear", lambda L, x: [F(L).interpolate(x, size=9, mode="linear", align_corners=a)
                                         for a in (False, True)] +
     [F(L).interpolate(x, scale_factor=2.5, mode="linear")], [(2, 2, 4)], {}),
    ("pixel_shuffle", lambda L, x: (F(L).pixel_shuffle(x, 2), F(L).pixel_unshuffle(F(L).pixel_shuffle(x, 2), 2)),
     [(2, 8, 3, 2)], {}),
    ("pixel_unshuffle", lambda L, x: (F(L).pixel_unshuffle(x, 3), F(L).pixel_shuffle(x, 1)), [(1, 2, 6, 3)], {}),
    ("pad_reflect", lambda L, x: (F(L).pad(x, (2, 1), mode="reflect"), F(L).pad(x, (1, 2, 2, 0), mode="reflect")),
     [(2, 3, 4)], {}),
    ("pad_replicate", lambda L, x: (F(L).pad(x, (3, 1), mode="replicate"), F(L).pad(x, (1, 2, 0, 4), "replicate")),
     [(2, 3, 4)], {}),
    ("pad_circular", lambda L, x: (F(L).pad(x[0], (2, 1), mode="circular"), F(L).pad(x, (1, 2, 3, 1), "circular")),
     [(1, 2, 3, 4)], {}),
    ("pad_constant_still", lambda L, x: F(L).pad(x, (1, 1), value=2.0), [(2, 3)], {}),
    # transposed convolution, pooling
    ("conv_transpose2d", lambda L, x, w, b: (F(L).conv_transpose2d(x, w, b), F(L).conv_transpose2d(x, w, stride=2),
                                             F(L).conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)),
     [(2, 3, 4, 5), (3, 2, 3, 2), (2,)], {}),
    ("conv_transpose2d_groups_dilation", lambda L, x, w: F(L).conv_transpose2d(x, w, stride=(2, 1), padding=(0, 1),
                                                                               groups=2, dilation=2),
     [(1, 4, 3, 3), (4, 3, 2, 2)], {}),
    ("conv_transpose1d", lambda L, x, w, b: (F(L).conv_transpose1d(x, w, b), F(L).conv_transpose1d(x, w, b, 3, 1, 2)),
     [(2, 3, 5), (3, 4, 3), (4,)], {}),
    ("conv_transpose1d_unbatched", lambda L, x, w: F(L).conv_transpose1d(x, w, stride=2), [(3, 5), (3, 2, 2)], {}),
    ("adaptive_max_pool", lambda L, x: (F(L).adaptive_max_pool2d(x, (2, 3)), F(L).adaptive_max_pool2d(x, 1),
                                        F(L).adaptive_max_pool1d(x[0], 3)), [(2, 3, 5, 7)], {}),
    # losses
    ("huber", lambda L, x, t: [F(L).huber_loss(x, t, reduction=r) for r in ("mean", "sum", "none")] +
     [F(L).huber_loss(x, t, delta=0.4)], [(3, 4), (3, 4)], {}),
    ("margin_ranking", lambda L, a, b, y: [F(L).margin_ranking_loss(a, b, y, margin=m, reduction=r)
                                           for r in ("mean", "sum", "none") for m in (0.0, 0.5)],
     [(6,), (6,), signs((6,))], {}),
    ("cosine_embedding", lambda L, a, b, y: [F(L).cosine_embedding_loss(a, b, y, margin=m, reduction=r)
                                             for r in ("mean", "sum", "none") for m in (0.0, -0.3)],
     [(5, 4), (5, 4), signs((5,))], {}),
    ("hinge_embedding", lambda L, x, y: [F(L).hinge_embedding_loss(x, y, margin=m, reduction=r)
                                         for r in ("mean", "sum", "none") for m in (1.0, 0.5)],
     [(3, 4), signs((3, 4))], {}),
    ("triplet_margin", lambda L, a, p, n: [F(L).triplet_margin_loss(a, p, n, reduction=r) for r in ("mean", "none")] +
     [F(L).triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction="sum")], [(4, 3), (4, 3), (4, 3)], {}),
    ("poisson_nll", lambda L, x, t: [F(L).poisson_nll_loss(x, t, reduction=r) for r in ("mean", "sum", "none")] +
     [F(L).poisson_nll_loss(x, t, full=True)],
     [(3, 4), V(RNG.integers(0, 5, (3, 4)), grad=False)], {}),
    ("poisson_nll_linear", lambda L, x, t: (F(L).poisson_nll_loss(x, t, log_input=False),
                                            F(L).poisson_nll_loss(x, t, log_input=False, full=True, reduction="none")),
     [In((3, 4), domain="pos"), V(RNG.integers(0, 5, (3, 4)) + 0.5)], {}),
    ("gaussian_nll", lambda L, x, t, v: [F(L).gaussian_nll_loss(x, t, v, reduction=r) for r in ("mean", "sum", "none")]
     + [F(L).gaussian_nll_loss(x, t, v, full=True)], [(3, 4), (3, 4), In((3, 4), domain="pos")], {}),
    ("gaussian_nll_homoscedastic", lambda L, x, t, v: (F(L).gaussian_nll_loss(x, t, v),
                                                       F(L).gaussian_nll_loss(x, t, v.unsqueeze(-1), eps=1.0)),
     [(3, 4), (3, 4), In((3,), domain="pos")], {}),
    ("soft_margin", lambda L, x, y: [F(L).soft_margin_loss(x, y, reduction=r) for r in ("mean", "sum", "none")],
     [(3, 4), signs((3, 4))], {}),
    ("multilabel_soft_margin", lambda L, x, y, w: [F(L).multilabel_soft_margin_loss(x, y, reduction=r)
                                                   for r in ("mean", "sum", "none")] +
     [F(L).multilabel_soft_margin_loss(x, y, weight=w)],
     [(3, 4), V(RNG.integers(0, 2, (3, 4)), grad=False), In((4,), domain="pos", grad=False)], {}),
    ("multi_margin", lambda L, x, y, w: [F(L).multi_margin_loss(x, y, reduction=r) for r in ("mean", "sum", "none")] +
     [F(L).multi_margin_loss(x, y, p=2, margin=0.5, weight=w)],
     [(4, 5), idx([0, 4, 2, 2]), In((5,), domain="pos", grad=False)], {"double": False}),
    ("multi_margin_unbatched", lambda L, x, y: F(L).multi_margin_loss(x, y), [(5,), idx(3)], {"double": False}),
]


@pytest.mark.parametrize("fn,specs,kw", [pytest.param(f, s, k, id=i) for i, f, s, k in FUNCTIONAL])
def test_functional_parity(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *specs, **kw)


# ---------------------------------------------------------------- modules with torch's parameters copied in


def D(module):
    return module.double()


def wrap(L, module, fn):
    """`module` as child `m` of a Module whose forward is fn(m, *inputs) (one tensor out)."""
    class Wrap(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = module

        def forward(self, *inputs):
            return fn(self.m, *inputs)

    return Wrap()


def first(L, module):
    return wrap(L, module, lambda m, *xs: m(*xs)[0])


def rnn_all(L, module, *state):
    """An RNN's output and final states in one tensor (flattened and concatenated)."""
    def fn(m, x, *hs):
        out, h = m(x, *((tuple(hs) if len(hs) > 1 else hs[0]),) if hs else ())
        hs_out = h if isinstance(h, tuple) else (h,)
        return L.cat([out.reshape(-1)] + [t.reshape(-1) for t in hs_out])
    return wrap(L, module, fn)


KPM = np.array([[False, False, True, False], [False, True, False, True]])
CAUSAL = np.triu(np.ones((3, 3), dtype=bool), 1)

MODULES = [
    ("activations", lambda L: L.nn.Sequential(
        L.nn.ELU(), L.nn.CELU(0.7), L.nn.SELU(), L.nn.Hardtanh(-0.8, 1.2), L.nn.Mish(), L.nn.Softsign(),
        L.nn.Hardswish(), L.nn.Tanhshrink(), L.nn.Softshrink(0.1), L.nn.Hardshrink(0.01), L.nn.ReLU6(),
        L.nn.Threshold(0.01, -1.0), L.nn.LogSigmoid(), L.nn.Hardsigmoid(), L.nn.RReLU(), L.nn.Softmin(1)),
     [(3, 5)], {"train": False}),
    ("glu", lambda L: L.nn.GLU(1), [(3, 4, 2)], {}),
    ("prelu", lambda L: D(L.nn.PReLU(3, init=0.1)), [(2, 3, 4)], {}),
    ("prelu_shared", lambda L: D(L.nn.PReLU()), [(2, 3)], {}),
    ("cosine_similarity", lambda L: L.nn.CosineSimilarity(dim=0), [(3, 4), (3, 4)], {}),
    ("pairwise_distance", lambda L: L.nn.PairwiseDistance(p=3.0, keepdim=True), [(3, 4), (3, 4)], {}),
    ("group_norm", lambda L: D(L.nn.GroupNorm(3, 6)), [(2, 6, 4)], {}),
    ("group_norm_noaffine", lambda L: D(L.nn.GroupNorm(2, 4, eps=1e-3, affine=False)), [(2, 4, 3, 2)], {}),
    ("instance_norm1d", lambda L: D(L.nn.InstanceNorm1d(3)), [(2, 3, 5)], {}),
    ("instance_norm1d_unbatched", lambda L: D(L.nn.InstanceNorm1d(3, affine=True)), [(3, 5)], {}),
    ("instance_norm2d_affine_track", lambda L: D(L.nn.InstanceNorm2d(3, affine=True, track_running_stats=True)),
     [(2, 3, 4, 3)], {"steps": 2}),
    ("instance_norm2d_track_eval", lambda L: D(L.nn.InstanceNorm2d(2, track_running_stats=True)), [(2, 2, 3, 3)],
     {"train": False}),
    ("rms_norm", lambda L: D(L.nn.RMSNorm(4)), [(2, 3, 4)], {}),
    ("rms_norm_2d_noaffine", lambda L: D(L.nn.RMSNorm([3, 4], eps=1e-4, elementwise_affine=False)), [(2, 3, 4)], {}),
    ("local_response_norm", lambda L: L.nn.LocalResponseNorm(3), [(2, 4, 3, 3)], {}),
    ("upsample", lambda L: L.nn.Sequential(L.nn.Upsample(scale_factor=2), L.nn.Upsample(size=(5, 9), mode="bilinear"),
                                           L.nn.UpsamplingBilinear2d(scale_factor=1.5),
                                           L.nn.UpsamplingNearest2d(size=(4, 4))), [(1, 2, 3, 4)], {}),
    ("pixel_shuffle", lambda L: L.nn.Sequential(L.nn.PixelShuffle(2), L.nn.PixelUnshuffle(4)), [(1, 8, 2, 4)], {}),
    ("pads_1d", lambda L: L.nn.Sequential(L.nn.ZeroPad1d(1), L.nn.ConstantPad1d((2, 0), 1.5),
                                          L.nn.ReflectionPad1d(2), L.nn.ReplicationPad1d((1, 3)),
                                          L.nn.CircularPad1d(1)), [(2, 3, 4)], {}),
    ("pads_2d", lambda L: L.nn.Sequential(L.nn.ZeroPad2d((1, 0, 2, 1)), L.nn.ConstantPad2d(1, -0.5),
                                          L.nn.ReflectionPad2d((2, 1, 0, 3)), L.nn.ReplicationPad2d(1),
                                          L.nn.CircularPad2d((0, 1, 1, 0))), [(2, 3, 4, 3)], {}),
    ("conv_transpose2d", lambda L: D(L.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)),
     [(2, 4, 3, 5)], {}),
    ("conv_transpose2d_plain", lambda L: D(L.nn.ConvTranspose2d(3, 2, (2, 3), bias=False)), [(2, 3, 4, 4)], {}),
    ("conv_transpose2d_output_size", lambda L: wrap(L, D(L.nn.ConvTranspose2d(3, 2, 3, stride=2)),
                                                    lambda m, x: m(x, output_size=[8, 10])), [(1, 3, 3, 4)], {}),
    ("conv_transpose1d", lambda L: D(L.nn.ConvTranspose1d(3, 4, 3, stride=3, padding=1, dilation=2)), [(2, 3, 5)], {}),
    ("fold_unfold", lambda L: L.nn.Sequential(L.nn.Unfold(2, padding=1), L.nn.Fold((3, 4), 2, padding=1)),
     [(2, 3, 3, 4)], {}),
    ("adaptive_max_pool", lambda L: L.nn.Sequential(L.nn.AdaptiveMaxPool2d((3, None)), L.nn.Flatten(2),
                                                    L.nn.AdaptiveMaxPool1d(4)), [(2, 3, 7, 5)], {}),
    # attention, transformer
    ("mha", lambda L: first(L, D(L.nn.MultiheadAttention(8, 2))), [(3, 2, 8), (4, 2, 8), (4, 2, 8)], {}),
    ("mha_weights", lambda L: wrap(L, D(L.nn.MultiheadAttention(4, 2)), lambda m, q, k: m(q, k, k)[1]),
     [(3, 2, 4), (5, 2, 4)], {}),
    ("mha_weights_per_head", lambda L: wrap(L, D(L.nn.MultiheadAttention(4, 2, batch_first=True)),
                                            lambda m, q, k: m(q, k, k, average_attn_weights=False)[1]),
     [(2, 3, 4), (2, 5, 4)], {}),
    ("mha_batch_first_masks", lambda L: wrap(L, D(L.nn.MultiheadAttention(6, 3, batch_first=True)),
                                             lambda m, q, k, v: m(q, k, v, key_padding_mask=L.tensor(KPM),
                                                                  attn_mask=L.tensor(CAUSAL[:, :1].repeat(4, 1)))[0]),
     [(2, 3, 6), (2, 4, 6), (2, 4, 6)], {}),
    ("mha_float_masks_nobias", lambda L: wrap(L, D(L.nn.MultiheadAttention(4, 1, bias=False)),
                                              lambda m, x, am: m(x, x, x, attn_mask=am, need_weights=False)[0]),
     [(3, 2, 4), RNG.standard_normal((3, 3))], {}),
    ("mha_kdim_vdim", lambda L: first(L, D(L.nn.MultiheadAttention(4, 2, kdim=3, vdim=5))),
     [(3, 2, 4), (6, 2, 3), (6, 2, 5)], {}),
    ("mha_unbatched", lambda L: first(L, D(L.nn.MultiheadAttention(4, 2))), [(3, 4), (5, 4), (5, 4)], {}),
    ("encoder_layer", lambda L: D(L.nn.TransformerEncoderLayer(8, 2, 16)), [(5, 2, 8)], {"train": False}),
    ("encoder_layer_norm_first_gelu", lambda L: D(L.nn.TransformerEncoderLayer(
        8, 4, 12, activation="gelu", norm_first=True, batch_first=True)), [(2, 5, 8)], {"train": False}),
    ("encoder_masks", lambda L: wrap(L, D(L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(6, 2, 10), 2,
                                                                  norm=L.nn.LayerNorm(6), enable_nested_tensor=False)),
                                     lambda m, x: m(x, mask=L.tensor(CAUSAL),
                                                    src_key_padding_mask=L.tensor(KPM[:, :3]))),
     [(3, 2, 6)], {"train": False}),
    ("encoder_dropout0_train", lambda L: D(L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0,
                                                                                               batch_first=True), 3)),
     [(2, 3, 4)], {}),
    # recurrent
    ("rnn", lambda L: rnn_all(L, D(L.nn.RNN(3, 4))), [(5, 2, 3)], {}),
    ("rnn_relu_2layer_bi_h0", lambda L: rnn_all(L, D(L.nn.RNN(3, 4, 2, nonlinearity="relu", bidirectional=True))),
     [(5, 2, 3), (4, 2, 4)], {}),
    ("gru_batch_first_2layer", lambda L: rnn_all(L, D(L.nn.GRU(3, 5, num_layers=2, batch_first=True))),
     [(2, 4, 3)], {}),
    ("gru_bi_nobias_h0", lambda L: rnn_all(L, D(L.nn.GRU(2, 3, bias=False, bidirectional=True))),
     [(4, 3, 2), (2, 3, 3)], {}),
    ("lstm", lambda L: rnn_all(L, D(L.nn.LSTM(3, 4))), [(5, 2, 3)], {}),
    ("lstm_2layer_bi_batch_first_state", lambda L: rnn_all(L, D(L.nn.LSTM(3, 4, 2, batch_first=True,
                                                                          bidirectional=True))),
     [(2, 5, 3), (4, 2, 4), (4, 2, 4)], {}),
    ("lstm_unbatched", lambda L: rnn_all(L, D(L.nn.LSTM(3, 2, 2))), [(4, 3)], {}),
    ("rnn_cell", lambda L: D(L.nn.RNNCell(3, 4)), [(2, 3), (2, 4)], {}),
    ("rnn_cell_relu_nobias_unbatched", lambda L: D(L.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")), [(3,)], {}),
    ("gru_cell", lambda L: D(L.nn.GRUCell(3, 4)), [(2, 3), (2, 4)], {}),
    ("lstm_cell", lambda L: wrap(L, D(L.nn.LSTMCell(3, 4)), lambda m, x, h, c: L.cat(m(x, (h, c)), -1)),
     [(2, 3), (2, 4), (2, 4)], {}),
    ("lstm_cell_zero_state", lambda L: wrap(L, D(L.nn.LSTMCell(3, 2)), lambda m, x: m(x)[1]), [(2, 3)], {}),
]


@pytest.mark.parametrize("make,inputs,kw", [pytest.param(m, i, k, id=n) for n, m, i, k in MODULES])
def test_module_parity(make, inputs, kw):
    check_module(make, *inputs, **kw)


def test_rnn_state_dict_from_torch_and_init_distribution():
    torch.manual_seed(0)
    tm = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    fm = fg.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    t_sd = tm.state_dict()
    assert [(k, tuple(v.shape)) for k, v in fm.state_dict().items()] == [(k, tuple(v.shape)) for k, v in t_sd.items()]
    bound = 1 / np.sqrt(5)
    for v in fm.state_dict().values():  # U(-1/sqrt(hidden), 1/sqrt(hidden))
        a = v.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 3
    fm.load_state_dict({k: fg.tensor(v.numpy()) for k, v in t_sd.items()})
    x = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    t_out, (t_h, t_c) = tm(torch.tensor(x))
    f_out, (f_h, f_c) = fm(fg.tensor(x))
    for t, f in ((t_out, f_out), (t_h, f_h), (t_c, f_c)):
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.GRU(4, 3, 3, bias=False), lambda L: L.nn.RNN(2, 3, bidirectional=True), lambda L: L.nn.GRUCell(2, 5),
    lambda L: L.nn.MultiheadAttention(6, 3), lambda L: L.nn.MultiheadAttention(6, 2, kdim=4, vdim=3, bias=False),
    lambda L: L.nn.TransformerEncoderLayer(4, 2, 8), lambda L: L.nn.ConvTranspose2d(4, 6, 3, groups=2),
    lambda L: L.nn.GroupNorm(2, 4), lambda L: L.nn.InstanceNorm1d(3, affine=True, track_running_stats=True),
    lambda L: L.nn.RMSNorm((2, 3)), lambda L: L.nn.PReLU(4),
])
def test_parameter_names_shapes_and_repr(make):
    same(lambda L: ([(k, tuple(v.shape), str(v.dtype).split(".")[-1]) for k, v in make(L).state_dict().items()],
                    repr(make(L)), [n for n, p in make(L).named_parameters()]))


def test_default_init_distributions():
    """Values cannot match torch's; the distributions do: MHA's xavier in-projection and zero biases,
    ConvTranspose's kaiming bound over fan_in = out_channels/groups * k."""
    m = fg.nn.MultiheadAttention(64, 4)
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6 / (64 + 192))
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.1 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    c = fg.nn.ConvTranspose2d(16, 32, 3)
    w = c.weight.detach().numpy()
    assert w.shape == (16, 32, 3, 3)
    bound = 1 / np.sqrt(32 * 9)
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.1 * bound


LOSS_MODULES = [
    ("huber", lambda L: L.nn.HuberLoss(delta=0.5), 2),
    ("margin_ranking", lambda L: L.nn.MarginRankingLoss(margin=0.2, reduction="sum"), 2),
    ("cosine_embedding", lambda L: L.nn.CosineEmbeddingLoss(margin=0.1), 2),
    ("hinge_embedding", lambda L: L.nn.HingeEmbeddingLoss(margin=2.0, reduction="none"), 1),
    ("triplet", lambda L: L.nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True), 3),
    ("poisson", lambda L: L.nn.PoissonNLLLoss(full=True), 1),
    ("gaussian", lambda L: L.nn.GaussianNLLLoss(full=True, reduction="sum"), 3),
    ("soft_margin", lambda L: L.nn.SoftMarginLoss(), 1),
    ("multilabel_soft_margin", lambda L: L.nn.MultiLabelSoftMarginLoss(
        weight=L.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=L.float64)), 1),
    ("multi_margin", lambda L: L.nn.MultiMarginLoss(p=2, margin=0.7,
                                                    weight=L.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=L.float64)), 1),
]


@pytest.mark.parametrize("make,n_grad", [pytest.param(m, a, id=n) for n, m, a in LOSS_MODULES])
def test_loss_modules(make, n_grad):
    """The first n_grad arguments require grad (torch refuses a gradient for some targets)."""
    rng = np.random.default_rng(9)
    xs = [rng.standard_normal((4, 5)) for _ in range(2)]
    name = type(make(torch)).__name__
    if name in ("MarginRankingLoss", "CosineEmbeddingLoss"):
        xs = xs[:2] + [np.where(rng.random(4 if name == "CosineEmbeddingLoss" else (4, 5)) < 0.5, -1.0, 1.0)]
        if name == "MarginRankingLoss":
            xs = [x[0] for x in xs]
    elif name == "HingeEmbeddingLoss" or name == "SoftMarginLoss":
        xs[1] = np.where(xs[1] < 0, -1.0, 1.0)
    elif name == "PoissonNLLLoss":
        xs[1] = rng.integers(0, 5, (4, 5)).astype(np.float64)
    elif name == "GaussianNLLLoss":
        xs.append(rng.random((4, 5)) + 0.1)
    elif name == "MultiLabelSoftMarginLoss":
        xs[1] = (xs[1] > 0).astype(np.float64)
    elif name == "MultiMarginLoss":
        xs[1] = np.array([0, 4, 2, 1])
    elif name == "TripletMarginLoss":
        xs.append(rng.standard_normal((4, 5)))

    def run(L):
        ins = [L.tensor(x, requires_grad=i < n_grad) for i, x in enumerate(xs)]
        loss = make(L)(*ins)
        loss.sum().backward()
        return loss, [i.grad for i in ins if i.requires_grad]

    same(run)
    same(lambda L: (repr(make(L)), list(make(L).state_dict().keys())))


def test_rrelu_train_is_random_within_bounds():
    fg.manual_seed(0)
    x = fg.full((2000,), -1.0, requires_grad=True)
    y = F(fg).rrelu(x, 0.1, 0.3, training=True)
    slopes = (-y).detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)
    assert np.array_equal(fg.nn.RReLU(0.1, 0.3).eval()(x).detach().numpy(), -0.2 * np.ones(2000, dtype=np.float32))


def test_mha_dropout_only_in_training():
    fg.manual_seed(0)
    m = fg.nn.MultiheadAttention(4, 2, dropout=0.5)
    x = fg.randn(3, 2, 4)
    a, b = m(x, x, x)[1], m(x, x, x)[1]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    np.testing.assert_allclose(m(x, x, x)[1].detach().numpy().sum(-1), np.ones((2, 3)), rtol=1e-5)


@pytest.mark.parametrize("fn", [
    lambda L: F(L).glu(L.rand(3, 5)),
    lambda L: F(L).group_norm(L.rand(2, 6, 3), 4),
    lambda L: L.nn.GroupNorm(4, 6),
    lambda L: F(L).pad(L.rand(1, 2, 3), (3, 3), mode="reflect"),
    lambda L: F(L).pad(L.rand(1, 2, 3, 4), (1, 1), mode="replicate"),
    lambda L: F(L).pixel_shuffle(L.rand(1, 6, 2, 2), 2),
    lambda L: F(L).pixel_unshuffle(L.rand(1, 1, 5, 4), 2),
    lambda L: F(L).interpolate(L.rand(1, 2, 3, 3), scale_factor=2, size=4),
    lambda L: F(L).interpolate(L.rand(1, 2, 3, 3)),
    lambda L: F(L).interpolate(L.rand(1, 2, 3, 3), scale_factor=2, align_corners=True),
    lambda L: F(L).prelu(L.rand(2, 3, 4), L.rand(4)),
    lambda L: F(L).gaussian_nll_loss(L.rand(3, 4), L.rand(3, 4), L.rand(2)),
    lambda L: F(L).gaussian_nll_loss(L.rand(3, 4), L.rand(3, 4), -L.rand(3, 4)),
    lambda L: F(L).multi_margin_loss(L.rand(3, 4), L.tensor([0, 1, 2]), p=3),
    lambda L: F(L).triplet_margin_loss(L.rand(3, 4), L.rand(3, 4), L.rand(4)),
    lambda L: F(L).conv_transpose2d(L.rand(1, 3, 4, 4), L.rand(2, 2, 3, 3)),
    lambda L: F(L).conv_transpose2d(L.rand(1, 3, 4, 4), L.rand(3, 2, 3, 3), stride=2, output_padding=2),
    lambda L: F(L).hardtanh(L.rand(3), 2.0, 1.0),
    lambda L: F(L).softshrink(L.rand(3), -1.0),
    lambda L: L.nn.RNN(3, 4, nonlinearity="sigmoid"),
    lambda L: L.nn.LSTM(3, 4, dropout=1.5),
    lambda L: L.nn.GRU(3, 4)(L.rand(2, 3, 3, 3)),
    lambda L: L.nn.GRU(3, 4)(L.rand(5, 2, 2)),
    lambda L: L.nn.GRU(3, 4)(L.rand(5, 2, 3), L.rand(1, 3, 4)),
    lambda L: L.nn.MultiheadAttention(5, 2),
    lambda L: L.nn.MultiheadAttention(4, 2)(L.rand(3, 2, 4), L.rand(3, 2, 4), L.rand(3, 2, 4),
                                            attn_mask=L.rand(2, 2)),
    lambda L: L.nn.TransformerEncoderLayer(4, 2, activation="tanh"),
    lambda L: L.nn.InstanceNorm1d(3)(L.rand(2, 3, 1)),
    lambda L: L.nn.ConvTranspose2d(3, 4, 3, groups=2),
    lambda L: L.nn.Hardtanh(1.0, -1.0),
    lambda L: L.nn.TripletMarginLoss(margin=0.0),
    lambda L: L.nn.MultiMarginLoss(p=3),
])
def test_errors_as_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got[0] == expected[0], (got, expected)
