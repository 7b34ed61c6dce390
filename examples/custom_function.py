"""A custom autograd Function inside a model: SiLU (x * sigmoid(x)) with a hand-written backward.

1. gradcheck compares its backward with finite differences (in float64);
2. it matches the built-in nn.functional.silu, values and gradients;
3. a small network using it learns y = sin(3x).

Run it as is: python examples/custom_function.py
"""
import math

import ferrograd as torch
from ferrograd import nn
from ferrograd.autograd import Function, gradcheck


class SiLUFunction(Function):
    @staticmethod
    def forward(ctx, x):
        s = torch.sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad_out):
        x, s = ctx.saved_tensors
        return grad_out * s * (1 + x * (1 - s))  # d/dx x*sigmoid(x)


class CustomSiLU(nn.Module):
    def forward(self, x):
        return SiLUFunction.apply(x)


torch.manual_seed(0)

# 1. the hand-written backward against finite differences
x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
assert gradcheck(SiLUFunction.apply, (x,), eps=1e-6, atol=1e-4)
print("gradcheck: passed")

# 2. the same numbers as the built-in
x32 = torch.randn(5, 3, requires_grad=True)
ours = SiLUFunction.apply(x32)
(g_ours,) = torch.autograd.grad(ours.sum(), x32)
builtin = nn.functional.silu(x32)
(g_builtin,) = torch.autograd.grad(builtin.sum(), x32)
assert (ours - builtin).abs().max().item() < 1e-6
assert (g_ours - g_builtin).abs().max().item() < 1e-6
print("matches nn.functional.silu: values and gradients")

# 3. used in a model: fit y = sin(3x) on [-1, 1]
xs = torch.linspace(-1, 1, 256).unsqueeze(1)
ys = torch.sin(3 * xs)
model = nn.Sequential(nn.Linear(1, 32), CustomSiLU(), nn.Linear(32, 32), CustomSiLU(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(1, 301):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(xs), ys)
    loss.backward()
    optimizer.step()
    if step == 1 or step % 100 == 0:
        print(f"step {step:3d}  mse {loss.item():.5f}")
print(f"grad_fn of the model's output: {model(xs).grad_fn}")
assert loss.item() < 0.01 and math.isfinite(loss.item()), loss.item()
