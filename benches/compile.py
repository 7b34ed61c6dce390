#!/usr/bin/env python3
"""ferrograd.compile against eager ferrograd, eager torch and torch.compile, side by side (issue #31).

Workloads (forward + backward, steady state after warm-up, median of --repeat calls):
  chain   ((x*w + 0.5).tanh() * x).sum() over 4M float32 elements
  block   LayerNorm + GELU + residual, 4096 x 1024
  gpt     a GPT training step (4 layers, 4 heads, 128-dim, block 64, batch 16) without the optimizer

For each compiled variant the first call's time (the compile latency, cold) is reported too. torch's
inductor backend needs a C++ compiler and takes minutes per workload on a CPU, so it runs only with
--torch-compile (otherwise torch.compile runs with backend="aot_eager", which captures but does not
generate code). --quick shrinks every size by 64x for a smoke run. This is a benchmark, never a test.

    python benches/compile.py --quick
    python benches/compile.py --torch-compile --repeat 15 --json compile.json
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))


def chain_workload(lib, scale):
    n = 4_000_000 // scale
    x = lib.randn(n, requires_grad=True)
    w = lib.randn(n, requires_grad=True)

    def fn(x, w):
        return ((x * w + 0.5).tanh() * x).sum()

    def step(f):
        x.grad = w.grad = None
        f(x, w).backward()
    return fn, step


def block_workload(lib, scale):
    rows = 4096 // scale
    ln = lib.nn.LayerNorm(1024)
    x = lib.randn(rows, 1024, requires_grad=True)

    def fn(x):
        return x + lib.nn.functional.gelu(ln(x))

    def step(f):
        x.grad = None
        f(x).sum().backward()
    return fn, step


def gpt_workload(lib, scale):
    nn = lib.nn
    F = lib.nn.functional
    d, heads, block, batch, vocab = 128, 4, 64, max(16 // scale, 1), 65

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.attn(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, c // heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.blocks = nn.ModuleList([Block() for _ in range(4)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx, targets):
            pos = lib.arange(0, idx.shape[1])
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, vocab), targets.view(-1))

    model = GPT()
    idx = lib.randint(0, vocab, (batch, block))
    tgt = lib.randint(0, vocab, (batch, block))

    def step(f):
        model.zero_grad()
        f(idx, tgt).backward()
    return model, step


WORKLOADS = {"chain": chain_workload, "block": block_workload, "gpt": gpt_workload}


def measure(step, f, repeat):
    t0 = time.perf_counter()
    step(f)
    first = time.perf_counter() - t0
    step(f)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step(f)
        times.append(time.perf_counter() - t0)
    return first, statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="chain,block,gpt")
    ap.add_argument("--torch-compile", action="store_true", help="use inductor (minutes per workload)")
    ap.add_argument("--json")
    args = ap.parse_args()
    import ferrograd
    import torch

    scale = 64 if args.quick else 1
    tbackend = "inductor" if args.torch_compile else "aot_eager"
    rows = []
    for name in args.only.split(","):
        res = {}
        for label, lib, compiled in (("ferrograd eager", ferrograd, False), ("ferrograd.compile", ferrograd, True),
                                     ("torch eager", torch, False), (f"torch.compile[{tbackend}]", torch, True)):
            lib.manual_seed(0)
            fn, step = WORKLOADS[name](lib, scale)
            f = fn
            if compiled:
                f = lib.compile(fn, backend=tbackend) if lib is torch else lib.compile(fn)
            try:
                res[label] = measure(step, f, args.repeat)
            except Exception as e:  # a benchmark reports, it does not stop
                res[label] = (float("nan"), float("nan"))
                print(f"{name} {label}: {type(e).__name__}: {e}", file=sys.stderr)
        base = res["torch eager"][1]
        for label, (first, med) in res.items():
            rows.append({"workload": name, "variant": label, "first_call_s": first, "median_s": med,
                         "vs_torch_eager": med / base})
            print(f"{name:6} {label:28} first {first * 1e3:10.2f} ms   steady {med * 1e3:9.3f} ms   "
                  f"x{med / base:5.2f} of torch eager")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
