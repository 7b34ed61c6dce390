"""torch.utils.data names added for the census, run the same way in torch and ferrograd and compared:
StackDataset and ChainDataset (and `IterableDataset + IterableDataset`), generic Dataset/Sampler
subscription, the DataPipe base classes with their functional forms (map/filter/batch/unbatch/collate/
zip/concat/sharding_filter/shuffle), DataChunk, functional_datapipe, the determinism and validation
decorators, and DataLoader over those datasets and pipes."""
import typing
import warnings

import numpy as np
import pytest
import torch

from conftest import fg

LIBS = [torch, fg]


def _plain(x):
    """A comparable Python structure of tensors / lists / tuples / dicts."""
    if isinstance(x, (torch.Tensor, fg.Tensor)):
        return ("tensor", str(x.dtype).rsplit(".", 1)[-1], x.tolist())
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x).__name__ if not isinstance(x, list) else "list", [_plain(v) for v in x]
    return x


def _same(make):
    """make(lib) gives the same structure for both libraries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch warns about lambdas in DataPipes: not picklable)
        t, f = make(torch), make(fg)
    assert _plain(f) == _plain(t)
    return f


# ------------------------------------------------------------------ datasets


class _Squares:
    def __init__(self, lib, n):
        self.lib, self.n = lib, n

    def __getitem__(self, i):
        return self.lib.tensor([float(i * i)])

    def __len__(self):
        return self.n


def test_stack_dataset():
    def make(L):
        D = L.utils.data
        xs = D.TensorDataset(L.arange(6.0).reshape(6, 1))
        ys = list(range(10, 16))
        tup = D.StackDataset(xs, ys)
        dic = D.StackDataset(x=xs, y=ys, sq=_Squares(L, 6))
        out = [len(tup), tup[2], dic[3], tup.__getitems__([0, 5]), dic.__getitems__([1, 4])]
        out.append(list(D.DataLoader(tup, batch_size=4)))
        out.append(list(D.DataLoader(dic, batch_size=4, drop_last=True)))
        return out
    _same(make)
    for L in LIBS:
        D = L.utils.data
        with pytest.raises(ValueError):
            D.StackDataset(list(range(3)), x=list(range(3)))
        with pytest.raises(ValueError):
            D.StackDataset(list(range(3)), list(range(4)))
        with pytest.raises(ValueError):
            D.StackDataset()


class _Count:
    """An IterableDataset of range(start, stop), built on the library's class."""

    @staticmethod
    def make(L, start, stop):
        class Count(L.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(start, stop))

            def __len__(self):
                return stop - start
        return Count()


def test_chain_dataset():
    def make(L):
        D = L.utils.data
        a, b = _Count.make(L, 0, 5), _Count.make(L, 100, 103)
        chain = D.ChainDataset([a, b])
        added = a + b
        return [list(chain), len(chain), type(added).__name__, list(added),
                list(D.DataLoader(chain, batch_size=3)), list(D.DataLoader(a + b + a, batch_size=4, drop_last=True))]
    _same(make)
    for L in LIBS:
        D = L.utils.data
        bad = D.ChainDataset([_Count.make(L, 0, 2), D.TensorDataset(L.zeros(3))])
        with pytest.raises(AssertionError):
            list(bad)
        with pytest.raises(AssertionError):
            len(bad)


def test_generic_subscription():
    """Type-annotated datasets and samplers, as scripts write them."""
    for L in LIBS:
        D = L.utils.data

        class Pairs(D.Dataset[typing.Tuple[L.Tensor, int]]):
            def __getitem__(self, i):
                return L.tensor([i]), i

            def __len__(self):
                return 3

        class Evens(D.Sampler[int]):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(0, self.n, 2))

            def __len__(self):
                return (self.n + 1) // 2

        batches = list(D.DataLoader(Pairs(), sampler=Evens(3), batch_size=2))
        assert len(batches) == 1 and batches[0][1].tolist() == [0, 2]
        for cls in (D.Dataset, D.IterableDataset, D.Subset, D.ConcatDataset, D.Sampler, D.IterDataPipe, D.MapDataPipe):
            cls[int]  # subscriptable, as in annotations


# ------------------------------------------------------------------ datapipes


def _iter_dp(L):
    from importlib import import_module
    return import_module(L.__name__ + ".utils.data.datapipes.iter")


def _map_dp(L):
    from importlib import import_module
    return import_module(L.__name__ + ".utils.data.datapipes.map")


def _double(x):
    return 2 * x


def _div3(x):
    return x % 3 == 0


def test_iter_datapipe_pipelines():
    def make(L):
        it = _iter_dp(L)
        W = it.IterableWrapper
        dp = W(range(10)).map(_double).filter(_div3).batch(2)
        out = [list(dp), [type(b).__name__ for b in dp], repr(dp), len(W(range(10)).batch(3)),
               len(W(range(10)).batch(3, drop_last=True)), len(W(range(7)).map(_double))]
        out.append(list(W(range(5)).batch(2).unbatch()))
        out.append(list(W(range(8)).batch(2).batch(2).unbatch(unbatch_level=-1)))
        out.append(list(W([(1, 2), (3, 4)]).map(_double, input_col=1)))
        out.append(list(W([(1, 2, 3)]).map(lambda a, b: a + b, input_col=(0, 2))))
        out.append(list(W([(1, 2)]).map(_double, input_col=0, output_col=-1)))
        out.append(list(W([{"a": 1}]).map(_double, input_col="a", output_col="b")))
        out.append(list(W([(1, 2), (3, 3)]).filter(_div3, input_col=1)))
        out.append(list(W(range(3)).zip(W("abcd"))))
        out.append(list(W(range(3)).concat(W("ab"))))
        out.append(len(W(range(3)).concat(W("ab"))))
        out.append(list(W(range(7)).batch(3).collate()))
        out.append(list(W([np.float64(1.5), np.float64(2.5)]).batch(2).collate()))
        shard = W(range(10)).sharding_filter()
        shard.apply_sharding(3, 1)
        out += [list(shard), len(shard), repr(shard)]
        out.append(list(L.utils.data.DataLoader(W(range(10)).map(_double), batch_size=4)))
        out.append(list(L.utils.data.DataLoader(W(range(10)).batch(3), batch_size=None)))
        return out
    _same(make)


def test_map_datapipe_pipelines():
    def make(L):
        m = _map_dp(L)
        S = m.SequenceWrapper
        dp = S(list(range(5))).map(_double)
        out = [dp[2], len(dp), list(dp), repr(dp), list(S([1, 2, 3]).batch(2)), len(S([1, 2, 3]).batch(2, drop_last=True))]
        out.append(list(S([1, 2]).concat(S([7]))))
        out.append(list(S([1, 2, 3]).zip(S("ab"))))
        out.append(sorted(S(list("abcd")).shuffle()))
        out.append(type(S([1]).shuffle()).__mro__[1].__name__ in ("IterDataPipe", "ShufflerIterDataPipe"))
        out.append(list(L.utils.data.DataLoader(dp, batch_size=2)))
        return out
    _same(make)


def test_shuffle_datapipe():
    it = _iter_dp(fg)
    fg.manual_seed(3)
    a = list(it.IterableWrapper(range(50)).shuffle(buffer_size=8))
    fg.manual_seed(3)
    b = list(it.IterableWrapper(range(50)).shuffle(buffer_size=8))
    assert a == b and sorted(a) == list(range(50)) and a != list(range(50))
    for L in LIBS:
        W = _iter_dp(L).IterableWrapper
        assert list(W(range(6)).shuffle().set_shuffle(False)) == list(range(6))
        s = W(range(20)).shuffle()
        assert list(s.set_seed(1)) == list(s.set_seed(1))


def test_datachunk():
    for L in LIBS:
        D = L.utils.data
        c = D.DataChunk([1, 2, D.DataChunk([3, 4])])
        assert isinstance(c, list) and list(c) == [1, 2, [3, 4]] and list(c.raw_iterator()) == [1, 2, [3, 4]]
        assert c.as_str() == "[1, 2, [3, 4]]" and c.as_str("  ") == "  [1, 2, [3, 4]]"


def test_functional_datapipe_registration():
    results = {}
    for L in LIBS:
        D = L.utils.data
        name = "fg_census_repeat_" + L.__name__

        @D.functional_datapipe(name)
        class Repeat(D.IterDataPipe):
            def __init__(self, source, times=2):
                self.source, self.times = source, times

            def __iter__(self):
                for x in self.source:
                    for _ in range(self.times):
                        yield x

        W = _iter_dp(L).IterableWrapper
        results[L] = list(getattr(W([1, 2]), name)(times=3).map(_double))
        assert name in D.IterDataPipe.functions and name not in D.MapDataPipe.functions
        with pytest.raises(AttributeError):
            W([1]).no_such_functional_form
        with pytest.raises(Exception):
            D.functional_datapipe(name)(Repeat)
    assert results[fg] == results[torch] == [2, 2, 2, 4, 4, 4]


def test_non_deterministic_and_guaranteed_determinism():
    for L in LIBS:
        D = L.utils.data

        @D.non_deterministic
        class Racy(D.IterDataPipe):
            def __init__(self, n):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))

        @D.non_deterministic(lambda n, racy: racy)
        class Maybe(D.IterDataPipe):
            def __init__(self, n, racy):
                self.n = n

            def __iter__(self):
                return iter(range(self.n))

        assert list(Racy(3)) == [0, 1, 2]
        with D.guaranteed_datapipes_determinism():
            with pytest.raises(TypeError):
                Racy(3)
            assert list(Maybe(2, False)) == [0, 1]
            with pytest.raises(TypeError):
                Maybe(2, True)
        assert list(Maybe(2, True)) == [0, 1]
        with pytest.raises(TypeError):
            D.non_deterministic(int)


def test_argument_validation():
    for L in LIBS:
        D = L.utils.data

        class Strs(D.IterDataPipe[str]):
            def __iter__(self):
                yield "a"

        @D.argument_validation
        def takes_pipe(dp: D.IterDataPipe, n: int = 1):
            return list(dp) * n

        @D.argument_validation
        def takes_ints(dp: D.IterDataPipe[int]):
            return list(dp)

        if L is fg:  # (torch 2.15 fails here with AttributeError 'type': its DataPipe typing is off)
            assert takes_pipe(Strs(), n=2) == ["a", "a"]
        with pytest.raises(TypeError):
            takes_pipe([1, 2])
        # (torch 2.15 does not check subscripted DataPipe hints)
        assert takes_ints(Strs()) == ["a"] and takes_ints([1]) == [1]
        with pytest.raises(TypeError):
            D.runtime_validation(lambda self: iter(()))


def test_runtime_validation():
    """ferrograd only: torch 2.15's DataPipe typing is switched off (its decorated __iter__ raises
    AttributeError 'type'); ferrograd checks each item against the declared type."""
    D = fg.utils.data

    class Ints(D.IterDataPipe[int]):
        def __init__(self, items):
            self.items = items

        @D.runtime_validation
        def __iter__(self):
            yield from self.items

    class Pairs(D.IterDataPipe[typing.Tuple[int, str]]):
        @D.runtime_validation
        def __iter__(self):
            yield (1, "a")
            yield (1, 2)

    assert list(Ints([1, 2])) == [1, 2]
    with pytest.raises(RuntimeError):
        list(Ints([1, "x"]))
    with pytest.raises(RuntimeError):
        list(Pairs())
    with D.runtime_validation_disabled():
        assert list(Ints([1, "x"])) == [1, "x"]
    assert list(Ints([3])) == [3]


def test_exports():
    for name in torch.utils.data.__all__:
        if not name.startswith("_"):
            assert hasattr(fg.utils.data, name), name
    assert fg.utils.data.DFIterDataPipe().__class__.__mro__[1] is fg.utils.data.IterDataPipe


def test_concat_dataset_helpers_and_worker_check():
    import os
    for L in LIBS:
        D = L.utils.data
        assert D.ConcatDataset.cumsum([range(3), range(0), range(4)]) == [3, 3, 7]
        c = D.ConcatDataset([range(2), range(3)])
        with pytest.warns(FutureWarning):
            assert c.cummulative_sizes == [2, 5]
        many = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()) + 1
        loader = D.DataLoader(range(4), num_workers=many)
        with pytest.warns(UserWarning, match=f"This DataLoader will create {many} worker processes"):
            loader.check_worker_number_rationality()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            D.DataLoader(range(4)).check_worker_number_rationality()


# ------------------------------------------------------------------ num_workers > 0


class _Uneven:
    """An IterableDataset sharded by worker, worker 0 with more items than the others."""

    @staticmethod
    def make(L):
        D = L.utils.data

        class Uneven(D.IterableDataset):
            def __iter__(self):
                info = D.get_worker_info()
                if info is None:
                    return iter(range(10))
                return iter(range(info.id * 100, info.id * 100 + (7 if info.id == 0 else 3)))
        return Uneven()


def test_workers_iterable_dataset_order_as_torch():
    """torch's worker processes, played in-process: each worker iterates the dataset, the loader takes one
    batch from each in turn and skips finished workers; an unsharded dataset is repeated per worker."""
    def make(L):
        D = L.utils.data
        out = [list(D.DataLoader(_Uneven.make(L), batch_size=2, num_workers=n, drop_last=dl))
               for n in (1, 2, 3) for dl in (False, True)]
        out.append(list(D.DataLoader(_Uneven.make(L), batch_size=None, num_workers=2)))
        out.append(list(D.DataLoader(_Count.make(L, 0, 5), batch_size=2, num_workers=2)))
        return out
    _same(make)


def test_workers_datapipe_sharding_and_shuffle_as_torch():
    def make(L):
        D = L.utils.data
        W = _iter_dp(L).IterableWrapper
        dp = W(range(12)).shuffle().sharding_filter()
        out = [list(D.DataLoader(dp, batch_size=3, num_workers=2, shuffle=False))]
        out.append(list(D.DataLoader(dp, batch_size=3, num_workers=0, shuffle=False)))
        out.append(list(D.DataLoader(W(range(7)).sharding_filter().map(_double), batch_size=2, num_workers=3)))
        shuffled = [sorted(sum((b.tolist() for b in D.DataLoader(dp, batch_size=3, num_workers=2, shuffle=True,
                                                                  persistent_workers=p)), []))
                    for p in (False, True)]
        out.append(shuffled)  # every item once per epoch: the workers shuffle alike, then shard
        return out
    _same(make)


def test_workers_map_style_worker_ids():
    ids = []

    class Map(fg.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            ids.append(fg.utils.data.get_worker_info().id)
            return i

    out = [b.tolist() for b in fg.utils.data.DataLoader(Map(), batch_size=2, num_workers=2)]
    assert out == [[0, 1], [2, 3], [4]] and ids == [0, 0, 1, 1, 0]  # batch k on worker k % 2, as torch
    assert fg.utils.data.get_worker_info() is None


# ------------------------------------------------------------------ collate machinery and import paths


class _Row(list):
    """A list subclass sample (rebuilt by type when collated)."""


def test_collate_with_function_map():
    import collections
    from importlib import import_module

    def make(L):
        C = import_module(L.__name__ + ".utils.data._utils.collate")

        def pad_tensors(batch, *, collate_fn_map):
            n = max(len(t) for t in batch)
            return L.stack([L.cat([t, L.zeros(n - len(t), dtype=t.dtype)]) for t in batch])

        custom = {L.Tensor: pad_tensors, **{k: v for k, v in C.default_collate_fn_map.items() if k is not L.Tensor}}
        batch = [{"ids": L.tensor([1, 2, 3]), "n": 3, "name": "a"}, {"ids": L.tensor([4]), "n": 1, "name": "b"}]
        out = [C.collate(batch, collate_fn_map=custom)]
        out.append(C.default_collate([collections.OrderedDict(a=1, b=2.5), collections.OrderedDict(a=3, b=0.5)]))
        out.append(type(C.default_collate([collections.OrderedDict(a=1)])).__name__)
        out.append(C.default_collate([_Row([1, 2]), _Row([3, 4])]))
        out.append(type(C.default_collate([_Row([1, 2])])).__name__)
        out.append(C.default_collate([np.bool_(True), np.bool_(False)]))
        out.append(C.default_convert({"a": np.arange(3), "b": (np.float32(1.5), "s")}))
        for bad in ([object()], [np.array(["x"]), np.array(["y"])]):
            try:
                C.collate(bad, collate_fn_map=C.default_collate_fn_map)
            except TypeError as e:
                out.append(str(e).replace("ferrograd", "torch")[:60])
        return out
    _same(make)
    for L in LIBS:  # updating the default map changes default_collate (restored afterwards)
        C = import_module(L.__name__ + ".utils.data._utils.collate")
        saved = dict(C.default_collate_fn_map)
        try:
            C.default_collate_fn_map[str] = lambda batch, *, collate_fn_map: "|".join(batch)
            assert L.utils.data.default_collate(["a", "b"]) == "a|b"
            assert list(L.utils.data.DataLoader(["x", "y", "z"], batch_size=3)) == ["x|y|z"]
        finally:
            C.default_collate_fn_map.clear()
            C.default_collate_fn_map.update(saved)


def test_module_paths_and_graph_settings():
    from importlib import import_module
    for L in LIBS:
        n = L.__name__
        assert import_module(n + ".utils.data.distributed").DistributedSampler is L.utils.data.DistributedSampler
        assert import_module(n + ".optim.adamw").AdamW is L.optim.AdamW
        assert import_module(n + ".utils.data.dataloader").default_collate is L.utils.data.default_collate
        G = import_module(n + ".utils.data.graph_settings")
        W = _iter_dp(L).IterableWrapper
        dp = W(range(10)).shuffle().sharding_filter()
        G.apply_shuffle_settings(dp, shuffle=False)
        G.apply_sharding(dp, 3, 2)
        assert list(dp) == [2, 5, 8]
