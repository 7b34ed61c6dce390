"""Custom autograd.Functions the way the 'Extending PyTorch' notes write them: a LinearFunction with
needs_input_grad, a Cube whose backward is itself differentiable (double backward through ops), a
Function with an explicit double backward via a second Function, a non-differentiable output
(mark_non_differentiable), and gradcheck/gradgradcheck on each in float64."""
import torch
from torch.autograd import Function, gradcheck, gradgradcheck


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * 3 * x ** 2  # differentiable: double backward goes through these ops


class MyExpBackward(Function):
    @staticmethod
    def forward(ctx, grad_out, result):
        ctx.save_for_backward(grad_out, result)
        return grad_out * result

    @staticmethod
    def backward(ctx, grad_grad):
        grad_out, result = ctx.saved_tensors
        return grad_grad * result, grad_grad * grad_out


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        (result,) = ctx.saved_tensors
        return MyExpBackward.apply(grad_out, result)


class SortWithIndices(Function):
    @staticmethod
    def forward(ctx, x):
        values, idx = x.sort()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, idx)
        return values, idx

    @staticmethod
    def backward(ctx, g_values, g_idx):
        x, idx = ctx.saved_tensors
        grad_input = torch.zeros_like(x)
        grad_input.index_add_(0, idx, g_values)
        return grad_input


linear = LinearFunction.apply
inp = torch.linspace(-1, 1, 12, dtype=torch.double).view(3, 4).requires_grad_()
w = torch.linspace(0.5, -0.7, 20, dtype=torch.double).view(5, 4).requires_grad_()
b = torch.linspace(0, 1, 5, dtype=torch.double).requires_grad_()
out = linear(inp, w, b)
out.pow(2).sum().backward()
print("RESULT linear_out", *[f"{v:.10g}" for v in out[0].tolist()])
print(f"RESULT linear_grads {inp.grad.sum().item():.10g} {w.grad.sum().item():.10g} {b.grad.sum().item():.10g}")
print("RESULT linear_gradcheck", int(gradcheck(linear, (inp, w, b), eps=1e-6, atol=1e-4)))

x = torch.tensor([0.5, -1.5, 2.0], dtype=torch.double, requires_grad=True)
y = Cube.apply(x)
(g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
(gg,) = torch.autograd.grad(g.sum(), x)
print("RESULT cube_grad", *[f"{v:.10g}" for v in g.tolist()])
print("RESULT cube_gradgrad", *[f"{v:.10g}" for v in gg.tolist()])
print("RESULT cube_gradcheck", int(gradcheck(Cube.apply, (x,))), int(gradgradcheck(Cube.apply, (x,))))

y = MyExp.apply(x)
(g,) = torch.autograd.grad(y, x, torch.ones_like(y), create_graph=True)
(gg,) = torch.autograd.grad(g, x, torch.tensor([1.0, 2.0, 3.0], dtype=torch.double))
print("RESULT exp_gradgrad", *[f"{v:.10g}" for v in gg.tolist()])
print("RESULT exp_grad_fn", type(g.grad_fn).__name__.startswith("MyExpBackward"))
print("RESULT exp_gradcheck", int(gradcheck(MyExp.apply, (x,))), int(gradgradcheck(MyExp.apply, (x,))))

z = torch.tensor([3.0, 1.0, 2.0], dtype=torch.double, requires_grad=True)
vals, idx = SortWithIndices.apply(z)
print("RESULT sort_idx", *idx.tolist(), int(idx.requires_grad), int(idx.dtype == torch.int64))
(vals * torch.tensor([1.0, 10.0, 100.0], dtype=torch.double)).sum().backward()
print("RESULT sort_grad", *[f"{v:.10g}" for v in z.grad.tolist()])
print("RESULT sort_gradcheck", int(gradcheck(lambda t: SortWithIndices.apply(t)[0], (z,))))

try:
    # a wrong backward: gradcheck must notice
    class WrongCube(Cube):
        @staticmethod
        def backward(ctx, grad_out):
            (x,) = ctx.saved_tensors
            return grad_out * 2 * x ** 2

    gradcheck(WrongCube.apply, (x,), raise_exception=True)
    print("RESULT broken_gradcheck_raised 0")
except RuntimeError as e:
    print("RESULT broken_gradcheck_raised 1", type(e).__name__)
