"""ferrograd.distributed, DistributedDataParallel and DistributedSampler.

Multi-process tests launch `mpirun -n 2` (MPICH from requirements-test.txt, on loopback) on the scripts in
tests/distributed/, which assert inside and print a JSON line from rank 0; they skip when mpi4py or mpirun
is missing. The rest run in this process and never initialise MPI (importing mpi4py.MPI would)."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import ferrograd
import ferrograd.distributed as dist
from ferrograd.utils.data import DistributedSampler

HERE = Path(__file__).parent / "distributed"
MPIRUN = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(not (dist.is_available() and MPIRUN),
                               reason="needs mpi4py and mpirun (pip install -r requirements-test.txt)")


def launch(script, *args, n=2, timeout=120, mpirun_args=()):
    env = dict(os.environ, FERROGRAD_NUM_THREADS="1")  # two ranks share the machine's cores
    cmd = [MPIRUN, *mpirun_args, "-n", str(n), sys.executable, str(HERE / script), *args] if n else \
        [sys.executable, str(HERE / script), *args]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


def result(out):
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


# ---- in this process, without MPI ------------------------------------------------------------

def test_import_does_not_load_mpi():
    code = ("import sys, ferrograd, ferrograd.distributed as d, ferrograd.nn.parallel; "
            "d.is_available(); print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert ferrograd.nn.parallel.DistributedDataParallel is not None


def test_backend_errors():
    if not dist.is_nccl_available():  # (with a GPU and NCCL, tests/test_nccl.py covers the backend)
        with pytest.raises(RuntimeError, match="the NCCL backend needs a CUDA device and NCCL"):
            dist.init_process_group("nccl")
    with pytest.raises(RuntimeError, match="doesn't have Gloo built in"):
        dist.init_process_group(backend="gloo")
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("carrier-pigeon")
    with pytest.raises(TypeError, match="datetime.timedelta"):
        dist.init_process_group("mpi", timeout=30)
    assert not dist.is_initialized()


def test_not_initialized():
    msg = "Default process group has not been initialized"
    for call in (dist.get_rank, dist.get_world_size, lambda: dist.all_reduce(ferrograd.ones(2)),
                 lambda: dist.barrier(), lambda: DistributedSampler(range(4)),
                 lambda: ferrograd.nn.parallel.DistributedDataParallel(ferrograd.nn.Linear(2, 2))):
        with pytest.raises(ValueError, match=msg):
            call()
    with pytest.raises(ValueError, match=msg):
        torch.distributed.get_rank()  # the same error as torch


@pytest.mark.parametrize("n", [0, 1, 7, 10, 11])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_like_torch(n, replicas, drop_last):
    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop_last)
        ref = torch.utils.data.DistributedSampler(data, num_replicas=replicas, rank=rank, shuffle=False,
                                                  drop_last=drop_last)
        if n == 0 and not drop_last:
            assert len(ours) == len(ref) == 0
            continue
        assert list(ours) == list(ref) and len(ours) == len(ref) and ours.total_size == ref.total_size
        shuffled = DistributedSampler(data, num_replicas=replicas, rank=rank, drop_last=drop_last)
        assert len(shuffled) == len(ref)
    if n == 0:
        return
    # Shuffled: every rank draws the same permutation, so the shards cover the dataset (padded by
    # repetition, or cut with drop_last) without overlap beyond the padding.
    shards = [list(DistributedSampler(data, num_replicas=replicas, rank=r, seed=5, drop_last=drop_last))
              for r in range(replicas)]
    flat = [i for s in shards for i in s]
    if drop_last:
        assert len(set(flat)) == len(flat) == replicas * (n // replicas)
    else:
        assert set(flat) == set(data) and len(flat) == replicas * -(-n // replicas)


def test_distributed_sampler_epochs():
    data = list(range(50))
    s = DistributedSampler(data, num_replicas=2, rank=1, seed=3)
    first = list(s)
    assert list(s) == first  # the same epoch, the same order
    s.set_epoch(1)
    assert list(s) != first
    other = DistributedSampler(data, num_replicas=2, rank=0, seed=3)
    other.set_epoch(1)
    assert sorted(list(s) + list(other)) == data  # both ranks used epoch 1's permutation
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(data, num_replicas=2, rank=2)
    loader = ferrograd.utils.data.DataLoader(data, batch_size=5, sampler=s)
    assert sum(len(b) for b in loader) == 25


# ---- under mpirun --------------------------------------------------------------------------------

@needs_mpi
def test_collectives():
    rc, out, _ = launch("collectives.py")
    assert rc == 0, out
    assert result(out) == {"world": 2, "checked": 378}


@needs_mpi
def test_ddp_matches_single_process():
    """DDP over 2 ranks (several buckets), K SGD steps = one process on the concatenated batch; also
    no_sync accumulation, find_unused_parameters, and torch's error for unused parameters."""
    rc, out, _ = launch("ddp_parity.py")
    assert rc == 0, out
    r = result(out)
    assert r["world"] == 2 and r["ddp_vs_single"] < 1e-5 and r["no_sync_vs_single"] < 1e-5 and r["unused_error"]


@needs_mpi
def test_without_launcher_is_world_of_one():
    rc, out, _ = launch("ddp_parity.py", n=0)
    assert rc == 0, out
    assert result(out)["world"] == 1


@needs_mpi
@pytest.mark.parametrize("mode, says", [
    ("kill", "BAD TERMINATION"),  # the launcher reports a rank killed by a signal
    ("exit", ""),  # the launcher ends the job with the dead rank's exit status
    ("raise", "rank 1: uncaught RuntimeError; aborting the job"),
    ("hang", "timed out after"),
    ("leave", "not every rank has within"),
])
def test_a_failing_rank_ends_the_job(mode, says):
    rc, out, seconds = launch("failure.py", mode, timeout=60)
    assert rc != 0, out
    assert seconds < 30, (seconds, out)  # the collective timeout is 3 s
    assert says in out, out
    assert "all_reduce returned" not in out


@needs_mpi
def test_timeout_without_launcher_cleanup():
    """With the launcher's cleanup off, the survivor's own timeout still ends the job, with a clear error."""
    rc, out, seconds = launch("failure.py", "exit", timeout=60, mpirun_args=("-disable-auto-cleanup",))
    assert rc != 0 and seconds < 30, out
    assert "DistBackendError" in out and "all_reduce (collective #2, 1000 elements) on rank 0 of 2 timed out" in out
