"""Character-level GRU language model, batch_first, trained with RMSprop on numpy-drawn windows; perplexity,
temperature sampling with torch.multinomial (random), greedy decoding (deterministic)."""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

text = ("a stitch in time saves nine. all that glitters is not gold. "
        "an apple a day keeps the doctor away. ") * 2
vocab = sorted(set(text))
char2idx = {c: i for i, c in enumerate(vocab)}
encoded = np.array([char2idx[c] for c in text], dtype=np.int64)


class CharGRU(nn.Module):
    def __init__(self, vocab_size, embed_dim=16, hidden_dim=32, n_layers=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.gru = nn.GRU(embed_dim, hidden_dim, n_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, vocab_size)

    def forward(self, x, h=None):
        out, h = self.gru(self.embedding(x), h)
        return self.fc(out), h


rng = np.random.default_rng(0)
seq_len, batch_size = 10, 6


def get_batch():
    starts = rng.integers(0, len(encoded) - seq_len - 1, size=batch_size)
    x = np.stack([encoded[s:s + seq_len] for s in starts])
    y = np.stack([encoded[s + 1:s + seq_len + 1] for s in starts])
    return torch.from_numpy(x), torch.from_numpy(y)


torch.manual_seed(0)
net = CharGRU(len(vocab))
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(net.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    net.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
opt = torch.optim.RMSprop(net.parameters(), lr=3e-3, alpha=0.95)

for step in range(12):
    x, y = get_batch()
    logits, _ = net(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    gn = torch.sqrt(sum((p.grad ** 2).sum() for p in net.parameters()))
    opt.step()
    print(f"RESULT step{step} {loss.item():.7g} {math.exp(loss.item()):.7g} {gn.item():.7g}")

net.eval()
with torch.no_grad():
    prime = torch.tensor([[char2idx[c] for c in "an apple"]])
    logits, h = net(prime)
    print("RESULT h", *h.shape)
    greedy = []
    nxt = logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(15):
        greedy.append(nxt.item())
        logits, h = net(nxt, h)
        nxt = logits[:, -1].argmax(-1, keepdim=True)
    print("RESULT greedy", *greedy)
    torch.manual_seed(3)
    logits, h = net(prime)
    sampled = []
    for _ in range(10):
        probs = F.softmax(logits[:, -1] / 0.7, dim=-1)
        nxt = torch.multinomial(probs, 1)
        sampled.append(nxt.item())
        logits, h = net(nxt, h)
    print("RANDOM sampled", *sampled)
    print("RESULT sampled_in_vocab", int(all(0 <= s < len(vocab) for s in sampled)))
