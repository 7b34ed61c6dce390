"""Forward-mode AD, ferrograd against torch in one process (issue #30's forward-mode workloads).

- `jvp_mlp`: one Jacobian-vector product through an MLP 784-256-256-10 (batch 64) with dual tensors
  (autograd.forward_ad: make_dual, forward, unpack_dual);
- `jacfwd_mlp`: func.jacfwd of a 64-128-64 MLP at one input (a 64x64 Jacobian);
- `hessian_32`: func.hessian of a scalar function of 32 parameters (a 32x32 Hessian, jacfwd of jacrev).

The two libraries alternate sample by sample (so machine noise hits both alike); each sample runs the
workload `--number` times; the median sample counts. Ratio = ferrograd / torch (below 1: faster).

    python benches/forward_ad.py [--repeat 7] [--number 5] [--threads 2] [--only jvp_mlp,...]
"""

import argparse
import statistics
import time

import numpy as np


def _funcs(L):
    """(jvp, jacfwd, hessian) of library L."""
    if L.__name__ == "torch":
        import torch.func as tf

        return tf.jvp, tf.jacfwd, tf.hessian
    try:
        from ferrograd.func import hessian, jacfwd, jvp
    except ImportError:
        from ferrograd.func._forward_transforms import hessian, jacfwd, jvp
    return jvp, jacfwd, hessian


def _weights(L, shapes, seed):
    rng = np.random.default_rng(seed)
    return [L.tensor(rng.standard_normal(s) / np.sqrt(s[-1]), dtype=L.float32) for s in shapes]


def workloads(L):
    fw = L.autograd.forward_ad
    _, jacfwd, hessian = _funcs(L)
    F = L.nn.functional

    W1, b1, W2, b2, W3, b3 = _weights(L, [(256, 784), (1, 256), (256, 256), (1, 256), (10, 256), (1, 10)], 0)
    b1, b2, b3 = b1.reshape(-1), b2.reshape(-1), b3.reshape(-1)
    x, v = _weights(L, [(64, 784), (64, 784)], 1)

    def jvp_mlp():
        with fw.dual_level():
            d = fw.make_dual(x, v)
            h = F.relu(F.linear(d, W1, b1))
            h = F.relu(F.linear(h, W2, b2))
            out = F.linear(h, W3, b3)
            return fw.unpack_dual(out).tangent

    V1, c1, V2, c2 = _weights(L, [(128, 64), (1, 128), (64, 128), (1, 64)], 2)
    c1, c2 = c1.reshape(-1), c2.reshape(-1)
    (x64,) = _weights(L, [(1, 64)], 3)
    x64 = x64.reshape(-1)

    def mlp64(inp):
        return F.linear(L.tanh(F.linear(inp, V1, c1)), V2, c2)

    def jacfwd_mlp():
        return jacfwd(mlp64)(x64)

    (A,) = _weights(L, [(32, 32)], 4)
    (p32,) = _weights(L, [(1, 32)], 5)
    p32 = p32.reshape(-1)

    def f32(p):
        return (L.tanh(A @ p) ** 2).sum() + (p * p).sum().sqrt()

    def hessian_32():
        return hessian(f32)(p32)

    return {"jvp_mlp": jvp_mlp, "jacfwd_mlp": jacfwd_mlp, "hessian_32": hessian_32}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--number", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--only", default="")
    args = p.parse_args()
    import torch

    import ferrograd

    libs = (torch, ferrograd)
    for L in libs:
        L.set_num_threads(args.threads)
    loads = {L.__name__: workloads(L) for L in libs}
    names = [n for n in loads["torch"] if not args.only or n in args.only.split(",")]
    print(f"{'workload':<12} {'torch ms':>9} {'ferrograd ms':>13} {'ratio':>6}")
    for name in names:
        for L in libs:  # warm-up
            loads[L.__name__][name]()
        samples = {L.__name__: [] for L in libs}
        for _ in range(args.repeat):
            for L in libs:
                fn = loads[L.__name__][name]
                t0 = time.perf_counter()
                for _ in range(args.number):
                    fn()
                samples[L.__name__].append((time.perf_counter() - t0) / args.number)
        t, f = statistics.median(samples["torch"]) * 1e3, statistics.median(samples["ferrograd"]) * 1e3
        print(f"{name:<12} {t:9.3f} {f:13.3f} {f / t:6.2f}")


if __name__ == "__main__":
    main()
