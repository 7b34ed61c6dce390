"""Index arithmetic and matrices built from a vector: torch.unravel_index (flat indices to
coordinates), torch.triu_indices / tril_indices (the coordinates of a triangle) and torch.vander (the
Vandermonde matrix, differentiable in x)."""
from ._lazy import numpy as np

from . import _C

Tensor = _C.Tensor


def unravel_index(indices, shape):
    """The coordinates, one int64 tensor per dimension of shape, of the flat indices into a tensor of
    that shape (indices wrap around modulo each dimension, as torch's)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {type(indices).__name__}")
    if indices.is_floating_point() or indices.dtype == _C.bool:
        name = str(indices.dtype).rsplit(".", 1)[-1]
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{name}")
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not all(isinstance(s, int) and not isinstance(s, bool)
                                                       for s in shape):
        raise TypeError("expected 'shape' to be int or sequence of ints, but got "
                        f"{type(shape).__name__}")
    shape = tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices.numel():
        raise ValueError(f"'shape' cannot have zero dimensions when 'indices' is non-empty, but got {shape}")
    rest = indices.to(_C.int64)
    coords = []
    for s in reversed(shape):
        coords.append(rest.remainder(s) if s else rest.clone())
        rest = rest.div(s, rounding_mode="floor") if s else rest
    return tuple(reversed(coords))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D x: columns x**(N-1), ..., x, 1 (or increasing powers)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"vander(): argument 'x' (position 1) must be Tensor, not {type(x).__name__}")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"vander(): argument 'N' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _C._promote_types(x.dtype, _C.int64)
    xs = x.to(dt)
    m = x.shape[0]
    if n == 0:
        return _C.zeros((m, 0), dtype=dt, device=x.device)
    ones = _C.ones((m, 1), dtype=dt, device=x.device)
    if n == 1:
        out = ones
    else:
        powers = xs.unsqueeze(1).expand(m, n - 1).cumprod(1)
        out = _C.cat([ones, powers], 1)
    return out if increasing else out.flip(1)


def _tri_indices(row, col, offset, dtype, device, upper):
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    from ._creation import tensor as _tensor
    return _tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype=dtype or _C.int64, device=device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, True)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(row, col, offset, dtype, device, False)


__all__ = ["unravel_index", "vander", "triu_indices", "tril_indices"]
