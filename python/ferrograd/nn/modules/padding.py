"""The 3-d padding layers (ConstantPad3d, ZeroPad3d, ReflectionPad3d, ReplicationPad3d, CircularPad3d);
the 1-d and 2-d ones are in nn/_more_modules.py, whose `_PadNd` base these share (F.pad does the work)."""

from .. import _more_modules as _mm


class ConstantPad3d(_mm._ConstantPadNd):
    _n = 3


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad3d(_mm._PadNd):
    _n = 3
    _mode = "reflect"


class ReplicationPad3d(_mm._PadNd):
    _n = 3
    _mode = "replicate"


class CircularPad3d(_mm._PadNd):
    _n = 3
    _mode = "circular"
