"""Attention and transformers against torch, with torch's weights copied in: nn.Transformer,
TransformerDecoder(Layer) and the encoder (masks, key padding masks, is_causal hints, norm_first,
batch_first, string or callable activations, dropout), MultiheadAttention's add_bias_kv / add_zero_attn
and the functional multi_head_attention_forward; F.scaled_dot_product_attention with enable_gqa and
fully masked rows (values and gradients); nn.attention's SDPBackend and sdpa_kernel."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg
from parity import check_op, same
from test_nn import _error, check_module


def F(L):
    return L.nn.functional


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


def causal(L, n):
    return L.nn.Transformer.generate_square_subsequent_mask(n, dtype=L.float64)


TGT_KPM = np.array([[False, False, False, True], [False, False, False, False]])
SRC_KPM = np.array([[False, False, True, True, False], [False, False, False, False, True]])
MEM_BOOL = np.triu(np.ones((4, 5), dtype=bool), 2)

MODULES = [
    ("decoder_layer", lambda L: D(L.nn.TransformerDecoderLayer(8, 2, 16)), [(4, 2, 8), (5, 2, 8)], {"train": False}),
    ("decoder_layer_norm_first_gelu_batch_first", lambda L: D(L.nn.TransformerDecoderLayer(
        8, 4, 12, activation="gelu", norm_first=True, batch_first=True)), [(2, 4, 8), (2, 5, 8)], {"train": False}),
    ("decoder_layer_callable_activation_nobias", lambda L: D(L.nn.TransformerDecoderLayer(
        6, 2, 10, activation=F(L).silu, bias=False)), [(3, 2, 6), (5, 2, 6)], {"train": False}),
    ("decoder_layer_module_activation", lambda L: D(L.nn.TransformerDecoderLayer(6, 3, 8, activation=L.nn.GELU())),
     [(3, 2, 6), (4, 2, 6)], {"train": False}),
    ("decoder_layer_masks", lambda L: wrap(L, D(L.nn.TransformerDecoderLayer(6, 2, 10)), lambda m, t, s: m(
        t, s, tgt_mask=causal(L, 4), memory_mask=L.tensor(MEM_BOOL), tgt_key_padding_mask=L.tensor(TGT_KPM),
        memory_key_padding_mask=L.tensor(SRC_KPM), tgt_is_causal=True)), [(4, 2, 6), (5, 2, 6)], {"train": False}),
    ("decoder_layer_causal_hint_only", lambda L: wrap(L, D(L.nn.TransformerDecoderLayer(6, 2, 10, norm_first=True)),
                                                      lambda m, t, s: m(t, s, tgt_mask=causal(L, 4),
                                                                        tgt_is_causal=True)),
     [(4, 2, 6), (5, 2, 6)], {"train": False}),
    ("decoder_unbatched", lambda L: D(L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(4, 2, 8), 2)),
     [(3, 4), (5, 4)], {"train": False}),
    ("decoder_norm_masks", lambda L: wrap(L, D(L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(
        6, 2, 10, batch_first=True), 2, norm=L.nn.LayerNorm(6))), lambda m, t, s: m(
        t, s, tgt_mask=causal(L, 4), tgt_key_padding_mask=L.tensor(TGT_KPM),
        memory_key_padding_mask=L.tensor(SRC_KPM))), [(2, 4, 6), (2, 5, 6)], {"train": False}),
    ("decoder_dropout0_train", lambda L: D(L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(
        4, 2, 8, dropout=0.0), 3)), [(3, 2, 4), (2, 2, 4)], {}),
    ("transformer", lambda L: D(L.nn.Transformer(8, 2, 2, 2, 16)), [(5, 2, 8), (4, 2, 8)], {"train": False}),
    ("transformer_masks", lambda L: wrap(L, D(L.nn.Transformer(6, 3, 2, 1, 12)), lambda m, s, t: m(
        s, t, tgt_mask=m.generate_square_subsequent_mask(4, dtype=L.float64), src_key_padding_mask=L.tensor(SRC_KPM),
        tgt_key_padding_mask=L.tensor(TGT_KPM), memory_key_padding_mask=L.tensor(SRC_KPM))),
     [(5, 2, 6), (4, 2, 6)], {"train": False}),
    ("transformer_batch_first_norm_first_gelu", lambda L: wrap(L, D(L.nn.Transformer(
        8, 2, 1, 2, 16, activation="gelu", batch_first=True, norm_first=True)), lambda m, s, t: m(
        s, t, src_mask=L.tensor(np.triu(np.ones((5, 5), dtype=bool), 3)), tgt_mask=causal(L, 4), tgt_is_causal=True,
        memory_mask=L.tensor(MEM_BOOL))), [(2, 5, 8), (2, 4, 8)], {"train": False}),
    ("transformer_unbatched", lambda L: D(L.nn.Transformer(4, 2, 1, 1, 8)), [(5, 4), (3, 4)], {"train": False}),
    ("transformer_dropout0_train", lambda L: D(L.nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)), [(3, 2, 4), (2, 2, 4)],
     {}),
    ("transformer_custom_encoder_decoder", lambda L: D(L.nn.Transformer(
        4, 2, dim_feedforward=8, custom_encoder=L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(4, 2, 6), 1),
        custom_decoder=L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(4, 1, 8), 1))),
     [(3, 2, 4), (2, 2, 4)], {"train": False}),
    ("mha_bias_kv_zero_attn", lambda L: first(L, D(L.nn.MultiheadAttention(6, 2, add_bias_kv=True,
                                                                          add_zero_attn=True))),
     [(3, 2, 6), (4, 2, 6), (4, 2, 6)], {}),
    ("mha_bias_kv_masks_no_weights", lambda L: wrap(L, D(L.nn.MultiheadAttention(4, 2, add_bias_kv=True,
                                                                                 batch_first=True)),
                                                    lambda m, q, k: m(q, k, k, key_padding_mask=L.tensor(SRC_KPM),
                                                                      attn_mask=L.tensor(MEM_BOOL[:3]),
                                                                      need_weights=False)[0]),
     [(2, 3, 4), (2, 5, 4)], {}),
    ("mha_zero_attn_weights_kdim", lambda L: wrap(L, D(L.nn.MultiheadAttention(4, 2, add_zero_attn=True, kdim=3,
                                                                               vdim=2)),
                                                  lambda m, q, k, v: L.cat([t.reshape(-1) for t in m(
                                                      q, k, v, average_attn_weights=False)])),
     [(3, 2, 4), (5, 2, 3), (5, 2, 2)], {}),
]


@pytest.mark.parametrize("make,inputs,kw", [pytest.param(m, i, k, id=n) for n, m, i, k in MODULES])
def test_module_parity(make, inputs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's nested-tensor advice
        check_module(make, *inputs, **kw)


def test_torch_state_dict_loads_into_transformer():
    """A float32 torch Transformer's state_dict loads as is and gives torch's outputs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        tm = torch.nn.Transformer(16, 4, 2, 2, 32, batch_first=True).eval()
        fm = fg.nn.Transformer(16, 4, 2, 2, 32, batch_first=True).eval()
    fm.load_state_dict({k: fg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    src, tgt = rng.standard_normal((3, 7, 16)).astype(np.float32), rng.standard_normal((3, 5, 16)).astype(np.float32)
    mask = tm.generate_square_subsequent_mask(5)
    t_out = tm(torch.tensor(src), torch.tensor(tgt), tgt_mask=mask, tgt_is_causal=True)
    f_out = fm(fg.tensor(src), fg.tensor(tgt), tgt_mask=fm.generate_square_subsequent_mask(5), tgt_is_causal=True)
    np.testing.assert_allclose(f_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_dropout_is_random_in_training_and_off_in_eval():
    fg.manual_seed(0)
    m = fg.nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    src, tgt = fg.randn(4, 2, 8), fg.randn(3, 2, 8)
    a, b = m(src, tgt), m(src, tgt)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(src, tgt).detach().numpy(), m(src, tgt).detach().numpy())


def test_generate_square_subsequent_mask():
    same(lambda L: [L.nn.Transformer.generate_square_subsequent_mask(4),
                    L.nn.Transformer.generate_square_subsequent_mask(3, dtype=L.float64),
                    L.nn.Transformer.generate_square_subsequent_mask(2, device="cpu"),
                    L.nn.Transformer.generate_square_subsequent_mask(1)])


@pytest.mark.parametrize("make", [
    lambda L: L.nn.Transformer(8, 2, 1, 2, 16),
    lambda L: L.nn.Transformer(8, 2, 1, 1, 16, norm_first=True, batch_first=True, bias=False),
    lambda L: L.nn.TransformerDecoderLayer(4, 2, 8),
    lambda L: L.nn.TransformerDecoderLayer(4, 2, 8, activation="gelu", bias=False),
    lambda L: L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(4, 2, 8), 2, norm=L.nn.LayerNorm(4)),
    lambda L: L.nn.MultiheadAttention(6, 2, add_bias_kv=True, add_zero_attn=True),
])
def test_parameter_names_shapes_and_repr(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: ([(k, tuple(v.shape)) for k, v in make(L).state_dict().items()], repr(make(L))))


def test_transformer_attributes_and_init():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: [(m.d_model, m.nhead, m.batch_first, m.encoder.num_layers, m.decoder.num_layers)
                        for m in (L.nn.Transformer(8, 2, 3, 1, 16, batch_first=True),)])
    m = fg.nn.Transformer(64, 4, 1, 1, 128)
    w = m.decoder.layers[0].linear1.weight.detach().numpy()  # xavier_uniform over every matrix
    bound = np.sqrt(6 / (64 + 128))
    assert np.abs(w).max() <= bound and w.std() > bound / 3
    assert np.all(m.encoder.layers[0].self_attn.in_proj_bias.detach().numpy() == 0)


TRANSFORMER_ERRORS = [
    lambda L: L.nn.Transformer(8, 2, 1, 1, 16)(L.randn(3, 2, 8), L.randn(4, 3, 8)),
    lambda L: L.nn.Transformer(8, 2, 1, 1, 16, batch_first=True)(L.randn(2, 3, 8), L.randn(3, 4, 8)),
    lambda L: L.nn.Transformer(8, 2, 1, 1, 16)(L.randn(3, 2, 6), L.randn(4, 2, 6)),
    lambda L: L.nn.TransformerDecoderLayer(4, 2, 8, activation="tanh"),
    lambda L: L.nn.TransformerDecoderLayer(4, 2, 8)(L.randn(3, 2, 4), L.randn(5, 2, 4), tgt_is_causal=True),
    lambda L: L.nn.TransformerDecoder(L.nn.TransformerDecoderLayer(4, 2, 8), 1)(L.randn(3, 2, 4), L.randn(5, 2, 4),
                                                                               tgt_is_causal=True),
    lambda L: L.nn.TransformerEncoder(L.nn.TransformerEncoderLayer(4, 2, 8), 1)(L.randn(3, 2, 4), is_causal=True),
    lambda L: L.nn.MultiheadAttention(4, 2)(L.randn(3, 2, 4), L.randn(3, 2, 4), L.randn(3, 2, 4), is_causal=True),
    lambda L: L.nn.MultiheadAttention(4, 2)(L.randn(3, 2, 4), L.randn(3, 2, 4), L.randn(3, 2, 4),
                                            attn_mask=L.zeros(3, 4)),
    lambda L: L.nn.MultiheadAttention(4, 2)(L.randn(3, 2, 4), L.randn(3, 2, 4), L.randn(3, 2, 4),
                                            attn_mask=L.zeros(3, 3, 3)),
    lambda L: L.nn.MultiheadAttention(4, 2)(L.randn(3, 2, 4), L.randn(3, 2, 4), L.randn(3, 2, 4),
                                            key_padding_mask=L.zeros(2, 3, dtype=L.int64)),
]


@pytest.mark.parametrize("fn", TRANSFORMER_ERRORS)
def test_errors_as_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got == expected


# ---------------------------------------------------------------- functional attention


def test_multi_head_attention_forward_torch_signature():
    """The functional form with torch's positional signature, separate projection weights, static_k/v."""
    def run(L, q, k, v, w, b, ow, ob, qw, kw, vw, sk, sv):
        out1, w1 = F(L).multi_head_attention_forward(q, k, v, 4, 2, w, b, None, None, False, 0.0, ow, ob,
                                                     training=False)
        out2, _ = F(L).multi_head_attention_forward(q, k, v, 4, 2, None, b, None, None, True, 0.0, ow, ob,
                                                    need_weights=False, use_separate_proj_weight=True,
                                                    q_proj_weight=qw, k_proj_weight=kw, v_proj_weight=vw)
        out3, w3 = F(L).multi_head_attention_forward(q, k, v, 4, 2, w, None, None, None, False, 0.0, ow, None,
                                                     static_k=sk, static_v=sv, average_attn_weights=False)
        return out1, w1, out2, out3, w3
    check_op(run, (3, 2, 4), (5, 2, 4), (5, 2, 4), (12, 4), (12,), (4, 4), (4,), (4, 4), (4, 4), (4, 4),
             (4, 6, 2), (4, 6, 2), double=False)


def test_mha_fully_masked_rows_as_torch():
    """need_weights=True: torch's own softmax (NaN rows); need_weights=False: through scaled_dot_product_attention
    (zeros)."""
    mask = np.zeros((3, 4), dtype=bool)
    mask[1] = True

    def run(L, q, k):
        m = L.nn.MultiheadAttention(4, 2).double()
        if L is fg:
            m.load_state_dict({n: fg.tensor(t.detach().numpy()) for n, t in ref.state_dict().items()})
        else:
            m.load_state_dict(ref.state_dict())
        a = m(q, k, k, attn_mask=L.tensor(mask))
        b = m(q, k, k, attn_mask=L.tensor(mask), need_weights=False)
        return a[0], a[1], b[0]
    torch.manual_seed(0)
    ref = torch.nn.MultiheadAttention(4, 2).double()
    check_op(run, (3, 2, 4), (4, 2, 4), grad=False)


GQA_MASK = np.tril(np.ones((3, 6), dtype=bool), 2)
DEAD_ROWS = np.ones((3, 6), dtype=bool)
DEAD_ROWS[1] = False

SDPA = [
    ("gqa", lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, enable_gqa=True),
     [(2, 4, 3, 5), (2, 2, 6, 5), (2, 2, 6, 7)], {}),
    ("gqa_different_kv_heads_causal_scale", lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.4, enable_gqa=True), [(1, 6, 4, 3), (1, 3, 4, 3), (1, 1, 4, 2)], {}),
    ("gqa_bool_mask_5d", lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(GQA_MASK), enable_gqa=True), [(2, 2, 4, 3, 5), (2, 2, 2, 6, 5), (2, 2, 2, 6, 5)],
     {}),
    ("gqa_float_mask_unbatched", lambda L, q, k, v, m: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=m, enable_gqa=True), [(4, 3, 5), (2, 6, 5), (2, 6, 5), (3, 6)], {}),
    ("gqa_same_heads", lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, enable_gqa=True),
     [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)], {"double": False}),  # (torch's fused CPU kernel has no double backward)
    ("fully_masked_rows_bool", lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.tensor(DEAD_ROWS)), [(2, 2, 3, 4), (2, 2, 6, 4), (2, 2, 6, 4)], {"double": False}),
    ("fully_masked_rows_float", lambda L, q, k, v: F(L).scaled_dot_product_attention(
        q, k, v, attn_mask=L.zeros(3, 6, dtype=L.float64).masked_fill(~L.tensor(DEAD_ROWS), float("-inf"))),
     [(2, 2, 3, 4), (2, 2, 6, 4), (2, 2, 6, 4)], {"double": False}),
]


@pytest.mark.parametrize("fn,specs,kw", [pytest.param(f, s, k, id=i) for i, f, s, k in SDPA])
def test_sdpa_parity(fn, specs, kw):
    check_op(fn, *specs, **kw)


SDPA_ERRORS = [
    lambda L: F(L).scaled_dot_product_attention(L.randn(2, 4, 3, 5), L.randn(2, 3, 6, 5), L.randn(2, 3, 6, 5),
                                                enable_gqa=True),
    lambda L: F(L).scaled_dot_product_attention(L.randn(2, 4, 3, 5), L.randn(2, 2, 6, 5), L.randn(2, 3, 6, 5),
                                                enable_gqa=True),
    lambda L: F(L).scaled_dot_product_attention(L.randn(3, 5), L.randn(6, 5), L.randn(6, 5), enable_gqa=True),
    lambda L: F(L).scaled_dot_product_attention(L.randn(2, 4, 3, 5), L.randn(2, 2, 6, 5), L.randn(2, 2, 6, 5)),
    lambda L: F(L).scaled_dot_product_attention(L.randn(2, 3, 5), L.randn(2, 3, 5), L.randn(2, 3, 5), is_causal=True,
                                                attn_mask=L.ones(3, 3, dtype=L.bool)),
]


@pytest.mark.parametrize("fn", SDPA_ERRORS)
def test_sdpa_errors_as_torch(fn):
    expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got[0] == expected[0], (got, expected)


# ---------------------------------------------------------------- nn.attention


def A(L):
    return L.nn.attention


def test_sdp_backend_enum():
    same(lambda L: [(name, int(b), repr(b), str(b), b.name, b.value) for name, b in A(L).SDPBackend.__members__.items()]
         + [A(L).SDPBackend.MATH == A(L).SDPBackend.MATH, A(L).SDPBackend.MATH == A(L).SDPBackend.FLASH_ATTENTION,
            A(L).SDPBackend.MATH == 0, repr(A(L).SDPBackend(2)), A(L).WARN_FOR_UNFUSED_KERNELS])


def _backends(L, with_priority=False):
    return [b.name for b in A(L)._cur_sdpa_kernel_backends(with_priority=with_priority)]


def test_sdpa_kernel_context():
    def run(L):
        B = A(L).SDPBackend
        seen = [_backends(L)]
        with A(L).sdpa_kernel(B.MATH) as ctx:
            seen += [ctx == {}, _backends(L)]
            with A(L).sdpa_kernel([B.FLASH_ATTENTION, B.EFFICIENT_ATTENTION, B.FLASH_ATTENTION]):
                seen.append(_backends(L))
            seen.append(_backends(L))
        with A(L).sdpa_kernel([B.MATH, B.ERROR, B.CUDNN_ATTENTION, B.FLASH_ATTENTION], set_priority=True):
            seen += [_backends(L), _backends(L, with_priority=True)]
        seen.append(_backends(L))
        return seen
    same(run)


@pytest.mark.parametrize("backends,works", [
    ("MATH", True), ("FLASH_ATTENTION", True), (["EFFICIENT_ATTENTION", "MATH"], True),
    ("EFFICIENT_ATTENTION", False), ("CUDNN_ATTENTION", False), ("ERROR", False), ("OVERRIDEABLE", False), ([], False),
])
def test_sdpa_kernel_selects_as_torch_on_cpu(backends, works):
    def run(L):
        B = A(L).SDPBackend
        chosen = [getattr(B, n) for n in backends] if isinstance(backends, list) else getattr(B, backends)
        q = L.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)))
        with A(L).sdpa_kernel(chosen):
            return F(L).scaled_dot_product_attention(q, q, q)
    if works:
        same(run)
    else:
        expected, got = _error(lambda: run(torch)), _error(lambda: run(fg))
        assert expected is not None and got == expected


@pytest.mark.parametrize("arg", ["math", (0,), 0])
def test_sdpa_kernel_rejects_non_backends(arg):
    expected = _error(lambda: A(torch).sdpa_kernel(arg).__enter__())
    got = _error(lambda: A(fg).sdpa_kernel(arg).__enter__())
    assert expected is not None and got == expected
