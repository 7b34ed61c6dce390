"""Jacobians and Hessians of small functions with torch.func's reverse mode: jacrev of an MLP with
respect to its input and (argnums) its weights, jacrev(jacrev(f)) as a Hessian, batched Jacobians by
vmap(jacrev(f)), and grad(grad(f)) for a scalar function's second derivative; checked against
torch.autograd.functional."""
import os

import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call, grad, jacrev, vmap

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

rng = np.random.default_rng(0)
x = torch.from_numpy(rng.standard_normal(4).astype(np.float32))
xs = torch.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
params = {k: v.detach() for k, v in model.named_parameters()}

jx = jacrev(model)(x)
print("RESULT jac_input", list(jx.shape), *[f"{v:.6g}" for v in jx[0].tolist()])
ref = torch.autograd.functional.jacobian(model, x)
print("RESULT jac_matches_autograd", int(torch.allclose(jx, ref, atol=1e-6)))

jp = jacrev(lambda p, v: functional_call(model, p, (v,)))(params, x)
print("RESULT jac_params", *[f"{k}:{list(v.shape)}:{v.abs().sum().item():.6g}" for k, v in jp.items()])

batched = vmap(jacrev(model))(xs)
print("RESULT batched_jac", list(batched.shape), f"{batched.abs().sum().item():.6g}")
print("RESULT batched_matches", int(all(torch.allclose(batched[i], jacrev(model)(xs[i]), atol=1e-6)
                                        for i in range(5))))


def energy(v):
    return (model(v) ** 2).sum() + v.sin().sum()


hess = jacrev(jacrev(energy))(x)
print("RESULT hessian", list(hess.shape), *[f"{v:.6g}" for v in hess.diagonal().tolist()])
print("RESULT hessian_symmetric", int(torch.allclose(hess, hess.T, atol=1e-5)))
print("RESULT hessian_matches", int(torch.allclose(hess, torch.autograd.functional.hessian(energy, x), atol=1e-5)))
d2 = grad(grad(lambda t: (t ** 3 * t.sin()).sum()))(torch.tensor(0.8))
print(f"RESULT second_derivative {d2.item():.6g}")
