"""Old-style (2017) tutorial code that still runs on today's torch: `from torch.autograd import Variable`,
manual SGD on .data with .grad.data.zero_(), FloatTensor/LongTensor constructors, .data[...] reads,
type checks, and the two-layer net trained by hand."""
import numpy as np
import torch
from torch.autograd import Variable

dtype = torch.FloatTensor
N, D_in, H, D_out = 16, 5, 8, 2
rng = np.random.RandomState(0)
x = Variable(torch.from_numpy(rng.randn(N, D_in).astype(np.float32)).type(dtype), requires_grad=False)
y = Variable(torch.from_numpy(rng.randn(N, D_out).astype(np.float32)).type(dtype), requires_grad=False)
w1 = Variable(torch.from_numpy(rng.randn(D_in, H).astype(np.float32) * 0.3).type(dtype), requires_grad=True)
w2 = Variable(torch.from_numpy(rng.randn(H, D_out).astype(np.float32) * 0.3).type(dtype), requires_grad=True)

print("RESULT is_variable", int(isinstance(w1, Variable)), int(isinstance(w1, torch.Tensor)))
print("RESULT type", w1.type(), x.data.type())

learning_rate = 1e-2
for t in range(8):
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    print(f"RESULT iter{t} {loss.data.item():.7g}")
    loss.backward()
    w1.data -= learning_rate * w1.grad.data
    w2.data -= learning_rate * w2.grad.data
    w1.grad.data.zero_()
    w2.grad.data.zero_()

print(f"RESULT w1_00 {w1.data[0, 0]:.7g}")
print("RESULT grad_zeroed", int(w1.grad.abs().sum().item() == 0))
idx = torch.LongTensor([0, 2])
print("RESULT longtensor", idx.dtype, *w2.data[idx].shape)
ft = torch.FloatTensor(2, 3).zero_()
print("RESULT floattensor", *ft.shape, ft.dtype, f"{ft.sum().item():g}")
v = Variable(torch.ones(2, 2))
print("RESULT variable_requires_grad", int(v.requires_grad), int(v.grad_fn is None))
