"""optim.swa_utils against torch: AveragedModel (the default running mean, EMA through avg_fn and
multi_avg_fn, custom averages, use_buffers), update_bn, and SWALR's lr sequence alone and after
another scheduler; argument errors."""
import re
import warnings

import numpy as np
import pytest

from conftest import fg
from parity import same

RNG = np.random.default_rng(3)
X = RNG.standard_normal((16, 4))
Y = RNG.standard_normal((16, 2))


def _net(L):
    L.manual_seed(0)
    net = L.nn.Sequential(L.nn.Linear(4, 6), L.nn.BatchNorm1d(6), L.nn.ReLU(), L.nn.Linear(6, 2)).double()
    with L.no_grad():  # the same start in both libraries
        for i, p in enumerate(net.parameters()):
            p.copy_(L.tensor(np.random.default_rng(i).standard_normal(tuple(p.shape)) * 0.4))
    return net


def _train_and_average(L, make_avg, updates=6):
    net = _net(L)
    avg = make_avg(L, net)
    opt = L.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
    x, y = L.tensor(X), L.tensor(Y)
    out = []
    for _ in range(updates):
        for _ in range(2):
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
        avg.update_parameters(net)
        out.append(([p.detach().clone() for p in avg.parameters()], [b.clone() for b in avg.buffers()]))
    avg.eval()
    out.append((avg(x).detach(), int(avg.n_averaged), sorted(avg.state_dict())))
    return out


AVERAGES = {
    "swa": lambda L, net: L.optim.swa_utils.AveragedModel(net),
    "ema_multi": lambda L, net: L.optim.swa_utils.AveragedModel(
        net, multi_avg_fn=L.optim.swa_utils.get_ema_multi_avg_fn(0.9)),
    "ema_single": lambda L, net: L.optim.swa_utils.AveragedModel(net, avg_fn=L.optim.swa_utils.get_ema_avg_fn(0.8)),
    "swa_multi": lambda L, net: L.optim.swa_utils.AveragedModel(
        net, multi_avg_fn=L.optim.swa_utils.get_swa_multi_avg_fn()),
    "swa_single": lambda L, net: L.optim.swa_utils.AveragedModel(net, avg_fn=L.optim.swa_utils.get_swa_avg_fn()),
    "custom": lambda L, net: L.optim.swa_utils.AveragedModel(
        net, avg_fn=lambda a, m, n: 0.5 * a + 0.5 * m + 0.0 * n),
    "buffers_swa": lambda L, net: L.optim.swa_utils.AveragedModel(net, use_buffers=True),
    "buffers_ema": lambda L, net: L.optim.swa_utils.AveragedModel(
        net, multi_avg_fn=L.optim.swa_utils.get_ema_multi_avg_fn(0.75), use_buffers=True),
}


@pytest.mark.parametrize("name", list(AVERAGES))
def test_averaged_model_matches_torch(name):
    same(lambda L: _train_and_average(L, AVERAGES[name]), rtol=1e-12, atol=1e-12)


def test_averaged_model_is_a_copy():
    def run(L):
        net = _net(L)
        avg = L.optim.swa_utils.AveragedModel(net)
        first = next(avg.module.parameters())
        with L.no_grad():
            next(net.parameters()).add_(1.0)
        return (first is next(net.parameters()), first.detach().clone(), avg.n_averaged.dtype,
                isinstance(avg, L.nn.Module), [n for n, _ in avg.named_buffers()][:1])

    same(run)


def test_update_bn_matches_torch():
    def run(L):
        net = _net(L)
        bn = net[1]
        bn.momentum = 0.3
        x = L.tensor(X)
        loader = [x[:5], x[5:11], x[11:]]
        net.eval()
        L.optim.swa_utils.update_bn(loader, net)
        first = (bn.running_mean.clone(), bn.running_var.clone(), int(bn.num_batches_tracked), bn.momentum,
                 net.training)
        pairs = [(x[:8], L.tensor(Y[:8])), (x[8:], L.tensor(Y[8:]))]  # (input, target) batches
        net.train()
        L.optim.swa_utils.update_bn(pairs, net)
        second = (bn.running_mean.clone(), bn.running_var.clone(), net.training)
        plain = L.nn.Linear(2, 2)
        L.optim.swa_utils.update_bn([L.ones(1, 2)], plain)  # no batch norm: nothing happens
        return first, second

    same(run, rtol=1e-12, atol=1e-12)


def _swalr_run(L, make, steps=25):
    p = L.nn.Parameter(L.ones(1))
    q = L.nn.Parameter(L.ones(1))
    opt = L.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.5}], lr=0.1)
    scheds = make(L, opt)
    out = [[g["lr"] for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        for s in scheds(i) if callable(scheds) else scheds:
            s.step()
        out.append(([g["lr"] for g in opt.param_groups], [g["swa_lr"] for g in opt.param_groups]))
    return out


SWALRS = {
    "cos": lambda L, o: [L.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=5)],
    "linear": lambda L, o: [L.optim.swa_utils.SWALR(o, swa_lr=[0.01, 0.2], anneal_epochs=7, anneal_strategy="linear")],
    "no_anneal": lambda L, o: [L.optim.swa_utils.SWALR(o, swa_lr=0.02, anneal_epochs=0)],
    "one_epoch": lambda L, o: [L.optim.swa_utils.SWALR(o, swa_lr=0.3, anneal_epochs=1)],
}


@pytest.mark.parametrize("name", list(SWALRS))
def test_swalr_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: _swalr_run(L, SWALRS[name]), rtol=1e-15, atol=0)


def test_swalr_after_cosine_and_state_dict():
    def make(L, o):
        cos = L.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20)
        swa = L.optim.swa_utils.SWALR(o, swa_lr=0.05, anneal_epochs=4)
        return lambda i: [cos] if i < 10 else [swa]

    def state(L):
        opt = L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1)
        s = L.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_strategy="linear")
        sd = s.state_dict()
        s2 = L.optim.swa_utils.SWALR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), swa_lr=0.05)
        s2.load_state_dict(sd)
        return sorted(sd), s2._anneal_strategy, s2.anneal_func(0.25)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(lambda L: _swalr_run(L, make), rtol=1e-15, atol=0)
        same(state)


def _error(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


@pytest.mark.parametrize("fn", [
    lambda L: L.optim.swa_utils.get_ema_multi_avg_fn(1.5),
    lambda L: L.optim.swa_utils.get_ema_avg_fn(-0.1),
    lambda L: L.optim.swa_utils.AveragedModel(L.nn.Linear(2, 2), avg_fn=lambda a, b, n: a,
                                              multi_avg_fn=lambda a, b, n: None),
    lambda L: L.optim.swa_utils.SWALR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), 0.05,
                                      anneal_strategy="exp"),
    lambda L: L.optim.swa_utils.SWALR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), 0.05, anneal_epochs=-1),
    lambda L: L.optim.swa_utils.SWALR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), 0.05, anneal_epochs=2.0),
    lambda L: L.optim.swa_utils.SWALR(L.optim.SGD([L.nn.Parameter(L.ones(1))], lr=0.1), [0.05, 0.1]),
])
def test_errors(fn):
    same(lambda L: _error(lambda: fn(L)))


def test_all_names_exported():
    import torch
    assert sorted(fg.optim.swa_utils.__all__) == sorted(torch.optim.swa_utils.__all__)
    for n in torch.optim.swa_utils.__all__:
        assert hasattr(fg.optim.swa_utils, n), n
