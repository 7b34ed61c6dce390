#!/usr/bin/env python3
"""Indexing, scans and scatter on the CPU, ferrograd against torch in the same process: gather,
scatter_add, flip, boolean masks, single-tensor indexing, cumsum, index_put with accumulate and
nonzero on square float32 matrices (ratio = ferrograd time / torch time; below 1 is faster).

    python benches/index_ops.py [--sizes 256,1024] [--threads 2]

A benchmark, never a test: the parity of these ops is tests/test_index_paths.py's.
"""
import argparse

import torch

import ferrograd as fg
from cuda_bench import timed as _timed  # benches/: the median of five timed batches


def timed(f, reps):
    return _timed(lambda: None, f, reps)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="256,1024")
    p.add_argument("--threads", type=int, help="set_num_threads(N) on both libraries")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
        fg.set_num_threads(args.threads)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), ferrograd {fg.__version__}")
    print("| n x n | op | ferrograd ms | torch ms | ratio |\n|---|---|---:|---:|---:|")
    for m in (int(s) for s in args.sizes.split(",")):
        tA = torch.randn(m, m)
        fA = fg.from_numpy(tA.numpy().copy())
        ti = torch.randint(0, m, (m, m))
        fi = fg.from_numpy(ti.numpy().copy())
        tv = torch.randint(0, m, (m,))
        fv = fg.from_numpy(tv.numpy().copy())
        tmask, fmask = tA > 0, fA > 0
        reps = max(1, (1 << 22) // (m * m))
        for name, ff, tf in [
            ("gather dim 1", lambda: fA.gather(1, fi), lambda: tA.gather(1, ti)),
            ("scatter_add dim 1", lambda: fA.scatter_add(1, fi, fA), lambda: tA.scatter_add(1, ti, tA)),
            ("flip dim 1", lambda: fA.flip(1), lambda: tA.flip(1)),
            ("flip dim 0", lambda: fA.flip(0), lambda: tA.flip(0)),
            ("x[mask]", lambda: fA[fmask], lambda: tA[tmask]),
            ("x[:, idx]", lambda: fA[:, fv], lambda: tA[:, tv]),
            ("x[idx]", lambda: fA[fv], lambda: tA[tv]),
            ("cumsum dim 1", lambda: fA.cumsum(1), lambda: tA.cumsum(1)),
            ("cumsum dim 0", lambda: fA.cumsum(0), lambda: tA.cumsum(0)),
            ("index_put accumulate", lambda: fA.index_put((fv,), fA, accumulate=True),
             lambda: tA.index_put((tv,), tA, accumulate=True)),
            ("nonzero", lambda: fmask.nonzero(), lambda: tmask.nonzero()),
        ]:
            a, b = timed(ff, reps), timed(tf, reps)
            print(f"| {m} | {name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
