"""DistributedDataParallel benchmark (not a test): time per training step, 1 process vs N processes
on this machine, and how much of the gradient all-reduce is hidden behind backward.

    python benches/ddp_bench.py [--ranks 2] [--steps 30] [--batch 64] [--width 1024]

runs the single-process baseline here, then itself under `mpirun -n RANKS ... --worker`. Each rank
trains an MLP (784-W-W-W-10) with SGD on its own batch of `--batch` rows (the global batch grows with the
ranks: weak scaling). A rank measures, per step (median):
  compute  forward + backward + step with no communication (inside `no_sync()`)
  ddp      the same with DDP's overlapped, bucketed all-reduce
  comm     the all-reduce alone: every bucket's, blocking, one after the other
  tail     how long backward waits, after its last gradient, for the all-reduces still running
and reports 1 - tail / comm (the share of the all-reduce that ran during backward) and the net share
hidden, 1 - (ddp - compute) / comm. The two differ when communication competes with backward for the
cores (MPI over shared memory copies with the CPU): then it runs during backward without saving time.
Threads: FERROGRAD_NUM_THREADS (default: cores / ranks for each rank, all cores for the baseline).
"""

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ferrograd as torch


def model(width):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                               torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 10))


def timed_step(net, opt, x, y, ctx=None):
    t0 = time.perf_counter()
    opt.zero_grad()
    with ctx() if ctx is not None else contextlib.nullcontext():
        torch.nn.functional.cross_entropy(net(x), y).backward()
    opt.step()
    return time.perf_counter() - t0


def worker(args):
    import ferrograd.distributed as dist
    from ferrograd.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    x, y = torch.randn(args.batch, 784), torch.randint(0, 10, (args.batch,))
    ddp = DDP(model(args.width), bucket_cap_mb=args.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    tail, finish = [], ddp._finish  # the wait for the all-reduces after backward's last gradient

    def timed_finish():
        t0 = time.perf_counter()
        finish()
        tail.append(time.perf_counter() - t0)
    ddp._finish = timed_finish
    # The three measurements interleave, step by step, so that a change in the machine's load
    # (other tenants) affects them alike.
    compute, step, comm = [], [], []
    for _ in range(args.steps):
        dist.barrier()
        compute.append(timed_step(ddp, opt, x, y, ddp.no_sync))
        dist.barrier()
        step.append(timed_step(ddp, opt, x, y))
        dist.barrier()
        t0 = time.perf_counter()
        for bucket in ddp._buckets:
            dist.all_reduce(bucket.buffer_t)
        comm.append(time.perf_counter() - t0)
    med = lambda v: statistics.median(v[2:]) * 1e3  # noqa: E731  (the first steps warm up)
    report = {"rank": rank, "world": world, "compute_ms": med(compute), "ddp_ms": med(step), "comm_ms": med(comm),
              "tail_ms": med(tail),
              "buckets": len(ddp._buckets), "grad_mb": sum(b.buffer.nbytes for b in ddp._buckets) / 2**20}
    every = [None] * world
    dist.all_gather_object(every, report)
    if rank == 0:
        print(json.dumps(every), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=64, help="rows per rank and step")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--bucket-cap-mb", type=float, default=None)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        return worker(args)

    cores = os.cpu_count()
    env = dict(os.environ)
    threads = env.get("FERROGRAD_NUM_THREADS") or str(max(1, cores // args.ranks))
    torch.set_num_threads(int(env.get("FERROGRAD_NUM_THREADS") or cores))
    net = model(args.width)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x, y = torch.randn(args.batch, 784), torch.randint(0, 10, (args.batch,))
    single = statistics.median([timed_step(net, opt, x, y) for _ in range(args.steps)][2:])
    print(f"{cores} cores; MLP 784-{args.width}x3-10, {sum(q.numel() for q in net.parameters()) / 1e6:.2f} M "
          f"parameters; batch {args.batch} per process; median of {args.steps - 2} steps")
    print(f"1 process ({torch.get_num_threads()} threads): {single * 1e3:8.1f} ms/step "
          f"{args.batch / single:8.0f} samples/s")

    mpirun = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
    cmd = [mpirun, "-n", str(args.ranks), sys.executable, __file__, "--worker", "--steps", str(args.steps),
           "--batch", str(args.batch), "--width", str(args.width)]
    if args.bucket_cap_mb is not None:
        cmd += ["--bucket-cap-mb", str(args.bucket_cap_mb)]
    out = subprocess.run(cmd, env=dict(env, FERROGRAD_NUM_THREADS=threads), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stdout + out.stderr)
    ranks = json.loads(out.stdout.strip().splitlines()[-1])
    r0 = ranks[0]
    ddp = max(r["ddp_ms"] for r in ranks)
    compute = max(r["compute_ms"] for r in ranks)
    comm = max(r["comm_ms"] for r in ranks)
    tail = max(r["tail_ms"] for r in ranks)
    hidden = min(1.0, max(0.0, 1 - (ddp - compute) / comm))
    print(f"{args.ranks} processes ({threads} threads each), DDP: {ddp:8.1f} ms/step "
          f"{args.ranks * args.batch / ddp * 1e3:8.0f} samples/s  ({r0['buckets']} buckets, {r0['grad_mb']:.1f} MB)")
    print(f"  per rank: compute {compute:.1f} ms (no_sync), all-reduce alone {comm:.1f} ms, DDP step {ddp:.1f} ms")
    print(f"  backward waits {tail:.1f} ms for the all-reduces after its last gradient (averaging included): "
          f"{max(0.0, 1 - tail / comm):.0%} of the all-reduce ran during backward")
    print(f"  net: the step costs {ddp - compute:.1f} ms more than without communication: {hidden:.0%} of the "
          "all-reduce time hidden")


if __name__ == "__main__":
    main()
