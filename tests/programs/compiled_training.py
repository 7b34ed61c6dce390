"""A training script that compiles its model the way nanoGPT-style trainers do: a `compile` flag in the
config block, `model = torch.compile(model)`, `unoptimized_model` kept for saving, a compiled loss function
(decorator with arguments), `torch._dynamo.config.cache_size_limit` raised, a last batch of a different
size (a recompile, then automatic dynamic sizes), evaluation under torch.no_grad, and a checkpoint whose
keys drop the `_orig_mod.` prefix the compiled wrapper adds."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# -----------------------------------------------------------------------------
# config (nanoGPT style); "inductor" is torch.compile's default backend, which needs a C++ compiler
# and minutes on a CPU: the debugging backend keeps this script a few seconds long under real torch too.
compile = True
compile_backend = "aot_eager"
batch_size = 24
max_iters = 12
learning_rate = 3e-3
# -----------------------------------------------------------------------------

torch._dynamo.config.cache_size_limit = 16

rng = np.random.default_rng(7)
N = 200
X = rng.normal(size=(N, 10)).astype(np.float32)
W = rng.normal(size=(10, 4)).astype(np.float32)
Y = (X @ W + 0.1 * rng.normal(size=(N, 4))).argmax(axis=1)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.proj(F.gelu(self.fc(self.ln(x))))


class Classifier(nn.Module):
    def __init__(self, n_in=10, dim=32, n_out=4, depth=2):
        super().__init__()
        self.inp = nn.Linear(n_in, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, n_out)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = block(h)
        b, d = h.shape
        return self.head(h.view(b, d))


torch.manual_seed(1337)
model = Classifier()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
if compile:
    print("compiling the model... (takes a ~minute)")
    unoptimized_model = model
    model = torch.compile(model, backend=compile_backend)  # requires PyTorch 2.0


@torch.compile(backend=compile_backend)
def loss_fn(logits, targets, smoothing):
    return F.cross_entropy(logits, targets, label_smoothing=smoothing)


print("RESULT compiled_type", type(model).__name__)
print("RESULT state_dict_keys", len(model.state_dict()), list(model.state_dict())[0])

losses = []
for it in range(max_iters):
    start = (it * batch_size) % (N - batch_size)
    xb = torch.from_numpy(X[start:start + batch_size])
    yb = torch.from_numpy(Y[start:start + batch_size])
    logits = model(xb)
    loss = loss_fn(logits, yb, 0.1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
print("RESULT train_losses", " ".join(f"{v:.6f}" for v in losses))

# the last, smaller batches: a new size, then another (automatic dynamic sizes in torch)
for tail in (17, 9):
    xb, yb = torch.from_numpy(X[-tail:]), torch.from_numpy(Y[-tail:])
    loss = loss_fn(model(xb), yb, 0.0)
    print("RESULT tail_loss", tail, f"{loss.item():.6f}")

model.eval()
with torch.no_grad():
    logits = model(torch.from_numpy(X))
    acc = (logits.argmax(dim=1).numpy() == Y).mean()
    eval_loss = F.cross_entropy(logits, torch.from_numpy(Y)).item()
print("RESULT eval", f"{eval_loss:.6f}", f"{acc:.4f}")

# nanoGPT saves the unwrapped model's state_dict; a compiled model's keys carry `_orig_mod.`
state = model.state_dict()
unwanted_prefix = "_orig_mod."
clean = {k[len(unwanted_prefix):] if k.startswith(unwanted_prefix) else k: v for k, v in state.items()}
fresh = Classifier()
fresh.load_state_dict(clean)
fresh.eval()
with torch.no_grad():
    same = torch.allclose(fresh(torch.from_numpy(X[:5])), unoptimized_model(torch.from_numpy(X[:5])))
print("RESULT reloaded_matches", same, sorted(clean)[0])
print("RESULT is_compiling", torch.compiler.is_compiling())
