#!/usr/bin/env python3
"""Mixed precision, side by side with torch: the GPT training step of benches/models.py (4 layers, 4 heads,
128-dim, block 64, batch 16 on the CPU) under torch.autocast, with the same settings in both libraries.

    python benches/autocast.py                          # CPU: float32, bfloat16 autocast, float16 + GradScaler
    python benches/autocast.py --only GPT-BF16 --repeat 7
    python benches/autocast.py --device cuda --json autocast-cuda.json

| id          | workload |
|-------------|----------|
| GPT-FP32    | the plain float32 step (the baseline autocast is measured against) |
| GPT-BF16    | forward under autocast(bfloat16), GradScaler disabled (nanoGPT's idiom for bfloat16) |
| GPT-FP16    | forward under autocast(float16), GradScaler enabled: scale, unscale_ + clip, step, update |

Targets (issue #32): autocast steps <= 0.8x torch's time with the same settings; on a GPU the autocast
step >= 1.5x faster than our own float32 step. A benchmark, never a test.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_torch  # noqa: E402  (the harness: Runner, alternation, tables, --json)
import models  # noqa: E402  (the GPT step)

WORKLOADS = {
    "GPT-FP32": ("nanoGPT step, float32 (baseline)", models.gpt_step, {}),
    "GPT-BF16": ("nanoGPT step, forward under autocast(bfloat16), no scaler",
                 lambda env: models.gpt_step(env, amp=("bfloat16", False)), {}),
    "GPT-FP16": ("nanoGPT step, forward under autocast(float16), GradScaler",
                 lambda env: models.gpt_step(env, amp=("float16", True)), {}),
}

if __name__ == "__main__":
    sys.exit(compare_torch.main(workloads=WORKLOADS))
