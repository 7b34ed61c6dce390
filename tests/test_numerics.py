"""Numerics at extreme inputs: log_softmax, cross_entropy, logsumexp, sigmoid, softplus, norm
(and their relatives) match torch at +-1e4, huge, tiny and denormal inputs, in float32 and float64,
forward and gradients: no spurious inf or nan where torch is finite, and NaN and inf propagate where
torch propagates them.

Each case runs fn(L, x) on the same rows in torch and in the library under test, compares the
outputs, then backpropagates `(out * W).sum()` (W fixed, finite) and compares x.grad. Comparison:
the nan / +inf / -inf positions must be identical, finite values close (relative to the row's scale).
"""
import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

# Rows of 4 values; each function is applied along the last dim.
EXTREME = {
    "float64": [
        [1e4, -1e4, 0.0, 1.0],
        [1e4, 1e4 - 1, 1e4, 9999.5],
        [-1e4, -1e4 + 1, -1e4 - 2, -9999.0],
        [1e-30, -1e-30, 1e-300, 0.0],
        [1e-310, -5e-324, 1e-320, 0.0],       # denormal
        [710.0, -745.0, 700.0, 0.0],          # around exp's overflow / underflow
        [1e300, -1e300, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [-1e4, -1e4, -1e4, -1e4],
        [36.0, -36.0, 20.0, -20.0],           # softplus' threshold, sigmoid's saturation
    ],
    "float32": [
        [1e4, -1e4, 0.0, 1.0],
        [1e4, 1e4 - 1, 1e4, 9999.5],
        [-1e4, -1e4 + 1, -1e4 - 2, -9999.0],
        [1e-30, -1e-30, 1e-38, 0.0],
        [1e-40, -1e-42, 1e-45, 0.0],          # denormal
        [89.0, -104.0, 88.0, 0.0],            # around exp's overflow / underflow
        [3e38, -3e38, 1.0, 0.0],
        [0.0, 0.0, 0.0, 0.0],
        [-1e4, -1e4, -1e4, -1e4],
        [17.0, -17.0, 20.0, -20.0],
    ],
}
NONFINITE = [
    [float("nan"), 1.0, 2.0, 3.0],
    [float("inf"), 1.0, 2.0, 3.0],
    [-float("inf"), 1.0, 2.0, 3.0],
    [float("inf"), -float("inf"), 0.0, 1.0],
    [-float("inf")] * 4,
    [float("inf"), float("inf"), 1.0, 1.0],
    [float("nan"), float("inf"), -float("inf"), 0.0],
]


def F(L):
    return L.nn.functional


def _target(L, x):
    return L.tensor([k % x.shape[-1] for k in range(x.shape[0])])


FUNCTIONS = {
    "log_softmax": lambda L, x: x.log_softmax(-1),
    "F.log_softmax": lambda L, x: F(L).log_softmax(x, dim=-1),
    "softmax": lambda L, x: x.softmax(-1),
    "logsumexp": lambda L, x: x.logsumexp(-1),
    "logsumexp_all": lambda L, x: x.logsumexp((0, 1)),
    "cross_entropy": lambda L, x: F(L).cross_entropy(x, _target(L, x), reduction="none"),
    "cross_entropy_mean": lambda L, x: F(L).cross_entropy(x, _target(L, x)),
    "cross_entropy_smooth": lambda L, x: F(L).cross_entropy(x, _target(L, x), reduction="none",
                                                            label_smoothing=0.1),
    "sigmoid": lambda L, x: x.sigmoid(),
    "F.sigmoid": lambda L, x: F(L).sigmoid(x),
    "logsigmoid": lambda L, x: F(L).logsigmoid(x),
    "bce_with_logits": lambda L, x: F(L).binary_cross_entropy_with_logits(
        x, L.ones_like(x) * 0.25, reduction="none"),
    "softplus": lambda L, x: F(L).softplus(x),
    "softplus_beta": lambda L, x: F(L).softplus(x, beta=2.0, threshold=10.0),
    "norm": lambda L, x: x.norm(dim=-1),
    "norm_all": lambda L, x: x.norm(),
    "norm_keepdim": lambda L, x: x.norm(dim=-1, keepdim=True),
    "tanh": lambda L, x: x.tanh(),
    # NaN and inf through elementwise ops and reductions
    "relu": lambda L, x: x.relu(),
    "sign_mul": lambda L, x: x.sign() * x,
    "abs": lambda L, x: x.abs(),
    "clamp": lambda L, x: x.clamp(-1.0, 1.0),
    "maximum": lambda L, x: L.maximum(x, L.zeros_like(x)),
    "where": lambda L, x: L.where(x > 0, x, x * 0.5),
    "amax": lambda L, x: x.amax(-1),
    "max_dim": lambda L, x: x.max(-1).values,
    "sum_mean": lambda L, x: x.sum(-1) + x.mean(-1),
    "cumsum": lambda L, x: x.cumsum(-1),
    "exp": lambda L, x: x.exp(),
    "log1p_abs": lambda L, x: x.abs().log1p(),
}

# Known differences: (function, rows, dtype) -> reason. Each makes its case a strict xfail.
MISSING = set()


def _known(name, rows, dtype):
    if name in MISSING:
        return "missing: nn.functional.softplus is not implemented"
    return KNOWN.get((name, rows, dtype)) or KNOWN.get((name, rows, None))


# Fixed since they were found (regressions stay covered by the parametrised cases): log_softmax's
# float32 precision at |x| ~ 1e4 and NaN for rows holding +inf (also through cross_entropy),
# logsumexp propagating NaN past inf, relu(nan) = nan, sign(nan) = 0 and sign/abs zero gradients;
# logsigmoid's and binary_cross_entropy_with_logits' gradients at +-inf, maximum(nan, x)'s gradient.
KNOWN = {}  # none known

def _np(t):
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy()


def _ok(e, g, dtype, grad):
    """Elementwise: g agrees with e (same nan/+inf/-inf, finite values close relative to the value,
    with an absolute floor at rtol * the largest finite magnitude of the row)."""
    rtol = 2e-5 if dtype == "float32" else 1e-10
    same_class = (np.isnan(g) == np.isnan(e)) & (np.isposinf(g) == np.isposinf(e)) & (
        np.isneginf(g) == np.isneginf(e))
    fin = np.isfinite(e) & np.isfinite(g)
    ef = np.where(np.isfinite(e), np.abs(e), 0)
    scale = ef.max(axis=-1, keepdims=True) if e.ndim else ef
    # gradients: upstream weights are O(1), so an absolute error of rtol is what float rounding allows
    atol = np.maximum(np.finfo(dtype).tiny * 4, rtol * (np.maximum(scale, 1.0) if grad else scale))
    close = np.abs(np.where(fin, g - e, 0)) <= atol + rtol * np.abs(np.where(fin, e, 0))
    return same_class & (close | ~fin)


def assert_same_numbers(expected, got, reference, what, dtype):
    """got matches torch (expected) in the same dtype, or else torch's float64 result on the same
    inputs (reference) rounded to dtype: being more accurate than torch float32 is no failure."""
    e, g = _np(expected), _np(got)
    assert g.shape == e.shape, f"{what}: shape {g.shape} != torch {e.shape}"
    assert str(got.dtype).rsplit(".")[-1] == str(expected.dtype).rsplit(".")[-1], f"{what}: dtype"
    grad = "gradient" in what
    with np.errstate(all="ignore"):  # inf - inf, float64 results beyond float32's range
        ok = _ok(e, g, dtype, grad)
        if reference is not None:
            ok |= _ok(_np(reference).astype(dtype), g, dtype, grad)
    bad = ~ok
    assert not bad.any(), (f"{what}: torch {e[bad][:4].tolist()} / ours {g[bad][:4].tolist()} "
                           f"at {np.argwhere(bad).tolist()[:4]}")


def _run(L, fn, data, w):
    x = L.tensor(data.copy(), requires_grad=True)
    y = fn(L, x)
    weights = L.tensor(np.resize(w, tuple(y.shape)).astype(data.dtype))
    (y * weights).sum().backward()
    return y.detach(), x.grad


def run_case(name, rows, dtype):
    fn = FUNCTIONS[name]
    data = np.array(rows, dtype=dtype)
    w = np.random.default_rng(0).uniform(0.5, 1.5, size=(64,))
    ty, tg = _run(torch, fn, data, w)
    ry, rg = _run(torch, fn, data.astype(np.float64), w) if dtype == "float32" else (None, None)
    fy, fgr = _run(fg, fn, data, w)
    assert_same_numbers(ty, fy, ry, f"{name} forward", dtype)
    assert fgr is not None, f"{name}: no gradient"
    assert_same_numbers(tg, fgr, rg, f"{name} gradient", dtype)


def _cases(rows_by_dtype, label):
    for name in FUNCTIONS:
        for dtype in ("float32", "float64"):
            rows = rows_by_dtype[dtype] if isinstance(rows_by_dtype, dict) else rows_by_dtype
            reason = _known(name, label, dtype)
            marks = [pytest.mark.xfail(not AGAINST_TORCH, strict=True, reason=reason)] if reason else []
            yield pytest.param(name, rows, dtype, id=f"{name}-{label}-{dtype}", marks=marks)


@pytest.mark.parametrize("name,rows,dtype", list(_cases(EXTREME, "extreme")))
def test_extreme_inputs_match_torch(name, rows, dtype):
    run_case(name, rows, dtype)


@pytest.mark.parametrize("name,rows,dtype", list(_cases(NONFINITE, "nonfinite")))
def test_nan_and_inf_propagate_like_torch(name, rows, dtype):
    run_case(name, rows, dtype)
