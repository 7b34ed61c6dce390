"""ferrograd.linalg: torch.linalg's norms, determinants, inverses, solves, Cholesky, QR, symmetric
eigendecomposition, SVD, pseudo-inverse and least squares, matrix powers and exponential, products
(multi_dot, vecdot, cross), for float32/float64 batches of matrices `(*, m, n)`.

Every result is a composition of the engine's differentiable ops (indexing, cat/stack, matmul,
elementwise arithmetic), so gradients and higher-order gradients are those of the algorithm, which
for these factorizations are the analytic ones (inv: -A^-T G A^-T, det: G det A^-T, ...). No gradient
rule lives here.

Note [LU on the host for the pivots]: partial pivoting chooses rows by comparing values, which is not
differentiable. `_pivots` runs the elimination once in NumPy (in the input's dtype, batched) to find
each matrix's row order, its first zero pivot (LAPACK's `info`, for torch's singular-matrix errors)
and the order's sign. The differentiable elimination then runs on the rows in that order without
further pivoting, which gives the same L and U.
"""

import builtins
from collections import namedtuple

from ._lazy import numpy as np

from . import _C
from .overrides import overridable
from . import return_types as _rt
from ._argcheck import check_arg
from ._out import scalar_type_name as _word, supports_out, unsupported
from ._linalg_products import _cross
from ._op_utils import _broadcast_shape, _host, _from_host, _index_from_host, _wrap_dim
from ._autocast_ops import FP32, LOWER, NONE, autocast_op

Tensor = _C.Tensor

_rt.linalg_slogdet = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_rt.slogdet = namedtuple("slogdet", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix is singular or not positive-definite."""


def _check_tensor(A, fname, name="A", pos=1):
    if not isinstance(A, Tensor):
        check_arg("Tensor", A, fname.replace("linalg.", "linalg_"), name, pos)


def _check_float(A, fname):
    if not A.is_floating_point():
        raise NotImplementedError(f"{fname}: Expected a floating point or complex tensor as input. "
                                  f"Got {_word(A.dtype)}")


def _check_square(A, fname, low_precision=True):
    _check_tensor(A, fname)
    if A.dim() < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fname}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    _check_float(A, fname)
    if low_precision and A.dtype in (_C.float16, _C.bfloat16):
        raise NotImplementedError(f"{fname}: Low precision dtypes not supported. Got {_word(A.dtype)}")


def _batch_prefix(info_index, batched):
    return f"(Batch element {info_index}): " if batched else ""


# ------------------------------------------------------------------ LU (Note [LU on the host for the pivots])
def _pivots(A, full=False):
    """(perm, cols, info, sign) of the batch of A: perm (*batch, n) the row order, cols (*batch, n) the
    column order (the identity unless full), info (*batch,) the 1-based index of the first zero pivot
    (0: none), sign (*batch,) +-1 the orders' parity. Partial pivoting takes the first largest
    |entry| of the column, as LAPACK's getrf; full pivoting the largest of the whole remaining block
    (for determinants: a zero pivot then comes only once the rest is zero, see det)."""
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    B = int(np.prod(batch, dtype=np.int64))
    a = _host(A).reshape((B, n, n)).copy()
    rows = np.arange(B)
    perm = np.tile(np.arange(n), (B, 1))
    cols = np.tile(np.arange(n), (B, 1))
    info = np.zeros(B, dtype=np.int64)
    sign = np.ones(B, dtype=a.dtype)
    for k in range(n):
        if full:
            at = np.argmax(np.abs(a[:, k:, k:]).reshape(B, (n - k) ** 2), axis=1) if B else np.zeros(0, np.int64)
            p, q = k + at // (n - k), k + at % (n - k)
            swap = q != k
            sign[swap] = -sign[swap]
            a[rows, :, k], a[rows, :, q] = a[rows, :, q], a[rows, :, k].copy()
            cols[rows, k], cols[rows, q] = cols[rows, q], cols[rows, k].copy()
        else:
            p = k + np.argmax(np.abs(a[:, k:, k]), axis=1)  # the first largest, as LAPACK's i?amax
        swap = p != k
        sign[swap] = -sign[swap]
        a[rows, k], a[rows, p] = a[rows, p], a[rows, k].copy()
        perm[rows, k], perm[rows, p] = perm[rows, p], perm[rows, k].copy()
        piv = a[:, k, k]
        zero = piv == 0
        info[(info == 0) & zero] = k + 1
        mult = a[:, k + 1:, k] / np.where(zero, 1, piv)[:, None]
        mult[zero] = 0  # LAPACK leaves a column with a zero pivot as it is
        a[:, k + 1:, k + 1:] -= mult[:, :, None] * a[:, None, k, k + 1:]
    return perm.reshape(batch + (n,)), cols.reshape(batch + (n,)), info.reshape(batch), sign.reshape(batch)


def _rows_in_order(A, perm):
    """A's rows in the host order perm (differentiable: a gather)."""
    idx = _index_from_host(np.broadcast_to(perm[..., None], perm.shape + (A.shape[-1],)), A)
    return A.gather(-2, idx)


def _eliminate(PA, PB=None, guard=False):
    """Gaussian elimination without pivoting of the augmented rows [PA | PB]: the rows of U (row k
    starts at column k and carries L^-1 PB's row k at its end). guard: a zero pivot leaves its column as
    it is (as LAPACK's getrf), for determinants of singular matrices."""
    n = PA.shape[-1]
    S = _C.cat([PA, PB], -1) if PB is not None else PA
    rows = []
    for k in range(n):
        r = S[..., 0, :]
        rows.append(r)
        if k + 1 == n:
            break
        p = r[..., :1].unsqueeze(-1)
        if guard:
            zero = p == 0
            mult = _C.where(zero, 0.0, S[..., 1:, :1] / _C.where(zero, 1.0, p))
        else:
            mult = S[..., 1:, :1] / p
        S = S[..., 1:, 1:] - mult * r[..., None, 1:]
    return rows


def _back_substitute(rows, n):
    """X with U X = Y, from _eliminate's rows of [U | Y]."""
    xs = None
    for k in reversed(range(n)):
        r = rows[k]
        y = r[..., n - k:]
        if xs is not None:
            y = y - (r[..., None, 1:n - k] @ xs).squeeze(-2)
        x = (y / r[..., :1]).unsqueeze(-2)
        xs = x if xs is None else _C.cat([x, xs], -2)
    return xs


def _raise_singular(info, fname, message):
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        b = int(bad[0])
        raise LinAlgError(f"{fname}: {_batch_prefix(b, info.ndim > 0)}" + message.format(int(info.reshape(-1)[b])))


def _solve_square(A, B, fname, message):
    n = A.shape[-1]
    perm, _, info, _ = _pivots(A)
    _raise_singular(info, fname, message)
    if n == 0 or B.shape[-1] == 0:
        return B + A.sum() * 0 if A.requires_grad else B.clone()
    rows = _eliminate(_rows_in_order(A, perm), _rows_in_order(B, perm))
    return _back_substitute(rows, n)


_INV_SINGULAR = ("The diagonal element {} is zero, the inversion could not be completed because the input "
                 "matrix is singular.")


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_inv_ex")
def inv(A, *, out=None):
    _check_square(A, "linalg.inv")
    n = A.shape[-1]
    eye = _C.eye(n, dtype=A.dtype, device=A.device).expand(tuple(A.shape))
    return _solve_square(A, eye, "linalg.inv", _INV_SINGULAR)


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_solve_ex")
def solve(A, B, *, left=True, out=None):
    _check_square(A, "linalg.solve")
    _check_tensor(B, "linalg.solve", "B", 2)
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_word(A.dtype)} and B of type {_word(B.dtype)} instead")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return solve(A.mT, B.mT).mT
    n = A.shape[-1]
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.shape[-2] != n:
        cols = 1 if vector else Bm.shape[-1]
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                           f"{Bm.shape[-2]}x{cols})")
    batch = _broadcast_shape(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    A = A.expand(batch + (n, n))
    Bm = Bm.expand(batch + tuple(Bm.shape[-2:]))
    X = _solve_square(A, Bm, "torch.linalg.solve", "The solver failed because the input matrix is singular.")
    return X.squeeze(-1) if vector else X


@supports_out(grad="linalg_solve_triangular", dtype="expected scalar type {r} but found {o}")
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left) or X A = B, reading only A's upper or lower triangle (and not its diagonal
    when unitriangular), by substitution."""
    _check_tensor(A, "linalg.solve_triangular")
    _check_tensor(B, "linalg.solve_triangular", "B", 2)
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    try:
        _check_square(A, "linalg.solve_triangular", low_precision=False)
    except NotImplementedError:
        raise NotImplementedError(f"\"triangular_solve_cpu\" not implemented for '{_word(A.dtype)}'") from None
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    batch = _broadcast_shape(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    A = A.expand(batch + (n, n))
    B = B.expand(batch + tuple(B.shape[-2:]))
    if n == 0 or B.shape[-1] == 0:
        return B + A.sum() * 0 if A.requires_grad else B.clone()
    xs = None
    for k in (reversed(range(n)) if upper else range(n)):
        y = B[..., k, :]
        if xs is not None:
            coef = A[..., k:k + 1, k + 1:] if upper else A[..., k:k + 1, :k]
            y = y - (coef @ xs).squeeze(-2)
        x = (y if unitriangular else y / A[..., k, k:k + 1]).unsqueeze(-2)
        xs = x if xs is None else _C.cat([x, xs] if upper else [xs, x], -2)
    return xs


def _det_pivots(A):
    """The pivots of A's LU with full pivoting, and the sign of the row and column orders.

    det = sign * prod(pivots). With full pivoting a zero pivot comes only when all of the remaining
    block is zero: a matrix of rank n-1 has its one zero pivot last, where the product's gradient
    (the other pivots' product times the last pivot's, a smooth Schur complement) is the adjugate's,
    as torch's; with two or more zero pivots every term of the gradient is zero, as the adjugate is."""
    perm, cols, info, sign = _pivots(A, full=True)
    PAQ = _rows_in_order(_rows_in_order(A, perm).mT, cols).mT
    rows = _eliminate(PAQ, guard=bool(info.any()))
    return _C.stack([r[..., 0] for r in rows], -1), _from_host(sign, A)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_det")
def det(A, *, out=None):
    _check_square(A, "linalg.det")
    n = A.shape[-1]
    if n == 0:
        return _C.ones(tuple(A.shape[:-2]), dtype=A.dtype, device=A.device)
    pivots, sign = _det_pivots(A)
    return pivots.prod(-1) * sign


def _slogdet(A, fname, kind):
    _check_square(A, fname)
    n = A.shape[-1]
    batch = tuple(A.shape[:-2])
    if n == 0:
        return kind(_C.ones(batch, dtype=A.dtype, device=A.device), _C.zeros(batch, dtype=A.dtype, device=A.device))
    pivots, sign = _det_pivots(A)
    s = pivots.sign().prod(-1) * sign  # (sign's gradient is zero, as torch's)
    return kind(s, pivots.abs().log().sum(-1))


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_slogdet", kind=_rt.linalg_slogdet)
def slogdet(A, *, out=None):
    return _slogdet(A, "linalg.slogdet", _rt.linalg_slogdet)


# ------------------------------------------------------------------ Cholesky
def _pd_order(a):
    """The order of each matrix's first leading minor that is not positive-definite (0: none), from
    the lower triangle, as LAPACK's potrf. a: (batch, n, n)."""
    n = a.shape[-1]
    L = np.zeros_like(a)
    info = np.zeros(a.shape[0], dtype=np.int64)
    for j in range(n):
        v = a[:, j:, j] - np.einsum("bik,bk->bi", L[:, j:, :j], L[:, j, :j])
        d = v[:, 0]
        bad = ~(d > 0)
        info[(info == 0) & bad] = j + 1
        d = np.sqrt(np.where(bad, 1, d))
        L[:, j, j] = d
        L[:, j + 1:, j] = v[:, 1:] / d[:, None]
    return info


def _symmetric_from(A, lower):
    """The symmetric matrix of A's lower (or upper) triangle, whose gradient is symmetric as torch's:
    the values from the triangle, the gradient through (A + A^T) / 2 (equal when A is symmetric)."""
    sym = (A + A.mT) * 0.5
    tri = A.tril() + A.tril(-1).mT if lower else A.triu() + A.triu(1).mT
    return sym + (tri - sym).detach()


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_cholesky_ex")
def cholesky(A, *, upper=False, out=None):
    _check_square(A, "linalg.cholesky")
    n = A.shape[-1]
    info = _pd_order(_host(A).reshape((int(np.prod(A.shape[:-2], dtype=np.int64)), n, n))).reshape(tuple(A.shape[:-2]))
    _raise_singular(info, "linalg.cholesky", "The factorization could not be completed because the input is "
                    "not positive-definite (the leading minor of order {} is not positive-definite).")
    if n == 0:
        return A.clone()
    # torch reads the lower triangle, and its gradient is symmetric
    As = _symmetric_from(A, True)
    batch = tuple(A.shape[:-2])
    cols = []
    L = None
    for j in range(n):
        v = As[..., j:, j]
        if j:
            v = v - (L[..., j:, :] @ L[..., j, :].unsqueeze(-1)).squeeze(-1)
        d = v[..., :1].sqrt()
        parts = [v[..., 1:] / d]
        col = _C.cat(([_C.zeros(batch + (j,), dtype=A.dtype, device=A.device)] if j else []) + [d] + parts, -1)
        cols.append(col)
        L = _C.stack(cols, -1)
    return L.mT if upper else L


# ------------------------------------------------------------------ QR
_rt.linalg_qr = namedtuple("linalg_qr", ["Q", "R"])


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_qr", kind=_rt.linalg_qr)
def qr(A, mode="reduced", *, out=None):
    """Householder QR with LAPACK's reflectors (geqrf's: R's diagonal is -sign(a_jj) times the column's
    norm, no reflection where the column is already zero below the diagonal)."""
    _check_tensor(A, "linalg.qr")
    if A.dim() < 2:
        raise RuntimeError("linalg.qr: The input tensor A must have at least 2 dimensions.")
    _check_float(A, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    m, n = A.shape[-2], A.shape[-1]
    k = builtins.min(m, n)
    batch = tuple(A.shape[:-2])
    R = A
    Q = _C.eye(m, dtype=A.dtype, device=A.device).expand(batch + (m, m)) if mode != "r" else None
    for j in range(k if m > 1 else 0):
        x = R[..., j:, j]
        alpha = x[..., 0]
        if m - j == 1:
            break  # a reflector of length 1 is the identity (tau = 0)
        xn = x[..., 1:].norm(2.0, -1)
        trivial = xn == 0
        one = _C.ones((), dtype=A.dtype, device=A.device)
        norm = _C.where(trivial, one, alpha * alpha + xn * xn).sqrt()
        beta = -_C.where(alpha >= 0, one, -one) * norm
        v = _C.cat([_C.ones(batch + (1,), dtype=A.dtype, device=A.device),
                    x[..., 1:] / _C.where(trivial, one, alpha - beta).unsqueeze(-1)], -1)
        tau = _C.where(trivial, 0.0, (beta - alpha) / _C.where(trivial, one, beta))
        tv = (tau.unsqueeze(-1) * v).unsqueeze(-1)  # (..., m - j, 1)
        rows = R[..., j:, :]
        R = _C.cat([R[..., :j, :], rows - tv * (v.unsqueeze(-2) @ rows)], -2)  # H R, H = I - tau v v^T
        if Q is not None:
            cols = Q[..., :, j:]
            Q = _C.cat([Q[..., :, :j], cols - (cols @ tv) * v.unsqueeze(-2)], -1)  # Q H
    R = R.triu()
    if Q is not None and R.requires_grad and not Q.requires_grad and A.numel():
        Q = Q + A[..., :1, :1].sign() * 0  # no reflection (m == 1): Q is constant, part of the graph as torch's
    if mode == "r":
        return _rt.linalg_qr(_C.zeros((0,), dtype=A.dtype, device=A.device), R[..., :k, :])
    if mode == "reduced":
        return _rt.linalg_qr(Q[..., :, :k], R[..., :k, :])
    return _rt.linalg_qr(Q, R)


# ------------------------------------------------------------------ symmetric eigenproblem
_rt.linalg_eigh = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


def _rounds(n):
    """The pairs (p, q) of a sweep in rounds of disjoint pairs (a round-robin tournament)."""
    m = n + n % 2
    players = list(range(m))
    rounds = []
    for _ in range(m - 1):
        pairs = [tuple(sorted((players[i], players[m - 1 - i]))) for i in range(m // 2)]
        rounds.append([pq for pq in pairs if pq[1] < n])
        players = [players[0], players[-1]] + players[1:-1]
    return rounds


def _jacobi(S):
    """Cyclic Jacobi: plane rotations, each with the angle that zeroes S[p, q], until the off-diagonal
    part is below rounding; returns (D, V) with S = V D V^T up to rounding. A round applies disjoint
    rotations at once (they commute: one rotation leaves the other pairs' entries as they are). Each is
    made of differentiable ops, so the gradient is that of the eigendecomposition (distinct
    eigenvalues). The tangent of the angle, 2 s_pq sgn(d) / (|d| + sqrt(d^2 + 4 s_pq^2)) with
    d = s_qq - s_pp, is smooth at s_pq = 0, so an already diagonal matrix still has the right gradient."""
    n = S.shape[-1]
    batch = tuple(S.shape[:-2])
    eye, plan = _round_plan(n, S)
    V = eye.expand(batch + (n, n))
    eps = float(np.finfo(_host(S[..., :0, :0]).dtype).eps)
    prev, done = None, False
    for sweep in range(60):
        # one sweep more once the values have converged (at least two in all): the gradient's terms
        # converge a sweep behind the values (and a diagonal matrix needs one for its first order)
        if done and sweep >= 2:
            break
        a = _host(S)
        off = np.sqrt((np.triu(a, 1) ** 2).sum(axis=(-2, -1)))
        done = _converged(off, np.sqrt((a ** 2).sum(axis=(-2, -1))), prev, eps)
        prev = off
        for P, Q, PQ, Ep, Eq in plan:
            diag = S.diagonal(0, -2, -1)
            J = _rotations(diag.index_select(-1, P), diag.index_select(-1, Q),
                           S.reshape(batch + (n * n,)).index_select(-1, PQ), Ep, Eq, eye)
            S = J.mT @ S @ J
            V = V @ J
    return S.diagonal(0, -2, -1), V


def _rotations(app, aqq, apq, Ep, Eq, eye):
    """The rotations J (one per pair of a round) that zero the (p, q) entry of J^T S J, from S's
    entries s_pp, s_qq, s_pq: J = I + (c-1)(e_p e_p^T + e_q e_q^T) + s (e_p e_q^T - e_q e_p^T)."""
    one = _C.ones((), dtype=apq.dtype, device=apq.device)
    d = aqq - app
    sg = _C.where(d >= 0, one, -one)
    den = d.abs() + (d * d + 4 * apq * apq).sqrt()
    zero = den == 0
    t = _C.where(zero, 0.0, 2 * apq * sg / _C.where(zero, one, den))
    c = (t * t + 1).rsqrt()
    cm, sn = (c - 1).unsqueeze(-1), (t * c).unsqueeze(-1)
    return eye + Ep.mT @ (cm * Ep + sn * Eq) + Eq.mT @ (cm * Eq - sn * Ep)


def _round_plan(n, like):
    """Per round of _rounds(n): the index tensors of p, q and p*n+q, and the rows e_p, e_q of I."""
    eye = _C.eye(n, dtype=like.dtype, device=like.device)
    plan = []
    for pairs in _rounds(n):
        P = _index_from_host([p for p, _ in pairs], like)
        Q = _index_from_host([q for _, q in pairs], like)
        plan.append((P, Q, _index_from_host([p * n + q for p, q in pairs], like), eye.index_select(0, P),
                     eye.index_select(0, Q)))
    return eye, plan


def _converged(off, scale, prev, eps):
    """Every matrix's off-diagonal measure at rounding level, or (float32) no longer shrinking there."""
    scale = np.maximum(scale, np.finfo(off.dtype).tiny)
    done = off <= eps * 1e-2 * scale
    if prev is not None:
        done |= (off >= prev * 0.5) & (off <= 1e3 * eps * scale)
    return bool(np.all(done))


def _one_sided_jacobi(W):
    """One-sided (Hestenes) Jacobi for W (*, m, n), m >= n: rotations of column pairs until the columns
    are orthogonal; returns (W V, V) with W V = U diag(sigma), the singular values the column norms.
    The rotation of a pair is the two-sided one of W^T W's entries, so its angle is as smooth."""
    n = W.shape[-1]
    batch = tuple(W.shape[:-2])
    eye, plan = _round_plan(n, W)
    V = eye.expand(batch + (n, n))
    eps = float(np.finfo(_host(W[..., :0, :0]).dtype).eps)
    prev, done = None, False
    for sweep in range(60):
        if done and sweep >= 2:  # (one sweep more once converged, as in _jacobi)
            break
        g = np.swapaxes(_host(W), -1, -2) @ _host(W)
        off = np.sqrt((np.triu(g, 1) ** 2).sum(axis=(-2, -1)))
        done = _converged(off, np.sqrt((g ** 2).sum(axis=(-2, -1))), prev, eps)
        prev = off
        for P, Q, PQ, Ep, Eq in plan:
            wp, wq = W.index_select(-1, P), W.index_select(-1, Q)
            J = _rotations((wp * wp).sum(-2), (wq * wq).sum(-2), (wp * wq).sum(-2), Ep, Eq, eye)
            W = W @ J
            V = V @ J
    return W, V


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_eigh", kind=_rt.linalg_eigh)
def eigh(A, UPLO="L", *, out=None):
    try:
        _check_square(A, "linalg.eigh", low_precision=False)
    except NotImplementedError:
        raise NotImplementedError(f"\"linalg_eigh_cpu\" not implemented for '{_word(A.dtype)}'") from None
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return _rt.linalg_eigh(_C.zeros(tuple(A.shape[:-1]), dtype=A.dtype, device=A.device), A.clone())
    w, V = _jacobi(_symmetric_from(A, UPLO == "L"))
    order = np.argsort(_host(w), axis=-1, kind="stable")  # ascending, as LAPACK's
    w = w.gather(-1, _index_from_host(order, w))
    V = V.gather(-1, _index_from_host(np.broadcast_to(order[..., None, :], tuple(V.shape)), V))
    # each eigenvector's sign: its largest entry positive (LAPACK's signs are its own)
    v = _host(V)
    big = np.take_along_axis(v, np.abs(v).argmax(-2)[..., None, :], -2)
    return _rt.linalg_eigh(w, V * _from_host(np.where(big < 0, -1.0, 1.0).astype(v.dtype), V))


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_eigh")
def eigvalsh(A, UPLO="L", *, out=None):
    _check_tensor(A, "linalg.eigvalsh")
    return eigh(A, UPLO).eigenvalues  # (torch's messages say linalg.eigh too)


# ------------------------------------------------------------------ singular values
_rt.linalg_svd = namedtuple("linalg_svd", ["U", "S", "Vh"])


def _complete(U):
    """U (*, m, k) with orthonormal columns, completed to an orthogonal (*, m, m) by QR's other columns."""
    m, k = U.shape[-2], U.shape[-1]
    if k == m:
        return U
    return _C.cat([U, qr(U, mode="complete").Q[..., :, k:]], -1)


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_svd", kind=_rt.linalg_svd)
def svd(A, full_matrices=True, *, driver=None, out=None):
    """One-sided Jacobi (of A, or of A^T when it is wide); singular values in descending order, each
    pair of singular vectors signed so that the left one's largest entry is positive."""
    _check_tensor(A, "linalg.svd")
    if A.dim() < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    _check_float(A, "linalg.svd")
    m, n = A.shape[-2], A.shape[-1]
    k = builtins.min(m, n)
    batch = tuple(A.shape[:-2])
    if A.numel() == 0:
        eye = lambda r: _C.eye(r, dtype=A.dtype, device=A.device).expand(batch + (r, r)).clone()  # noqa: E731
        zeros = lambda *s: _C.zeros(batch + s, dtype=A.dtype, device=A.device)  # noqa: E731
        return _rt.linalg_svd(eye(m) if full_matrices else zeros(m, k), zeros(k),
                              eye(n) if full_matrices else zeros(k, n))
    wide = m < n
    W, V = _one_sided_jacobi(A.mT if wide else A)
    sigma = W.norm(2.0, -2)
    order = np.argsort(-_host(sigma), axis=-1, kind="stable")
    sigma = sigma.gather(-1, _index_from_host(order, sigma))
    def cols(X):
        return X.gather(-1, _index_from_host(np.broadcast_to(order[..., None, :], tuple(X.shape)), X))
    W, V = cols(W), cols(V)
    U = W / _C.where(sigma == 0, 1.0, sigma).unsqueeze(-2)
    u = _host(U)
    big = np.take_along_axis(u, np.abs(u).argmax(-2)[..., None, :], -2)
    flip = _from_host(np.where(big < 0, -1.0, 1.0).astype(u.dtype), U)
    U, V = U * flip, V * flip
    if wide:  # A^T = U S V^T: A = V S U^T
        U, V = V, U
    if full_matrices:
        U, V = _complete(U), _complete(V)
    return _rt.linalg_svd(U, sigma, V.mT)


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="_linalg_svd")
def svdvals(A, *, driver=None, out=None):
    return svd(A, full_matrices=False).S


# ------------------------------------------------------------------ pseudo-inverse and least squares
_rt.linalg_lstsq = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _inverse_above(sigma, cut):
    """1/sigma where sigma > cut (a host array, per matrix), else 0; and the count kept."""
    keep = _host(sigma) > cut[..., None]
    k = _from_host(keep, sigma)
    return _C.where(k, 1.0 / _C.where(k, sigma, 1.0), 0.0), keep.sum(-1)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_pinv", dtype=("cast", "linalg.pinv: Expected result to be safely castable from {r} dtype, but got result with dtype {o}"))
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """V diag(1/sigma) U^T over the singular values above max(atol, rtol * sigma_max) (torch's default:
    rtol = eps * max(m, n) when neither is given); with hermitian=True from linalg.eigh."""
    _check_tensor(A, "linalg.pinv")
    if A.dim() < 2 or not A.is_floating_point() or A.dtype in (_C.float16, _C.bfloat16):
        raise RuntimeError(f"linalg.pinv({_word(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    m, n = A.shape[-2], A.shape[-1]
    if A.numel() == 0:
        out = _C.zeros(tuple(A.shape[:-2]) + (n, m), dtype=A.dtype, device=A.device)
        return out + A.sum() * 0 if A.requires_grad else out
    eps = float(np.finfo(_host(A[..., :0, :0]).dtype).eps)
    if rtol is None:
        rtol = eps * builtins.max(m, n) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    if hermitian:
        w, V = eigh(A)
        big = np.abs(_host(w)).max(-1)
        winv, _ = _inverse_above(w.abs(), np.maximum(atol, rtol * big))
        winv = winv * w.sign()
        return (V * winv.unsqueeze(-2)) @ V.mT
    U, S, Vh = svd(A, full_matrices=False)
    sinv, _ = _inverse_above(S, np.maximum(atol, rtol * _host(S)[..., 0]))
    return (Vh.mT * sinv.unsqueeze(-2)) @ U.mT


@autocast_op(cpu=FP32, cuda=NONE)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """The minimum-norm least-squares solution through the SVD, with gelsy's (torch's CPU default)
    outputs: the solution and the rank; residuals and singular values empty."""
    unsupported("linalg.lstsq", out)
    _check_tensor(A, "linalg.lstsq")
    _check_tensor(B, "linalg.lstsq", "B", 2)
    if driver is not None and driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if not A.is_floating_point() or A.dtype in (_C.float16, _C.bfloat16):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_word(A.dtype)} and other's dtype {_word(B.dtype)}")
    if A.dim() - B.dim() not in (0, 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2], A.shape[-1]
    batch = _broadcast_shape(tuple(A.shape[:-2]), tuple(Bm.shape[:-2]))
    empty = _C.zeros((0,), dtype=A.dtype, device=A.device)
    if A.numel() == 0:
        X = _C.zeros(batch + (n, Bm.shape[-1]), dtype=A.dtype, device=A.device)
        rank = _C.zeros(tuple(A.shape[:-2]), dtype=_C.int64, device=A.device)
        return _rt.linalg_lstsq(X.squeeze(-1) if vector else X, empty, rank, empty)
    eps = float(np.finfo(_host(A[..., :0, :0]).dtype).eps)
    rc = eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond
    U, S, Vh = svd(A, full_matrices=False)
    sinv, kept = _inverse_above(S, rc * _host(S)[..., 0])
    X = (Vh.mT * sinv.unsqueeze(-2)) @ (U.mT @ Bm)
    rank = _index_from_host(kept, A)  # (A's batch shape, as torch's)
    residuals = X.reshape(-1)[:0]  # (empty, and part of the graph, as torch's)
    return _rt.linalg_lstsq(X.squeeze(-1) if vector else X, residuals, rank, empty)


# ------------------------------------------------------------------ powers and exponential
def matrix_power(A, n):
    _check_square(A, "linalg.matrix_power", low_precision=False)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n == 0:
        eye = _C.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(tuple(A.shape))
        return eye + A.sign() * 0 if A.requires_grad else eye.clone()
    if n < 0:
        A = inv(A)
        n = -n
    result, base = None, A
    while True:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            break
        base = base @ base
    return result.clone() if result is A else result


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def matrix_exp(A):
    """exp(A) by scaling and squaring of the Taylor series (degree 18 for float64, 10 for float32, on
    A / 2^s with ||A / 2^s||_1 <= 1)."""
    _check_square(A, "linalg.matrix_exp", low_precision=False)
    n = A.shape[-1]
    if n == 0 or A.numel() == 0:
        return A.clone()
    a = _host(A)
    norm = float(np.abs(a).sum(-2).max()) if a.size else 0.0
    s = builtins.max(0, int(np.ceil(np.log2(norm)))) if norm > 1 and np.isfinite(norm) else 0
    X = A / (2.0 ** s) if s else A
    eye = _C.eye(n, dtype=A.dtype, device=A.device)
    T = eye + X / 18.0 if A.dtype == _C.float64 else eye + X / 10.0
    for k in range(17 if A.dtype == _C.float64 else 9, 0, -1):
        T = eye + (X @ T) / float(k)
    for _ in range(s):
        T = T @ T
    return T


# ------------------------------------------------------------------ products
@autocast_op(cpu=NONE, cuda=LOWER)
@supports_out(grad="mm", dtype="multi_dot(): expected out tensor to have dtype {rc} but got {oc}")
def multi_dot(tensors, *, out=None):
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for t in tensors:
        _check_tensor(t, "linalg.multi_dot", "tensors", 1)
    first, last = tensors[0], tensors[-1]
    if first.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.dim()}D")
    if last.dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.dim()}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_word(first.dtype).lower()} "
                               f"and tensor {i} {_word(t.dtype).lower()}")
    ms = [first.unsqueeze(0) if first.dim() == 1 else first] + tensors[1:-1] + \
         [last.unsqueeze(-1) if last.dim() == 1 else last]
    for i in range(len(ms) - 1):
        if ms[i].shape[-1] != ms[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    out = _chain(ms)
    if last.dim() == 1:
        out = out.squeeze(-1)
    if first.dim() == 1:
        out = out.squeeze(0)
    return out


def _chain(ms):
    """The product of matrices in the order with the fewest multiplications (the classic O(k^3)
    dynamic programme over split points)."""
    k = len(ms)
    if k == 2:
        return ms[0] @ ms[1]
    dims = [ms[0].shape[0]] + [m.shape[1] for m in ms]
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            best = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, s
            cost[i][j] = best

    def build(i, j):
        if i == j:
            return ms[i]
        s = split[i][j]
        return build(i, s) @ build(s + 1, j)
    return build(0, k - 1)


@autocast_op(cpu=LOWER, cuda=LOWER)
@supports_out(grad="sum", dtype="linalg.vecdot: Expected out of dtype{r} but found {o}")
def vecdot(x, y, *, dim=-1, out=None):
    _check_tensor(x, "linalg.vecdot", "x", 1)
    _check_tensor(y, "linalg.vecdot", "y", 2)
    _check_float(x, "linalg.vecdot")
    _check_float(y, "linalg.vecdot")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_word(x.dtype)} and y of type {_word(y.dtype)} instead")
    return (x * y).sum(dim)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_cross")
def cross(input, other, *, dim=-1, out=None):
    _check_tensor(input, "linalg.cross", "input", 1)
    _check_tensor(other, "linalg.cross", "other", 2)
    if input.dim() != other.dim():
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions.")
    shape = _broadcast_shape(tuple(input.shape), tuple(other.shape))
    return _cross(input, other, dim, shape)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    _check_tensor(A, "linalg.diagonal")
    return A.diagonal(offset, dim1, dim2)


# ------------------------------------------------------------------ norms
@autocast_op(cpu=NONE, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad="linalg_vector_norm")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    _check_tensor(x, "linalg.vector_norm", "x", 1)
    if isinstance(ord, (str, bool)) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(ord).__name__}")
    _check_float(x, "linalg.vector_norm")
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 0:
        dim = None
    return x.norm(float(ord), dim, keepdim)


@autocast_op(cpu=NONE, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad=False, track=True, dtype="linalg.matrix_norm expected out tensor dtype {r} but got: {o}")
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    _check_tensor(A, "linalg.matrix_norm")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, int):
        raise TypeError("linalg_matrix_norm() received an invalid combination of arguments - got (Tensor, dim=int), "
                        "but expected one of:\n * (Tensor input, Number ord, tuple of ints dim = {-2,-1}, bool keepdim = "
                        "False, *, torch.dtype dtype = None, Tensor out = None)\n * (Tensor input, str ord = \"fro\", "
                        "tuple of ints dim = {-2,-1}, bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)\n")
    dim = tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    _check_float(A, "linalg.matrix_norm")
    d0, d1 = (_wrap_dim(d, A.dim()) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if dtype is not None:
        A = A.to(dtype)
    if ord in ("fro",):
        return A.norm(2.0, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        from ._shape_ops import moveaxis
        sv = svdvals(moveaxis(A, (d0, d1), (-2, -1)))
        if ord == "nuc" or (ord == 2 and sv.shape[-1] == 0):
            r = sv.sum(-1)  # (torch: ord 2 of an empty matrix is 0, ord -2 amin's IndexError)
        else:
            r = sv.amax(-1) if ord == 2 else sv.amin(-1)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return r
    if isinstance(ord, str) or ord not in (1, -1, float("inf"), float("-inf")):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    # 1: the largest column sum of |A| (sum over rows d0); inf: the largest row sum (over columns d1)
    over, across = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = A.abs().sum(over, keepdim=True)
    r = sums.amax(across, keepdim=True) if ord > 0 else sums.amin(across, keepdim=True)
    return r if keepdim else r.squeeze(builtins.max(d0, d1)).squeeze(builtins.min(d0, d1))


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
@supports_out(grad=False, track=True, dtype="linalg.norm expected out tensor dtype {r} but got: {o}")
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    _check_tensor(A, "linalg.norm")
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {A.dim()}D.")
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


# ------------------------------------------------------------------ torch.* and Tensor methods
def _top_det(input):
    return det(input)


def _top_slogdet(input):
    return _slogdet(input, "linalg.slogdet", _rt.slogdet)


def _top_logdet(input):
    s, logabs = _slogdet(input, "linalg.slogdet", _rt.slogdet)
    return _C.where(s < 0, float("nan"), logabs)


def _top_inverse(input):
    return inv(input)


def _top_cholesky(input, upper=False):
    raise RuntimeError("This function was deprecated since version 1.9 and is now removed. `torch.cholesky` is "
                       "deprecated in favor of `torch.linalg.cholesky`.\nL = torch.cholesky(A) should be replaced "
                       "with:\nL = torch.linalg.cholesky(A)\nU = torch.cholesky(A, upper=True) should be replaced "
                       "with:\nU = torch.linalg.cholesky(A).mH")


def _top_pinverse(input, rcond=1e-15):
    return pinv(input, rtol=rcond)


def _top_matrix_power(input, n):
    return matrix_power(input, n)


def _top_matrix_exp(input):
    return matrix_exp(input)


TOP_LEVEL = {"det": _top_det, "slogdet": _top_slogdet, "logdet": _top_logdet, "inverse": _top_inverse,
             "cholesky": _top_cholesky, "matrix_power": _top_matrix_power, "matrix_exp": _top_matrix_exp,
             "pinverse": _top_pinverse}


for _name, _fn in TOP_LEVEL.items():
    _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn

# Tensor methods (det, slogdet, logdet, inverse, cholesky, matrix_power, matrix_exp, pinverse), installed
# once by _tensor_methods.py; _linalg_lu's top-level functions declare their own
TENSOR_METHODS = dict(TOP_LEVEL)
TENSOR_ATTRIBUTES = {}

from ._linalg_lu import LINALG as _LU_NAMES  # noqa: E402  (lu_factor, lu_factor_ex, lu, lu_solve, eig, eigvals)
from ._linalg_lu import TOP_LEVEL as _LU_TOP  # noqa: E402

globals().update(_LU_NAMES)
TOP_LEVEL.update(_LU_TOP)  # torch.lu, lu_solve, lu_unpack, cholesky_solve, cholesky_inverse, triangular_solve

__all__ = ["LinAlgError", "inv", "solve", "solve_triangular", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "lstsq", "det", "slogdet", "cholesky", "qr", "matrix_power", "matrix_exp", "multi_dot", "vecdot",
           "cross", "diagonal", "vector_norm", "matrix_norm", "norm"] + list(_LU_NAMES)
