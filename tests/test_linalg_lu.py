"""LU factorization and the solves on it, Cholesky solves, triangular_solve, against torch: values,
pivots/info, gradients (float64, random-weighted sums), batches, rectangular matrices, errors; and
linalg.eig/eigvals's NotImplementedError (ferrograd has no complex dtypes)."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg, AGAINST_TORCH

RNG = np.random.default_rng(7)


def _same(r, e, tol=1e-10):
    assert isinstance(r, fg.Tensor)
    assert str(r.dtype).rsplit(".", 1)[-1] == str(e.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(e.shape)
    np.testing.assert_allclose(r.detach().numpy(), e.detach().numpy(), rtol=tol, atol=tol)


def _grads(fn, arrays, n_out=1):
    """fn(lib, *tensors) -> tensor or tuple; returns (values, grads) for fg and torch."""
    res = []
    for lib in (fg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        outs = out if isinstance(out, tuple) else (out,)
        total = 0
        for i, o in enumerate(outs):
            if o.is_floating_point():
                w = np.cos(np.arange(o.numel()) + i).reshape(tuple(o.shape))
                total = total + (o * lib.tensor(w)).sum()
        total.backward()
        res.append(([o.detach() for o in outs], [t.grad for t in ts]))
    (vf, gf), (vt, gt) = res
    for a, b in zip(vf, vt):
        _same(a, b)
    for a, b in zip(gf, gt):
        if b is None:
            assert a is None
        else:
            _same(a, b, 1e-8)


SHAPES = [(3, 3), (4, 4), (2, 3, 3), (5, 3), (3, 5), (2, 4, 2), (1, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor(shape):
    a = RNG.normal(size=shape)
    for fn_name in ("lu_factor", "lu_factor_ex"):
        r = getattr(fg.linalg, fn_name)(fg.tensor(a))
        e = getattr(torch.linalg, fn_name)(torch.tensor(a))
        assert type(r).__name__ == type(e).__name__
        for x, y in zip(r, e):
            _same(x, y)
    _grads(lambda L, A: L.linalg.lu_factor(A).LU, [a])


@pytest.mark.parametrize("shape", SHAPES)
def test_linalg_lu(shape):
    a = RNG.normal(size=shape)
    _grads(lambda L, A: tuple(L.linalg.lu(A)), [a])


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (5, 3), (3, 5)])
def test_lu_unpack(shape):
    a = RNG.normal(size=shape)
    _grads(lambda L, A: tuple(L.lu_unpack(*L.linalg.lu_factor(A))), [a])
    for kw in (dict(unpack_data=False), dict(unpack_pivots=False)):
        r = fg.lu_unpack(*fg.linalg.lu_factor(fg.tensor(a)), **kw)
        e = torch.lu_unpack(*torch.linalg.lu_factor(torch.tensor(a)), **kw)
        for x, y in zip(r, e):
            _same(x, y)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shapes", [((3, 3), (3, 2)), ((2, 4, 4), (4, 3)), ((4, 4), (2, 4, 1))])
def test_lu_solve(left, adjoint, shapes):
    a = RNG.normal(size=shapes[0]) + 3 * np.eye(shapes[0][-1])
    b = RNG.normal(size=shapes[1])
    if not left:
        b = np.swapaxes(b, -1, -2).copy()

    def fn(L, A, B):
        LU, piv = L.linalg.lu_factor(A)
        return L.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint)
    _grads(fn, [a, b])


def test_singular_and_info():
    for a in (np.zeros((2, 2)), np.ones((2, 2)), np.array([[0.0, 1, 1], [0, 0, 2], [0, 1, 1]]),
              np.stack([np.eye(2), np.ones((2, 2))])):
        r = fg.linalg.lu_factor_ex(fg.tensor(a))
        e = torch.linalg.lu_factor_ex(torch.tensor(a))
        for x, y in zip(r, e):
            _same(x, y)
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(RuntimeError) as ex:
                lib.linalg.lu_factor(lib.tensor(a))
            msgs.append(str(ex.value))
        assert msgs[0] == msgs[1]
        P, L, U = fg.linalg.lu(fg.tensor(a))
        Pt, Lt, Ut = torch.linalg.lu(torch.tensor(a))
        _same(P, Pt)
        _same(L, Lt)
        _same(U, Ut)


def test_torch_lu_and_lu_solve():
    a = RNG.normal(size=(2, 3, 3))
    b = RNG.normal(size=(2, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fg.lu(fg.tensor(a))
        e = torch.lu(torch.tensor(a))
        for x, y in zip(r, e):
            _same(x, y)
        r = fg.lu(fg.tensor(a), get_infos=True)
        e = torch.lu(torch.tensor(a), get_infos=True)
        assert len(r) == 3
        for x, y in zip(r, e):
            _same(x, y)
        r2 = fg.tensor(a).lu()
        _same(r2[0], e[0])
    _same(fg.lu_solve(fg.tensor(b), *fg.linalg.lu_factor(fg.tensor(a))),
          torch.lu_solve(torch.tensor(b), *torch.linalg.lu_factor(torch.tensor(a))))
    _same(fg.tensor(b).lu_solve(*fg.linalg.lu_factor(fg.tensor(a))),
          torch.tensor(b).lu_solve(*torch.linalg.lu_factor(torch.tensor(a))))
    if not AGAINST_TORCH:  # (torch warns once per process)
        with pytest.warns(UserWarning, match="deprecated"):
            fg.lu(fg.tensor(a))


def _spd(n, batch=()):
    m = RNG.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shapes", [((3,), (3, 2)), ((2,), (2, 4, 1)), ((4,), (4, 4))])
def test_cholesky_solve_inverse(upper, shapes):
    n = shapes[1][-2]
    spd = _spd(n, tuple(shapes[1][:-2]) if len(shapes[1]) > 2 else ())
    c = np.linalg.cholesky(spd)
    if upper:
        c = np.swapaxes(c, -1, -2).copy()
    b = RNG.normal(size=shapes[1])
    _grads(lambda L, B, C: L.cholesky_solve(B, C, upper), [b, c])
    _grads(lambda L, B, C: B.cholesky_solve(C, upper=upper), [b, c])
    _grads(lambda L, C: L.cholesky_inverse(C, upper), [c])
    _grads(lambda L, C: C.cholesky_inverse(upper=upper), [c])


@pytest.mark.parametrize("upper,transpose,unit", [(True, False, False), (False, False, True), (True, True, False),
                                                  (False, True, False)])
def test_triangular_solve(upper, transpose, unit):
    a = RNG.normal(size=(2, 3, 3)) + 3 * np.eye(3)
    b = RNG.normal(size=(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _grads(lambda L, B, A: tuple(L.triangular_solve(B, A, upper, transpose, unit)), [b, a])
        r = fg.tensor(b).triangular_solve(fg.tensor(a), upper=upper)
        e = torch.tensor(b).triangular_solve(torch.tensor(a), upper=upper)
    assert type(r).__name__ == "triangular_solve"
    _same(r.solution, e.solution)
    _same(r.cloned_coefficient, e.cloned_coefficient)


def test_float32_and_pivot_dtype():
    a = RNG.normal(size=(4, 4)).astype(np.float32)
    r = fg.linalg.lu_factor(fg.tensor(a))
    e = torch.linalg.lu_factor(torch.tensor(a))
    _same(r.LU, e.LU, 1e-5)
    assert r.pivots.dtype == fg.int32
    _same(r.pivots, e.pivots)


def test_out():
    a = RNG.normal(size=(3, 3))
    outs = (fg.empty(0, dtype=fg.float64), fg.empty(0, dtype=fg.int32))
    r = fg.linalg.lu_factor(fg.tensor(a), out=outs)
    e = torch.linalg.lu_factor(torch.tensor(a))
    assert r[0] is outs[0] and r[1] is outs[1]
    _same(outs[0], e.LU)
    _same(outs[1], e.pivots)


def test_errors():
    cases = [
        (lambda L: L.linalg.lu_factor(L.tensor([1.0, 2.0])), RuntimeError),
        (lambda L: L.linalg.lu_factor(L.tensor([[1, 2], [3, 4]])), NotImplementedError),
        (lambda L: L.linalg.lu_factor(L.eye(2), pivot=False), RuntimeError),
        (lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.eye(2)), L.ones(3, 1)), RuntimeError),
        (lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.eye(2)), L.ones(2)), RuntimeError),
        (lambda L: L.linalg.lu_solve(*L.linalg.lu_factor(L.ones(3, 2) + L.eye(3, 2)), L.ones(3, 1)), RuntimeError),
        (lambda L: L.cholesky_solve(L.ones(2), L.eye(2)), RuntimeError),
        (lambda L: L.cholesky_solve(L.ones(2, 1), L.eye(2, dtype=L.float64)), RuntimeError),
        (lambda L: L.cholesky_inverse(L.ones(2)), RuntimeError),
    ]
    for fn, kind in cases:
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(kind) as ex:
                fn(lib)
            msgs.append(str(ex.value))
        assert msgs[0] == msgs[1]


@pytest.mark.skipif(AGAINST_TORCH, reason="torch has complex dtypes and computes eig")
def test_eig_needs_complex():
    for name in ("eig", "eigvals"):
        with pytest.raises(NotImplementedError, match="complex"):
            getattr(fg.linalg, name)(fg.eye(3))
