"""torch.svd (the older API: V rather than Vh, `some` rather than full_matrices, zero U and V when
compute_uv=False) over linalg.svd, and Tensor.swapdims_ / swapaxes_ (in-place transpose)."""
from collections import namedtuple

from . import _C
from . import return_types as _rt

Tensor = _C.Tensor

if not hasattr(_rt, "svd"):
    _rt.svd = namedtuple("svd", ["U", "S", "V"])


def svd(input, some=True, compute_uv=True, *, out=None):
    """(U, S, V) with input = U diag(S) V^T; some=False gives square U and V."""
    from . import linalg
    from ._out import out_call_many
    if not isinstance(input, Tensor):
        raise TypeError(f"svd(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")

    def compute():
        if not compute_uv:
            S = linalg.svdvals(input)
            m, n = input.shape[-2], input.shape[-1]
            batch = tuple(input.shape[:-2])
            U = _C.zeros(batch + (m, m), dtype=input.dtype, device=input.device)
            V = _C.zeros(batch + (n, n), dtype=input.dtype, device=input.device)
            return _rt.svd(U, S, V)
        U, S, Vh = linalg.svd(input, full_matrices=not some)
        return _rt.svd(U, S, Vh.mT)

    return out_call_many("svd", compute, out, (input,), kind=_rt.svd)


def _swapdims_(self, dim0, dim1):
    return self.transpose_(dim0, dim1)


__all__ = ["svd"]

# Tensor methods, installed once by _tensor_methods.py
TENSOR_METHODS = ["svd"]
TENSOR_ATTRIBUTES = {"swapdims_": _swapdims_}
