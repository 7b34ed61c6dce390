"""LU factorization and the solves built on it (torch.linalg.lu_factor / lu_factor_ex / lu / lu_solve,
torch.lu, torch.lu_solve, torch.lu_unpack), Cholesky-based solves (torch.cholesky_solve,
torch.cholesky_inverse), torch.triangular_solve, and linalg.eig / eigvals, which need complex dtypes
that ferrograd does not have (they raise NotImplementedError).

As in linalg.py (Note [LU on the host for the pivots]): the row order of partial pivoting is found on
the host; the factors are then the differentiable elimination of the rows in that order, so gradients
flow through L and U (and through the solves) by the engine's own ops. Works for (*, m, n) batches,
m != n included.
"""
import warnings
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from . import return_types as _rt
from ._op_utils import _broadcast_shape, _host, _index_from_host
from ._out import scalar_type_name as _word, out_call_many

Tensor = _C.Tensor

for _name, _fields in (("linalg_lu_factor", ["LU", "pivots"]), ("linalg_lu_factor_ex", ["LU", "pivots", "info"]),
                       ("linalg_lu", ["P", "L", "U"]), ("lu_unpack", ["P", "L", "U"]),
                       ("_lu_with_info", ["LU", "pivots", "info"]),
                       ("triangular_solve", ["solution", "cloned_coefficient"])):
    if not hasattr(_rt, _name):
        setattr(_rt, _name, namedtuple(_name, _fields))

_FLOATS = ("float32", "float64")


def _key(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _check_input(A, fname, kernel="lu_cpu", what="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{fname}(): argument '{what}' (position 1) must be Tensor, not {type(A).__name__}")
    if _key(A.dtype) not in _FLOATS:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_word(A.dtype)}'")


def _host_pivots(A):
    """LAPACK getrf's row choices for the batch of (m, n) matrices A: (swaps (*, k) 0-based, perm
    (*, m) the resulting row order, info (*,) 1-based first zero pivot or 0)."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = tuple(A.shape[:-2])
    B = int(np.prod(batch, dtype=np.int64))
    a = _host(A).reshape((B, m, n)).copy()
    rows = np.arange(B)
    swaps = np.zeros((B, k), dtype=np.int64)
    perm = np.tile(np.arange(m), (B, 1))
    info = np.zeros(B, dtype=np.int64)
    for j in range(k):
        p = j + np.argmax(np.abs(a[:, j:, j]), axis=1) if B else np.zeros(0, np.int64)
        swaps[:, j] = p
        a[rows, j], a[rows, p] = a[rows, p], a[rows, j].copy()
        perm[rows, j], perm[rows, p] = perm[rows, p], perm[rows, j].copy()
        piv = a[:, j, j]
        zero = piv == 0
        info[(info == 0) & zero] = j + 1
        mult = a[:, j + 1:, j] / np.where(zero, 1, piv)[:, None]
        mult[zero] = 0
        a[:, j + 1:, j] = mult
        a[:, j + 1:, j + 1:] -= mult[:, :, None] * a[:, None, j, j + 1:]
    return swaps.reshape(batch + (k,)), perm.reshape(batch + (m,)), info.reshape(batch)


def _perm_from_pivots(piv, m):
    """The row order (*, m) that LAPACK pivots (*, k), 1-based, describe."""
    k = piv.shape[-1]
    batch = piv.shape[:-1]
    B = int(np.prod(batch, dtype=np.int64))
    p = piv.reshape(B, k).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (B, 1))
    rows = np.arange(B)
    for j in range(k):
        q = p[:, j]
        perm[rows, j], perm[rows, q] = perm[rows, q], perm[rows, j].copy()
    return perm.reshape(batch + (m,))


def _gather_rows(X, perm):
    idx = _index_from_host(np.broadcast_to(perm[..., None], perm.shape + (X.shape[-1],)), X)
    return X.gather(-2, idx)


def _factors(PA):
    """(L, U) of the row-ordered PA by elimination without pivoting: L (*, m, k) unit lower, U (*, k, n)."""
    m, n = PA.shape[-2], PA.shape[-1]
    k = min(m, n)
    batch = tuple(PA.shape[:-2])
    opts = dict(dtype=PA.dtype, device=PA.device)
    S = PA
    lcols, urows = [], []
    for j in range(k):
        r = S[..., 0, :]  # U[j, j:]
        urows.append(_C.cat([_C.zeros(batch + (j,), **opts), r], -1) if j else r)
        piv = r[..., :1]
        zero = piv == 0
        col = _C.where(zero, 0.0, S[..., 1:, 0] / _C.where(zero, 1.0, piv))  # L[j+1:, j]
        parts = [_C.zeros(batch + (j,), **opts)] if j else []
        parts += [_C.ones(batch + (1,), **opts), col]
        lcols.append(_C.cat(parts, -1))
        S = S[..., 1:, 1:] - col.unsqueeze(-1) * r[..., None, 1:]
    if k == 0:
        return _C.zeros(batch + (m, 0), **opts), _C.zeros(batch + (0, n), **opts)
    return _C.stack(lcols, -1), _C.stack(urows, -2)


def _lu_parts(A, fname, pivot):
    _check_input(A, fname)
    if A.dim() < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if not pivot:
        raise RuntimeError(f"{fname}: LU without pivoting is not implemented on the CPU")
    swaps, perm, info = _host_pivots(A)
    L, U = _factors(_gather_rows(A, perm))
    return L, U, swaps, perm, info


def _packed(L, U):
    """LAPACK's packed LU: U on and above the diagonal, L's multipliers below."""
    m, k, n = L.shape[-2], L.shape[-1], U.shape[-1]
    if m >= n:  # L is (m, n), U (n, n)
        return L.tril(-1) + _C.cat([U, _C.zeros(tuple(U.shape[:-2]) + (m - n, n), dtype=U.dtype,
                                                device=U.device)], -2) if m > n else L.tril(-1) + U
    # m < n: L (m, m), U (m, n)
    return U + _C.cat([L.tril(-1), _C.zeros(tuple(L.shape[:-2]) + (m, n - k), dtype=L.dtype, device=L.device)], -1)


def _int32(a, like):
    return _index_from_host(a, like).to(_C.int32)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): the packed LU factorization with partial pivoting (pivots 1-based int32,
    as LAPACK's), info the 1-based index of the first zero pivot (0 when none)."""
    def compute():
        L, U, swaps, _, info = _lu_parts(A, "linalg.lu_factor_ex", pivot)
        if check_errors:
            _check_info(info, "torch.linalg.lu_factor_ex")
        return _rt.linalg_lu_factor_ex(_packed(L, U), _int32(swaps + 1, A), _int32(info, A))
    return out_call_many("linalg_lu_factor_ex", compute, out, (A,), kind=_rt.linalg_lu_factor_ex)


def _check_info(info, fname):
    flat = np.asarray(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        b = int(bad[0])
        i = int(flat[b])  # (torch prints LAPACK's 1-based info)
        prefix = f"(Batch element {b}): " if np.asarray(info).ndim else ""
        raise RuntimeError(f"{fname}: {prefix}U[{i},{i}] is zero and using it on lu_solve would result in a "
                           "division by zero. If you still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) of A = P L U; raises for a singular matrix (use lu_factor_ex to get info)."""
    def compute():
        L, U, swaps, _, info = _lu_parts(A, "linalg.lu_factor", pivot)
        _check_info(info, "torch.linalg.lu_factor")
        return _rt.linalg_lu_factor(_packed(L, U), _int32(swaps + 1, A))
    return out_call_many("linalg_lu_factor", compute, out, (A,), kind=_rt.linalg_lu_factor)


def _from_np(a, like):
    from ._op_utils import _from_host
    return _from_host(np.ascontiguousarray(a), like).to(like.dtype)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P @ L @ U: P a permutation matrix, L unit lower (m, k), U upper (k, n)."""
    def compute():
        L, U, _, perm, _ = _lu_parts(A, "linalg.lu", pivot)
        P = _from_np(np.swapaxes(np.eye(A.shape[-2])[perm], -1, -2), A)
        return _rt.linalg_lu(P, L, U)
    return out_call_many("linalg_lu", compute, out, (A,), kind=_rt.linalg_lu)


def _check_lu_solve(LU, pivots, B, fname):
    _check_input(LU, fname, kernel="lu_solve_cpu", what="LU")
    if not isinstance(B, Tensor):
        raise TypeError(f"{fname}(): argument 'B' must be Tensor, not {type(B).__name__}")
    if not isinstance(pivots, Tensor):
        raise TypeError(f"{fname}(): argument 'pivots' must be Tensor, not {type(pivots).__name__}")
    if B.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    if LU.dim() < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor LU must have at least 2 dimensions.")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_word(LU.dtype)} and B of type {_word(B.dtype)} instead")
    if pivots.dtype != _C.int32:
        raise RuntimeError(f"linalg.lu_solve: pivots should be a Tensor of scalar type Int, but got "
                           f"{_word(pivots.dtype)}")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(pivots.shape)} instead")


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left) or X A = B, A^H in place of A when adjoint, from lu_factor's (LU, pivots).
    Differentiable in LU and B."""
    from . import linalg
    _check_lu_solve(LU, pivots, B, "linalg.lu_solve")
    n = LU.shape[-1]
    rows_b = B.shape[-2] if left else B.shape[-1]
    if rows_b != n:
        shape = (B.shape[-2], B.shape[-1]) if left else (B.shape[-1], B.shape[-2])
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {shape[0]}x{shape[1]})")

    def compute():
        if not left:  # X A = B  <=>  A^T X^T = B^T  (A^T's solve is the adjoint one)
            return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
        batch = _broadcast_shape(tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
        LUb = LU.expand(batch + (n, n))
        Bb = B.expand(batch + tuple(B.shape[-2:]))
        perm = np.broadcast_to(_perm_from_pivots(_host(pivots), n), batch + (n,))
        if n == 0:
            return Bb.clone()
        if not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
            Y = linalg.solve_triangular(LUb, _gather_rows(Bb, perm), upper=False, unitriangular=True)
            return linalg.solve_triangular(LUb, Y, upper=True)
        # A^T = U^T L^T P^T: X = P L^-T U^-T B
        Y = linalg.solve_triangular(LUb.mT, Bb, upper=False)
        Z = linalg.solve_triangular(LUb.mT, Y, upper=True, unitriangular=True)
        inv = np.argsort(perm, axis=-1)
        return _gather_rows(Z, inv)

    from ._out import out_call
    return out_call("linalg_lu_solve", compute, out, (LU, B))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed (LU, pivots); empty L, U (or P) when not unpacked."""
    _check_input(LU_data, "lu_unpack", kernel="lu_unpack", what="LU_data")
    if LU_data.dim() < 2:
        raise RuntimeError("torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")

    def compute():
        m, n = LU_data.shape[-2], LU_data.shape[-1]
        k = min(m, n)
        empty = LU_data.new_zeros((0,))
        if unpack_data:
            eye = _C.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
            L = LU_data[..., :, :k].tril(-1) + eye
            U = LU_data[..., :k, :].triu()
        else:
            L = U = empty
        if unpack_pivots:
            if LU_pivots.dtype != _C.int32:
                raise RuntimeError(f"torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 "
                                   f"dtype. Note: this function is intended to be used with the output produced by "
                                   f"torch.linalg.lu_factor")
            perm = _perm_from_pivots(_host(LU_pivots), m)
            P = _from_np(np.swapaxes(np.eye(m)[perm], -1, -2), LU_data)
        else:
            P = empty
        return _rt.lu_unpack(P, L, U)

    return out_call_many("lu_unpack", compute, out, (LU_data,), kind=_rt.lu_unpack)


# ------------------------------------------------------------------ torch.* forms (the older API)
def torch_lu(A, pivot=True, get_infos=False, out=None):
    """torch.lu(A, pivot=True, get_infos=False): (LU, pivots[, infos]) (deprecated in torch as here)."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
                  "will be removed in a future PyTorch release.", UserWarning, stacklevel=2)
    def compute():
        LU, piv, info = lu_factor_ex(A, pivot=pivot)
        if not get_infos:
            _check_info(_host(info), "torch.linalg.lu_factor")
            return LU, piv
        return _rt._lu_with_info(LU, piv, info)
    if out is not None:
        # torch's Python wrapper: each out resized to its result (no warning) and written; a plain tuple
        from ._out import out_call_many
        res = out_call_many("lu", compute, out, (A,), kind=_rt._lu_with_info if get_infos else _LU_PAIR,
                            grad=False, warn=False, dtypes=("copy",) * (3 if get_infos else 2))
        return tuple(res)
    return compute()


_LU_PAIR = __import__("collections").namedtuple("lu", ("LU", "pivots"))


def torch_lu_solve(b, LU_data, LU_pivots, *, out=None):
    """torch.lu_solve(b, LU_data, LU_pivots): linalg.lu_solve(LU_data, LU_pivots, b)."""
    return lu_solve(LU_data, LU_pivots, b, out=out)


def _chol_check(B, L, fname):
    for t, name in ((B, "input"), (L, "input2")):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if B.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.dim()} dimensions instead")
    if L.dim() < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {L.dim()} dimensions instead")
    if B.dtype != L.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_word(B.dtype)} and A of "
                           f"type {_word(L.dtype)} instead.")
    _check_input(L, fname, kernel="cholesky_solve_cpu", what="input2")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {L.shape[-2]} by {L.shape[-1]} "
                           "matrices")
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {L.shape[-1]} by "
                           f"{L.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")


def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = B, A = L L^T (or U^T U when upper) given its Cholesky factor input2."""
    from . import linalg
    from ._out import out_call
    _chol_check(input, input2, "cholesky_solve")

    # Torch differentiates cholesky_solve as (F F^T)^-1 B of the whole factor F (its gradient is not
    # masked to F's triangle), so F is solved against as a full matrix: F^-T F^-1 B is that function of
    # every entry of F, and its values equal the triangular solves' where the other triangle is zero.
    def compute():
        batch = _broadcast_shape(tuple(input.shape[:-2]), tuple(input2.shape[:-2]))
        F = input2.expand(batch + tuple(input2.shape[-2:]))
        B = input.expand(batch + tuple(input.shape[-2:]))
        if upper:  # A = U^T U: X = U^-1 U^-T B
            return linalg.solve(F, linalg.solve(F.mT, B))
        return linalg.solve(F.mT, linalg.solve(F, B))
    return out_call("cholesky_solve", compute, out, (input, input2))


def cholesky_inverse(input, upper=False, *, out=None):
    """(L L^T)^-1 (or (U^T U)^-1) from the Cholesky factor input."""
    from ._out import out_call
    if not isinstance(input, Tensor):
        raise TypeError(f"cholesky_inverse(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    _check_input(input, "cholesky_inverse", kernel="cholesky_inverse_out_cpu", what="input")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are "
                           f"{input.shape[-2]} by {input.shape[-1]} matrices")
    n = input.shape[-1]

    def compute():
        eye = _C.eye(n, dtype=input.dtype, device=input.device).expand(tuple(input.shape))
        return cholesky_solve(eye, input, upper)
    return out_call("cholesky_inverse", compute, out, (input,))


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """torch.triangular_solve(b, A): (solution of op(A) X = b, a copy of A) (deprecated in torch)."""
    from . import linalg
    if not isinstance(input, Tensor) or not isinstance(A, Tensor):
        raise TypeError("triangular_solve(): arguments 'input' and 'A' must be Tensors")
    if input.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has "
                           f"{input.dim()} dimensions instead")
    if A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has "
                           f"{A.dim()} dimensions instead")
    def compute():
        M = A.mT if transpose else A
        X = linalg.solve_triangular(M, input, upper=(not upper) if transpose else upper, unitriangular=unitriangular)
        batch = _broadcast_shape(tuple(input.shape[:-2]), tuple(A.shape[:-2]))
        return _rt.triangular_solve(X, A.expand(batch + tuple(A.shape[-2:])).clone())
    if out is not None:
        from ._out import out_call_many
        return out_call_many("triangular_solve", compute, out, (input, A), kind=_rt.triangular_solve)
    return compute()


def _no_complex(fname):
    def fn(A, *args, **kwargs):
        raise NotImplementedError(f"torch.linalg.{fname}: the eigenvalues of a general (non-symmetric) matrix are "
                                  "complex, and ferrograd has no complex dtypes; for symmetric/Hermitian matrices "
                                  "use linalg.eigh / linalg.eigvalsh")
    fn.__name__ = fn.__qualname__ = fname
    return fn


eig = _no_complex("eig")
eigvals = _no_complex("eigvals")

LINALG = {"lu_factor": lu_factor, "lu_factor_ex": lu_factor_ex, "lu": lu, "lu_solve": lu_solve, "eig": eig,
          "eigvals": eigvals}
TOP_LEVEL = {"lu": torch_lu, "lu_solve": torch_lu_solve, "lu_unpack": lu_unpack, "cholesky_solve": cholesky_solve,
             "cholesky_inverse": cholesky_inverse, "triangular_solve": triangular_solve}


for _name, _fn in TOP_LEVEL.items():
    _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn

# Tensor methods, installed once by _tensor_methods.py (functions named as in TOP_LEVEL)
TENSOR_METHODS = {name: TOP_LEVEL[name] for name in ("lu", "lu_solve", "cholesky_solve", "cholesky_inverse",
                                                      "triangular_solve")}
TENSOR_ATTRIBUTES = {}
