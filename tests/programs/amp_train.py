"""Mixed-precision training as scripts write it: a small causal self-attention classifier trained under
`torch.autocast("cpu", dtype=torch.bfloat16)` with nanoGPT's `GradScaler(enabled=(dtype == "float16"))` idiom
(disabled for bfloat16), then the same model fine-tuned under float16 autocast with an enabled
`torch.amp.GradScaler("cpu")` (scale, unscale_ + clip_grad_norm_, step, update; a step skipped on an inf
gradient), with the scale, the skip and the dtypes printed."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(7)
X = rng.normal(size=(64, 8, 16)).astype(np.float32)
y = (X[:, :, :4].sum(axis=(1, 2)) > 0).astype(np.int64) + (X[:, 0, 0] > 0.5).astype(np.int64)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.block = Block(32, 4)
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        return self.head(self.block(self.inp(x)).mean(dim=1))


torch.manual_seed(0)
model = Net()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

dtype = "bfloat16"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = torch.amp.autocast(device_type="cpu", dtype=ptdtype)
scaler = torch.amp.GradScaler("cpu", enabled=(dtype == "float16"))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

xb_all, yb_all = torch.from_numpy(X), torch.from_numpy(y)
for step in range(6):
    xb, yb = xb_all[step * 8:(step + 1) * 8 + 8], yb_all[step * 8:(step + 1) * 8 + 8]
    with ctx:
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
    if step == 0:
        print("RESULT dtypes", str(logits.dtype), str(loss.dtype), str(model.inp.weight.dtype))
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    print(f"RESULT bf16_step{step} {loss.item():.4f} {scaler.get_scale():.1f}")

# float16 autocast with dynamic loss scaling
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12, growth_interval=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for step in range(6):
    xb, yb = xb_all[step * 8:(step + 1) * 8 + 8], yb_all[step * 8:(step + 1) * 8 + 8]
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.cross_entropy(model(xb), yb)
    scaler.scale(loss).backward()
    if step == 3:  # an overflow: the step must be skipped and the scale halved
        model.head.bias.grad[0] = float("inf")
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    before = model.head.weight.detach().clone()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    moved = bool((model.head.weight != before).any())
    print(f"RESULT fp16_step{step} {loss.item():.4f} {scaler.get_scale():.1f} {int(moved)} "
          f"{int(math.isfinite(float(norm)))}")
print("RESULT state", sorted(scaler.state_dict().items()))

model.eval()
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    pred = model(xb_all).argmax(dim=1)
print(f"RESULT accuracy {float((pred == yb_all).float().mean()):.4f}")
