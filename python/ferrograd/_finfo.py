"""torch.finfo / torch.iinfo: the numeric limits of a dtype, with torch's attributes and repr."""

from . import _C

# bits, eps, max, smallest normal (= tiny), resolution (10 ** -digits)
_FLOATS = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 1e-3),
    "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126, 1e-2),
    "float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126, 1e-6),
    "float64": (64, 2.0 ** -52, 1.7976931348623157e308, 2.0 ** -1022, 1e-15),
}
_INTS = {"uint8": (8, False), "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True)}


def _name(dtype):
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"finfo(): argument 'type' (position 1) must be torch.dtype, not {type(dtype).__name__}")
    return repr(dtype).rsplit(".", 1)[-1]


def _g(v):
    return f"{v:g}"


class finfo:
    """Machine limits of a floating point dtype (the default dtype when none is given)."""

    def __init__(self, type=None):
        name = _name(type) if type is not None else "float32"
        if name not in _FLOATS:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'")
        self.bits, self.eps, self.max, self.smallest_normal, self.resolution = _FLOATS[name]
        self.min = -self.max
        self.tiny = self.smallest_normal
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype."""

    def __init__(self, type):
        name = _name(type)
        if name == "bool":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if name not in _INTS:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        self.bits, signed = _INTS[name]
        self.min = -(1 << (self.bits - 1)) if signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if signed else (1 << self.bits) - 1
        self.dtype = name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"
