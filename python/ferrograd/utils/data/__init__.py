"""torch.utils.data: datasets, samplers and the DataLoader."""

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset", "default_collate",
    "default_convert", "random_split",
]
