"""The DataPipe base classes (torch.utils.data.datapipes.datapipe): IterDataPipe (an IterableDataset whose
registered functional forms chain, `dp.map(f).filter(g).batch(8)`), MapDataPipe (the map-style
counterpart), DFIterDataPipe, and DataChunk (the list type of a batch).

A functional form is a DataPipe class registered under a name (functional_datapipe in decorators.py);
`dp.name(*args)` builds `Class(dp, *args)`. Differences from torch, by design of the in-process loader:
no iterator-invalidation bookkeeping (creating a second iterator does not reset the first), no
pickling/serialisation hooks, no graph traversal API (torch.utils.data.graph)."""
import functools
from typing import Generic, TypeVar

from ..dataset import Dataset, IterableDataset

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe"]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


class _FunctionalForms:
    """The per-family registry of functional forms and the attribute lookup that finds them."""

    functions = {}

    def __getattr__(self, name):
        fn = type(self).functions.get(name)
        if fn is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        bound = functools.partial(fn, self)
        functools.update_wrapper(bound, fn, updated=())
        return bound

    @classmethod
    def register_function(cls, function_name, function):
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register, enable_df_api_tracing=False):
        if function_name in cls.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is already taken")

        def make(source, *args, **kwargs):
            return cls_to_register(source, *args, **kwargs)

        functools.update_wrapper(make, cls_to_register.__init__, updated=())
        make.__name__ = function_name
        cls.functions[function_name] = make

    def __repr__(self):
        return type(self).__qualname__

    def __str__(self):
        return type(self).__qualname__

    def __dir__(self):
        return list(super().__dir__()) + list(type(self).functions)


class IterDataPipe(_FunctionalForms, IterableDataset, Generic[T_co]):
    """Iterable-style DataPipe: subclasses define `__iter__` (and `__len__` when the length is known)."""

    functions = {}

    def reset(self):
        """Called before a new iteration (override to clear buffers)."""


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of data frames."""

    def _is_dfpipe(self):
        return True


class MapDataPipe(_FunctionalForms, Dataset, Generic[T_co]):
    """Map-style DataPipe: subclasses define `__getitem__` and `__len__`."""

    functions = {}


class DataChunk(list, Generic[T]):
    """A batch produced by `.batch()`: a list, with `as_str` for nested printing."""

    def __init__(self, items=()):
        super().__init__(items)
        self.items = self

    def as_str(self, indent=""):
        parts = [item.as_str() if isinstance(item, DataChunk) else str(item) for item in self]
        return indent + "[" + ", ".join(parts) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from super().__iter__()
