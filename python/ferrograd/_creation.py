"""Creation functions that take Python data (nested lists, NumPy arrays, tensors)."""

from ._lazy import numpy as np

from . import _C
from ._argcheck import tensor_args

_DEFAULT_FOR_KIND = {"f": "float32", "i": "int64", "u": "int64", "b": "bool"}
# NumPy dtypes a tensor keeps (others of the kind become the kind's default)
_NUMPY_KEPT = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
# torch refuses values out of an integer dtype's range in tensor() (unsigned: integers down to -max wrap)
_INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2 ** 31, 2 ** 31 - 1)}


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


def _check_range(arr, dtype):
    """torch.tensor's overflow check for the narrow integer dtypes."""
    name = _dtype_name(dtype)
    if name not in _INT_RANGE or arr.size == 0 or arr.dtype.kind not in "fiu":
        return
    lo, hi = _INT_RANGE[name]
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr < lo) | (arr > hi)
    else:
        bad = (arr < (-hi if name == "uint8" else lo)) | (arr > hi)
    if bad.any():
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


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
                dtype = str(arr.dtype) if str(arr.dtype) in _NUMPY_KEPT else _DEFAULT_FOR_KIND[kind]
            else:
                dtype = _DEFAULT_FOR_KIND[kind]
            dtype = getattr(_C, dtype)
        elif not isinstance(data, np.ndarray):
            _check_range(arr, dtype)
        with np.errstate(over="ignore", invalid="ignore"):  # 1e39 -> float32 is inf, as torch's, quietly
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
    if isinstance(data, np.ndarray) and dtype is None and device is None and str(data.dtype) in _NUMPY_KEPT:
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


def _rebuild_tensor(array, requires_grad, device="cpu", dtype=None):
    """Unpickling: a tensor from its values, on its device (see Tensor.__reduce__); `dtype` names
    a dtype NumPy lacks (bfloat16), whose values came as float32."""
    t = _C._from_numpy_copy(array, getattr(_C, dtype) if dtype else None)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
