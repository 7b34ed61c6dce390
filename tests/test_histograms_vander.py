"""torch.histogram / histogramdd / Tensor.histogram, torch.vander and torch.unravel_index against
torch: values, dtypes, gradients (vander), errors."""
import numpy as np
import pytest
import torch

from conftest import fg


def _same(r, e, tol=1e-6):
    assert isinstance(r, fg.Tensor)
    assert str(r.dtype).rsplit(".", 1)[-1] == str(e.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(e.shape)
    np.testing.assert_allclose(r.detach().numpy(), e.detach().numpy(), rtol=tol, atol=tol)


DATA = np.random.default_rng(3).normal(size=(5, 7))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(bins=4), dict(bins=10, range=(-1.0, 1.0)), dict(bins=3, density=True),
                                dict(bins=6, weight=True), dict(bins=6, weight=True, density=True),
                                dict(bins="edges"), dict(bins="edges", density=True, weight=True)])
def test_histogram(dtype, kw):
    res = []
    for lib in (fg, torch):
        x = lib.tensor(DATA, dtype=getattr(lib, dtype))
        k = dict(kw)
        if k.get("weight"):
            k["weight"] = lib.tensor(np.abs(DATA) + 0.5, dtype=getattr(lib, dtype))
        if k["bins"] == "edges":
            k["bins"] = lib.tensor([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5], dtype=getattr(lib, dtype))
        res.append(lib.histogram(x, **k))
        res.append(x.histogram(**k))
    for r, e in ((res[0], res[2]), (res[1], res[3])):
        assert type(r).__name__ == "histogram"
        _same(r.hist, e.hist)
        _same(r.bin_edges, e.bin_edges)


def test_histogram_special_inputs():
    for data, kw in (([], dict(bins=3)), ([1.0, 1.0], dict(bins=2)), ([[1.0, 2.0], [1.0, 3.0]], dict(bins=2)),
                     ([1.0, 2.0, 1.0], dict(bins=2, range=(0.0, 1.0)))):
        r = fg.histogram(fg.tensor(data), **kw)
        e = torch.histogram(torch.tensor(data), **kw)
        _same(r[0], e[0])
        _same(r[1], e[1])
    ho, eo = fg.empty(0), fg.empty(0)
    r = fg.histogram(fg.tensor([1.0, 2.0, 1.0]), 2, out=(ho, eo))
    e = torch.histogram(torch.tensor([1.0, 2.0, 1.0]), 2)
    assert r.hist is ho and r.bin_edges is eo
    _same(ho, e.hist)
    _same(eo, e.bin_edges)


def test_histogram_errors():
    cases = [
        (lambda L: L.histogram(L.tensor([1, 2, 1]), bins=4), NotImplementedError, True),
        (lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=0), RuntimeError, True),
        (lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=2, range=(1.0, 0.0)), RuntimeError, True),
        (lambda L: L.histogram(L.tensor([1.0, float("nan")]), bins=2), RuntimeError, True),
        (lambda L: L.histogram(L.tensor([1.0], dtype=L.float64), bins=L.tensor([0.0, 1.0])), RuntimeError, True),
        (lambda L: L.histogram(L.tensor([1.0, 2.0]), bins=2, weight=L.tensor([1.0])), RuntimeError, False),
        (lambda L: L.histogram([1.0], bins=2), TypeError, False),
    ]
    for fn, kind, same_msg in cases:
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(kind) as ex:
                fn(lib)
            msgs.append(str(ex.value))
        if same_msg:
            assert msgs[0] == msgs[1]


@pytest.mark.parametrize("kw", [dict(bins=[3, 4]), dict(bins=5), dict(bins=[2, 3], range=[-1.0, 1.0, -2.0, 2.0]),
                                dict(bins=[3, 3], density=True), dict(bins=4, weight=True),
                                dict(bins="edges")])
def test_histogramdd(kw):
    pts = DATA.reshape(-1)[:34].reshape(17, 2)
    res = []
    for lib in (fg, torch):
        k = dict(kw)
        if k.get("weight"):
            k["weight"] = lib.tensor(np.arange(17.0), dtype=lib.float32)
        if k["bins"] == "edges":
            k["bins"] = [lib.tensor([-2.0, 0.0, 2.0]), lib.tensor([-1.0, -0.2, 0.1, 3.0])]
        res.append(lib.histogramdd(lib.tensor(pts, dtype=lib.float32), **k))
    r, e = res
    assert type(r).__name__ == "histogramdd"
    _same(r.hist, e.hist)
    assert len(r.bin_edges) == len(e.bin_edges)
    for a, b in zip(r.bin_edges, e.bin_edges):
        _same(a, b)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "bool"])
@pytest.mark.parametrize("N,increasing", [(None, False), (None, True), (0, False), (1, False), (5, True), (2, False)])
def test_vander(dtype, N, increasing):
    x = np.array([0.5, -1.25, 2.0, 0.0]) if dtype.startswith("float") else np.array([1, 0, 2, 3])
    if dtype == "bool":
        x = np.array([True, False, True])
    r = fg.vander(fg.tensor(x, dtype=getattr(fg, dtype)), N=N, increasing=increasing)
    e = torch.vander(torch.tensor(x, dtype=getattr(torch, dtype)), N=N, increasing=increasing)
    _same(r, e, 1e-12 if dtype == "float64" else 1e-6)


@pytest.mark.skipif(fg is torch, reason="torch.vander has no backward (torch raises an in-place error)")
@pytest.mark.parametrize("increasing", [False, True])
def test_vander_grad(increasing):
    # torch's own vander cannot be differentiated; the reference is torch's gradient of the same matrix
    # written as powers
    x = np.array([0.5, -1.25, 2.0, 0.0])
    w = np.linspace(-1.0, 1.0, 20).reshape(4, 5)
    t = fg.tensor(x, requires_grad=True)
    (fg.vander(t, N=5, increasing=increasing) * fg.tensor(w)).sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    cols = [tt ** k for k in range(5)]
    ref = torch.stack(cols if increasing else cols[::-1], 1)
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-12)


def test_vander_errors():
    for fn, kind in ((lambda L: L.vander(L.tensor([[1.0]])), RuntimeError),
                     (lambda L: L.vander(L.tensor([1.0, 2.0]), N=-1), RuntimeError)):
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(kind) as ex:
                fn(lib)
            msgs.append(str(ex.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("idx,shape", [([4, -1, 0, 5], (2, 3)), (5, (2, 3)), (3, 4), ([[1, 7], [11, 2]], (3, 4)),
                                       ([6, -7], (2, 3)), ([0], ()), ([], (2, 0)), ([3, 1], [2, 1, 2])])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_unravel_index(idx, shape, dtype):
    r = fg.unravel_index(fg.tensor(idx, dtype=getattr(fg, dtype)), shape)
    e = torch.unravel_index(torch.tensor(idx, dtype=getattr(torch, dtype)), shape)
    assert isinstance(r, tuple) and len(r) == len(e)
    for a, b in zip(r, e):
        _same(a, b)


def test_unravel_index_errors():
    for fn, kind in ((lambda L: L.unravel_index(L.tensor([1.0]), (2, 3)), TypeError),
                     (lambda L: L.unravel_index(L.tensor([1]), (2, -3)), ValueError),
                     (lambda L: L.unravel_index(L.tensor([1]), (2, 0)), ValueError)):
        msgs = []
        for lib in (fg, torch):
            with pytest.raises(kind) as ex:
                fn(lib)
            msgs.append(str(ex.value).replace("ferrograd.", "torch."))
        assert msgs[0] == msgs[1]
