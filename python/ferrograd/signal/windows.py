"""torch.signal.windows: symmetric (sym=True, the default) or periodic windows, as SciPy defines
them: bartlett, blackman, cosine, exponential, gaussian, general_cosine, general_hamming, hamming,
hann, kaiser, nuttall. Values are computed in float64 on the host and rounded to the dtype asked for."""
import math

from .._lazy import numpy as np

from .._windows import _key, _make, bartlett_values, cosine_sum, kaiser_values

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _window(fname, M, sym, dtype, layout, device, requires_grad, values_of):
    if not isinstance(M, int) or isinstance(M, bool) or M < 0:
        raise ValueError(f"{fname} requires non-negative window length, got M={M}")
    if layout is not None and str(layout) not in ("torch.strided", "strided"):
        raise ValueError(f"{fname} is implemented for strided tensors only, got: {layout}")
    if dtype is not None and _key(dtype) not in ("float32", "float64"):
        raise ValueError(f"{fname} expects float32 or float64 dtypes, got: {dtype}")
    if M == 0:
        return _make(np.zeros(0), dtype, device, requires_grad)
    if M == 1:
        return _make(np.ones(1), dtype, device, requires_grad)
    w = values_of(M) if sym else values_of(M + 1)[:M]
    return _make(w, dtype, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_k (-1)^k a_k cos(2 pi k n / (M-1))."""
    if not hasattr(a, "__iter__"):
        raise TypeError(f"Coefficients must be a list/tuple, got: {type(a).__name__}")
    a = [float(x) for x in a]
    if not a:
        raise ValueError("Coefficients cannot be empty")
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad, lambda m: cosine_sum(m, a))


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype,
                          layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad, bartlett_values)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, layout, device, requires_grad, lambda m: kaiser_values(m, beta))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / M)."""
    def values(m):
        return np.sin(math.pi * (np.arange(m, dtype=np.float64) + 0.5) / m)
    return _window("cosine", M, sym, dtype, layout, device, requires_grad, values)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-(n - (M-1)/2)^2 / (2 std^2))."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    def values(m):
        n = np.arange(m, dtype=np.float64) - (m - 1) / 2.0
        return np.exp(-0.5 * (n / std) ** 2)
    return _window("gaussian", M, sym, dtype, layout, device, requires_grad, values)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-|n - center| / tau); center defaults to the window's middle."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def values(m):
        n = np.arange(m, dtype=np.float64)
        c = (m - 1) / 2.0 if center is None else center
        return np.exp(-np.abs(n - c) / tau)
    return _window("exponential", M, sym, dtype, layout, device, requires_grad, values)
