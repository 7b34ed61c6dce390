"""Samplers and DataLoader options against torch.

ferrograd's random draws come from its own generator (NumPy's PCG64), not torch's Philox/MT
streams, so index sequences cannot be compared draw for draw: random samplers are checked by
their API behaviour against torch (lengths, types, errors, laziness, reproducibility from a
seeded generator) and by distributional properties (uniform coverage, weights respected,
permutations); everything deterministic (BatchSampler, DataLoader batching and options,
random_split lengths, error kinds and messages) is compared with torch directly."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import fg

LIBS = (torch, fg)


def data(L):
    return L.utils.data


def gen(L, seed):
    return L.Generator().manual_seed(seed)


def outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, re.sub(r"\b(torch|ferrograd)\.", "", str(e)))


def both(fn):
    a, b = (outcome(lambda: fn(L)) for L in LIBS)
    assert a == b
    return a


# ---- RandomSampler -------------------------------------------------------------------------------

def test_random_sampler_replacement_is_lazy():
    for L in LIBS:
        s = data(L).RandomSampler(range(5), replacement=True, num_samples=int(1e10))
        assert len(s) == 10 ** 10
        it = iter(s)
        first = [next(it) for _ in range(100)]  # would need 80 GB if drawn at once
        assert all(0 <= i < 5 for i in first) and len(set(first)) == 5


def test_random_sampler_generator_reproducible():
    for L in LIBS:
        for replacement in (False, True):
            a = list(data(L).RandomSampler(range(50), replacement=replacement, generator=gen(L, 3)))
            b = list(data(L).RandomSampler(range(50), replacement=replacement, generator=gen(L, 3)))
            c = list(data(L).RandomSampler(range(50), replacement=replacement, generator=gen(L, 4)))
            assert a == b and a != c
        g = gen(L, 7)
        s = data(L).RandomSampler(range(20), generator=g)
        e1, e2 = list(s), list(s)  # the generator moves on: a new order each epoch
        assert sorted(e1) == sorted(e2) == list(range(20)) and e1 != e2


def test_random_sampler_global_seed():
    for L in LIBS:
        L.manual_seed(11)
        a = list(data(L).RandomSampler(range(30)))
        L.manual_seed(11)
        b = list(data(L).RandomSampler(range(30)))
        assert a == b and sorted(a) == list(range(30))


def test_random_sampler_num_samples_without_replacement():
    for L in LIBS:
        idx = list(data(L).RandomSampler(range(4), num_samples=10, generator=gen(L, 0)))
        assert len(idx) == 10
        assert sorted(idx[:4]) == sorted(idx[4:8]) == [0, 1, 2, 3]  # whole permutations, then a part of one
        assert len(set(idx[8:])) == 2


def test_random_sampler_uniform_with_replacement():
    counts = np.bincount(list(fg.utils.data.RandomSampler(range(4), True, 40000, generator=gen(fg, 1))), minlength=4)
    assert np.all(np.abs(counts / 40000 - 0.25) < 0.015)


def test_random_sampler_errors():
    both(lambda L: data(L).RandomSampler(range(5), num_samples=1.0))
    both(lambda L: data(L).RandomSampler(range(5), num_samples=0))
    both(lambda L: data(L).RandomSampler(range(5), replacement=1))
    both(lambda L: len(data(L).RandomSampler(range(5), num_samples=7)))


# ---- WeightedRandomSampler -------------------------------------------------------------------------

def test_weighted_sampler_api():
    def run(L):
        s = data(L).WeightedRandomSampler([1, 2, 3.5], 6, generator=gen(L, 0))
        idx = list(s)
        return (len(s), len(idx), all(isinstance(i, int) for i in idx), str(s.weights.dtype).split(".")[-1],
                s.weights.tolist(), s.replacement, s.num_samples)
    both(run)


def test_weighted_sampler_distribution():
    w = [0.1, 0.0, 0.3, 0.6]
    for L in LIBS:
        idx = list(data(L).WeightedRandomSampler(w, 30000, generator=gen(L, 5)))
        freq = np.bincount(idx, minlength=4) / 30000
        assert np.all(np.abs(freq - np.array(w)) < 0.015) and freq[1] == 0


def test_weighted_sampler_without_replacement():
    for L in LIBS:
        idx = list(data(L).WeightedRandomSampler([1, 1, 0, 5, 2], 4, replacement=False, generator=gen(L, 2)))
        assert sorted(idx) == [0, 1, 3, 4]
        # the heavy index comes first most often
        first = [list(data(L).WeightedRandomSampler([1, 1, 8], 1, replacement=False, generator=gen(L, s)))[0]
                 for s in range(300)]
        assert 0.7 < first.count(2) / 300 < 0.9


def test_weighted_sampler_reproducible():
    for L in LIBS:
        a = list(data(L).WeightedRandomSampler([1, 2, 3], 20, generator=gen(L, 9)))
        b = list(data(L).WeightedRandomSampler([1, 2, 3], 20, generator=gen(L, 9)))
        assert a == b


@pytest.mark.parametrize("kwargs", [
    dict(weights=[1, 2], num_samples=0),
    dict(weights=[1, 2], num_samples=2, replacement=1),
    dict(weights=[[1, 2]], num_samples=2),
    dict(weights=[1, 2], num_samples=True),
    dict(weights=[1, 2], num_samples=1.5),
    dict(weights=[1, 2], num_samples=3, replacement=False),
    dict(weights=[-1, 2], num_samples=1),
    dict(weights=[0, 0], num_samples=1),
    dict(weights=[1, float("nan")], num_samples=1),
    dict(weights=[1, 0, 0], num_samples=2, replacement=False),
])
def test_weighted_sampler_errors(kwargs):
    both(lambda L: len(list(data(L).WeightedRandomSampler(**kwargs))))


# ---- SubsetRandomSampler, BatchSampler ------------------------------------------------------------

def test_subset_random_sampler():
    for L in LIBS:
        s = data(L).SubsetRandomSampler([10, 20, 30, 40], generator=gen(L, 1))
        a = list(s)
        assert sorted(a) == [10, 20, 30, 40] and len(s) == 4
        assert a == list(data(L).SubsetRandomSampler([10, 20, 30, 40], generator=gen(L, 1)))


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n,bs", [(10, 3), (9, 3), (2, 5), (0, 2)])
def test_batch_sampler(n, bs, drop_last):
    both(lambda L: (list(data(L).BatchSampler(data(L).SequentialSampler(range(n)), bs, drop_last)),
                    len(data(L).BatchSampler(range(n), bs, drop_last))))


def test_batch_sampler_errors():
    both(lambda L: data(L).BatchSampler(range(5), 0, False))
    both(lambda L: data(L).BatchSampler(range(5), True, False))
    both(lambda L: data(L).BatchSampler(range(5), 2, 1))


# ---- DataLoader options ----------------------------------------------------------------------------

def test_dataloader_option_checks():
    both(lambda L: data(L).DataLoader(range(4), persistent_workers=True))
    both(lambda L: data(L).DataLoader(range(4), prefetch_factor=2))
    both(lambda L: data(L).DataLoader(range(4), num_workers=-1))

    def attrs(L):
        d0 = data(L).DataLoader(range(4))
        d2 = data(L).DataLoader(range(4), num_workers=2, persistent_workers=True, prefetch_factor=4, pin_memory=False)
        d3 = data(L).DataLoader(range(4), num_workers=1)
        return (d0.prefetch_factor, d0.persistent_workers, d0.pin_memory, d0.generator, d0.worker_init_fn,
                d2.prefetch_factor, d2.persistent_workers, d2.num_workers, d3.prefetch_factor, d0.drop_last,
                d0.multiprocessing_context, d0.timeout)
    both(attrs)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("drop_last", [False, True])
def test_dataloader_batches(workers, drop_last):
    def run(L):
        ds = data(L).TensorDataset(L.arange(10.0).reshape(5, 2), L.arange(5))
        dl = data(L).DataLoader(ds, batch_size=2, drop_last=drop_last, num_workers=workers,
                                persistent_workers=workers > 0, worker_init_fn=lambda i: None)
        return len(dl), [[t.tolist() for t in b] for b in dl], [[t.tolist() for t in b] for b in dl]
    both(run)


def test_dataloader_pin_memory_without_gpu():
    if torch.cuda.is_available() or fg.cuda.is_available():
        pytest.skip("the warning is for machines without an accelerator")
    for L in LIBS:
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
            out = list(data(L).DataLoader(range(4), batch_size=2, pin_memory=True))
        assert [b.tolist() for b in out] == [[0, 1], [2, 3]]


def test_dataloader_generator_shuffle():
    for L in LIBS:
        a = [b.tolist() for b in data(L).DataLoader(range(20), batch_size=5, shuffle=True, generator=gen(L, 8))]
        b = [b.tolist() for b in data(L).DataLoader(range(20), batch_size=5, shuffle=True, generator=gen(L, 8))]
        assert a == b and sorted(sum(a, [])) == list(range(20))


def test_get_worker_info_main_process():
    both(lambda L: data(L).get_worker_info())
    both(lambda L: [data(L).get_worker_info() for _ in data(L).DataLoader(range(3))])


def test_worker_init_fn_and_worker_info():
    """ferrograd plays torch's workers in-process: worker_init_fn(i) runs for each worker once per epoch
    (once in all with persistent_workers) and get_worker_info() describes the loading worker; torch's
    real workers are checked for the same observable facts (the batches)."""
    for L in LIBS:
        calls = []

        def init(worker_id):
            info = data(L).get_worker_info()
            calls.append((worker_id, info.id, info.dataset is ds, isinstance(info.seed, int)))

        ds = list(range(6))
        dl = data(L).DataLoader(ds, batch_size=3, num_workers=1, worker_init_fn=init)
        assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]]
        if L.__name__ == "ferrograd":  # torch's worker runs in another process: its calls stay there
            assert calls == [(0, 0, True, True)]
            list(dl)
            assert len(calls) == 2
            calls.clear()
            pdl = data(L).DataLoader(ds, batch_size=3, num_workers=2, worker_init_fn=init, persistent_workers=True)
            list(pdl), list(pdl)
            assert [c[:2] for c in calls] == [(0, 0), (1, 1)]
            assert data(L).get_worker_info() is None


class Sharded(torch.utils.data.IterableDataset):
    """An IterableDataset that splits its range between workers, as torch's docs show."""

    def __init__(self, lib, n):
        self.lib, self.n = lib, n

    def __iter__(self):
        info = data(self.lib).get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))


def test_iterable_dataset_sharding_keeps_all_samples():
    for L in LIBS:
        base = data(L).IterableDataset
        ds = type("S", (base,), {"__init__": Sharded.__init__, "__iter__": Sharded.__iter__})(L, 7)
        got = sorted(int(x) for b in data(L).DataLoader(ds, batch_size=None, num_workers=1) for x in [b])
        assert got == list(range(7))


# ---- random_split -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lengths", [[0.33, 0.33, 0.34], [0.5, 0.5], [0.7, 0.2, 0.1], [3, 7], [0.1, 0.9]])
def test_random_split_lengths(lengths):
    def run(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = data(L).random_split(range(10), lengths, generator=gen(L, 0))
        flat = sorted(i for p in parts for i in p)
        return [len(p) for p in parts], flat
    both(run)


def test_random_split_errors():
    both(lambda L: data(L).random_split(range(10), [0.5, 0.6]))
    both(lambda L: data(L).random_split(range(10), [3, 3]))
    both(lambda L: data(L).random_split(range(10), [1.5, -0.5]))
    for L in LIBS:
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            data(L).random_split(range(2), [0.9, 0.1], generator=gen(L, 0))


def test_random_split_generator_reproducible():
    for L in LIBS:
        a = [list(p) for p in data(L).random_split(range(10), [0.5, 0.5], generator=gen(L, 4))]
        b = [list(p) for p in data(L).random_split(range(10), [0.5, 0.5], generator=gen(L, 4))]
        assert a == b
