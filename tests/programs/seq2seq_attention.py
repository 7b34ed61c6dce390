"""Seq2seq with attention (the 'translation with a sequence to sequence network' tutorial, batch-first):
GRU encoder, Bahdanau-attention GRU decoder with teacher forcing, NLLLoss on log-softmax outputs,
greedy decoding and the attention matrix of an example. The task reverses digit strings."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

SOS_token, EOS_token = 0, 1
MAX_LENGTH = 7


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, input):
        embedded = self.embedding(input)
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []
        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)  # teacher forcing
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)
        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input)
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)
        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)
        return output, hidden, attn_weights


def make_pairs(rng, n):
    """Sequences of digit tokens (2..11) and their reversal, padded with EOS to MAX_LENGTH."""
    inputs = np.full((n, MAX_LENGTH), EOS_token, dtype=np.int64)
    targets = np.full((n, MAX_LENGTH), EOS_token, dtype=np.int64)
    for i in range(n):
        length = rng.integers(3, MAX_LENGTH)
        seq = rng.integers(2, 12, size=length)
        inputs[i, :length] = seq
        targets[i, :length] = seq[::-1]
    return torch.from_numpy(inputs), torch.from_numpy(targets)


torch.manual_seed(0)
rng = np.random.default_rng(0)
hidden_size, vocab = 24, 12
encoder = EncoderRNN(vocab, hidden_size)
decoder = AttnDecoderRNN(hidden_size, vocab)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({"encoder": encoder.state_dict(), "decoder": decoder.state_dict()}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    encoder.load_state_dict(init["encoder"])
    decoder.load_state_dict(init["decoder"])

encoder_optimizer = optim.Adam(encoder.parameters(), lr=5e-3)
decoder_optimizer = optim.Adam(decoder.parameters(), lr=5e-3)
criterion = nn.NLLLoss()
input_tensor, target_tensor = make_pairs(rng, 32)

for epoch in range(1, 9):
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    encoder_outputs, encoder_hidden = encoder(input_tensor)
    decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
    loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
    loss.backward()
    encoder_optimizer.step()
    decoder_optimizer.step()
    print(f"RESULT epoch{epoch} {loss.item():.7g}")

with torch.no_grad():
    encoder_outputs, encoder_hidden = encoder(input_tensor[:2])
    decoder_outputs, decoder_hidden, attentions = decoder(encoder_outputs, encoder_hidden)
    _, topi = decoder_outputs.topk(1)
    decoded_ids = topi.squeeze()
    print("RESULT decoded", *decoded_ids[0].tolist())
    print("RESULT attn_shape", *attentions.shape)
    print("RESULT attn_row0", *[f"{v:.6g}" for v in attentions[0, 0].tolist()])
    print(f"RESULT attn_rowsum {attentions.sum(-1).mean().item():.7g}")
