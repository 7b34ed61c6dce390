"""The fused optimizer kernels (one Rust pass per parameter) against torch's single-tensor updates:
one large step from random state, float32 and float64, to rounding; the op-by-op fallback for
non-contiguous parameters; and the version bump an in-place update implies."""
import numpy as np
import pytest
import torch

import ferrograd.optim  # noqa: F401
from conftest import fg

CONFIGS = {
    "sgd": lambda L, p: L.optim.SGD(p, lr=0.1),
    "sgd_momentum_nesterov_wd": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "sgd_dampening_maximize": lambda L, p: L.optim.SGD(p, lr=0.01, momentum=0.5, dampening=0.3, maximize=True),
    "adam": lambda L, p: L.optim.Adam(p, lr=1e-2),
    "adam_wd_amsgrad_maximize": lambda L, p: L.optim.Adam(p, lr=1e-2, weight_decay=0.1, amsgrad=True, maximize=True),
    "adamw_amsgrad": lambda L, p: L.optim.AdamW(p, lr=2e-2, weight_decay=0.3, amsgrad=True),
    "rmsprop": lambda L, p: L.optim.RMSprop(p, lr=1e-3),
    "rmsprop_centered_momentum": lambda L, p: L.optim.RMSprop(p, lr=1e-3, alpha=0.9, momentum=0.8, centered=True,
                                                              weight_decay=1e-2),
    "adagrad_decay": lambda L, p: L.optim.Adagrad(p, lr=0.1, lr_decay=0.05, weight_decay=1e-2,
                                                  initial_accumulator_value=0.1),
}
SHAPES = [(300, 200), (7,), (), (0, 3), (70000,)]  # the last is large enough to run in parallel chunks


def run(L, make_opt, dtype, steps=3, transpose=False):
    rng = np.random.default_rng(0)
    params = []
    for shape in SHAPES:
        v = rng.standard_normal(shape).astype(dtype)
        t = L.tensor(v)
        if transpose and len(shape) == 2:
            t = L.tensor(np.ascontiguousarray(v.T)).t()  # same values, non-contiguous
        params.append(t.requires_grad_())
    opt = make_opt(L, params)
    for k in range(steps):
        for p in params:
            p.grad = L.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_fused_step_matches_torch(name, dtype):
    expected = run(torch, CONFIGS[name], dtype)
    got = run(fg, CONFIGS[name], dtype)
    tol = dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-15)
    for e, g in zip(expected, got):
        assert e.shape == g.shape
        np.testing.assert_allclose(g, e, **tol)


@pytest.mark.parametrize("name", ["sgd_momentum_nesterov_wd", "adam_wd_amsgrad_maximize", "rmsprop_centered_momentum"])
def test_non_contiguous_params_take_the_op_path_and_agree(name):
    expected = run(torch, CONFIGS[name], np.float64, transpose=True)
    got = run(fg, CONFIGS[name], np.float64, transpose=True)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-13, atol=1e-15)


def test_step_bumps_the_parameter_version():
    w = fg.tensor([1.0, 2.0], requires_grad=True)
    opt = fg.optim.Adam([w], lr=0.1)
    y = (w * w).sum()  # saves w
    w.grad = fg.tensor([1.0, 1.0])
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
