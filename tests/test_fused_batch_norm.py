"""batch_norm in training mode as one fused CPU op recording torch's node NativeBatchNormBackward0
(issue #29): outputs, running statistics, gradients of input/weight/bias and double-backward
gradients against torch, for 2-d to 5-d float32/float64 inputs, with and without affine parameters,
non-contiguous inputs, momentum=None (cumulative average) and a few steps of a BatchNorm module."""

import numpy as np
import pytest
import torch

from conftest import fg

TOL = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=3e-5, atol=3e-6)}


def close(ours, theirs, dtype):
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 7), (4, 3, 5, 6), (2, 3, 2, 3, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_module_steps_match_torch(dtype, shape, affine):
    rng = np.random.default_rng(len(shape) * 10 + affine)
    cls = {2: "BatchNorm1d", 3: "BatchNorm1d", 4: "BatchNorm2d", 5: "BatchNorm3d"}[len(shape)]
    mods = [getattr(lib.nn, cls)(shape[1], affine=affine).to(getattr(lib, dtype)) for lib in (torch, fg)]
    if affine:
        w, b = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
        for m, lib in zip(mods, (torch, fg)):
            with lib.no_grad():
                m.weight.copy_(lib.tensor(w))
                m.bias.copy_(lib.tensor(b))
    for step in range(3):
        x = rng.standard_normal(shape) * 3 + 2
        g = rng.standard_normal(shape)
        xs = [lib.tensor(x).to(getattr(lib, dtype)).requires_grad_() for lib in (torch, fg)]
        outs = [m(xx) for m, xx in zip(mods, xs)]
        assert type(outs[1].grad_fn).__name__ == type(outs[0].grad_fn).__name__ == "NativeBatchNormBackward0"
        close(outs[1], outs[0], dtype)
        for o, lib in zip(outs, (torch, fg)):
            o.backward(lib.tensor(g).to(o.dtype))
        close(xs[1].grad, xs[0].grad, dtype)
        close(mods[1].running_mean, mods[0].running_mean, dtype)
        close(mods[1].running_var, mods[0].running_var, dtype)
        if affine:
            close(mods[1].weight.grad, mods[0].weight.grad, dtype)
            close(mods[1].bias.grad, mods[0].bias.grad, dtype)
    for m in mods:
        m.eval()
    x = rng.standard_normal(shape)
    close(mods[1](fg.tensor(x).to(getattr(fg, dtype))), mods[0](torch.tensor(x).to(getattr(torch, dtype))), dtype)


def test_noncontiguous_input_and_cumulative_momentum():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5, 6, 3)).astype(np.float32)
    mods = [lib.nn.BatchNorm2d(3, momentum=None) for lib in (torch, fg)]
    for _ in range(2):
        xs = [lib.tensor(x).permute(0, 3, 1, 2).requires_grad_() for lib in (torch, fg)]  # channels-last memory
        outs = [m(xx) for m, xx in zip(mods, xs)]
        close(outs[1], outs[0], "float32")
        for o in outs:
            (o * o).sum().backward()
    close(mods[1].running_var, mods[0].running_var, "float32")
    assert int(mods[1].num_batches_tracked) == int(mods[0].num_batches_tracked) == 2


def test_saved_values_and_functional_form():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 4, 3))
    wv = rng.standard_normal(4)
    res = []
    for lib in (torch, fg):
        xx = lib.tensor(x).requires_grad_()
        w = lib.tensor(wv).requires_grad_()
        rm, rv = lib.zeros(4, dtype=lib.float64), lib.ones(4, dtype=lib.float64)
        y = lib.nn.functional.batch_norm(xx, rm, rv, w, None, training=True, momentum=0.3, eps=1e-3)
        gf = y.grad_fn
        assert gf._saved_eps == pytest.approx(1e-3) and gf._saved_training is True
        assert [n is None for n, _ in gf.next_functions] == [False, False, True]
        res.append((y, rm, rv, gf._saved_result1, gf._saved_result2))
    for ours, theirs in zip(res[1], res[0]):
        close(ours, theirs, "float64")


def test_double_backward_matches_torch():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((5, 3, 4))
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    res = []
    for lib in (torch, fg):
        xx, ww, bb = (lib.tensor(a).requires_grad_() for a in (x, w, b))
        y = lib.nn.functional.batch_norm(xx, None, None, ww, bb, training=True)
        gx, gw = lib.autograd.grad((y.pow(3)).sum(), (xx, ww), create_graph=True)
        (gx.pow(2).sum() + gw.sum()).backward()
        res.append((gx, gw, xx.grad, ww.grad, bb.grad))
    for ours, theirs in zip(res[1], res[0]):
        close(ours, theirs, "float64")


def test_errors_match_torch():
    for lib in (torch, fg):
        with pytest.raises(ValueError):
            lib.nn.functional.batch_norm(lib.ones(1, 3), None, None, training=True)  # one value per channel
        with pytest.raises(RuntimeError):
            lib.nn.functional.batch_norm(lib.ones(4, 3), None, None, lib.ones(2), training=True)
