"""DataLoader: batches of a dataset, in sampler order, merged by a collate function.

Loading runs in the calling process. With `num_workers = n > 0` the loader plays torch's n worker
processes one after another, in-process (see worker.py): each virtual worker has its WorkerInfo
(id, num_workers=n, seed = base seed + id, dataset) while it loads, `worker_init_fn(id)` runs when it
starts (each epoch, or once with persistent_workers), and the batches come out in torch's order: for a
map-style dataset the batches in sampler order (batch k loaded by worker k % n); for an IterableDataset
each worker iterates the dataset itself and the loader takes one batch from each worker in turn, skipping
workers that are done. So a dataset that shards itself with get_worker_info() gives torch's batches, and
one that does not is repeated n times, as in torch. An IterDataPipe is deep-copied per worker and sharded
(`apply_sharding(n, id)` on its sharding_filter pipes), its shufflers share one seed per epoch, and
`shuffle=` turns its shufflers on or off, as torch does. Differences from worker processes: the global
random state is not reseeded per worker, and nothing runs in parallel. `pin_memory` has no effect (no
page-locked allocator yet); `prefetch_factor`, `timeout` and `multiprocessing_context` are checked and
kept.
"""

import copy
import warnings

from .. import _generator
from ._utils.collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler
from .worker import WorkerInfo, as_worker


# ---- DataPipe graphs (what torch.utils.data.graph_settings does for the loader)

def _is_datapipe(dataset):
    from .datapipes.datapipe import IterDataPipe

    return isinstance(dataset, IterDataPipe)


def _pipes(dp, seen=None):
    """Every DataPipe reachable from `dp` through its attributes (its sources), each once."""
    from .datapipes.datapipe import IterDataPipe, MapDataPipe

    seen = set() if seen is None else seen
    if id(dp) in seen:
        return
    seen.add(id(dp))
    yield dp
    for value in vars(dp).values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, (IterDataPipe, MapDataPipe)):
                yield from _pipes(item, seen)


def _apply_sharding(dp, num_instances, instance_id):
    for pipe in _pipes(dp):
        if hasattr(pipe, "apply_sharding") and callable(getattr(pipe, "is_shardable", None)) and pipe.is_shardable():
            pipe.apply_sharding(num_instances, instance_id)


def _set_shuffle(dp, shuffle):
    for pipe in _pipes(dp):
        if callable(getattr(pipe, "set_shuffle", None)):
            pipe.set_shuffle(shuffle)


def _seed_shufflers(dp, seed):
    for pipe in _pipes(dp):
        if callable(getattr(pipe, "set_shuffle", None)) and callable(getattr(pipe, "set_seed", None)):
            pipe.set_seed(seed)


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
        self._workers = None  # the virtual workers kept by persistent_workers: [(WorkerInfo, dataset)]
        self._is_iterable = isinstance(dataset, IterableDataset)
        if _is_datapipe(dataset):
            if shuffle is not None:
                _set_shuffle(dataset, bool(shuffle))
            shuffle = None
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
            yield from self._batches(self.dataset)
            return
        workers = self._workers
        if workers is None:
            workers = self._start_workers()
            if self.persistent_workers:
                self._workers = workers
        if _is_datapipe(self.dataset):
            # every worker's shufflers take one seed per epoch, so the shards partition one shuffled order
            shared_seed = int(_generator._numpy_rng(self.generator).integers(0, 2 ** 62))
            for _, dataset in workers:
                _seed_shufflers(dataset, shared_seed)
        if self._is_iterable:
            yield from self._round_robin(workers)
        else:
            yield from self._map_style_in_workers(workers)

    def _start_workers(self):
        """The virtual workers' (WorkerInfo, dataset) pairs, after their worker_init_fn ran."""
        # the base seed is drawn as torch draws it, from the loader's generator; worker i gets base + i
        base_seed = int(_generator._numpy_rng(self.generator).integers(0, 2 ** 62))
        n = self.num_workers
        pipe = _is_datapipe(self.dataset)
        workers = []
        for wid in range(n):
            dataset = self.dataset
            if pipe:
                dataset = copy.deepcopy(self.dataset)
                _apply_sharding(dataset, n, wid)
            info = WorkerInfo(id=wid, num_workers=n, seed=base_seed + wid, dataset=dataset)
            with as_worker(info):
                if self.worker_init_fn is not None:
                    self.worker_init_fn(wid)
            workers.append((info, dataset))
        return workers

    def _round_robin(self, workers):
        """Iterable datasets: one batch from each worker in turn; a finished worker drops out."""
        active = [(info, self._batches(dataset)) for info, dataset in workers]
        while active:
            still = []
            for info, batches in active:
                with as_worker(info):
                    try:
                        batch = next(batches)
                    except StopIteration:
                        continue
                still.append((info, batches))
                yield batch
            active = still

    def _map_style_in_workers(self, workers):
        """Map-style datasets: batch k is loaded by worker k % num_workers; the order is the sampler's."""
        batches = self._batches(self.dataset)
        k = 0
        while True:
            info = workers[k % len(workers)][0]
            with as_worker(info):
                try:
                    batch = next(batches)
                except StopIteration:
                    return
            k += 1
            yield batch

    def _batches(self, dataset):
        if self._is_iterable:
            it = iter(dataset)
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
