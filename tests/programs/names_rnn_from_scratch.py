"""'Classifying names with a character-level RNN' from scratch: one-hot letterToTensor/lineToTensor,
an RNN module built from i2h/h2o Linear layers over torch.cat((input, hidden), 1) with LogSoftmax,
NLLLoss, manual SGD with p.data.add_(p.grad.data, alpha=-lr), categoryFromOutput via topk."""
import os
import string

import torch
import torch.nn as nn

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
category_lines = {
    "English": ["smith", "jones", "taylor", "brown", "wilson"],
    "Italian": ["rossi", "russo", "ferrari", "esposito", "bianchi"],
    "Japanese": ["sato", "suzuki", "takahashi", "tanaka", "watanabe"],
}
all_categories = list(category_lines)
n_categories = len(all_categories)


def letterToIndex(letter):
    return all_letters.find(letter)


def letterToTensor(letter):
    tensor = torch.zeros(1, n_letters)
    tensor[0][letterToIndex(letter)] = 1
    return tensor


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(input_size + hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, input, hidden):
        combined = torch.cat((input, hidden), 1)
        hidden = self.i2h(combined)
        output = self.h2o(combined)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self):
        return torch.zeros(1, self.hidden_size)


torch.manual_seed(0)
n_hidden = 32
rnn = RNN(n_letters, n_hidden, n_categories)
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(rnn.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    rnn.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
print("RESULT letter_j", *letterToTensor("J").nonzero()[0].tolist())
print("RESULT line_shape", *lineToTensor("Jones").size())
criterion = nn.NLLLoss()
learning_rate = 0.005


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def train(category_tensor, line_tensor):
    hidden = rnn.initHidden()
    rnn.zero_grad()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    loss = criterion(output, category_tensor)
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()


pairs = [(c, line) for i in range(5) for c in all_categories for line in [category_lines[c][i]]]
for epoch in range(4):
    current_loss = 0.0
    for category, line in pairs:
        category_tensor = torch.tensor([all_categories.index(category)], dtype=torch.long)
        output, loss = train(category_tensor, lineToTensor(line))
        current_loss += loss
    guess, guess_i = categoryFromOutput(output)
    print(f"RESULT epoch{epoch} {current_loss / len(pairs):.7g} {guess}")


def evaluate(line_tensor):
    hidden = rnn.initHidden()
    for i in range(line_tensor.size()[0]):
        output, hidden = rnn(line_tensor[i], hidden)
    return output


with torch.no_grad():
    for name in ["satou", "rossini", "smithson"]:
        output = evaluate(lineToTensor(name))
        topv, topi = output.topk(2, 1, True)
        print("RESULT predict", name, *[all_categories[i] for i in topi[0].tolist()],
              *[f"{v:.5g}" for v in topv[0].tolist()])
