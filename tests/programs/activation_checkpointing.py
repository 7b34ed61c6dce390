"""Activation checkpointing with torch.utils.checkpoint (use_reentrant=False) and checkpoint_sequential
on a deep MLP: the gradients must equal the un-checkpointed ones; torch.autograd.functional's jacobian,
hessian, vjp and jvp on a small function."""
import os

import torch
import torch.nn as nn
from torch.autograd.functional import hessian, jacobian, jvp, vjp
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.ff(x)


class Deep(nn.Module):
    def __init__(self, d=8, n=4, use_checkpoint=False):
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            if self.use_checkpoint:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x


torch.manual_seed(0)
model = Deep()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
x = torch.linspace(-2, 2, 3 * 8).view(3, 8).requires_grad_()

out = model(x)
out.pow(2).mean().backward()
plain = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
model.zero_grad()
x.grad = None
model.use_checkpoint = True
out_ck = model(x)
out_ck.pow(2).mean().backward()
ck = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
print(f"RESULT loss {out.pow(2).mean().item():.7g} {out_ck.pow(2).mean().item():.7g}")
print("RESULT ckpt_grads_equal", int(all(torch.allclose(a, b, atol=1e-6) for a, b in zip(plain, ck))))
print(f"RESULT x_grad_norm {x.grad.norm().item():.7g}")

seq = nn.Sequential(*[Block(8) for _ in range(4)])
seq.load_state_dict({k.replace("blocks.", ""): v for k, v in model.state_dict().items()})
x.grad = None
y = checkpoint_sequential(seq, 2, x, use_reentrant=False)
y.pow(2).mean().backward()
print("RESULT sequential_equal", int(torch.allclose(y, out, atol=1e-6)), int(torch.allclose(x.grad, plain[-1], atol=1e-6)))


def f(v):
    return torch.stack([v[0] ** 2 * v[1], torch.sin(v[1]) + v[2], v.prod()])


v0 = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
J = jacobian(f, v0)
print("RESULT jacobian", *[f"{t:.8g}" for t in J.flatten().tolist()])
H = hessian(lambda v: (v ** 3).sum() + v[0] * v[1] * v[2], v0)
print("RESULT hessian", *[f"{t:.8g}" for t in H.flatten().tolist()])
out, g = vjp(f, v0, torch.tensor([1.0, -1.0, 2.0], dtype=torch.float64))
print("RESULT vjp", *[f"{t:.8g}" for t in g.tolist()])
out, jv = jvp(f, v0, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
print("RESULT jvp", *[f"{t:.8g}" for t in jv.tolist()])
