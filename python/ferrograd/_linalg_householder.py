"""QR in LAPACK's Householder form: torch.geqrf (the factorisation: R on and above the diagonal, the
reflectors' vectors below it, and their scales tau), torch.orgqr (= linalg.householder_product: the first
n columns of Q = H_1 ··· H_k) and torch.ormqr (Q or Qᵀ times a matrix, from either side), with
H_i = I - tau_i v_i v_iᵀ, v_i = (0, ..., 0, 1, A[i+1:, i]).

geqrf is LAPACK's (through NumPy) and, as torch's, has no derivative; orgqr and ormqr apply the reflectors
one by one with differentiable ops (X - tau·v (vᵀX)), so autograd derives their backward, in A, tau and
the other matrix."""

from collections import namedtuple

from . import _C
from . import return_types as _rt

_rt.geqrf = namedtuple("geqrf", ["a", "tau"])


def _check_float(name, *tensors):
    for t in tensors:
        if not t.is_floating_point():
            raise RuntimeError(f"{name}: Expected a floating point tensor, got {t.dtype}")


def geqrf(input):
    """(a, tau): the Householder QR factorisation of input (..., m, n), as LAPACK's geqrf."""
    import numpy as np

    _check_float("geqrf", input)
    if input.dim() < 2:
        raise RuntimeError(f"torch.geqrf: input must have at least 2 dimensions.")
    m, n = input.shape[-2], input.shape[-1]
    arr = input.detach().cpu().double().numpy()
    if arr.size == 0:
        a = np.zeros(arr.shape)
        tau = np.zeros(arr.shape[:-2] + (min(m, n),))
    else:
        h, tau = np.linalg.qr(arr, mode="raw")
        a = np.ascontiguousarray(np.swapaxes(h, -1, -2))
    a = _C.from_numpy(np.ascontiguousarray(a)).to(dtype=input.dtype, device=input.device)
    tau = _C.from_numpy(np.ascontiguousarray(tau)).to(dtype=input.dtype, device=input.device)
    return _rt.geqrf(a, tau)


def _reflector(input, i):
    """v_i of shape (..., m, 1): zeros above row i, 1 at row i, input's column i below it."""
    m = input.shape[-2]
    col = input[..., :, i:i + 1]
    rows = _C.arange(m, device=input.device).reshape(m, 1)
    one = _C.ones((), dtype=input.dtype, device=input.device)
    return _C.where(rows > i, col, _C.where(rows == i, one, _C.zeros((), dtype=input.dtype, device=input.device)))


def _apply(x, v, t, left):
    """H x (left) or x H (right) for H = I - t v vᵀ; t of shape (...)."""
    t = t.unsqueeze(-1).unsqueeze(-1)
    if left:
        return x - (v * t).matmul(v.transpose(-2, -1).matmul(x))
    return x - x.matmul(v).matmul(v.transpose(-2, -1) * t)


def _check_pair(name, input, tau):
    _check_float(name, input, tau)
    if input.dim() < 2:
        raise RuntimeError(f"torch.{name}: input must have at least 2 dimensions.")
    if input.shape[-2] < input.shape[-1]:
        raise RuntimeError(f"torch.{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError(f"torch.{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tau.dim() != input.dim() - 1:
        raise RuntimeError(f"torch.{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.dim()} and input.ndim is equal to {input.dim()}")
    if input.dtype != tau.dtype:
        raise RuntimeError(f"torch.{name}: tau dtype {tau.dtype} does not match input dtype {input.dtype}")


def orgqr(input, tau):
    """The first n columns of Q = H_1 ··· H_k from geqrf's (input, tau) (torch.linalg.householder_product)."""
    _check_pair("linalg.householder_product", input, tau)
    m, n = input.shape[-2], input.shape[-1]
    q = _C.eye(m, n, dtype=input.dtype, device=input.device).expand(*input.shape[:-2], m, n)
    for i in range(tau.shape[-1] - 1, -1, -1):
        q = _apply(q, _reflector(input, i), tau[..., i], True)
    return q


def ormqr(input, tau, other, left=True, transpose=False):
    """Q·other, Qᵀ·other (left) or other·Q, other·Qᵀ (right), Q = H_1 ··· H_k from geqrf's (input, tau)."""
    _check_float("ormqr", input, tau, other)
    if input.dim() < 2 or other.dim() < 2:
        raise RuntimeError("torch.ormqr: input and other must have at least 2 dimensions.")
    side = "other.shape[-2]" if left else "other.shape[-1]"
    m = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != m:
        raise RuntimeError(f"torch.ormqr: {side} must be equal to input.shape[-2]")
    if tau.shape[-1] != min(m, input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min({side}, input.shape[-1])")
    k = tau.shape[-1]
    # Q = H_1 ··· H_k: Q·C applies H_k first; Qᵀ·C = H_k ··· H_1·C applies H_1 first; C·Q applies H_1 first
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    out = other
    for i in order:
        out = _apply(out, _reflector(input, i), tau[..., i], left)
    return out


__all__ = ["geqrf", "orgqr", "ormqr"]

# Tensor methods, installed once by _tensor_methods.py
TENSOR_METHODS = ["geqrf", "orgqr", "ormqr"]
TENSOR_ATTRIBUTES = {}
