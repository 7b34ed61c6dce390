"""ferrograd.amp against torch.amp on CPU: GradScaler training loops (skipped steps on inf/NaN gradients, scale
growth and backoff, state_dict, unscale_ + clipping, several optimizers and losses), its errors, the disabled
pass-through, and the autocast API's disabled regions and errors (enabled regions: tests/test_autocast.py)."""
import pickle
import warnings

import numpy as np
import pytest
import torch
from conftest import AGAINST_TORCH, fg

INF = float("inf")


def _model(lib, seed=0):
    rng = np.random.default_rng(seed)
    m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.Tanh(), lib.nn.Linear(3, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    return m


def _data(lib, step):
    rng = np.random.default_rng(100 + step)
    return (lib.tensor(rng.standard_normal((5, 4)).astype(np.float32)),
            lib.tensor(rng.standard_normal((5, 2)).astype(np.float32)))


def _params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def _train(lib, steps, bad, clip=None, opt="sgd", **kw):
    """A few scaled steps; on the steps in `bad` the loss is multiplied by inf (so gradients are inf/NaN).
    Returns parameters, scales after each update, step results, and the final state_dict."""
    m = _model(lib)
    o = (lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if opt == "sgd"
         else lib.optim.Adam(m.parameters(), lr=0.01))
    scaler = lib.amp.GradScaler("cpu", **kw)
    scales, results, grad_norms = [], [], []
    for step in range(steps):
        x, y = _data(lib, step)
        o.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        if step in bad:
            loss = loss * INF
        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(o)
            grad_norms.append(float(lib.nn.utils.clip_grad_norm_(m.parameters(), clip)))
        results.append(scaler.step(o))
        scaler.update()
        scales.append(scaler.get_scale())
    return _params(m), scales, results, scaler.state_dict(), grad_norms


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_training_loop_matches_torch(opt):
    kw = dict(init_scale=2.0**8, growth_interval=3)
    bad = {1, 5, 6}
    got = _train(fg, 10, bad, opt=opt, **kw)
    want = _train(torch, 10, bad, opt=opt, **kw)
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert got[1] == want[1]  # skipped steps back off; 3 clean steps in a row grow
    assert got[3] == want[3]
    assert all(r is None for r in got[2]) and all(r is None for r in want[2])


def test_scale_values_growth_and_backoff():
    _, scales, _, state, _ = _train(fg, 8, {0, 4}, init_scale=4.0, growth_factor=3.0, backoff_factor=0.25,
                                    growth_interval=2)
    assert scales == [1.0, 1.0, 3.0, 3.0, 0.75, 0.75, 2.25, 2.25]
    assert state == {"scale": 2.25, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 2,
                     "_growth_tracker": 1}


def test_unscale_then_clip_matches_torch():
    got = _train(fg, 6, {2}, clip=0.5, init_scale=2.0**12, growth_interval=2)
    want = _train(torch, 6, {2}, clip=0.5, init_scale=2.0**12, growth_interval=2)
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[4], want[4], rtol=1e-5)


def _two_optimizers(lib, bad_step):
    m1, m2 = _model(lib, 1), _model(lib, 2)
    o1 = lib.optim.SGD(m1.parameters(), lr=0.1)
    o2 = lib.optim.Adam(m2.parameters(), lr=0.01)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**6, growth_interval=2)
    scales = []
    for step in range(5):
        x, y = _data(lib, step)
        o1.zero_grad()
        o2.zero_grad()
        out1, out2 = m1(x), m2(x)
        loss1 = ((out1 - y) ** 2).mean() + 0.1 * (out2 ** 2).mean()
        loss2 = (out1 * out2).mean()
        if step == bad_step:
            loss2 = loss2 * INF
        l1, l2 = scaler.scale([loss1, (loss2,)])[0], scaler.scale((loss2,))[0]
        l1.backward(retain_graph=True)
        l2.backward()
        scaler.step(o1)
        scaler.step(o2)
        scaler.update()
        scales.append(scaler.get_scale())
    return _params(m1) + _params(m2), scales


def test_two_optimizers_two_losses():
    got, want = _two_optimizers(fg, 2), _two_optimizers(torch, 2)
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert got[1] == want[1] == [64.0, 128.0, 64.0, 64.0, 128.0]


def test_state_dict_round_trip():
    params, scales, _, state, _ = _train(fg, 5, {1}, init_scale=2.0**10, growth_interval=2)
    fresh = fg.amp.GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    assert fresh.get_scale() == scales[-1] and fresh.get_growth_interval() == 2
    tstate = torch.amp.GradScaler("cpu")
    tstate.load_state_dict(state)
    assert tstate.state_dict() == fresh.state_dict()
    with pytest.raises(RuntimeError, match="empty"):
        fg.amp.GradScaler("cpu").load_state_dict({})


def test_step_returns_optimizer_result_and_getters():
    for lib in (fg, torch):
        class Recording(lib.optim.SGD):
            def step(self, *args, **kwargs):
                super().step()
                return ("stepped", args, kwargs)

        p = lib.nn.Parameter(lib.ones(3))
        o = Recording([p], lr=0.5)
        s = lib.amp.GradScaler("cpu", init_scale=8.0)
        assert s.get_scale() == 8.0 and s.is_enabled()
        assert s.get_growth_factor() == 2.0 and s.get_backoff_factor() == 0.5 and s.get_growth_interval() == 2000
        s.set_growth_factor(4.0)
        s.set_backoff_factor(0.125)
        s.set_growth_interval(7)
        assert (s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval()) == (4.0, 0.125, 7)
        scaled = s.scale((p * 2).sum())
        assert float(scaled.detach()) == 48.0
        scaled.backward()
        np.testing.assert_array_equal(p.grad.numpy(), [16.0, 16.0, 16.0])
        assert s.step(o, 1, key=2) == ("stepped", (1,), {"key": 2})  # unscaled grads 2: p = 1 - 0.5 * 2
        s.update(2.0)
        assert s.get_scale() == 2.0
        s.update(lib.tensor(5.0))
        assert s.get_scale() == 5.0
        np.testing.assert_allclose(p.detach().numpy(), [0.0, 0.0, 0.0])


def test_skipped_step_leaves_parameters_unchanged():
    p = fg.nn.Parameter(fg.ones(3))
    o = fg.optim.SGD([p], lr=0.5)
    s = fg.amp.GradScaler("cpu")
    s.scale((p * float("nan")).sum()).backward()
    assert s.step(o) is None
    s.update()
    np.testing.assert_array_equal(p.detach().numpy(), np.ones(3, np.float32))
    assert s.get_scale() == 2.0**15


def _ready(lib):
    p = lib.nn.Parameter(lib.ones(2))
    o = lib.optim.SGD([p], lr=0.1)
    s = lib.amp.GradScaler("cpu")
    s.scale(p.sum()).backward()
    return p, o, s


def _error(lib, action):
    p, o, s = _ready(lib)
    try:
        action(p, o, s)
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e)
    return None


@pytest.mark.parametrize("name,action", [
    ("unscale twice", lambda p, o, s: (s.unscale_(o), s.unscale_(o))),
    ("unscale after step", lambda p, o, s: (s.step(o), s.unscale_(o))),
    ("step twice", lambda p, o, s: (s.step(o), s.step(o))),
    ("closure", lambda p, o, s: s.step(o, closure=lambda: 0.0)),
    ("update before step", lambda p, o, s: s.update()),
    ("scale a float", lambda p, o, s: s.scale(3.0)),
    ("scale a list of floats", lambda p, o, s: s.scale([p.sum(), 3.0])),
    ("update with a tensor of 2", lambda p, o, s: s.update(p.detach())),
])
def test_errors_match_torch(name, action):
    want = _error(torch, action)
    assert want is not None
    assert _error(fg, action) is want


def test_unscale_messages():
    p, o, s = _ready(fg)
    s.unscale_(o)
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        s.unscale_(o)
    s.step(o)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(o)
    s.update()  # a new iteration starts: unscale_ is allowed again
    s.scale(p.sum()).backward()
    s.unscale_(o)


def test_methods_before_scale_raise_like_torch():
    for lib in (fg, torch):
        s = lib.amp.GradScaler("cpu")
        o = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        for call in (lambda: s.unscale_(o), lambda: s.step(o), lambda: s.update()):
            with pytest.raises(AssertionError):
                call()


def test_disabled_is_a_pass_through():
    for lib in (fg, torch):
        p = lib.nn.Parameter(lib.ones(2))
        o = lib.optim.SGD([p], lr=0.5)
        s = lib.amp.GradScaler("cpu", enabled=False)
        loss = (p * float("inf")).sum()
        assert s.scale(loss) is loss
        outs = [loss]
        assert s.scale(outs) is outs
        (p * 2).sum().backward()
        s.unscale_(o)
        s.step(o)
        s.update()
        assert not s.is_enabled() and s.get_scale() == 1.0 and s.state_dict() == {}
        s.load_state_dict({})
        np.testing.assert_array_equal(p.detach().numpy(), [0.0, 0.0])


def test_cuda_without_cuda_warns_and_disables():
    if fg.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    for lib in (fg, torch):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            s = lib.amp.GradScaler("cuda")
        assert not s.is_enabled()
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
            assert not lib.amp.GradScaler().is_enabled()
        with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"):
            s = lib.cuda.amp.GradScaler()
        assert isinstance(s, lib.amp.GradScaler) and not s.is_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fg.amp.GradScaler("cpu").is_enabled()
        assert not fg.amp.GradScaler("cuda", enabled=False).is_enabled()


def test_invalid_factors():
    for lib in (fg, torch):
        with pytest.raises(AssertionError):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError):
            lib.amp.GradScaler("cpu", backoff_factor=1.0)


def test_scale_nested_structures():
    s, ts = fg.amp.GradScaler("cpu", init_scale=4.0), torch.amp.GradScaler("cpu", init_scale=4.0)
    a, b = fg.tensor([1.0, 2.0]), fg.tensor(3.0)
    got = s.scale([a, (b, [a])])
    want = ts.scale([torch.tensor([1.0, 2.0]), (torch.tensor(3.0), [torch.tensor([1.0, 2.0])])])
    assert type(got) is list and type(got[1]) is tuple and type(got[1][1]) is list
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1][0].numpy(), want[1][0].numpy())
    np.testing.assert_array_equal(got[1][1][0].numpy(), want[1][1][0].numpy())
    assert s.scale(b).dtype == fg.float32


# ---- autocast -------------------------------------------------------------------------------------------------

def test_autocast_disabled_context_and_decorator():
    for lib in (fg, torch):
        with lib.amp.autocast("cpu", enabled=False):
            assert not lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled()
            y = lib.ones(2) * 2
        assert y.dtype == lib.float32
        with lib.autocast(device_type="cuda", dtype=lib.bfloat16, enabled=False):
            pass

        @lib.amp.autocast("cpu", enabled=False)
        def f(x):
            return x + 1

        assert float(f(lib.tensor(1.0))) == 2.0
        with pytest.warns(FutureWarning):
            with lib.cpu.amp.autocast(enabled=False):
                pass
        with pytest.warns(FutureWarning):
            with lib.cuda.amp.autocast(enabled=False):
                pass
        assert lib.get_autocast_dtype("cpu") == lib.bfloat16
        assert lib.amp.is_autocast_available("cpu")


def test_autocast_argument_errors_match_torch():
    for lib in (fg, torch):
        with pytest.raises(ValueError, match="device_type"):
            lib.amp.autocast(3)
        with pytest.raises(ValueError, match="device_type"):
            lib.amp.autocast(lib.device("cpu"), enabled=False)
        with pytest.raises(RuntimeError, match="device string: foo"):
            lib.amp.autocast("foo", enabled=False)
        with pytest.raises(RuntimeError, match="device string: foo"):
            lib.is_autocast_enabled("foo")
        with pytest.raises(TypeError):
            lib.get_autocast_dtype()
        with pytest.warns(UserWarning, match="target dtype is not supported"):
            lib.amp.autocast("cpu", dtype=lib.float64)
        if not (fg.cuda.is_available() or torch.cuda.is_available()):
            with pytest.warns(UserWarning, match="CUDA is not available"):
                lib.amp.autocast("cuda", dtype=lib.float16)


def test_custom_fwd_bwd():
    for lib in (fg, torch):
        class Double(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu")
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                return g * 2

        x = lib.ones(3, requires_grad=True)
        Double.apply(x).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
        with pytest.raises(TypeError):
            lib.amp.custom_fwd(lambda ctx, x: x)


def _odd_factors(lib):
    s = lib.amp.GradScaler("cpu", init_scale=1000.1, growth_factor=1.7, backoff_factor=0.3, growth_interval=1)
    p = lib.nn.Parameter(lib.ones(2))
    o = lib.optim.SGD([p], lr=0.1)
    scales = []
    for i in range(6):
        o.zero_grad()
        s.scale((p * (INF if i % 3 == 0 else 1.0)).sum()).backward()
        s.step(o)
        s.update()
        scales.append(s.get_scale())
    big = lib.amp.GradScaler("cpu", init_scale=3e38, growth_interval=1)  # growing would overflow float32
    big.scale(p.sum()).backward()
    big.step(o)
    big.update()
    return scales, big.state_dict(), pickle.loads(pickle.dumps(s)).state_dict()


def test_scale_rounding_and_overflow_match_torch():
    assert _odd_factors(fg) == _odd_factors(torch)


def test_fp16_gradients_cannot_be_unscaled():
    for lib in (fg, torch):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float16))
        o = lib.optim.SGD([p], lr=0.1)
        s = lib.amp.GradScaler("cpu")
        s.scale(p.float().sum()).backward()
        with pytest.raises(ValueError, match="FP16 gradients"):
            s.step(o)


def test_optimizer_without_gradients_matches_torch():
    for lib in (fg, torch):
        s = lib.amp.GradScaler("cpu")
        p, q = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        o, o_none = lib.optim.SGD([p], lr=0.1), lib.optim.SGD([q], lr=0.1)
        s.scale(p.sum()).backward()
        s.unscale_(o_none)
        with pytest.raises(AssertionError, match="No inf checks were recorded for this optimizer"):
            s.step(o_none)
        with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
            s.update()
        s.step(o)
        s.update()
        assert s.get_scale() == 2.0**16


def _nanogpt_loop(lib, dtype):
    """nanoGPT's train.py idiom: the scaler is enabled only for float16, the autocast context only off CPU."""
    m = _model(lib)
    o = lib.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a disabled "cuda" scaler must not warn
        scaler = lib.amp.GradScaler("cuda", enabled=(dtype == "float16"))
    ctx = lib.amp.autocast(device_type="cpu", dtype=lib.bfloat16, enabled=False)
    for step in range(3):
        x, y = _data(lib, step)
        with ctx:
            loss = ((m(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(o)
        lib.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        scaler.step(o)
        scaler.update()
        o.zero_grad(set_to_none=True)
    return _params(m)


def test_nanogpt_idiom_with_disabled_scaler():
    for a, b in zip(_nanogpt_loop(fg, "bfloat16"), _nanogpt_loop(torch, "bfloat16")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- the fused unscale and the scale update (torch._amp_*) -------------------------------------------------

def _grads(lib):
    return [lib.tensor([1.0, 2.0, -3.0]), lib.tensor([[4.0]], dtype=lib.float64),
            lib.tensor([2.0, 8.0], dtype=lib.bfloat16), lib.arange(6.0).reshape(2, 3).t(),
            lib.tensor(np.linspace(-1, 1, 70000, dtype=np.float32))]


@pytest.mark.parametrize("bad", [None, "inf", "nan", "-inf"])
@pytest.mark.parametrize("where", [0, 1, 2, 3, 4])
def test_foreach_non_finite_check_and_unscale_matches_torch(bad, where):
    res = {}
    for lib in (torch, fg):
        gs = _grads(lib)
        if bad is not None:
            gs[where][(-1,) * gs[where].dim()] = float(bad)
        found = lib.zeros(())
        lib._amp_foreach_non_finite_check_and_unscale_(gs, found, lib.tensor(0.25))
        res[lib] = (found.item(), [(str(g.dtype), g.double().numpy()) for g in gs])
    assert res[fg][0] == res[torch][0] == (0.0 if bad is None else 1.0)
    for (fd, fv), (td, tv) in zip(res[fg][1], res[torch][1]):
        assert fd == td
        np.testing.assert_array_equal(fv, tv)


def test_foreach_unscale_keeps_found_inf_and_skips_multiply_by_one():
    for lib in (torch, fg):
        g = lib.tensor([1.0, 3.0])
        found = lib.ones(())
        lib._amp_foreach_non_finite_check_and_unscale_([g], found, lib.tensor(1.0))
        assert found.item() == 1.0 and g.tolist() == [1.0, 3.0]
        lib._amp_foreach_non_finite_check_and_unscale_([], found, lib.tensor(0.5))


def test_foreach_unscale_errors_match_torch():
    cases = [
        lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(2), L.tensor(1.0)),
        lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros((), dtype=L.float64), L.tensor(1.0)),
        lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(()), L.tensor(1.0, dtype=L.float64)),
        lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2)], L.zeros(()), L.ones(2)),
        lambda L: L._amp_foreach_non_finite_check_and_unscale_([L.ones(2, dtype=L.long)], L.zeros(()), L.tensor(1.0)),
    ]
    for case in cases:
        msgs = {}
        for lib in (torch, fg):
            with pytest.raises((RuntimeError, NotImplementedError)) as info:
                case(lib)
            msgs[lib] = (info.type, str(info.value).splitlines()[0])
        assert msgs[fg] == msgs[torch]


def test_amp_update_scale_matches_torch():
    for found, tracker, interval in [(0.0, 1, 2), (0.0, 0, 2), (1.0, 1, 2), (0.0, 2, 3), (2.0, 0, 1)]:
        res = {}
        for lib in (torch, fg):
            scale = lib.tensor(3.0e38 if interval == 1 else 4.0)
            tr = lib.tensor(tracker, dtype=lib.int32)
            out = lib._amp_update_scale_(scale, tr, lib.tensor(found), 2.0, 0.5, interval)
            assert out is scale
            res[lib] = (scale.item(), tr.item())
        assert res[fg] == res[torch]
    for lib in (torch, fg):
        with pytest.raises(RuntimeError, match="growth_tracker must be an int tensor"):
            lib._amp_update_scale_(lib.tensor(1.0), lib.tensor(0), lib.tensor(0.0), 2.0, 0.5, 2)


# ---- TF32 switches ------------------------------------------------------------------------------------------

def test_tf32_flags_defaults_and_setters_match_torch():
    for lib in (torch, fg):
        assert lib.backends.cuda.matmul.allow_tf32 is False
        assert lib.get_float32_matmul_precision() == "highest"
        assert lib.backends.cudnn.allow_tf32 is True
        try:
            lib.set_float32_matmul_precision("high")
            assert lib.backends.cuda.matmul.allow_tf32 is True
            lib.set_float32_matmul_precision("highest")
            assert lib.backends.cuda.matmul.allow_tf32 is False
            # (torch refuses get_float32_matmul_precision once the legacy switch was used: not read here)
            lib.backends.cuda.matmul.allow_tf32 = True
            assert lib.backends.cuda.matmul.allow_tf32 is True
        finally:
            lib.backends.cuda.matmul.allow_tf32 = False


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's CUDA matmul switch")
def test_tf32_flag_reaches_the_cuda_matmul():
    assert fg._C._cublas_allow_tf32() is False
    try:
        fg.backends.cuda.matmul.allow_tf32 = True
        assert fg._C._cublas_allow_tf32() is True
        fg.set_float32_matmul_precision("medium")
        assert fg._C._cublas_allow_tf32() is True
        fg.set_float32_matmul_precision("highest")
        assert fg._C._cublas_allow_tf32() is False
    finally:
        fg.set_float32_matmul_precision("highest")
