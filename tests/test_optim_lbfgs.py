"""optim.LBFGS against torch: parameter trajectories, returned losses and the state counters over tens
of step(closure) calls on Rosenbrock and on small least-squares models (float64, tight tolerance;
float32 looser), with and without the strong-Wolfe line search, short histories, maximize, a
state_dict round trip that resumes exactly, the stopping tolerances and argument errors."""
import re
import warnings

import numpy as np
import pytest

from parity import same

RNG = np.random.default_rng(7)
A = RNG.standard_normal((24, 5))
B = RNG.standard_normal((24, 3))
W0 = RNG.standard_normal((3, 5)) * 0.3
B0 = RNG.standard_normal(3) * 0.1


def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _rosen_run(L, steps=30, sign=1.0, **kw):
    x = L.tensor([-1.5, 2.0], dtype=L.float64, requires_grad=True)
    opt = L.optim.LBFGS([x], **kw)

    def closure():
        opt.zero_grad()
        loss = sign * _rosenbrock(x)
        loss.backward()
        return loss

    traj = []
    for _ in range(steps):
        loss = opt.step(closure)
        st = opt.state[x]
        traj.append((x.detach().clone(), float(loss.detach()), st["func_evals"], st["n_iter"]))
    return traj


@pytest.mark.parametrize("kw", [
    dict(lr=1.0, line_search_fn="strong_wolfe"),
    dict(lr=1.0, line_search_fn="strong_wolfe", max_iter=5, history_size=3),
    dict(lr=0.5, line_search_fn="strong_wolfe", max_iter=4, max_eval=6, history_size=2),
    dict(lr=0.1, max_iter=5, history_size=4),
    dict(lr=0.1, max_iter=3, max_eval=2),
    dict(lr=0.05, max_iter=8),
])
def test_rosenbrock_trajectory_matches_torch(kw):
    same(lambda L: _rosen_run(L, **kw), rtol=1e-10, atol=1e-12)


def test_rosenbrock_maximize():
    same(lambda L: _rosen_run(L, steps=20, sign=-1.0, maximize=True, lr=1.0, line_search_fn="strong_wolfe",
                              max_iter=4), rtol=1e-10, atol=1e-12)


def _least_squares(L, dtype, steps, **kw):
    lin = L.nn.Linear(5, 3).to(dtype)
    with L.no_grad():
        lin.weight.copy_(L.tensor(W0, dtype=dtype))
        lin.bias.copy_(L.tensor(B0, dtype=dtype))
    a, b = L.tensor(A, dtype=dtype), L.tensor(B, dtype=dtype)
    opt = L.optim.LBFGS(lin.parameters(), **kw)

    def closure():
        opt.zero_grad()
        loss = ((lin(a) - b) ** 2).mean() + 0.1 * (lin.weight ** 4).sum()  # not quadratic: curvature varies
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        loss = opt.step(closure)
        st = opt.state[lin.weight]
        out.append((lin.weight.detach().clone(), lin.bias.detach().clone(), float(loss.detach()), st["func_evals"],
                    st["n_iter"]))
    return out


@pytest.mark.parametrize("kw", [
    dict(lr=1.0, line_search_fn="strong_wolfe", max_iter=4, history_size=3),
    dict(lr=0.5, max_iter=4, history_size=3),
    dict(lr=1.0, line_search_fn="strong_wolfe", max_iter=10, history_size=100, tolerance_change=1e-12),
])
def test_least_squares_float64_matches_torch(kw):
    same(lambda L: _least_squares(L, L.float64, 15, **kw), rtol=1e-9, atol=1e-11)


def test_least_squares_float32_matches_torch():
    same(lambda L: _least_squares(L, L.float32, 10, lr=1.0, line_search_fn="strong_wolfe", max_iter=4,
                                  history_size=3), rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_resumes_exactly():
    def run(L):
        x = L.tensor([-1.2, 1.0], dtype=L.float64, requires_grad=True)
        kw = dict(lr=1.0, line_search_fn="strong_wolfe", max_iter=3, history_size=4)
        opt = L.optim.LBFGS([x], **kw)

        def closure_for(o, p):
            def closure():
                o.zero_grad()
                loss = _rosenbrock(p)
                loss.backward()
                return loss
            return closure

        for _ in range(4):
            opt.step(closure_for(opt, x))
        sd = opt.state_dict()
        y = x.detach().clone().requires_grad_()
        opt2 = L.optim.LBFGS([y], **kw)
        opt2.load_state_dict(sd)
        out = [sorted(sd["state"][0]), sd["param_groups"][0]["history_size"], len(sd["state"][0]["old_dirs"])]
        for _ in range(6):
            opt2.step(closure_for(opt2, y))
            out.append((y.detach().clone(), opt2.state[y]["func_evals"], opt2.state[y]["n_iter"]))
        return out

    same(run, rtol=1e-10, atol=1e-12)


def test_stopping_rules_and_closure_semantics():
    def run(L):
        out = []
        # already optimal: one evaluation, the loss returned, no iteration
        x = L.tensor([1.0, 1.0], dtype=L.float64, requires_grad=True)
        opt = L.optim.LBFGS([x])
        calls = []

        def closure():
            calls.append(1)
            opt.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss

        loss = opt.step(closure)
        out.append((float(loss.detach()), len(calls), sorted(opt.state[x].items())))
        # a large tolerance_change stops after the first iteration
        x = L.tensor([-1.0, 1.0], dtype=L.float64, requires_grad=True)
        opt = L.optim.LBFGS([x], lr=0.01, tolerance_change=10.0)
        calls.clear()
        opt.step(closure)
        out.append((x.detach().clone(), len(calls), opt.state[x]["n_iter"]))
        # the closure runs with grad enabled even when step is called under no_grad
        x = L.tensor([-1.0, 1.0], dtype=L.float64, requires_grad=True)
        opt = L.optim.LBFGS([x], lr=0.01, max_iter=2)
        with L.no_grad():
            loss = opt.step(closure)
        out.append((loss.requires_grad, x.detach().clone()))
        # a parameter without a gradient counts as zeros
        y = L.tensor([0.5], dtype=L.float64, requires_grad=True)
        x = L.tensor([-1.0, 1.0], dtype=L.float64, requires_grad=True)
        opt = L.optim.LBFGS([x, y], lr=0.01, max_iter=3)
        opt.step(closure)
        out.append((x.detach().clone(), y.detach().clone(), opt._numel()))
        return out

    same(run, rtol=1e-10, atol=1e-12)


def _error(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


def _closure(L, opt, x):
    def closure():
        opt.zero_grad()
        loss = (x ** 2).sum()
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("fn", [
    lambda L: L.optim.LBFGS([L.nn.Parameter(L.ones(2))], lr=-1.0),
    lambda L: L.optim.LBFGS([{"params": [L.nn.Parameter(L.ones(2))]}, {"params": [L.nn.Parameter(L.ones(2))]}]),
    lambda L: L.optim.LBFGS([]),
    lambda L: (lambda x: (lambda o: o.step(_closure(L, o, x)))(L.optim.LBFGS([x], line_search_fn="wolfe")))(
        L.nn.Parameter(L.ones(2))),
])
def test_errors(fn):
    same(lambda L: _error(lambda: fn(L)))


def test_defaults_and_repr_keys():
    def run(L):
        opt = L.optim.LBFGS([L.nn.Parameter(L.ones(2))], max_iter=8)
        return sorted(opt.defaults.items()), sorted(opt.param_groups[0])

    same(run)
