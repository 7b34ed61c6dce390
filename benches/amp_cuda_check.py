"""GPU check for ferrograd.amp (not part of the CPU test suite): a GradScaler("cuda") training loop on a
float32 model with inf gradients injected on some steps, compared with torch on the same GPU (scales, skipped
steps, parameters), plus autocast("cuda") raising NotImplementedError. Run on a CUDA machine:

    PYTHONPATH=python python benches/amp_cuda_check.py
"""
import numpy as np
import torch

import ferrograd as fg


def train(lib):
    rng = np.random.default_rng(0)
    m = lib.nn.Sequential(lib.nn.Linear(16, 32), lib.nn.GELU(), lib.nn.Linear(32, 4)).to("cuda")
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)).to("cuda"))
    o = lib.optim.AdamW(m.parameters(), lr=1e-2)
    scaler = lib.amp.GradScaler("cuda", init_scale=2.0**10, growth_interval=3)
    scales = []
    for step in range(12):
        x = lib.tensor(rng.standard_normal((8, 16)).astype(np.float32)).to("cuda")
        loss = (m(x) ** 2).mean() * (float("inf") if step in (2, 7) else 1.0)
        scaler.scale(loss).backward()
        scaler.unscale_(o)
        lib.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        scaler.step(o)
        scaler.update()
        o.zero_grad(set_to_none=True)
        scales.append(scaler.get_scale())
    return [p.detach().cpu().numpy() for p in m.parameters()], scales, scaler.state_dict()


def main():
    assert fg.cuda.is_available() and torch.cuda.is_available(), "needs a CUDA device"
    got, want = train(fg), train(torch)
    assert got[1] == want[1], (got[1], want[1])
    assert got[2] == want[2], (got[2], want[2])
    for a, b in zip(got[0], want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert fg.amp.GradScaler("cuda").is_enabled()
    try:
        fg.amp.autocast("cuda", dtype=fg.bfloat16)
    except NotImplementedError:
        pass
    else:
        raise AssertionError("autocast('cuda') should raise NotImplementedError")
    print("amp cuda check: OK", got[1])


if __name__ == "__main__":
    main()
