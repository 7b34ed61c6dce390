"""The iterable DataPipes torch ships in torch.utils.data.datapipes.iter, with their functional names:
IterableWrapper, Mapper (.map), Filter (.filter), Batcher (.batch), UnBatcher (.unbatch), Collator
(.collate), Concater (.concat), Zipper (.zip), Shuffler (.shuffle), ShardingFilter (.sharding_filter),
Sampler. Not provided: the file/stream readers, fork/demux/mux/groupby and the data-frame pipes.

Shuffler draws its seed from ferrograd's generator: the order is reproducible under manual_seed but is
not the order torch's Shuffler gives for the same seed (the generators differ)."""
import copy
import random
import warnings

from ..sampler import SequentialSampler
from .datapipe import DataChunk, IterDataPipe
from .decorators import functional_datapipe

__all__ = ["Batcher", "Collator", "Concater", "Filter", "IterableWrapper", "Mapper", "Sampler", "ShardingFilter",
           "Shuffler", "UnBatcher", "Zipper"]


def _no_len(dp):
    return TypeError(f"{type(dp).__name__} instance doesn't have valid length")


class IterableWrapperIterDataPipe(IterDataPipe):
    """Wraps an iterable; with deepcopy=True (default) each iteration walks a deep copy, so in-place changes
    to the items do not reach the source."""

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("The input iterable can not be deepcopied, please be aware of in-place modification "
                              "would affect source data.")
        yield from source

    def __len__(self):
        if hasattr(self.iterable, "__len__"):
            return len(self.iterable)
        raise _no_len(self)


def _apply_to_columns(fn, data, input_col, output_col):
    """Mapper's column handling: fn of the selected column(s), written back in place of the input column(s)
    (output_col None), appended (-1) or written to output_col."""
    if input_col is None:
        if output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        return fn(data)
    multi = isinstance(input_col, (list, tuple))
    result = fn(*(data[c] for c in input_col)) if multi else fn(data[input_col])
    was_tuple = isinstance(data, tuple)
    out = list(data) if was_tuple else (copy.copy(data) if isinstance(data, (list, dict)) else data)
    if output_col is None:
        if multi:
            out[input_col[0]] = result
            for c in sorted(input_col[1:], reverse=True):
                del out[c]
        else:
            out[input_col] = result
    elif output_col == -1 and isinstance(out, list):
        out.append(result)
    else:
        out[output_col] = result
    return tuple(out) if was_tuple else out


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe):
    """Applies fn to each item (or to its input_col column(s), see _apply_to_columns)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.datapipe, self.fn, self.input_col, self.output_col = datapipe, fn, input_col, output_col

    def __iter__(self):
        for data in self.datapipe:
            yield _apply_to_columns(self.fn, data, self.input_col, self.output_col)

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise _no_len(self)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Applies collate_fn (default_collate) to each item, usually a batch."""

    def __init__(self, datapipe, conversion=None, collate_fn=None):
        from ..dataloader import default_collate

        if conversion is not None:
            if collate_fn is not None:
                raise ValueError("conversion and collate_fn can not be specified at the same time")
            if not callable(conversion):
                raise NotImplementedError("conversion given as a mapping of columns is not supported")
            collate_fn = conversion
        super().__init__(datapipe, fn=collate_fn if collate_fn is not None else default_collate)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """Keeps the items for which filter_fn (of the item, or of its input_col column(s)) is true."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def _keep(self, data):
        if self.input_col is None:
            keep = self.filter_fn(data)
        elif isinstance(self.input_col, (list, tuple)):
            keep = self.filter_fn(*(data[c] for c in self.input_col))
        else:
            keep = self.filter_fn(data[self.input_col])
        if not isinstance(keep, bool):
            raise ValueError(f"Boolean output is required for `filter_fn` of FilterIterDataPipe, got {type(keep)}")
        return keep

    def __iter__(self):
        for data in self.datapipe:
            if self._keep(data):
                yield data


@functional_datapipe("batch")
class BatcherIterDataPipe(IterDataPipe):
    """Groups consecutive items into DataChunks of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last, self.wrapper_class = datapipe, batch_size, drop_last, wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        if not hasattr(self.datapipe, "__len__"):
            raise _no_len(self)
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Undoes batching unbatch_level times (-1: all the way down)."""

    def __init__(self, datapipe, unbatch_level=1):
        if unbatch_level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def _dive(self, element, level):
        if level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        else:
            if not isinstance(element, (list, DataChunk)):
                raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the DataPipe")
            for item in element:
                yield from self._dive(item, level - 1)

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The DataPipes one after the other."""

    def __init__(self, *datapipes):
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        if all(hasattr(dp, "__len__") for dp in self.datapipes):
            return sum(len(dp) for dp in self.datapipes)
        raise _no_len(self)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of one item from each DataPipe, stopping at the shortest."""

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for `ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        if all(hasattr(dp, "__len__") for dp in self.datapipes):
            return min(len(dp) for dp in self.datapipes)
        raise _no_len(self)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(IterDataPipe):
    """Shuffles within a buffer of buffer_size items (the whole stream when it fits). `set_shuffle(False)`
    passes items through; `set_seed(s)` fixes the next iteration's order."""

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else UnBatcherIterDataPipe(datapipe, unbatch_level)
        self.buffer_size = buffer_size
        self._enabled = True
        self._seed = None

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed):
        self._seed = seed
        return self

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        if self._seed is None:
            from ... import _generator

            seed = int(_generator._numpy_rng(None).integers(0, 2 ** 62))
        else:
            seed = self._seed
        self._seed = None
        rng = random.Random(seed)
        buffer = []
        for x in self.datapipe:
            if len(buffer) == self.buffer_size:
                i = rng.randint(0, len(buffer) - 1)
                buffer[i], x = x, buffer[i]
                yield x
            else:
                buffer.append(x)
        while buffer:
            i = rng.randint(0, len(buffer) - 1)
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()

    def __len__(self):
        if hasattr(self.datapipe, "__len__"):
            return len(self.datapipe)
        raise _no_len(self)


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Keeps every num_of_instances-th item starting at instance_id (set by apply_sharding; all items until
    then, which is what ferrograd's single in-process worker sees)."""

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.num_of_instances = 1
        self.instance_id = 0

    def is_shardable(self):
        return True

    def apply_sharding(self, num_of_instances, instance_id, sharding_group=None):
        if not 0 <= instance_id < num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than num_of_instances({num_of_instances})")
        self.num_of_instances = num_of_instances
        self.instance_id = instance_id

    def __iter__(self):
        for i, item in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self):
        if hasattr(self.source_datapipe, "__len__"):
            n = len(self.source_datapipe)
            return n // self.num_of_instances + (1 if self.instance_id < n % self.num_of_instances else 0)
        raise _no_len(self)


class SamplerIterDataPipe(IterDataPipe):
    """The items of a sized datapipe in the order of a sampler (SequentialSampler by default)."""

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None, sampler_kwargs=None):
        if not hasattr(datapipe, "__len__"):
            raise AssertionError("Sampler class requires input datapipe implemented `__len__`")
        self.datapipe = datapipe
        self.sampler = sampler(*(sampler_args or ()), data_source=datapipe, **(sampler_kwargs or {}))

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self):
        return len(self.sampler)


# torch's short names
IterableWrapper = IterableWrapperIterDataPipe
Mapper = MapperIterDataPipe
Collator = CollatorIterDataPipe
Filter = FilterIterDataPipe
Batcher = BatcherIterDataPipe
UnBatcher = UnBatcherIterDataPipe
Concater = ConcaterIterDataPipe
Zipper = ZipperIterDataPipe
Shuffler = ShufflerIterDataPipe
ShardingFilter = ShardingFilterIterDataPipe
Sampler = SamplerIterDataPipe
