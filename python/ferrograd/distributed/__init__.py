"""torch.distributed: the default process group and collectives on tensors.

CPU tensors go through MPI (mpi4py, any MPI: MPICH from PyPI with `pip install ferrograd[distributed]`,
or the system's OpenMPI), backend "mpi"; CUDA tensors through NCCL (backend "nccl", see _nccl.py).
Rank and world size come from the launcher (`mpirun -n 4 python train.py`, `srun`), through MPI.
Collectives work in place on the tensors' storage (see _mpi.py). Importing this module is cheap:
MPI is loaded and initialised by `init_process_group`.
"""

import datetime as _datetime
import enum as _enum
import importlib.util as _importlib_util

__all__ = [
    "Backend", "DistBackendError", "DistError", "ReduceOp", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "all_reduce", "barrier", "broadcast", "broadcast_object_list", "destroy_process_group",
    "get_backend", "get_rank", "get_world_size", "group", "init_process_group", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available", "reduce_scatter",
    "reduce_scatter_tensor",
]

default_pg_timeout = _datetime.timedelta(minutes=30)  # torch's default for non-NCCL groups


class ReduceOp(_enum.Enum):
    """torch.distributed.ReduceOp: `ReduceOp.SUM`, ..., `ReduceOp.AVG` (a sum divided by the world size)."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


class Backend(str):
    """Backend names, as torch spells them."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return str.__new__(cls, name.lower())


_pg = None  # the default process group (_mpi.ProcessGroupMPI), or None


class _World:
    """`group.WORLD`: the default process group once initialised (the only group ferrograd has)."""

    WORLD = None


group = _World  # as torch.distributed.group (functions below take a `group` argument, hence the alias)


def is_available():
    """True when the MPI backend can be used: mpi4py is installed (`pip install ferrograd[distributed]`)."""
    return _importlib_util.find_spec("mpi4py") is not None


def is_mpi_available():
    return is_available()


def is_nccl_available():
    """True when a CUDA device and the NCCL library are there."""
    from .. import _C
    return _C._nccl_available()


def is_gloo_available():
    return False


def is_initialized():
    return _pg is not None


class DistError(RuntimeError):
    """torch.distributed.DistError."""


class DistBackendError(DistError):
    """torch.distributed.DistBackendError: the backend failed (an MPI error, or a collective timed out)."""


def __getattr__(name):
    if name == "Work":  # the handle of an async collective; lives with the MPI code
        from ._mpi import Work
        return Work
    raise AttributeError(f"module 'ferrograd.distributed' has no attribute '{name}'")


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Joins the job started by the launcher. `backend`: "mpi" (the default) or "nccl"; `timeout`
    (a timedelta, default 30 min) bounds every collective: past it, the wait raises DistBackendError."""
    global _pg
    if _pg is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend or Backend.MPI)
    if name.startswith("cuda:"):
        name = Backend(Backend.NCCL)
    if name == Backend.GLOO:
        raise RuntimeError("Distributed package doesn't have Gloo built in; ferrograd's CPU backend is MPI: "
                           "init_process_group(backend='mpi') under mpirun/srun")
    if name not in (Backend.MPI, "cpu:mpi", Backend.NCCL):
        raise ValueError(f"Invalid backend: '{backend}' (ferrograd has 'mpi' and 'nccl')")
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, _datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    if name == Backend.NCCL:
        from . import _nccl
        pg = _nccl.ProcessGroupNCCL(timeout.total_seconds())
        pg.backend = Backend.NCCL
    else:
        if not is_available():
            raise RuntimeError("Distributed package doesn't have MPI built in: ferrograd's MPI backend needs mpi4py "
                               "and an MPI runtime (pip install 'ferrograd[distributed]')")
        try:
            from . import _mpi
        except (ImportError, RuntimeError) as e:
            raise RuntimeError(f"ferrograd.distributed: could not load MPI through mpi4py: {e}") from e
        pg = _mpi.ProcessGroupMPI(timeout.total_seconds())
        pg.backend = Backend.MPI
    # Rank and world size are the launcher's; explicit ones must agree, as for torch's MPI backend.
    for what, given, actual in (("world_size", world_size, pg.size), ("rank", rank, pg.rank)):
        if given not in (-1, None) and given != actual:
            pg.destroy()
            raise ValueError(f"init_process_group({what}={given}) disagrees with the launcher, which gives "
                             f"{what} {actual}")
    _pg = _World.WORLD = pg


def destroy_process_group(group=None):
    """Leaves the default process group (MPI itself stays initialised until exit; a new
    init_process_group may follow)."""
    global _pg
    pg = _group(group)
    pg.destroy()
    _pg = _World.WORLD = None


def _group(group):
    if _pg is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    if group is not None and group is not _pg:
        raise ValueError("ferrograd.distributed supports the default (world) process group only")
    return _pg


def get_rank(group=None):
    return _group(group).rank


def get_world_size(group=None):
    return _group(group).size


def get_backend(group=None):
    return _group(group).backend


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _check_op(op):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ferrograd.distributed.ReduceOp, got {type(op).__name__}")
    return op


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `tensor` over all ranks, in place: every rank gets the result."""
    return _run(_group(group).allreduce(tensor, _check_op(op), async_op), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copies rank `src`'s tensor into the others', in place."""
    pg = _group(group)
    if not 0 <= src < pg.size:
        raise ValueError(f"Invalid src rank {src} for a world size of {pg.size}")
    return _run(pg.broadcast(tensor, src, async_op), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] = rank r's `tensor`, on every rank."""
    pg = _group(group)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != pg.size:
        raise ValueError(f"all_gather: tensor_list must be a list of world_size ({pg.size}) tensors")
    _same_size(tensor_list, tensor)
    return _run(pg.allgather(list(tensor_list), tensor, async_op), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """The ranks' `input_tensor`s concatenated (or stacked) into `output_tensor`."""
    pg = _group(group)
    _check_sizes(output_tensor, input_tensor, pg.size, "output tensor size must be equal to world_size times "
                 "input tensor size")
    return _run(pg.allgather(output_tensor, input_tensor, async_op), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over ranks of input_list[this rank]."""
    pg = _group(group)
    if not isinstance(input_list, (list, tuple)) or len(input_list) != pg.size:
        raise ValueError(f"reduce_scatter: input_list must be a list of world_size ({pg.size}) tensors")
    _same_size(input_list, output)
    return _run(pg.reduce_scatter(output, list(input_list), _check_op(op), async_op), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """reduce_scatter with the inputs as one tensor of world_size times output's size."""
    pg = _group(group)
    _check_sizes(input, output, pg.size, "input tensor must be the same size as output size times world size")
    return _run(pg.reduce_scatter(output, input, _check_op(op), async_op), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    return _run(_group(group).barrier(async_op), async_op)


def all_gather_object(object_list, obj, group=None):
    """object_list[r] = rank r's `obj` (any picklable object). Blocking, without the group's timeout."""
    object_list[:] = _group(group).objects(lambda comm: comm.allgather(obj))


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Replaces object_list's items with rank `src`'s (picklable objects). Blocking, without the timeout."""
    pg = _group(group)
    mine = list(object_list) if pg.rank == src else None
    object_list[:] = pg.objects(lambda comm: comm.bcast(mine, root=src))


def _same_size(tensors, tensor):
    for t in tensors:
        if t.numel() != tensor.numel() or t.dtype != tensor.dtype:
            raise ValueError("all tensors in the list must have the same number of elements and dtype as "
                             f"`{'tensor' if t is not tensor else 'output'}`: got {tuple(t.shape)} {t.dtype} and "
                             f"{tuple(tensor.shape)} {tensor.dtype}")


def _check_sizes(big, small, n, message):
    if big.numel() != n * small.numel():
        raise ValueError(message)
    if big.dtype != small.dtype:
        raise TypeError(f"tensors must have the same dtype: got {big.dtype} and {small.dtype}")
