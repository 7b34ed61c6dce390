"""Gradient accumulation over micro-batches (loss / accum_steps, step every N), zero_grad(set_to_none=True),
tensor hooks (register_hook) that scale and record gradients, retain_grad on an intermediate, and the
check that accumulated micro-batch gradients equal the full-batch gradient."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(3)
X = torch.from_numpy(rng.normal(size=(32, 6)).astype(np.float32))
Y = torch.from_numpy(rng.integers(0, 4, size=32))

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

# full-batch gradient, for reference
F.cross_entropy(model(X), Y).backward()
full = [p.grad.clone() for p in model.parameters()]
model.zero_grad(set_to_none=True)
print("RESULT grads_none", int(all(p.grad is None for p in model.parameters())))

accum_steps = 4
for i, (xb, yb) in enumerate(zip(X.chunk(accum_steps), Y.chunk(accum_steps))):
    loss = F.cross_entropy(model(xb), yb) / accum_steps
    loss.backward()
diffs = [(p.grad - g).abs().max().item() for p, g in zip(model.parameters(), full)]
print("RESULT accum_equals_full", int(max(diffs) < 1e-6))

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
optimizer.zero_grad(set_to_none=True)
seen = []
handle = model[0].weight.register_hook(lambda g: seen.append(g.norm().item()))
for step in range(8):
    xb, yb = X[(step % accum_steps) * 8:(step % accum_steps + 1) * 8], Y[(step % accum_steps) * 8:(step % accum_steps + 1) * 8]
    h = model[1](model[0](xb))
    h.retain_grad()
    out = model[3](model[2](h))
    loss = F.cross_entropy(out, yb) / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        gn = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"RESULT update{step // accum_steps} {gn.item():.6g} {h.grad.norm().item():.6g}")
handle.remove()
print("RESULT hook_calls", len(seen))
print("RESULT hook_norms", *[f"{v:.6g}" for v in seen])

scale = torch.tensor([2.0])
w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
w.register_hook(lambda g: g * scale)
(w ** 2).sum().backward()
print("RESULT hooked_grad", *w.grad.tolist())
with torch.no_grad():
    print(f"RESULT final_loss {F.cross_entropy(model(X), Y).item():.7g}")
