"""Named results of ops that return (values, indices), as torch.return_types."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])
min = namedtuple("min", ["values", "indices"])
