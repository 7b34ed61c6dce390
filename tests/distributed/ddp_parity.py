"""Run under `mpirun -n N`: DDP over N ranks, K steps of SGD on per-rank shards of a batch, must give the
parameters that one process gets training on the whole batch (to float32 rounding). Also checks no_sync
accumulation and find_unused_parameters. Prints one JSON line from rank 0; asserts fail the job."""

import json
import sys

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
from ferrograd.nn.parallel import DistributedDataParallel as DDP


def make_model(seed):
    torch.manual_seed(seed)
    # Enough parameters for several buckets at bucket_cap_mb=0.01 (10 KiB).
    return torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 3))


def batches(steps, per_rank, world):
    rng = np.random.default_rng(0)
    for _ in range(steps):
        x = rng.standard_normal((per_rank * world, 8)).astype(np.float32)
        y = rng.standard_normal((per_rank * world, 3)).astype(np.float32)
        yield torch.from_numpy(x), torch.from_numpy(y)


def train(model, steps, per_rank, world, rank, accumulate=1):
    """SGD on the mean-squared error; each rank sees rows [rank*per_rank, (rank+1)*per_rank) of each batch.
    With accumulate > 1, each step's shard is split into micro-batches, the first ones under no_sync."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches(steps, per_rank, world):
        x, y = x[rank * per_rank:(rank + 1) * per_rank], y[rank * per_rank:(rank + 1) * per_rank]
        opt.zero_grad()
        m = per_rank // accumulate
        for k in range(accumulate):
            xs, ys = x[k * m:(k + 1) * m], y[k * m:(k + 1) * m]
            last = k == accumulate - 1
            ctx = model.no_sync() if (not last and isinstance(model, DDP)) else _null()
            with ctx:
                loss = ((model(xs) - ys) ** 2).mean() / accumulate
                loss.backward()
        opt.step()
    return [p.detach().numpy().copy() for p in model.parameters()]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    steps, per_rank = 5, 4
    result = {"world": world}

    # Reference: one process, the concatenated batch (every rank computes it).
    ref = train(make_model(0), steps, per_rank * world, 1, 0)

    # DDP: rank 1.. start from different weights; the construction broadcast makes them rank 0's.
    ddp = DDP(make_model(rank), bucket_cap_mb=0.01)
    assert len(ddp._buckets) > 1, len(ddp._buckets)
    got = train(ddp, steps, per_rank, world, rank)
    result["ddp_vs_single"] = max_diff(got, ref)
    assert result["ddp_vs_single"] < 1e-5, result

    # no_sync: 2 micro-batches per step, the first without communication.
    ddp = DDP(make_model(rank), bucket_cap_mb=0.01)
    got = train(ddp, steps, per_rank, world, rank, accumulate=2)
    result["no_sync_vs_single"] = max_diff(got, ref)
    assert result["no_sync_vs_single"] < 1e-5, result

    # Inside no_sync, gradients stay local: they differ between ranks.
    ddp = DDP(make_model(0))
    x = torch.full((2, 8), float(rank + 1))
    with ddp.no_sync():
        ddp(x).sum().backward()
    g = [None, None]
    dist.all_gather_object(g, ddp.module[0].bias.grad.numpy().copy())
    assert world == 1 or not np.allclose(g[0], g[1]), "no_sync gradients were communicated"

    # Buffers: rank 0's at construction, and again before every forward (broadcast_buffers=True).
    net = torch.nn.BatchNorm1d(3)
    net.running_mean.fill_(float(rank))
    ddp = DDP(net)
    assert float(net.running_mean.sum()) == 0.0
    net.running_mean.fill_(float(rank + 5))
    ddp(torch.ones(4, 3)).sum().backward()
    assert np.allclose(net.running_mean.numpy(), 0.9 * 5 + 0.1 * 1), net.running_mean  # momentum 0.1, mean 1

    # find_unused_parameters: rank 0 uses branch a, the others branch b; c is used nowhere.
    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c = torch.nn.Linear(4, 1), torch.nn.Linear(4, 1), torch.nn.Linear(4, 1)

        def forward(self, x, use_a):
            return (self.a if use_a else self.b)(x)

    torch.manual_seed(0)
    m = DDP(Branchy(), find_unused_parameters=True)
    m(torch.ones(2, 4), rank == 0).sum().backward()
    assert m.module.c.weight.grad is None  # unused everywhere: untouched, as torch
    expect = np.full((1, 4), 2.0 / world, np.float32)  # d/dW of sum over 2 rows of ones, averaged
    if world > 1:
        assert np.allclose(m.module.a.weight.grad.numpy(), expect), m.module.a.weight.grad
        assert np.allclose(m.module.b.weight.grad.numpy(), expect * (world - 1)), m.module.b.weight.grad
    # ... and without the flag, the next forward raises torch's error.
    m = DDP(Branchy())
    m(torch.ones(2, 4), True).sum().backward()
    try:
        m(torch.ones(2, 4), True)
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e), e
        result["unused_error"] = True
    else:
        raise AssertionError("no error for unused parameters")

    if rank == 0:
        print(json.dumps(result), flush=True)
    # The half-finished reduction above left collectives in flight: skip the exit barrier's wait on them.
    sys.stdout.flush()


if __name__ == "__main__":
    main()
