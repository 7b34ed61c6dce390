"""Binary and multinomial logistic regression written as a subclassed nn.Module: BCEWithLogitsLoss with
pos_weight, CrossEntropyLoss with class weights, Adam with weight_decay, accuracy / precision / recall
from thresholded sigmoid outputs, and torch.inference_mode for evaluation."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(7)
n = 80
X = rng.normal(size=(n, 4)).astype(np.float32)
w_true = np.array([1.5, -2.0, 0.5, 0.0], dtype=np.float32)
logits = X @ w_true + 0.3
y = (logits + rng.normal(0, 0.5, size=n) > 0).astype(np.float32)
Xt, yt = torch.from_numpy(X), torch.from_numpy(y)


class LogisticRegression(nn.Module):
    def __init__(self, n_inputs, n_outputs=1):
        super().__init__()
        self.linear = nn.Linear(n_inputs, n_outputs)

    def forward(self, x):
        return self.linear(x)


model = LogisticRegression(4)
nn.init.zeros_(model.linear.weight)
nn.init.constant_(model.linear.bias, 0.1)
criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5]))
optimizer = torch.optim.Adam(model.parameters(), lr=0.1, weight_decay=1e-3)
for epoch in range(10):
    optimizer.zero_grad()
    out = model(Xt).squeeze(1)
    loss = criterion(out, yt)
    loss.backward()
    optimizer.step()
    print(f"RESULT epoch{epoch} {loss.item():.7g}")

with torch.inference_mode():
    probs = torch.sigmoid(model(Xt).squeeze(1))
    preds = (probs > 0.5).float()
    tp = ((preds == 1) & (yt == 1)).sum().item()
    fp = ((preds == 1) & (yt == 0)).sum().item()
    fn = ((preds == 0) & (yt == 1)).sum().item()
    acc = (preds == yt).float().mean().item()
print(f"RESULT metrics {acc:.6g} {tp} {fp} {fn}")
print("RESULT weights", *[f"{v:.5g}" for v in model.linear.weight.detach().flatten().tolist()])
print("RESULT inference_tensor", int(probs.requires_grad))

# multinomial
classes = np.digitize(X[:, 0] - X[:, 1], [-1.0, 1.0]).astype(np.int64)
ct = torch.from_numpy(classes)
soft = LogisticRegression(4, 3)
with torch.no_grad():
    soft.linear.weight.copy_(torch.linspace(-0.2, 0.2, 12).view(3, 4))
    soft.linear.bias.zero_()
counts = torch.bincount(ct, minlength=3).float()
ce = nn.CrossEntropyLoss(weight=counts.sum() / (3 * counts))
opt = torch.optim.SGD(soft.parameters(), lr=0.5)
for epoch in range(6):
    opt.zero_grad()
    loss = ce(soft(Xt), ct)
    loss.backward()
    opt.step()
    print(f"RESULT soft_epoch{epoch} {loss.item():.7g}")
print("RESULT class_counts", *counts.long().tolist())
print("RESULT soft_acc", (soft(Xt).argmax(1) == ct).sum().item())
