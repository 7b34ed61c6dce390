"""torch.func.vmap against torch's: each op class's batching rule (elementwise, reductions, shape ops,
matmul/linear/conv, indexing, cat/stack, losses, random ops), in_dims/out_dims pytrees, nesting,
chunking, the per-sample fallback and its warning, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg, AGAINST_TORCH


def _t(mod, a):
    if isinstance(a, np.ndarray):
        return mod.tensor(a)
    if isinstance(a, (tuple, list)):
        return type(a)(_t(mod, v) for v in a)
    if isinstance(a, dict):
        return {k: _t(mod, v) for k, v in a.items()}
    return a


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(v) for v in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if hasattr(x, "detach"):
        return x.detach().numpy()
    return x


def _close(a, b, tol=1e-5):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k], tol)
        return
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), type(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        np.testing.assert_allclose(b, a, rtol=tol, atol=tol)
        return
    assert a == b


def check(make, *inputs, in_dims=0, out_dims=0, tol=1e-5, **vkw):
    """vmap(make(torch)) and vmap(make(fg)) on the same inputs give the same values, shapes, dtypes."""
    want = torch.func.vmap(make(torch), in_dims=in_dims, out_dims=out_dims, **vkw)(*_t(torch, inputs))
    got = fg.func.vmap(make(fg), in_dims=in_dims, out_dims=out_dims, **vkw)(*_t(fg, inputs))
    _close(_np(want), _np(got), tol)


R = np.random.default_rng(0)


def rn(*shape):
    return R.standard_normal(shape).astype(np.float32)


@pytest.fixture(autouse=True)
def _no_fallback_warnings():
    """Every case below has a batching rule: a per-sample fallback would warn."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="There is a performance drop because we have not yet implemented "
                                "the batching rule for (?!aten::)")  # (ferrograd's; torch's name aten:: ops)
        yield


# ---- elementwise --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "sigmoid", "abs", "neg", "relu", "square", "floor",
                                  "isnan", "logical_not", "erf", "sign"])
def test_unary(name):
    check(lambda m: getattr(m, name), rn(4, 3))
    check(lambda m: lambda x: getattr(x, name)(), rn(4, 3, 2), in_dims=1)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "eq", "lt"])
def test_binary_broadcasting(name):
    x, y = rn(5, 3), rn(5, 2, 3)
    check(lambda m: getattr(m, name), x, y)
    check(lambda m: getattr(m, name), x, np.abs(rn(3)), in_dims=(0, None))
    check(lambda m: getattr(m, name), rn(3), np.abs(rn(3, 5)) + 0.5, in_dims=(None, 1))
    check(lambda m: lambda a, b: getattr(m, name)(a, b), rn(2, 3, 5), rn(5, 3), in_dims=(2, 0))


def test_operators_and_scalars():
    check(lambda m: lambda x, y: (x + 1) * y - 2 / (y.abs() + 1) + x ** 2 - (3 - x) + 2 ** x, rn(4, 3), rn(4, 3))
    check(lambda m: lambda x, y: (x > y) & (x > 0) | ~(y < 0), rn(4, 3), rn(3), in_dims=(0, None))
    check(lambda m: lambda x, y: x @ y, rn(4, 3), rn(3, 2), in_dims=(0, None))
    check(lambda m: lambda x, y: -x + abs(y), rn(4, 3), rn(4, 1))


def test_activations_and_pointwise_functions():
    def f(m):
        nnf = m.nn.functional
        return lambda x: (nnf.gelu(x) + nnf.silu(x) + nnf.leaky_relu(x, 0.2) + nnf.elu(x) + nnf.softplus(x)
                          + nnf.hardtanh(x) + nnf.relu6(x) + m.clamp(x, -0.5, 0.5) + m.where(x > 0, x, 2 * x)
                          + x.masked_fill(x < 0, 1.0) + m.lerp(x, x * 2, 0.3))
    check(f, rn(4, 3, 5))


def test_inplace_on_batched():
    def f(m):
        def g(x, y):
            z = x.clone()
            z.add_(y)
            z.mul_(2)
            z += 1
            return z
        return g
    check(f, rn(4, 3), rn(3), in_dims=(0, None))
    check(f, rn(4, 3), rn(4, 3))
    check(f, rn(3, 4), rn(3), in_dims=(1, None))
    check(f, rn(3, 4), rn(4, 3), in_dims=(1, 0))


# ---- reductions and dims -------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(-1, keepdim=True), lambda x: x.sum((0, 1)),
    lambda x: x.mean(), lambda x: x.mean(1), lambda x: x.amax(0), lambda x: x.prod(1), lambda x: x.var(0),
    lambda x: x.std(), lambda x: x.var(1, unbiased=False), lambda x: x.logsumexp(1), lambda x: x.argmax(),
    lambda x: x.argmax(1), lambda x: x.max(), lambda x: x.max(1)[0], lambda x: x.max(1, keepdim=True)[1],
    lambda x: x.min(0).values, lambda x: x.norm(), lambda x: x.norm(dim=1), lambda x: x.cumsum(1),
    lambda x: x.softmax(-1), lambda x: x.log_softmax(0), lambda x: x.sort(1)[0], lambda x: x.topk(2, 1)[1],
    lambda x: (x > 0).any(1), lambda x: (x > 0).all(), lambda x: x.sum(keepdim=True, dim=(0, 1)),
])
def test_reductions(call):
    check(lambda m: call, rn(4, 3, 5))
    check(lambda m: call, rn(3, 4, 5), in_dims=1)


def test_scalar_sample_reductions():
    check(lambda m: lambda x: x.sum() + x.mean() + x.amax(), rn(6))


@pytest.mark.parametrize("call", [
    lambda x: x.view(15), lambda x: x.reshape(5, 3), lambda x: x.reshape(-1), lambda x: x.view(3, -1, 1),
    lambda x: x.permute(1, 0), lambda x: x.transpose(0, 1), lambda x: x.t(), lambda x: x.T, lambda x: x.mT,
    lambda x: x.unsqueeze(0), lambda x: x.unsqueeze(-1), lambda x: x.unsqueeze(0).squeeze(0),
    lambda x: x.unsqueeze(1).squeeze(), lambda x: x.flatten(), lambda x: x.unflatten(1, (5, 1)),
    lambda x: x.expand(2, 3, 5), lambda x: x.repeat(2, 1), lambda x: x.flip(0), lambda x: x.roll(1, 1),
    lambda x: x.narrow(1, 1, 2), lambda x: x.select(0, 1), lambda x: x.split(2, 1)[1], lambda x: x.chunk(2)[0],
    lambda x: x.unbind(1)[2], lambda x: x.movedim(0, 1), lambda x: x.contiguous(), lambda x: x.clone(),
    lambda x: x.double(), lambda x: x.to(torch.float64 if not hasattr(x, "_bdim") else fg.float64),
    lambda x: x.tril(), lambda x: x.diagonal(), lambda x: x.reshape(x.shape[0], -1),
])
def test_shape_ops(call):
    check(lambda m: call, rn(4, 3, 5))
    check(lambda m: call, rn(3, 5, 4), in_dims=2)


# ---- matmul family ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb,dims", [
    ((4, 3), (3,), (0, None)), ((4, 3), (3, 2), (0, None)), ((3,), (4, 3, 2), (None, 0)),
    ((2, 3), (4, 3), (None, 0)), ((4, 2, 3), (4, 3, 5), (0, 0)), ((4, 3), (4, 3), (0, 0)),
    ((4, 3), (4, 3, 2), (0, 0)), ((4, 2, 3), (4, 3), (0, 0)), ((4, 6, 2, 3), (3, 2), (0, None)),
    ((2, 3), (4, 6, 3, 2), (None, 0)), ((3, 4, 3), (3, 2), (1, None)),
])
def test_matmul(sa, sb, dims):
    check(lambda m: m.matmul, rn(*sa), rn(*sb), in_dims=dims)


def test_mm_bmm_mv_dot_outer():
    check(lambda m: m.mm, rn(4, 2, 3), rn(3, 5), in_dims=(0, None))
    check(lambda m: m.mm, rn(2, 3), rn(4, 3, 5), in_dims=(None, 0))
    check(lambda m: m.bmm, rn(4, 2, 2, 3), rn(2, 3, 5), in_dims=(0, None))
    check(lambda m: m.mv, rn(4, 2, 3), rn(3), in_dims=(0, None))
    check(lambda m: m.dot, rn(4, 3), rn(4, 3))
    check(lambda m: m.outer, rn(4, 3), rn(2), in_dims=(0, None))
    check(lambda m: m.outer, rn(3, 4), rn(2, 4), in_dims=(1, 1))


def test_linear():
    check(lambda m: m.nn.functional.linear, rn(4, 3), rn(2, 3), rn(2), in_dims=(0, None, None))
    check(lambda m: m.nn.functional.linear, rn(4, 6, 3), rn(2, 3), in_dims=(0, None))
    check(lambda m: m.nn.functional.linear, rn(6, 3), rn(4, 2, 3), rn(4, 2), in_dims=(None, 0, 0))
    check(lambda m: m.nn.functional.linear, rn(4, 6, 3), rn(4, 2, 3), rn(2), in_dims=(0, 0, None))
    check(lambda m: m.nn.functional.linear, rn(3, 4), rn(2, 3), in_dims=(1, None))


def test_conv2d():
    conv = lambda m: m.nn.functional.conv2d  # noqa: E731
    check(conv, rn(3, 2, 2, 6, 6), rn(4, 2, 3, 3), rn(4), in_dims=(0, None, None), tol=1e-4)
    check(conv, rn(3, 2, 6, 6), rn(4, 2, 3, 3), in_dims=(0, None), tol=1e-4)
    check(conv, rn(2, 2, 6, 6), rn(3, 4, 2, 3, 3), rn(3, 4), in_dims=(None, 0, 0), tol=1e-4)
    check(lambda m: lambda x, w: m.nn.functional.conv2d(x, w, groups=2), rn(3, 2, 2, 6, 6), rn(3, 4, 1, 3, 3),
          tol=1e-4)
    check(lambda m: lambda x, w: m.nn.functional.conv2d(x, w, padding=1, stride=2), rn(3, 2, 6, 6),
          rn(3, 4, 2, 3, 3), tol=1e-4)


def test_pooling():
    check(lambda m: lambda x: m.nn.functional.max_pool2d(x, 2), rn(3, 2, 4, 6, 6))
    check(lambda m: lambda x: m.nn.functional.avg_pool2d(x, 2), rn(3, 4, 6, 6))
    check(lambda m: lambda x: m.nn.functional.adaptive_avg_pool2d(x, 1), rn(3, 2, 4, 6, 6))


# ---- indexing, cat, stack ------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x[0], lambda x: x[:, 1], lambda x: x[1:3, ::2], lambda x: x[..., 0], lambda x: x[None, 0],
    lambda x: x[-1, None, 2:],
])
def test_basic_index(call):
    check(lambda m: call, rn(4, 3, 5))
    check(lambda m: call, rn(3, 4, 5), in_dims=1)


def test_advanced_index():
    idx = np.array([2, 0, 1, 1])
    check(lambda m: lambda x, i: x[i], rn(4, 3, 5), idx, in_dims=(0, None))
    check(lambda m: lambda x, i: x[:, i], rn(4, 3, 5), idx, in_dims=(0, None))
    check(lambda m: lambda x, i: x[i], rn(4, 3, 5), idx[:, None] % 3, in_dims=(0, 0))
    check(lambda m: lambda x, i: x[i, :, i], rn(4, 3, 5, 3), idx[:2], in_dims=(0, None))


def test_setitem():
    def f(m):
        def g(x, v):
            y = x.clone()
            y[0] = v
            y[:, 1] = 0.0
            return y
        return g
    check(f, rn(4, 3, 5), rn(4, 5))
    check(f, rn(4, 3, 5), rn(5), in_dims=(0, None))


def test_cat_stack():
    check(lambda m: lambda x, y: m.cat([x, y], 0), rn(4, 3), rn(2), in_dims=(0, None))
    check(lambda m: lambda x, y: m.cat([x, y, x], -1), rn(4, 2, 3), rn(4, 2, 1))
    check(lambda m: lambda x, y: m.stack([x, y]), rn(4, 3), rn(3), in_dims=(0, None))
    check(lambda m: lambda x, y: m.stack([x, y], -1), rn(4, 3), rn(4, 3))


# ---- losses and normalisation ---------------------------------------------------------------------------------

def test_losses():
    labels = R.integers(0, 5, (4, 3))
    check(lambda m: m.nn.functional.cross_entropy, rn(4, 3, 5), labels)
    check(lambda m: lambda x, y: m.nn.functional.cross_entropy(x, y, reduction="sum"), rn(4, 3, 5), labels)
    check(lambda m: lambda x, y: m.nn.functional.cross_entropy(x, y, reduction="none"), rn(4, 3, 5), labels)
    check(lambda m: lambda x, y: m.nn.functional.cross_entropy(x, y), rn(4, 5), labels[:, 0])
    check(lambda m: lambda x, y: m.nn.functional.nll_loss(x.log_softmax(-1), y), rn(4, 3, 5), labels)
    w = np.abs(rn(5)) + 0.1
    check(lambda m: lambda x, y, w: m.nn.functional.cross_entropy(x, y, weight=w, ignore_index=1), rn(4, 3, 5),
          labels, w, in_dims=(0, 0, None))
    check(lambda m: m.nn.functional.mse_loss, rn(4, 3), rn(4, 3))
    check(lambda m: lambda x, y: m.nn.functional.l1_loss(x, y, reduction="sum"), rn(4, 3), rn(3), in_dims=(0, None))
    check(lambda m: lambda x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y), rn(4, 3),
          (rn(4, 3) > 0).astype(np.float32))


def test_layer_norm_and_batch_norm():
    check(lambda m: lambda x: m.nn.functional.layer_norm(x, (5,)), rn(4, 3, 5), tol=1e-4)
    check(lambda m: lambda x, w, b: m.nn.functional.layer_norm(x, (5,), w, b), rn(4, 3, 5), rn(4, 5), rn(5),
          in_dims=(0, 0, None), tol=1e-4)
    check(lambda m: lambda x, w, b: m.nn.functional.batch_norm(x, None, None, w, b, training=True),
          rn(4, 6, 3, 2), rn(3), rn(3), in_dims=(0, None, None), tol=1e-4)


def test_embedding():
    idx = R.integers(0, 6, (4, 3))
    check(lambda m: m.nn.functional.embedding, idx, rn(6, 2), in_dims=(0, None))
    check(lambda m: m.nn.functional.embedding, idx, rn(4, 6, 2), in_dims=(0, 0))


# ---- the transform ---------------------------------------------------------------------------------------------

def test_pytrees_in_and_out():
    def f(m):
        return lambda d, t: {"a": d["x"] * t[0] + d["y"].sum(), "b": (t[0].sum(), t[1])}
    check(f, {"x": rn(4, 3), "y": rn(3, 4)}, (rn(3), rn(4, 2)), in_dims=({"x": 0, "y": 1}, (None, 0)),
          out_dims={"a": 1, "b": (None, 0)})
    check(f, {"x": rn(4, 3), "y": rn(3, 4)}, (rn(3), rn(4, 2)), in_dims=({"x": 0, "y": 1}, (None, 0)))
    check(lambda m: lambda x: (x, x.sum()), rn(4, 3), out_dims=(1, 0))


def test_unbatched_output_and_out_dims_none():
    check(lambda m: lambda x, y: y * 2, rn(4, 3), rn(3), in_dims=(0, None))
    check(lambda m: lambda x, y: (x * y, y.sum()), rn(4, 3), rn(3), in_dims=(0, None), out_dims=(0, None))


def test_nested_vmap():
    x, y = rn(2, 3, 4), rn(3, 4)
    want = torch.func.vmap(torch.func.vmap(lambda a, b: (a * b).sum() + a.max()))(*_t(torch, (x, np.broadcast_to(y, (2, 3, 4)).copy())))
    got = fg.func.vmap(fg.func.vmap(lambda a, b: (a * b).sum() + a.max()))(*_t(fg, (x, np.broadcast_to(y, (2, 3, 4)).copy())))
    _close(_np(want), _np(got))
    check(lambda m: m.func.vmap(lambda a, b: a @ b, in_dims=(None, 1)), rn(2, 3, 4), rn(2, 4, 5), in_dims=(0, 0))
    check(lambda m: m.func.vmap(m.func.vmap(lambda a: a.softmax(0))), rn(2, 3, 4))


def test_chunk_size():
    check(lambda m: lambda x: x.sin().sum(), rn(10, 3), chunk_size=3)


def test_randomness():
    x = fg.randn(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        fg.func.vmap(lambda v: fg.rand_like(v))(x)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        fg.func.vmap(lambda v: fg.nn.functional.dropout(v))(x)
    same = fg.func.vmap(lambda v: fg.nn.functional.dropout(fg.ones_like(v) + 0 * v, 0.5), randomness="same")(x)
    assert (same == same[0]).all()
    diff = fg.func.vmap(lambda v: fg.randn_like(v), randomness="different")(fg.zeros(64, 3))
    assert not (diff == diff[0]).all()
    same = fg.func.vmap(lambda v: fg.randn_like(v) + v, randomness="same")(fg.zeros(4, 3))
    assert (same == same[0]).all()


# ---- errors ---------------------------------------------------------------------------------------------------

def _same_error(make, *inputs, **vkw):
    with pytest.raises(Exception) as want:
        torch.func.vmap(make(torch), **vkw)(*_t(torch, inputs))
    with pytest.raises(Exception) as got:
        fg.func.vmap(make(fg), **vkw)(*_t(fg, inputs))
    assert type(got.value) is type(want.value), (got.value, want.value)
    return got.value


def test_errors():
    X = rn(4, 3)
    assert "item()" in str(_same_error(lambda m: lambda x: x.sum().item(), X))
    assert "data-dependent control flow" in str(_same_error(lambda m: lambda x: 1 if x.sum() > 0 else 0, X))
    # in place on a value not batched at the inner level, with a batched other
    assert "inplace arithmetic" in str(_same_error(
        lambda m: lambda y: m.func.vmap(lambda x: y.clone().mul_(x))(y.unsqueeze(0).expand(2, 3)),
        X))
    _same_error(lambda m: lambda y, z: m.func.vmap(lambda x: y.add_(x))(z), X, rn(4, 2, 3))
    _same_error(lambda m: lambda x, y: x + y, X, X, in_dims=(0,))
    _same_error(lambda m: lambda x: x, X, in_dims=2)
    _same_error(lambda m: lambda x: x, X, in_dims="a")
    _same_error(lambda m: lambda x, y: x + y, X, rn(5, 3))
    _same_error(lambda m: lambda x: 1.0, X)
    _same_error(lambda m: lambda x: x, X, out_dims=2)
    _same_error(lambda m: lambda x: x, 3)
    _same_error(lambda m: lambda x: x, X, randomness="foo")
    _same_error(lambda m: lambda x: x, X, out_dims=None)
    _same_error(lambda m: lambda x: m.rand_like(x), X)
    bns = {"torch": torch.nn.BatchNorm1d(3), "fg": fg.nn.BatchNorm1d(3)}
    assert "running_mean" in str(_same_error(lambda m: bns["torch" if m is torch else "fg"], rn(4, 2, 3)))


# ---- what still runs per sample -------------------------------------------------------------------------------

def test_fallback_warns_once_and_is_correct():
    if AGAINST_TORCH:
        pytest.skip("ferrograd's fallback")
    from ferrograd.func import _batching_rules

    _batching_rules._WARNED.discard("unfold")
    a = rn(4, 3, 5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = fg.func.vmap(lambda x: x.unfold(1, 2, 1))(fg.tensor(a))
        fg.func.vmap(lambda x: x.unfold(1, 2, 1))(fg.tensor(a))
    msgs = [str(m.message) for m in w if "performance drop" in str(m.message)]
    assert len(msgs) == 1 and "unfold" in msgs[0]
    want = torch.func.vmap(lambda x: x.unfold(1, 2, 1))(torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


# The Tensor methods without a batching rule: under vmap they run once per sample (with the warning).
# Most are in-place ops whose batched form is not written yet, ops with data-dependent output shapes
# (nonzero, masked_select: torch refuses them under vmap too) and methods that are not ops.
FALLBACK_OPS = set("""
addbmm_ addmm_ addmv_ addr_ apply_ as_strided baddbmm_ cumprod_ cumsum_ fill_diagonal_ index_add_ index_copy_
index_fill_ index_put_ index_reduce_ is_contiguous map2_ map_ masked_scatter_ masked_select nonzero put_
register_hook register_post_accumulate_grad_hook renorm_ resize_ resize_as_ squeeze_ storage_offset swapaxes_
swapdims_ t_ transpose_ unfold unsqueeze_
""".split())


def test_the_ops_that_fall_back():
    """Shrinking FALLBACK_OPS is progress: a method that gains a rule must leave it, and one that loses
    its rule fails here. Every op-table row has a rule."""
    if AGAINST_TORCH:
        pytest.skip("ferrograd's rule table")
    from ferrograd.func._batching_rules import fallback_names

    fg.func.vmap(lambda x: x)(fg.ones(1))  # (the batched tensor's methods are installed on first use)
    assert set(fallback_names()) == FALLBACK_OPS
    table = {r["name"] for r in fg._C.op_table()}
    assert not FALLBACK_OPS & table


@pytest.mark.parametrize("call", [
    lambda x: x.gather(1, (x.abs() * 2).long() % 3), lambda x: x.index_select(0, x[0, :2].abs().long() % 3),
    lambda x: x.take_along_dim((x.abs() * 2).long() % 3, 1), lambda x: x.trace(), lambda x: x.diag(),
    lambda x: x.diagonal().diag(), lambda x: x.det(), lambda x: (x @ x.mT + 3 * _eye_like(x)).inverse(),
    lambda x: x.clone().arctan_(), lambda x: x.abs().log1p(),
    lambda x: x.ravel(), lambda x: x.cov(), lambda x: x.msort(), lambda x: x.sum_to_size(1, 3),
    lambda x: x.narrow_copy(0, 1, 1), lambda x: x.hardshrink(), lambda x: x.scatter(1, (x.abs() * 2).long() % 3, x),
])
def test_more_rules_and_compositions(call):
    check(lambda m: call, rn(4, 3, 3), tol=1e-4)


def _eye_like(x):
    return (torch if isinstance(x, torch.Tensor) else fg).eye(3)


def test_random_factories_and_inplace_random():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        fg.func.vmap(lambda v: v + fg.rand(3))(fg.zeros(4, 3))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        fg.func.vmap(lambda v: v.clone().normal_())(fg.zeros(4, 3))
    d = fg.func.vmap(lambda v: v + fg.randn(3), randomness="different")(fg.zeros(8, 3))
    assert not (d == d[0]).all()
    s = fg.func.vmap(lambda v: v + fg.randn(3), randomness="same")(fg.zeros(8, 3))
    assert (s == s[0]).all()
    s = fg.func.vmap(lambda v: v.clone().uniform_(), randomness="same")(fg.zeros(8, 3))
    assert (s == s[0]).all() and (s < 1).all()
    d = fg.func.vmap(lambda v: v.clone().uniform_(), randomness="different")(fg.zeros(8, 3))
    assert not (d == d[0]).all()
    with pytest.raises(RuntimeError, match="same randomness with a batched tensor input"):
        fg.func.vmap(lambda p: fg.bernoulli(p), randomness="same")(fg.full((8, 50), 0.5))
    b = fg.func.vmap(lambda v: v.clone().bernoulli_(0.5), randomness="same")(fg.zeros(8, 50))
    assert (b == b[0]).all()
    b = fg.func.vmap(lambda p: p.bernoulli(), randomness="different")(fg.full((8, 50), 0.5))
    assert not (b == b[0]).all()


# ---- whole modules under vmap, and their per-sample gradients ---------------------------------------------------

def _modules(m):
    nn = m.nn
    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(6, 5), nn.GELU(), nn.LayerNorm(5), nn.Linear(5, 2)), (4, 3, 6)),
        "conv_bn_eval": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                               nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16, 3)).eval(), (4, 2, 3, 4, 4)),
        "embedding": (lambda: nn.Sequential(nn.Embedding(10, 4), nn.Flatten(0), nn.Linear(12, 2)), None),
        "attention": (lambda: nn.MultiheadAttention(6, 2, batch_first=True), (4, 2, 5, 6)),
        "encoder_layer": (lambda: nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, batch_first=True), (4, 2, 5, 6)),
        "conv1d_pool": (lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.AdaptiveAvgPool1d(1)), (4, 2, 3, 7)),
        "group_norm": (lambda: nn.GroupNorm(2, 4), (4, 2, 4, 3)),
        "conv_transpose": (lambda: nn.ConvTranspose2d(3, 2, 3), (4, 1, 3, 4, 4)),
        "rnn_cell": (lambda: nn.RNNCell(6, 4), (4, 2, 6)),
    }


def _pair(name):
    torch.manual_seed(0)
    make_t, shape = _modules(torch)[name]
    tm = make_t()
    fm = _modules(fg)[name][0]()
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = R.integers(0, 10, (4, 3)) if shape is None else rn(*shape)
    return tm, fm, x


@pytest.mark.parametrize("name", list(_modules(torch)))
def test_modules_under_vmap(name):
    tm, fm, x = _pair(name)
    call = (lambda mod: lambda v: mod(v, v, v)[0]) if name == "attention" else (lambda mod: mod)
    want = torch.func.vmap(call(tm))(torch.tensor(x))
    got = fg.func.vmap(call(fm))(fg.tensor(x))
    _close(_np(want), _np(got), 1e-4)


@pytest.mark.parametrize("name", ["mlp", "conv_bn_eval", "embedding", "encoder_layer", "group_norm"])
def test_per_sample_grads_of_modules(name):
    tm, fm, x = _pair(name)

    def per_sample(m, mod, x):
        params = {k: v.detach() for k, v in mod.named_parameters()}
        buffers = {k: v.detach() for k, v in mod.named_buffers()}

        def loss(p, b, xi):
            return m.func.functional_call(mod, (p, b), (xi,)).pow(2).mean()
        return m.func.vmap(m.func.grad(loss), in_dims=(None, None, 0))(params, buffers, m.tensor(x))
    _close(_np(per_sample(torch, tm, x)), _np(per_sample(fg, fm, x)), 1e-4)


# ---- torch.* / F.* / linalg functions with batched arguments --------------------------------------------------

FUNCTION_CASES = {
 'einsum': lambda m: lambda a,b: m.einsum('ij,jk->ik', a, b),
 'einsum2': lambda m: lambda a,b: m.einsum('ij,ij->i', a, b.mT),
 'tensordot': lambda m: lambda a,b: m.tensordot(a, b, dims=([1],[0])),
 'cdist': lambda m: lambda a,b: m.cdist(a, b.mT),
 'clamp_t': lambda m: lambda a,b: m.clamp(a, min=b.mT*0.1),
 'cumsum': lambda m: lambda a,b: m.cumsum(a, 1),
 'normalize': lambda m: lambda a,b: m.nn.functional.normalize(a, dim=-1),
 'pad': lambda m: lambda a,b: m.nn.functional.pad(a, (1,2)),
 'flatten': lambda m: lambda a,b: m.flatten(a),
 'squeeze': lambda m: lambda a,b: m.squeeze(a.unsqueeze(0), 0),
 'transpose': lambda m: lambda a,b: m.transpose(a, 0, 1),
 'softmax': lambda m: lambda a,b: m.softmax(a, 1),
 'argmax': lambda m: lambda a,b: m.argmax(a, 1),
 'topk': lambda m: lambda a,b: m.topk(a, 2)[0],
 'sort': lambda m: lambda a,b: m.sort(a, 0)[1],
 'norm': lambda m: lambda a,b: m.norm(a, dim=1),
 'linalg_norm': lambda m: lambda a,b: m.linalg.norm(a),
 'vector_norm': lambda m: lambda a,b: m.linalg.vector_norm(a, dim=-1),
 'matrix_norm': lambda m: lambda a,b: m.linalg.matrix_norm(a),
 'diag_embed': lambda m: lambda a,b: m.diag_embed(a),
 'roll': lambda m: lambda a,b: m.roll(a, 1, 0),
 'chunk': lambda m: lambda a,b: m.chunk(a, 3, 1)[1],
 'split': lambda m: lambda a,b: m.split(a, 2, 1)[0],
 'unbind': lambda m: lambda a,b: m.unbind(a, 1)[0],
 'narrow': lambda m: lambda a,b: m.narrow(a, 1, 1, 2),
 'masked_fill': lambda m: lambda a,b: m.masked_fill(a, a>0, 0.),
 'logsumexp': lambda m: lambda a,b: m.logsumexp(a, 1),
 'max_dim': lambda m: lambda a,b: m.max(a, 1)[0],
 'min_other': lambda m: lambda a,b: m.min(a, b.mT),
 'std_mean': lambda m: lambda a,b: m.std_mean(a, 1)[0],
 'var_mean': lambda m: lambda a,b: m.var_mean(a)[1],
 'baddbmm': lambda m: lambda a,b: m.addmm(a[:, :3], a, b),
 'addcmul': lambda m: lambda a,b: m.addcmul(a, a, a, value=0.5),
 'movedim': lambda m: lambda a,b: m.movedim(a, 0, 1),
 'permute': lambda m: lambda a,b: m.permute(a, (1,0)),
 'reshape': lambda m: lambda a,b: m.reshape(a, (5,3)),
 'hstack': lambda m: lambda a,b: m.hstack([a, a]),
 'vstack': lambda m: lambda a,b: m.vstack([a, b.mT]),
 'where_scalar': lambda m: lambda a,b: m.where(a > 0, a, 0.0),
 'linalg_det': lambda m: lambda a,b: m.linalg.det(a @ b),
 'linalg_inv': lambda m: lambda a,b: m.linalg.inv(a @ b + 5*m.eye(3)),
 'linalg_solve': lambda m: lambda a,b: m.linalg.solve(a @ b + 5*m.eye(3), a[:, 0]),
 'outer': lambda m: lambda a,b: m.outer(a[0], b[0]),
 'prelu': lambda m: lambda a,b: m.nn.functional.prelu(a, m.ones(1)*0.2),
 'softplus': lambda m: lambda a,b: m.nn.functional.softplus(a, beta=2),
 'silu': lambda m: lambda a,b: m.nn.functional.silu(a),
 'one_hot': lambda m: lambda a,b: m.nn.functional.one_hot((a.abs()*2).long() % 4, 4),
 'interp': lambda m: lambda a,b: m.nn.functional.interpolate(a.unsqueeze(0), scale_factor=2),
 'cosine_sim': lambda m: lambda a,b: m.nn.functional.cosine_similarity(a, b.mT),
 'pairwise': lambda m: lambda a,b: m.nn.functional.pairwise_distance(a, b.mT),
 'sdpa': lambda m: lambda a,b: m.nn.functional.scaled_dot_product_attention(a, a, a),
 'glu': lambda m: lambda a,b: m.nn.functional.glu(a.repeat(2,1), 0),
 'log_softmax_F': lambda m: lambda a,b: m.nn.functional.log_softmax(a, -1),
 'mean_fn': lambda m: lambda a,b: m.mean(a, dim=(0,1), keepdim=True),
 'amax_fn': lambda m: lambda a,b: m.amax(a, 1),
 'all_fn': lambda m: lambda a,b: m.all(a > -10),
 'count_nonzero': lambda m: lambda a,b: m.count_nonzero(a > 0, 1),
 'flip_fn': lambda m: lambda a,b: m.flip(a, [0, 1]),
 'rot90': lambda m: lambda a,b: m.rot90(a),
 'triu': lambda m: lambda a,b: m.triu(a, 1),
 'kron': lambda m: lambda a,b: m.kron(a, a),
 'cross': lambda m: lambda a,b: m.cross(a, a*2, dim=0),
 'trapz': lambda m: lambda a,b: m.trapezoid(a),
 'cummax': lambda m: lambda a,b: m.cummax(a, 1)[0],
 'full_like': lambda m: lambda a,b: m.full_like(a, 2.0) + a,
 'zeros_like': lambda m: lambda a,b: m.zeros_like(a) + a,
 'new_zeros': lambda m: lambda a,b: a.new_zeros(3) + a[0, :3],
 'type_as': lambda m: lambda a,b: a.long().type_as(a),
 'item_sum_shape': lambda m: lambda a,b: a.reshape(a.shape[0] * a.shape[1]),
 'size_call': lambda m: lambda a,b: a.view(a.size(0), -1).sum(a.dim()-1),
 'expand_as': lambda m: lambda a,b: a[:, :1].expand_as(a),
 'repeat_interleave': lambda m: lambda a,b: a.repeat_interleave(2, dim=1),
 'unfold_F': lambda m: lambda a,b: m.nn.functional.unfold(a.unsqueeze(0).unsqueeze(0), 2),
 'nan_to_num': lambda m: lambda a,b: m.nan_to_num(a.log()),
 'isclose': lambda m: lambda a,b: m.isclose(a, a),
 'sign_fn': lambda m: lambda a,b: m.sign(a),
 'F.relu_': lambda m: lambda a,b: m.nn.functional.relu(a.clone(), inplace=True),
 'dropout_eval': lambda m: lambda a,b: m.nn.functional.dropout(a, training=False),
}
# (these decompose into ops that fall back, with the warning; the results are right)
FALLS_BACK = {"rot90", "kron", "cross", "repeat_interleave"}


@pytest.mark.parametrize("name", list(FUNCTION_CASES))
def test_functions(name):
    x, y = rn(4, 3, 5), rn(4, 5, 3)
    with warnings.catch_warnings():
        if name in FALLS_BACK:
            warnings.simplefilter("ignore")
        check(FUNCTION_CASES[name], x, y, tol=1e-4)


def test_dims_negative_kwargs_and_aux():
    check(lambda m: lambda x, y: x * y, rn(3, 4), rn(4, 3), in_dims=(-1, 0), out_dims=-1)
    # keyword arguments are passed to every sample unbatched
    want = torch.func.vmap(lambda x, *, scale: x * scale)(torch.ones(4, 3), scale=2.0)
    got = fg.func.vmap(lambda x, *, scale: x * scale)(fg.ones(4, 3), scale=2.0)
    _close(_np(want), _np(got))
    check(lambda m: m.func.grad(lambda x: ((x ** 2).sum(), x.sum()), has_aux=True), rn(4, 3))
    check(lambda m: m.func.grad_and_value(lambda x, y: (x * y).sum(), argnums=(0, 1)), rn(4, 3), rn(3),
          in_dims=(0, None))


def test_chunked_randomness_and_pytrees():
    x = rn(10, 3)
    check(lambda m: lambda d: {"s": d["a"].sum(), "p": d["a"] * d["b"]}, {"a": x, "b": rn(10, 3)}, chunk_size=4)
    out = fg.func.vmap(lambda v: v + fg.randn(3), randomness="same", chunk_size=3)(fg.zeros(7, 3))
    assert out.shape == (7, 3)
