"""Word-language-model style LSTM on characters: 2-layer LSTM with tied encoder/decoder weights, batchify
into columns, get_batch over bptt windows, repackage_hidden between batches, plain SGD with the lr
annealed when the validation loss stops improving, as in the classic example."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.0, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


bptt = 8


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


corpus = "to be or not to be that is the question whether tis nobler in the mind to suffer " * 2
vocab = sorted(set(corpus))
ids = torch.tensor([vocab.index(c) for c in corpus], dtype=torch.long)
split = int(len(ids) * 0.8)
train_data = batchify(ids[:split], 4)
val_data = batchify(ids[split:], 2)
print("RESULT train_data", *train_data.shape)

torch.manual_seed(1111)
ntokens = len(vocab)
model = RNNModel("LSTM", ntokens, 24, 24, 2, dropout=0.0, tie_weights=True)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
criterion = nn.NLLLoss()
lr = 5.0
clip = 0.25


def evaluate(data_source, bsz):
    model.eval()
    total_loss = 0.0
    hidden = model.init_hidden(bsz)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    model.train()
    total_loss = 0.0
    hidden = model.init_hidden(4)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
    return total_loss / (batch + 1)


best_val_loss = None
for epoch in range(1, 4):
    train_loss = train()
    val_loss = evaluate(val_data, 2)
    print(f"RESULT epoch{epoch} {train_loss:.7g} {val_loss:.7g} {math.exp(val_loss):.7g} {lr:.7g}")
    if not best_val_loss or val_loss < best_val_loss:
        with open("model.pt", "wb") as f:
            torch.save(model.state_dict(), f)
        best_val_loss = val_loss
    else:
        lr /= 4.0

with open("model.pt", "rb") as f:
    model.load_state_dict(torch.load(f))
    model.rnn.flatten_parameters()
print(f"RESULT best_val {evaluate(val_data, 2):.7g}")
