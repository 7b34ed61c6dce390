"""Bit shifts: `<<`, `>>`, `<<=`, `>>=`, torch.bitwise_left_shift / bitwise_right_shift (function,
method, in-place form), with torch's rules.

- The result dtype is torch's type promotion of the two operands; a floating or bool result is
  refused with torch's NotImplementedError ("lshift_cpu" not implemented for 'Float').
- A shift amount outside [0, bits of the result dtype) gives 0 for a left shift, and the sign fill
  (0 or -1) for a right shift, as torch's kernels do. Left shifts wrap around in the result dtype.
- Integer shifts have no gradient; the values are computed on the host (NumPy) and come back on
  the input's device.
"""
import builtins

from ._lazy import numpy as np

from . import _C
from ._op_utils import _host, _from_host
from ._out import out_call, scalar_type_name

Tensor = _C.Tensor

_BITS = {"int8": 8, "uint8": 8, "int16": 16, "int32": 32, "int64": 64}


def _key(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _check_operand(x, fname, pos, name):
    if isinstance(x, Tensor) or (isinstance(x, (int, float)) and not isinstance(x, complex)):
        return
    raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor or Number, "
                    f"not {type(x).__name__}")


def _result_dtype(a, b, kernel):
    if isinstance(a, Tensor):
        dt = _C._result_type(a, b)
    else:
        dt = _C._result_type(b, a)
    if _key(dt) not in _BITS:
        raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for '{scalar_type_name(dt)}'")
    return dt


def _shift_values(a, b, dt, left):
    """NumPy values of a << b (left) or a >> b in torch's dtype dt."""
    key = _key(dt)
    bits = _BITS[key]
    npdt = np.dtype(key)
    av = _host(a).astype(npdt) if isinstance(a, Tensor) else np.array(int(a)).astype(npdt)
    if isinstance(b, Tensor):
        bv = _host(b).astype(npdt).astype(np.int64)
    else:
        bv = np.array(builtins.min(builtins.max(int(b), -1), bits), dtype=np.int64)
    av, bv = np.broadcast_arrays(av, bv)
    ok = (bv >= 0) & (bv < bits)
    s = np.where(ok, bv, 0).astype(npdt)
    with np.errstate(all="ignore"):
        if left:
            r = np.where(ok, np.left_shift(av, s), np.zeros((), npdt))
        else:
            fill = np.right_shift(av, np.array(bits - 1, dtype=npdt)) if npdt.kind == "i" else np.zeros((), npdt)
            r = np.where(ok, np.right_shift(av, s), fill)
    return np.ascontiguousarray(r.astype(npdt))


def _shift(a, b, left, fname):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}), but expected one of:\n"
                        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
                        " * (Number self, Tensor other)\n"
                        " * (Tensor input, Number other, *, Tensor out = None)")
    _check_operand(a, fname, 1, "input")
    _check_operand(b, fname, 2, "other")
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.device != b.device and a.dim() and b.dim():
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                           f"{a.device} and {b.device}!")
    dt = _result_dtype(a, b, "lshift" if left else "rshift")
    like = a if isinstance(a, Tensor) else b
    out = _from_host(_shift_values(a, b, dt, left), like)
    return out if out.dtype == dt else out.to(dt)


def bitwise_left_shift(input, other, *, out=None):
    """input << other, elementwise, with torch's type promotion (integers only)."""
    ins = tuple(x for x in (input, other) if isinstance(x, Tensor))
    return out_call("bitwise_left_shift", lambda: _shift(input, other, True, "bitwise_left_shift"), out, ins,
                    grad=False, dtype="cast")


def bitwise_right_shift(input, other, *, out=None):
    """input >> other, elementwise (arithmetic shift for signed dtypes), integers only."""
    ins = tuple(x for x in (input, other) if isinstance(x, Tensor))
    return out_call("bitwise_right_shift", lambda: _shift(input, other, False, "bitwise_right_shift"), out, ins,
                    grad=False, dtype="cast")


def _inplace(self, other, left, fname):
    _check_operand(other, fname, 1, "other")
    dt = _C._result_type(self, other)
    if not _C._can_cast(dt, self.dtype):
        raise RuntimeError(f"result type {scalar_type_name(dt)} can't be cast to the desired output type "
                           f"{scalar_type_name(self.dtype)}")
    r = _shift(self, other, left, fname)
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(r.shape)}")
    self.copy_(r)
    return self


def bitwise_left_shift_(self, other):
    return _inplace(self, other, True, "bitwise_left_shift_")


def bitwise_right_shift_(self, other):
    return _inplace(self, other, False, "bitwise_right_shift_")


def _binop(fn, reflected=False):
    def op(self, other):
        if not isinstance(other, (Tensor, int, float)) or isinstance(other, complex):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)
    return op


def _ilshift(self, other):
    return bitwise_left_shift_(self, other)


def _irshift(self, other):
    return bitwise_right_shift_(self, other)


__all__ = ["bitwise_left_shift", "bitwise_right_shift"]


# Tensor methods and operators, installed once by _tensor_methods.py
TENSOR_METHODS = ["bitwise_left_shift", "bitwise_right_shift"]
TENSOR_ATTRIBUTES = {
    "bitwise_left_shift_": bitwise_left_shift_,
    "bitwise_right_shift_": bitwise_right_shift_,
    "__lshift__": _binop(lambda a, b: _shift(a, b, True, "__lshift__")),
    "__rlshift__": _binop(lambda a, b: _shift(a, b, True, "__rlshift__"), reflected=True),
    "__rshift__": _binop(lambda a, b: _shift(a, b, False, "__rshift__")),
    "__rrshift__": _binop(lambda a, b: _shift(a, b, False, "__rrshift__"), reflected=True),
    "__ilshift__": _ilshift,
    "__irshift__": _irshift,
}
