"""The text-classification tutorial's model: nn.EmbeddingBag(mode='mean') fed a flat token tensor and an
offsets tensor built by a collate_batch function (cumsum of lengths), uniform init in init_weights, SGD
with StepLR(1, gamma=0.1) stepped when validation accuracy stalls, gradient clipping at 0.1."""
import os

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

rng = np.random.default_rng(1)
VOCAB, NUM_CLASS = 30, 3
samples = []
for _ in range(60):
    label = int(rng.integers(0, NUM_CLASS))
    length = int(rng.integers(3, 9))
    # class-specific token ranges plus shared noise tokens
    toks = np.concatenate([rng.integers(label * 8, label * 8 + 8, size=length),
                           rng.integers(24, 30, size=2)])
    samples.append((label, toks))
train_iter, valid_iter = samples[:48], samples[48:]


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(_label)
        processed_text = torch.tensor(_text, dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


torch.manual_seed(0)
model = TextClassificationModel(VOCAB, 16, NUM_CLASS)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
train_dataloader = DataLoader(train_iter, batch_size=16, shuffle=False, collate_fn=collate_batch)
valid_dataloader = DataLoader(valid_iter, batch_size=16, shuffle=False, collate_fn=collate_batch)

label, text, offsets = next(iter(train_dataloader))
print("RESULT first_batch", *label.shape, *text.shape, *offsets[:4].tolist())


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0
    with torch.no_grad():
        for label, text, offsets in dataloader:
            predicted_label = model(text, offsets)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


total_accu = None
for epoch in range(1, 5):
    model.train()
    losses = []
    for idx, (label, text, offsets) in enumerate(train_dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print(f"RESULT epoch{epoch} {np.mean(losses):.6g} {accu_val:.6g} {scheduler.get_last_lr()[0]:.6g}")

bag = nn.EmbeddingBag(5, 2, mode="sum")
with torch.no_grad():
    bag.weight.copy_(torch.arange(10, dtype=torch.float32).view(5, 2))
print("RESULT bag_sum", *bag(torch.tensor([0, 1, 4, 2]), torch.tensor([0, 3])).flatten().tolist())
print("RESULT bag_max", *nn.functional.embedding_bag(torch.tensor([[0, 4], [1, 2]]), bag.weight, mode="max").flatten().tolist())
