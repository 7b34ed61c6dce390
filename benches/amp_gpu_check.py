#!/usr/bin/env python3
"""GPU check of mixed precision (issue #32), for a machine with a GPU and torch for CUDA: run once there,
it prints one line per check and exits non-zero when one fails. Not a test (CI has no GPU).

    python benches/amp_gpu_check.py

1. TF32: with torch.backends.cuda.matmul.allow_tf32 False (torch's default) a 1024^2 float32 matmul is
   IEEE-accurate against float64; with it True (or set_float32_matmul_precision("high")) the error grows to
   TF32's (~1e-3 relative) and matches torch's own TF32 error; both flags read back as torch's.
2. autocast("cuda") float16/bfloat16: the output dtypes of matmul/linear/conv/softmax/layer_norm/exp/sum/
   losses/cat/addcmul against torch on CUDA.
3. GradScaler("cuda"): ferrograd's fused unscale over device gradients, a skipped step on inf, growth and
   backoff of the scale, against torch on CUDA.
4. Speed: a GPT-like step in float32 vs under autocast(float16) (ferrograd's own ratio; the issue asks
   >= 1.5x on a GPU).
"""
import sys
import time

import numpy as np
import torch

import ferrograd as fg

failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def rel_err(a, ref):
    return float(np.abs(a - ref).max() / np.abs(ref).max())


def tf32():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1024, 1024)).astype(np.float32), rng.standard_normal((1024, 1024)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    check("allow_tf32 default False", fg.backends.cuda.matmul.allow_tf32 is False
          and fg.get_float32_matmul_precision() == "highest")
    check("cudnn.allow_tf32 default True", fg.backends.cudnn.allow_tf32 is True)
    x, y = fg.tensor(a, device="cuda"), fg.tensor(b, device="cuda")
    e_ieee = rel_err((x @ y).cpu().numpy(), ref)
    fg.backends.cuda.matmul.allow_tf32 = True
    e_tf32 = rel_err((x @ y).cpu().numpy(), ref)
    fg.backends.cuda.matmul.allow_tf32 = False
    fg.set_float32_matmul_precision("high")
    e_high = rel_err((x @ y).cpu().numpy(), ref)
    fg.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = True
    tx, ty = torch.tensor(a, device="cuda"), torch.tensor(b, device="cuda")
    e_torch = rel_err((tx @ ty).cpu().numpy(), ref)
    torch.backends.cuda.matmul.allow_tf32 = False
    check("float32 matmul IEEE without TF32", e_ieee < 1e-5, f"rel err {e_ieee:.2e}")
    check("TF32 matmul when allowed", 1e-5 < e_tf32 < 1e-2, f"rel err {e_tf32:.2e} (torch's TF32: {e_torch:.2e})")
    check("set_float32_matmul_precision('high') enables TF32", abs(e_high - e_tf32) < 1e-6, f"{e_high:.2e}")


def dtypes():
    rng = np.random.default_rng(1)
    arrays = {k: rng.standard_normal(s).astype(np.float32) for k, s in
              (("a", (8, 16)), ("w", (12, 16)), ("img", (2, 3, 8, 8)), ("k", (4, 3, 3, 3)))}
    tgt = np.array([0, 3, 1, 2, 0, 1, 2, 3])

    def run(lib, fast):
        t = {k: lib.tensor(v, device="cuda") for k, v in arrays.items()}
        F = lib.nn.functional
        with lib.autocast("cuda", dtype=getattr(lib, fast)):
            h = t["a"].to(getattr(lib, fast))
            outs = {
                "matmul": t["a"] @ t["w"].t(), "linear": F.linear(t["a"], t["w"], t["w"][:, 0]),
                "conv2d": F.conv2d(t["img"], t["k"]), "softmax": F.softmax(h, -1), "log_softmax": F.log_softmax(h, -1),
                "layer_norm": F.layer_norm(h, (16,)), "exp": h.exp(), "sum": h.sum(), "mean": h.mean(),
                "mse": F.mse_loss(h, h), "ce": F.cross_entropy(h[:, :4], lib.tensor(tgt, device="cuda")),
                "cat": lib.cat([h, t["a"]]), "addcmul": lib.addcmul(h, h, t["a"]), "gelu": F.gelu(h),
                "pow": h ** 2, "tanh": h.tanh(),
            }
        return {k: str(v.dtype) for k, v in outs.items()}

    for fast in ("float16", "bfloat16"):
        ours, theirs = run(fg, fast), run(torch, fast)
        bad = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
        check(f"autocast cuda {fast} dtypes", not bad, str(bad) if bad else "")


def scaler():
    res = {}
    for lib in (fg, torch):
        lib.manual_seed(0)
        w = lib.tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8), device="cuda", requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s = lib.amp.GradScaler("cuda", init_scale=1024.0, growth_interval=2)
        log = []
        for i in range(5):
            with lib.autocast("cuda"):
                loss = (w @ w).float().pow(2).mean()
            s.scale(loss).backward()
            if i == 2:
                w.grad[0, 0] = float("inf")
            s.step(opt)
            s.update()
            opt.zero_grad()
            log.append((round(loss.item(), 4), s.get_scale()))
        res[lib] = (log, w.detach().cpu().numpy())
    check("GradScaler cuda scales", [x[1] for x in res[fg][0]] == [x[1] for x in res[torch][0]], str(res[fg][0]))
    check("GradScaler cuda parameters", np.allclose(res[fg][1], res[torch][1], atol=1e-3))
    g = [fg.full((1000,), 2.0, device="cuda"), fg.full((3, 5), 4.0, device="cuda", dtype=fg.bfloat16)]
    found = fg.zeros((), device="cuda")
    fg._amp_foreach_non_finite_check_and_unscale_(g, found, fg.full((), 0.5, device="cuda"))
    check("fused unscale on device", float(found) == 0.0 and float(g[0][0]) == 1.0 and float(g[1][0, 0]) == 2.0)
    g[0][3] = float("nan")
    fg._amp_foreach_non_finite_check_and_unscale_(g, found, fg.full((), 1.0, device="cuda"))
    check("fused unscale finds NaN on device", float(found) == 1.0)


def speed():
    sys.path.insert(0, "benches")
    import compare_torch
    import models

    env = compare_torch.Env(fg, "cuda") if hasattr(compare_torch, "Env") else None
    if env is None:
        print("skip speed: benches/compare_torch.py has no Env")
        return
    for name, amp in (("fp32", None), ("fp16", ("float16", True))):
        step = models.gpt_step(env, amp=amp)
        for _ in range(3):
            step()
        fg.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            step()
        fg.cuda.synchronize()
        print(f"info GPT step {name}: {(time.perf_counter() - t0) / 10 * 1e3:.2f} ms")


if __name__ == "__main__":
    if not (fg.cuda.is_available() and torch.cuda.is_available()):
        sys.exit("needs a GPU and torch for CUDA")
    for f in (tf32, dtypes, scaler, speed):
        try:
            f()
        except Exception as e:  # a crash is a failure of that check, the others still run
            check(f.__name__, False, f"{type(e).__name__}: {e}")
    sys.exit(1 if failures else 0)
