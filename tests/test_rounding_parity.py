"""Float32 rounding parity with torch for the pointwise compositions the optimizers are written with
(issue #27, "two programs drifted"): torch's CPU kernels round in a fixed order, with fused
multiply-adds where `add(alpha=)`, `addcmul` and `lerp` compute a*b + c, so for the same inputs the
results are bitwise torch's. See benches/rounding_drift.py for the op-by-op measurements."""
import numpy as np
import pytest
import torch

from conftest import fg

torch.set_num_threads(2)
N = 4099  # not a multiple of any vector width: the kernels' tails are covered too


def _inputs(seed=0, positive_c=True):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(N).astype(np.float32) for _ in range(3))
    if positive_c:
        c = np.abs(c) + np.float32(0.1)
    return a, b, c


def _both(fn, *arrays):
    t = fn(*(torch.from_numpy(x.copy()) for x in arrays)).numpy()
    f = fn(*(fg.from_numpy(x.copy()) for x in arrays)).numpy()
    return t, f


def _bitwise(t, f):
    assert t.dtype == f.dtype
    mism = np.nonzero(t.view(np.uint32 if t.dtype == np.float32 else np.uint64)
                      != f.view(np.uint32 if f.dtype == np.float32 else np.uint64))[0]
    assert mism.size == 0, f"{mism.size} of {t.size} differ, first at {mism[0]}: torch {t[mism[0]]!r} fg {f[mism[0]]!r}"


@pytest.mark.parametrize("value", [1, 0.1, -3.3, 0.001])
def test_addcmul_bitwise(value):
    _bitwise(*_both(lambda a, b, c: a.addcmul(b, c, value=value), *_inputs()))


@pytest.mark.parametrize("value", [1, 0.1, -3.3, 1e-3])
def test_addcdiv_bitwise(value):
    _bitwise(*_both(lambda a, b, c: a.addcdiv(b, c, value=value), *_inputs()))


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.3, 0.5, 0.9, 0.999, 1.0, -0.3, 1.7])
def test_lerp_scalar_weight_bitwise(weight):
    _bitwise(*_both(lambda a, b, c: a.lerp(b, weight), *_inputs()))


@pytest.mark.parametrize("weight", [0.1, 0.9])
def test_lerp_float64_bitwise(weight):
    a, b, _ = _inputs()
    _bitwise(*_both(lambda x, y: x.lerp(y, weight), a.astype(np.float64), b.astype(np.float64)))


def test_inplace_forms_bitwise():
    a, b, c = _inputs(1)
    _bitwise(*_both(lambda x, y, z: x.clone().addcmul_(y, z, value=0.1), a, b, c))
    _bitwise(*_both(lambda x, y, z: x.clone().addcdiv_(y, z, value=-0.01), a, b, c))
    _bitwise(*_both(lambda x, y, z: x.clone().lerp_(y, 0.1), a, b, c))


def test_add_alpha_is_fused_bitwise():
    # torch's add(other, alpha=) is one fused multiply-add on the CPU: what the optimizers rely on
    _bitwise(*_both(lambda a, b, c: a.add(b, alpha=-0.05), *_inputs(2)))


def test_addcmul_gradients_match_torch():
    # with autograd recording, addcmul is the differentiable composition input + (value*t1)*t2 (the
    # add not fused: up to one rounding of the product's size away from torch), gradients torch's
    a, b, c = (x[:64] for x in _inputs(3))
    res = []
    for lib in (torch, fg):
        ts = [lib.from_numpy(x.copy()).requires_grad_(True) for x in (a, b, c)]
        out = ts[0].addcmul(ts[1], ts[2], value=0.5)
        out.sum().backward()
        res.append([out.detach().numpy()] + [t.grad.numpy() for t in ts])
    scale = np.maximum(np.abs(a), np.abs(np.float32(0.5) * b * c))
    assert np.all(np.abs(res[1][0] - res[0][0]) <= np.spacing(scale))
    for t, f in zip(res[0][1:], res[1][1:]):
        np.testing.assert_allclose(f, t, rtol=2e-7, atol=0)


def test_addcdiv_integer_inputs_still_refused():
    with pytest.raises(RuntimeError):
        fg.tensor([1.0]).addcdiv(fg.tensor([1]), fg.tensor([2]))


def test_adadelta_square_avg_bitwise():
    """Adadelta's running average of squared gradients (mul_ then addcmul_, no sqrt) is torch's to
    the bit; the parameter update goes through sqrt, which torch's AVX2 kernel does not round
    correctly (up to 0.75 ULP), so the parameters agree to a few ULPs only."""
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [rng.standard_normal(N).astype(np.float32) for _ in range(3)]
    out = []
    for lib in (torch, fg):
        p = lib.from_numpy(p0.copy()).requires_grad_(True)
        opt = lib.optim.Adadelta([p], lr=1.0)
        for g in grads:
            p.grad = lib.from_numpy(g.copy())
            opt.step()
        out.append((opt.state[p]["square_avg"].numpy().copy(), p.detach().numpy().copy()))
    _bitwise(out[0][0], out[1][0])
    np.testing.assert_allclose(out[1][1], out[0][1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("opts", [dict(lr=0.1), dict(lr=0.05, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
                                  dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
                                  dict(lr=0.01, weight_decay=0.1, maximize=True)])
def test_fused_sgd_steps_bitwise(opts):
    # the fused step rounds as torch's kernels: add(alpha=) and the momentum update as one fused
    # multiply-add each (with FMA hardware; the C library's fma is the same value, slower)
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(N).astype(np.float32)
    grads = [rng.standard_normal(N).astype(np.float32) for _ in range(12)]

    def run(L):
        p = L.nn.Parameter(L.from_numpy(p0.copy()))
        opt = L.optim.SGD([p], **opts)
        for g in grads:
            p.grad = L.from_numpy(g.copy())
            opt.step()
        return p.detach().numpy()
    _bitwise(run(torch), run(fg))
