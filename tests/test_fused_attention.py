"""The fused CPU attention (issue #29; Note [Fused attention] in src/ops/attention.rs):
`F.scaled_dot_product_attention` of 3-d/4-d float32/float64 inputs without dropout is one node
`ScaledDotProductFlashAttentionForCpuBackward0`, as torch's. Values, gradients of query/key/value and
double-backward gradients against torch, causal, with boolean and additive masks (broadcast, fully
masked rows), a given scale, the strided q/k/v of a GPT block; the node's name and saved values; the
paths that stay composed (dropout, a mask that requires grad, 2-d inputs, GQA) still match torch."""

import importlib

import numpy as np
import pytest
import torch

from conftest import fg

F_fg = importlib.import_module(fg.__name__ + ".nn.functional")
F_t = torch.nn.functional

TOL = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=2e-5, atol=3e-6)}


def pair(arr, dtype, requires_grad=False):
    return [lib.tensor(arr).to(getattr(lib, dtype)).requires_grad_(requires_grad) for lib in (torch, fg)]


def close(ours, theirs, dtype):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])


def qkv(rng, b, h, t, s, d, dv=None, dtype="float32"):
    dv = d if dv is None else dv
    return (pair(rng.standard_normal((b, h, t, d)), dtype, True), pair(rng.standard_normal((b, h, s, d)), dtype, True),
            pair(rng.standard_normal((b, h, s, dv)), dtype, True))


def run_both(q, k, v, masks=(None, None), grad_seed=0, **kw):
    outs = []
    rng = np.random.default_rng(grad_seed)
    g = None
    for i, (lib, F) in enumerate(((torch, F_t), (fg, F_fg))):
        o = F.scaled_dot_product_attention(q[i], k[i], v[i], attn_mask=masks[i], **kw)
        if g is None:
            g = rng.standard_normal(tuple(o.shape))
        o.backward(lib.tensor(g).to(o.dtype))
        outs.append(o)
    return outs


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", ["plain", "causal", "causal_rect", "scale", "dv", "long"])
def test_values_and_grads_match_torch(dtype, case):
    rng = np.random.default_rng(hash(case) % 1000)
    b, h, t, s, d, dv, kw = 2, 3, 5, 5, 4, None, {}
    if case == "causal":
        kw["is_causal"] = True
    elif case == "causal_rect":  # more keys than queries, and fewer: torch's top-left causal mask
        s, kw["is_causal"] = 7, True
    elif case == "scale":
        kw["scale"] = 0.37
    elif case == "dv":
        dv = 6
    elif case == "long":
        t, s, d = 33, 70, 16
    q, k, v = qkv(rng, b, h, t, s, d, dv, dtype)
    theirs, ours = run_both(q, k, v, **kw)
    close(ours, theirs, dtype)
    for (tt, ff) in (q, k, v):
        close(ff.grad, tt.grad, dtype)


def test_fewer_keys_than_queries_causal():
    rng = np.random.default_rng(3)
    q, k, v = qkv(rng, 1, 2, 6, 3, 4)
    theirs, ours = run_both(q, k, v, is_causal=True)
    close(ours, theirs, "float32")
    for tt, ff in (q, k, v):
        close(ff.grad, tt.grad, "float32")


@pytest.mark.parametrize("mask_shape", [(5, 6), (1, 5, 6), (2, 1, 5, 6), (2, 3, 5, 6), (1, 6), (5, 1)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks_broadcast(mask_shape, kind):
    rng = np.random.default_rng(7)
    q, k, v = qkv(rng, 2, 3, 5, 6, 4)
    if kind == "bool":
        m = rng.random(mask_shape) > 0.3
        masks = (torch.tensor(m), fg.tensor(m))
    else:
        m = rng.standard_normal(mask_shape)
        masks = (torch.tensor(m).float(), fg.tensor(m).float())
    theirs, ours = run_both(q, k, v, masks=masks)
    close(ours, theirs, "float32")
    for tt, ff in (q, k, v):
        close(ff.grad, tt.grad, "float32")


def test_fully_masked_rows_give_zeros_not_nan():
    rng = np.random.default_rng(11)
    q, k, v = qkv(rng, 1, 2, 4, 5, 3)
    m = np.ones((4, 5), dtype=bool)
    m[1] = False  # query 1 sees no key
    m[3, :4] = False
    theirs, ours = run_both(q, k, v, masks=(torch.tensor(m), fg.tensor(m)))
    close(ours, theirs, "float32")
    assert not np.isnan(ours.detach().numpy()).any()
    for tt, ff in (q, k, v):
        assert not np.isnan(ff.grad.numpy()).any()
        close(ff.grad, tt.grad, "float32")
    # an additive mask of -inf everywhere in a row: the same
    fm = np.where(m, 0.0, -np.inf).astype(np.float32)
    for tt, ff in (q, k, v):
        tt.grad = ff.grad = None
    theirs, ours = run_both(q, k, v, masks=(torch.tensor(fm), fg.tensor(fm)))
    close(ours, theirs, "float32")
    for tt, ff in (q, k, v):
        close(ff.grad, tt.grad, "float32")


def test_gpt_block_strided_inputs():
    """q, k, v as a GPT block makes them: split of one projection, view, transpose (not contiguous)."""
    rng = np.random.default_rng(5)
    B, T, C, H = 2, 8, 12, 3
    x = pair(rng.standard_normal((B, T, 3 * C)), "float32", True)
    outs = []
    for lib, F, xx in ((torch, F_t, x[0]), (fg, F_fg, x[1])):
        q, k, v = xx.split(C, dim=2)
        q, k, v = (z.view(B, T, H, C // H).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.transpose(1, 2).contiguous().view(B, T, C).pow(2).sum().backward()
        outs.append(y)
    close(outs[1], outs[0], "float32")
    close(x[1].grad, x[0].grad, "float32")


def test_three_dim_inputs():
    rng = np.random.default_rng(9)
    q, k, v = (pair(rng.standard_normal(shape), "float64", True) for shape in ((3, 5, 4), (3, 6, 4), (3, 6, 2)))
    theirs, ours = run_both(q, k, v)
    close(ours, theirs, "float64")
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__ == "SqueezeBackward1"
    for tt, ff in (q, k, v):
        close(ff.grad, tt.grad, "float64")


def test_node_name_and_saved_values():
    rng = np.random.default_rng(1)
    (qt, qf), (kt, kf), (vt, vf) = qkv(rng, 1, 2, 3, 3, 4)
    for scale in (None, 0.25):
        o_t = F_t.scaled_dot_product_attention(qt, kt, vt, is_causal=True, scale=scale)
        o_f = F_fg.scaled_dot_product_attention(qf, kf, vf, is_causal=True, scale=scale)
        gt, gf = o_t.grad_fn, o_f.grad_fn
        assert type(gf).__name__ == type(gt).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
        assert gf._saved_scale == gt._saved_scale
        assert gf._saved_is_causal is gt._saved_is_causal is True
        assert gf._saved_dropout_p == gt._saved_dropout_p == 0.0
        assert gf._saved_query is qf and gf._saved_key is kf and gf._saved_value is vf
        close(gf._saved_logsumexp, gt._saved_logsumexp, "float32")
        close(gf._saved_output, gt._saved_output, "float32")
        assert [n is None for n, _ in gf.next_functions] == [n is None for n, _ in gt.next_functions]


def torch_reference(q, k, v, mask, causal):
    """torch's attention written out (torch's flash kernel has no double backward on the CPU)."""
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("kw", [dict(is_causal=True), dict(mask=True)])
def test_double_backward(kw):
    """torch raises for a double backward through its CPU flash kernel; ferrograd's backward under
    create_graph is composed from differentiable ops, so it gives the written-out formula's values."""
    rng = np.random.default_rng(13)
    q, k, v = qkv(rng, 1, 2, 4, 4, 3, dtype="float64")
    m = rng.random((4, 4)) > 0.4
    m[:, 0] = True
    res = []
    for i, lib in enumerate((torch, fg)):
        mask = lib.tensor(m) if kw.get("mask") else None
        if lib is torch:
            o = torch_reference(q[i], k[i], v[i], mask, kw.get("is_causal", False))
        else:
            o = F_fg.scaled_dot_product_attention(q[i], k[i], v[i], attn_mask=mask, is_causal=kw.get("is_causal", False))
            assert type(o.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"
        gq, gk, gv = lib.autograd.grad(o.pow(2).sum(), (q[i], k[i], v[i]), create_graph=True)
        (gq.sum() + (gk * gk).sum() + gv.pow(3).sum()).backward()
        res.append((gq, gk, gv, q[i].grad, k[i].grad, v[i].grad))
    for ours, theirs in zip(res[1], res[0]):
        close(ours, theirs, "float64")


def test_composed_paths_still_match():
    rng = np.random.default_rng(17)
    # a float mask that requires grad: torch gives it a gradient, so it stays composed
    q, k, v = qkv(rng, 1, 2, 3, 4, 5)
    m = pair(rng.standard_normal((3, 4)), "float32", True)
    theirs, ours = run_both(q, k, v, masks=(m[0], m[1]))
    close(ours, theirs, "float32")
    close(m[1].grad, m[0].grad, "float32")
    # 2-d inputs, and grouped-query attention
    q2, k2, v2 = (pair(rng.standard_normal(s), "float64", True) for s in ((3, 4), (5, 4), (5, 2)))
    theirs, ours = run_both(q2, k2, v2)
    close(ours, theirs, "float64")
    qg, kg, vg = qkv(rng, 1, 4, 3, 3, 2, dtype="float64")
    kg = [t.detach()[:, :2].requires_grad_() for t in kg]
    vg = [t.detach()[:, :2].requires_grad_() for t in vg]
    theirs, ours = run_both(qg, kg, vg, enable_gqa=True, is_causal=True)
    close(ours, theirs, "float64")
    for tt, ff in (qg, kg, vg):
        close(ff.grad, tt.grad, "float64")


def test_errors_match_torch():
    q = [lib.zeros(1, 2, 3, 4) for lib in (torch, fg)]
    m = [lib.ones(3, 3, dtype=lib.bool) for lib in (torch, fg)]
    for i, F in enumerate((F_t, F_fg)):
        with pytest.raises(RuntimeError):
            F.scaled_dot_product_attention(q[i], q[i], q[i], attn_mask=m[i], is_causal=True)
    for shape in ((2, 5), (3,)):  # does not broadcast to (3, 3); a 1-d mask (torch: IndexError)
        bad = [lib.ones(*shape, dtype=lib.bool) for lib in (torch, fg)]
        kinds = []
        for i, F in enumerate((F_t, F_fg)):
            with pytest.raises(Exception) as e:
                F.scaled_dot_product_attention(q[i], q[i], q[i], attn_mask=bad[i])
            kinds.append(type(e.value))
        assert kinds[0] is kinds[1]


def test_no_grad_forward_matches():
    rng = np.random.default_rng(19)
    q, k, v = qkv(rng, 2, 2, 9, 9, 8)
    with torch.no_grad():
        t = F_t.scaled_dot_product_attention(q[0], k[0], v[0], is_causal=True)
    with fg.no_grad():
        f = F_fg.scaled_dot_product_attention(q[1], k[1], v[1], is_causal=True)
    assert f.grad_fn is None
    close(f, t, "float32")
