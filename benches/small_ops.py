"""Per-call time of common small operations, ferrograd against torch, in one process.

W1 measures one op chain; this lists the calls a training script makes around it (creation,
indexing, shape ops, reductions, nn.functional, a Linear layer, an optimizer step) on 4x4 inputs,
where the time is the library's overhead, not arithmetic. Each expression runs `--number` times per
sample, the best of `--repeat` samples counts; rows sorted by ratio (ferrograd / torch), slowest
first, so the calls that still cost more than torch's come at the top.

    python benches/small_ops.py [--number 3000] [--repeat 5] [--threads 2]
"""

import argparse
import timeit

import numpy as np

EXPRESSIONS = [
    "x + y", "x * 2.0", "x.sum()", "x.mean()", "x[0]", "x[1:3]", "x[:, 1]", "x.view(-1)", "x.reshape(4, 4)",
    "x.t()", "x.tolist()", "s.item()", "L.cat([x, y])", "L.stack([x, y])", "L.zeros(4, 4)", "L.randn(4, 4)",
    "L.tensor(0.5)", "L.tensor([[1.0, 2.0], [3.0, 4.0]])", "x.shape", "x @ y", "x.relu()", "x.clone()",
    "x.to(L.float64)", "x > 0", "L.where(x > 0, x, y)", "x.max()", "x.argmax()", "x.softmax(-1)",
    "F.cross_entropy(x, t)", "F.mse_loss(x, y)", "F.linear(x, y)", "lin(x)", "x.unsqueeze(0)", "x.expand(2, 4, 4)",
    "x.detach()", "x.numpy()", "L.from_numpy(a)", "x.abs()", "x.exp()", "x ** 2", "x.norm()", "x.std()",
    "x.masked_fill(x > 0, 0.0)", "x.clamp(0, 1)", "x.gather(1, t.view(4, 1))", "x.index_select(0, t)", "x.chunk(2)",
    "x.permute(1, 0)", "x.sort()", "x.topk(2)", "x.cumsum(0)", "L.arange(10)", "L.ones_like(x)", "L.full((4, 4), 2.0)",
    "x.sigmoid()", "x.tanh()", "opt.step()", "L.einsum('ij,jk->ik', x, y)", "L.bmm(b3, b3)",
]


def namespace(L):
    L.manual_seed(0)
    lin = L.nn.Linear(4, 4)
    opt = L.optim.SGD(lin.parameters(), lr=0.1)
    for p in lin.parameters():
        p.grad = L.ones_like(p)
    return dict(L=L, F=L.nn.functional, x=L.randn(4, 4), y=L.randn(4, 4), s=L.tensor(1.5), t=L.tensor([0, 1, 2, 3]),
                a=np.ones((4, 4), dtype=np.float32), b3=L.randn(2, 4, 4), lin=lin, opt=opt)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--number", type=int, default=3000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    import torch
    import ferrograd
    times = {}
    for L in (torch, ferrograd):
        L.set_num_threads(args.threads)
        g = namespace(L)
        for e in EXPRESSIONS:
            best = min(timeit.repeat(e, globals=g, number=args.number, repeat=args.repeat)) / args.number
            times.setdefault(e, {})[L.__name__] = best * 1e6
    rows = sorted(times.items(), key=lambda kv: -kv[1]["ferrograd"] / kv[1]["torch"])
    print(f"{'call':<40} {'torch us':>9} {'ferrograd us':>13} {'ratio':>6}")
    for e, r in rows:
        print(f"{e:<40} {r['torch']:9.2f} {r['ferrograd']:13.2f} {r['ferrograd'] / r['torch']:6.2f}")
    ratios = np.array([r["ferrograd"] / r["torch"] for r in times.values()])
    print(f"\n{len(ratios)} calls: median ratio {np.median(ratios):.2f}, {int((ratios > 1).sum())} slower than torch")


if __name__ == "__main__":
    main()
