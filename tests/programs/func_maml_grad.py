"""MAML on sine regression with torch.func: the inner loop's adaptation steps by grad over a
functional_call of the model's parameters (second-order: the meta-gradient flows through the inner
gradients), the tasks of a meta-batch adapted together with vmap over the tasks, the meta-update by
an ordinary backward and Adam."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
inner_lr = 0.05
rng = np.random.default_rng(0)


def sample_tasks(n):
    amp = rng.uniform(0.5, 2.0, (n, 1, 1))
    phase = rng.uniform(0, np.pi, (n, 1, 1))
    xs = rng.uniform(-3, 3, size=(n, 10, 1))
    xq = rng.uniform(-3, 3, size=(n, 10, 1))
    f = lambda x: (amp * np.sin(x + phase)).astype(np.float32)
    return [torch.from_numpy(a.astype(np.float32)) for a in (xs, f(xs), xq, f(xq))]


def loss_fn(params, x, y):
    return F.mse_loss(functional_call(model, params, (x,)), y)


def adapt_and_evaluate(params, xs, ys, xq, yq):
    for _ in range(2):
        grads = grad(loss_fn)(params, xs, ys)
        params = {k: p - inner_lr * grads[k] for k, p in params.items()}
    return loss_fn(params, xq, yq)


for meta_step in range(4):
    meta_opt.zero_grad()
    params = dict(model.named_parameters())
    xs, ys, xq, yq = sample_tasks(3)
    # one task at a time ...
    looped = torch.stack([adapt_and_evaluate(params, xs[i], ys[i], xq[i], yq[i]) for i in range(3)])
    # ... and all tasks at once
    batched = vmap(adapt_and_evaluate, in_dims=(None, 0, 0, 0, 0))(params, xs, ys, xq, yq)
    outer = batched.mean()
    outer.backward()
    gn = torch.sqrt(sum(p.grad.pow(2).sum() for p in model.parameters()))
    meta_opt.step()
    print(f"RESULT meta{meta_step} {outer.item():.6g} {gn.item():.6g}",
          int(torch.allclose(looped, batched, atol=1e-5)))
