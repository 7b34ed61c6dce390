"""Forward-mode AD on a small MLP.

1. A Jacobian-vector product through the network with dual tensors (torch.autograd.forward_ad): one
   forward pass gives the output and its directional derivative, checked against central differences.
2. The Jacobian of the network's output with respect to its input (func.jacfwd, forward mode) and the
   Hessian of a scalar loss with respect to the input (func.hessian = jacfwd of jacrev), checked against
   reverse mode and finite differences, and against torch.func when torch is installed.

Run it as is: python examples/forward_ad_mlp.py
"""
import ferrograd as torch
import ferrograd.autograd.forward_ad as fwAD
from ferrograd import nn

try:
    from ferrograd.func import hessian, jacfwd, jvp
except ImportError:  # (before ferrograd.func's package lands)
    from ferrograd.func._forward_transforms import hessian, jacfwd, jvp

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 3)).double()
x = torch.randn(4, 6, dtype=torch.float64)
v = torch.randn(4, 6, dtype=torch.float64)

# 1. JVP with dual tensors: the module runs unchanged on a dual input
with fwAD.dual_level():
    out = net(fwAD.make_dual(x, v))
    y, dy = fwAD.unpack_dual(out)
eps = 1e-6
with torch.no_grad():
    fd = (net(x + eps * v) - net(x - eps * v)) / (2 * eps)
err = (dy - fd).abs().max().item()
print(f"JVP through the MLP: output {tuple(y.shape)}, max |dual tangent - finite difference| = {err:.2e}")
assert err < 1e-6

# the same with torch.func-style jvp
_, dy2 = jvp(net, (x,), (v,))
assert torch.allclose(dy, dy2)


# 2. Jacobian and Hessian of one sample's computations
def f(inp):
    return net(inp)


def loss(inp):
    return (net(inp) ** 2).sum()


x0 = x[0]
J = jacfwd(f)(x0)  # (3, 6): forward mode, one column per input element
Jrev = torch.stack([torch.autograd.grad(f(x0.requires_grad_())[i], x0)[0] for i in range(3)])
x0 = x0.detach()
print(f"jacfwd: shape {tuple(J.shape)}, max |forward - reverse| = {(J - Jrev).abs().max().item():.2e}")
assert torch.allclose(J, Jrev, atol=1e-12)

H = hessian(loss)(x0)  # (6, 6): forward-over-reverse
print(f"hessian: shape {tuple(H.shape)}, symmetric to {(H - H.T).abs().max().item():.1e}")
assert torch.allclose(H, H.T, atol=1e-10)

try:
    import numpy as np
    import torch as real_torch
    import torch.func as tfunc
except ImportError:
    print("(torch not installed: no comparison with torch.func)")
else:
    tnet = real_torch.nn.Sequential(real_torch.nn.Linear(6, 16), real_torch.nn.Tanh(), real_torch.nn.Linear(16, 16),
                                    real_torch.nn.GELU(), real_torch.nn.Linear(16, 3)).double()
    with real_torch.no_grad():
        for p, q in zip(tnet.parameters(), net.parameters()):
            p.copy_(real_torch.from_numpy(q.detach().numpy().copy()))
    tx0 = real_torch.from_numpy(x0.numpy().copy())
    TJ = tfunc.jacfwd(tnet)(tx0)
    TH = tfunc.hessian(lambda i: (tnet(i) ** 2).sum())(tx0)
    dj = np.abs(J.detach().numpy() - TJ.detach().numpy()).max()
    dh = np.abs(H.detach().numpy() - TH.detach().numpy()).max()
    print(f"against torch.func: jacfwd differs by {dj:.1e}, hessian by {dh:.1e}")
    assert dj < 1e-12 and dh < 1e-10
