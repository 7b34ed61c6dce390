#!/usr/bin/env python3
"""Realistic workloads, side by side with torch: training steps of small real models.

The micro-workloads of compare_torch.py (W1-W9) do not predict what users run; these do. Each model
is written once against the torch API (a function of the library module), both libraries run in one
process, alternating, with compare_torch.py's harness (warm-up, calibration, median, ratio).

    python benches/models.py                       # all workloads, CPU
    python benches/models.py --only GPT,W3B --repeat 7
    python benches/models.py --device cuda --json models-cuda.json

| id   | workload |
|------|----------|
| GPT  | nanoGPT-style step: 4 layers, 4 heads, 128-dim, block 64, batch 16, vocab 65, sdpa(is_causal), GELU, LayerNorm, tied lm_head, cross_entropy, clip_grad_norm_, AdamW with two weight-decay groups |
| CNN  | ResNet-style step: stem + 4 residual blocks with BatchNorm, 32x32x3 inputs, batch 64, SGD momentum |
| LSTM | LSTM language-model step: 2 layers, 256 hidden, seq 64, batch 32, vocab 65, Adam |
| VAE  | VAE step: 784-400-20 encoder/decoder, batch 128, BCE + KL, Adam |
| MLP  | MLP step: 784-256-10, batch 64, cross_entropy, SGD (W2 written as a user script) |
| W3B  | 1024^3 product, backward with a dense random upstream gradient |
| W4B  | the W4 elementwise chain on 4M elements, backward with a dense random upstream gradient |

Targets (BENCHMARKS.md, issue "Performance on real models"): GPT <= 0.70, CNN/LSTM/VAE <= 0.80,
W3B <= 0.80, W4B <= 0.50 on the CPU; <= 0.9 on a GPU. A benchmark, never a test.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_torch  # noqa: E402  (the harness: Runner, alternation, tables, --json)


def _to(env, module):
    return module.to(env.device) if env.device != "cpu" else module


# ---- GPT ---------------------------------------------------------------------------------------


def gpt_step(env, amp=None):
    """The GPT step; `amp` = (dtype name, use a GradScaler) runs the forward under torch.autocast on the
    env's device type (benches/autocast.py)."""
    lib = env.lib
    nn, F = lib.nn, lib.nn.functional
    n_layer, n_head, n_embd, block, batch, vocab = 4, 4, 128, 64, 16, 65

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.fc = nn.Linear(n_embd, 4 * n_embd)
            self.proj = nn.Linear(4 * n_embd, n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.proj(F.gelu(self.fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block, n_embd)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied

        def forward(self, idx, targets):
            pos = lib.arange(0, idx.size(1), dtype=lib.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.blocks:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    model = _to(env, GPT())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                           {"params": no_decay, "weight_decay": 0.0}], lr=3e-4, betas=(0.9, 0.95))
    idx = lib.randint(0, vocab, (batch, block), **env.kw)
    tgt = lib.randint(0, vocab, (batch, block), **env.kw)

    def step():
        loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    if amp is None:
        return step
    device_type = str(env.device).split(":")[0]
    dtype = getattr(lib, amp[0])
    scaler = lib.amp.GradScaler(device_type, enabled=amp[1])

    def amp_step():
        with lib.autocast(device_type, dtype=dtype):
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()

    return amp_step


# ---- ResNet-style CNN --------------------------------------------------------------------------


def cnn_step(env):
    lib = env.lib
    nn, F = lib.nn, lib.nn.functional

    class Residual(nn.Module):
        def __init__(self, c_in, c_out, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(c_out)
            self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(c_out)
            self.short = None
            if stride != 1 or c_in != c_out:
                self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + (x if self.short is None else self.short(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
            self.layers = nn.Sequential(Residual(16, 16, 1), Residual(16, 32, 2), Residual(32, 32, 1),
                                        Residual(32, 64, 2))
            self.fc = nn.Linear(64, 10)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    model = _to(env, Net())
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x = env.randn(64, 3, 32, 32)
    y = lib.randint(0, 10, (64,), **env.kw)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


# ---- LSTM language model -----------------------------------------------------------------------


def lstm_step(env):
    lib = env.lib
    nn, F = lib.nn, lib.nn.functional
    vocab, hidden, seq, batch = 65, 256, 64, 32

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, hidden)
            self.rnn = nn.LSTM(hidden, hidden, num_layers=2, batch_first=True)
            self.out = nn.Linear(hidden, vocab)

        def forward(self, x):
            h, _ = self.rnn(self.emb(x))
            return self.out(h)

    model = _to(env, LM())
    opt = lib.optim.Adam(model.parameters(), lr=2e-3)
    x = lib.randint(0, vocab, (batch, seq), **env.kw)
    y = lib.randint(0, vocab, (batch, seq), **env.kw)

    def step():
        opt.zero_grad()
        logits = model(x)
        F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

    return step


# ---- VAE ---------------------------------------------------------------------------------------


def vae_step(env):
    lib = env.lib
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 400)
            self.fc21 = nn.Linear(400, 20)
            self.fc22 = nn.Linear(400, 20)
            self.fc3 = nn.Linear(20, 400)
            self.fc4 = nn.Linear(400, 784)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            mu, logvar = self.fc21(h), self.fc22(h)
            z = mu + lib.randn_like(mu) * lib.exp(0.5 * logvar)
            return lib.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar

    model = _to(env, VAE())
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.rand(128, 784, **env.kw)

    def step():
        opt.zero_grad()
        recon, mu, logvar = model(x)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        (bce + kld).backward()
        opt.step()

    return step


# ---- MLP ---------------------------------------------------------------------------------------


def mlp_step(env):
    lib = env.lib
    nn, F = lib.nn, lib.nn.functional
    model = _to(env, nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = env.randn(64, 784)
    y = lib.randint(0, 10, (64,), **env.kw)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


# ---- dense-gradient GEMM and elementwise -------------------------------------------------------


def w3b_dense_grad(env):
    a = env.randn(1024, 1024, requires_grad=True)
    b = env.randn(1024, 1024, requires_grad=True)
    g = env.randn(1024, 1024)

    def step():
        a.grad = b.grad = None
        (a @ b).backward(g)

    return step


def w4b_dense_grad(env):
    n = 1 << 22
    x = env.randn(n, requires_grad=True)
    w = env.randn(n, requires_grad=True)
    g = env.randn(n)

    def step():
        x.grad = w.grad = None
        ((x * w + 0.5).tanh() * x).backward(g)

    return step


WORKLOADS = {
    "GPT": ("nanoGPT step: 4 layers, 4 heads, 128-dim, block 64, batch 16, AdamW + clip", gpt_step, {}),
    "CNN": ("ResNet-style step: 4 residual blocks + BatchNorm, 64x3x32x32, SGD momentum", cnn_step, {}),
    "LSTM": ("LSTM LM step: 2 layers, 256 hidden, seq 64, batch 32, Adam + clip", lstm_step, {}),
    "VAE": ("VAE step: 784-400-20, batch 128, BCE + KL, Adam", vae_step, {}),
    "MLP": ("MLP step: 784-256-10, batch 64, cross_entropy, SGD", mlp_step, {}),
    "W3B": ("1024^3 matmul, backward(G) with a dense random G", w3b_dense_grad,
            {"GFLOP/s": lambda ms: 3 * 2 * 1024**3 / (ms * 1e6)}),
    "W4B": ("4M elements ((x*w + 0.5).tanh() * x).backward(G), dense G", w4b_dense_grad, {}),
}

if __name__ == "__main__":
    sys.exit(compare_torch.main(workloads=WORKLOADS))
