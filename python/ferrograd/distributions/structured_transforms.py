"""Transforms built from other objects: CatTransform and StackTransform (a transform per slice of one
dimension), CorrCholeskyTransform (unconstrained vectors <-> Cholesky factors of correlation matrices) and
CumulativeDistributionTransform (a distribution's CDF as a map onto the unit interval), as the classes of
the same names in torch.distributions.transforms. Re-exported by transforms.py."""
import math

import ferrograd as _fg

from . import constraints
from .transforms import Transform
from .utils import _F, tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "CorrCholeskyTransform", "CumulativeDistributionTransform", "StackTransform"]


def _check_dim(dim, x):
    if not -x.dim() <= dim < x.dim():
        raise AssertionError(f"Dimension out of range (expected to be in range of [{-x.dim()}, {x.dim() - 1}], "
                         f"but got {dim})")


class CatTransform(Transform):
    """Applies tseq[i] to the i-th piece of `dim` (pieces of the given lengths, 1 each by default), like
    torch.cat of the transformed pieces."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform expects a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = [1] * len(tseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: lengths and transforms must have the same length")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, value):
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield t, value.narrow(self.dim, start, n)
            start += n

    def _apply(self, x, inverse):
        _check_dim(self.dim, x)
        if x.size(self.dim) != self.length:
            raise ValueError(f"CatTransform: dimension {self.dim} has size {x.size(self.dim)}, the lengths sum "
                             f"to {self.length}")
        return _fg.cat([t.inv(piece) if inverse else t(piece) for t, piece in self._pieces(x)], self.dim)

    def _call(self, x):
        return self._apply(x, False)

    def _inverse(self, y):
        return self._apply(y, True)

    def log_abs_det_jacobian(self, x, y):
        _check_dim(self.dim, x)
        terms = []
        for (t, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            term = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                term = term.reshape(tuple(term.shape[: term.dim() - (self.event_dim - t.event_dim)]) + (-1,)).sum(-1)
            terms.append(term)
        # where `dim` is a batch dimension the pieces are concatenated, else (an event dimension) summed
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:
            return _fg.cat(terms, dim)
        return sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies tseq[i] to x.select(dim, i) and stacks the results along `dim`."""

    def __init__(self, tseq, dim=0, cache_size=0):
        tseq = list(tseq)
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform expects a sequence of Transforms")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, value):
        _check_dim(self.dim, value)
        if value.size(self.dim) != len(self.transforms):
            raise ValueError(f"StackTransform: dimension {self.dim} has size {value.size(self.dim)}, expected "
                             f"{len(self.transforms)} (one slice per transform)")
        return [value.select(self.dim, i) for i in range(len(self.transforms))]

    def _call(self, x):
        return _fg.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        return _fg.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))], self.dim)

    def log_abs_det_jacobian(self, x, y):
        xs, ys = self._slices(x), self._slices(y)
        return _fg.stack([t.log_abs_det_jacobian(a, b) for t, a, b in zip(self.transforms, xs, ys)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CorrCholeskyTransform(Transform):
    """Maps a vector of D(D-1)/2 reals to the lower Cholesky factor of a D x D correlation matrix: tanh
    gives each entry's partial correlation in (-1, 1), and each row is completed by stick breaking so that
    it has unit norm and a positive diagonal."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        r = vec_to_tril_matrix(_fg.tanh(x), diag=-1)
        eye = _fg.eye(r.shape[-1], dtype=x.dtype, device=x.device)
        # entry (i, j) is r_ij times the length left in row i after columns < j
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        ones = _fg.ones(tuple(remaining.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        scale = _fg.cat([ones, remaining[..., :-1]], -1)
        return (r + eye) * scale

    def _inverse(self, y):
        left = 1 - (y * y).cumsum(-1)
        ones = _fg.ones(tuple(left.shape[:-1]) + (1,), dtype=y.dtype, device=y.device)
        left_before = _fg.cat([ones, left[..., :-1]], -1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_before, diag=-1).sqrt()
        return 0.5 * (_fg.log1p(t) - _fg.log1p(-t))

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        left = 1 - (y * y).cumsum(-1)
        stick = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x))
        tanh_part = -2 * (x + _F().softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh_part

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)



class CumulativeDistributionTransform(Transform):
    """x -> distribution.cdf(x), onto the unit interval; its log-Jacobian is the log-density."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return type(self)(self.distribution, cache_size=cache_size)
