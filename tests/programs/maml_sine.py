"""MAML on sine regression, written the functional way: torch.func.functional_call with a dict of
adapted ("fast") weights computed by an inner SGD step with autograd.grad(create_graph=True), the outer
loss backpropagated through the inner update into the meta-parameters (second-order MAML)."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 20), nn.Tanh(), nn.Linear(20, 20), nn.Tanh(), nn.Linear(20, 1))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
inner_lr = 0.05
rng = np.random.default_rng(0)


def sample_task():
    amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, np.pi)
    xs = rng.uniform(-3, 3, size=(10, 1)).astype(np.float32)
    xq = rng.uniform(-3, 3, size=(10, 1)).astype(np.float32)
    f = lambda x: (amp * np.sin(x + phase)).astype(np.float32)
    return [torch.from_numpy(a) for a in (xs, f(xs), xq, f(xq))]


for meta_step in range(5):
    meta_opt.zero_grad()
    outer_losses = []
    for _ in range(3):
        xs, ys, xq, yq = sample_task()
        params = dict(model.named_parameters())
        for _ in range(2):
            inner_loss = F.mse_loss(functional_call(model, params, (xs,)), ys)
            grads = torch.autograd.grad(inner_loss, list(params.values()), create_graph=True)
            params = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
        outer_losses.append(F.mse_loss(functional_call(model, params, (xq,)), yq))
    outer = torch.stack(outer_losses).mean()
    outer.backward()
    gn = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    meta_opt.step()
    print(f"RESULT meta{meta_step} {outer.item():.6g} {gn.item():.6g}")
print("RESULT fast_weight_names", *params.keys())
print("RESULT fast_weight_grad_fn", int(params["0.weight"].grad_fn is not None))
