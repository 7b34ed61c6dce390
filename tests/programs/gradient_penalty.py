"""WGAN-GP's gradient penalty: interpolates between real and fake samples, torch.autograd.grad with
create_graph=True and grad_outputs=ones, the penalty ((||grad||_2 - 1)^2).mean() backpropagated into
the critic (double backward through Linear/LeakyReLU/LayerNorm), RMSprop-free Adam(0, 0.9)."""
import os

import numpy as np
import torch
import torch.nn as nn
from torch import autograd

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.LayerNorm(16), nn.Linear(16, 16),
                       nn.Tanh(), nn.Linear(16, 1))
generator = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 4))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({"critic": critic.state_dict(), "generator": generator.state_dict()}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    critic.load_state_dict(init["critic"])
    generator.load_state_dict(init["generator"])

rng = np.random.default_rng(0)
lambda_gp = 10.0
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.0, 0.9))
opt_g = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.0, 0.9))


def compute_gradient_penalty(D, real_samples, fake_samples, alpha):
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(real_samples.shape[0], 1)
    gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates, grad_outputs=fake,
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


for it in range(5):
    real = torch.from_numpy(rng.normal(1.0, 0.5, size=(16, 4)).astype(np.float32))
    z = torch.from_numpy(rng.normal(size=(16, 2)).astype(np.float32))
    alpha = torch.from_numpy(rng.random((16, 1)).astype(np.float32))
    fake = generator(z)
    opt_c.zero_grad()
    gp = compute_gradient_penalty(critic, real, fake.detach(), alpha)
    d_loss = -critic(real).mean() + critic(fake.detach()).mean() + lambda_gp * gp
    d_loss.backward()
    gnorm = torch.sqrt(sum(p.grad.pow(2).sum() for p in critic.parameters()))
    opt_c.step()
    opt_g.zero_grad()
    g_loss = -critic(generator(z)).mean()
    g_loss.backward()
    opt_g.step()
    print(f"RESULT iter{it} {d_loss.item():.6g} {gp.item():.6g} {g_loss.item():.6g} {gnorm.item():.6g}")

# Hessian-vector product through the critic, the other common use of create_graph
x = torch.linspace(-1, 1, 4, requires_grad=True)
(g,) = autograd.grad(critic(x).sum(), x, create_graph=True)
v = torch.tensor([1.0, 0.0, -1.0, 0.5])
(hv,) = autograd.grad(g @ v, x)
print("RESULT hvp", *[f"{t:.6g}" for t in hv.tolist()])
