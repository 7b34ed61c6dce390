"""Character-level language model with nn.RNN (the min-char-rnn recipe in torch): one-hot-free embedding,
truncated backprop through time with a hidden state carried across chunks and detached, Adam,
gradient clipping, greedy sampling."""
import os

import numpy as np
import torch
import torch.nn as nn

text = "hello world, hello torch. the quick brown fox jumps over the lazy dog. " * 3
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)

hidden_size = 32
seq_length = 12
lr = 1e-2


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.RNN(hidden_size, hidden_size, num_layers=num_layers, nonlinearity="tanh")
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def forward(self, input, hidden):
        # input: (seq_len, batch)
        emb = self.embed(input)
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(output), hidden

    def init_hidden(self, batch_size):
        return torch.zeros(self.num_layers, batch_size, self.hidden_size)


torch.manual_seed(42)
model = CharRNN(vocab_size, hidden_size)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=lr)

hidden = model.init_hidden(1)
p = 0
smooth_loss = -np.log(1.0 / vocab_size) * seq_length
for n in range(15):
    if p + seq_length + 1 >= len(data):
        p = 0
        hidden = model.init_hidden(1)
    inputs = data[p: p + seq_length].unsqueeze(1)
    targets = data[p + 1: p + seq_length + 1].unsqueeze(1)
    hidden = hidden.detach()
    optimizer.zero_grad()
    output, hidden = model(inputs, hidden)
    loss = criterion(output.view(-1, vocab_size), targets.view(-1))
    loss.backward()
    total_norm = nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    optimizer.step()
    smooth_loss = smooth_loss * 0.9 + loss.item() * seq_length * 0.1
    print(f"RESULT step{n} {loss.item():.7g} {float(total_norm):.7g} {smooth_loss:.7g}")
    p += seq_length

print("RESULT hidden_shape", *hidden.shape)
print(f"RESULT hidden_norm {hidden.norm().item():.7g}")


def sample(model, seed_ix, n):
    model.eval()
    with torch.no_grad():
        h = model.init_hidden(1)
        x = torch.tensor([[seed_ix]])
        ixes = []
        for t in range(n):
            out, h = model(x, h)
            ix = out[-1, 0].argmax().item()
            ixes.append(ix)
            x = torch.tensor([[ix]])
    return ixes


ixes = sample(model, stoi["h"], 20)
print("RESULT sample", *ixes)
print("RESULT sample_text_len", len("".join(itos[i] for i in ixes)))
