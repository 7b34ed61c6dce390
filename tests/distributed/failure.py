"""Run under `mpirun -n 2 ... failure.py MODE`: rank 1 fails in one way while rank 0 enters an all_reduce.
The job must end, non-zero, within a bounded time, and say why. Modes:
  kill       rank 1 is killed (SIGKILL, as by the OOM killer): the launcher ends the job
  exit       rank 1 leaves with os._exit(1), skipping MPI_Finalize: the launcher ends the job
  raise      rank 1 raises an uncaught exception: ferrograd aborts the job after the traceback
  hang       rank 1 stays alive but never joins: rank 0's all_reduce times out (DistBackendError)
  leave      rank 1 returns normally, without joining: the timeout on rank 0, the exit barrier on rank 1
"""

import datetime
import os
import signal
import sys
import time

import ferrograd as torch
import ferrograd.distributed as dist

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(os.environ.get("FG_TIMEOUT", "3"))))
t = torch.ones(1000)
# Everyone is up (a slow start is no failure).
dist.all_reduce(t, async_op=True).wait(timeout=datetime.timedelta(seconds=60))
if dist.get_rank() == 1:
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "exit":
        os._exit(1)
    elif mode == "raise":
        raise RuntimeError("rank 1 fails on purpose")
    elif mode == "hang":
        time.sleep(600)
    elif mode == "leave":
        sys.exit(0)
else:
    try:
        dist.all_reduce(t)
    except dist.DistBackendError as e:
        print(f"rank 0 caught DistBackendError: {e}", flush=True)
        raise
    print("rank 0: all_reduce returned", flush=True)
