"""A Transformer language model in the style of the word_language_model example: sinusoidal
PositionalEncoding buffer, nn.TransformerEncoder with a square subsequent mask, sequence-first data,
Adam with gradient clipping; also nn.Transformer (encoder-decoder) on a copy task."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers,
                         num_decoder_layers=1, dropout=dropout)
        self.model_type = "Transformer"
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src))
        else:
            self.src_mask = None
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


torch.manual_seed(0)
ntokens, bptt, bsz = 11, 8, 3
stream = torch.tensor([(i * 7 + i // 11) % ntokens for i in range(bptt * bsz + bsz)])
data = stream[: (len(stream) // bsz) * bsz].view(bsz, -1).t().contiguous()
model = TransformerModel(ntokens, 16, 2, 32, 2, dropout=0.0)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(model.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    model.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
print("RESULT mask_row1", *[f"{v:g}" for v in model._generate_square_subsequent_mask(4)[1].tolist()])
print("RESULT sq_mask", *[f"{v:g}" for v in nn.Transformer.generate_square_subsequent_mask(3).flatten().tolist()])
criterion = nn.NLLLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
src, tgt = data[:-1], data[1:]
for step in range(6):
    model.train()
    output = model(src)
    loss = criterion(output.view(-1, ntokens), tgt.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    print(f"RESULT step{step} {loss.item():.6g} {norm.item():.6g}")
model.eval()
with torch.no_grad():
    out = model(src)
    print("RESULT eval_argmax", *out[:, 0].argmax(-1).tolist())

# encoder-decoder nn.Transformer, batch_first
torch.manual_seed(1)
seq2seq = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                         dim_feedforward=16, dropout=0.0, batch_first=True)
with torch.no_grad():
    for i, p in enumerate(seq2seq.parameters()):
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32) * 0.37 + i).view_as(p) * 0.3)
src = torch.linspace(-1, 1, 2 * 5 * 8).view(2, 5, 8)
tgt = torch.linspace(1, -1, 2 * 4 * 8).view(2, 4, 8)
tgt_mask = seq2seq.generate_square_subsequent_mask(4)
out = seq2seq(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=torch.tensor([[False] * 5, [False] * 3 + [True] * 2]))
out.sum().backward()
print("RESULT seq2seq_out", *out.shape, *[f"{v:.5g}" for v in out[1, -1].tolist()])
print(f"RESULT seq2seq_grad {sum(p.grad.norm() ** 2 for p in seq2seq.parameters()).sqrt().item():.6g}")
