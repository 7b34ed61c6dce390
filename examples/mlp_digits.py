"""Train a small MLP on the 8x8 handwritten digits that ship with ferrograd, then save and reload it.

Ordinary PyTorch code: only the import differs. Run it as is: python examples/mlp_digits.py
"""
import os
import tempfile
from importlib.resources import files

import numpy as np

import ferrograd as torch
from ferrograd import nn
from ferrograd.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

# 1,797 images of 8x8 pixels (values 0..16) and their labels 0..9; hold out 20% for testing.
with np.load(files("ferrograd").joinpath("data", "digits.npz").open("rb")) as data:
    images = data["images"].reshape(-1, 64).astype(np.float32) / 16.0
    labels = data["labels"].astype(np.int64)
perm = np.random.default_rng(0).permutation(len(labels))
test, train = perm[:360], perm[360:]
x_train, y_train = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
x_test, y_test = torch.from_numpy(images[test]), torch.from_numpy(labels[test])

model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True)

for epoch in range(10):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch + 1:2d}  last batch loss {loss.item():.4f}")


def accuracy(model):
    model.eval()
    with torch.no_grad():
        return (model(x_test).argmax(dim=1) == y_test).float().mean().item()


acc = accuracy(model)
print(f"test accuracy: {100 * acc:.1f}%")

# Save the weights (safetensors format) and load them into a fresh model.
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "mlp_digits.safetensors")
    torch.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    fresh.load_state_dict(torch.load(path))
assert accuracy(fresh) == acc
print("saved, reloaded, same accuracy")
assert acc > 0.9, acc
