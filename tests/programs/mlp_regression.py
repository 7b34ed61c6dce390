"""An MLP regressor as beginners write it: nn.Sequential, MSELoss, SGD with momentum, mini-batches from
a DataLoader over a TensorDataset with a seeded numpy split, model.train()/model.eval(), torch.no_grad
validation, early stopping on the best validation loss with a deep-copied state_dict."""
import copy
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split

rng = np.random.default_rng(42)
X = rng.uniform(-2, 2, size=(120, 3)).astype(np.float32)
y = (np.sin(X[:, :1]) + 0.5 * X[:, 1:2] ** 2 - X[:, 2:3] + rng.normal(0, 0.05, size=(120, 1))).astype(np.float32)
perm = rng.permutation(120)
train_idx, val_idx = perm[:96], perm[96:]
train_ds = TensorDataset(torch.from_numpy(X[train_idx]), torch.from_numpy(y[train_idx]))
val_ds = TensorDataset(torch.from_numpy(X[val_idx]), torch.from_numpy(y[val_idx]))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=False)
val_loader = DataLoader(val_ds, batch_size=64)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 16), nn.SiLU(), nn.Linear(16, 1))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

best_loss, best_state, patience, bad = float("inf"), None, 2, 0
for epoch in range(8):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * xb.size(0)
    model.eval()
    with torch.no_grad():
        val_loss = sum(criterion(model(xb), yb).item() * xb.size(0) for xb, yb in val_loader) / len(val_ds)
    print(f"RESULT epoch{epoch} {running / len(train_ds):.6g} {val_loss:.6g}")
    if val_loss < best_loss:
        best_loss, best_state, bad = val_loss, copy.deepcopy(model.state_dict()), 0
    else:
        bad += 1
        if bad >= patience:
            print("RESULT early_stop", epoch)
            break
model.load_state_dict(best_state)
with torch.no_grad():
    pred = model(torch.from_numpy(X[val_idx]))
print(f"RESULT best {best_loss:.6g} {criterion(pred, torch.from_numpy(y[val_idx])).item():.6g}")
torch.manual_seed(0)
a, b = random_split(range(10), [7, 3])
print("RESULT random_split_sizes", len(a), len(b))
