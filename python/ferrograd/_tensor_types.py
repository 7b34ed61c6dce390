"""The legacy typed tensor classes (torch.FloatTensor, torch.LongTensor, torch.cuda.FloatTensor,
...), `Tensor.type()` and `Tensor.new()`.

Each typed class stands for a (dtype, device) pair: calling it is torch's legacy constructor
(`FloatTensor([1, 2])` copies data, `FloatTensor(2, 3)` or `FloatTensor(torch.Size([2, 3]))`
makes an uninitialised tensor of that size, `FloatTensor()` an empty one, `FloatTensor(t)` shares
t's data when t already has the type), and `isinstance(t, torch.FloatTensor)` checks t's dtype and
device. Tensors themselves are always of class Tensor, as in torch.
"""

from . import _C
from ._size import Size

# (class name, dtype name) for every dtype ferrograd has
_TYPES = (("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
          ("BFloat16Tensor", "bfloat16"), ("ByteTensor", "uint8"), ("CharTensor", "int8"),
          ("ShortTensor", "int16"), ("IntTensor", "int32"), ("LongTensor", "int64"), ("BoolTensor", "bool"))
_NAME_OF = {dt: name for name, dt in _TYPES}


def _legacy_new(dtype, device, args, kwargs, fname):
    """torch's legacy constructor of a tensor of `dtype` on `device` (see the module docstring)."""
    dev = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if dev is not None:
        dev = _C.device(dev) if isinstance(dev, (str, int)) else dev
        if dev.type != device.type:
            raise RuntimeError(f"legacy constructor expects device type: {device.type} but device type: "
                               f"{dev.type} was passed")
        device = dev
    if not args:
        return _C.empty(0, dtype=dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, _C.Tensor):
        if first.dtype != dtype or first.device.type != device.type:
            raise TypeError(f"expected {_type_string(dtype, device)} (got {_type_string(first.dtype, first.device)})")
        return first.detach()
    if len(args) == 1 and isinstance(first, Size):
        return _C.empty(tuple(first), dtype=dtype, device=device)
    if len(args) == 1 and not isinstance(first, int):
        from ._creation import tensor

        return tensor(first, dtype=dtype, device=device)
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        raise TypeError(f"{fname}(): expected sizes as ints, or one sequence of data, but got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    return _C.empty(tuple(args), dtype=dtype, device=device)


def _type_string(dtype, device):
    """'torch.FloatTensor' / 'torch.cuda.FloatTensor', as Tensor.type() names a tensor's type."""
    name = _NAME_OF[repr(dtype).split(".")[-1]]
    return f"torch.cuda.{name}" if device.type == "cuda" else f"torch.{name}"


class tensortype(type):
    """The metaclass of the typed classes (torch.tensortype)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype and obj.device.type == cls._device.type

    def __call__(cls, *args, **kwargs):
        return _legacy_new(cls.dtype, cls._device, args, kwargs, cls.__name__)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"

    @property
    def is_cuda(cls):
        return cls._device.type == "cuda"


def _make(name, dtype_name, device, module):
    return tensortype(name, (), {"dtype": getattr(_C, dtype_name), "_device": _C.device(device),
                                 "is_sparse": False, "__module__": module,
                                 "__doc__": f"Legacy constructor of {dtype_name} tensors on the {device}."})


CPU_TYPES = {name: _make(name, dt, "cpu", "torch") for name, dt in _TYPES}
CUDA_TYPES = {name: _make(name, dt, "cuda", "torch.cuda") for name, dt in _TYPES}
_BY_STRING = {f"torch.{n}": c for n, c in CPU_TYPES.items()} | {f"torch.cuda.{n}": c for n, c in CUDA_TYPES.items()}


def tensor_type(self, dtype=None, non_blocking=False):
    """Without an argument, the type's name ('torch.FloatTensor', 'torch.cuda.LongTensor');
    with a dtype, a typed class or its name, this tensor converted to it (itself if it already is)."""
    if dtype is None:
        return _type_string(self.dtype, self.device)
    if isinstance(dtype, str):
        cls = _BY_STRING.get(dtype)
        if cls is None:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = cls
    if isinstance(dtype, tensortype):
        return self.to(device=dtype._device if dtype._device.type != self.device.type else None, dtype=dtype.dtype,
                       non_blocking=non_blocking)
    return self.to(dtype=dtype, non_blocking=non_blocking)


def new(self, *args, **kwargs):
    """Tensor.new: the legacy constructor with this tensor's dtype and device."""
    return _legacy_new(self.dtype, self.device, args, kwargs, "new")


tensor_type.__name__ = tensor_type.__qualname__ = "type"

# Tensor methods, installed once by _tensor_methods.py (`type` replaces the native one)
TENSOR_METHODS = []
TENSOR_ATTRIBUTES = {"type": tensor_type, "new": new}
