"""utils.data against torch: datasets, samplers, DataLoader batching and collation, random_split.

Shuffled orders come from different RNGs, so shuffling is checked by its properties (a permutation
per epoch, reproducible from a seed or a generator, different across epochs); everything
deterministic is compared with torch's output directly."""
import re
from collections import namedtuple

import numpy as np
import pytest
import torch

import ferrograd.utils.data  # noqa: F401
from conftest import fg
from parity import same

Point = namedtuple("Point", ["x", "y"])


def data(L):
    return L.utils.data


def generator(seed):
    if hasattr(fg, "Generator"):
        return fg.Generator().manual_seed(seed)
    from ferrograd.utils._generator import Generator
    return Generator().manual_seed(seed)


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, re.sub(r"(torch|ferrograd)\.", "", str(e))
    return None


def tensor_ds(L, n=10):
    return data(L).TensorDataset(L.arange(n * 2, dtype=L.float32).reshape(n, 2), L.arange(n))


def test_tensor_dataset_and_subsets():
    def run(L):
        ds = tensor_ds(L)
        sub = data(L).Subset(ds, [7, 2, 5])
        cat = ds + sub
        return (len(ds), ds[3], ds[-1], len(sub), sub[1], len(cat), cat[11], cat[-1],
                _error(lambda: data(L).TensorDataset(L.zeros(3), L.zeros(4))))

    same(run)


@pytest.mark.parametrize("kw", [dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=1),
                                dict(batch_size=10), dict(batch_size=None), dict(batch_size=3, shuffle=False)])
def test_sequential_batches(kw):
    same(lambda L: (list(data(L).DataLoader(tensor_ds(L), **kw)), len(data(L).DataLoader(tensor_ds(L), **kw))))


def test_default_collate():
    samples = [
        {"a": np.float32(1.5), "b": [1, 2.5], "c": "s0", "d": np.arange(3), "e": Point(1, (True, 2.0))},
        {"a": np.float32(2.5), "b": [3, 4.5], "c": "s1", "d": np.arange(3) * 2, "e": Point(3, (False, 4.0))},
    ]

    class DS:
        def __getitem__(self, i):
            return samples[i]

        def __len__(self):
            return 2

    def run(L):
        (batch,) = list(data(L).DataLoader(DS(), batch_size=2))
        return (batch["a"], batch["b"], batch["c"], batch["d"], type(batch["e"]).__name__, batch["e"].x,
                batch["e"].y, sorted(batch), data(L).default_collate([(1, 2.0), (3, 4.0)]),
                data(L).default_collate([L.zeros(2), L.ones(2)]),
                _error(lambda: data(L).default_collate([object(), object()])),
                _error(lambda: data(L).default_collate([[1, 2], [3]])))

    same(run)


def test_collate_fn_sampler_and_batch_sampler():
    def run(L):
        ds = tensor_ds(L, 7)
        out = [list(data(L).DataLoader(ds, batch_size=3, collate_fn=lambda b: [s[1].item() for s in b]))]
        sampler = data(L).SequentialSampler(ds)
        bs = data(L).BatchSampler(sampler, 2, drop_last=False)
        out.append(list(bs))
        out.append([len(bs), len(data(L).BatchSampler(sampler, 2, drop_last=True))])
        out.append(list(data(L).DataLoader(ds, batch_sampler=[[6, 0], [3]])))
        out.append(list(data(L).DataLoader(ds, sampler=[5, 1, 2], batch_size=2)))
        out.append(_error(lambda: data(L).DataLoader(ds, sampler=sampler, shuffle=True)))
        out.append(_error(lambda: data(L).DataLoader(ds, batch_sampler=bs, batch_size=2)))
        out.append(_error(lambda: data(L).BatchSampler(sampler, 0, False)))
        out.append(_error(lambda: data(L).DataLoader(ds, batch_size=None, drop_last=True)))
        return out

    same(run)


def test_iterable_dataset():
    def run(L):
        class Stream(data(L).IterableDataset):
            def __iter__(self):
                return iter(range(7))

        return (list(data(L).DataLoader(Stream(), batch_size=3)),
                list(data(L).DataLoader(Stream(), batch_size=3, drop_last=True)),
                list(data(L).DataLoader(Stream(), batch_size=None))[:2],
                _error(lambda: data(L).DataLoader(Stream(), shuffle=True)))

    same(run)


def _epoch_order(loader):
    return [int(i) for _, y in loader for i in y.tolist()]


def test_shuffle_is_a_fresh_seeded_permutation():
    ds = tensor_ds(fg, 50)
    fg.manual_seed(3)
    loader = fg.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
    e1, e2 = _epoch_order(loader), _epoch_order(loader)
    assert sorted(e1) == list(range(50)) and sorted(e2) == list(range(50))
    assert e1 != e2 and e1 != list(range(50))
    fg.manual_seed(3)
    assert _epoch_order(loader) == e1  # the global seed fixes the order
    g = _epoch_order(fg.utils.data.DataLoader(ds, batch_size=8, shuffle=True, generator=generator(11)))
    assert g == _epoch_order(fg.utils.data.DataLoader(ds, batch_size=8, shuffle=True, generator=generator(11)))
    assert g != _epoch_order(fg.utils.data.DataLoader(ds, batch_size=8, shuffle=True, generator=generator(12)))
    assert len(list(fg.utils.data.DataLoader(ds, batch_size=8, shuffle=True, drop_last=True))) == 6


def test_random_sampler_options():
    ds = tensor_ds(fg, 5)
    r = list(fg.utils.data.RandomSampler(ds, replacement=True, num_samples=40, generator=generator(0)))
    assert len(r) == 40 and set(r) <= set(range(5)) and len(set(r)) > 1
    r = list(fg.utils.data.RandomSampler(ds, num_samples=12, generator=generator(0)))
    assert len(r) == 12 and sorted(r[:5]) == list(range(5)) and sorted(r[5:10]) == list(range(5))
    s = list(fg.utils.data.SubsetRandomSampler([10, 20, 30], generator=generator(1)))
    assert sorted(s) == [10, 20, 30]
    same(lambda L: _error(lambda: L.utils.data.RandomSampler(tensor_ds(L, 5), num_samples=0)))


@pytest.mark.parametrize("lengths", [[3, 7], [0.5, 0.3, 0.2], [0.34, 0.33, 0.33], [10]])
def test_random_split(lengths):
    ds = tensor_ds(fg, 10)
    parts = fg.utils.data.random_split(ds, lengths, generator=generator(0))
    expected = [len(p) for p in torch.utils.data.random_split(tensor_ds(torch, 10), lengths)]
    assert [len(p) for p in parts] == expected
    seen = sorted(int(p[i][1]) for p in parts for i in range(len(p)))
    assert seen == list(range(10))
    again = fg.utils.data.random_split(ds, lengths, generator=generator(0))
    assert [list(p.indices) for p in parts] == [list(p.indices) for p in again]


def test_random_split_errors():
    same(lambda L: _error(lambda: L.utils.data.random_split(tensor_ds(L, 10), [3, 3])))
    same(lambda L: _error(lambda: L.utils.data.random_split(tensor_ds(L, 10), [1.2, -0.2])))


def test_training_loop_end_to_end():
    """A full loop: DataLoader + model + loss + optimizer + scheduler, same numbers as torch when the
    batches are taken in order."""
    import ferrograd.optim  # noqa: F401

    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 4)).astype(np.float32)
    Y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    init = {k: v.detach().numpy() for k, v in torch.nn.Linear(4, 2).state_dict().items()}

    def run(L):
        m = L.nn.Linear(4, 2)
        m.load_state_dict({k: L.tensor(v) for k, v in init.items()})
        opt = L.optim.SGD(m.parameters(), lr=0.5, momentum=0.9)
        sched = L.optim.lr_scheduler.StepLR(opt, 2, 0.5)
        loader = L.utils.data.DataLoader(L.utils.data.TensorDataset(L.tensor(X), L.tensor(Y)), batch_size=16)
        losses = []
        for _ in range(4):
            for xb, yb in loader:
                opt.zero_grad()
                loss = L.nn.functional.cross_entropy(m(xb), yb)
                loss.backward()
                opt.step()
                losses.append(loss.item())
            sched.step()
        acc = (m(L.tensor(X)).argmax(1) == L.tensor(Y)).float().mean().item()
        return losses, acc, m.weight.detach()

    expected, got = same(run, rtol=1e-5, atol=1e-6)
    assert got[1] > 0.9
