#!/usr/bin/env python3
"""Side-by-side benchmark of ferrograd.func against torch.func (issue #30's performance targets).

Each workload is written once against the torch API as a function of the library module (``lib``);
both libraries run in one process, alternating (torch, ferrograd, ferrograd, torch, ...) after a
warm-up; the table reports the median time per call of each and the ratio ferrograd / torch (below
1: ferrograd is faster). Inputs are the same numbers for both (numpy, seeded).

    python benches/func_transforms.py                        # all workloads, CPU
    python benches/func_transforms.py --only per_sample,jacrev --repeat 31 --threads 2
    python benches/func_transforms.py --device cuda          # where both libraries see a GPU

Workloads:
  per_sample   vmap(grad(loss), in_dims=(None, 0, 0)) of an MLP 784-128-10, batch 64 (target <= 0.7x)
  jacrev       jacrev of a 64->64 MLP (tanh, 2 layers) at one input (target <= 0.7x)
  ensemble     vmap over 64 ensemble members of a 2-layer MLP 64-128-10, batch 32 (target <= 0.8x,
               and within 1.3x of `bmm_ref`)
  bmm_ref      the same ensemble forward written as one batched matmul per layer (reference)
This is a benchmark, never a test: it asserts nothing but that both libraries agree on the values.
"""

import argparse
import importlib
import statistics
import sys
import time

import numpy as np


def _tensor(lib, a, device):
    return lib.tensor(a, device=device)


def per_sample(lib, device):
    rng = np.random.default_rng(0)
    w1 = _tensor(lib, rng.standard_normal((128, 784)).astype(np.float32) * 0.03, device)
    b1 = _tensor(lib, np.zeros(128, np.float32), device)
    w2 = _tensor(lib, rng.standard_normal((10, 128)).astype(np.float32) * 0.1, device)
    b2 = _tensor(lib, np.zeros(10, np.float32), device)
    x = _tensor(lib, rng.standard_normal((64, 784)).astype(np.float32), device)
    y = _tensor(lib, rng.integers(0, 10, 64), device)
    F = lib.nn.functional
    params = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}

    def loss(p, xi, yi):
        h = F.relu(F.linear(xi, p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), yi)

    fn = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))
    return lambda: fn(params, x, y)["w1"]


def jacrev(lib, device):
    rng = np.random.default_rng(1)
    w1 = _tensor(lib, rng.standard_normal((64, 64)).astype(np.float32) * 0.1, device)
    w2 = _tensor(lib, rng.standard_normal((64, 64)).astype(np.float32) * 0.1, device)
    x = _tensor(lib, rng.standard_normal(64).astype(np.float32), device)
    F = lib.nn.functional

    def mlp(v):
        return F.linear(lib.tanh(F.linear(v, w1)), w2)

    fn = lib.func.jacrev(mlp)
    return lambda: fn(x)


def _ensemble_weights(lib, device):
    rng = np.random.default_rng(2)
    w1 = _tensor(lib, rng.standard_normal((64, 128, 64)).astype(np.float32) * 0.1, device)
    b1 = _tensor(lib, np.zeros((64, 128), np.float32), device)
    w2 = _tensor(lib, rng.standard_normal((64, 10, 128)).astype(np.float32) * 0.1, device)
    b2 = _tensor(lib, np.zeros((64, 10), np.float32), device)
    x = _tensor(lib, rng.standard_normal((32, 64)).astype(np.float32), device)
    return w1, b1, w2, b2, x


def ensemble(lib, device):
    w1, b1, w2, b2, x = _ensemble_weights(lib, device)
    F = lib.nn.functional

    def model(a, b, c, d, v):
        return F.linear(F.relu(F.linear(v, a, b)), c, d)

    fn = lib.func.vmap(model, in_dims=(0, 0, 0, 0, None))
    return lambda: fn(w1, b1, w2, b2, x)


def bmm_ref(lib, device):
    w1, b1, w2, b2, x = _ensemble_weights(lib, device)

    def run():
        h = lib.relu(lib.matmul(x, w1.transpose(1, 2)) + b1.unsqueeze(1))
        return lib.matmul(h, w2.transpose(1, 2)) + b2.unsqueeze(1)
    return run


WORKLOADS = {"per_sample": per_sample, "jacrev": jacrev, "ensemble": ensemble, "bmm_ref": bmm_ref}


def _sync(lib, device):
    if device == "cuda":
        lib.cuda.synchronize()


def _time(lib, fn, device, inner):
    _sync(lib, device)
    t = time.perf_counter()
    for _ in range(inner):
        fn()
    _sync(lib, device)
    return (time.perf_counter() - t) / inner


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--inner", type=int, default=5, help="calls per timed sample")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    import torch
    import ferrograd
    libs = {"torch": torch, "ferrograd": ferrograd}
    if args.threads:
        torch.set_num_threads(args.threads)
        ferrograd.set_num_threads(args.threads)
    names = [n for n in WORKLOADS if not args.only or n in args.only.split(",")]
    print(f"{'workload':<12} {'torch ms':>10} {'ferrograd ms':>13} {'ratio':>7}")
    for name in names:
        fns = {}
        for lname, lib in libs.items():
            try:
                fns[lname] = WORKLOADS[name](lib, args.device)
                out = fns[lname]()
                fns[lname].value = np.asarray(out.detach().cpu().numpy())
            except Exception as e:  # noqa: BLE001 - a benchmark reports and goes on
                print(f"{name:<12} n/a on {lname}: {type(e).__name__}: {e}")
                fns = {}
                break
        if not fns:
            continue
        agree = np.allclose(fns["torch"].value, fns["ferrograd"].value, rtol=1e-3, atol=1e-4)
        samples = {k: [] for k in libs}
        for _ in range(2):  # warm-up
            for k in libs:
                fns[k]()
        for r in range(args.repeat):
            order = list(libs) if r % 2 == 0 else list(libs)[::-1]
            for k in order:
                samples[k].append(_time(libs[k], fns[k], args.device, args.inner))
        t_torch = statistics.median(samples["torch"]) * 1e3
        t_fg = statistics.median(samples["ferrograd"]) * 1e3
        note = "" if agree else "  (values differ!)"
        print(f"{name:<12} {t_torch:>10.3f} {t_fg:>13.3f} {t_fg / t_torch:>7.2f}{note}")
    sys.stdout.flush()


if __name__ == "__main__":
    importlib.invalidate_caches()
    main()
