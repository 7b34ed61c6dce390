"""nn.functional.pad: constant padding, and the reflect / replicate / circular modes as index gathers
(differentiable through the gather). Re-exported by functional.py."""

from .. import _C
from .._autocast_ops import FP32, NONE
from .._autocast_ops import call as _autocast_call
from .._creation import tensor as _tensor
from . import functional as _F


def _pad_indices(size, left, right, mode):
    idx = []
    for i in range(-left, size + right):
        if mode == "reflect":
            j = -i if i < 0 else (2 * (size - 1) - i if i >= size else i)
        elif mode == "replicate":
            j = min(max(i, 0), size - 1)
        else:  # circular
            j = i % size
        idx.append(j)
    return idx


_constant_pad = _F.pad


def pad(input, pad, mode="constant", value=None):
    """F.pad: 'constant' (functional.py's), 'reflect', 'replicate' and 'circular' (by index_select)."""
    if mode == "constant":
        return _constant_pad(input, pad, mode, value)
    # torch's CPU autocast list: reflection_pad1d/2d and replication_pad1d/2d/3d in float32
    if _C._autocast_active() and (mode == "reflect" and len(pad) in (2, 4) or mode == "replicate"):
        return _autocast_call(FP32, NONE, _pad, (input, pad, mode, value), {})
    return _pad(input, pad, mode, value)


def _pad(input, pad, mode, value):
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    k = len(pad) // 2
    if k > 3 or input.dim() not in (k + 1, k + 2):
        raise NotImplementedError(
            "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
    out = input
    for i in range(k):
        d = input.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = input.shape[d]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, but got: padding "
                f"({left}, {right}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (left > size or right > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size == 0 and (left or right):
            raise RuntimeError(f"padding of an empty dimension {d} of input {list(input.shape)}")
        if left < 0 or right < 0:
            out = _constant_pad(out, (0, 0) * i + (min(left, 0), min(right, 0)))
            size += min(left, 0) + min(right, 0)
            left, right = max(left, 0), max(right, 0)
        idx = _tensor(_pad_indices(size, left, right, mode), device=input.device)
        out = out.index_select(d, idx)
    return out
