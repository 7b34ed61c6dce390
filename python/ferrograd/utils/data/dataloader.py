"""DataLoader: batches of a dataset, in sampler order, merged by a collate function.

Loading runs in the calling process. With `num_workers > 0` it acts as one worker process would
(see worker.py: get_worker_info, worker_init_fn); the batches of a map-style dataset are the same
as torch's, produced one after another. `pin_memory` has no effect (no page-locked allocator yet),
`prefetch_factor`, `timeout` and `multiprocessing_context` are checked and kept.
"""

import collections.abc
import re
import warnings

import numpy as np

from ... import _C
from ..._creation import as_tensor, tensor
from .. import _generator
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import WorkerInfo, as_worker

_np_str_obj_array_pattern = re.compile(r"[SaUO]")


def default_convert(data):
    """NumPy arrays and scalars to tensors, recursively through mappings and sequences (no batching)."""
    if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str) is None:
        return as_tensor(data)
    if isinstance(data, np.generic):
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return [default_convert(d) for d in data]
    return data


def default_collate(batch):
    """Merge a list of samples into a batch, as torch: tensors and arrays are stacked on a new dim 0,
    floats become a float64 tensor, ints an int64 one, strings a list; mappings and sequences are
    collated field by field (a tuple sample gives a list)."""
    elem = batch[0]
    if isinstance(elem, _C.Tensor):
        return _C.stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and _np_str_obj_array_pattern.search(elem.dtype.str) is None:
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, np.generic):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=_C.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(
        f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {type(elem)}"
    )


class DataLoader:
    """Iterate over `dataset` in batches (torch.utils.data.DataLoader, single-process)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._worker = None  # the WorkerInfo of the (one, in-process) persistent worker
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            for name, value in (("shuffle", shuffle if shuffle else None), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, but got {name}={value}"
                    )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._is_iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._is_iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            batching = self._auto_collation or (self._is_iterable and batch_size is not None)
            collate_fn = default_collate if batching else default_convert
        self.collate_fn = collate_fn

    def check_worker_number_rationality(self):
        """torch's warning when num_workers exceeds the CPUs this process may use. ferrograd's loader does
        not start worker processes, so it does not call this itself; it is here for code that does."""
        if not self.num_workers:
            return
        import os

        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is None or self.num_workers > suggest:
            if suggest is None:
                advice = "DataLoader is not able to compute a suggested max number of worker in current system."
            else:
                advice = (f"Our suggested max number of worker in current system is {suggest}"
                          f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller "
                          "than what this DataLoader is going to create.")
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} Please "
                          "be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                          "lower the worker number to avoid potential slowness/freeze if necessary.", stacklevel=2)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    def __iter__(self):
        if self.pin_memory:
            from ... import cuda

            if not cuda.is_available():
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                              "memory won't be used.", UserWarning, stacklevel=2)
        if self.num_workers == 0:
            yield from self._batches()
            return
        info = self._worker
        if info is None:
            # the worker's seed is drawn as torch draws its base seed: from the loader's generator
            seed = int(_generator._numpy_rng(self.generator).integers(0, 2 ** 62))
            info = WorkerInfo(id=0, num_workers=1, seed=seed, dataset=self.dataset)
            with as_worker(info):
                if self.worker_init_fn is not None:
                    self.worker_init_fn(0)
            if self.persistent_workers:
                self._worker = info
        batches = self._batches()
        while True:
            with as_worker(info):
                try:
                    batch = next(batches)
                except StopIteration:
                    return
            yield batch

    def _batches(self):
        if self._is_iterable:
            it = iter(self.dataset)
            if self.batch_size is None:
                for sample in it:
                    yield self.collate_fn(sample)
                return
            while True:
                batch = [s for _, s in zip(range(self.batch_size), it)]
                if not batch or (self.drop_last and len(batch) < self.batch_size):
                    return
                yield self.collate_fn(batch)
        elif self._auto_collation:
            for indices in self.batch_sampler:
                getitems = getattr(self.dataset, "__getitems__", None)
                data = getitems(indices) if getitems else [self.dataset[i] for i in indices]
                yield self.collate_fn(data)
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])

    def __len__(self):
        if self._is_iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self.batch_sampler) if self._auto_collation else len(self.sampler)
