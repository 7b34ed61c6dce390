"""The empirical neural tangent kernel with torch.func (the torch.func tutorial's recipe): the
Jacobians of a small convolutional network's outputs with respect to its parameters, per input, by
vmap(jacrev(f)) over a functional_call, then contracted (einsum) into the NTK; also the NTK of a
single example pair computed directly, and the trace-only variant."""
import os

import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call, jacrev, vmap

torch.manual_seed(0)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, (3, 3))
        self.conv2 = nn.Conv2d(4, 4, (3, 3))
        self.fc = nn.Linear(4 * 2 * 2, 3)

    def forward(self, x):
        x = self.conv1(x).relu()
        x = self.conv2(x).relu()
        x = x.flatten(1)
        return self.fc(x)


net = CNN()
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save(net.state_dict(), os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    net.load_state_dict(torch.load(os.environ["PROGRAM_LOAD_INIT"]))

rng = np.random.default_rng(0)
x_train = torch.from_numpy(rng.standard_normal((5, 3, 6, 6)).astype(np.float32))
x_test = torch.from_numpy(rng.standard_normal((3, 3, 6, 6)).astype(np.float32))
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(params, x):
    return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute="full"):
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]
    einsum_expr = {"full": "Naf,Mbf->NMab", "trace": "Naf,Maf->NM", "diagonal": "Naf,Maf->NMa"}[compute]
    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    return result.sum(0)


ntk = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
print("RESULT ntk_shape", list(ntk.shape))
print("RESULT ntk", *[f"{v:.6g}" for v in ntk[:2, :2].flatten().tolist()])
trace = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test, "trace")
print("RESULT ntk_trace", *[f"{v:.6g}" for v in trace.flatten().tolist()])
print("RESULT trace_consistent", int(torch.allclose(trace, ntk.diagonal(dim1=-2, dim2=-1).sum(-1), rtol=1e-4, atol=1e-4)))

# one pair, directly: J(x1) J(x2)^T summed over the parameters
j1 = jacrev(fnet_single)(params, x_train[0])
j2 = jacrev(fnet_single)(params, x_test[0])
direct = sum(a.flatten(1) @ b.flatten(1).T for a, b in zip(j1.values(), j2.values()))
print("RESULT pair_matches", int(torch.allclose(direct, ntk[0, 0], rtol=1e-4, atol=1e-4)))
print("RESULT jac_shapes", *[f"{k}:{list(v.shape)}" for k, v in j1.items()])
