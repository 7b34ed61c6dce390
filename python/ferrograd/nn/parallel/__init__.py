"""torch.nn.parallel: DistributedDataParallel (multi-process data parallelism over ferrograd.distributed)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
