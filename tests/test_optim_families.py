"""Adafactor, Muon, SparseAdam and swap_in_optimizer_params_and_state against torch: parameter
trajectories over 20 steps of the shared model of test_optim (float32, same initial values), options,
param groups and closures, state_dict round trips that resume exactly, the state layout, and argument
errors."""
import numpy as np
import pytest
import torch

import ferrograd.optim  # noqa: F401
from conftest import fg
from parity import same
from test_optim import X, Y, _error, model, train

ADAFACTOR = {
    "adafactor": lambda L, p: L.optim.Adafactor(p),
    "adafactor_lr_wd": lambda L, p: L.optim.Adafactor(p, lr=0.05, weight_decay=0.1, foreach=False),
    "adafactor_opts_maximize": lambda L, p: L.optim.Adafactor(p, lr=0.02, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0,
                                                               maximize=True),
    "adafactor_tensor_lr": lambda L, p: L.optim.Adafactor(p, lr=L.tensor(0.03)),
}


@pytest.mark.parametrize("name", list(ADAFACTOR))
def test_adafactor_matches_torch_after_20_steps(name):
    same(lambda L: train(L, ADAFACTOR[name]), rtol=1e-5, atol=1e-6)


def test_adafactor_groups_closure_and_batched_matrices():
    same(lambda L: train(L, ADAFACTOR["adafactor_lr_wd"], groups=True), rtol=1e-5, atol=1e-6)
    same(lambda L: train(L, ADAFACTOR["adafactor"], steps=5, closure=True), rtol=1e-5, atol=1e-6)

    def batched(L):  # a 3-d parameter: row/col statistics over the last two dimensions
        w = L.nn.Parameter(L.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)))
        opt = L.optim.Adafactor([w], lr=0.05)
        for i in range(6):
            opt.zero_grad()
            (w.sin() * (i + 1)).sum().backward()
            opt.step()
        st = opt.state[w]
        return w.detach(), st["row_var"], st["col_var"], st["step"]
    same(batched, rtol=1e-5, atol=1e-7)


def _muon_train(L, steps=20, **kw):
    m = model(L)
    weights = [m[0].weight, m[2].weight]
    others = [m[0].bias, m[2].bias]
    muon = L.optim.Muon(weights, **kw)
    sgd = L.optim.SGD(others, lr=0.1)
    x, y = L.tensor(X), L.tensor(Y)
    for i in range(steps):
        muon.zero_grad()
        sgd.zero_grad()
        L.nn.functional.cross_entropy(m(x[i % 4 * 4:][:8]), y[i % 4 * 4:][:8]).backward()
        muon.step()
        sgd.step()
    return [p.detach() for p in m.parameters()]


MUON_OPTIONS = [
    {}, {"lr": 0.02, "weight_decay": 0.0, "nesterov": False}, {"lr": 0.01, "momentum": 0.8, "adjust_lr_fn": "match_rms_adamw"},
    {"lr": 0.01, "adjust_lr_fn": "spectral_unclamped", "ns_steps": 3}, {"lr": 0.01, "adjust_lr_fn": "original"},
    {"lr": 0.05, "ns_coefficients": (2.0, -1.5, 0.5), "eps": 1e-5},
]
MUON_IDS = ["default", "plain-momentum", "match-rms", "spectral", "original", "coefficients"]


@pytest.mark.parametrize("kw", MUON_OPTIONS, ids=MUON_IDS)
def test_muon_matches_torch_on_fixed_gradients(kw):
    """The same gradient sequence fed to both (tall, wide and square parameters). The momentum buffers are
    float32 and agree to rounding; the Newton-Schulz iteration rounds to bfloat16 after each product as
    torch's does, but the float32 sums inside a product are ordered differently, so now and then an entry
    lands on the other side of a bfloat16 rounding boundary: the parameters agree to a few bfloat16 ulps
    of the update (~1e-2 relative) times lr per step."""
    rng = np.random.default_rng(4)
    shapes = [(6, 4), (3, 7), (5, 5)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(8)]

    def run(L):
        ps = [L.nn.Parameter(L.tensor(v)) for v in init]
        opt = L.optim.Muon(ps, **kw)
        for gs in grads:
            for p, g in zip(ps, gs):
                p.grad = L.tensor(g)
            opt.step()
        return [p.detach() for p in ps], [opt.state[p]["momentum_buffer"] for p in ps]
    lr = kw.get("lr", 1e-3)
    expected, got = same(run, rtol=0, atol=len(grads) * 2 * lr * 3e-2)
    for a, b in zip(expected[1], got[1]):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


def test_muon_trains_like_torch():
    """Training the shared model (Muon on the weights, SGD on the biases): the trajectories follow torch's
    until bfloat16 rounding boundaries, fed back through the loss, make them drift apart by ~lr * 1e-2."""
    same(lambda L: _muon_train(L, steps=5, lr=0.02), rtol=0, atol=2e-3)


def test_muon_orthogonalizes():
    """One step from zero momentum with nesterov=False moves the weight by lr times an approximately
    orthogonal matrix (singular values in about [0.5, 1.5])."""
    w = fg.nn.Parameter(fg.zeros(4, 6))
    opt = fg.optim.Muon([w], lr=1.0, weight_decay=0.0, momentum=0.0, nesterov=False)
    w.grad = fg.tensor(np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32))
    opt.step()
    s = np.linalg.svd(-w.detach().numpy(), compute_uv=False)
    assert s.min() > 0.3 and s.max() < 1.6, s


def test_sparse_adam_dense_gradient_error():
    def run(L):
        p = L.nn.Parameter(L.ones(3))
        opt = L.optim.SparseAdam([p], lr=0.1)
        p.grad = L.ones(3)
        opt.step()
    assert _error(lambda: run(torch)) == _error(lambda: run(fg))
    for L in (torch, fg):
        opt = L.optim.SparseAdam([L.nn.Parameter(L.ones(3))], lr=0.01, betas=(0.8, 0.9), maximize=True)
        g = opt.param_groups[0]
        assert (g["lr"], g["betas"], g["eps"], g["maximize"]) == (0.01, (0.8, 0.9), 1e-8, True)


@pytest.mark.parametrize("fn", [
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], lr=-1.0),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], beta2_decay=0.5),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], eps=(-1.0, 1e-3)),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], eps=(None, -1.0)),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], d=0.5),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], weight_decay=-1.0),
    lambda L: L.optim.Adafactor([L.nn.Parameter(L.ones(1))], lr=L.ones(2)),
    lambda L: L.optim.Muon([L.nn.Parameter(L.ones(2))]),
    lambda L: L.optim.Muon([L.nn.Parameter(L.ones(2, 2))], lr=-1.0),
    lambda L: L.optim.Muon([L.nn.Parameter(L.ones(2, 2))], momentum=-1.0),
    lambda L: L.optim.Muon([L.nn.Parameter(L.ones(2, 2))], weight_decay=-1.0),
    lambda L: L.optim.Muon([L.nn.Parameter(L.ones(2, 2))], adjust_lr_fn="nope"),
    lambda L: L.optim.SparseAdam([L.nn.Parameter(L.ones(2))], lr=0.0),
    lambda L: L.optim.SparseAdam([L.nn.Parameter(L.ones(2))], eps=0.0),
    lambda L: L.optim.SparseAdam([L.nn.Parameter(L.ones(2))], betas=(1.0, 0.9)),
    lambda L: L.optim.SparseAdam([L.nn.Parameter(L.ones(2))], betas=(0.9, -0.1)),
])
def test_argument_errors(fn):
    assert _error(lambda: fn(torch)) == _error(lambda: fn(fg))


@pytest.mark.parametrize("make", [
    lambda L, p: L.optim.Adafactor(p, lr=0.05, weight_decay=0.01),
    lambda L, p: L.optim.Muon([q for q in p if q.dim() == 2], lr=0.01),
], ids=["adafactor", "muon"])
def test_state_dict_round_trip_and_layout(make):
    def run(L):
        m = model(L)
        x, y = L.tensor(X), L.tensor(Y)

        def step(o, mod):
            o.zero_grad()
            L.nn.functional.cross_entropy(mod(x), y).backward()
            o.step()

        opt = make(L, list(m.parameters()))
        for _ in range(3):
            step(opt, m)
        sd = opt.state_dict()
        layout = sorted((k, sorted(v)) for k, v in sd["state"].items())
        groups = [sorted((k, repr(v)) for k, v in g.items()) for g in sd["param_groups"]]
        sd = {"state": {k: {n: v.clone() if isinstance(v, L.Tensor) else v for n, v in st.items()}
                        for k, st in sd["state"].items()}, "param_groups": sd["param_groups"]}
        m2 = model(L)
        m2.load_state_dict(m.state_dict())
        opt2 = make(L, list(m2.parameters()))
        opt2.load_state_dict(sd)
        for _ in range(3):
            step(opt, m)
            step(opt2, m2)
        return [p.detach() for p in m2.parameters()], [p.detach() for p in m.parameters()], layout, groups

    # (Muon's trajectories drift from torch's at bfloat16 rounding boundaries, see test_muon_trains_like_torch)
    expected, got = same(run, rtol=1e-4, atol=2e-3)
    for lib_result in (expected, got):
        for a, b in zip(lib_result[0], lib_result[1]):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)  # resumed == continued


def test_swap_in_optimizer_params_and_state():
    def run(L):
        m = model(L)
        opt = L.optim.Adam(m.parameters(), lr=0.05)
        x, y = L.tensor(X), L.tensor(Y)
        for _ in range(2):
            opt.zero_grad()
            L.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        live_before = [p.detach().clone() for p in m.parameters()]
        # a copy of the parameters and state, stepped with another learning rate inside the block
        params = {n: p.detach().clone().requires_grad_() for n, p in m.named_parameters()}
        sd = opt.state_dict()
        osd = {"state": {k: {n: v.clone() for n, v in st.items()} for k, st in sd["state"].items()},
               "param_groups": [dict(g, lr=0.2) for g in sd["param_groups"]]}
        for p in params.values():
            p.grad = L.ones_like(p)
        with L.optim.swap_in_optimizer_params_and_state(opt, params, osd):
            inside_lr = opt.param_groups[0]["lr"]
            opt.step()
        out = [inside_lr, opt.param_groups[0]["lr"], [p.detach() for p in params.values()],
               [osd["state"][i]["exp_avg"] for i in range(4)], osd["state"][0]["step"]]
        out.append(all(bool((a == b).all()) for a, b in zip(live_before, m.parameters())))
        return out
    same(run, rtol=1e-4, atol=1e-5)

    for L in (torch, fg):
        m = model(L)
        opt = L.optim.SGD(m.parameters(), lr=0.1)
        with pytest.raises(RuntimeError):  # no state yet
            with L.optim.swap_in_optimizer_params_and_state(opt, dict(m.named_parameters()), opt.state_dict()):
                pass
        opt = L.optim.Adam(m.parameters())
        for p in m.parameters():
            p.grad = L.zeros_like(p)
        opt.step()
        bad = opt.state_dict()
        bad = {"state": bad["state"], "param_groups": [dict(g, extra=1) for g in bad["param_groups"]]}
        with pytest.raises(RuntimeError):
            with L.optim.swap_in_optimizer_params_and_state(opt, dict(m.named_parameters()), bad):
                pass


def test_profile_hook_step_and_hook_aliases():
    seen = {}
    for L in (torch, fg):
        calls = []

        class Plain(L.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {"lr": 0.1})

            @L.optim.Optimizer.profile_hook_step
            def step(self, closure=None):
                calls.append("step")

        opt = Plain([L.nn.Parameter(L.ones(1))])
        opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
        opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
        opt.step()
        seen[L] = calls  # (torch: the decorated step is wrapped again, so each hook runs twice)
        assert L.optim.Optimizer.OptimizerPreHook is not None and L.optim.Optimizer.OptimizerPostHook is not None
    assert seen[fg] == seen[torch] == ["pre", "pre", "step", "post", "post"]
