#!/usr/bin/env python3
"""A/B of the fused nn ops (issue #29): each op's forward + backward with ferrograd's fused op,
with ferrograd running the composition it replaced (the same engine ops the Python functions used
before), and with torch, at GPT-ish sizes. The three run alternately in one process; the figure is
the median of many rounds. A benchmark, never a test; on a shared machine the numbers are noisy
(report `uptime` with them).

    python benches/fused_nn_ops.py [--rounds 41] [--threads 2]
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import ferrograd as fg  # noqa: E402
import ferrograd.nn.functional as F_fg  # noqa: E402

F_t = torch.nn.functional


# the compositions the Python functions ran before the fused ops (for the "old" column)
def old_gelu(x):
    return x * 0.5 * (1.0 + (x * (1.0 / math.sqrt(2.0))).erf())


def old_layer_norm(x, w, b, eps=1e-5):
    xc = x - x.mean((-1,), keepdim=True)
    return xc * ((xc * xc).mean((-1,), keepdim=True) + eps).rsqrt() * w + b


def old_mse(x, t):
    d = x - t
    return (d * d).mean()


def old_bce_logits(x, t):
    m = x.clamp(max=0.0)
    log_sig = m - (2.0 * m - x).exp().log1p()
    return ((1 - t) * x - log_sig).mean()


def cases():
    rng = np.random.default_rng(0)
    act = rng.standard_normal((16, 64, 128)).astype(np.float32)
    wide = rng.standard_normal((16, 64, 512)).astype(np.float32)
    w = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    tgt = rng.random((16, 64, 128)).astype(np.float32)

    def mk(lib, a, grad=True):
        return lib.tensor(a).requires_grad_(grad)

    return [
        ("gelu 16x64x512", lambda lib, F: (lambda x: F.gelu(x)), lambda x: old_gelu(x), lambda lib: (mk(lib, wide),)),
        ("layer_norm 16x64x128 (w,b)", lambda lib, F: (lambda x, w, b: F.layer_norm(x, (128,), w, b)), old_layer_norm,
         lambda lib: (mk(lib, act), mk(lib, w), mk(lib, b))),
        ("mse_loss 16x64x128", lambda lib, F: (lambda x, t: F.mse_loss(x, t)), old_mse, lambda lib: (mk(lib, act), mk(lib, tgt, False))),
        ("bce_with_logits 16x64x128", lambda lib, F: (lambda x, t: F.binary_cross_entropy_with_logits(x, t)), old_bce_logits,
         lambda lib: (mk(lib, act), mk(lib, tgt, False))),
    ]


def step(fn, args, g):
    y = fn(*args)
    y.backward(g if y.dim() else None)


def timed(fn, args, g, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        step(fn, args, g)
    return (time.perf_counter() - t0) / inner * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--inner", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=0.02, help="seconds of sleep before each timed block")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("uptime:", os.popen("uptime").read().strip())
    print(f"{'op (forward+backward)':32} {'fused ms':>9} {'old ms':>9} {'torch ms':>9} {'fused/torch':>11} {'old/fused':>9}")
    for name, make, old, inputs in cases():
        ours, theirs = inputs(fg), inputs(torch)
        fused_fn, torch_fn = make(fg, F_fg), make(torch, F_t)
        g_f = fg.ones_like(fused_fn(*ours).detach())
        g_t = torch.ones_like(torch_fn(*theirs).detach())
        for _ in range(3):  # warm-up
            step(fused_fn, ours, g_f), step(old, ours, g_f), step(torch_fn, theirs, g_t)
        rows = {"fused": [], "old": [], "torch": []}
        for _ in range(a.rounds):
            # a pause before each block lets the other library's spinning worker threads park
            for key, fn, args, g in (("fused", fused_fn, ours, g_f), ("old", old, ours, g_f), ("torch", torch_fn, theirs, g_t)):
                time.sleep(a.pause)
                rows[key].append(timed(fn, args, g, a.inner))
        m = {k: statistics.median(v) for k, v in rows.items()}
        print(f"{name:32} {m['fused']:9.3f} {m['old']:9.3f} {m['torch']:9.3f} {m['fused'] / m['torch']:11.2f} {m['old'] / m['fused']:9.2f}")
    print("uptime:", os.popen("uptime").read().strip())


if __name__ == "__main__":
    main()
