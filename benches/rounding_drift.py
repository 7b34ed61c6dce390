"""Float32 rounding parity of ferrograd against torch, op by op (issue #27: "two programs drifted").

For the ops the corpus programs mlp_regression.py / mnist_cnn.py / logistic_regression.py use, the same
float32 inputs go through torch (2 threads) and ferrograd, forward and backward; a float64 torch run on the
same (upcast) inputs is the exact reference. Per output it prints:
  fg~t       max |fg - torch| in float32 ULPs of each torch element (blows up where a value is near 0)
  fg~t(s)    max |fg - torch| in "scaled ULPs": ULPs of the tensor's largest magnitude
  #differ    elements that are not bitwise equal
  fg~ex(s)   max |fg - f64 reference| in scaled ULPs;  t~ex(s): the same for torch
  bound(s)   for sums/GEMMs: eps32 * sum|terms| in scaled ULPs, one rounding of the terms' size; any
             summation order may lose up to ~log2(n) (pairwise) to n (sequential) times this
Elementwise ops (relu, silu, max_pool, the optimizer updates) have one correct rounding per step in
both libraries, so they must agree bitwise; a difference there is a different formula, not summation
order.

    PYTHONPATH=python .venv/bin/python benches/rounding_drift.py [--quick]
"""
import sys

import numpy as np
import torch

import ferrograd as fg

torch.set_num_threads(2)
RNG = np.random.default_rng(1234)
ROWS = []


def ulps(x, ref):
    """|x - ref| in ULPs of ref rounded to float32 (ref may be float64)."""
    x = np.asarray(x, np.float64)
    ref = np.asarray(ref, np.float64)
    r32 = np.abs(ref.astype(np.float32))
    ulp = np.spacing(np.maximum(r32, np.float32(np.finfo(np.float32).tiny))).astype(np.float64)
    return np.abs(x - ref) / ulp


def sulps(x, ref):
    """max |x - ref| in ULPs of the tensor's largest |ref| ("scaled ULPs": no blow-up near zero)."""
    x = np.asarray(x, np.float64)
    ref = np.asarray(ref, np.float64)
    top = np.float32(np.abs(ref).max()) if ref.size else np.float32(1)
    return float(np.abs(x - ref).max() / np.spacing(max(top, np.finfo(np.float32).tiny)))


def report(op, name, t32, f32, t64, bound=None):
    t32, f32, t64 = (np.asarray(v) for v in (t32, f32, t64))
    d = ulps(f32, t32).max()
    ndiff = int((f32 != t32).sum())
    sd, ef, et = sulps(f32, t32), sulps(f32, t64), sulps(t32, t64)
    b = "" if bound is None else f"{bound:9.1f}"
    ROWS.append((op, name, d, sd, ndiff, t32.size, ef, et, b))
    print(f"{op:34s} {name:6s} {d:9.1f} {sd:7.2f} {ndiff:6d}/{t32.size:<7d} {ef:8.2f} {et:8.2f} {b}", flush=True)


def lib_tensor(lib, a, grad=False, dtype=None):
    if lib is torch:
        t = torch.from_numpy(a.copy())
        t = t.to(dtype) if dtype is not None else t
    else:
        t = fg.from_numpy(a.copy())
    if grad:
        t.requires_grad_(True)
    return t


def run_case(op, fn, arrays, grads=(), int_arrays=None, bound_fn=None):
    """fn(lib, *tensors) -> output tensor; arrays: float32 inputs; grads: indices needing .grad."""
    int_arrays = int_arrays or []
    outs = {}
    for tag, lib, dt in (("t32", torch, None), ("f32", fg, None), ("t64", torch, torch.float64)):
        ts = [lib_tensor(lib, a, i in grads, dt) for i, a in enumerate(arrays)]
        ints = [lib_tensor(lib, a) for a in int_arrays]
        out = fn(lib, *ts, *ints)
        res = {"fwd": out.detach().numpy().astype(np.float64) if tag == "t64" else out.detach().numpy()}
        if grads:
            g = RNG_G[op] if op in RNG_G else None
            if out.numel() == 1:
                out.sum().backward()
            else:
                if g is None:
                    g = RNG_G[op] = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(np.float32)
                out.backward(lib_tensor(lib, g, dtype=dt))
            for i in grads:
                res[f"grad{i}"] = ts[i].grad.numpy()
        outs[tag] = res
    for k in outs["t32"]:
        bound = bound_fn(k) if bound_fn is not None else None
        report(op, k, outs["t32"][k], outs["f32"][k], outs["t64"][k], bound)


RNG_G = {}


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def matmul_bound(x, w):
    """max eps * (|x| @ |w|^T) in scaled ULPs of x @ w^T: one rounding's worth of the terms' size,
    the unit in which any summation order's error is measured (k terms: up to ~k times this)."""
    a = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    exact = x.astype(np.float64) @ w.astype(np.float64).T
    return float(a.max() * 2.0**-24 / np.spacing(np.float32(np.abs(exact).max())))


def section(title):
    print(f"\n== {title}")
    print(f"{'op':34s} {'output':6s} {'fg~t':>9s} {'fg~t(s)':>7s} {'#differ':>14s} {'fg~ex(s)':>8s} {'t~ex(s)':>8s} "
          f"{'bound(s)':>9s}")


def elementwise_and_losses():
    section("elementwise, pooling, losses (one rounding per element: bitwise parity expected)")
    x = randn(48, 16, 10, 10)
    run_case("relu", lambda L, a: L.nn.functional.relu(a), [x], grads=(0,))
    run_case("max_pool2d(2) 48x16x8x8", lambda L, a: L.nn.functional.max_pool2d(a, 2), [randn(48, 16, 8, 8)],
             grads=(0,))
    run_case("silu 32x16", lambda L, a: L.nn.functional.silu(a), [randn(32, 16)], grads=(0,))
    run_case("sigmoid 80", lambda L, a: L.sigmoid(a), [randn(80)], grads=(0,))
    logits = randn(48, 10, scale=2.0)
    tgt = np.random.default_rng(3).integers(0, 10, 48).astype(np.int64)
    run_case("log_softmax 48x10", lambda L, a: L.nn.functional.log_softmax(a, dim=1), [logits], grads=(0,))
    run_case("nll_loss(log_softmax) mean n=48",
             lambda L, a, t: L.nn.functional.nll_loss(L.nn.functional.log_softmax(a, dim=1), t),
             [logits], grads=(0,), int_arrays=[tgt])
    run_case("nll_loss mean n=48 (input given)", lambda L, a, t: L.nn.functional.nll_loss(a, t),
             [-np.abs(logits)], grads=(0,), int_arrays=[tgt])
    run_case("nll_loss sum n=40", lambda L, a, t: L.nn.functional.nll_loss(a, t, reduction="sum"),
             [-np.abs(logits[:40])], grads=(0,), int_arrays=[tgt[:40]])
    run_case("cross_entropy mean n=48", lambda L, a, t: L.nn.functional.cross_entropy(a, t), [logits],
             grads=(0,), int_arrays=[tgt])
    w3 = np.array([1.3, 0.7, 1.1], np.float32)
    tgt3 = tgt % 3
    run_case("cross_entropy weighted n=48 C=3",
             lambda L, a, w, t: L.nn.functional.cross_entropy(a, t, weight=w), [randn(48, 3), w3],
             grads=(0,), int_arrays=[tgt3])
    pred, y = randn(32, 1), randn(32, 1)
    run_case("mse_loss mean 32x1", lambda L, a, b: L.nn.functional.mse_loss(a, b), [pred, y], grads=(0, 1))
    run_case("mse_loss mean 24x1", lambda L, a, b: L.nn.functional.mse_loss(a, b), [pred[:24], y[:24]],
             grads=(0, 1))
    run_case("mse_loss mean 96x7", lambda L, a, b: L.nn.functional.mse_loss(a, b), [randn(96, 7), randn(96, 7)],
             grads=(0, 1))
    run_case("bce_with_logits pos_weight n=80",
             lambda L, a, b, pw: L.nn.functional.binary_cross_entropy_with_logits(a, b, pos_weight=pw),
             [randn(80), (randn(80) > 0).astype(np.float32), np.array([1.5], np.float32)], grads=(0,))


def reductions():
    section("reductions (summation order may differ; compare with 'bound')")
    for n in (24, 32, 48, 96, 1000, 100003):
        x = randn(n)
        bsum = lambda k, x=x: 2.0**-24 * np.abs(x.astype(np.float64)).sum() / np.spacing(
            np.float32(abs(x.astype(np.float64).sum()))) if k == "fwd" else None
        run_case(f"sum n={n}", lambda L, a: a.sum(), [x], grads=(0,), bound_fn=bsum)
        run_case(f"mean n={n}", lambda L, a: a.mean(), [x], grads=(0,), bound_fn=bsum)
    x = randn(48, 10)
    run_case("sum dim=1 48x10", lambda L, a: a.sum(1), [x], grads=(0,))
    run_case("mean dim=0 48x10", lambda L, a: a.mean(0), [x], grads=(0,))


def gemm_conv():
    section("linear / conv (GEMM summation order; compare with 'bound' = eps*sum|terms| in result ULPs)")
    shapes = [("mlp l1", 32, 3, 32), ("mlp l2", 32, 32, 16), ("mlp l3", 32, 16, 1), ("mnist fc1", 48, 256, 32),
              ("mnist fc2", 48, 32, 10), ("logreg", 80, 4, 1), ("big", 128, 1024, 64)]
    for name, n, k, m in shapes:
        x, w, b = randn(n, k), randn(m, k, scale=k**-0.5), randn(m, scale=0.1)
        bound = matmul_bound(x, w)
        run_case(f"linear {name} {n}x{k}->{m}", lambda L, a, w_, b_: L.nn.functional.linear(a, w_, b_), [x, w, b],
                 grads=(0, 1, 2), bound_fn=lambda k_, bound=bound: bound if k_ == "fwd" else None)
    run_case("conv2d 48x1x12x12 w8x1x3x3", lambda L, a, w_, b_: L.nn.functional.conv2d(a, w_, b_),
             [randn(48, 1, 12, 12), randn(8, 1, 3, 3, scale=1 / 3), randn(8, scale=0.1)], grads=(0, 1, 2))
    run_case("conv2d 48x8x10x10 w16x8x3x3", lambda L, a, w_, b_: L.nn.functional.conv2d(a, w_, b_),
             [randn(48, 8, 10, 10), randn(16, 8, 3, 3, scale=1 / 8.5), randn(16, scale=0.1)], grads=(0, 1, 2))


def optimizers(steps=20):
    section(f"optimizers, {steps} steps on fixed gradients (elementwise: bitwise parity expected)")
    p0 = randn(1000)
    gs = [randn(1000) for _ in range(steps)]
    cases = [
        ("SGD lr=.05 momentum=.9", lambda L, ps: L.optim.SGD(ps, lr=0.05, momentum=0.9)),
        ("SGD lr=.1 nesterov wd=1e-3", lambda L, ps: L.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                                  weight_decay=1e-3)),
        ("Adam lr=.1 wd=1e-3", lambda L, ps: L.optim.Adam(ps, lr=0.1, weight_decay=1e-3)),
        ("Adam lr=1e-3 amsgrad", lambda L, ps: L.optim.Adam(ps, lr=1e-3, amsgrad=True)),
        ("AdamW lr=1e-3", lambda L, ps: L.optim.AdamW(ps, lr=1e-3)),
        ("Adadelta lr=1", lambda L, ps: L.optim.Adadelta(ps, lr=1.0)),
        ("Adadelta lr=.7", lambda L, ps: L.optim.Adadelta(ps, lr=0.7)),
        ("RMSprop lr=1e-2", lambda L, ps: L.optim.RMSprop(ps, lr=1e-2)),
        ("Adagrad lr=1e-2", lambda L, ps: L.optim.Adagrad(ps, lr=1e-2)),
    ]
    for name, make in cases:
        res = {}
        for tag, lib, dt in (("t32", torch, None), ("f32", fg, None), ("t64", torch, torch.float64)):
            p = lib_tensor(lib, p0, grad=True, dtype=dt)
            opt = make(lib, [p])
            first = None
            for i, g in enumerate(gs):
                p.grad = lib_tensor(lib, g, dtype=dt)
                opt.step()
                if i == 0:
                    first = p.detach().numpy().copy()
            res[tag] = (first, p.detach().numpy().copy())
        report(name, "step1", res["t32"][0], res["f32"][0], res["t64"][0])
        report(name, f"step{steps}", res["t32"][1], res["f32"][1], res["t64"][1])


def primitives():
    section("pointwise primitives the optimizers are written with (100003 elements)")
    n = 100003
    a, b, c = randn(n), randn(n), np.abs(randn(n)) + np.float32(0.1)
    ops = [
        ("add(b, alpha=-0.05)", lambda L, x, y, z: x.add(y, alpha=-0.05)),
        ("addcmul(b, c, value=0.1)", lambda L, x, y, z: x.addcmul(y, z, value=0.1)),
        ("addcdiv(b, c, value=-3.3)", lambda L, x, y, z: x.addcdiv(y, z, value=-3.3)),
        ("lerp(b, 0.1)", lambda L, x, y, z: x.lerp(y, 0.1)),
        ("lerp(b, 0.9)", lambda L, x, y, z: x.lerp(y, 0.9)),
        ("sqrt(c)", lambda L, x, y, z: z.sqrt()),
        ("c / 0.7", lambda L, x, y, z: z / 0.7),
        ("exp(a)", lambda L, x, y, z: x.exp()),
        ("log(c)", lambda L, x, y, z: z.log()),
    ]
    for name, fn in ops:
        run_case(name, fn, [a, b, c])


def _fma(x, y, z):
    """float32 x*y + z with one rounding (through float64: the product is exact there)."""
    return (np.asarray(x, np.float64) * np.asarray(y, np.float64) + np.asarray(z, np.float64)).astype(np.float32)


def _tsqrt(x):
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).sqrt().numpy()


def fused_kernel_emulation(steps=20):
    """The updates of src/optim.rs (ferrograd's fused CPU kernels, what optimizer.step() runs on CPU
    float32 parameters) written in NumPy float32, once as they are and once with the fused
    multiply-adds torch's kernels use (add(alpha=) / addcmul / lerp are one rounding in torch), against
    torch.optim: the second form is bitwise torch's. sqrt is torch's own in both (see 'sqrt(c)')."""
    section(f"src/optim.rs update formulas in NumPy vs torch.optim, {steps} steps (#differ = not bitwise)")
    f = np.float32
    p0 = randn(1000)
    gs = [randn(1000) for _ in range(steps)]

    def sgd(fused, lr=0.05, mom=0.9, wd=0.0, nesterov=False):
        p, buf = p0.copy(), None
        for g in gs:
            if wd:
                g = _fma(p, f(wd), g) if fused else g + f(wd) * p
            if buf is None:
                buf = g.copy()
            else:
                buf = _fma(g, f(1), buf * f(mom)) if fused else buf * f(mom) + f(1) * g
            d = (_fma(buf, f(mom), g) if fused else g + f(mom) * buf) if nesterov else buf
            p = _fma(d, f(-lr), p) if fused else p + f(-lr) * d
        return p

    def adam(fused, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, wd=1e-3):
        p, m, v = p0.copy(), np.zeros_like(p0), np.zeros_like(p0)
        for k, g in enumerate(gs, 1):
            g = _fma(p, f(wd), g) if fused else g + f(wd) * p
            w = f(1 - b1)
            m = _fma(w, g - m, m) if fused else m + w * (g - m)
            v = _fma(f(1 - b2) * g, g, v * f(b2)) if fused else v * f(b2) + f(1 - b2) * g * g
            step, bc2 = lr / (1 - b1**k), (1 - b2**k) ** 0.5
            denom = _tsqrt(v) / f(bc2) + f(eps)
            p = p + f(-step) * m / denom
        return p

    def adagrad(fused, lr=1e-2, eps=1e-10):
        p, acc = p0.copy(), np.zeros_like(p0)
        for g in gs:
            acc = _fma(g, g, acc) if fused else acc + f(1) * g * g
            p = p + f(-lr) * g / (_tsqrt(acc) + f(eps))
        return p

    def rmsprop(fused, lr=1e-2, alpha=0.99, eps=1e-8):
        p, sq = p0.copy(), np.zeros_like(p0)
        for g in gs:
            sq = _fma(f(1 - alpha) * g, g, sq * f(alpha)) if fused else sq * f(alpha) + f(1 - alpha) * g * g
            p = p + f(-lr) * g / (_tsqrt(sq) + f(eps))
        return p

    cases = [("SGD lr=.05 momentum=.9", sgd, lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9), {}),
             ("SGD nesterov wd=1e-3", sgd, lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                                                      weight_decay=1e-3),
              dict(nesterov=True, wd=1e-3)),
             ("Adam lr=.1 wd=1e-3", adam, lambda ps: torch.optim.Adam(ps, lr=0.1, weight_decay=1e-3), {}),
             ("Adagrad lr=1e-2", adagrad, lambda ps: torch.optim.Adagrad(ps, lr=1e-2), {}),
             ("RMSprop lr=1e-2", rmsprop, lambda ps: torch.optim.RMSprop(ps, lr=1e-2), {})]
    for name, emu, make, kw in cases:
        p = torch.from_numpy(p0.copy()).requires_grad_(True)
        opt = make([p])
        for g in gs:
            p.grad = torch.from_numpy(g.copy())
            opt.step()
        ref = p.detach().numpy()
        for fused in (False, True):
            got = emu(fused, **kw)
            tag = "as optim.rs is" if not fused else "with FMAs"
            print(f"{name:26s} {tag:15s} #differ {int((got != ref).sum()):4d}/{ref.size}  "
                  f"max {ulps(got, ref).max():.1f} ULP", flush=True)


def main():
    quick = "--quick" in sys.argv
    elementwise_and_losses()
    reductions()
    gemm_conv()
    optimizers(5 if quick else 20)
    primitives()
    fused_kernel_emulation(5 if quick else 20)


if __name__ == "__main__":
    main()
