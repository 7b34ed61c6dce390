#!/usr/bin/env python3
"""GPU figures for docs/performance.md, ferrograd against torch in the same process:

- elementwise bandwidth (add, mul by a scalar, exp, a broadcast add) as a share of the card's copy
  bandwidth (torch's device-to-device clone of the same size),
- reduction bandwidth (a full sum, a row sum),
- matmul TFLOP/s (float32, square sizes),
- matmul TFLOP/s in bfloat16/float16 (cuBLAS GemmEx),
- the time of indexing, scans, random numbers and optimizer steps,
- the latency of one small op (launch overhead).

    python benches/cuda_bench.py [--markdown]

Needs a CUDA device for both libraries. This is a benchmark, never a test.
"""

import argparse
import statistics
import time

import torch

import ferrograd as fg


def timed(sync, f, reps):
    f()
    sync()
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            f()
        sync()
        samples.append((time.perf_counter() - t) / reps)
    return statistics.median(samples)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    fsync, tsync = fg.cuda.synchronize, torch.cuda.synchronize
    rows = []
    n = 1 << 26
    tx, ty = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    fx, fy = fg.randn(n, device="cuda"), fg.randn(n, device="cuda")
    copy = 2 * 4 * n / timed(tsync, lambda: tx.clone(), 20)
    rows.append(("copy (torch clone), 2^26 float32", "-", f"{copy / 1e9:.0f} GB/s", "100%"))
    for name, ff, tf, nbytes in [
        ("a + b", lambda: fx + fy, lambda: tx + ty, 3 * 4 * n),
        ("a * 2.0", lambda: fx * 2.0, lambda: tx * 2.0, 2 * 4 * n),
        ("exp(a)", lambda: fx.exp(), lambda: tx.exp(), 2 * 4 * n),
        ("a.sum()", lambda: fx.sum(), lambda: tx.sum(), 4 * n),
    ]:
        bf = nbytes / timed(fsync, ff, 20)
        bt = nbytes / timed(tsync, tf, 20)
        rows.append((f"{name}, 2^26 float32", f"{bf / 1e9:.0f} GB/s ({bf / copy:.0%} of copy)", f"{bt / 1e9:.0f} GB/s", f"{bf / bt:.2f}"))
    m = 4096
    tA, tB = torch.randn(m, m, device="cuda"), torch.randn(1, m, device="cuda")
    fA, fB = fg.randn(m, m, device="cuda"), fg.randn(1, m, device="cuda")
    nb = 3 * 4 * m * m
    bf, bt = nb / timed(fsync, lambda: fA + fB, 20), nb / timed(tsync, lambda: tA + tB, 20)
    rows.append(("broadcast [4096,4096] + [1,4096]", f"{bf / 1e9:.0f} GB/s ({bf / copy:.0%} of copy)", f"{bt / 1e9:.0f} GB/s", f"{bf / bt:.2f}"))
    tC, fC = torch.randn(m, 1, device="cuda"), fg.randn(m, 1, device="cuda")
    bf, bt = nb / timed(fsync, lambda: fA + fC, 20), nb / timed(tsync, lambda: tA + tC, 20)
    rows.append(("broadcast [4096,4096] + [4096,1]", f"{bf / 1e9:.0f} GB/s ({bf / copy:.0%} of copy)", f"{bt / 1e9:.0f} GB/s", f"{bf / bt:.2f}"))
    tT, fT = tA.t(), fA.t()
    bf, bt = nb / timed(fsync, lambda: fA + fT, 20), nb / timed(tsync, lambda: tA + tT, 20)
    rows.append(("transposed [4096,4096] + its .t()", f"{bf / 1e9:.0f} GB/s ({bf / copy:.0%} of copy)", f"{bt / 1e9:.0f} GB/s", f"{bf / bt:.2f}"))
    nb = 4 * m * m
    bf, bt = nb / timed(fsync, lambda: fA.sum(1), 20), nb / timed(tsync, lambda: tA.sum(1), 20)
    rows.append(("row sum [4096,4096].sum(1)", f"{bf / 1e9:.0f} GB/s", f"{bt / 1e9:.0f} GB/s", f"{bf / bt:.2f}"))
    for s in (1024, 4096, 8192):
        ta, tb = torch.randn(s, s, device="cuda"), torch.randn(s, s, device="cuda")
        fa, fb = fg.randn(s, s, device="cuda"), fg.randn(s, s, device="cuda")
        flops = 2 * s ** 3
        tf_, tt_ = flops / timed(fsync, lambda: fa @ fb, 5), flops / timed(tsync, lambda: ta @ tb, 5)
        rows.append((f"matmul {s}x{s} float32", f"{tf_ / 1e12:.1f} TFLOP/s", f"{tt_ / 1e12:.1f} TFLOP/s", f"{tf_ / tt_:.2f}"))
    for dt in ("bfloat16", "float16"):
        s = 8192
        ta = torch.randn(s, s, device="cuda").to(getattr(torch, dt))
        fa = fg.randn(s, s, device="cuda").to(getattr(fg, dt))
        flops = 2 * s ** 3
        tf_, tt_ = flops / timed(fsync, lambda: fa @ fa, 5), flops / timed(tsync, lambda: ta @ ta, 5)
        rows.append((f"matmul {s}x{s} {dt}", f"{tf_ / 1e12:.1f} TFLOP/s", f"{tt_ / 1e12:.1f} TFLOP/s", f"{tf_ / tt_:.2f}"))
    # Ops by time (ms per call): indexing, scans, random numbers, optimizer steps.
    ti = torch.randint(0, m, (m, m), device="cuda")
    fi = fg.from_numpy(ti.cpu().numpy()).to("cuda")
    tv, fv = torch.randint(0, m, (m,), device="cuda"), None
    fv = fg.from_numpy(tv.cpu().numpy()).to("cuda")
    tmask, fmask = tA > 0, fA > 0
    tAg, fAg = tA.detach().requires_grad_(), fA.detach().requires_grad_()
    tp = [torch.randn(1 << 22, device="cuda", requires_grad=True) for _ in range(4)]
    fp = [fg.randn(1 << 22, device="cuda", requires_grad=True) for _ in range(4)]
    for q in tp + fp:
        q.grad = q.detach() * 0.01
    tsgd, fsgd = torch.optim.SGD(tp, lr=0.1, momentum=0.9), fg.optim.SGD(fp, lr=0.1, momentum=0.9)
    tadam, fadam = torch.optim.Adam(tp, lr=1e-3), fg.optim.Adam(fp, lr=1e-3)
    for name, ff, tf in [
        ("gather [4096,4096] dim 1", lambda: fA.gather(1, fi), lambda: tA.gather(1, ti)),
        ("scatter_add [4096,4096] dim 1", lambda: fA.scatter_add(1, fi, fA), lambda: tA.scatter_add(1, ti, tA)),
        ("x[:, idx] 4096 columns", lambda: fA[:, fv], lambda: tA[:, tv]),
        ("x[mask] (half true)", lambda: fA[fmask], lambda: tA[tmask]),
        ("nonzero [4096,4096] (half true)", lambda: fmask.nonzero(), lambda: tmask.nonzero()),
        ("x[mask].sum().backward()", lambda: fAg[fmask].sum().backward(), lambda: tAg[tmask].sum().backward()),
        ("index_put accumulate, 4096 rows", lambda: fA.index_put((fv,), fA, accumulate=True),
         lambda: tA.index_put((tv,), tA, accumulate=True)),
        ("cumsum [4096,4096] dim 1", lambda: fA.cumsum(1), lambda: tA.cumsum(1)),
        ("flip [4096,4096] dim 1", lambda: fA.flip(1), lambda: tA.flip(1)),
        ("randn 2^24", lambda: fg.randn(1 << 24, device="cuda"), lambda: torch.randn(1 << 24, device="cuda")),
        ("randint 2^24", lambda: fg.randint(0, 100, (1 << 24,), device="cuda"), lambda: torch.randint(0, 100, (1 << 24,), device="cuda")),
        ("SGD momentum step, 4 x 2^22 params", fsgd.step, tsgd.step),
        ("Adam step, 4 x 2^22 params", fadam.step, tadam.step),
    ]:
        tf_, tt_ = timed(fsync, ff, 5), timed(tsync, tf, 5)
        rows.append((name, f"{tf_ * 1e3:.3f} ms", f"{tt_ * 1e3:.3f} ms", f"{tf_ / tt_:.2f} (time)"))
    fs, ts = fg.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    lf, lt = timed(fsync, lambda: fs + fs, 2000), timed(tsync, lambda: ts + ts, 2000)
    rows.append(("small op latency (64x64 add)", f"{lf * 1e6:.1f} us", f"{lt * 1e6:.1f} us", f"{lf / lt:.2f}"))
    head = ("workload", "ferrograd", "torch", "ratio (fg/torch speed; latency: time)")
    print(f"GPU: {fg.cuda.get_device_name()}, torch {torch.__version__}")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        for r in rows:
            print("  ".join(f"{c:<40}" for c in r))


if __name__ == "__main__":
    main()
