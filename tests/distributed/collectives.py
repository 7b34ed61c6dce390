"""Run under `mpirun -n N`: every collective, for several sizes and dtypes, blocking and async,
contiguous and strided, checked against the values NumPy computes from what each rank contributes.
Asserts fail the job (and abort the others); rank 0 prints one JSON line at the end."""

import json

import numpy as np

import ferrograd as torch
import ferrograd.distributed as dist
from ferrograd.distributed import ReduceOp

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool}
SIZES = [(), (0,), (1,), (7,), (3, 5), (1000,), (257, 1031)]


def contribution(rank, shape, dtype):
    """Rank r's data: deterministic, different on each rank, exact in every dtype."""
    n = int(np.prod(shape, dtype=np.int64))
    base = (np.arange(n) * 7 + 3 * rank + 1) % 11 - 5
    if dtype == "bool":
        return (base > rank).reshape(shape)
    return base.astype(dtype).reshape(shape)


def expected_reduce(arrs, op, dtype):
    stack = np.stack(arrs)
    if dtype == "bool":
        return {ReduceOp.SUM: stack.any(0), ReduceOp.MAX: stack.any(0), ReduceOp.MIN: stack.all(0),
                ReduceOp.PRODUCT: stack.all(0)}[op]
    out = {ReduceOp.SUM: stack.sum(0), ReduceOp.MAX: stack.max(0), ReduceOp.MIN: stack.min(0),
           ReduceOp.PRODUCT: stack.prod(0), ReduceOp.AVG: stack.sum(0)}[op]
    if op is ReduceOp.AVG:
        out = out / len(arrs) if dtype.startswith("float") else np.trunc(out / len(arrs))
    return out.astype(dtype)


def check(got, want, what):
    got = got.numpy() if hasattr(got, "numpy") else got
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype, want.dtype)
    assert np.array_equal(got, want), (what, got, want)


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    count = 0
    for dname, dtype in DTYPES.items():
        ops = [ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT]
        if dname != "bool":
            ops.append(ReduceOp.AVG)
        for shape in SIZES:
            mine = contribution(rank, shape, dname)
            every = [contribution(r, shape, dname) for r in range(world)]
            for op in ops:
                for async_op in (False, True):
                    t = torch.from_numpy(mine.copy())
                    arr = t.numpy()
                    work = dist.all_reduce(t, op, async_op=async_op)
                    if async_op:
                        assert work.wait() is True and work.is_completed()
                    else:
                        assert work is None
                    check(t, expected_reduce(every, op, dname), f"all_reduce {dname} {shape} {op} async={async_op}")
                    assert arr.size == 0 or np.shares_memory(arr, t.numpy())  # written in place
                    count += 1
            # Strided (transposed) tensors: through a contiguous copy, written back.
            if len(shape) == 2:
                t = torch.from_numpy(mine.T.copy()).t()
                assert not t.is_contiguous()
                dist.all_reduce(t, ReduceOp.MAX)
                check(t, expected_reduce(every, ReduceOp.MAX, dname), f"strided all_reduce {dname}")
            for src in range(world):
                t = torch.from_numpy(mine.copy())
                dist.broadcast(t, src)
                check(t, every[src], f"broadcast {dname} {shape} from {src}")
            outs = [torch.from_numpy(np.zeros_like(mine)) for _ in range(world)]
            work = dist.all_gather(outs, torch.from_numpy(mine.copy()), async_op=True)
            work.wait()
            for r in range(world):
                check(outs[r], every[r], f"all_gather {dname} {shape}")
            big = torch.from_numpy(np.zeros((world,) + shape, mine.dtype))
            dist.all_gather_into_tensor(big, torch.from_numpy(mine.copy()))
            check(big, np.stack(every), f"all_gather_into_tensor {dname} {shape}")
            # reduce_scatter: rank r's input list is [contribution(r, ...) + k for k in ranks]
            for op in (ReduceOp.SUM, ReduceOp.MAX):
                out = torch.from_numpy(np.zeros_like(mine))
                inputs = [torch.from_numpy(_shift(mine, k)) for k in range(world)]
                dist.reduce_scatter(out, inputs, op)
                check(out, expected_reduce([_shift(a, rank) for a in every], op, dname), f"reduce_scatter {dname}")
                out = torch.from_numpy(np.zeros_like(mine))
                dist.reduce_scatter_tensor(out, torch.from_numpy(np.stack([_shift(mine, k) for k in range(world)])),
                                           op, async_op=True).wait()
                check(out, expected_reduce([_shift(a, rank) for a in every], op, dname), f"reduce_scatter_tensor")
            count += 4
    # Large float32 buffer (4 MB): in place, AVG.
    t = torch.full((1 << 20,), float(rank))
    dist.all_reduce(t, ReduceOp.AVG)
    assert float(t.min()) == float(t.max()) == (world - 1) / 2
    # A tensor that requires grad (a parameter): in place on its data, as torch.
    p = torch.nn.Parameter(torch.full((3,), float(rank)))
    dist.all_reduce(p)
    check(p.detach(), np.full(3, world * (world - 1) / 2, np.float32), "parameter")
    # Errors, with torch's exception types.
    for bad, kind in ((lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool), ReduceOp.AVG), ValueError),
                      (lambda: dist.all_reduce([1.0]), TypeError),
                      (lambda: dist.broadcast(torch.ones(2), world), ValueError),
                      (lambda: dist.all_gather([torch.ones(2)] * (world + 1), torch.ones(2)), ValueError)):
        try:
            bad()
        except kind:
            pass
        else:
            raise AssertionError(f"no {kind.__name__}")
    assert dist.barrier() is None
    dist.barrier(async_op=True).wait()
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank})
    assert objs == [{"rank": r} for r in range(world)], objs
    lst = [rank, "x"] if rank == 0 else [None, None]
    dist.broadcast_object_list(lst, src=0)
    assert lst == [0, "x"], lst
    assert dist.get_backend() == "mpi" and dist.is_initialized() and dist.get_rank(dist.group.WORLD) == rank
    dist.destroy_process_group()
    assert not dist.is_initialized()
    if rank == 0:
        print(json.dumps({"world": world, "checked": count}), flush=True)


def _shift(a, k):
    return np.asarray(a ^ bool(k % 2) if a.dtype == np.bool_ else a + k, dtype=a.dtype)


if __name__ == "__main__":
    main()
