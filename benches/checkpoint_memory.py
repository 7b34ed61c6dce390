"""Activation checkpointing: peak memory and time of a 12-layer MLP forward+backward, with and without
`utils.checkpoint`, ferrograd next to torch (a benchmark, not a test; figures in docs/performance.md).

Each configuration runs in a fresh subprocess, so peak resident memory (ru_maxrss) belongs to it alone:
after one warm-up pass, the peak is reset (/proc/self/clear_refs) and the figure is the peak during
one forward+backward minus the resident memory just before it (model, input, library and allocator
pools already there). The children run with glibc's mmap threshold fixed at 128 KB and mimalloc's
purge delay at 0, so freed activations leave the resident set at once and the peak is the live peak. Time is the median of --repeat forward+backward passes.

    python benches/checkpoint_memory.py [--width 1024] [--batch 512] [--layers 12] [--segments 4]
"""
import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
lib_name, mode, width, batch, layers, segments, repeat = sys.argv[1:]
width, batch, layers, segments, repeat = int(width), int(batch), int(layers), int(segments), int(repeat)
if lib_name == "torch":
    import torch as L
    L.set_num_threads(2)
else:
    import ferrograd as L
from importlib import import_module
ckpt = import_module(L.__name__ + ".utils.checkpoint")
L.manual_seed(0)
blocks = [L.nn.Sequential(L.nn.Linear(width, width), L.nn.ReLU()) for _ in range(layers)]
model = L.nn.Sequential(*blocks)
x = L.randn(batch, width, requires_grad=True)

def step():
    if mode == "plain":
        y = model(x)
    else:
        y = ckpt.checkpoint_sequential(model, segments, x, use_reentrant=False)
    y.sum().backward()
    for p in model.parameters():
        p.grad = None
    x.grad = None

def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])

step()  # warm-up: lazy initialisation and allocator pools are not the checkpoint's business
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current resident size
before = status_kb("VmRSS")
step()
peak = status_kb("VmHWM")
times = []
for _ in range(repeat):
    t0 = time.perf_counter(); step(); times.append(time.perf_counter() - t0)
print(json.dumps({"peak_mb": (peak - before) / 1024, "ms": statistics.median(times) * 1e3}))
"""


def run(lib, mode, args):
    # Allocators return freed blocks to the OS at once, so resident memory follows live memory:
    # glibc (torch) maps large blocks individually, mimalloc (ferrograd) purges without delay.
    env = dict(os.environ, FERROGRAD_NUM_THREADS="2", OMP_NUM_THREADS="2", MALLOC_MMAP_THRESHOLD_="131072",
               MIMALLOC_PURGE_DELAY="0")
    out = subprocess.run([sys.executable, "-c", CHILD, lib, mode, str(args.width), str(args.batch), str(args.layers),
                          str(args.segments), str(args.repeat)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{lib}/{mode} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--segments", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = {}
    for mode in ("plain", "checkpoint"):
        for lib in ("torch", "ferrograd"):
            rows[(lib, mode)] = run(lib, mode, args)
    act = args.batch * args.width * 4 / 2**20
    print(f"12-layer MLP check: {args.layers} x (Linear {args.width} + ReLU), batch {args.batch}, float32; "
          f"one activation = {act:.1f} MB; checkpoint_sequential with {args.segments} segments")
    print("| run | torch peak MB | ferrograd peak MB | torch ms | ferrograd ms | time ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for mode in ("plain", "checkpoint"):
        t, f = rows[("torch", mode)], rows[("ferrograd", mode)]
        print(f"| {mode} | {t['peak_mb']:.0f} | {f['peak_mb']:.0f} | {t['ms']:.1f} | {f['ms']:.1f} | {f['ms'] / t['ms']:.2f} |")


if __name__ == "__main__":
    main()
