"""Per-sample gradients with torch.func (the torch.func tutorial's recipe): vmap(grad(loss)) with
functional_call over the model's parameters and buffers, in_dims=(None, None, 0, 0), for an MLP and a
small CNN; checked against a loop of ordinary backward passes, one sample at a time."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 3 * 3, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


mlp = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 10))
cnn = SimpleCNN()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({"mlp": mlp.state_dict(), "cnn": cnn.state_dict()}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    mlp.load_state_dict(init["mlp"])
    cnn.load_state_dict(init["cnn"])

rng = np.random.default_rng(0)
data = {
    "mlp": (torch.from_numpy(rng.standard_normal((16, 20)).astype(np.float32)),
            torch.from_numpy(rng.integers(0, 10, 16))),
    "cnn": (torch.from_numpy(rng.standard_normal((8, 1, 10, 10)).astype(np.float32)),
            torch.from_numpy(rng.integers(0, 10, 8))),
}

for name, model in (("mlp", mlp), ("cnn", cnn)):
    x, y = data[name]
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        return F.cross_entropy(predictions, targets)

    per_sample = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, x, y)
    worst = 0.0
    for i in range(x.shape[0]):
        model.zero_grad()
        F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for k, p in model.named_parameters():
            worst = max(worst, (per_sample[k][i] - p.grad).abs().max().item())
    for k, g in per_sample.items():
        norms = g.flatten(1).norm(dim=1)
        print(f"RESULT {name}_{k.replace('.', '_')} {list(g.shape)} " + " ".join(f"{v:.6g}" for v in norms[:4].tolist()))
    print(f"RESULT {name}_matches_loop {int(worst < 1e-5)}")
    print(f"RESULT {name}_requires_grad {int(per_sample[next(iter(per_sample))].requires_grad)}")
