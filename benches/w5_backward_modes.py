#!/usr/bin/env python3
# usage: python benches/w5_backward_modes.py THREADS   (a benchmark, not a test)
# W5's backward at a given thread count: sequential (auto at <=2 threads; with both grads of
# each product computed at once) vs parallel nodes ("always"), in-process A/B.
import sys, time, ferrograd as fg
fg.set_num_threads(int(sys.argv[1]))
fg.manual_seed(0)
inputs=[fg.randn(256,256) for _ in range(16)]
weights=[[(fg.randn(256,256)*256**-0.5).requires_grad_() for _ in range(4)] for _ in range(16)]
def step():
    total=None
    t0=time.perf_counter()
    for x,ws in zip(inputs,weights):
        h=x
        for w in ws:
            w.grad=None
            h=(h@w).tanh()
        total=h.sum() if total is None else total+h.sum()
    t=time.perf_counter(); total.backward(); t2=time.perf_counter()
    return t2-t, t2-t0
for _ in range(10): step()
res={"auto":[], "always":[], "off":[]}
for r in range(15):
    for mode in res:
        fg._C._set_parallel_backward(mode)
        for _ in range(3): res[mode].append(step())
for k,v in res.items():
    b=sorted(x[0] for x in v); s=sorted(x[1] for x in v)
    print(f"threads {sys.argv[1]} {k}: backward {b[len(b)//2]*1e3:.2f} ms, step {s[len(s)//2]*1e3:.2f} ms")
