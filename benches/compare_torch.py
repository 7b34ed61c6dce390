#!/usr/bin/env python3
"""Side-by-side benchmark of ferrograd against torch (workloads W1-W9 of BENCHMARKS.md).

Each workload is written once, against the torch API, as a function of the library module
(``lib``). Both libraries run in the same process, interleaved (torch, ferrograd, ferrograd, torch,
...), after a warm-up; the table reports the median time per call and the ratio ferrograd / torch
(below 1 means ferrograd is faster). W6 (tape memory) runs each library in a fresh subprocess.

    python benches/compare_torch.py                     # all workloads, CPU
    python benches/compare_torch.py --only W1,W3 --repeat 21 --threads 2
    python benches/compare_torch.py --markdown --json bench.json
    python benches/compare_torch.py --device cuda

A workload that fails on one library (missing API, error) is reported as
``n/a (<ExceptionType>: <message>)`` and the run goes on. This is a benchmark, never a test.
"""

import argparse
import gc
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

# --------------------------------------------------------------------------------------------
# Helpers shared by the workloads. They only call the torch API on ``lib``.
# --------------------------------------------------------------------------------------------


class MissingAPI(Exception):
    """The library lacks an attribute the workload needs (reported as ``n/a (missing: ...)``)."""


def need(lib, dotted):
    """``need(lib, "autograd.Function")`` -> lib.autograd.Function, or MissingAPI."""
    obj = lib
    for part in dotted.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise MissingAPI(dotted) from None
    return obj


class Env:
    """A library module plus the device the tensors go to."""

    def __init__(self, lib, device):
        self.lib = lib
        self.device = device
        # Pass device= only when it is not the default, so a CPU-only library needs no device kwarg.
        self.kw = {} if device == "cpu" else {"device": device}

    def randn(self, *shape, scale=None, requires_grad=False):
        t = self.lib.randn(*shape, **self.kw)
        if scale is not None:
            t = t * scale
        return t.requires_grad_() if requires_grad else t

    def scalar(self, value, requires_grad=False):
        return self.lib.tensor(value, requires_grad=requires_grad, **self.kw)


# --------------------------------------------------------------------------------------------
# The workloads. Each takes an Env, does its setup (not timed) and returns the step to time.
# --------------------------------------------------------------------------------------------


def w1_scalar_chain(env):
    x = env.scalar(0.5, requires_grad=True)

    def step():
        x.grad = None
        y = x
        for _ in range(3000):  # 3 ops per iteration: 9,000 ops
            y = (y * 1.0001 + 0.001).tanh()
        y.backward()

    return step


def w2_mlp_step(env):
    lib = env.lib
    cross_entropy = need(lib, "nn.functional.cross_entropy")
    x = env.randn(64, 784)
    target = lib.randint(0, 10, (64,), **env.kw)
    params = [
        env.randn(784, 256, scale=784**-0.5, requires_grad=True),
        env.randn(256, scale=0.01, requires_grad=True),
        env.randn(256, 10, scale=256**-0.5, requires_grad=True),
        env.randn(10, scale=0.01, requires_grad=True),
    ]
    w1, b1, w2, b2 = params
    lr = 0.01

    def step():
        logits = (x @ w1 + b1).relu() @ w2 + b2
        loss = cross_entropy(logits, target)
        for p in params:
            p.grad = None
        loss.backward()
        with lib.no_grad():
            for p in params:
                p -= lr * p.grad

    return step


def w3_matmul(env):
    a = env.randn(1024, 1024, requires_grad=True)
    b = env.randn(1024, 1024, requires_grad=True)

    def step():
        a.grad = None
        b.grad = None
        (a @ b).sum().backward()

    return step


def w4_elementwise(env):
    n = 4 * 1024 * 1024
    x = env.randn(n, requires_grad=True)
    w = env.randn(n, requires_grad=True)

    def step():
        x.grad = None
        w.grad = None
        ((x * w + 0.5).tanh() * x).sum().backward()

    return step


def w5_forward(env):
    """W5's forward: a function returning the summed output (benches/w5_backward_modes.py times
    its backward apart)."""
    inputs = [env.randn(256, 256) for _ in range(16)]
    weights = [[env.randn(256, 256, scale=256**-0.5, requires_grad=True) for _ in range(4)]
               for _ in range(16)]

    def forward():
        total = None
        for x, ws in zip(inputs, weights):
            h = x
            for w in ws:
                w.grad = None
                h = (h @ w).tanh()
            total = h.sum() if total is None else total + h.sum()
        return total

    return forward


def w5_branches(env):
    forward = w5_forward(env)

    def step():
        forward().backward()

    return step


def w7_custom_function(env):
    Function = need(env.lib, "autograd.Function")

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    x = env.scalar(1.0, requires_grad=True)  # stays 1.0 forward (the gradient overflows; timing only)

    def step():
        x.grad = None
        y = x
        for _ in range(2000):
            y = Square.apply(y)
        y.backward()

    return step


def w8_hvp(env):
    grad = need(env.lib, "autograd.grad")
    n = 512
    W = env.randn(n, n, scale=n**-0.5)
    x = env.randn(n, requires_grad=True)
    v = env.randn(n)

    def step():
        y = ((W @ x).tanh() ** 2).sum()
        (g,) = grad(y, x, create_graph=True)
        (hv,) = grad(g @ v, x)
        return hv

    return step


def w9_deep_mlp(env):
    x = env.randn(32, 512)
    layers = [(env.randn(512, 512, scale=512**-0.5, requires_grad=True),
               env.randn(512, scale=0.01, requires_grad=True)) for _ in range(12)]

    def step():
        h = x
        for w, b in layers:
            w.grad = None
            b.grad = None
            h = (h @ w + b).relu()
        h.sum().backward()

    return step


# W6 runs in a child process per library (see w6_child); its rows have other units than ms.
W6_NODES = 300_000


def w6_child(lib, device, threads):
    """Build a 300k-node scalar chain; return resident bytes per node and backward ns per node."""
    set_threads(lib, threads)
    env = Env(lib, device)
    page = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * page

    def chain(x, n):
        y = x
        for _ in range(n // 3):  # *c, +c, tanh: 3 nodes per iteration
            y = (y * 1.0001 + 0.001).tanh()
        return y

    sync = synchronizer(lib, device)
    # Warm up lazily initialised state (dispatch tables, thread pools), without pre-growing the
    # heap: a big warm-up graph would leave freed memory that the measured graph reuses.
    for _ in range(3):
        x = env.scalar(0.5, requires_grad=True)
        chain(x, 3000).backward()
    del x
    sync()
    gc.collect()
    gc.disable()
    x = env.scalar(0.5, requires_grad=True)
    before = rss()
    t0 = time.perf_counter_ns()
    y = chain(x, W6_NODES)
    sync()
    t_build = time.perf_counter_ns() - t0
    after = rss()
    t0 = time.perf_counter_ns()
    y.backward()
    sync()
    t_backward = time.perf_counter_ns() - t0
    t0 = time.perf_counter_ns()
    del y
    t_release = time.perf_counter_ns() - t0
    gc.enable()
    return {
        "bytes_per_node": (after - before) / W6_NODES,
        "build_ns_per_node": t_build / W6_NODES,
        "backward_ns_per_node": t_backward / W6_NODES,
        "release_ns_per_node": t_release / W6_NODES,
    }


# id -> (description, setup function, {derived metric name: function of ms per call})
WORKLOADS = {
    "W1": ("chain of 9,000 scalar ops (*c, +c, tanh) + backward", w1_scalar_chain,
           {"us/op": lambda ms: ms * 1e3 / 9000}),
    "W2": ("MLP 784-256-10, batch 64, cross_entropy, backward, SGD", w2_mlp_step, {}),
    "W3": ("1024x1024 @ 1024x1024, .sum().backward()", w3_matmul,
           {"GFLOP/s": lambda ms: 3 * 2 * 1024**3 / (ms * 1e6)}),
    "W4": ("4M elements ((x*w + 0.5).tanh() * x).sum().backward()", w4_elementwise, {}),
    "W5": ("16 branches x 4 x (256^2 matmul -> tanh), summed, backward", w5_branches, {}),
    "W6": ("300k-node scalar chain", None, {}),
    "W7": ("2,000 nested Python autograd.Function (square) + backward", w7_custom_function,
           {"us/call": lambda ms: ms * 1e3 / 2000}),
    "W8": ("Hessian-vector product, 512, double backward", w8_hvp, {}),
    "W9": ("12-layer 512-wide ReLU MLP, batch 32, fwd+bwd", w9_deep_mlp, {}),
}

# --------------------------------------------------------------------------------------------
# Running and timing
# --------------------------------------------------------------------------------------------


def set_threads(lib, threads):
    if threads:
        fn = getattr(lib, "set_num_threads", None)
        if fn is not None:
            fn(threads)


def synchronizer(lib, device):
    if device == "cpu":
        return lambda: None
    return need(lib, "cuda.synchronize")


def short_error(exc, limit=70):
    if isinstance(exc, MissingAPI):
        return f"missing: {exc}"
    msg = " ".join(str(exc).split())
    if len(msg) > limit:
        msg = msg[: limit - 3] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


class Runner:
    """One library's instance of one workload: its step function, or the error that stopped it."""

    def __init__(self, lib, setup, device):
        self.error = None
        self.times = []  # ms per call, one entry per sample
        try:
            self.sync = synchronizer(lib, device)
            self.step = setup(Env(lib, device))
        except Exception as exc:  # noqa: BLE001 - any failure becomes an n/a cell
            self.error = exc

    def run(self, calls):
        """Time ``calls`` consecutive calls; returns ms per call (None after a failure)."""
        if self.error is not None:
            return None
        gc.collect()
        try:
            self.sync()
            t0 = time.perf_counter()
            for _ in range(calls):
                self.step()
            self.sync()
            dt = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001
            self.error = exc
            self.step = None
            return None
        return dt * 1e3 / calls


def bench_workload(wid, libs, args, workloads=None):
    """Warm up, calibrate, then alternate the libraries; returns a result dict."""
    desc, setup, derived = (workloads or WORKLOADS)[wid]
    runners = {name: Runner(lib, setup, args.device) for name, lib in libs.items()}
    # Warm-up; also measures one call to pick how many calls make a sample.
    one_call = []
    for _ in range(args.warmup):
        for r in runners.values():
            ms = r.run(1)
            if ms is not None:
                one_call.append(ms)
    calls = 1
    if one_call:
        fastest = min(one_call)
        calls = max(1, min(1000, math.ceil(args.min_sample_ms / max(fastest, 1e-6))))
    order = list(runners.items())
    for rep in range(args.repeat):
        for _, r in (order if rep % 2 == 0 else order[::-1]):
            ms = r.run(calls)
            if ms is not None:
                r.times.append(ms)
    result = {"id": wid, "workload": desc, "unit": "ms", "calls_per_sample": calls}
    for name, r in runners.items():
        if r.error is not None:
            result[name] = None
            result[name + "_error"] = short_error(r.error)
        else:
            result[name] = statistics.median(r.times) if r.times else None
            result[name + "_samples"] = r.times
    result["ratio"] = ratio(result.get("ferrograd"), result.get("torch"))
    result["derived"] = {
        f"{name} {metric}": fn(result[name])
        for metric, fn in derived.items() for name in runners if result.get(name)
    }
    return [result]


def ratio(a, b):
    return a / b if a is not None and b else None


def bench_w6(libs, args):
    """W6: each library in a fresh subprocess, alternating; median over the runs."""
    runs = {name: [] for name in libs}
    errors = {}
    order = list(libs)
    for rep in range(max(1, min(args.repeat, args.w6_runs))):
        for name in (order if rep % 2 == 0 else order[::-1]):
            if name in errors:
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--_w6-child", module_names(args)[name],
                   "--device", args.device]
            if args.threads:
                cmd += ["--threads", str(args.threads)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            lines = proc.stdout.strip().splitlines()
            try:
                data = json.loads(lines[-1])
            except (IndexError, ValueError):
                data = {"error": (proc.stderr.strip().splitlines() or ["child failed"])[-1]}
            if "error" in data:
                errors[name] = data["error"]
            else:
                runs[name].append(data)
    rows = []
    for key, desc, unit in (("bytes_per_node", "300k-node scalar chain: resident bytes/node", "B"),
                            ("backward_ns_per_node", "300k-node scalar chain: backward ns/node", "ns")):
        row = {"id": "W6", "workload": desc, "unit": unit}
        for name in libs:
            if name in errors:
                row[name], row[name + "_error"] = None, errors[name]
            else:
                row[name] = statistics.median(r[key] for r in runs[name]) if runs[name] else None
                row[name + "_samples"] = [r[key] for r in runs[name]]
        row["ratio"] = ratio(row.get("ferrograd"), row.get("torch"))
        row["derived"] = {}
        rows.append(row)
    rows[0]["derived"] = {
        f"{name} {k}": statistics.median(r[k] for r in runs[name])
        for name in libs if runs[name] for k in ("build_ns_per_node", "release_ns_per_node")
    }
    return rows


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def fmt_value(row, name):
    v = row.get(name)
    if v is None:
        return f"n/a ({row.get(name + '_error', 'no result')})"
    if row["unit"] == "ms":
        return f"{v:.4g}" if v < 1000 else f"{v:.0f}"
    return f"{v:.0f} {row['unit']}"


def fmt_ratio(row):
    return "n/a" if row.get("ratio") is None else f"{row['ratio']:.2f}"


def table_rows(results):
    head = ["id", "workload", "torch ms", "ferrograd ms", "ratio"]
    body = [[r["id"], r["workload"], fmt_value(r, "torch"), fmt_value(r, "ferrograd"), fmt_ratio(r)]
            for r in results]
    return head, body


def print_text_table(results):
    head, body = table_rows(results)
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    right = {2, 3, 4}

    def line(cells):
        return " | ".join(c.rjust(w) if i in right else c.ljust(w)
                          for i, (c, w) in enumerate(zip(cells, widths)))

    print(line(head))
    print("-+-".join("-" * w for w in widths))
    for row in body:
        print(line(row))


def print_markdown_table(results):
    head, body = table_rows(results)
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["----", "--------", "-------:", "-----------:", "----:"]) + "|")
    for row in body:
        print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")


def print_derived(results):
    notes = [f"{r['id']} {k} = {v:.4g}" for r in results for k, v in r.get("derived", {}).items()]
    if notes:
        print("\nderived: " + "; ".join(notes))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def core_scaling(torch):
    """Speed-up of a 256^3 float32 GEMM in torch from 1 thread to 2, best of 30 each.

    On the virtual machines these figures come from, the two vCPUs are at times placed on the two
    hardware threads of one physical core: two threads then run vector code at one core's speed
    (a 2-thread GEMM takes as long as a 1-thread one), which moves every multi-threaded figure.
    The table's header reports this so a run in that state can be recognised (about 1.9 on two
    real cores, about 1.0 on one)."""
    if not hasattr(torch, "mm") or torch.get_num_threads() < 2:
        return None
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    before = torch.get_num_threads()
    best = {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            for _ in range(3):
                torch.mm(a, b)
            times = []
            for _ in range(30):
                t0 = time.perf_counter()
                torch.mm(a, b)
                times.append(time.perf_counter() - t0)
            best[n] = min(times)
    finally:
        torch.set_num_threads(before)
    return round(best[1] / best[2], 2)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def module_names(args):
    return {"torch": "torch", "ferrograd": args.ferrograd_module}


def import_libs(args):
    libs = {}
    for name, module in module_names(args).items():
        try:
            libs[name] = importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001
            sys.exit(f"compare_torch.py: cannot import {module} ({short_error(exc, 200)}); "
                     f"build it first (pip install . or ./scripts/test)")
    return libs


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="comma-separated workload ids, e.g. W1,W3 (default: all)")
    p.add_argument("--repeat", type=int, default=11, help="timed samples per library (default 11)")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls per library first (default 2)")
    p.add_argument("--min-sample-ms", type=float, default=50.0,
                   help="a sample repeats the workload until it lasts about this long (default 50)")
    p.add_argument("--threads", type=int, help="set_num_threads(N) on both libraries")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--json", metavar="PATH", help="also save the results as JSON")
    p.add_argument("--markdown", action="store_true", help="print the table as markdown (for docs/performance.md)")
    p.add_argument("--w6-runs", type=int, default=3, help="subprocess runs per library for W6 (default 3)")
    p.add_argument("--ferrograd-module", default="ferrograd",
                   help="module to benchmark in place of ferrograd (e.g. torch, to test this script)")
    p.add_argument("--_w6-child", dest="w6_child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeat < 1 or args.warmup < 1:
        p.error("--repeat and --warmup must be at least 1")
    return args


def main(argv=None, workloads=None):
    """Run the workloads of ``workloads`` (default: W1-W9 above; benches/models.py passes its own)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    workloads = WORKLOADS if workloads is None else workloads

    if args.w6_child:  # child process of bench_w6: one library, one JSON line on stdout
        try:
            lib = importlib.import_module(args.w6_child)
            out = w6_child(lib, args.device, args.threads)
        except Exception as exc:  # noqa: BLE001
            out = {"error": short_error(exc)}
        print(json.dumps(out))
        return 0

    only = [w.strip().upper() for w in args.only.split(",")] if args.only else list(workloads)
    unknown = [w for w in only if w not in workloads]
    if unknown:
        sys.exit(f"compare_torch.py: unknown workload(s) {', '.join(unknown)}; "
                 f"known: {', '.join(workloads)}")

    libs = import_libs(args)
    if args.device == "cuda" and not libs["torch"].cuda.is_available():
        sys.exit("compare_torch.py: --device cuda but torch.cuda.is_available() is False")
    for lib in libs.values():
        set_threads(lib, args.threads)
        if hasattr(lib, "manual_seed"):
            lib.manual_seed(0)

    env_info = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": f"{cpu_model()}, {os.cpu_count()} CPUs",
        "python": platform.python_version(),
        "torch": libs["torch"].__version__,
        "ferrograd": getattr(libs["ferrograd"], "__version__", "?")
        + ("" if args.ferrograd_module == "ferrograd" else f" (module {args.ferrograd_module})"),
        "torch_threads": libs["torch"].get_num_threads(),
        "device": args.device,
        "repeat": args.repeat,
    }
    if args.device == "cpu":
        env_info["two_thread_gemm_speedup"] = core_scaling(libs["torch"])
    print("# " + ", ".join(f"{k}: {v}" for k, v in env_info.items()), flush=True)

    results = []
    for wid in only:
        t0 = time.perf_counter()
        rows = bench_w6(libs, args) if wid == "W6" else bench_workload(wid, libs, args, workloads)
        results.extend(rows)
        cells = "; ".join(f"torch {fmt_value(r, 'torch')}, ferrograd {fmt_value(r, 'ferrograd')}"
                          for r in rows)
        print(f"# {wid} done in {time.perf_counter() - t0:.1f} s: {cells}", file=sys.stderr, flush=True)

    print()
    if args.markdown:
        print_markdown_table(results)
    else:
        print_text_table(results)
    print_derived(results)

    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"env": env_info, "results": results}, fh, indent=2)
        print(f"\nsaved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
