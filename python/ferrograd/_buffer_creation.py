"""Creation from existing memory or layouts: torch.asarray (share memory with a tensor, a NumPy array or
a buffer when dtype and device allow, copy otherwise or when asked), torch.frombuffer (a 1-d tensor over
a Python buffer, sharing it), torch.from_file (one over a memory-mapped file), torch.empty_strided (an
uninitialised tensor with the given strides), torch.empty_permuted (one whose dims lie in memory in a
given order), and torch.cond (eager control flow: the branch that the predicate selects, called on the
operands)."""

from . import _C

# (NumPy is imported by the functions that use it: `import ferrograd` stays lean)
_NP = ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


def _np_dtype(dtype):
    import numpy as np

    name = str(dtype).split(".")[-1]
    if name not in _NP:
        raise TypeError(f"frombuffer: dtype {dtype} is not supported")
    return np.dtype(name)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor: the same memory when it is a tensor, NumPy array or buffer already of `dtype` on
    `device` and copy is not True; a copy otherwise (copy=False then raises ValueError)."""
    import numpy as np

    from ._creation import as_tensor, tensor

    if isinstance(obj, _C.Tensor):
        same = (dtype is None or obj.dtype == dtype) and (device is None or obj.device == _C.device(device))
        if copy is False and not same:
            raise ValueError("can't alias tensor from a different device or dtype without a copy")
        out = obj.clone() if copy else obj
        out = out.to(device=device, dtype=dtype) if not same else out
    elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
        arr = np.asarray(obj)
        out = as_tensor(arr, dtype=dtype, device=device) if not copy else tensor(arr, dtype=dtype, device=device)
        if copy is False and not np.shares_memory(arr, out.numpy() if out.device.type == "cpu" else arr[:0]):
            raise ValueError("can't alias NumPy arrays with a different dtype or device without a copy")
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        if dtype is None:
            raise TypeError("asarray: a buffer needs a dtype")
        out = frombuffer(obj, dtype=dtype)
        out = out.clone() if copy else out
    else:
        if copy is False:
            raise ValueError("can't alias a Python sequence or scalar without a copy")
        out = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out = out.detach() if out is obj else out
        out.requires_grad_(True)
    return out


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over `count` elements of `buffer` from byte `offset` (all the rest when count is -1),
    sharing the buffer's memory."""
    import numpy as np

    nbytes = memoryview(buffer).nbytes
    item = np.dtype(_np_dtype(dtype)).itemsize
    if offset < 0 or offset >= nbytes:
        raise ValueError(f"both buffer length ({nbytes}) and offset ({offset}) must be greater than 0 and offset "
                         f"must be less than the buffer length")
    if count == 0 or count < -1:
        raise ValueError(f"expected 'count' to be either -1 or greater than 0, got {count}")
    if count == -1 and (nbytes - offset) % item:
        raise ValueError(f"buffer length ({nbytes - offset} after offset) must be a multiple of element size ({item})")
    if count > 0 and count * item > nbytes - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset}) must not be "
                         f"greater than actual buffer length ({nbytes})")
    arr = np.frombuffer(buffer, dtype=_np_dtype(dtype), count=count, offset=offset)
    if not arr.flags.writeable:
        import warnings

        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors.",
                      UserWarning, stacklevel=2)
        arr.flags.writeable = True if arr.base is None else arr.flags.writeable
    out = _C.from_numpy(arr) if arr.flags.writeable else _C.from_numpy(arr.copy())
    return out.requires_grad_(True) if requires_grad else out


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False):
    """A 1-d CPU tensor of `size` elements over the file, memory-mapped: shared=True writes changes to the
    file (creating or growing it as needed), otherwise changes stay private (copy-on-write)."""
    import numpy as np

    import os

    dtype = dtype if dtype is not None else _C._get_default_dtype()
    np_dtype = _np_dtype(dtype)
    nbytes = size * np.dtype(np_dtype).itemsize
    if size == 0:
        return _C.empty((0,), dtype=dtype)
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as fh:
                fh.truncate(nbytes)
        arr = np.memmap(filename, dtype=np_dtype, mode="r+", shape=(size,))
    else:
        have = os.path.getsize(filename)
        if have < nbytes:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size <{nbytes}>")
        arr = np.memmap(filename, dtype=np_dtype, mode="c", shape=(size,))
    out = _C.from_numpy(arr)
    return out.to(device) if device is not None else out


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor of `size` whose elements sit at the given strides (its storage just large
    enough for the furthest one)."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    base = _C.empty((extent,), dtype=dtype if dtype is not None else _C._get_default_dtype(), device=device)
    out = base.as_strided(size, stride)
    return out.requires_grad_(True) if requires_grad else out


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor of `size` whose dims lie in memory in the order physical_layout (outermost
    first): a dense tensor of the permuted size, seen through the inverse permutation."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"or physical_layout is not a permutation of the dims")
    dense = _C.empty(tuple(size[i] for i in order), dtype=dtype if dtype is not None else _C._get_default_dtype(),
                     device=device)
    out = dense.permute(tuple(order.index(i) for i in range(len(size))))
    return out.requires_grad_(True) if requires_grad else out


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands); pred a bool or a one-element tensor."""
    if isinstance(pred, _C.Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple of possibly nested dict/list/tuple that only consists "
                           f"of tensor leaves, but got {operands}.")
    return true_fn(*operands) if pred else false_fn(*operands)


__all__ = ["asarray", "frombuffer", "from_file", "empty_strided", "empty_permuted", "cond"]
