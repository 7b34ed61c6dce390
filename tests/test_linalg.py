"""Parity with torch of ferrograd.linalg (python/ferrograd/linalg.py) and the top-level det, slogdet,
logdet, inverse, cholesky, matrix_power, matrix_exp with their Tensor methods: values, gradients and
second-order gradients through parity.check_op (float64 and float32, batches, non-contiguous inputs,
empty matrices); torch's exceptions (LinAlgError for singular and non-positive-definite input) with
their messages."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op, error_kind, raised, same, same_semantics

rng = np.random.default_rng(7)


def _spd(n, batch=()):
    """A symmetric positive-definite matrix (batch of)."""
    x = rng.standard_normal(batch + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


SING = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])     # rank 2
ZCOL = np.array([[0.0, 1.0], [0.0, 3.0]])                                   # a zero column
RANK1 = np.outer([1.0, 2.0, -1.0], [0.5, 1.0, 3.0])                        # rank 1: adjugate 0
SYM = np.array([[2.0, -1.0, 0.5], [-1.0, 0.3, 1.2], [0.5, 1.2, -0.7]])
NEG = np.array([[0.0, 2.0, 1.0], [1.0, 0.5, 0.0], [0.3, 1.0, 2.0]])         # a row swap, negative det

CASES = [
    # inverse and solve
    ("inv", lambda L, a: L.linalg.inv(a), (In((3, 3)),)),
    ("inv-batched", lambda L, a: L.linalg.inv(a), (In((2, 3, 4, 4)),)),
    ("inv-T", lambda L, a: L.linalg.inv(a), (In((2, 3, 3), layout="T"),)),
    ("inv-1x1", lambda L, a: L.linalg.inv(a), (In((2, 1, 1), domain="nonzero"),)),
    ("inv-pivoting", lambda L, a: L.linalg.inv(a), (In(value=NEG),)),
    ("inverse", lambda L, a: (L.inverse(a), a.inverse()), (In((3, 3)),)),
    ("solve", lambda L, a, b: L.linalg.solve(a, b), (In((3, 3)), In((3, 2)))),
    ("solve-vector", lambda L, a, b: L.linalg.solve(a, b), (In((4, 4)), In((4,)))),
    ("solve-batched-vector", lambda L, a, b: L.linalg.solve(a, b), (In((2, 3, 3)), In((2, 3)))),
    ("solve-broadcast", lambda L, a, b: L.linalg.solve(a, b), (In((1, 3, 3)), In((4, 3, 2), layout="T"))),
    ("solve-broadcast-B", lambda L, a, b: L.linalg.solve(a, b), (In((2, 3, 3), layout="T"), In((3, 1)))),
    ("solve-right", lambda L, a, b: L.linalg.solve(a, b, left=False), (In((3, 3)), In((2, 3)))),
    ("solve_triangular-upper", lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), (In((3, 3)), In((3, 2)))),
    ("solve_triangular-lower-T", lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False), (In((2, 4, 4), layout="T"), In((4, 3)))),
    ("solve_triangular-unit", lambda L, a, b: (L.linalg.solve_triangular(a, b, upper=True, unitriangular=True), L.linalg.solve_triangular(a, b, upper=False, unitriangular=True)), (In((3, 3)), In((2, 3, 1)))),
    ("solve_triangular-right", lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, left=False), (In((3, 3)), In((2, 3)))),
    ("solve_triangular-cholesky", lambda L, x, b: L.linalg.solve_triangular(L.linalg.cholesky(x @ x.mT + L.eye(3, dtype=x.dtype)), b, upper=False), (In((3, 3)), In((3, 2)))),
    # determinants
    ("det", lambda L, a: (L.linalg.det(a), L.det(a), a.det()), (In((3, 3)),)),
    ("det-batched", lambda L, a: L.linalg.det(a), (In((2, 2, 4, 4)),)),
    ("det-T", lambda L, a: L.linalg.det(a), (In((3, 3), layout="T"),)),
    ("det-1x1", lambda L, a: L.linalg.det(a), (In((1, 1)),)),
    ("det-negative", lambda L, a: L.linalg.det(a), (In(value=NEG),)),
    # (the gradient at a singular matrix is checked against its cofactors in test_det_singular_grad)
    ("det-singular", lambda L, a: L.linalg.det(a), (In(value=SING),), {"grad": False}),
    # (not ZCOL: torch's gradient there is zero, not the adjugate)
    ("det-rank1", lambda L, a: L.linalg.det(a), (In(value=RANK1),), {"double": False}),
    ("det-zeros", lambda L, a: L.linalg.det(a), (In(value=np.zeros((2, 3, 3))),), {"double": False}),
    ("slogdet", lambda L, a: L.linalg.slogdet(a), (In((2, 3, 3)),)),
    ("slogdet-negative", lambda L, a: (L.linalg.slogdet(a), L.slogdet(a), a.slogdet()), (In(value=NEG),)),
    ("logdet", lambda L, a: (L.logdet(a), a.logdet()), (In(value=_spd(3, (2,))),)),
    ("logdet-negative", lambda L, a: L.logdet(a), (In(value=NEG),)),
    # Cholesky
    ("cholesky", lambda L, a: L.linalg.cholesky(a), (In(value=_spd(4)),)),
    ("cholesky-batched-upper", lambda L, a: L.linalg.cholesky(a, upper=True), (In(value=_spd(3, (2, 2))),)),
    ("cholesky-of-product", lambda L, x: L.linalg.cholesky(x @ x.mT + L.eye(3, dtype=x.dtype)), (In((2, 3, 3)),)),
    ("cholesky-T", lambda L, x: L.linalg.cholesky(x @ x.mT + 3 * L.eye(3, dtype=x.dtype)), (In((3, 3), layout="T"),)),
    ("cholesky-lower-triangle-only", lambda L, a: L.linalg.cholesky(a), (In(value=np.triu(_spd(3), 1) * 5 + np.tril(_spd(3))),), {"grad": False}),
    # QR
    ("qr", lambda L, a: L.linalg.qr(a), (In((4, 3)),)),
    ("qr-batched-T", lambda L, a: L.linalg.qr(a), (In((2, 3, 3), layout="T"),)),
    ("qr-wide", lambda L, a: L.linalg.qr(a), (In((3, 5)),)),
    ("qr-complete-square", lambda L, a: L.linalg.qr(a, mode="complete"), (In((2, 3, 3)),)),
    ("qr-complete-tall", lambda L, a: L.linalg.qr(a, "complete"), (In((5, 2)),), {"grad": False}),  # torch: not differentiable
    ("qr-r", lambda L, a: L.linalg.qr(a, mode="r"), (In((4, 3)),), {"grad": False}),  # torch: not differentiable
    ("qr-column", lambda L, a: L.linalg.qr(a), (In((3, 1)),)),
    ("qr-row", lambda L, a: L.linalg.qr(a), (In((1, 3)),)),
    # symmetric eigenproblem (eigenvectors up to sign: compared through |V|)
    ("eigh", lambda L, a: (lambda r: (r.eigenvalues, r.eigenvectors.abs()))(L.linalg.eigh(a)), (In(value=SYM),), {"rtol": 1e-9, "atol": 1e-11}),
    ("eigh-batched", lambda L, x: (lambda r: (r[0], r[1].abs()))(L.linalg.eigh(x + x.mT)), (In((2, 4, 4)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("eigh-upper", lambda L, a: (lambda r: (r[0], r[1].abs()))(L.linalg.eigh(a, UPLO="U")), (In((3, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("eigh-lower-nonsymmetric", lambda L, a: L.linalg.eigvalsh(a), (In((4, 4), layout="T"),), {"rtol": 1e-9, "atol": 1e-11}),
    ("eigh-diagonal", lambda L, a: (lambda r: (r[0], r[1].abs()))(L.linalg.eigh(a)), (In(value=np.diag([3.0, -1.0, 0.5])),), {"rtol": 1e-9, "atol": 1e-11}),
    ("eigh-projector", lambda L, x: (lambda r: r[1] @ L.diag_embed(r[0].exp()) @ r[1].mT)(L.linalg.eigh(x @ x.mT)), (In((3, 3)),), {"rtol": 1e-9, "atol": 1e-10}),
    ("eigvalsh", lambda L, a: L.linalg.eigvalsh(a), (In(value=_spd(5, (2,))),), {"rtol": 1e-9, "atol": 1e-11}),
    # singular values (singular vectors up to a shared sign: compared through |U|, |Vh| and U S Vh)
    ("svd", lambda L, a: (lambda r: (r.S, r.U.abs(), r.Vh.abs(), r.U @ L.diag_embed(r.S) @ r.Vh))(L.linalg.svd(a, full_matrices=False)), (In((4, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("svd-wide-batched", lambda L, a: (lambda r: (r.S, r.U.abs(), r.Vh.abs()))(L.linalg.svd(a, full_matrices=False)), (In((2, 3, 5), layout="T"),), {"rtol": 1e-9, "atol": 1e-11}),
    ("svd-square-full", lambda L, a: (lambda r: (r[0].abs(), r[1], r[2].abs()))(L.linalg.svd(a)), (In((2, 3, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("svd-tall-full", lambda L, a: (lambda r: (r.S, r.U[..., :2].abs(), r.U @ r.U.mT, r.Vh.abs()))(L.linalg.svd(a)), (In((4, 2)),), {"grad": False, "rtol": 1e-9, "atol": 1e-11}),  # torch: not differentiable
    ("svdvals", lambda L, a: L.linalg.svdvals(a), (In((2, 5, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("matrix_norm-svd", lambda L, a: tuple(L.linalg.matrix_norm(a, o) for o in (2, -2, "nuc")) + (L.linalg.matrix_norm(a, 2, dim=(0, 2), keepdim=True),), (In((2, 3, 4)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("norm-svd", lambda L, a: (L.linalg.norm(a, 2), L.linalg.norm(a, "nuc"), L.linalg.norm(a, -2, dim=(1, 0))), (In((3, 4)),), {"rtol": 1e-9, "atol": 1e-11}),
    # pseudo-inverse and least squares
    ("pinv", lambda L, a: L.linalg.pinv(a), (In((4, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("pinv-wide-batched", lambda L, a: L.linalg.pinv(a), (In((2, 2, 5), layout="T"),), {"rtol": 1e-9, "atol": 1e-11}),
    ("pinv-hermitian", lambda L, x: L.linalg.pinv(x + x.mT, hermitian=True), (In((3, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("pinv-rank-deficient", lambda L, a: L.linalg.pinv(a), (In(value=RANK1),), {"grad": False, "rtol": 1e-9, "atol": 1e-11}),
    ("pinv-atol", lambda L, a: (L.linalg.pinv(a, atol=1.0), L.linalg.pinv(a, rtol=0.5)), (In(value=np.diag([3.0, 0.9, 0.1])),), {"grad": False}),
    ("pinverse", lambda L, a: (L.pinverse(a), a.pinverse()), (In((3, 4)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("lstsq", lambda L, a, b: L.linalg.lstsq(a, b), (In((5, 3)), In((5, 2))), {"rtol": 1e-9, "atol": 1e-11}),
    ("lstsq-vector", lambda L, a, b: L.linalg.lstsq(a, b), (In((2, 4, 4)), In((2, 4))), {"rtol": 1e-9, "atol": 1e-11}),
    ("lstsq-underdetermined", lambda L, a, b: L.linalg.lstsq(a, b).solution, (In((3, 5)), In((3, 2), layout="T")), {"rtol": 1e-9, "atol": 1e-11}),
    ("lstsq-broadcast", lambda L, a, b: L.linalg.lstsq(a, b), (In((1, 5, 3)), In((4, 5, 2))), {"rtol": 1e-9, "atol": 1e-11}),
    ("lstsq-rank-deficient", lambda L, a, b: L.linalg.lstsq(a, b), (In(value=RANK1), In((3, 2))), {"grad": False, "rtol": 1e-9, "atol": 1e-11}),
    # powers and exponential
    ("matrix_power", lambda L, a: tuple(L.linalg.matrix_power(a, n) for n in (1, 2, 3, 5, -1, -2)), (In((2, 3, 3)),), {"rtol": 1e-6}),
    ("matrix_power-0", lambda L, a: (L.linalg.matrix_power(a, 0), L.matrix_power(a, 0)), (In((2, 3, 3)),)),
    ("matrix_power-method", lambda L, a: (a.matrix_power(4), L.matrix_power(a, -1)), (In((3, 3), layout="T"),), {"rtol": 1e-6}),
    ("matrix_exp", lambda L, a: (L.linalg.matrix_exp(a * 0.3), L.matrix_exp(a * 0.3), a.matrix_exp()), (In((2, 3, 3)),), {"rtol": 1e-9, "atol": 1e-11}),
    ("matrix_exp-large", lambda L, a: L.linalg.matrix_exp(a * 4), (In((3, 3)),), {"rtol": 1e-9, "atol": 1e-10}),
    ("matrix_exp-1x1", lambda L, a: L.linalg.matrix_exp(a), (In((2, 1, 1)),), {"rtol": 1e-10}),
    # products
    ("multi_dot-2", lambda L, a, b: L.linalg.multi_dot([a, b]), (In((2, 3)), In((3, 4)))),
    ("multi_dot-4", lambda L, a, b, c, d: L.linalg.multi_dot((a, b, c, d)), (In((5, 2)), In((2, 6)), In((6, 3), layout="T"), In((3, 1)))),
    ("multi_dot-vectors", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), (In((3,)), In((3, 4)), In((4,)))),
    ("multi_dot-first-vector", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), (In((3,)), In((3, 4)), In((4, 2)))),
    ("vecdot", lambda L, x, y: (L.linalg.vecdot(x, y), L.linalg.vecdot(x, y, dim=0)), (In((3, 4)), In((3, 4), layout="T"))),
    ("vecdot-broadcast", lambda L, x, y: L.linalg.vecdot(x, y), (In((2, 1, 3)), In((4, 3)))),
    ("cross", lambda L, a, b: (L.linalg.cross(a, b), L.linalg.cross(a, b, dim=0)), (In((3, 3)), In((3, 3), layout="T"))),
    ("cross-broadcast", lambda L, a, b: L.linalg.cross(a, b), (In((2, 1, 3)), In((1, 4, 3)))),
    ("diagonal", lambda L, a: (L.linalg.diagonal(a), L.linalg.diagonal(a, offset=1), L.linalg.diagonal(a, dim1=0, dim2=2)), (In((3, 4, 4)),)),
    # norms
    ("vector_norm", lambda L, x: tuple(L.linalg.vector_norm(x, o) for o in (2, 1, 3.5, float("inf"), -float("inf"), 0)), (In((3, 4)),)),
    ("vector_norm-dims", lambda L, x: (L.linalg.vector_norm(x, dim=1), L.linalg.vector_norm(x, 1, (0, 2), keepdim=True), L.linalg.vector_norm(x, dim=(-1,))), (In((2, 3, 4), layout="T"),)),
    ("vector_norm-keepdim-all", lambda L, x: L.linalg.vector_norm(x, keepdim=True), (In((2, 3)),)),
    ("vector_norm-dtype", lambda L, x: L.linalg.vector_norm(x, dtype=L.float64), (In((5,), dtype="float32"),)),
    ("vector_norm-0d", lambda L, x: L.linalg.vector_norm(x, 3), (In((), domain="nonzero"),)),
    ("matrix_norm", lambda L, a: tuple(L.linalg.matrix_norm(a, o) for o in ("fro", 1, -1, float("inf"), -float("inf"))), (In((2, 3, 4)),)),
    ("matrix_norm-dims", lambda L, a: (L.linalg.matrix_norm(a, 1, dim=(2, 0)), L.linalg.matrix_norm(a, "fro", (0, 1), keepdim=True), L.linalg.matrix_norm(a, float("inf"), (-1, 0), keepdim=True)), (In((2, 3, 4)),)),
    ("norm", lambda L, a: (L.linalg.norm(a), L.linalg.norm(a, dim=1), L.linalg.norm(a, 1, dim=(0, 1)), L.linalg.norm(a, 3, dim=0, keepdim=True)), (In((3, 4)),)),
    ("norm-ord-no-dim", lambda L, a, v: (L.linalg.norm(a, "fro"), L.linalg.norm(a, float("inf")), L.linalg.norm(v, 1), L.linalg.norm(v, 0.5)), (In((3, 4)), In((5,), domain="nonzero"))),
    ("norm-3d", lambda L, a: L.linalg.norm(a), (In((2, 3, 2)),)),
]


def _case(c):
    name, fn, specs = c[:3]
    kw = c[3] if len(c) > 3 else {}
    return pytest.param(fn, specs, kw, id=name)


@pytest.mark.parametrize("fn,specs,kw", [_case(c) for c in CASES])
def test_parity(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *specs, **kw)


def cofactors(a):
    n = a.shape[0]
    return np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("value", [SING, RANK1], ids=["rank2", "rank1"])
def test_det_singular_grad(value):
    # d det(A) / dA is the cofactor matrix, also where A is singular. torch's own gradient there
    # depends on the LAPACK path of the machine: with MKL on Intel it is the cofactors, on AMD
    # EPYC (MKL 2024.2, torch 2.15) an exact zero pivot makes it all zeros. So this compares with
    # the exact value, and the forward with torch (the det-singular case above).
    if AGAINST_TORCH:
        a = torch.tensor(value, requires_grad=True)
        torch.linalg.det(a).backward()
        if not a.grad.any() and cofactors(value).any():
            pytest.xfail("torch's det gradient at a singular matrix is zero on this machine's LAPACK path")
    w = np.random.default_rng(0).standard_normal()
    a = fg.tensor(value, requires_grad=True)
    (fg.linalg.det(a) * w).backward()
    np.testing.assert_allclose(a.grad.numpy(), w * cofactors(value), rtol=1e-12, atol=1e-12)


F32 = ["inv-batched", "solve", "det-batched", "slogdet", "cholesky-of-product", "matrix_power", "matrix_exp",
       "multi_dot-4", "vector_norm", "matrix_norm", "solve-right", "qr", "qr-wide", "eigh-batched", "eigvalsh"]


@pytest.mark.parametrize("name", F32)
def test_float32(name):
    fn, specs, kw = next((c[1], c[2], c[3] if len(c) > 3 else {}) for c in CASES if c[0] == name)
    kw = dict(kw, rtol=2e-4, atol=2e-5, grad_rtol=1e-3, grad_atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(fn, *[s.with_dtype("float32") if s.is_float else s for s in specs], **kw)


def test_larger_matrices():
    """Well-conditioned 12x12 matrices: inverse, solve, det, Cholesky, eigh against torch."""
    a = rng.standard_normal((2, 12, 12)) + 4 * np.eye(12)
    check_op(lambda L, x: (L.linalg.inv(x), L.linalg.det(x), L.linalg.slogdet(x)), In(value=a), rtol=1e-9, atol=1e-10, double=False)
    check_op(lambda L, x, b: L.linalg.solve(x, b), In(value=a), In((2, 12, 3)), rtol=1e-9, atol=1e-10, double=False)
    check_op(lambda L, x: L.linalg.cholesky(x), In(value=_spd(12, (2,))), rtol=1e-9, atol=1e-10, double=False)
    check_op(lambda L, x: (lambda r: (r[0], r[1].abs()))(L.linalg.eigh(x + x.mT)), In((2, 12, 12)), rtol=1e-8, atol=1e-9,
             double=False)


SEMANTICS = {
    "inv-empty": lambda L: L.linalg.inv(L.ones(2, 0, 0)),
    "solve_triangular-zero-diagonal": lambda L: L.linalg.solve_triangular(L.zeros(2, 2), L.ones(2, 2), upper=False),
    "solve_triangular-empty": lambda L: L.linalg.solve_triangular(L.ones(0, 0), L.ones(0, 3), upper=True),
    "eigh-empty": lambda L: L.linalg.eigh(L.ones(2, 0, 0)),
    "eigh-identity-values": lambda L: L.linalg.eigvalsh(L.eye(3, dtype=L.float64) * 2),
    "eigh-type": lambda L: (lambda r: (type(r).__name__, len(r), r.eigenvalues))(L.linalg.eigh(L.eye(2))),
    "svd-empty-rows": lambda L: L.linalg.svd(L.ones(0, 2)),
    "svd-empty-cols": lambda L: L.linalg.svd(L.ones(2, 0), full_matrices=False),
    "svd-type": lambda L: (lambda r: (type(r).__name__, len(r), r.S))(L.linalg.svd(L.eye(2) * 3)),
    "svd-zero-matrix-values": lambda L: L.linalg.svdvals(L.zeros(3, 2)),
    "matrix_norm-nuc-empty": lambda L: L.linalg.matrix_norm(L.ones(0, 2), "nuc"),
    "matrix_norm-2-empty": lambda L: (L.linalg.matrix_norm(L.ones(0, 2), 2), L.linalg.matrix_norm(L.ones(3, 0, 0), 2)),
    "matrix_norm-minus-2-empty": lambda L: L.linalg.matrix_norm(L.ones(2, 0, 3), -2),
    "pinv-empty": lambda L: L.linalg.pinv(L.ones(0, 3)),
    "lstsq-empty": lambda L: L.linalg.lstsq(L.ones(0, 3), L.ones(0, 2)),
    "lstsq-type": lambda L: (lambda r: (type(r).__name__, len(r), r.rank, r.residuals, r.singular_values))(L.linalg.lstsq(L.eye(2), L.ones(2, 1))),
    "qr-empty-rows": lambda L: L.linalg.qr(L.ones(0, 2)),
    "qr-empty-cols": lambda L: L.linalg.qr(L.ones(2, 0), mode="complete"),
    "qr-upper-triangular": lambda L: L.linalg.qr(L.tensor([[2.0, 1.0], [0.0, -3.0]])),
    "qr-zeros": lambda L: L.linalg.qr(L.zeros(3, 2)),
    "qr-type": lambda L: (lambda r: (type(r).__name__, len(r)))(L.linalg.qr(L.eye(2))),
    "det-empty": lambda L: L.linalg.det(L.ones(0, 0)),
    "det-empty-batch": lambda L: L.linalg.det(L.ones(0, 3, 3)),
    "slogdet-empty": lambda L: L.linalg.slogdet(L.ones(3, 0, 0)),
    "slogdet-singular": lambda L: L.linalg.slogdet(L.tensor([[1., 2.], [2., 4.]])),
    "logdet-zero": lambda L: L.logdet(L.zeros(2, 2)),
    "det-singular-value": lambda L: L.det(L.tensor([[1., 2.], [2., 4.]])),
    "solve-empty": lambda L: L.linalg.solve(L.eye(3), L.ones(3, 0)),
    "solve-identity": lambda L: L.linalg.solve(L.eye(3, dtype=L.float64), L.arange(6., dtype=L.float64).reshape(3, 2)),
    "cholesky-empty": lambda L: L.linalg.cholesky(L.ones(0, 0)),
    "cholesky-identity": lambda L: L.linalg.cholesky(L.eye(3) * 4),
    "matrix_power-empty": lambda L: L.linalg.matrix_power(L.ones(0, 2, 2), 3),
    "matrix_power-0-values": lambda L: L.linalg.matrix_power(L.ones(2, 2), 0),
    "matrix_exp-zeros": lambda L: L.linalg.matrix_exp(L.zeros(2, 2)),
    "matrix_exp-empty": lambda L: L.linalg.matrix_exp(L.ones(0, 0)),
    "vector_norm-empty": lambda L: L.linalg.vector_norm(L.ones(0)),
    "vector_norm-zero": lambda L: L.linalg.vector_norm(L.zeros(3)),
    "norm-vector": lambda L: L.linalg.norm(L.tensor([3., 4.])),
    "vecdot-int": lambda L: L.linalg.vecdot(L.tensor([1, 2]), L.tensor([3, 4])),
    "det-zero-column": lambda L: L.linalg.det(L.tensor([[0.0, 1.0], [0.0, 3.0]])),
    "multi_dot-int": lambda L: L.linalg.multi_dot([L.tensor([[1, 2]]), L.tensor([[3], [4]])]),
    "cross-int": lambda L: L.linalg.cross(L.tensor([1, 0, 0]), L.tensor([0, 1, 0])),
    "inv-requires-grad": lambda L: L.linalg.inv(L.eye(2, requires_grad=True)).requires_grad,
    "no-grad": lambda L: (lambda a: [f(a).requires_grad for f in (L.linalg.inv, L.linalg.det, L.linalg.cholesky)])(L.eye(2, requires_grad=True).detach()),
}


@pytest.mark.parametrize("name", sorted(SEMANTICS))
def test_semantics(name):
    same_semantics(SEMANTICS[name])


SQ = "A must be batches of square matrices, but they are 2 by 3 matrices"
INV1 = "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."
CHOL = ("linalg.cholesky: The factorization could not be completed because the input is not positive-definite "
        "(the leading minor of order 2 is not positive-definite).")
S2 = [[1.0, 2.0], [2.0, 4.0]]
NPD = [[1.0, 2.0], [2.0, 1.0]]

# name: (call, True when torch raises LinAlgError, the part of torch's message ferrograd's must contain)
ERRORS = {
    "inv-singular": (lambda L: L.linalg.inv(L.tensor(S2)), True, INV1),
    "inv-singular-batch": (lambda L: L.linalg.inv(L.stack([L.eye(2), L.tensor(S2)])), True, "linalg.inv: (Batch element 1): The diagonal element 2 is zero"),
    "inv-zero-first": (lambda L: L.linalg.inv(L.zeros(3, 3)), True, "The diagonal element 1 is zero"),
    "inverse-singular": (lambda L: L.inverse(L.tensor(S2)), True, "input matrix is singular"),
    "inv-nonsquare": (lambda L: L.linalg.inv(L.ones(2, 3)), False, "linalg.inv: " + SQ),
    "inv-1d": (lambda L: L.linalg.inv(L.ones(3)), False, "linalg.inv: The input tensor A must have at least 2 dimensions."),
    "inv-int": (lambda L: L.linalg.inv(L.ones(3, 3, dtype=L.int64)), False, "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    "inv-half": (lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.float16)), False, "linalg.inv: Low precision dtypes not supported. Got Half"),
    "inv-not-tensor": (lambda L: L.linalg.inv([[1.0]]), False, None),
    "solve-singular": (lambda L: L.linalg.solve(L.tensor(S2), L.ones(2)), True, "torch.linalg.solve: The solver failed because the input matrix is singular."),
    "solve-singular-batch": (lambda L: L.linalg.solve(L.tensor([S2]), L.ones(1, 2)), True, "(Batch element 0): The solver failed"),
    "solve-shapes": (lambda L: L.linalg.solve(L.eye(2), L.ones(3)), False, "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
    "solve-shapes-matrix": (lambda L: L.linalg.solve(L.eye(2), L.ones(3, 4)), False, "(2x2 and 3x4)"),
    "solve-dtype": (lambda L: L.linalg.solve(L.eye(2), L.ones(2, dtype=L.float64)), False, "linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead"),
    "solve-nonsquare": (lambda L: L.linalg.solve(L.ones(2, 3), L.ones(2)), False, SQ),
    "det-nonsquare": (lambda L: L.linalg.det(L.ones(2, 3)), False, "linalg.det: " + SQ),
    "det-1d": (lambda L: L.linalg.det(L.ones(3)), False, "linalg.det: The input tensor A must have at least 2 dimensions."),
    "det-int": (lambda L: L.linalg.det(L.ones(2, 2, dtype=L.int64)), False, "Expected a floating point or complex tensor as input. Got Long"),
    "slogdet-nonsquare": (lambda L: L.linalg.slogdet(L.ones(2, 3)), False, "linalg.slogdet: " + SQ),
    "cholesky-npd": (lambda L: L.linalg.cholesky(L.tensor(NPD)), True, CHOL),
    "cholesky-npd-batch": (lambda L: L.linalg.cholesky(L.stack([L.eye(2), L.tensor(NPD)])), True, "linalg.cholesky: (Batch element 1): The factorization could not be completed"),
    "cholesky-negative-diag": (lambda L: L.linalg.cholesky(-L.eye(3)), True, "the leading minor of order 1 is not positive-definite"),
    "cholesky-nan": (lambda L: L.linalg.cholesky(L.tensor([[1.0, 0.0], [0.0, float("nan")]])), True, "order 2"),
    "cholesky-nonsquare": (lambda L: L.linalg.cholesky(L.ones(2, 3)), False, "linalg.cholesky: " + SQ),
    "cholesky-int": (lambda L: L.linalg.cholesky(L.ones(2, 2, dtype=L.int64)), False, "linalg.cholesky: Expected a floating point or complex tensor as input. Got Long"),
    "matrix_power-nonsquare": (lambda L: L.linalg.matrix_power(L.ones(2, 3), 2), False, "linalg.matrix_power: " + SQ),
    "matrix_power-float-n": (lambda L: L.linalg.matrix_power(L.ones(2, 2), 1.5), False, "must be int, not float"),
    "matrix_power-singular-negative": (lambda L: L.linalg.matrix_power(L.tensor(S2), -1), True, INV1),
    "matrix_exp-nonsquare": (lambda L: L.linalg.matrix_exp(L.ones(2, 3)), False, "linalg.matrix_exp: " + SQ),
    "multi_dot-one": (lambda L: L.linalg.multi_dot([L.ones(2, 2)]), False, "multi_dot(): expected at least 2 tensors but got 1"),
    "multi_dot-shapes": (lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(4, 2)]), False, "multi_dot(): tensors 0 and 1 with shapes [2, 3] and [4, 2] cannot be multiplied"),
    "multi_dot-first-3d": (lambda L: L.linalg.multi_dot([L.ones(2, 3, 3), L.ones(3, 2)]), False, "multi_dot(): the first tensor must be 1D or 2D but got 3D"),
    "multi_dot-middle-1d": (lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(3), L.ones(2)]), False, "multi_dot(): tensor 1 must be 2D but got 1D"),
    "multi_dot-last-3d": (lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(2, 3, 3)]), False, "multi_dot(): the last tensor must be 1D or 2D but got 3D"),
    "multi_dot-dtype": (lambda L: L.linalg.multi_dot([L.ones(2, 3), L.ones(3, 2, dtype=L.float64)]), False, "multi_dot(): all tensors must have be the same dtype but tensor 0 is float and tensor 1 double"),
    "vecdot-dtype": (lambda L: L.linalg.vecdot(L.ones(2), L.ones(2, dtype=L.float64)), False, "linalg.vecdot: Expected x and y to have the same dtype, but found x of type Float and y of type Double instead"),
    "vecdot-shapes": (lambda L: L.linalg.vecdot(L.ones(2), L.ones(3)), False, None),
    "cross-size": (lambda L: L.linalg.cross(L.ones(2), L.ones(2)), False, "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    "vector_norm-int": (lambda L: L.linalg.vector_norm(L.ones(2, dtype=L.int64)), False, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    "vector_norm-str-ord": (lambda L: L.linalg.vector_norm(L.ones(2), "fro"), False, "argument 'ord' (position 2) must be Number, not str"),
    "vector_norm-empty-inf": (lambda L: L.linalg.vector_norm(L.ones(0), float("inf")), False, "cannot compute the inf norm on an empty tensor"),
    "matrix_norm-1d": (lambda L: L.linalg.matrix_norm(L.ones(2)), False, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."),
    "matrix_norm-dim": (lambda L: L.linalg.matrix_norm(L.ones(2, 2), dim=(0,)), False, "linalg.matrix_norm: dim must be a 2-tuple. Got 0"),
    "matrix_norm-int-dim": (lambda L: L.linalg.matrix_norm(L.ones(2, 2), dim=0), False, None),
    "cholesky-removed": (lambda L: L.cholesky(L.eye(2)), False, "This function was deprecated since version 1.9 and is now removed."),
    "Tensor.cholesky-removed": (lambda L: L.eye(2).cholesky(), False, "is now removed"),
    "det-zero-column-value": (lambda L: L.linalg.solve(L.tensor([[0.0, 1.0], [0.0, 3.0]]), L.ones(2)), True, "singular"),
    "matrix_norm-order": (lambda L: L.linalg.matrix_norm(L.ones(2, 2), 3), False, "linalg.matrix_norm: Order 3 not supported."),
    "matrix_norm-int": (lambda L: L.linalg.matrix_norm(L.ones(2, 2, dtype=L.int64)), False, "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got Long"),
    "solve_triangular-shapes": (lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(2, 2), upper=True), False, "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x2)"),
    "solve_triangular-B-1d": (lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(3), upper=True), False, "linalg.solve_triangular: The input tensor B must have at least 2 dimensions."),
    "solve_triangular-no-upper": (lambda L: L.linalg.solve_triangular(L.eye(3), L.ones(3, 2)), False, None),
    "solve_triangular-nonsquare": (lambda L: L.linalg.solve_triangular(L.ones(2, 3), L.ones(2, 2), upper=False), False, "linalg.solve_triangular: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "solve_triangular-int": (lambda L: L.linalg.solve_triangular(L.eye(2, dtype=L.int64), L.ones(2, 2, dtype=L.int64), upper=False), False, "not implemented for 'Long'"),
    "eigh-nonsquare": (lambda L: L.linalg.eigh(L.ones(2, 3)), False, "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "eigh-uplo": (lambda L: L.linalg.eigh(L.ones(2, 2), UPLO="X"), False, "Expected UPLO argument to be 'L' or 'U', but got X"),
    "eigh-int": (lambda L: L.linalg.eigh(L.ones(2, 2, dtype=L.int64)), False, "not implemented for 'Long'"),
    "eigvalsh-1d": (lambda L: L.linalg.eigvalsh(L.ones(3)), False, "The input tensor A must have at least 2 dimensions."),
    "svd-1d": (lambda L: L.linalg.svd(L.ones(3)), False, "linalg.svd: The input tensor A must have at least 2 dimensions."),
    "svd-int": (lambda L: L.linalg.svd(L.ones(2, 2, dtype=L.int64)), False, "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    "svdvals-int": (lambda L: L.linalg.svdvals(L.ones(2, 2, dtype=L.int64)), False, "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    "pinv-1d": (lambda L: L.linalg.pinv(L.ones(3)), False, "linalg.pinv(Float{[3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
    "pinv-int": (lambda L: L.linalg.pinv(L.ones(2, 2, dtype=L.int64)), False, "linalg.pinv(Long{[2, 2]})"),
    "lstsq-1d": (lambda L: L.linalg.lstsq(L.ones(3), L.ones(3)), False, "torch.linalg.lstsq: input must have at least 2 dimensions."),
    "lstsq-rows": (lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(4, 1)), False, "torch.linalg.lstsq: input.size(-2) should match other.size(-2)"),
    "lstsq-dtype": (lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 1, dtype=L.float64)), False, "Expected input and other to have the same dtype, but got input's dtype Float and other's dtype Double"),
    "lstsq-int": (lambda L: L.linalg.lstsq(L.ones(3, 2, dtype=L.int64), L.ones(3, 1, dtype=L.int64)), False, "This function doesn't handle types other than float and double"),
    "lstsq-driver": (lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 1), driver="foo"), False, "parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"),
    "lstsq-dims": (lambda L: L.linalg.lstsq(L.ones(2, 4, 4), L.ones(4)), False, "input.dim() must be greater or equal to other.dim()"),
    "qr-1d": (lambda L: L.linalg.qr(L.ones(3)), False, "linalg.qr: The input tensor A must have at least 2 dimensions."),
    "qr-mode": (lambda L: L.linalg.qr(L.ones(2, 2), mode="foo"), False, "qr received unrecognized mode 'foo' but expected one of 'reduced' (default), 'r', or 'complete'"),
    "qr-int": (lambda L: L.linalg.qr(L.ones(2, 2, dtype=L.int64)), False, "linalg.qr: Expected a floating point or complex tensor as input. Got Long"),
    "norm-ord-3d": (lambda L: L.linalg.norm(L.ones(2, 2, 2), 2), False, "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."),
}


def _gist(msg):
    return re.sub(r"\s+", " ", str(msg)).strip()


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    fn, linalg_error, gist = ERRORS[name]
    te, fe = raised(fn, torch), raised(fn, fg)
    assert te is not None, f"torch accepts {name}"
    assert error_kind(fe) == error_kind(te), f"torch: {te!r}; got {fe!r}"
    assert isinstance(te, torch.linalg.LinAlgError) == linalg_error, te
    assert isinstance(fe, fg.linalg.LinAlgError) == linalg_error, fe
    if gist is not None:
        assert gist in _gist(te), f"test's gist not in torch's message {te}"
        assert gist in _gist(fe), f"{fe} lacks {gist!r}"


def test_linalg_error_is_a_runtime_error():
    assert issubclass(fg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="singular"):
        fg.linalg.inv(fg.zeros(2, 2))


def test_return_types():
    def fn(L):
        r, t = L.linalg.slogdet(L.eye(2) * 2), L.slogdet(L.eye(2) * -2)
        return type(r).__name__, r.sign, r.logabsdet, type(t).__name__, t.sign, t.logabsdet, len(r)
    same(fn)


@pytest.mark.skipif(AGAINST_TORCH, reason="checks ferrograd's algorithm: its gradients against the analytic formulas")
def test_gradients_match_formulas():
    """inv: -A^-T G A^-T; det: G det A^-T; solve: gB = A^-T G, gA = -gB X^T; slogdet: A^-T."""
    a = rng.standard_normal((3, 3)) + 2 * np.eye(3)
    g = rng.standard_normal((3, 3))
    ai = np.linalg.inv(a)
    A = fg.tensor(a, requires_grad=True)
    (ga,) = fg.autograd.grad((fg.linalg.inv(A) * fg.tensor(g)).sum(), A)
    np.testing.assert_allclose(ga.numpy(), -ai.T @ g @ ai.T, rtol=1e-10)
    (ga,) = fg.autograd.grad(fg.linalg.det(A), A)
    np.testing.assert_allclose(ga.numpy(), np.linalg.det(a) * ai.T, rtol=1e-10)
    (ga,) = fg.autograd.grad(fg.linalg.slogdet(A).logabsdet, A)
    np.testing.assert_allclose(ga.numpy(), ai.T, rtol=1e-10)
    b = rng.standard_normal((3, 2))
    gx = rng.standard_normal((3, 2))
    B = fg.tensor(b, requires_grad=True)
    ga, gb = fg.autograd.grad((fg.linalg.solve(A, B) * fg.tensor(gx)).sum(), (A, B))
    np.testing.assert_allclose(gb.numpy(), ai.T @ gx, rtol=1e-10)
    np.testing.assert_allclose(ga.numpy(), -(ai.T @ gx) @ (ai @ b).T, rtol=1e-10)
