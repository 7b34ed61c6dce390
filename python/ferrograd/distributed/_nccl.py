"""The NCCL process group: collectives on CUDA tensors through NCCL (src/backend/cuda/nccl.rs).

Rank and world size come from the MPI launcher (`mpirun -n N python train.py`, `srun`), as for the
MPI backend; rank 0 makes NCCL's unique id and MPI (mpi4py) hands it to the others. A process
started without a launcher is rank 0 of a world of one, and needs no MPI.

NCCL queues each collective on the device's stream after the kernels that produced its buffers, and
later kernels run after it: `wait()` on the handle of an async collective has nothing to wait for on
the host (as torch's NCCL work, which makes the current stream wait). Reading the result on the host
(`.item()`, `.cpu()`) waits for it.
"""

import os

from .. import _C

# NCCL's reduce ops; bool tensors: SUM/MAX are a logical or, PRODUCT/MIN a logical and (as torch).
_OPS = {"SUM": "sum", "AVG": "avg", "PRODUCT": "prod", "MIN": "min", "MAX": "max"}
_BOOL_OPS = {"SUM": "max", "MAX": "max", "PRODUCT": "min", "MIN": "min"}

_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS", "MPI_LOCALNRANKS")


class Work:
    """The handle of a collective (already ordered on the device's stream)."""

    def __init__(self, name, finish=()):
        self.name = name
        for f in finish:
            f()

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True

    def synchronize(self):
        _C._cuda_synchronize()


def _launched_by_mpi():
    return any(v in os.environ for v in _LAUNCHER_VARS)


class ProcessGroupNCCL:
    def __init__(self, timeout_s):
        if not _C._nccl_available():
            raise RuntimeError("ferrograd.distributed: the NCCL backend needs a CUDA device and NCCL "
                               "(libnccl.so.2 from the nvidia-nccl pip package torch installs, or the system's)")
        self.timeout = timeout_s
        self._mpi = None
        if _launched_by_mpi():
            from mpi4py import MPI  # initialises MPI: only to learn the rank and share NCCL's id
            self._mpi = MPI.COMM_WORLD.Dup()
            self.rank, self.size = self._mpi.Get_rank(), self._mpi.Get_size()
        else:
            self.rank, self.size = 0, 1
        uid = _C._nccl_unique_id() if self.rank == 0 else None
        if self._mpi is not None:
            uid = self._mpi.bcast(uid, root=0)
        self.comm = _C._nccl_init(list(uid), self.size, self.rank)

    # ---- helpers ------------------------------------------------------------------------------

    @staticmethod
    def _check(t, what="tensor"):
        if not t.is_cuda:
            raise RuntimeError(f"ferrograd.distributed: the NCCL backend takes CUDA tensors; {what} is on {t.device}")

    @staticmethod
    def _op(op, t):
        table = _BOOL_OPS if t.dtype == _C.bool else _OPS
        if op.name not in table:
            raise ValueError(f"ReduceOp.{op.name} is not supported by the NCCL backend for {t.dtype}")
        if op.name == "AVG" and not t.is_floating_point():
            raise ValueError("ReduceOp.AVG on the NCCL backend takes floating point tensors")
        return table[op.name]

    @staticmethod
    def _flat(t):
        """A contiguous tensor with t's values (t itself when contiguous), and how to write it back."""
        if t.is_contiguous():
            return t, ()
        c = t.contiguous()
        return c, (lambda: t.copy_(c),)

    # ---- collectives --------------------------------------------------------------------------

    def allreduce(self, tensor, op, background=True):
        self._check(tensor)
        nop = self._op(op, tensor)
        buf, back = self._flat(tensor)
        _C._nccl_all_reduce(self.comm, buf, nop)
        return Work("all_reduce", back)

    def broadcast(self, tensor, src, background=True):
        self._check(tensor)
        buf, back = self._flat(tensor)
        _C._nccl_broadcast(self.comm, buf, src)
        return Work("broadcast", back)

    def allgather(self, out, inp, background=True):
        self._check(inp, "input")
        src, _ = self._flat(inp)
        if isinstance(out, list):
            for t in out:
                self._check(t, "tensor_list")
            flat = _C.empty((self.size * inp.numel(),), dtype=inp.dtype, device=inp.device)
            _C._nccl_all_gather(self.comm, flat, src)

            def finish():
                for r, t in enumerate(out):
                    t.copy_(flat[r * inp.numel():(r + 1) * inp.numel()].reshape(t.shape))
            return Work("all_gather", (finish,))
        self._check(out, "output_tensor")
        buf, back = self._flat(out)
        _C._nccl_all_gather(self.comm, buf, src)
        return Work("all_gather_into_tensor", back)

    def reduce_scatter(self, out, inp, op, background=True):
        self._check(out, "output")
        nop = self._op(op, out)
        if isinstance(inp, list):
            for t in inp:
                self._check(t, "input_list")
            send = _C.cat([t.reshape(-1) for t in inp])
        else:
            self._check(inp, "input")
            send, _ = self._flat(inp)
        buf, back = self._flat(out)
        _C._nccl_reduce_scatter(self.comm, buf, send, nop)
        return Work("reduce_scatter", back)

    def barrier(self, background=True, comm=None):
        one = _C.zeros((1,), device="cuda")
        _C._nccl_all_reduce(self.comm, one, "sum")
        _C._cuda_synchronize()
        return Work("barrier")

    def objects(self, fn):
        """A pickle-based collective (allgather, bcast of Python objects) over MPI; with one process,
        the same result computed locally."""
        if self._mpi is not None:
            return fn(self._mpi)

        class _One:
            @staticmethod
            def allgather(obj):
                return [obj]

            @staticmethod
            def bcast(obj, root=0):
                return obj
        return fn(_One)

    def destroy(self):
        if self.comm is not None:
            _C._cuda_synchronize()
            _C._nccl_destroy(self.comm)
            self.comm = None
        if self._mpi is not None:
            self._mpi.Free()
            self._mpi = None
