"""torch.nn.functional's attention: scaled_dot_product_attention (grouped-query attention included, gated
by nn.attention.sdpa_kernel) and multi_head_attention_forward (what nn.MultiheadAttention runs).
Compositions of differentiable engine ops (no gradient math here); re-exported by functional.py.
"""

import math
import warnings

from .. import _C
from . import functional as _F
from .attention import _check_backend
from .._autocast_ops import LOWER, autocast_op


def _causal_mask(q_len, k_len, device):
    """True where query i may attend to key j (j <= i: the top-left aligned causal mask)."""
    rows = _C.arange(q_len, device=device).reshape(q_len, 1)
    cols = _C.arange(k_len, device=device).reshape(1, k_len)
    return cols <= rows


def _repeat_heads(x, query_heads):
    """x (..., H, S, E) with each head repeated query_heads // H times in place (repeat_interleave on -3)."""
    heads = x.shape[-3]
    if heads == query_heads:
        return x
    lead, (s, e) = tuple(x.shape[:-3]), tuple(x.shape[-2:])
    rep = query_heads // heads
    return x.unsqueeze(-3).expand(*lead, heads, rep, s, e).reshape(*lead, query_heads, s, e)


@autocast_op(cpu=LOWER, cuda=LOWER)
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q·kᵀ·scale + mask)·v. A boolean mask keeps its True positions; a query whose every key is
    masked out gets zeros (as torch's kernels), not NaN. enable_gqa lets key and value have fewer heads
    (dim -3) than query, each shared by a group of query heads."""
    _check_backend(query.device)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if enable_gqa:
        q_heads = query.shape[-3]
        if q_heads % key.shape[-3] or q_heads % value.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key, value = _repeat_heads(key, q_heads), _repeat_heads(value, q_heads)
    if attn_mask is not None and attn_mask.dim() == 0:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions")
    if attn_mask is not None and attn_mask.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if dropout_p == 0.0 and query.dim() in (3, 4) and key.dim() == query.dim() and value.dim() == query.dim():
        # one fused node, as torch's CPU kernel (3-d inputs go through it with a batch dim of 1, as torch's)
        three = query.dim() == 3
        fused = _C._scaled_dot_product_attention(*((query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)) if three
                                                    else (query, key, value)), attn_mask, is_causal,
                                                  None if scale is None else float(scale))
        if fused is not None:
            return fused.squeeze(0) if three else fused
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        scores = scores.masked_fill(~_causal_mask(query.shape[-2], key.shape[-2], query.device), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
        # rows with every key masked: softmax over zeros, then zeroed (no NaN forward or backward)
        dead = (scores == float("-inf")).all(-1, keepdim=True)
        attn = scores.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    else:
        attn = scores.softmax(-1)
    if dropout_p > 0.0:
        attn = _F.dropout(attn, dropout_p, training=True)
    return attn.matmul(value)


def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, _C.Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A boolean mask (True = masked out) as an additive float mask (-inf where masked); float masks as is."""
    if mask is None:
        return None
    if mask.dtype != _C.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    if mask.is_floating_point():
        return mask
    return _C.zeros(tuple(mask.shape), dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the call is batched (3-D query) or not (2-D), with torch's checks of the other shapes."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                                 f"{attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                     f"found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _project_inputs(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
                    k_proj_weight, v_proj_weight):
    """q, k, v after the input projections (one packed (3E, E) weight, or three separate ones)."""
    if use_separate_proj_weight:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = in_proj_weight.chunk(3, 0)
    b_q, b_k, b_v = in_proj_bias.chunk(3, 0) if in_proj_bias is not None else (None, None, None)
    return _F.linear(query, w_q, b_q), _F.linear(key, w_k, b_k), _F.linear(value, w_v, b_v)


def _heads(x, static, name, bsz, num_heads, head_dim):
    """(S, N, E) -> (N*H, S, hd), or the given static (N*H, S, hd) tensor after checking its shape."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting static_{name}.size(0) of {bsz * num_heads}, but got {static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name}.size(2) of {head_dim}, but got {static.shape[2]}")
    return static


def _pad_last(mask):
    return None if mask is None else _F.pad(mask, (0, 1))


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on sequence-first (L, N, E) or unbatched (L, E) inputs, as torch's functional
    form: returns (output, attention weights averaged over heads (or per head), or None)."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint is trusted: attention runs causal without the mask
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    q, k, v = _project_inputs(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                              q_proj_weight, k_proj_weight, v_proj_weight)
    src_len = key.shape[0]
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        # one more key/value position, the learned bias, which every query may attend to
        k = _C.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _C.cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must be given together")
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, "k", bsz, num_heads, head_dim)
    v = _heads(v, static_v, "v", bsz, num_heads, head_dim)
    if add_zero_attn:
        # one more key/value position of zeros
        zeros = _C.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k, v = _C.cat([k, zeros], 1), _C.cat([v, zeros], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)).matmul(k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = scores.softmax(-1)
        if dropout_p > 0.0:
            weights = _F.dropout(weights, dropout_p)
        out = weights.matmul(v)  # (N*H, L, hd)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        if attn_mask is not None:
            if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
        q = q.reshape(bsz, num_heads, tgt_len, head_dim)
        k = k.reshape(bsz, num_heads, src_len, head_dim)
        v = v.reshape(bsz, num_heads, src_len, head_dim)
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        weights = None
    out = _F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights
