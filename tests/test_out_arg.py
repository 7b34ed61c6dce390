"""out= arguments: the result is written into `out` (its own storage, resized when its shape
differs, with torch's warning when it had elements), `out` itself is returned, dtype and autograd
are refused as torch refuses them. Errors and warnings are compared with torch's; the values
written must be the function's own result without out."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg, AGAINST_TORCH

F64, F32, I64 = "float64", "float32", "int64"
RESIZED = "An output with one or more elements was resized since it had shape"


def _inputs(L, rg=False):
    rng = np.random.default_rng(0)
    m = rng.standard_normal((3, 3))
    a = m @ m.T + 3 * np.eye(3)
    x = rng.standard_normal(3)
    A = L.tensor(a, requires_grad=rg)
    return A, L.tensor(x, requires_grad=rg), L.tensor(m, requires_grad=rg)


# name -> (call(L, A, x, M, out), result dtypes (one per out tensor), whether torch warns on resize)
SINGLE = {
    "zeros": (lambda L, A, x, M, o: L.zeros(3, out=o), None),
    "pow": (lambda L, A, x, M, o: L.pow(x, 2, out=o), True),
    "max": (lambda L, A, x, M, o: L.max(x, out=o), True),
    "min": (lambda L, A, x, M, o: L.min(x, out=o), True),
    "max_binary": (lambda L, A, x, M, o: L.max(x, x * 0.5, out=o), True),
    "tensordot": (lambda L, A, x, M, o: L.tensordot(A, M, 1, out=o), True),
    "tensordot_pos": (lambda L, A, x, M, o: L.tensordot(A, M, 1, o), True),
    "chain_matmul": (lambda L, A, x, M, o: L.chain_matmul(A, M, out=o), True),
    "quantile": (lambda L, A, x, M, o: L.quantile(x, 0.3, out=o), True),
    "nanquantile": (lambda L, A, x, M, o: L.nanquantile(M, 0.6, dim=0, out=o), True),
    "inv": (lambda L, A, x, M, o: L.linalg.inv(A, out=o), True),
    "solve": (lambda L, A, x, M, o: L.linalg.solve(A, M, out=o), True),
    "solve_triangular": (lambda L, A, x, M, o: L.linalg.solve_triangular(A, M, upper=True, out=o), True),
    "det": (lambda L, A, x, M, o: L.linalg.det(A, out=o), True),
    "cholesky": (lambda L, A, x, M, o: L.linalg.cholesky(A, out=o), True),
    "eigvalsh": (lambda L, A, x, M, o: L.linalg.eigvalsh(A, out=o), True),
    "svdvals": (lambda L, A, x, M, o: L.linalg.svdvals(M, out=o), True),
    "pinv": (lambda L, A, x, M, o: L.linalg.pinv(A, out=o), True),
    "multi_dot": (lambda L, A, x, M, o: L.linalg.multi_dot([A, M, A], out=o), True),
    "vecdot": (lambda L, A, x, M, o: L.linalg.vecdot(A, M, out=o), True),
    "cross": (lambda L, A, x, M, o: L.linalg.cross(A, M, out=o), True),
    "vector_norm": (lambda L, A, x, M, o: L.linalg.vector_norm(M, out=o), True),
    "matrix_norm": (lambda L, A, x, M, o: L.linalg.matrix_norm(M, out=o), True),
    "norm": (lambda L, A, x, M, o: L.linalg.norm(M, out=o), True),
    "normalize": (lambda L, A, x, M, o: L.nn.functional.normalize(M, out=o), True),
}

MULTI = {
    "max_dim": (lambda L, A, x, M, o: L.max(M, 0, out=o), (F64, I64)),
    "min_dim": (lambda L, A, x, M, o: L.min(M, 1, True, out=o), (F64, I64)),
    "slogdet": (lambda L, A, x, M, o: L.linalg.slogdet(M, out=o), (F64, F64)),
    "qr": (lambda L, A, x, M, o: L.linalg.qr(M, out=o), (F64, F64)),
    "eigh": (lambda L, A, x, M, o: L.linalg.eigh(A, out=o), (F64, F64)),
    "svd": (lambda L, A, x, M, o: L.linalg.svd(M, out=o), (F64, F64, F64)),
}

FIELDS = {"max_dim": ("values", "indices"), "min_dim": ("values", "indices"), "slogdet": ("sign", "logabsdet"),
          "qr": ("Q", "R"), "eigh": ("eigenvalues", "eigenvectors"), "svd": ("U", "S", "Vh")}


def _dt(L, name):
    return getattr(L, name)


def _run(L, call, out, rg=False, grad=True):
    """(result or exception, resize warnings) of one call."""
    A, x, M = _inputs(L, rg)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            with (L.enable_grad() if grad else L.no_grad()):
                r = call(L, A, x, M, out)
        except Exception as e:  # noqa: BLE001 - compared with torch's
            r = e
    return r, [str(m.message) for m in w if RESIZED in str(m.message)]


def _same_error(te, fe):
    assert isinstance(te, Exception) == isinstance(fe, Exception), (te, fe)
    if isinstance(te, Exception):
        assert type(fe).__name__ == type(te).__name__, (te, fe)
        assert str(fe).splitlines()[0] == str(te).splitlines()[0], (te, fe)


def _expected(L, call):
    A, x, M = _inputs(L)
    return call(L, A, x, M, None)


@pytest.mark.parametrize("name", SINGLE)
def test_written_into_out_storage(name):
    call, _ = SINGLE[name]
    ref = _expected(fg, call)
    out = fg.empty(tuple(ref.shape), dtype=ref.dtype)
    ptr = out.data_ptr()
    r, w = _run(fg, call, out)
    assert r is out
    assert out.data_ptr() == ptr
    assert w == []
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", SINGLE)
@pytest.mark.parametrize("start", [(0,), (7,), (2, 2)])
def test_resized_with_torch_warning(name, start):
    call, _ = SINGLE[name]
    ref = _expected(fg, call)
    t_ref = _expected(torch, call)
    tr, tw = _run(torch, call, torch.empty(start, dtype=t_ref.dtype))
    fr, fw = _run(fg, call, fg.empty(start, dtype=ref.dtype))
    _same_error(tr, fr)
    assert bool(fw) == bool(tw), (tw, fw)
    if tw:
        assert fw[0].split(" (Triggered internally")[0] == tw[0].split(" (Triggered internally")[0]
    assert tuple(fr.shape) == tuple(ref.shape)
    np.testing.assert_allclose(fr.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", SINGLE)
@pytest.mark.parametrize("dtype", [F32, I64, "int32", "bool"])
def test_dtype_of_out(name, dtype):
    call, _ = SINGLE[name]
    tr, _ = _run(torch, call, torch.empty(0, dtype=_dt(torch, dtype)))
    fr, _ = _run(fg, call, fg.empty(0, dtype=_dt(fg, dtype)))
    _same_error(tr, fr)
    if not isinstance(tr, Exception):
        assert str(fr.dtype).split(".")[-1] == dtype and tuple(fr.shape) == tuple(tr.shape)
        np.testing.assert_allclose(fr.numpy().astype(np.float64), tr.numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", SINGLE)
@pytest.mark.parametrize("who", ["input", "out"])
@pytest.mark.parametrize("grad", [True, False])
def test_autograd_refused(name, who, grad):
    call, _ = SINGLE[name]
    results = []
    for L in (torch, fg):
        dt = _expected(L, call).dtype
        out = L.empty(0, dtype=dt, requires_grad=(who == "out"))
        r, _ = _run(L, call, out, rg=(who == "input"), grad=grad)
        results.append(r)
    tr, fr = results
    _same_error(tr, fr)
    if not isinstance(tr, Exception):
        assert fr.requires_grad == tr.requires_grad


@pytest.mark.parametrize("name", MULTI)
def test_tuple_out(name):
    call, dts = MULTI[name]
    ref = _expected(fg, call)
    outs = tuple(fg.empty(tuple(r.shape), dtype=_dt(fg, d)) for r, d in zip(ref, dts))
    ptrs = [o.data_ptr() for o in outs]
    r, w = _run(fg, call, outs)
    assert type(r).__name__ == type(ref).__name__ + "_out" and len(r) == len(ref)
    assert [getattr(r, f) is o for f, o in zip(FIELDS[name], outs)] == [True] * len(outs)
    assert all(a is b for a, b in zip(r, outs))
    assert [o.data_ptr() for o in outs] == ptrs and w == []
    for o, e in zip(outs, ref):
        np.testing.assert_allclose(o.numpy(), e.numpy(), rtol=1e-12, atol=1e-12)
    # resized from empty outs, a list accepted as torch accepts it
    r, w = _run(fg, call, [fg.empty(0, dtype=_dt(fg, d)) for d in dts])
    assert w == [] and [tuple(o.shape) for o in r] == [tuple(e.shape) for e in ref]


@pytest.mark.parametrize("name", MULTI)
@pytest.mark.parametrize("bad", range(3))
def test_tuple_out_errors(name, bad):
    call, dts = MULTI[name]
    if bad >= len(dts):
        pytest.skip("no such out")
    results = []
    for L in (torch, fg):
        outs = [L.empty(0, dtype=_dt(L, d)) for d in dts]
        outs[bad] = L.empty(0, dtype=L.float32 if dts[bad] != F32 else L.int64)
        results.append(_run(L, call, tuple(outs))[0])
    _same_error(*results)
    results = []
    for L in (torch, fg):
        outs = tuple(L.empty(0, dtype=_dt(L, d)) for d in dts)
        results.append(_run(L, call, outs, rg=True)[0])
    _same_error(*results)


@pytest.mark.parametrize("name", MULTI)
def test_tuple_out_of_wrong_length(name):
    call, dts = MULTI[name]
    results = [_run(L, call, tuple(L.empty(0, dtype=_dt(L, d)) for d in dts[:-1]))[0] for L in (torch, fg)]
    _same_error(*results)


def test_max_dim_needs_tuple_out():
    for L in (torch, fg):
        with pytest.raises(TypeError):
            L.max(L.ones(3, 3), 0, out=L.empty(0))


def test_zeros_out_dtype():
    for L in (torch, fg):
        o = L.empty(5, dtype=L.int64)
        assert L.zeros(2, 2, out=o) is o and o.dtype == L.int64 and tuple(o.shape) == (2, 2)
        assert L.zeros(3, requires_grad=True, out=L.empty(0)).requires_grad
        assert L.zeros(size=(4,), out=o) is o and tuple(o.shape) == (4,)
    tr, _ = _run(torch, lambda L, A, x, M, o: L.zeros(3, dtype=L.float32, out=o), torch.empty(0, dtype=torch.float64))
    fr, _ = _run(fg, lambda L, A, x, M, o: L.zeros(3, dtype=L.float32, out=o), fg.empty(0, dtype=fg.float64))
    _same_error(tr, fr)


_CREATION = {
    "ones": (lambda L, o: L.ones(2, 3, out=o), True),
    "ones size=": (lambda L, o: L.ones(size=(4,), out=o), True),
    "empty": (lambda L, o: L.empty(2, 3, out=o), False),
    "full": (lambda L, o: L.full((2, 3), 1.5, out=o), True),
    "arange": (lambda L, o: L.arange(5, out=o), True),
    "arange 3": (lambda L, o: L.arange(1, 9, 2, out=o), True),
    "linspace": (lambda L, o: L.linspace(0, 1, 5, out=o), True),
    "logspace": (lambda L, o: L.logspace(0, 1, 5, out=o), True),
    "eye": (lambda L, o: L.eye(3, 4, out=o), True),
    "rand": (lambda L, o: L.rand(2, 3, out=o), False),
    "randn": (lambda L, o: L.randn(2, 3, out=o), False),
    "randint": (lambda L, o: L.randint(0, 4, (2, 3), out=o), False),
    "randperm": (lambda L, o: L.randperm(5, out=o), False),
}


@pytest.mark.parametrize("name", list(_CREATION))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_creation_functions_write_out(name, dtype):
    fn, deterministic = _CREATION[name]
    res = []
    for L in (torch, fg):
        o = L.empty(7, dtype=getattr(L, dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = fn(L, o)
            except (RuntimeError, NotImplementedError) as e:  # rand/randn into an integer out
                res.append(type(e))
                continue
        assert r is o
        res.append((tuple(o.shape), str(o.dtype).split(".")[1], o.tolist() if deterministic else None))
    assert res[0] == res[1]


def test_creation_out_checks():
    for L in (torch, fg):
        with pytest.raises(RuntimeError, match=r"dtype Long does not match dtype of out parameter \(Float\)"):
            L.ones(2, out=L.empty(0), dtype=L.int64)
        with pytest.raises(RuntimeError, match="functions with out=... arguments don't support automatic differentiation"):
            L.full((2,), 1.0, out=L.empty(2, requires_grad=True))
        with pytest.raises(TypeError, match="argument 'out' must be Tensor, not int"):
            L.full((2,), 1.0, out=3)
        assert L.eye(2, out=L.empty(0), requires_grad=True).requires_grad


def test_out_keeps_strides_of_a_view():
    for L in (torch, fg):
        base = L.zeros(4, 4, dtype=L.float64)
        view = base[:, :2]
        r = L.pow(L.ones(4, 2, dtype=L.float64) * 3, 2, out=view)
        assert r is view and float(base[:, :2].sum()) == 72.0 and float(base[:, 2:].sum()) == 0.0


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's own refusal of an out= it does not support yet")
def test_unsupported_out_is_refused_not_ignored():
    A = fg.eye(3, dtype=fg.float64)
    with pytest.raises(NotImplementedError, match=r"ferrograd: linalg.lstsq\(out=...\) is not supported yet"):
        fg.linalg.lstsq(A, A, out=(fg.empty(0),) * 4)
