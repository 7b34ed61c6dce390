"""torch.utils.data.distributed: DistributedSampler, at the import path DDP scripts use
(`from torch.utils.data.distributed import DistributedSampler`)."""
from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
