"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits, cached
properties, summing over event dimensions, and the seeded NumPy generator behind the samplers that
ferrograd has no native kernel for (gamma, Poisson, binomial)."""
import numbers

import ferrograd as _fg

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def broadcast_all(*values):
    """Broadcast tensors and Python numbers together; numbers become tensors of the first tensor's
    dtype and device (of the default dtype when every value is a number)."""
    for v in values:
        if not isinstance(v, (_fg.Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                             "implementing __torch_function__.")
    like = next((v for v in values if isinstance(v, _fg.Tensor)), None)
    if like is None:
        tensors = [_fg.tensor(float(v), dtype=_fg.get_default_dtype()) for v in values]
    else:
        tensors = [v if isinstance(v, _fg.Tensor) else _fg.tensor(v, dtype=like.dtype, device=like.device)
                   for v in values]
    return _fg.broadcast_tensors(*tensors)


def _standard_normal(shape, dtype, device):
    return _fg.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sum out the `dim` rightmost dimensions of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return _fg.sigmoid(logits)
    return _fg.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Keep probabilities strictly inside (0, 1), by the dtype's machine epsilon."""
    eps = _fg.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    p = clamp_probs(probs)
    if is_binary:
        return _fg.log(p) - _fg.log1p(-p)
    return _fg.log(p)


class lazy_property:
    """A property computed on first access and then stored on the instance (so it becomes an ordinary
    attribute). Computed with gradients enabled, so the cached value keeps its graph."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with _fg.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy_property looks like on the class (so documentation tools see a property)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)
        lazy_property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag=0):
    n = mat.shape[-1]
    rows, cols = [], []
    for i in range(n):
        for j in range(n):
            if j - i <= diag and (j <= i + diag):
                rows.append(i)
                cols.append(j)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    m = vec.shape[-1]
    # m = n(n+1)/2 + diag n  (diag <= 0)
    n = int(round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2))
    idx = [(i, j) for i in range(n) for j in range(n) if j - i <= diag]
    if len(idx) != m:
        raise ValueError(f"vec_to_tril_matrix: {m} entries do not fill a triangular matrix")
    out = _fg.zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    flat = _fg.tensor([i * n + j for i, j in idx], device=vec.device).expand(tuple(vec.shape[:-1]) + (m,))
    return out.scatter(-1, flat, vec).reshape(tuple(vec.shape[:-1]) + (n, n))


def _numpy_rng():
    """A NumPy generator seeded from ferrograd's global generator, so `manual_seed` makes the samplers
    written with NumPy (gamma, Poisson, binomial) reproducible."""
    import numpy as np

    seed = int(_fg.randint(0, 2**62, (1,)).item())
    return np.random.default_rng(seed)


def _from_numpy(array, like):
    return _fg.from_numpy(array).to(dtype=like.dtype, device=like.device)


def _to_numpy(t):
    return t.detach().cpu().double().contiguous().numpy()


def _F():
    """ferrograd.nn.functional, imported on first use (importing ferrograd.nn costs about a second, and
    `import ferrograd.distributions` should not pay it)."""
    from ferrograd.nn import functional

    return functional
