"""The padding layers: ConstantPad, ZeroPad, ReflectionPad, ReplicationPad and CircularPad in 1-d, 2-d and
3-d, on one `_PadNd` base (F.pad does the work)."""

import numbers

from .. import functional as F
from .module import Module


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value=None):
        super().__init__()
        if isinstance(padding, numbers.Integral):
            padding = (padding,) * (2 * self._n)
        self.padding = tuple(padding)
        if value is not None:
            self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", getattr(self, "value", 0.0))
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


def _pads():
    made = {}
    for mode, prefix in (("reflect", "Reflection"), ("replicate", "Replication"), ("circular", "Circular")):
        for n in (1, 2):
            name = f"{prefix}Pad{n}d"
            made[name] = type(name, (_PadNd,), {"_n": n, "_mode": mode, "__module__": __name__})
    return made


globals().update(_pads())


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    _n = 2


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ConstantPad3d(_ConstantPadNd):
    _n = 3


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad3d(_PadNd):
    _n = 3
    _mode = "reflect"


class ReplicationPad3d(_PadNd):
    _n = 3
    _mode = "replicate"


class CircularPad3d(_PadNd):
    _n = 3
    _mode = "circular"
