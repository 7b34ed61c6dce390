"""Curve fitting with LBFGS and a closure: a polynomial least-squares fit (plain LBFGS), then a small
MLP fitted to a sine with line_search_fn='strong_wolfe'; the closure counts its evaluations."""
import os

import numpy as np
import torch
import torch.nn as nn

x = torch.linspace(-1, 1, 50).unsqueeze(1)
y_true = 0.5 - 1.2 * x + 0.8 * x ** 2 + 0.3 * x ** 3
noise = torch.from_numpy(np.random.default_rng(0).normal(0, 0.01, size=(50, 1)).astype(np.float32))
y = y_true + noise

features = torch.cat([x ** i for i in range(4)], dim=1)
coeffs = torch.zeros(4, 1, requires_grad=True)
optimizer = torch.optim.LBFGS([coeffs], lr=1, max_iter=20, history_size=10)
evals = 0


def closure():
    global evals
    evals += 1
    optimizer.zero_grad()
    loss = ((features @ coeffs - y) ** 2).mean()
    loss.backward()
    return loss


for step in range(3):
    loss = optimizer.step(closure)
    print(f"RESULT poly_step{step} {loss.item():.7g}")
print("RESULT poly_coeffs", *[f"{v:.5g}" for v in coeffs.detach().flatten().tolist()])
print("RESULT poly_evals", evals)
state = optimizer.state[optimizer.param_groups[0]["params"][0]]
print("RESULT lbfgs_state", state["n_iter"], state["func_evals"], len(state["old_dirs"]))

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(net.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    net.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
target = torch.sin(3 * x)
opt = torch.optim.LBFGS(net.parameters(), lr=0.5, max_iter=10, line_search_fn="strong_wolfe")
criterion = nn.MSELoss()
for step in range(4):
    def closure():
        opt.zero_grad()
        loss = criterion(net(x), target)
        loss.backward()
        return loss
    loss = opt.step(closure)
    print(f"RESULT mlp_step{step} {loss.item():.6g}")
with torch.no_grad():
    print(f"RESULT mlp_final {criterion(net(x), target).item():.6g}")
