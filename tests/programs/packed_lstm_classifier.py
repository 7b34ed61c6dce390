"""Variable-length sequence classification: pad_sequence, pack_padded_sequence(enforce_sorted=False) into a
bidirectional LSTM, pad_packed_sequence back, mean over the true lengths, and the final hidden states of
both directions into a classifier; a collate_fn builds the padded batches in a DataLoader."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset


class SeqDataset(Dataset):
    def __init__(self, n, rng):
        self.items = []
        for _ in range(n):
            length = int(rng.integers(2, 9))
            tokens = rng.integers(1, 20, size=length)
            label = int(tokens.sum() % 3)
            self.items.append((torch.from_numpy(tokens), label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=0)
    return padded, lengths, torch.tensor(labels)


class Classifier(nn.Module):
    def __init__(self, vocab=20, emb=8, hidden=12, classes=3):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(4 * hidden, classes)

    def forward(self, padded, lengths):
        emb = self.embedding(padded)
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        packed_out, (h_n, c_n) = self.lstm(packed)
        out, out_lengths = pad_packed_sequence(packed_out, batch_first=True)
        mask = (torch.arange(out.size(1))[None, :] < out_lengths[:, None]).unsqueeze(-1)
        mean = (out * mask).sum(1) / out_lengths[:, None].float()
        last = torch.cat([h_n[-2], h_n[-1]], dim=1)
        return self.fc(torch.cat([mean, last], dim=1)), out.shape, out_lengths


rng = np.random.default_rng(0)
dataset = SeqDataset(24, rng)
loader = DataLoader(dataset, batch_size=8, shuffle=False, collate_fn=collate)

padded, lengths, labels = next(iter(loader))
print("RESULT padded_shape", *padded.shape)
print("RESULT lengths", *lengths.tolist())
packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
print("RESULT batch_sizes", *packed.batch_sizes.tolist())
print("RESULT sorted_indices", *packed.sorted_indices.tolist())
print("RESULT packed_data_len", packed.data.shape[0], int(lengths.sum()))
unpacked, unpacked_len = pad_packed_sequence(packed, batch_first=True, total_length=10)
print("RESULT unpacked", *unpacked.shape, int(torch.equal(unpacked[:, :padded.size(1)], padded)))

torch.manual_seed(0)
model = Classifier()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(3):
    total, correct = 0.0, 0
    for padded, lengths, labels in loader:
        logits, out_shape, out_lengths = model(padded, lengths)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(labels)
        correct += (logits.argmax(1) == labels).sum().item()
    print(f"RESULT epoch{epoch} {total / len(dataset):.7g} {correct}")
print("RESULT out_shape", *out_shape, *out_lengths.tolist())
print(f"RESULT emb_pad_row {model.embedding.weight[0].abs().sum().item():.7g}")
