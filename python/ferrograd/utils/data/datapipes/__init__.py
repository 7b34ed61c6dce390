"""torch.utils.data.datapipes: composable iterable (IterDataPipe) and map-style (MapDataPipe) data
pipelines, their decorators, and the built-in pipes in `iter` and `map`."""
from . import iter, map  # noqa: F401  (registers the functional forms)
from .datapipe import DataChunk, DFIterDataPipe, IterDataPipe, MapDataPipe
from .decorators import (argument_validation, functional_datapipe, guaranteed_datapipes_determinism,
                         non_deterministic, runtime_validation, runtime_validation_disabled)

__all__ = ["DFIterDataPipe", "DataChunk", "IterDataPipe", "MapDataPipe", "argument_validation", "functional_datapipe",
           "guaranteed_datapipes_determinism", "iter", "map", "non_deterministic", "runtime_validation",
           "runtime_validation_disabled"]
