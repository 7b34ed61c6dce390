"""Forward-mode AD (torch.autograd.forward_ad): dual tensors, the JVP rule of each op against torch's
forward AD and against central finite differences in float64, views and in-place ops, errors, custom
Functions' jvp, and the compositions with reverse mode."""
import math

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

from conftest import fg, AGAINST_TORCH

ffw = fg.autograd.forward_ad


def _np(shape, domain, rng):
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "unit":
        return rng.uniform(-0.9, 0.9, shape)
    if domain == "gt1":
        return rng.uniform(1.2, 3.0, shape)
    if domain == "prob":
        return rng.uniform(0.05, 0.95, shape)
    if domain == "idx":
        return rng.integers(0, 3, shape)
    if domain == "bool":
        return rng.uniform(size=shape) > 0.5
    return rng.standard_normal(shape)


def _run(lib, fw, fn, arrays, tangents, diff):
    """fn's outputs and their tangents, with the inputs in `diff` made dual."""
    with fw.dual_level():
        args = []
        for i, a in enumerate(arrays):
            v = lib.tensor(a)
            if i in diff:
                v = fw.make_dual(v, lib.tensor(tangents[i]))
            args.append(v)
        out = fn(lib, *args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        res = []
        for o in outs:
            if isinstance(o, (lib.Tensor,)) or hasattr(o, "shape"):
                p, t = fw.unpack_dual(o)
                res.append((p.detach().numpy().copy(), None if t is None else t.detach().numpy().copy()))
        return res


F = "nn.functional"


def _f(path):
    """lib -> the function at `path` (e.g. "nn.functional.gelu")."""
    def get(lib):
        obj = lib
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj
    return get


# (id, fn(lib, *inputs), input specs [(shape, domain)], differentiable input indices or None for all floats)
CASES = [
    # elementwise unary (functions and methods)
    *[(n, (lambda n: lambda L, x: getattr(L, n)(x))(n), [((3, 4), d)], None) for n, d in [
        ("exp", "any"), ("log", "pos"), ("log2", "pos"), ("log10", "pos"), ("log1p", "pos"), ("expm1", "any"),
        ("sqrt", "pos"), ("rsqrt", "pos"), ("sin", "any"), ("cos", "any"), ("tan", "unit"), ("tanh", "any"),
        ("sigmoid", "any"), ("reciprocal", "pos"), ("erf", "any"), ("erfc", "any"), ("erfinv", "unit"),
        ("asin", "unit"), ("acos", "unit"), ("atan", "any"), ("sinh", "any"), ("cosh", "any"), ("asinh", "any"),
        ("acosh", "gt1"), ("atanh", "unit"), ("lgamma", "pos"), ("digamma", "pos"), ("i0", "any"), ("abs", "any"),
        ("relu", "any"), ("neg", "any"), ("square", "any"), ("floor", "any"), ("ceil", "any"), ("round", "any"),
        ("trunc", "any"), ("sign", "any"), ("frac", "any"), ("exp2", "any"), ("sinc", "any"), ("deg2rad", "any"),
        ("rad2deg", "any"), ("logit", "prob"), ("nan_to_num", "any")]],
    ("method_sin", lambda L, x: x.sin(), [((3, 4), "any")], None),
    ("method_exp_pow", lambda L, x: x.exp().pow(2), [((3, 4), "any")], None),
    ("polygamma", lambda L, x: L.polygamma(1, x), [((5,), "pos")], None),
    # binary
    ("add", lambda L, a, b: a + b, [((3, 4), "any"), ((3, 4), "any")], None),
    ("add_alpha", lambda L, a, b: L.add(a, b, alpha=2.5), [((3, 4), "any"), ((4,), "any")], None),
    ("add_broadcast_plain", lambda L, a, b: L.add(b, a), [((3, 4), "any"), ((4,), "any")], [0]),
    ("radd_scalar", lambda L, a: 2.0 + a, [((3,), "any")], None),
    ("sub", lambda L, a, b: a - b, [((3, 4), "any"), ((3, 1), "any")], None),
    ("rsub_scalar", lambda L, a: 1.5 - a, [((3,), "any")], None),
    ("mul", lambda L, a, b: a * b, [((3, 4), "any"), ((3, 4), "any")], None),
    ("mul_plain_first", lambda L, a, b: L.mul(b, a), [((3, 4), "any"), ((3, 4), "any")], [0]),
    ("div", lambda L, a, b: a / b, [((3, 4), "any"), ((3, 4), "pos")], None),
    ("rdiv_scalar", lambda L, a: 2.0 / a, [((3,), "pos")], None),
    ("pow_scalar", lambda L, a: a ** 3, [((3, 4), "any")], None),
    ("pow_tensor", lambda L, a, b: L.pow(a, b), [((3, 4), "pos"), ((3, 4), "any")], None),
    ("rpow", lambda L, a: 2.0 ** a, [((3,), "any")], None),
    ("atan2", lambda L, a, b: L.atan2(a, b), [((3, 4), "any"), ((3, 4), "any")], None),
    ("maximum", lambda L, a, b: L.maximum(a, b), [((3, 4), "any"), ((3, 4), "any")], None),
    ("minimum", lambda L, a, b: L.minimum(a, b), [((3, 4), "any"), ((3, 4), "any")], None),
    ("hypot", lambda L, a, b: L.hypot(a, b), [((3, 4), "any"), ((3, 4), "any")], None),
    ("xlogy", lambda L, a, b: L.xlogy(a, b), [((3, 4), "any"), ((3, 4), "pos")], None),
    ("lerp", lambda L, a, b, w: L.lerp(a, b, w), [((3, 4), "any"), ((3, 4), "any"), ((3, 4), "any")], None),
    ("addcmul", lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), [((3, 4), "any")] * 3, None),
    ("addcdiv", lambda L, a, b, c: L.addcdiv(a, b, c, value=0.5), [((3, 4), "any"), ((3, 4), "any"), ((3, 4), "pos")], None),
    ("logaddexp", lambda L, a, b: L.logaddexp(a, b), [((3, 4), "any"), ((3, 4), "any")], None),
    ("clamp", lambda L, a: L.clamp(a, -0.5, 0.5), [((3, 4), "any")], None),
    ("clamp_min", lambda L, a: a.clamp_min(0.1), [((3, 4), "any")], None),
    ("clamp_tensor", lambda L, a, lo: L.clamp(a, min=lo), [((3, 4), "any"), ((3, 4), "any")], None),
    ("where", lambda L, c, a, b: L.where(c, a, b), [((3, 4), "bool"), ((3, 4), "any"), ((3, 4), "any")], None),
    ("where_plain", lambda L, c, a, b: L.where(c, a, b), [((3, 4), "bool"), ((3, 4), "any"), ((3, 4), "any")], [1]),
    ("masked_fill", lambda L, a, m: a.masked_fill(m, 2.0), [((3, 4), "any"), ((3, 4), "bool")], None),
    ("remainder", lambda L, a, b: L.remainder(a, b), [((3, 4), "any"), ((3, 4), "pos")], None),
    ("fmod", lambda L, a, b: L.fmod(a, b), [((3, 4), "any"), ((3, 4), "pos")], None),
    # reductions
    ("sum", lambda L, a: a.sum(), [((3, 4), "any")], None),
    ("sum_dim", lambda L, a: a.sum(1, keepdim=True), [((3, 4), "any")], None),
    ("mean_dims", lambda L, a: a.mean((0, 2)), [((2, 3, 4), "any")], None),
    ("prod", lambda L, a: a.prod(), [((2, 3), "any")], None),
    ("prod_dim", lambda L, a: a.prod(1), [((3, 4), "any")], None),
    ("amax", lambda L, a: a.amax(1), [((3, 4), "any")], None),
    ("amin_all", lambda L, a: L.amin(a), [((3, 4), "any")], None),
    ("max_all", lambda L, a: a.max(), [((3, 4), "any")], None),
    ("max_dim", lambda L, a: a.max(1), [((3, 4), "any")], None),
    ("min_dim_keep", lambda L, a: L.min(a, 0, keepdim=True), [((3, 4), "any")], None),
    ("var", lambda L, a: a.var(1), [((3, 4), "any")], None),
    ("var_correction0", lambda L, a: L.var(a, dim=0, correction=0), [((3, 4), "any")], None),
    ("std", lambda L, a: a.std(), [((3, 4), "any")], None),
    ("std_mean", lambda L, a: L.std_mean(a, 1), [((3, 4), "any")], None),
    ("logsumexp", lambda L, a: L.logsumexp(a, 1), [((3, 4), "any")], None),
    ("norm", lambda L, a: a.norm(), [((3, 4), "any")], None),
    ("norm_p1_dim", lambda L, a: L.norm(a, 1, dim=1), [((3, 4), "any")], None),
    ("vector_norm_p3", lambda L, a: L.linalg.vector_norm(a, 3, dim=0), [((3, 4), "any")], None),
    ("cumsum", lambda L, a: a.cumsum(1), [((3, 4), "any")], None),
    ("cumprod", lambda L, a: a.cumprod(1), [((3, 4), "any")], None),
    ("logcumsumexp", lambda L, a: L.logcumsumexp(a, 1), [((3, 4), "any")], None),
    ("sort", lambda L, a: L.sort(a, 1), [((3, 4), "any")], None),
    ("topk", lambda L, a: L.topk(a, 2), [((3, 4), "any")], None),
    ("median_dim", lambda L, a: a.median(1), [((3, 5), "any")], None),
    ("argmax_no_tangent", lambda L, a: a.argmax(), [((3, 4), "any")], None),
    ("gt_no_tangent", lambda L, a: a > 0, [((3, 4), "any")], None),
    ("trace", lambda L, a: a.trace(), [((3, 3), "any")], None),
    # shape, views, indexing
    ("view", lambda L, a: a.view(4, 3), [((3, 4), "any")], None),
    ("reshape", lambda L, a: L.reshape(a, (2, 6)), [((3, 4), "any")], None),
    ("permute", lambda L, a: a.permute(2, 0, 1), [((2, 3, 4), "any")], None),
    ("transpose", lambda L, a: L.transpose(a, 0, 1), [((3, 4), "any")], None),
    ("T", lambda L, a: a.T, [((3, 4), "any")], None),
    ("mT", lambda L, a: a.mT, [((2, 3, 4), "any")], None),
    ("t", lambda L, a: a.t(), [((3, 4), "any")], None),
    ("squeeze_unsqueeze", lambda L, a: a.unsqueeze(0).squeeze(0), [((3, 4), "any")], None),
    ("flatten", lambda L, a: L.flatten(a), [((2, 3, 4), "any")], None),
    ("expand", lambda L, a: a.expand(3, 4), [((1, 4), "any")], None),
    ("getitem", lambda L, a: a[1:, ::2], [((3, 4), "any")], None),
    ("getitem_int", lambda L, a: a[1], [((3, 4), "any")], None),
    ("getitem_tensor", lambda L, a, i: a[i], [((3, 4), "any"), ((5,), "idx")], None),
    ("index_select", lambda L, a, i: L.index_select(a, 1, i), [((3, 4), "any"), ((5,), "idx")], None),
    ("gather", lambda L, a, i: L.gather(a, 1, i), [((3, 4), "any"), ((3, 2), "idx")], None),
    ("cat", lambda L, a, b: L.cat([a, b], 1), [((3, 4), "any"), ((3, 2), "any")], None),
    ("cat_plain", lambda L, a, b: L.cat([a, b]), [((3, 4), "any"), ((2, 4), "any")], [0]),
    ("stack", lambda L, a, b: L.stack([a, b]), [((3, 4), "any"), ((3, 4), "any")], None),
    ("split", lambda L, a: a.split(2, 1), [((3, 4), "any")], None),
    ("chunk", lambda L, a: L.chunk(a, 3, 0), [((3, 4), "any")], None),
    ("unbind", lambda L, a: a.unbind(1), [((3, 4), "any")], None),
    ("flip", lambda L, a: a.flip(0), [((3, 4), "any")], None),
    ("roll", lambda L, a: L.roll(a, 1, 1), [((3, 4), "any")], None),
    ("repeat", lambda L, a: a.repeat(2, 1), [((3, 4), "any")], None),
    ("tril", lambda L, a: L.tril(a), [((3, 4), "any")], None),
    ("diagonal", lambda L, a: a.diagonal(), [((3, 4), "any")], None),
    ("narrow", lambda L, a: a.narrow(1, 1, 2), [((3, 4), "any")], None),
    ("contiguous_clone", lambda L, a: a.t().contiguous().clone(), [((3, 4), "any")], None),
    ("to_dtype", lambda L, a: a.to(L.float32), [((3, 4), "any")], None),
    # products
    ("matmul", lambda L, a, b: a @ b, [((3, 4), "any"), ((4, 5), "any")], None),
    ("matmul_batched", lambda L, a, b: L.matmul(a, b), [((2, 3, 4), "any"), ((4, 5), "any")], None),
    ("mm_plain_first", lambda L, a, b: L.mm(b, a), [((4, 5), "any"), ((3, 4), "any")], [0]),
    ("bmm", lambda L, a, b: L.bmm(a, b), [((2, 3, 4), "any"), ((2, 4, 5), "any")], None),
    ("mv", lambda L, a, b: L.mv(a, b), [((3, 4), "any"), ((4,), "any")], None),
    ("dot", lambda L, a, b: L.dot(a, b), [((4,), "any"), ((4,), "any")], None),
    ("outer", lambda L, a, b: L.outer(a, b), [((4,), "any"), ((3,), "any")], None),
    ("einsum", lambda L, a, b: L.einsum("ij,jk->ik", a, b), [((3, 4), "any"), ((4, 5), "any")], None),
    ("addmm", lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0), [((3, 5), "any"), ((3, 4), "any"), ((4, 5), "any")], None),
    ("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b), [((2, 4), "any"), ((3, 4), "any"), ((3,), "any")], None),
    ("linear_x_only", lambda L, x, w: L.nn.functional.linear(x, w), [((2, 4), "any"), ((3, 4), "any")], [0]),
    ("conv1d", lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, padding=1), [((2, 3, 6), "any"), ((4, 3, 3), "any"), ((4,), "any")], None),
    ("conv2d", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=2), [((1, 2, 5, 5), "any"), ((3, 2, 3, 3), "any"), ((3,), "any")], None),
    # nn.functional
    ("F_relu", lambda L, x: L.nn.functional.relu(x), [((3, 4), "any")], None),
    ("F_gelu", lambda L, x: L.nn.functional.gelu(x), [((3, 4), "any")], None),
    ("F_gelu_tanh", lambda L, x: L.nn.functional.gelu(x, approximate="tanh"), [((3, 4), "any")], None),
    ("F_silu", lambda L, x: L.nn.functional.silu(x), [((3, 4), "any")], None),
    ("F_elu", lambda L, x: L.nn.functional.elu(x, 0.7), [((3, 4), "any")], None),
    ("F_celu", lambda L, x: L.nn.functional.celu(x, 0.7), [((3, 4), "any")], None),
    ("F_selu", lambda L, x: L.nn.functional.selu(x), [((3, 4), "any")], None),
    ("F_leaky_relu", lambda L, x: L.nn.functional.leaky_relu(x, 0.2), [((3, 4), "any")], None),
    ("F_softplus", lambda L, x: L.nn.functional.softplus(x, beta=2.0), [((3, 4), "any")], None),
    ("F_mish", lambda L, x: L.nn.functional.mish(x), [((3, 4), "any")], None),
    ("F_logsigmoid", lambda L, x: L.nn.functional.logsigmoid(x), [((3, 4), "any")], None),
    ("F_hardtanh", lambda L, x: L.nn.functional.hardtanh(x), [((3, 4), "any")], None),
    ("F_hardswish", lambda L, x: L.nn.functional.hardswish(x * 4), [((3, 4), "any")], None),
    ("F_softsign", lambda L, x: L.nn.functional.softsign(x), [((3, 4), "any")], None),
    ("F_softmax", lambda L, x: L.nn.functional.softmax(x, dim=1), [((3, 4), "any")], None),
    ("F_log_softmax", lambda L, x: L.nn.functional.log_softmax(x, dim=0), [((3, 4), "any")], None),
    ("softmax_fn", lambda L, x: L.softmax(x, -1), [((3, 4), "any")], None),
    ("F_normalize", lambda L, x: L.nn.functional.normalize(x, dim=1), [((3, 4), "any")], None),
    ("F_layer_norm", lambda L, x, w, b: L.nn.functional.layer_norm(x, (4,), w, b), [((3, 4), "any"), ((4,), "any"), ((4,), "any")], None),
    ("F_layer_norm_x", lambda L, x: L.nn.functional.layer_norm(x, (3, 4)), [((2, 3, 4), "any")], None),
    ("F_group_norm", lambda L, x, w, b: L.nn.functional.group_norm(x, 2, w, b), [((2, 4, 3), "any"), ((4,), "any"), ((4,), "any")], None),
    ("F_batch_norm_train", lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True), [((4, 3), "any"), ((3,), "any"), ((3,), "any")], None),
    ("F_mse_loss", lambda L, x, y: L.nn.functional.mse_loss(x, y), [((3, 4), "any"), ((3, 4), "any")], None),
    ("F_l1_loss", lambda L, x, y: L.nn.functional.l1_loss(x, y, reduction="sum"), [((3, 4), "any"), ((3, 4), "any")], None),
    ("F_smooth_l1", lambda L, x, y: L.nn.functional.smooth_l1_loss(x, y), [((3, 4), "any"), ((3, 4), "any")], None),
    ("F_huber", lambda L, x, y: L.nn.functional.huber_loss(x, y, delta=0.5), [((3, 4), "any"), ((3, 4), "any")], None),
    ("F_cross_entropy", lambda L, x, y: L.nn.functional.cross_entropy(x, y), [((4, 3), "any"), ((4,), "idx")], None),
    ("F_cross_entropy_probs", lambda L, x, y: L.nn.functional.cross_entropy(x, y.softmax(1)), [((4, 3), "any"), ((4, 3), "any")], [0]),
    ("F_nll_loss", lambda L, x, y: L.nn.functional.nll_loss(x, y), [((4, 3), "any"), ((4,), "idx")], None),
    ("F_bce_logits", lambda L, x, y: L.nn.functional.binary_cross_entropy_with_logits(x, y), [((3, 4), "any"), ((3, 4), "prob")], [0]),
    ("F_bce", lambda L, x, y: L.nn.functional.binary_cross_entropy(x, y), [((3, 4), "prob"), ((3, 4), "prob")], [0]),
    ("F_avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(x, 2), [((1, 2, 4, 4), "any")], None),
    ("F_max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, 2), [((1, 2, 4, 4), "any")], None),
    ("F_pad", lambda L, x: L.nn.functional.pad(x, (1, 2), value=3.0), [((3, 4), "any")], None),
    ("F_embedding", lambda L, i, w: L.nn.functional.embedding(i, w), [((5,), "idx"), ((3, 4), "any")], None),
]


def _case_id(c):
    return c[0]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_jvp_matches_torch(case):
    name, fn, specs, diff = case
    rng = np.random.default_rng(abs(hash(name)) % (2 ** 32))
    arrays = [_np(s, d, rng) for s, d in specs]
    if diff is None:
        diff = [i for i, (s, d) in enumerate(specs) if d not in ("idx", "bool")]
    tangents = [rng.standard_normal(a.shape) for a in arrays]
    expect = _run(torch, tfw, fn, arrays, tangents, diff)
    got = _run(fg, ffw, fn, arrays, tangents, diff)
    assert len(got) == len(expect)
    for (ep, et), (gp, gt) in zip(expect, got):
        np.testing.assert_allclose(gp, ep, rtol=1e-6, atol=1e-8)
        if et is None:
            assert gt is None or not np.any(gt), f"{name}: torch has no tangent"
        else:
            assert gt is not None, f"{name}: no tangent where torch has one"
            assert gt.dtype == et.dtype
            np.testing.assert_allclose(gt, et, rtol=1e-6, atol=1e-8)


_NO_FD = {"floor", "ceil", "round", "trunc", "sign", "frac", "argmax_no_tangent", "gt_no_tangent", "F_max_pool2d",
          "sort", "topk", "median_dim", "max_dim", "min_dim_keep", "remainder", "fmod", "to_dtype"}


@pytest.mark.parametrize("case", [c for c in CASES if c[0] not in _NO_FD], ids=_case_id)
def test_jvp_matches_finite_differences(case):
    """The tangent is (f(x + εt) - f(x - εt)) / 2ε, in float64."""
    name, fn, specs, diff = case
    rng = np.random.default_rng(abs(hash(name)) % (2 ** 32))
    arrays = [_np(s, d, rng) for s, d in specs]
    if diff is None:
        diff = [i for i, (s, d) in enumerate(specs) if d not in ("idx", "bool")]
    tangents = [rng.standard_normal(a.shape) * 0.1 for a in arrays]
    got = _run(fg, ffw, fn, arrays, tangents, diff)
    eps = 1e-6

    def at(sign):
        xs = [fg.tensor(a + sign * eps * t) if i in diff else fg.tensor(a)
              for i, (a, t) in enumerate(zip(arrays, tangents))]
        out = fn(fg, *xs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return [o.detach().numpy() for o in outs if hasattr(o, "shape")]

    plus, minus = at(1.0), at(-1.0)
    for (gp, gt), hi, lo in zip(got, plus, minus):
        if not np.issubdtype(gp.dtype, np.floating):
            continue
        fd = (hi - lo) / (2 * eps)
        gt = np.zeros_like(gp) if gt is None else gt
        np.testing.assert_allclose(gt, fd, rtol=1e-4, atol=1e-6)
