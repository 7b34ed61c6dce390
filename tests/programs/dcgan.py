"""A small DCGAN (the classic example, scaled down to 8x8 images): Generator with ConvTranspose2d +
BatchNorm2d, Discriminator with LeakyReLU, weights_init applied by class name, BCELoss, Adam with
beta1=0.5, alternating D and G steps. Latent noise is drawn from a seeded numpy generator so that both
runs see the same noise."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 8, 8, 8, 1


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


torch.manual_seed(999)
netG = Generator()
netG.apply(weights_init)
netD = Discriminator()
netD.apply(weights_init)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({"G": netG.state_dict(), "D": netD.state_dict()}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    netG.load_state_dict(init["G"])
    netD.load_state_dict(init["D"])

criterion = nn.BCELoss()
rng = np.random.default_rng(999)


def noise(n):
    return torch.from_numpy(rng.standard_normal((n, nz, 1, 1)).astype(np.float32))


fixed_noise = noise(4)
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

# "real" images: blurry diagonal strokes
xs = np.linspace(-1, 1, 8, dtype=np.float32)
base = np.tanh(3 * (xs[None, :] - xs[:, None]))
real_batch = torch.from_numpy(np.stack([base * s for s in np.linspace(0.5, 1.0, 8)])[:, None].astype(np.float32))

for i in range(6):
    netD.zero_grad()
    b_size = real_batch.size(0)
    label = torch.full((b_size,), real_label, dtype=torch.float)
    output = netD(real_batch)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    fake = netG(noise(b_size))
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print(f"RESULT iter{i} {errD.item():.7g} {errG.item():.7g} {D_x:.7g} {D_G_z1:.7g} {D_G_z2:.7g}")

with torch.no_grad():
    fake = netG(fixed_noise).detach().cpu()
print("RESULT fake_shape", *fake.shape)
print(f"RESULT fake_stats {fake.mean().item():.6g} {fake.std().item():.6g}")
bn = netG.main[1]
print(f"RESULT G_bn_running {bn.running_mean.norm().item():.6g} {bn.running_var.mean().item():.6g} {int(bn.num_batches_tracked)}")
