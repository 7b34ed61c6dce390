"""Window functions, torch.hann_window / hamming_window / blackman_window / bartlett_window /
kaiser_window (periodic by default, as torch), and the shared helpers of torch.signal.windows.

A window is a creation op: its values are computed once in float64 on the host, then rounded to the
requested floating dtype and placed on the requested device (a leaf, requires_grad as asked).
"""
import math

from ._lazy import numpy as np

from . import _C
from ._argcheck import check_arg

_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _key(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _make(values, dtype, device, requires_grad):
    from ._creation import tensor
    dtype = dtype if dtype is not None else _C.float32
    t = tensor(np.ascontiguousarray(values, dtype=np.float64), dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _options(dtype, device):
    dev = str(device) if device is not None else "cpu"
    return (f"TensorOptions(dtype={_ctype(dtype)}, device={dev}, layout=Strided (default), "
            "requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")


def _ctype(dtype):
    from ._out import _CTYPE
    k = _key(dtype)
    return _CTYPE.get(k, k)


def _check(fname, window_length, dtype, device, layout):
    window_length = check_arg("int", window_length, fname, "window_length", 1)
    if layout is not None and str(layout) not in ("torch.strided", "strided"):
        raise RuntimeError(f"{fname} is not implemented for sparse types, got: {layout}")
    if dtype is not None and _key(dtype) not in _FLOATS:
        raise RuntimeError(f"{fname} expects floating point dtypes, got: {_options(dtype, device)}")
    if window_length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got window_length={window_length}")
    return window_length


def cosine_sum(n_points, coeffs):
    """sum_k (-1)^k a_k cos(2 pi k n / (N-1)) at n = 0..N-1 (a symmetric cosine-sum window)."""
    n = np.arange(n_points, dtype=np.float64)
    w = np.zeros(n_points)
    for k, a in enumerate(coeffs):
        w += (-1) ** k * a * np.cos(2.0 * math.pi * k * n / (n_points - 1))
    return w


def bartlett_values(n_points):
    n = np.arange(n_points, dtype=np.float64)
    return 1.0 - np.abs(2.0 * n / (n_points - 1) - 1.0)


def kaiser_values(n_points, beta):
    n = np.arange(n_points, dtype=np.float64)
    half = (n_points - 1) / 2.0
    r = np.clip(1.0 - ((n - half) / half) ** 2, 0.0, None)
    return np.i0(beta * np.sqrt(r)) / np.i0(beta)


def _window(fname, values_of, window_length, periodic, dtype, layout, device, requires_grad):
    n = _check(fname, window_length, dtype, device, layout)
    periodic = check_arg("bool", periodic, fname, "periodic", 2)
    if n == 0:
        return _make(np.zeros(0), dtype, device, requires_grad)
    if n == 1:
        return _make(np.ones(1), dtype, device, requires_grad)
    w = values_of(n + 1)[:n] if periodic else values_of(n)
    return _make(w, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """0.5 - 0.5 cos(2 pi n / (N-1)); periodic: the first N points of the N+1 window."""
    return _window("hann_window", lambda m: cosine_sum(m, (0.5, 0.5)), window_length, periodic, dtype, layout,
                   device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """alpha - beta cos(2 pi n / (N-1))."""
    alpha = check_arg("float", alpha, "hamming_window", "alpha", 3)
    beta = check_arg("float", beta, "hamming_window", "beta", 4)
    return _window("hamming_window", lambda m: cosine_sum(m, (alpha, beta)), window_length, periodic, dtype,
                   layout, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """0.42 - 0.5 cos(2 pi n / (N-1)) + 0.08 cos(4 pi n / (N-1))."""
    return _window("blackman_window", lambda m: cosine_sum(m, (0.42, 0.5, 0.08)), window_length, periodic, dtype,
                   layout, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """The triangular window 1 - |2n / (N-1) - 1|."""
    return _window("bartlett_window", bartlett_values, window_length, periodic, dtype, layout, device,
                   requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """I0(beta sqrt(1 - ((n - (N-1)/2) / ((N-1)/2))^2)) / I0(beta)."""
    beta = check_arg("float", beta, "kaiser_window", "beta", 3)
    return _window("kaiser_window", lambda m: kaiser_values(m, beta), window_length, periodic, dtype, layout,
                   device, requires_grad)


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
