"""Model ensembling with torch.func (the torch.func tutorial's recipe): the parameters of several
copies of a model stacked with stack_module_state, a "meta" copy of the model called through
functional_call, vmap over the models: the same minibatch for every model (in_dims=(0, 0, None))
and a different minibatch per model (in_dims=(0, 0, 0)); compared with running each model."""
import copy
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(24, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 5)

    def forward(self, x):
        x = F.relu(self.fc1(x.flatten(1)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


num_models = 4
models = [SimpleMLP() for _ in range(num_models)]
if os.environ.get("PROGRAM_SAVE_INIT"):
    torch.save({str(i): m.state_dict() for i, m in enumerate(models)}, os.environ["PROGRAM_SAVE_INIT"])
if os.environ.get("PROGRAM_LOAD_INIT"):
    init = torch.load(os.environ["PROGRAM_LOAD_INIT"])
    for i, m in enumerate(models):
        m.load_state_dict(init[str(i)])

rng = np.random.default_rng(0)
minibatches = torch.from_numpy(rng.standard_normal((num_models, 8, 4, 6)).astype(np.float32))
minibatch = minibatches[0]

params, buffers = stack_module_state(models)
base_model = copy.deepcopy(models[0])


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


same = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
different = vmap(fmodel)(params, buffers, minibatches)
loop_same = torch.stack([m(minibatch) for m in models])
loop_diff = torch.stack([m(b) for m, b in zip(models, minibatches)])
print("RESULT shapes", list(same.shape), list(different.shape))
print("RESULT same_matches", int(torch.allclose(same, loop_same, atol=1e-5)))
print("RESULT different_matches", int(torch.allclose(different, loop_diff, atol=1e-5)))
print("RESULT same_values", *[f"{v:.6g}" for v in same[:, 0, :2].flatten().tolist()])
print("RESULT predictions", *same.argmax(-1)[:, :4].flatten().tolist())
print("RESULT param_shapes", *[f"{k}:{list(v.shape)}" for k, v in params.items()])

# the ensemble's loss, differentiated through the vmapped forward with respect to the stacked weights
targets = torch.from_numpy(rng.integers(0, 5, 8))
loss = vmap(lambda p, b: F.cross_entropy(fmodel(p, b, minibatch), targets))(params, buffers)
loss.sum().backward()
print("RESULT losses", *[f"{v:.6g}" for v in loss.tolist()])
print("RESULT grad_norms", *[f"{params[k].grad[i].norm().item():.6g}" for k in ("fc1.weight", "fc3.bias")
                             for i in range(num_models)])
