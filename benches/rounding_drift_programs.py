"""Whole-program drift of the corpus's regression loop (tests/programs/mlp_regression.py) and MNIST CNN
(tests/programs/mnist_cnn.py), trained for longer than the corpus does, under torch and ferrograd from the
same initial weights, and under ferrograd with one difference removed at a time:

  fg                  ferrograd as it is
  fg+torch-optim      the optimizer's Python single-tensor path (`_update`, torch's op order; its
                      add_(alpha=) / addcmul_ are torch's fused multiply-adds) instead of the fused Rust
                      kernel of src/optim.rs (two roundings where torch has one)
  fg+silu             SiLU as torch computes it, x / (1 + exp(-x)), instead of x * sigmoid(x)
  fg+both             both
  torch-f64           torch in float64 (a different rounding of everything: the size of drift that
                      rounding alone produces, whatever the library)
  torch 1-ULP init    torch float32, the first weight tensor moved up by one ULP (the control: how far a
                      single 1-ULP difference travels in this loop)

For each: the first-step loss (relative difference to torch's float32), the loss after N steps, and the
early-stopping step of a loop that stops when the epoch's mean loss has not improved for 5
epochs (the mlp; the CNN reports no stop).

    PYTHONPATH=python .venv/bin/python benches/rounding_drift_programs.py [steps]
"""
import sys

import numpy as np
import torch

import ferrograd as fg

torch.set_num_threads(2)
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 1500


def mlp_data():
    rng = np.random.default_rng(42)
    X = rng.uniform(-2, 2, size=(120, 3)).astype(np.float32)
    y = (np.sin(X[:, :1]) + 0.5 * X[:, 1:2] ** 2 - X[:, 2:3] + rng.normal(0, 0.05, size=(120, 1))).astype(np.float32)
    return X[:96], y[:96]


def mlp_init():
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16), torch.nn.SiLU(),
                            torch.nn.Linear(16, 1))
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def torchlike_silu(L):
    class SiLU(L.nn.Module):
        def forward(self, x):
            return x / (1 + (-x).exp())  # torch's forward formula (gradient: this composition's)
    return SiLU()


def nudge(init):
    """The initial weights with every weight of the first tensor moved by one float32 ULP (a control: how far a 1-ULP
    difference travels under torch itself)."""
    out = {k: (v.copy() if not isinstance(v, tuple) else tuple(a.copy() for a in v)) for k, v in init.items()}
    first = next(iter(out))
    arr = out[first] if not isinstance(out[first], tuple) else out[first][0]
    arr[...] = np.nextafter(arr, np.float32(np.inf))
    return out


def run_mlp(L, dtype, init, variant=""):
    X, y = mlp_data()
    act = torchlike_silu(L) if "silu" in variant or "both" in variant else L.nn.SiLU()
    m = L.nn.Sequential(L.nn.Linear(3, 32), L.nn.ReLU(), L.nn.Linear(32, 16), act, L.nn.Linear(16, 1))
    m.load_state_dict({k: L.from_numpy(v.copy()) for k, v in init.items()})
    if L is torch and dtype == torch.float64:
        m = m.double()
    opt = L.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    if "optim" in variant or "both" in variant:
        opt._fused_step = None  # the single-tensor Python path, torch's order of operations
    crit = L.nn.MSELoss()
    xs = [L.from_numpy(X[i:i + 32].copy()) for i in range(0, 96, 32)]
    ys = [L.from_numpy(y[i:i + 32].copy()) for i in range(0, 96, 32)]
    if L is torch and dtype == torch.float64:
        xs, ys = [x.double() for x in xs], [t.double() for t in ys]
    losses, best, bad, stop = [], float("inf"), 0, None
    for step in range(STEPS):
        i = step % 3
        opt.zero_grad()
        loss = crit(m(xs[i]), ys[i])
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i == 2 and stop is None:  # early stopping on the epoch's mean loss, patience 10 epochs
            v = sum(losses[-3:]) / 3
            if v < best:
                best, bad = v, 0
            else:
                bad += 1
                if bad >= 5:
                    stop = step
    return losses, stop


def digits(n, rng):
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0.0, 0.3, size=(n, 1, 12, 12)).astype(np.float32)
    for i, k in enumerate(labels):
        images[i, 0, k, :] += 1.0
        images[i, 0, :, (3 * k) % 12] += 1.0
    return ((images - 0.1307) / 0.3081).astype(np.float32), labels.astype(np.int64)


def cnn_init():
    torch.manual_seed(1)
    net = [torch.nn.Conv2d(1, 8, 3, 1), torch.nn.Conv2d(8, 16, 3, 1), torch.nn.Linear(256, 32), torch.nn.Linear(32, 10)]
    return {i: (l.weight.detach().numpy().copy(), l.bias.detach().numpy().copy()) for i, l in enumerate(net)}


def run_cnn(L, dtype, init, variant=""):
    F = L.nn.functional
    c1, c2, f1, f2 = L.nn.Conv2d(1, 8, 3, 1), L.nn.Conv2d(8, 16, 3, 1), L.nn.Linear(256, 32), L.nn.Linear(32, 10)
    mods = [c1, c2, f1, f2]
    f64 = L is torch and dtype == torch.float64
    for mod, (w, b) in zip(mods, init.values()):
        with L.no_grad():
            mod.weight.copy_(L.from_numpy(w.copy()))
            mod.bias.copy_(L.from_numpy(b.copy()))
        if f64:
            mod.double()
    params = [p for mod in mods for p in mod.parameters()]
    opt = L.optim.Adadelta(params, lr=1.0)
    if "optim" in variant or "both" in variant:
        opt._fused_step = None
    x, t = digits(96, np.random.default_rng(1))
    xs = [L.from_numpy(x[i:i + 48].copy()) for i in (0, 48)]
    ts = [L.from_numpy(t[i:i + 48].copy()) for i in (0, 48)]
    if f64:
        xs = [v.double() for v in xs]
    losses = []
    for step in range(STEPS // 5):
        i = step % 2
        opt.zero_grad()
        h = F.max_pool2d(F.relu(c2(F.relu(c1(xs[i])))), 2)
        out = F.log_softmax(f2(F.relu(f1(L.flatten(h, 1)))), dim=1)
        loss = F.nll_loss(out, ts[i])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, None


def main():
    for name, run, init in (("mlp_regression (SGD momentum, SiLU, MSE)", run_mlp, mlp_init()),
                            ("mnist_cnn (Adadelta, conv, log_softmax, NLL)", run_cnn, cnn_init())):
        ref, ref_stop = run(torch, torch.float32, init)
        n = len(ref)
        print(f"\n== {name}: {n} steps; torch float32 first loss {ref[0]:.9g}, loss at {n // 10}: "
              f"{ref[n // 10 - 1]:.9g}, final {ref[-1]:.9g}, stop step {ref_stop}")
        print(f"{'run':18s} {'first rel':>10s} {'rel@n/10':>10s} {'rel final':>10s} {'max rel':>10s} "
              f"{'1st step >1e-4':>14s} {'stop':>5s}")
        runs = [("torch-f64", torch, torch.float64, ""), ("torch 1-ULP init", torch, torch.float32, "nudge"),
                ("fg", fg, None, ""),
                ("fg+torch-optim", fg, None, "optim")]
        if run is run_mlp:
            runs += [("fg+silu", fg, None, "silu"), ("fg+both", fg, None, "both")]
        for tag, L, dt, var in runs:
            got, stop = run(L, dt, nudge(init) if var == "nudge" else init, var)
            r = np.abs(np.array(got) - np.array(ref)) / np.abs(np.array(ref))
            over = np.nonzero(r > 1e-4)[0]
            print(f"{tag:18s} {r[0]:10.2e} {r[n // 10 - 1]:10.2e} {r[-1]:10.2e} {r.max():10.2e} "
                  f"{(over[0] if over.size else '-'):>14} {str(stop):>5s}", flush=True)


if __name__ == "__main__":
    main()
