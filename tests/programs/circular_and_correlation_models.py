"""Probabilistic regression the way research code writes it: a network predicting a wind direction as a
von Mises distribution (mean angle from atan2 of two outputs, concentration through softplus), trained on
the negative log-likelihood with Adafactor, the data fed by a StackDataset through a DataLoader with two
workers; then a correlated-noise model: an LKJ prior on a correlation Cholesky factor reached through
biject_to(constraints.corr_cholesky), per-dimension scales, a MultivariateNormal likelihood, a Wishart
log-density of the sample scatter, fitted with Adam; and a continuous-Bernoulli reconstruction term."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import (ContinuousBernoulli, LKJCholesky, MultivariateNormal, VonMises, Wishart,
                                 biject_to, constraints, kl_divergence)
from torch.utils.data import DataLoader, StackDataset, TensorDataset

rng = np.random.default_rng(3)
n = 96
features = rng.normal(size=(n, 3)).astype(np.float32)
true_angle = np.arctan2(features[:, 0] + 0.3 * features[:, 2], features[:, 1] - 0.2)
angles = (true_angle + rng.vonmises(0.0, 8.0, size=n)).astype(np.float32)

dataset = StackDataset(x=TensorDataset(torch.from_numpy(features)), theta=torch.from_numpy(angles))


class DirectionNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 16), nn.Tanh())
        self.direction = nn.Linear(16, 2)
        self.kappa = nn.Linear(16, 1)

    def forward(self, x):
        h = self.body(x)
        d = self.direction(h)
        loc = torch.atan2(d[:, 0], d[:, 1])
        concentration = F.softplus(self.kappa(h)).squeeze(-1) + 1e-3
        return VonMises(loc, concentration)


torch.manual_seed(0)
model = DirectionNet()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

optimizer = torch.optim.Adafactor(model.parameters(), lr=0.05, weight_decay=1e-3)
loader = DataLoader(dataset, batch_size=32, num_workers=2)
for epoch in range(4):
    total = 0.0
    for batch in loader:
        (x,) = batch["x"]
        dist = model(x)
        loss = -dist.log_prob(batch["theta"]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"RESULT vonmises_epoch{epoch} {total / len(loader):.6g}")
with torch.no_grad():
    dist = model(torch.from_numpy(features))
    err = torch.remainder(dist.mean - torch.from_numpy(angles) + math.pi, 2 * math.pi) - math.pi
    print(f"RESULT vonmises_eval {err.abs().mean().item():.6g} {dist.variance.mean().item():.6g}")
state = optimizer.state_dict()["state"][0]
print("RESULT adafactor_state", *sorted(state), f"{state['step'].item():.0f}")

# ---- a correlated-noise model: LKJ prior, scales, MultivariateNormal likelihood
dim = 3
true_corr = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]])
obs = rng.multivariate_normal(np.zeros(dim), np.diag([1.0, 2.0, 0.5]) @ true_corr @ np.diag([1.0, 2.0, 0.5]),
                              size=200)
y = torch.tensor(obs, dtype=torch.float64)
raw_corr = torch.zeros(dim * (dim - 1) // 2, dtype=torch.float64, requires_grad=True)
log_scale = torch.zeros(dim, dtype=torch.float64, requires_grad=True)
to_corr = biject_to(constraints.corr_cholesky)
prior = LKJCholesky(dim, concentration=2.0)
opt = torch.optim.Adam([raw_corr, log_scale], lr=0.1)
for step in range(30):
    L_corr = to_corr(raw_corr)
    scale_tril = torch.diag_embed(log_scale.exp()) @ L_corr
    nll = -MultivariateNormal(torch.zeros(dim, dtype=torch.float64), scale_tril=scale_tril).log_prob(y).mean()
    log_jac = to_corr.log_abs_det_jacobian(raw_corr, L_corr)
    loss = nll - (prior.log_prob(L_corr) + log_jac) / len(y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 9:
        print(f"RESULT lkj_step{step} {loss.item():.7g}")
with torch.no_grad():
    corr = L_corr @ L_corr.T
    print("RESULT lkj_corr", *[f"{v:.5g}" for v in corr[torch.tril_indices(dim, dim, -1).unbind()].tolist()])
    print("RESULT lkj_scales", *[f"{v:.5g}" for v in log_scale.exp().tolist()])
    scatter = (y.T @ y)
    fitted = scale_tril @ scale_tril.T
    w = Wishart(df=torch.tensor(float(len(y)), dtype=torch.float64), covariance_matrix=fitted)
    print(f"RESULT wishart_scatter {w.log_prob(scatter).item():.7g} {w.entropy().item():.7g}")
    print(f"RESULT wishart_mean {w.mean[0, 0].item():.6g} {w.variance[1, 1].item():.6g}")
    w2 = Wishart(df=torch.tensor(float(len(y)) + 5, dtype=torch.float64), covariance_matrix=fitted * 1.1)
# (outside no_grad: torch's exponential-family KL differentiates the log-normaliser)
print(f"RESULT wishart_kl {kl_divergence(w, w2).item():.6g}")

# ---- a continuous-Bernoulli reconstruction term, as in VAEs for [0, 1]-valued pixels
pixels = torch.from_numpy(rng.uniform(0.0, 1.0, size=(8, 16)).astype(np.float32))
decoder_logits = nn.Parameter(torch.linspace(-2.0, 2.0, 16).repeat(8, 1))
recon = ContinuousBernoulli(logits=decoder_logits)
loss = -recon.log_prob(pixels).sum(-1).mean()
loss.backward()
print(f"RESULT cb_loss {loss.item():.6g} {decoder_logits.grad.abs().sum().item():.6g}")
print(f"RESULT cb_mean {recon.mean[0, :4].sum().item():.6g} {recon.entropy().mean().item():.6g}")
