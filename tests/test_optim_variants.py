"""NAdam, RAdam, Adamax, Adadelta, ASGD and Rprop against torch: 20 steps of training the shared model of
test_optim (float32, same initial parameters), with param groups, a state_dict round trip that resumes
exactly, the state layout, and argument errors."""
import numpy as np
import pytest

import ferrograd.optim  # noqa: F401
from parity import same
from test_optim import X, Y, _error, model, train

OPTIMIZERS = {
    "nadam": lambda L, p: L.optim.NAdam(p, lr=1e-2),
    "nadam_wd": lambda L, p: L.optim.NAdam(p, lr=2e-2, betas=(0.8, 0.99), weight_decay=0.1, momentum_decay=1e-2),
    "nadam_decoupled_maximize": lambda L, p: L.optim.NAdam(p, lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True,
                                                           maximize=True),
    "radam": lambda L, p: L.optim.RAdam(p, lr=1e-2),
    "radam_fast_rect": lambda L, p: L.optim.RAdam(p, lr=1e-2, betas=(0.9, 0.8), weight_decay=0.05),
    "radam_decoupled": lambda L, p: L.optim.RAdam(p, lr=1e-2, betas=(0.5, 0.7), weight_decay=0.1,
                                                  decoupled_weight_decay=True),
    "adamax": lambda L, p: L.optim.Adamax(p, lr=1e-2),
    "adamax_wd": lambda L, p: L.optim.Adamax(p, lr=2e-2, betas=(0.8, 0.9), weight_decay=0.1, eps=1e-4),
    "adadelta": lambda L, p: L.optim.Adadelta(p),
    "adadelta_wd": lambda L, p: L.optim.Adadelta(p, lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1),
    "asgd": lambda L, p: L.optim.ASGD(p, lr=0.05),
    "asgd_t0": lambda L, p: L.optim.ASGD(p, lr=0.1, lambd=1e-2, alpha=0.5, t0=5, weight_decay=0.01),
    "rprop": lambda L, p: L.optim.Rprop(p, lr=1e-2),
    "rprop_opts_maximize": lambda L, p: L.optim.Rprop(p, lr=2e-2, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05),
                                                      maximize=True),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_torch_after_20_steps(name):
    same(lambda L: train(L, OPTIMIZERS[name]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["nadam", "radam", "adamax", "adadelta", "asgd_t0", "rprop"])
def test_param_groups_and_closure(name):
    same(lambda L: train(L, OPTIMIZERS[name], groups=True), rtol=1e-5, atol=1e-6)
    same(lambda L: train(L, OPTIMIZERS[name], steps=5, closure=True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["nadam_wd", "radam", "adamax", "adadelta", "asgd_t0", "rprop"])
def test_state_dict_round_trip(name):
    make = OPTIMIZERS[name]

    def run(L):
        m = model(L)
        opt = make(L, [{"params": m[0].parameters()}, {"params": m[2].parameters(), "lr": 0.05}])
        x, y = L.tensor(X), L.tensor(Y)

        def step(o, mod):
            o.zero_grad()
            L.nn.functional.cross_entropy(mod(x), y).backward()
            o.step()

        for _ in range(3):
            step(opt, m)
        sd = opt.state_dict()
        sd = {"state": {k: {n: v.clone() if isinstance(v, L.Tensor) else v for n, v in st.items()}
                        for k, st in sd["state"].items()},
              "param_groups": sd["param_groups"]}
        m2 = model(L)
        m2.load_state_dict(m.state_dict())
        opt2 = make(L, [{"params": m2[0].parameters()}, {"params": m2[2].parameters(), "lr": 0.9}])
        opt2.load_state_dict(sd)
        for _ in range(3):
            step(opt, m)
            step(opt2, m2)
        return [p.detach() for p in m2.parameters()], [p.detach() for p in m.parameters()], \
            opt2.param_groups[1]["lr"]

    expected, got = same(run, rtol=1e-5, atol=1e-6)
    for a, b in zip(got[0], got[1]):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)  # resumed == continued


def test_state_layout_and_repr():
    def run(L):
        out = []
        for name, make in OPTIMIZERS.items():
            p = L.nn.Parameter(L.ones(3))
            opt = make(L, [p])
            (p * p).sum().backward()
            opt.step()
            sd = opt.state_dict()
            st = sd["state"][0]
            out.append((name, sorted(st), [(k, tuple(v.shape), str(v.dtype).split(".")[-1], v.tolist())
                                           for k, v in sorted(st.items())], sorted(sd["param_groups"][0]), repr(opt)))
        return out

    same(run, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("fn", [
    lambda L, p: L.optim.NAdam(p, lr=-1),
    lambda L, p: L.optim.NAdam(p, momentum_decay=-1),
    lambda L, p: L.optim.RAdam(p, betas=(1.0, 0.9)),
    lambda L, p: L.optim.Adamax(p, eps=-1),
    lambda L, p: L.optim.Adadelta(p, rho=1.5),
    lambda L, p: L.optim.ASGD(p, lambd=-1),
    lambda L, p: L.optim.ASGD(p, alpha=-1),
    lambda L, p: L.optim.Rprop(p, etas=(1.5, 2.0)),
    lambda L, p: L.optim.Rprop(p, lr=-0.1),
])
def test_errors(fn):
    same(lambda L: _error(lambda: fn(L, [L.nn.Parameter(L.ones(2))])))
