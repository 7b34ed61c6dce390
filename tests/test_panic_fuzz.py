"""No Rust panic reaches Python: every public ferrograd function, nn.functional form and
Tensor method that can be enumerated is called, in a subprocess, with awkward inputs (empty, zero-size,
flipped and transposed views, NaN, mixed dtypes, huge and negative numbers). Any exception is fine; a
PanicException or a signal fails the test, naming the call.

Fast by default (ten calls per function, drawn by its name from the one- and two-argument lists);
FERROGRAD_FUZZ_LONG=1 makes every call of those lists and of three-argument ones (many minutes)."""

import os
import subprocess
import sys

import pytest

from conftest import AGAINST_TORCH

LONG = os.environ.get("FERROGRAD_FUZZ_LONG") == "1"

SCRIPT = r'''
import inspect, math, os, sys, warnings, zlib
warnings.simplefilter("ignore")
import ferrograd as fg
import ferrograd.nn.functional as F

LONG = os.environ.get("FERROGRAD_FUZZ_LONG") == "1"
part, parts = int(sys.argv[1]), int(sys.argv[2])
FAST_CALLS = 10

# names that change process-wide state, block, spawn, touch files or the network, or are slow by design
SKIP = set("""
set_default_dtype set_default_device set_num_threads set_num_interop_threads manual_seed seed set_rng_state
set_printoptions set_grad_enabled set_anomaly_enabled use_deterministic_algorithms set_flush_denormal
set_float32_matmul_precision save load compile jit cuda distributed multiprocessing hub profiler
set_deterministic_debug_mode set_warn_always initial_seed get_rng_state fork_rng autocast
register_hook register_post_accumulate_grad_hook share_memory_ pin_memory
""".split())


def inputs():
    nan = float("nan")
    base = [
        fg.ones(0),
        fg.ones(2, 0, 3),
        fg.ones(0, 3, 0, 2),
        fg.arange(6.0).view(2, 3).flip(1),
        fg.arange(12.0).view(3, 4).t(),
        fg.arange(24.0).view(2, 3, 4)[:, ::2, 1:],
        fg.tensor([nan, 1.0, -math.inf, 0.0]),
        fg.tensor(nan),
        fg.tensor([[1, -2], [3, 0]], dtype=fg.int8),
        fg.tensor([True, False]),
        fg.ones(1, 1, 3, 3, dtype=fg.float16),
        fg.ones(2, 1, 4, dtype=fg.bfloat16),
        fg.ones(1, 1).expand(3, 2),
    ]
    return base


NUMBERS = [0, -1, 2, 2 ** 62, -(2 ** 62), 1.5, float("nan"), (0, 0), (2 ** 40,), (), None, True]


def functions():
    seen = set()
    out = []
    for mod, prefix in ((fg, "fg"), (F, "F"), (fg.linalg, "linalg"), (fg.special, "special")):
        for n in sorted(dir(mod)):
            if n.startswith("_") or n in SKIP:
                continue
            f = getattr(mod, n, None)
            if not callable(f) or isinstance(f, type) or inspect.ismodule(f):
                continue
            key = (prefix, n)
            if key in seen:
                continue
            seen.add(key)
            out.append((f"{prefix}.{n}", f))
    for n in sorted(dir(fg.Tensor)):
        if n.startswith("_") or n in SKIP:
            continue
        out.append((f"Tensor.{n}", n))
    return out


def call(f, args):
    if isinstance(f, str):
        target = args[0]
        if not isinstance(target, fg.Tensor):
            return
        m = getattr(target.clone() if f.endswith("_") else target, f, None)
        if not callable(m):
            return
        return m(*args[1:])
    return f(*args)


def arg_lists(xs):
    one = [(x,) for x in xs]
    two = [(x, v) for x in xs for v in NUMBERS[:6 if not LONG else None]]
    pairs = [(a, b) for a, b in zip(xs, xs[1:] + xs[:1])]
    if LONG:
        pairs = [(a, b) for a in xs for b in xs]
        three = [(a, v, w) for a in xs for v in NUMBERS for w in NUMBERS[:6]]
        return one + two + pairs + three
    return one + two + pairs


class Slow(BaseException):
    pass


def _alarm(signum, frame):
    raise Slow()


def describe(a):
    return tuple(type(v).__name__ if not hasattr(v, "shape") else (tuple(v.shape), str(v.dtype)) for v in a)


def main():
    import signal, time
    signal.signal(signal.SIGALRM, _alarm)
    xs = inputs()
    fns = functions()[part::parts]
    args = arg_lists(xs)
    panics, slow = [], []
    for name, f in fns:
        sys.stderr.write(name + "\n")
        sys.stderr.flush()
        mine = args
        if not LONG:  # a fixed sample per function (by its name): every input is used, over all functions
            h = zlib.crc32(name.encode())
            mine = [args[(h + k * 7919) % len(args)] for k in range(FAST_CALLS)]
        for a in mine:
            t0 = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, 2.0)  # Python-level loops that a huge number makes endless
            try:
                call(f, a)
            except Slow:
                slow.append(f"{name}{describe(a)}")
            except BaseException as e:  # noqa: B036 - PanicException derives from BaseException
                if type(e).__name__ == "PanicException":
                    panics.append(f"{name}{describe(a)}: {str(e)[:200]}")
                    print("PANIC", panics[-1], flush=True)
                elif isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if time.perf_counter() - t0 > 2.5:
                slow.append(f"{name}{describe(a)} took {time.perf_counter() - t0:.1f}s")
    print("PANICS", len(panics))
    for p in panics:
        print(p)
    print("SLOW", len(slow))
    for p in slow:
        print(p)


main()
'''

PARTS = 1


@pytest.mark.skipif(AGAINST_TORCH, reason="fuzzes ferrograd's own native code")
@pytest.mark.parametrize("part", range(PARTS))
def test_no_panic_reaches_python(part, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "FERROGRAD_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(part), str(PARTS)], capture_output=True, text=True,
                       timeout=1800 if LONG else 300, env=env, cwd=tmp_path)
    last = r.stderr.strip().splitlines()[-1:] if r.stderr else []
    assert r.returncode == 0, f"the fuzz process died (rc {r.returncode}) in {last}:\n{r.stderr[-3000:]}"
    lines = r.stdout.strip().splitlines()
    head = [ln for ln in lines if ln.startswith("PANICS")]
    assert head, r.stdout[-2000:]
    assert head[0] == "PANICS 0", "\n".join(lines[:60])
