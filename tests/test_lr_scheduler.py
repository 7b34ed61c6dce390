"""Every torch.optim.lr_scheduler scheduler against torch: the learning rates (and cycled momenta)
of each param group over ~50 steps for several settings, stacked and composed schedulers, the
closed form of step(epoch), state_dict round trips that resume exactly, ReduceLROnPlateau's modes,
the warnings a user meets and the errors for bad arguments. The sequences must be the same floats."""
import re
import warnings

import pytest

from conftest import fg
from parity import same


def _sgd(L, groups, **kw):
    return L.optim.SGD(groups, **{"lr": 0.1, "momentum": 0.9, **kw})


def _adam(L, groups, **kw):
    return L.optim.Adam(groups, **{"lr": 0.1, **kw})


def _groups(L):
    return [{"params": [L.nn.Parameter(L.ones(1))]}, {"params": [L.nn.Parameter(L.ones(1))], "lr": 0.5}]


def _record(opt, scheds):
    g = opt.param_groups
    return ([list(s.get_last_lr()) for s in scheds], [x["lr"] for x in g], [x.get("momentum") for x in g],
            [x.get("betas") for x in g], [getattr(s, "last_epoch", None) for s in scheds])


def _run(L, make_opt, make_scheds, steps):
    opt = make_opt(L, _groups(L))
    scheds = make_scheds(L, opt)
    seq = [_record(opt, scheds)]
    for _ in range(steps):
        opt.step()
        for s in scheds:
            s.step()
        seq.append(_record(opt, scheds))
    return seq


S = "optim.lr_scheduler."
SCHEDULERS = {
    "lambda": (_adam, lambda L, o: [L.optim.lr_scheduler.LambdaLR(o, lambda e: 0.97**e)]),
    "lambda_list": (_sgd, lambda L, o: [L.optim.lr_scheduler.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: e % 7])]),
    "multiplicative": (_sgd, lambda L, o: [L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.95)]),
    "multiplicative_list": (_adam, lambda L, o: [L.optim.lr_scheduler.MultiplicativeLR(
        o, (lambda e: 0.9 if e % 3 else 1.1, lambda e: 1.0 - e / 100))]),
    "step": (_sgd, lambda L, o: [L.optim.lr_scheduler.StepLR(o, step_size=7, gamma=0.5)]),
    "step_default_gamma": (_adam, lambda L, o: [L.optim.lr_scheduler.StepLR(o, 3)]),
    "multistep": (_sgd, lambda L, o: [L.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 30], gamma=0.3)]),
    "constant": (_sgd, lambda L, o: [L.optim.lr_scheduler.ConstantLR(o)]),
    "constant_half": (_adam, lambda L, o: [L.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=12)]),
    "constant_zero_iters": (_sgd, lambda L, o: [L.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=0)]),
    "linear": (_sgd, lambda L, o: [L.optim.lr_scheduler.LinearLR(o)]),
    "linear_decay": (_adam, lambda L, o: [L.optim.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.0,
                                                                         total_iters=40)]),
    "linear_warmup": (_sgd, lambda L, o: [L.optim.lr_scheduler.LinearLR(o, start_factor=0.1, end_factor=0.9,
                                                                         total_iters=20)]),
    "exponential": (_adam, lambda L, o: [L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)]),
    "polynomial": (_sgd, lambda L, o: [L.optim.lr_scheduler.PolynomialLR(o)]),
    "polynomial_power": (_adam, lambda L, o: [L.optim.lr_scheduler.PolynomialLR(o, total_iters=30, power=2.5)]),
    "cosine": (_sgd, lambda L, o: [L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-3)]),
    "cosine_long": (_adam, lambda L, o: [L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=60)]),
    "warm_restarts": (_sgd, lambda L, o: [L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=5)]),
    "warm_restarts_mult": (_adam, lambda L, o: [L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01)]),
    "cyclic_triangular": (_sgd, lambda L, o: [L.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                                             step_size_up=4)]),
    "cyclic_triangular2": (_sgd, lambda L, o: [L.optim.lr_scheduler.CyclicLR(
        o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3, step_size_down=6, mode="triangular2",
        base_momentum=[0.8, 0.7], max_momentum=[0.95, 0.9])]),
    "cyclic_exp_range_adam": (_adam, lambda L, o: [L.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.001, max_lr=0.01, step_size_up=5, mode="exp_range", gamma=0.97)]),
    "cyclic_custom_scale": (_sgd, lambda L, o: [L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.2, step_size_up=4, scale_fn=lambda x: 1 / (x + 1), scale_mode="iterations")]),
    "cyclic_no_momentum": (lambda L, g: L.optim.Adagrad(g), lambda L, o: [L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.2, step_size_up=2, cycle_momentum=False)]),
    "onecycle": (_sgd, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=50)]),
    "onecycle_adam_linear": (_adam, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=10, steps_per_epoch=5, anneal_strategy="linear", pct_start=0.25)]),
    "onecycle_three_phase": (_sgd, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.2, total_steps=60, three_phase=True, base_momentum=0.8, div_factor=10.0)]),
    "sequential": (_sgd, lambda L, o: [L.optim.lr_scheduler.SequentialLR(o, [
        L.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5),
        L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20)], milestones=[5])]),
    "sequential_three": (_adam, lambda L, o: [L.optim.lr_scheduler.SequentialLR(o, [
        L.optim.lr_scheduler.ConstantLR(o, factor=0.2, total_iters=4),
        L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
        L.optim.lr_scheduler.StepLR(o, step_size=4, gamma=0.5)], milestones=[6, 20])]),
    "chained": (_sgd, lambda L, o: [L.optim.lr_scheduler.ChainedScheduler([
        L.optim.lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2),
        L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)])]),
    "chained_with_optimizer": (_adam, lambda L, o: [L.optim.lr_scheduler.ChainedScheduler([
        L.optim.lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=10),
        L.optim.lr_scheduler.MultiStepLR(o, [8, 16], gamma=0.5)], optimizer=o)]),
    "stacked": (_sgd, lambda L, o: [L.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=6),
                                    L.optim.lr_scheduler.StepLR(o, 4, 0.7),
                                    L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=13, eta_min=0.001)]),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name):
    make_opt, make_scheds = SCHEDULERS[name]
    steps = 45 if name.startswith("onecycle") else 50
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: _run(L, make_opt, make_scheds, steps), rtol=1e-15, atol=0)


def test_tensor_lr_is_filled_in_place():
    def run(L):
        lr = L.tensor(0.1)
        opt = L.optim.Adam([L.nn.Parameter(L.ones(2))], lr=lr)
        s = L.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        out = []
        for _ in range(4):
            opt.step()
            s.step()
            out.append((opt.param_groups[0]["lr"] is lr, float(lr), float(s.get_last_lr()[0])))
        return out

    same(run, rtol=1e-7)


# ---------------------------------------------------------------- closed form, state_dict


CLOSED_FORM = {
    "step": lambda L, o: L.optim.lr_scheduler.StepLR(o, 3, 0.5),
    "multistep": lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [2, 4, 4], 0.5),
    "constant": lambda L, o: L.optim.lr_scheduler.ConstantLR(o, 0.5, 4),
    "linear": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.2, 0.8, 6),
    "exponential": lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.8),
    "polynomial": lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, 7, 2.0),
    "cosine": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 8, 0.01),
    "lambda": lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e)),
    "warm_restarts": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3, 2, 0.001),
    "cyclic": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 3),
}


@pytest.mark.parametrize("name", list(CLOSED_FORM))
def test_step_with_epoch_uses_closed_form_and_warns(name):
    def run(L):
        opt = _sgd(L, _groups(L))
        s = CLOSED_FORM[name](L, opt)
        out = []
        opt.step()
        for epoch in [1, 2, 5, 3, 9, 0, 12, 2.5 if name == "warm_restarts" else 4]:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                s.step(epoch)
            out.append((list(s.get_last_lr()), s.last_epoch, sorted({str(x.message)[:40] for x in w})))
        return out

    same(run, rtol=1e-15, atol=0)


STATEFUL = {
    "step": lambda L, o: L.optim.lr_scheduler.StepLR(o, 3, 0.5),
    "multiplicative": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.9),
    "linear": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.2, 0.8, 6),
    "cosine": lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 8, 0.01),
    "warm_restarts": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3, 2),
    "cyclic": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 3, mode="triangular2"),
    "onecycle": lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=20),
    "sequential": lambda L, o: L.optim.lr_scheduler.SequentialLR(o, [
        L.optim.lr_scheduler.ConstantLR(o, 0.5, 3), L.optim.lr_scheduler.ExponentialLR(o, 0.9)], [4]),
    "chained": lambda L, o: L.optim.lr_scheduler.ChainedScheduler([
        L.optim.lr_scheduler.StepLR(o, 2, 0.5), L.optim.lr_scheduler.ExponentialLR(o, 0.9)]),
}


@pytest.mark.parametrize("name", list(STATEFUL))
def test_state_dict_round_trip_resumes(name):
    """Run 7 steps, save optimizer and scheduler state, rebuild both on new parameters, load, run 8
    more; the sequence must equal torch's uninterrupted one."""

    def run(L):
        opt = _sgd(L, _groups(L))
        s = STATEFUL[name](L, opt)
        seq = []
        for _ in range(7):
            opt.step()
            s.step()
            seq.append(list(s.get_last_lr()))
        osd, ssd = opt.state_dict(), s.state_dict()
        keys = sorted(k for k in ssd if k not in ("_scale_fn_ref",))
        opt2 = _sgd(L, _groups(L))
        opt2.load_state_dict(osd)
        s2 = STATEFUL[name](L, opt2)
        s2.load_state_dict(ssd)
        for _ in range(8):
            opt2.step()
            s2.step()
            seq.append(list(s2.get_last_lr()))
        return seq, keys, getattr(s2, "last_epoch", None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(run, rtol=1e-15, atol=0)


def test_lambda_state_dict_saves_callable_objects():
    def run(L):
        class Decay:
            def __init__(self, rate):
                self.rate = rate

            def __call__(self, epoch):
                return self.rate**epoch

        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
        sd = s.state_dict()
        opt2 = _sgd(L, _groups(L))
        s2 = L.optim.lr_scheduler.LambdaLR(opt2, [Decay(0.9), lambda e: 2.0])
        s2.load_state_dict(sd)
        return [sorted(x.items()) if x else x for x in sd["lr_lambdas"]], s2.lr_lambdas[0].rate, sorted(sd)

    same(run)


# ---------------------------------------------------------------- ReduceLROnPlateau

METRICS = [1.0, 0.9, 0.95, 0.95, 0.899, 0.9, 0.91, 0.92, 0.93, 0.8, 0.8, 0.8, 0.8, 0.8, 0.7999, 0.81, 0.85, 0.9,
           0.79, 0.79, 0.79, 0.79, 0.79, 0.79, 0.79, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6]


@pytest.mark.parametrize("kw", [
    dict(),
    dict(patience=2),
    dict(mode="max", patience=1, factor=0.5),
    dict(mode="min", threshold_mode="abs", threshold=0.05, patience=1),
    dict(mode="max", threshold_mode="abs", threshold=0.01, patience=0, factor=0.7),
    dict(mode="max", threshold_mode="rel", threshold=0.1, patience=1, cooldown=3),
    dict(patience=1, cooldown=2, min_lr=0.004),
    dict(patience=0, factor=0.5, min_lr=[0.01, 0.2]),
    dict(patience=0, factor=0.9, eps=0.02),
])
def test_reduce_on_plateau_matches_torch(kw):
    def run(L):
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        out = []
        for m in METRICS:
            opt.step()
            s.step(L.tensor(m) if len(out) % 2 else m)
            out.append((list(s.get_last_lr()), s.num_bad_epochs, s.cooldown_counter, s.best, s.last_epoch,
                        s.in_cooldown))
        sd = s.state_dict()
        s2 = L.optim.lr_scheduler.ReduceLROnPlateau(_sgd(L, _groups(L)))
        s2.load_state_dict(sd)
        return out, sorted(sd), (s2.mode, s2.threshold, s2.threshold_mode, s2.mode_worse, s2.best)

    same(run, rtol=1e-15, atol=0)


def test_reduce_on_plateau_new_param_group():
    def run(L):
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.05)
        opt.add_param_group({"params": [L.nn.Parameter(L.ones(1))], "lr": 1.0})
        for m in [1.0, 2.0, 3.0]:
            s.step(m)
        fixed = list(s.get_last_lr())
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
        opt.add_param_group({"params": [L.nn.Parameter(L.ones(1))], "lr": 1.0})
        s.step(1.0)
        try:
            s.step(2.0)
            err = None
        except RuntimeError as e:
            err = str(e)[:60]
        return fixed, err

    same(run, rtol=1e-15)


# ---------------------------------------------------------------- warnings


def _messages(w):
    return [(x.category.__name__, re.sub(r"\s+", " ", str(x.message))[:80]) for x in w]


def test_warnings():
    def run(L):
        out = []
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.StepLR(opt, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()  # before optimizer.step()
            s.step()  # only the first step is checked
        out.append(_messages(w))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.get_lr()  # outside step()
        out.append(_messages(w))
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        opt.step = lambda closure=None: None  # overridden after the scheduler was built
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()
        out.append(_messages(w))
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.ReduceLROnPlateau(opt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step(1.0, epoch=3)
        out.append((_messages(w), s.last_epoch))
        opt = _sgd(L, _groups(L))
        s = L.optim.lr_scheduler.LinearLR(opt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            opt.step()
            s.step()  # the right order: no warning
        out.append(_messages(w))
        return out

    same(run)


def test_base_class_and_resume_errors():
    def run(L):
        out = [issubclass(L.optim.lr_scheduler._LRScheduler, L.optim.lr_scheduler.LRScheduler)]
        opt = _sgd(L, _groups(L))
        for cls in ("ReduceLROnPlateau", "SequentialLR", "ChainedScheduler", "CyclicLR", "OneCycleLR"):
            out.append(issubclass(getattr(L.optim.lr_scheduler, cls), L.optim.lr_scheduler.LRScheduler))
        try:
            L.optim.lr_scheduler.StepLR(opt, 2, last_epoch=3)
        except KeyError as e:
            out.append(("KeyError", str(e)[:60]))
        s = L.optim.lr_scheduler.StepLR(opt, 2)
        s2 = L.optim.lr_scheduler.StepLR(opt, 2, last_epoch=5)  # initial_lr now present: resumes
        out.append((s2.last_epoch, s2.base_lrs, [g["initial_lr"] for g in opt.param_groups], s.base_lrs))
        return out

    same(run)


def _error(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


_P = lambda L: [L.nn.Parameter(L.ones(1))]  # noqa: E731
_O = lambda L: L.optim.SGD(_P(L), lr=0.1, momentum=0.9)  # noqa: E731
LRS = "lr_scheduler"


@pytest.mark.parametrize("fn", [
    lambda L: L.optim.lr_scheduler.ConstantLR(_O(L), factor=1.5),
    lambda L: L.optim.lr_scheduler.ConstantLR(_O(L), factor=-0.1),
    lambda L: L.optim.lr_scheduler.LinearLR(_O(L), start_factor=0),
    lambda L: L.optim.lr_scheduler.LinearLR(_O(L), start_factor=1.5),
    lambda L: L.optim.lr_scheduler.LinearLR(_O(L), end_factor=1.5),
    lambda L: L.optim.lr_scheduler.LambdaLR(_O(L), [lambda e: 1.0, lambda e: 1.0]),
    lambda L: L.optim.lr_scheduler.MultiplicativeLR(_O(L), 0.9),
    lambda L: L.optim.lr_scheduler.MultiplicativeLR(_O(L), [lambda e: 1.0] * 3),
    lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_O(L), T_0=0),
    lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_O(L), T_0=2.5),
    lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_O(L), T_0=2, T_mult=0),
    lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_O(L), T_0=2, eta_min="0"),
    lambda L: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(_O(L), T_0=2).step(-1),
    lambda L: L.optim.lr_scheduler.CyclicLR(_O(L), 0.01, 0.1, mode="sawtooth"),
    lambda L: L.optim.lr_scheduler.CyclicLR(L.optim.Adagrad(_P(L)), 0.01, 0.1),
    lambda L: L.optim.lr_scheduler.CyclicLR(_O(L), [0.01, 0.02], 0.1),
    lambda L: L.optim.lr_scheduler.CyclicLR("sgd", 0.01, 0.1),
    lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_O(L), factor=1.0),
    lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_O(L), mode="median"),
    lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_O(L), threshold_mode="pct"),
    lambda L: L.optim.lr_scheduler.ReduceLROnPlateau(_O(L), min_lr=[0.1, 0.2]),
    lambda L: L.optim.lr_scheduler.ReduceLROnPlateau("sgd"),
    lambda L: L.optim.lr_scheduler.SequentialLR(_O(L), [], []),
    lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(o, [L.optim.lr_scheduler.StepLR(o, 2)], [3]))(_O(L)),
    lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.StepLR(o, 2), L.optim.lr_scheduler.ReduceLROnPlateau(o)], [3]))(_O(L)),
    lambda L: (lambda o: L.optim.lr_scheduler.SequentialLR(o, [L.optim.lr_scheduler.StepLR(o, 2), 3], [3]))(_O(L)),
    lambda L: L.optim.lr_scheduler.ChainedScheduler([]),
    lambda L: (lambda o: L.optim.lr_scheduler.ChainedScheduler([L.optim.lr_scheduler.ReduceLROnPlateau(o)]))(_O(L)),
    lambda L: (lambda s: [s.step() for _ in range(6)])(L.optim.lr_scheduler.OneCycleLR(_O(L), 0.1, total_steps=4)),
    lambda L: L.optim.lr_scheduler.OneCycleLR(_O(L), 0.1, total_steps=0),
    lambda L: L.optim.lr_scheduler.OneCycleLR(_O(L), 0.1, epochs=2, steps_per_epoch=0),
    lambda L: L.optim.lr_scheduler.OneCycleLR(_O(L), 0.1, total_steps=10, pct_start=1),
    lambda L: L.optim.lr_scheduler.OneCycleLR(_O(L), 0.1, total_steps=10, anneal_strategy="exp"),
    lambda L: L.optim.lr_scheduler.OneCycleLR(_O(L), [0.1, 0.2], total_steps=10),
    lambda L: L.optim.lr_scheduler.LRScheduler(_O(L)),
])
def test_errors(fn):
    same(lambda L: _error(lambda: fn(L)))


def test_schedulers_on_different_optimizers_rejected():
    def kind(L, make):
        o1, o2 = _O(L), _O(L)
        try:
            make(L, o1, o2)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)[:60]

    for make in (lambda L, a, b: L.optim.lr_scheduler.SequentialLR(
                     a, [L.optim.lr_scheduler.StepLR(a, 2), L.optim.lr_scheduler.StepLR(b, 2)], [3]),
                 lambda L, a, b: L.optim.lr_scheduler.ChainedScheduler(
                     [L.optim.lr_scheduler.StepLR(a, 2), L.optim.lr_scheduler.StepLR(b, 2)])):
        same(lambda L: kind(L, make))


def test_all_names_exported():
    import torch
    names = sorted(n for n in torch.optim.lr_scheduler.__all__)
    assert sorted(fg.optim.lr_scheduler.__all__) == names
    for n in names + ["_LRScheduler"]:
        assert hasattr(fg.optim.lr_scheduler, n), n
