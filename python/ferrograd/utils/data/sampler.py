"""Samplers: the order in which a DataLoader visits a dataset's indices, and how they are batched."""

import math
from typing import Generic, TypeVar

from .. import _generator

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """An iterable of dataset indices (generic in the index type: `class MySampler(Sampler[int])`)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (a fresh one each epoch), or num_samples draws with
    replacement, drawn lazily 32 at a time (num_samples may be far larger than memory). Draws come
    from `generator`, or else from a generator seeded from ferrograd's global RNG at each epoch.
    The streams are ferrograd's (NumPy's PCG64), not bit-identical to torch's."""

    _CHUNK = 32

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _generator._numpy_rng(self.generator)
        if self.replacement:
            if n == 0:  # torch's draw from an empty range
                raise RuntimeError("random_ expects 'from' to be less than 'to', but got from=0 >= to=0")
            for _ in range(self.num_samples // self._CHUNK):
                yield from rng.integers(0, n, size=self._CHUNK).tolist()
            yield from rng.integers(0, n, size=self.num_samples % self._CHUNK).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _generator._numpy_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in 0..len(weights)-1, index i drawn with probability proportional to
    weights[i] (with replacement by default; without, each index at most once), as
    torch.multinomial draws them; from `generator` or ferrograd's global RNG."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        from ... import _C
        from ..._creation import as_tensor

        weights_tensor = as_tensor(weights, dtype=_C.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        import numpy as np

        w = self.weights.detach().cpu().numpy()
        n = w.shape[0]
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        total = w.sum()
        if total <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > n:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        rng = _generator._numpy_rng(self.generator, "multinomial")
        if self.replacement:
            draws = rng.choice(n, size=self.num_samples, p=w / total)
        else:
            # successive draws without replacement = the smallest Exp(1) / w keys (Efraimidis-Spirakis);
            # zero weights come last, in index order, once the others are used up (torch's kernel also
            # returns them then)
            with np.errstate(divide="ignore"):
                keys = rng.exponential(size=n) / w
            draws = np.argsort(keys, kind="stable")[: self.num_samples]
        yield from draws.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """This rank's share of the dataset's indices (torch.utils.data.DistributedSampler): every rank
    draws the same permutation (seeded with `seed + epoch`; call `set_epoch` each epoch), pads it by
    repeating its start to a multiple of `num_replicas` (or, with `drop_last`, cuts the tail), and keeps
    every num_replicas-th index from `rank`. The permutation is ferrograd's (NumPy's PCG64), not
    bit-identical to torch's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = _generator.Generator().manual_seed(self.seed + self.epoch)
            indices = _generator.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
