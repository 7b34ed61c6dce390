"""Creation functions that take Python data (nested lists, NumPy arrays, tensors)."""

from ._lazy import numpy as np

from . import _C
from ._argcheck import tensor_args

_DEFAULT_FOR_KIND = {"f": "float32", "i": "int64", "u": "int64", "b": "bool"}


def _dtype_name(dt):
    return None if dt is None else repr(dt).split(".")[-1]


def _to_numpy(data):
    """Python data as a NumPy array with torch's dtype inference (floats → float32)."""
    if isinstance(data, np.generic):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        return data, data.dtype.kind
    if isinstance(data, (list, tuple)):
        flat = []

        def walk(x):
            if isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)
            else:
                flat.append(x)

        walk(data)
        for v in flat:
            if isinstance(v, _C.Tensor) and v.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            if isinstance(v, str) or v is None:
                raise TypeError(f"new(): invalid data type '{type(v).__name__}'")
    elif isinstance(data, str) or data is None:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        data = [_scalarize(d) for d in data] if flat and any(isinstance(v, _C.Tensor) for v in flat) else data
    try:
        arr = np.array(data)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal lengths: {e}") from None
    if arr.dtype == object:
        raise ValueError("expected sequence of equal lengths (ragged nested sequence)")
    kind = arr.dtype.kind
    if kind not in "fiub":
        raise TypeError(f"new(): invalid data type '{arr.dtype}'")
    return arr, kind


def _scalarize(x):
    if isinstance(x, (list, tuple)):
        return [_scalarize(v) for v in x]
    if isinstance(x, _C.Tensor):
        return x.item()
    return x


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (torch.tensor)."""
    if isinstance(data, _C.Tensor):
        t = data.detach().clone()
        if dtype is not None:
            t = t.to(dtype)
    else:
        arr, kind = _to_numpy(data)
        if dtype is None:
            if isinstance(data, (np.ndarray, np.generic)):
                dtype = {"float32": "float32", "float64": "float64", "bool": "bool"}.get(str(arr.dtype), _DEFAULT_FOR_KIND[kind])
                if kind == "f" and str(arr.dtype) not in ("float32", "float64"):
                    dtype = "float32"
            else:
                dtype = _DEFAULT_FOR_KIND[kind]
            dtype = getattr(_C, dtype)
        t = _C._from_numpy_copy(arr, dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` where possible (a tensor, or a NumPy array of a supported dtype)."""
    if isinstance(data, _C.Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and dtype is None and device is None and str(data.dtype) in ("float32", "float64", "int64", "bool"):
        return _C.from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _like(fn, input, dtype, requires_grad, *args, device=None):
    t = fn(*args, tuple(input.shape), dtype=dtype if dtype is not None else input.dtype,
           device=device if device is not None else input.device)
    if requires_grad:
        t.requires_grad_(True)
    return t


@tensor_args("input")
def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.zeros(s, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.ones(s, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.empty(s, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.full(s, fill_value, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.rand(s, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(lambda s, dtype, device: _C.randn(s, dtype=dtype, device=device), input, dtype, requires_grad, device=device)


@tensor_args("input")
def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    if high is None:
        low, high = 0, low
    return _C.randint(low, high, tuple(input.shape), dtype=dtype if dtype is not None else input.dtype,
                      device=device if device is not None else input.device)


def _rebuild_tensor(array, requires_grad, device="cpu"):
    """Unpickling: a tensor from its values, on its device (see Tensor.__reduce__)."""
    t = _C._from_numpy_copy(array)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
