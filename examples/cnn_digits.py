"""Train a small convolutional network on the 8x8 handwritten digits that ship with ferrograd.

Ordinary PyTorch code: only the import differs. Run it as is: python examples/cnn_digits.py
"""
from importlib.resources import files

import numpy as np

import ferrograd as torch
from ferrograd import nn
from ferrograd.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

# 1,797 images of 8x8 pixels (values 0..16) and their labels 0..9; hold out 20% for testing.
# Convolutions take images as (batch, channels, height, width): one channel here.
with np.load(files("ferrograd").joinpath("data", "digits.npz").open("rb")) as data:
    images = data["images"].reshape(-1, 1, 8, 8).astype(np.float32) / 16.0
    labels = data["labels"].astype(np.int64)
perm = np.random.default_rng(0).permutation(len(labels))
test, train = perm[:360], perm[360:]
x_train, y_train = torch.from_numpy(images[train]), torch.from_numpy(labels[train])
x_test, y_test = torch.from_numpy(images[test]), torch.from_numpy(labels[test])

model = nn.Sequential(
    nn.Conv2d(1, 16, kernel_size=3, padding=1),  # 16 x 8 x 8
    nn.ReLU(),
    nn.MaxPool2d(2),                             # 16 x 4 x 4
    nn.Conv2d(16, 32, kernel_size=3, padding=1),  # 32 x 4 x 4
    nn.ReLU(),
    nn.MaxPool2d(2),                             # 32 x 2 x 2
    nn.Flatten(),
    nn.Linear(32 * 2 * 2, 10),
)
print(model)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True)

for epoch in range(8):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch + 1}  last batch loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    correct = (model(x_test).argmax(dim=1) == y_test).sum().item()
print(f"test accuracy: {100 * correct / len(y_test):.1f}% ({correct}/{len(y_test)})")
assert correct / len(y_test) > 0.9
