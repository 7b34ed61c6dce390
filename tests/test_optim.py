"""optim against torch: every optimizer trains the same float32 model on the same data from the same
initial parameters for 20 steps and must land on torch's parameters to float32 rounding; schedulers
must produce torch's learning-rate (and momentum) sequences; plus param groups, zero_grad,
state_dict round trips and argument errors."""
import re
import warnings

import numpy as np
import pytest

import ferrograd.optim  # noqa: F401  (the package does not import optim itself yet)
from parity import same

STEPS = 20
RNG = np.random.default_rng(7)
X = RNG.standard_normal((16, 5)).astype(np.float32)
Y = RNG.integers(0, 3, size=16)
INIT = {  # float32 initial parameters shared by both libraries
    "0.weight": RNG.uniform(-0.4, 0.4, (8, 5)), "0.bias": RNG.uniform(-0.4, 0.4, (8,)),
    "2.weight": RNG.uniform(-0.3, 0.3, (3, 8)), "2.bias": RNG.uniform(-0.3, 0.3, (3,)),
}


def model(L):
    m = L.nn.Sequential(L.nn.Linear(5, 8), L.nn.Tanh(), L.nn.Linear(8, 3))
    m.load_state_dict({k: L.tensor(v.astype(np.float32)) for k, v in INIT.items()})
    return m


def train(L, make_opt, steps=STEPS, groups=False, closure=False):
    m = model(L)
    params = ([{"params": m[0].parameters(), "lr": 0.05}, {"params": m[2].parameters()}]
              if groups else m.parameters())
    opt = make_opt(L, params)
    x, y = L.tensor(X), L.tensor(Y)
    for i in range(steps):
        def loss_fn():
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(m(x[i % 4 * 4:][:8]), y[i % 4 * 4:][:8])
            loss.backward()
            return loss
        if closure:
            opt.step(loss_fn)
        else:
            loss_fn()
            opt.step()
    return [p.detach() for p in m.parameters()]


OPTIMIZERS = {
    "sgd": lambda L, p: L.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd_nesterov_wd": lambda L, p: L.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-2),
    "sgd_dampening_maximize": lambda L, p: L.optim.SGD(p, lr=0.01, momentum=0.5, dampening=0.3, maximize=True),
    "adam": lambda L, p: L.optim.Adam(p, lr=1e-2),
    "adam_wd_amsgrad": lambda L, p: L.optim.Adam(p, lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
    "adam_maximize": lambda L, p: L.optim.Adam(p, lr=1e-3, maximize=True, eps=1e-6),
    "adamw": lambda L, p: L.optim.AdamW(p, lr=1e-2),
    "adamw_amsgrad": lambda L, p: L.optim.AdamW(p, lr=2e-2, weight_decay=0.3, amsgrad=True),
    "rmsprop": lambda L, p: L.optim.RMSprop(p, lr=1e-3),
    "rmsprop_centered_momentum_wd": lambda L, p: L.optim.RMSprop(p, lr=1e-3, alpha=0.9, momentum=0.8, centered=True,
                                                                 weight_decay=1e-2),
    "adagrad": lambda L, p: L.optim.Adagrad(p, lr=0.05),
    "adagrad_decay": lambda L, p: L.optim.Adagrad(p, lr=0.1, lr_decay=0.05, weight_decay=1e-2,
                                                  initial_accumulator_value=0.1),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_torch_after_20_steps(name):
    same(lambda L: train(L, OPTIMIZERS[name]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "rmsprop_centered_momentum_wd"])
def test_param_groups_and_closure(name):
    same(lambda L: train(L, OPTIMIZERS[name], groups=True), rtol=1e-5, atol=1e-6)
    same(lambda L: train(L, OPTIMIZERS[name], steps=5, closure=True), rtol=1e-5, atol=1e-6)


def test_step_skips_params_without_grad_and_zero_grad():
    def run(L):
        a = L.nn.Parameter(L.ones(2))
        b = L.nn.Parameter(L.ones(2))
        opt = L.optim.Adam([a, b], lr=0.1)
        (a * 3).sum().backward()
        opt.step()
        states = [sorted(opt.state[p].keys()) if p in opt.state else None for p in (a, b)]
        opt.zero_grad(set_to_none=False)
        zeroed = (a.grad.clone(), b.grad)
        opt.zero_grad()
        return a.detach(), b.detach(), states, zeroed, a.grad

    same(run)


def test_state_dict_round_trip():
    def run(L):
        opt_a = OPTIMIZERS["adam_wd_amsgrad"]
        m = model(L)
        opt = opt_a(L, [{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.05}])
        x, y = L.tensor(X), L.tensor(Y)

        def step(o, mod):
            o.zero_grad()
            L.nn.functional.cross_entropy(mod(x), y).backward()
            o.step()

        for _ in range(3):
            step(opt, m)
        sd = opt.state_dict()  # (torch hands out its live state tensors: snapshot them, as a save would)
        sd = {"state": {k: {n: v.clone() if isinstance(v, L.Tensor) else v for n, v in st.items()}
                        for k, st in sd["state"].items()},
              "param_groups": sd["param_groups"]}
        m2 = model(L)
        m2.load_state_dict(m.state_dict())
        opt2 = opt_a(L, [{"params": m2[0].parameters()}, {"params": m2[2].parameters(), "lr": 0.9}])
        opt2.load_state_dict(sd)
        saved_step = sd["state"][1]["step"].item()
        for _ in range(3):
            step(opt, m)
            step(opt2, m2)
        shape = (sorted((k, sorted(v)) for k, v in sd["state"].items()),
                 [sorted((k, str(v)) for k, v in g.items()) for g in sd["param_groups"]])
        return shape, saved_step, [p.detach() for p in m2.parameters()], \
            [p.detach() for p in m.parameters()], opt2.param_groups[1]["lr"]

    expected, got = same(run, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2][0].numpy(), got[3][0].numpy(), rtol=1e-6)  # resumed == continued


def test_state_dict_layout_per_optimizer():
    def run(L):
        out = []
        for name, make in OPTIMIZERS.items():
            p = L.nn.Parameter(L.ones(3))
            opt = make(L, [p])
            (p * p).sum().backward()
            opt.step()
            sd = opt.state_dict()
            out.append((name, sorted((k, sorted(v)) for k, v in sd["state"].items()), sorted(sd["param_groups"][0])))
        return out

    same(run)


def test_add_param_group_and_repr():
    def run(L):
        a, b = L.nn.Parameter(L.ones(1)), L.nn.Parameter(L.ones(1))
        opt = L.optim.SGD([a], lr=0.1, momentum=0.9)
        opt.add_param_group({"params": b, "lr": 0.01})
        return [(g["lr"], g["momentum"], len(g["params"])) for g in opt.param_groups], repr(opt)

    same(run)


def _error(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


@pytest.mark.parametrize("fn", [
    lambda L: L.optim.SGD([], lr=0.1),
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=-1),
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1, nesterov=True),
    lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], betas=(1.0, 0.9)),
    lambda L: L.optim.Adam(L.nn.Parameter(L.ones(1))),
    lambda L: L.optim.RMSprop([L.nn.Parameter(L.ones(1))], alpha=-1),
    lambda L: L.optim.Adagrad([L.nn.Parameter(L.ones(1))], lr_decay=-1),
    lambda L: L.optim.SGD([L.ones(1, requires_grad=True) * 2], lr=0.1),
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1).add_param_group({"params": set()}),
    lambda L: L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1).load_state_dict(
        {"state": {}, "param_groups": []}),
    lambda L: L.optim.lr_scheduler.StepLR("not an optimizer", 2),
    lambda L: L.optim.lr_scheduler.OneCycleLR(L.optim.Adagrad([L.nn.Parameter(L.ones(1))]), 0.1, total_steps=5),
    lambda L: L.optim.lr_scheduler.OneCycleLR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), 0.1),
])
def test_errors(fn):
    same(lambda L: _error(lambda: fn(L)))


# ---------------------------------------------------------------- schedulers


def _scheduled(L, make_opt, make_scheds, epochs):
    p = L.nn.Parameter(L.ones(1))
    q = L.nn.Parameter(L.ones(1))
    opt = make_opt(L, [{"params": [p]}, {"params": [q], "lr": 0.5}])
    scheds = make_scheds(L, opt)
    seq = []
    for _ in range(epochs):
        opt.step()
        for s in scheds:
            s.step()
        g = opt.param_groups[0]
        seq.append((scheds[-1].get_last_lr(), g.get("momentum"), g.get("betas")))
    return seq


SGD_M = lambda L, p: L.optim.SGD(p, lr=0.1, momentum=0.9)  # noqa: E731
ADAM = lambda L, p: L.optim.Adam(p, lr=0.1)  # noqa: E731
SCHEDULERS = {
    "step": (SGD_M, lambda L, o: [L.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)], 12),
    "multistep": (SGD_M, lambda L, o: [L.optim.lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3)], 12),
    "exponential": (ADAM, lambda L, o: [L.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)], 15),
    "cosine": (SGD_M, lambda L, o: [L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.01)], 23),
    "lambda": (ADAM, lambda L, o: [L.optim.lr_scheduler.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1 / (e + 1)])], 10),
    "onecycle_sgd": (SGD_M, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20)], 19),
    "onecycle_adam_linear": (ADAM, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=4, steps_per_epoch=5, anneal_strategy="linear", pct_start=0.25)], 20),
    "onecycle_three_phase": (SGD_M, lambda L, o: [L.optim.lr_scheduler.OneCycleLR(
        o, max_lr=0.2, total_steps=30, three_phase=True, cycle_momentum=False, div_factor=10.0)], 30),
    "chained": (SGD_M, lambda L, o: [L.optim.lr_scheduler.StepLR(o, 2, 0.5),
                                     L.optim.lr_scheduler.ExponentialLR(o, 0.9)], 8),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_sequence_matches_torch(name):
    make_opt, make_scheds, epochs = SCHEDULERS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: _scheduled(L, make_opt, make_scheds, epochs), rtol=1e-15, atol=0)


def test_scheduler_state_closed_form_and_warnings():
    def run(L):
        p = L.nn.Parameter(L.ones(1))
        opt = L.optim.SGD([p], lr=1.0)
        s = L.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()  # before optimizer.step(): torch warns
        warned = any("optimizer.step()" in str(x.message) for x in w)
        sd = s.state_dict()
        keys = sorted(k for k in sd if not k.startswith("_") or k in ("_last_lr", "_step_count"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s.step(7)  # closed form
        closed = s.get_last_lr()
        s2 = L.optim.lr_scheduler.StepLR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=1.0), 2)
        s2.load_state_dict(sd)
        c = L.optim.lr_scheduler.CosineAnnealingLR(L.optim.SGD([p], lr=1.0), T_max=10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c.step(3)
        return warned, keys, closed, s2.last_epoch, s2.get_last_lr(), c.get_last_lr()

    same(run, rtol=1e-15, atol=0)
