"""A fully-connected VAE (the classic example): encoder to mu/logvar, reparameterisation with
torch.randn_like, BCE + KL loss summed over the batch, Adam. The reparameterisation noise is random,
so the training losses are RANDOM lines; the deterministic parts (eval-mode loss and its gradients,
the KL term, decoding of fixed codes) are compared."""
import os

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        if not self.training:
            return mu
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD, BCE, KLD


torch.manual_seed(1)
rng = np.random.default_rng(1)
images = (rng.random((40, 1, 8, 8)) > 0.6).astype(np.float32)
train_loader = DataLoader(TensorDataset(torch.from_numpy(images), torch.zeros(40, dtype=torch.long)),
                          batch_size=20, shuffle=False)

model = VAE()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
optimizer = optim.Adam(model.parameters(), lr=1e-3)

# deterministic: eval-mode ELBO and its gradients
model.eval()
data = torch.from_numpy(images[:20])
recon, mu, logvar = model(data)
loss, bce, kld = loss_function(recon, data, mu, logvar)
loss.backward()
print(f"RESULT eval_loss {loss.item():.7g} {bce.item():.7g} {kld.item():.7g}")
for name, p in model.named_parameters():
    print(f"RESULT grad_{name} {p.grad.norm().item():.7g}")
optimizer.zero_grad()

model.train()
for epoch in range(1, 3):
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss, _, _ = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    print(f"RANDOM epoch{epoch}_avg_loss {train_loss / len(train_loader.dataset):.7g}")

with torch.no_grad():
    sample = torch.randn(8, 4)
    sample = model.decode(sample).cpu()
    print("RESULT sample_shape", *sample.view(8, 1, 8, 8).shape)
    print(f"RANDOM sample_mean {sample.mean().item():.7g}")
    in_range = bool(((sample >= 0) & (sample <= 1)).all())
    print("RESULT sample_in_unit_interval", int(in_range))
# the noise stream itself is reproducible under a seed
torch.manual_seed(5)
a = torch.randn_like(mu)
torch.manual_seed(5)
b = torch.randn_like(mu)
print("RESULT reseeded_noise_equal", int(torch.equal(a, b)))
