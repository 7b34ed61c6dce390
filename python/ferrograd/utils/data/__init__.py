"""torch.utils.data: datasets, samplers (DistributedSampler included), the DataLoader, and DataPipes."""

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .datapipes import (DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe, argument_validation,
                        functional_datapipe, guaranteed_datapipes_determinism, non_deterministic, runtime_validation,
                        runtime_validation_disabled)
from .sampler import (BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)
from .worker import get_worker_info

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DFIterDataPipe", "DataChunk", "DataLoader", "Dataset",
    "DistributedSampler", "IterDataPipe", "IterableDataset", "MapDataPipe", "RandomSampler", "Sampler",
    "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
    "argument_validation", "default_collate", "default_convert", "functional_datapipe", "get_worker_info",
    "guaranteed_datapipes_determinism", "non_deterministic", "random_split", "runtime_validation",
    "runtime_validation_disabled",
]
