"""Run under `mpirun -n N`: nn.SyncBatchNorm over N ranks, each holding a slice of one batch, gives
torch's BatchNorm over the whole batch (values, running statistics, input gradients, and the weight/bias
gradients summed over the ranks). Asserts fail the job; rank 0 prints one JSON line at the end."""

import json

import numpy as np
import torch as real_torch

import ferrograd as torch
import ferrograd.distributed as dist

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()
checked = 0
for shape, momentum in (((4 * world, 3), 0.1), ((2 * world, 3, 5), None), ((2 * world, 3, 2, 4), 0.3)):
    rng = np.random.default_rng(7)
    full = rng.standard_normal(shape)
    weights = rng.standard_normal(shape)
    per = shape[0] // world
    mine = slice(rank * per, (rank + 1) * per)

    ref = {1: real_torch.nn.BatchNorm1d, 2: real_torch.nn.BatchNorm1d, 3: real_torch.nn.BatchNorm2d}[len(shape) - 1]
    ref = ref(3, momentum=momentum).double()
    rx = real_torch.tensor(full, requires_grad=True)
    for _ in range(2):  # two steps: the running statistics accumulate
        rout = ref(rx)
    (rout * real_torch.tensor(weights)).sum().backward()

    bn = torch.nn.SyncBatchNorm(3, momentum=momentum).double()
    x = torch.tensor(full[mine], requires_grad=True)
    for _ in range(2):
        out = bn(x)
    (out * torch.tensor(weights[mine])).sum().backward()
    assert np.allclose(out.detach().numpy(), rout.detach().numpy()[mine], atol=1e-10)
    assert np.allclose(x.grad.numpy(), rx.grad.numpy()[mine], atol=1e-10)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert np.allclose(getattr(bn, name).numpy(), getattr(ref, name).numpy(), atol=1e-12), name
    for name in ("weight", "bias"):
        g = getattr(bn, name).grad.clone()
        dist.all_reduce(g)
        assert np.allclose(g.numpy(), getattr(ref, name).grad.numpy(), atol=1e-10), name
    bn.eval()
    assert np.allclose(bn(x).detach().numpy(), ref.eval()(rx).detach().numpy()[mine], atol=1e-10)
    checked += 1

if rank == 0:
    print(json.dumps({"world": world, "checked": checked}))
dist.destroy_process_group()
