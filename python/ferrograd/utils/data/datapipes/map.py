"""The map-style DataPipes torch ships in torch.utils.data.datapipes.map, with their functional names:
SequenceWrapper, Mapper (.map), Batcher (.batch), Concater (.concat), Zipper (.zip), and .shuffle (which
gives an IterDataPipe, as in torch)."""
import copy
import warnings

from .datapipe import DataChunk, MapDataPipe
from .decorators import functional_datapipe

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]


class SequenceWrapperMapDataPipe(MapDataPipe):
    """Wraps a sequence (deep-copied once by default)."""

    def __init__(self, sequence, deepcopy=True):
        if deepcopy:
            try:
                sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("The input sequence can not be deepcopied, please be aware of in-place modification "
                              "would affect source data")
        self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe):
    """fn applied to each item on access."""

    def __init__(self, datapipe, fn):
        self.datapipe, self.fn = datapipe, fn

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(MapDataPipe):
    """Item i is the DataChunk of items [i * batch_size, (i + 1) * batch_size)."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last, self.wrapper_class = datapipe, batch_size, drop_last, wrapper_class

    def __getitem__(self, index):
        if index < 0 or index >= len(self):
            raise IndexError(f"Index {index} is out of bound.")
        start = index * self.batch_size
        stop = min(start + self.batch_size, len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The DataPipes one after the other."""

    def __init__(self, *datapipes):
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index):
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Item i is the tuple of each DataPipe's item i; the length is the shortest."""

    def __init__(self, *datapipes):
        if not datapipes:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `MapDataPipe`")
        self.datapipes = datapipes

    def __getitem__(self, index):
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


def Shuffler(datapipe, *, indices=None):
    """An IterDataPipe of the items at `indices` (all by default) in a random order."""
    from .iter import IterableWrapper
    from .iter import ShufflerIterDataPipe as IterShuffler

    keys = list(range(len(datapipe))) if indices is None else list(indices)

    class _Indexed(IterableWrapper):  # (the map-style items behind shuffled indices)
        def __iter__(self):
            for i in super().__iter__():
                yield datapipe[i]

    return IterShuffler(_Indexed(keys, deepcopy=False))


MapDataPipe.register_datapipe_as_function("shuffle", Shuffler)


# torch's short names
SequenceWrapper = SequenceWrapperMapDataPipe
Mapper = MapperMapDataPipe
Batcher = BatcherMapDataPipe
Concater = ConcaterMapDataPipe
Zipper = ZipperMapDataPipe

