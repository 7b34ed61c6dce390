"""torch.nn.parallel: DistributedDataParallel (multi-process data parallelism over ferrograd.distributed) and
DataParallel (single-process)."""

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
