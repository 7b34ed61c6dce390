"""Word2vec skip-gram with negative sampling: input/output nn.Embedding tables (sparse=False), a batched
bmm of center and context vectors, F.logsigmoid losses, negatives drawn by a seeded numpy unigram^0.75
sampler, SparseAdam-free Adam; nearest neighbours by cosine similarity at the end."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

corpus = ("the king rules the land the queen rules the land the king and the queen "
          "a dog chases a cat a cat chases a mouse the dog and the cat").split()
vocab = sorted(set(corpus))
w2i = {w: i for i, w in enumerate(vocab)}
ids = np.array([w2i[w] for w in corpus])
window = 2
pairs = np.array([(ids[i], ids[j]) for i in range(len(ids))
                  for j in range(max(0, i - window), min(len(ids), i + window + 1)) if i != j])
counts = np.bincount(ids, minlength=len(vocab)).astype(np.float64)
unigram = counts ** 0.75 / (counts ** 0.75).sum()


class SkipGram(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.in_embed = nn.Embedding(vocab_size, dim)
        self.out_embed = nn.Embedding(vocab_size, dim)
        init_range = 0.5 / dim
        self.in_embed.weight.data.uniform_(-init_range, init_range)
        self.out_embed.weight.data.uniform_(-init_range, init_range)

    def forward(self, center, context, negatives):
        v = self.in_embed(center)                   # (B, D)
        u = self.out_embed(context)                 # (B, D)
        n = self.out_embed(negatives)               # (B, K, D)
        pos = F.logsigmoid((v * u).sum(-1))
        neg = F.logsigmoid(-torch.bmm(n, v.unsqueeze(2)).squeeze(2)).sum(1)
        return -(pos + neg).mean()


torch.manual_seed(0)
model = SkipGram(len(vocab), 10)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
rng = np.random.default_rng(0)
print("RESULT pairs", len(pairs), len(vocab))
for epoch in range(6):
    order = rng.permutation(len(pairs))
    total = 0.0
    for start in range(0, len(order), 32):
        batch = pairs[order[start:start + 32]]
        negatives = rng.choice(len(vocab), size=(len(batch), 4), p=unigram)
        loss = model(torch.from_numpy(batch[:, 0]), torch.from_numpy(batch[:, 1]), torch.from_numpy(negatives))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"RESULT epoch{epoch} {total:.6g}")

emb = F.normalize(model.in_embed.weight.detach(), dim=1)
sims = emb @ emb.t()
king = w2i["king"]
top = sims[king].topk(3).indices.tolist()
print("RESULT king_neighbours", *top)
print(f"RESULT king_queen_sim {sims[king, w2i['queen']].item():.5g}")
