"""Window functions against torch: torch.*_window (periodic / symmetric, dtype, requires_grad,
lengths 0, 1, even, odd, errors) and torch.signal.windows."""
import numpy as np
import pytest
import torch

from conftest import fg


def _close(r, e):
    assert isinstance(r, fg.Tensor)
    assert str(r.dtype).rsplit(".", 1)[-1] == str(e.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(e.shape)
    tol = 1e-12 if e.dtype == torch.float64 else (2e-3 if e.dtype in (torch.float16, torch.bfloat16) else 1e-6)
    np.testing.assert_allclose(r.detach().float().numpy(), e.detach().float().numpy(), rtol=tol, atol=tol)


TOP = [("hann_window", {}), ("hamming_window", {}), ("hamming_window", {"alpha": 0.6, "beta": 0.3}),
       ("blackman_window", {}), ("bartlett_window", {}), ("kaiser_window", {}), ("kaiser_window", {"beta": 3.5})]


@pytest.mark.parametrize("name,kw", TOP)
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_top_level(name, kw, n, periodic):
    for dtype in ("float32", "float64"):
        e = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype), **kw)
        r = getattr(fg, name)(n, periodic, dtype=getattr(fg, dtype), **kw)
        _close(r, e)
    _close(getattr(fg, name)(n), getattr(torch, name)(n))


def test_top_level_options():
    r, e = fg.hann_window(6, requires_grad=True), torch.hann_window(6, requires_grad=True)
    assert r.requires_grad and r.is_leaf and e.requires_grad
    _close(r, e)
    _close(fg.hann_window(7, dtype=fg.float16), torch.hann_window(7, dtype=torch.float16))
    _close(fg.kaiser_window(7, False, 5.0, device="cpu"), torch.kaiser_window(7, False, 5.0, device="cpu"))
    assert fg.hann_window(4, device="cpu").device.type == "cpu"


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_top_level_errors(name):
    for args, kw, kind in (((-1,), {}, RuntimeError), ((3,), {"dtype": "int64"}, RuntimeError),
                           ((3.0,), {}, TypeError)):
        msgs = []
        for lib in (fg, torch):
            k = {"dtype": getattr(lib, kw["dtype"])} if kw else {}
            with pytest.raises(kind) as ex:
                getattr(lib, name)(*args, **k)
            msgs.append(str(ex.value))
        assert msgs[0] == msgs[1]


SIG = [("hann", {}), ("hamming", {}), ("blackman", {}), ("nuttall", {}), ("bartlett", {}), ("cosine", {}),
       ("kaiser", {}), ("kaiser", {"beta": 2.0}), ("gaussian", {}), ("gaussian", {"std": 2.5}),
       ("exponential", {}), ("exponential", {"tau": 3.0}), ("general_hamming", {"alpha": 0.7}),
       ("general_cosine", {"a": [0.5, 0.3, 0.2]})]


@pytest.mark.parametrize("name,kw", SIG)
@pytest.mark.parametrize("n", [0, 1, 2, 6, 9])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows(name, kw, n, sym):
    for dtype in ("float32", "float64"):
        e = getattr(torch.signal.windows, name)(n, sym=sym, dtype=getattr(torch, dtype), **kw)
        r = getattr(fg.signal.windows, name)(n, sym=sym, dtype=getattr(fg, dtype), **kw)
        _close(r, e)


def test_signal_exponential_center():
    _close(fg.signal.windows.exponential(7, center=2.0, sym=False),
           torch.signal.windows.exponential(7, center=2.0, sym=False))


def test_signal_errors():
    cases = [("hann", (-1,), {}), ("hann", (3,), {"dtype": "int64"}), ("gaussian", (4,), {"std": -1.0}),
             ("exponential", (4,), {"center": 1.0}), ("kaiser", (4,), {"beta": -1.0}),
             ("bartlett", (-2,), {})]
    for name, args, kw in cases:
        for lib in (fg, torch):
            k = dict(kw)
            if "dtype" in k:
                k["dtype"] = getattr(lib, k["dtype"])
            with pytest.raises(ValueError):
                getattr(lib.signal.windows, name)(*args, **k)
