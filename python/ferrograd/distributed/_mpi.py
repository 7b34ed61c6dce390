"""The MPI process group: ferrograd tensors <-> MPI buffers, non-blocking collectives and the thread
that progresses them, Work handles, the collective timeout, and the guards that stop a failed job
from hanging.

Imported only by `init_process_group(backend="mpi")`: importing `mpi4py.MPI` initialises MPI.

Note [zero-copy buffers]: `Tensor.numpy()` shares memory with the tensor whatever its strides. A
C-contiguous array is handed to MPI as is, and the collective writes into the tensor's own storage.
A strided one goes through a contiguous copy that is written back when the collective completes.

Note [progress]: collectives are issued non-blocking (`Iallreduce`, `Ibcast`, ...) on the caller's
thread, so every rank issues them in program order. MPI advances a non-blocking collective only while
someone polls it, so a progress thread polls the collectives in flight every few tens of microseconds:
an all-reduce issued during backward proceeds while the engine (which runs without the GIL) computes
the next gradients. `wait()` polls flat out for a moment (a small collective then costs what a
blocking MPI call costs), then sleeps on the Work's Event until the progress thread completes it or
the process group's timeout passes: then it raises DistBackendError. The collective stays pending
forever, so the group is marked broken and the process aborts the job at exit instead of hanging in
`MPI_Finalize`. Both threads call MPI under one lock: MPI_THREAD_SERIALIZED is enough.

Note [failure of one rank]: a rank killed by a signal or leaving without `MPI_Finalize` makes the
launcher (mpirun/srun) kill the others at once. What would hang is a rank that stops calling
collectives while staying alive (a bug, an uncaught exception on its way through `MPI_Finalize`).
Hence (1) the timeout above; (2) an uncaught exception prints its traceback and then aborts the
whole job (what `python -m mpi4py` does); (3) at exit, a barrier with the same timeout on a private
communicator, so a rank that leaves while others still wait for it fails in bounded time too.
"""

import atexit
import os
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

from .. import _C
from . import DistBackendError

_SPIN_S, _POLL_S = 1e-3, 5e-5  # Note [progress]: wait() polls this long; the progress thread's period

_NP_OPS = {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
           "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}
# bool tensors: SUM and MAX are a logical or, PRODUCT and MIN a logical and (as torch's NCCL backend).
_BOOL_OPS = {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND,
             "BAND": MPI.LAND, "BXOR": MPI.LXOR}


def _mpi_op(op, arr):
    name = op.name
    if arr.dtype == np.bool_:
        if name not in _BOOL_OPS:
            raise ValueError(f"Cannot use ReduceOp.{name} with boolean inputs")
        return _BOOL_OPS[name]
    if name in ("BAND", "BOR", "BXOR") and arr.dtype.kind == "f":
        raise ValueError(f"Cannot use ReduceOp.{name} with floating-point inputs")
    return _NP_OPS[name]


def _divide(arr, n):
    """In place arr /= n for AVG: true division for floats, truncation toward zero for integers."""
    if arr.dtype.kind == "f":
        np.divide(arr, n, out=arr)
    else:
        np.copyto(arr, np.sign(arr) * (np.abs(arr) // n))


class _Buf:
    """The memory MPI reads and writes for one tensor (Note [zero-copy buffers])."""

    def __init__(self, tensor, name="tensor"):
        if not isinstance(tensor, _C.Tensor):
            raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                            f"             but got {type(tensor)} instead.")
        if tensor.device.type != "cpu":
            raise RuntimeError(f"the MPI backend takes CPU tensors; got a tensor on {tensor.device} "
                               "(CUDA tensors need the NCCL backend)")
        self.view = tensor.detach().numpy()  # shares the tensor's storage
        self.arr = self.view if self.view.flags.c_contiguous else np.ascontiguousarray(self.view)

    def write_back(self):
        if self.arr is not self.view:
            np.copyto(self.view, self.arr)


class Work:
    """A collective in flight (torch.distributed.Work): `wait()` blocks until it is done and the result
    is in the output tensors; `is_completed()` asks without blocking."""

    def __init__(self, pg, name, numel, request, finish, keep):
        self._pg, self._name, self._numel, self._seq = pg, name, numel, pg._seq
        self._req, self._finish, self._keep = request, finish, keep  # keep: the buffers MPI uses
        self._start = time.monotonic()
        self._event = threading.Event()
        self._error = None

    def _poll(self):
        """With the group's lock held: tests the request, finishes the Work when it completed."""
        if self._event.is_set():
            return True
        try:
            if not self._req.Test():
                return False
            for f in self._finish:
                f()
        except Exception as e:  # an MPI error; wait() reports it
            self._error = e
        self._finish = self._keep = ()
        self._event.set()
        return True

    def is_completed(self):
        with self._pg._cv:
            return self._poll()

    def wait(self, timeout=None):
        """Note [progress]; `timeout` (a timedelta) overrides the group's."""
        limit = self._pg.timeout if timeout is None else timeout.total_seconds()
        spin_until = time.monotonic() + _SPIN_S
        while not self.is_completed() and time.monotonic() < spin_until:
            pass
        self._pg._watch(self)
        if not self._event.wait(max(0.0, self._start + limit - time.monotonic())):
            self._pg.broken = True
            raise DistBackendError(
                f"ferrograd.distributed: {self._name} (collective #{self._seq}, {self._numel} elements) on rank "
                f"{self._pg.rank} of {self._pg.size} timed out after {time.monotonic() - self._start:.1f} s waiting "
                "for the other ranks: one has probably died, hung, or called the collectives in a different "
                "order (the timeout is init_process_group's `timeout`).")
        if self._error is not None:
            self._pg.broken = True
            raise DistBackendError(f"ferrograd.distributed: {self._name} failed: {self._error}") from self._error
        return True


class ProcessGroupMPI:
    """COMM_WORLD, duplicated so that ferrograd's collectives never match a user's own mpi4py calls,
    with its progress thread (Note [progress])."""

    def __init__(self, timeout_s):
        if MPI.Query_thread() < MPI.THREAD_SERIALIZED:
            raise RuntimeError("ferrograd.distributed needs MPI_THREAD_SERIALIZED or better; this MPI gives "
                               f"thread level {MPI.Query_thread()} (mpi4py.rc.thread_level)")
        self.comm = MPI.COMM_WORLD.Dup()
        self._exit_comm = MPI.COMM_WORLD.Dup()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.timeout = timeout_s
        self.broken = False
        self._seq = 0
        self._cv = threading.Condition(threading.Lock())  # held for every MPI call
        self._inflight = []
        self._stop = False
        self._thread = threading.Thread(target=self._progress, name="ferrograd-mpi-progress", daemon=True)
        self._thread.start()
        _guards.install(self)

    def _progress(self):
        with self._cv:
            while not self._stop:
                self._inflight = [w for w in self._inflight if not w._poll()]
                self._cv.wait(_POLL_S if self._inflight else None)

    def _stop_progress(self):
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(1.0)

    def _watch(self, work):
        """Hands `work` to the progress thread."""
        with self._cv:
            if not work._poll() and work not in self._inflight:
                self._inflight.append(work)
                self._cv.notify()

    def _start(self, name, start_fn, bufs, finish=(), background=True):
        if self.broken:
            raise DistBackendError(f"ferrograd.distributed: cannot run {name}: an earlier collective failed or "
                                   "timed out, and the process group is unusable")
        with self._cv:
            self._seq += 1
            try:
                req = start_fn()
            except MPI.Exception as e:
                raise DistBackendError(f"ferrograd.distributed: {name} failed in MPI: {e}") from None
            work = Work(self, name, max((b.size for b in bufs), default=0), req, finish, bufs)
            if background:  # else the caller waits at once, and hands it over only if that takes long
                self._inflight.append(work)
                self._cv.notify()
        return work

    def allreduce(self, tensor, op, background=True):
        b = _Buf(tensor)
        mop = _mpi_op(op, b.arr)
        finish = [b.write_back]
        if op.name == "AVG":
            finish.insert(0, lambda: _divide(b.arr, self.size))
        return self._start("all_reduce", lambda: self.comm.Iallreduce(MPI.IN_PLACE, b.arr, mop), [b.arr], finish,
                           background)

    def broadcast(self, tensor, src, background=True):
        b = _Buf(tensor)
        return self._start("broadcast", lambda: self.comm.Ibcast(b.arr, root=src), [b.arr], [b.write_back],
                           background)

    def allgather(self, out, inp, background=True):
        """out: one contiguous buffer of size * inp.size elements, or a list of `size` tensors."""
        b = _Buf(inp, "tensor")
        if isinstance(out, list):
            outs = [_Buf(t, "tensor_list") for t in out]
            recv = np.empty((self.size,) + b.arr.shape, b.arr.dtype)

            def finish():
                for o, part in zip(outs, recv):
                    np.copyto(o.view, part.reshape(o.view.shape))
            return self._start("all_gather", lambda: self.comm.Iallgather(b.arr, recv), [b.arr, recv], [finish],
                               background)
        o = _Buf(out, "output_tensor")
        return self._start("all_gather_into_tensor", lambda: self.comm.Iallgather(b.arr, o.arr), [b.arr, o.arr],
                           [o.write_back], background)

    def reduce_scatter(self, out, inp, op, background=True):
        """inp: one contiguous buffer of size * out.size elements (a list is concatenated first)."""
        o = _Buf(out, "output")
        if isinstance(inp, list):
            send = np.concatenate([_Buf(t, "input_list").arr.reshape(-1) for t in inp])
        else:
            send = _Buf(inp, "input").arr
        mop = _mpi_op(op, o.arr)
        finish = [o.write_back]
        if op.name == "AVG":
            finish.insert(0, lambda: _divide(o.arr, self.size))
        return self._start("reduce_scatter", lambda: self.comm.Ireduce_scatter_block(send, o.arr, mop),
                           [send, o.arr], finish, background)

    def barrier(self, background=True, comm=None):
        return self._start("barrier", (comm or self.comm).Ibarrier, [], (), background)

    def objects(self, fn):
        """A pickle-based mpi4py collective (allgather, bcast): blocking, after the collectives in flight,
        which it must follow on every rank."""
        for w in list(self._inflight):
            w.wait()
        with self._cv:
            return fn(self.comm)

    def destroy(self):
        _guards.uninstall(self)
        self._stop_progress()
        if not self.broken:
            with self._cv:
                self.comm.Free()
                self._exit_comm.Free()


class _ExitGuards:
    """Note [failure of one rank], (2) and (3): installed with the first process group."""

    def __init__(self):
        self.pg = None
        self._installed = False

    def install(self, pg):
        self.pg = pg
        if not self._installed:
            self._installed = True
            self._prev_hook = sys.excepthook
            sys.excepthook = self._excepthook
            atexit.register(self._at_exit)

    def uninstall(self, pg):
        if self.pg is pg:
            self.pg = None

    def _abort(self, why):
        sys.stdout.flush()
        sys.stderr.write(f"ferrograd.distributed: rank {MPI.COMM_WORLD.Get_rank()}: {why}; aborting the job "
                         "(MPI_Abort) so that no rank waits for it forever\n")
        sys.stderr.flush()
        time.sleep(0.2)  # mpirun (MPICH's hydra) forwards output asynchronously and drops what is late at abort
        MPI.COMM_WORLD.Abort(1)
        os._exit(1)  # MPICH's MPI_Abort may return while the launcher tears the job down

    def _excepthook(self, tp, value, tb):
        self._prev_hook(tp, value, tb)
        pg = self.pg
        if pg is not None and (pg.size > 1 or pg.broken):
            self._abort(f"uncaught {tp.__name__}")

    def _at_exit(self):
        pg = self.pg
        if pg is None:
            return
        if pg.broken:
            self._abort("a collective failed earlier")
        if pg.size > 1:
            try:
                pg.barrier(False, pg._exit_comm).wait()
            except DistBackendError:
                self._abort(f"this rank has reached the end of the program, but not every rank has within "
                            f"{pg.timeout:.1f} s (init_process_group's `timeout`): one has probably died, hung, "
                            "or still waits in a collective this rank did not call")
        pg._stop_progress()  # no MPI call from it during MPI_Finalize


_guards = _ExitGuards()
