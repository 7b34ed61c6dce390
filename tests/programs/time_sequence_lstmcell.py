"""The 'time sequence prediction' example: two stacked LSTMCells unrolled by hand over sine waves,
trained with LBFGS and a closure, then predicting future values by feeding outputs back in."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=10):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


T, L, N = 20, 20, 5
x = np.empty((N, L), "int64")
x[:] = np.array(range(L)) + np.arange(N).reshape(N, 1) * 3
data = np.sin(x / 1.0 / T).astype("float64")
input = torch.from_numpy(data[2:, :-1])
target = torch.from_numpy(data[2:, 1:])
test_input = torch.from_numpy(data[:2, :-1])
test_target = torch.from_numpy(data[:2, 1:])

np.random.seed(0)
torch.manual_seed(0)
seq = Sequence()
seq.double()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(seq.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    seq.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))
criterion = nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=5)
for i in range(3):
    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        loss.backward()
        return loss
    loss = optimizer.step(closure)
    print(f"RESULT step{i} {loss.item():.8g}")
    with torch.no_grad():
        future = 5
        pred = seq(test_input, future=future)
        loss = criterion(pred[:, :-future], test_target)
        print(f"RESULT test{i} {loss.item():.8g}")
        y = pred.detach().numpy()
print("RESULT pred_shape", *y.shape)
print("RESULT pred_tail", *[f"{v:.6g}" for v in y[0, -5:]])
