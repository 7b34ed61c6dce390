#!/usr/bin/env python3
"""W5's backward at a given thread count, by engine mode: "auto" (one node at a time with two
threads or fewer, where a matrix product's two gradients run at once; side by side on rayon with
more), "always" (side by side) and "off" (one at a time), alternated in one process. A benchmark,
not a test.

    python benches/w5_backward_modes.py THREADS
"""
import os
import sys
import time

import ferrograd as fg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import Env, w5_forward  # noqa: E402

fg.set_num_threads(int(sys.argv[1]))
fg.manual_seed(0)
forward = w5_forward(Env(fg, "cpu"))


def step():
    t0 = time.perf_counter()
    total = forward()
    t = time.perf_counter()
    total.backward()
    t2 = time.perf_counter()
    return t2 - t, t2 - t0


for _ in range(10):
    step()
res = {"auto": [], "always": [], "off": []}
for _ in range(15):
    for mode in res:
        fg._C._set_parallel_backward(mode)
        for _ in range(3):
            res[mode].append(step())
for mode, v in res.items():
    b = sorted(x[0] for x in v)
    s = sorted(x[1] for x in v)
    print(f"threads {sys.argv[1]} {mode}: backward {b[len(b) // 2] * 1e3:.2f} ms, step {s[len(s) // 2] * 1e3:.2f} ms")
