"""Random sampling into tensors: the in-place random fills (uniform_, normal_, log_normal_,
exponential_, geometric_, cauchy_, bernoulli_, random_), bernoulli and multinomial. (The public
`torch.random` module, manual_seed and the RNG state, is random.py.)

Random fills draw float64 (or int64) values from ferrograd's global RNG (`manual_seed`) or a
`ferrograd.Generator`-like `generator` (utils/_generator.py) and copy_ them in; values follow the
right distributions but not torch's bit streams.
"""

import math

from ._lazy import numpy as np

from . import _C
from ._op_utils import _FLOATS, Tensor, _from_host, _host, _is_float
from ._out import scalar_type_name as _tname


def _gen():
    from .utils import _generator
    return _generator


def _write(self, values):
    """copy_ fresh (grad-free) values into self: see Note [in-place through copy_]."""
    if self.numel() == 0:
        return self.copy_(self)
    return self.copy_(values)


def _uniform64(self, generator):
    return _gen().uniform(tuple(self.shape), _C.float64, generator)


def _need_float(self, kernel):
    if not _is_float(self):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_tname(self.dtype)}'")


def _need_continuous(self, name):
    if not _is_float(self):
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_tname(self.dtype)}")


def uniform_(self, a=0, b=1, *, generator=None):
    _need_float(self, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    return _write(self, _uniform64(self, generator) * (b - a) + a)


def normal_(self, mean=0, std=1, *, generator=None):
    _need_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _write(self, _gen().normal(tuple(self.shape), _C.float64, generator) * std + mean)


def log_normal_(self, mean=1, std=2, *, generator=None):
    _need_continuous(self, "log_normal_")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _write(self, (_gen().normal(tuple(self.shape), _C.float64, generator) * std + mean).exp())


def exponential_(self, lambd=1, *, generator=None):
    _need_continuous(self, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    # inverse CDF: -log(1 - U) / lambda, with 1 - U in (0, 1]
    return _write(self, (1 - _uniform64(self, generator)).log() / -lambd)


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    # trials to the first success: 1 + floor(log V / log(1 - p)), V = 1 - U in (0, 1]
    return _write(self, ((1 - _uniform64(self, generator)).log() / math.log1p(-p)).floor() + 1)


def cauchy_(self, median=0, sigma=1, *, generator=None):
    _need_continuous(self, "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    # inverse CDF: median + sigma * tan(pi * (U - 1/2))
    return _write(self, ((_uniform64(self, generator) - 0.5) * math.pi).tan() * sigma + median)


def _check_p_tensor(p):
    if p.numel() and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
                           "message be improved?  If so, please report an enhancement request to PyTorch.)")


def bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        _check_p_tensor(p)
        p = p.detach().to(_C.float64).cpu()
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _write(self, _uniform64(self, generator) < p)


def bernoulli(input, p=None, *, generator=None):
    """Draws 0/1 with probability `p` (default: the tensor's own values), in the input's dtype."""
    if not isinstance(input, Tensor):  # a tensor-like (vmap's batched tensor) takes the call
        from .overrides import dispatch_if_overridden

        result = dispatch_if_overridden(bernoulli, (input,) if p is None else (input, p),
                                        {} if generator is None else {"generator": generator})
        if result is not NotImplemented:
            return result
    if p is None:
        _check_p_tensor(input)
        probs = input.detach().to(_C.float64).cpu()
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    else:
        probs = p
    draw = _gen().uniform(tuple(input.shape), _C.float64, generator) < probs
    return draw.to(input.dtype).to(input.device)


def _random_bounds(dtype):
    if dtype == _C.bool:
        return 0, 2
    if dtype in _FLOATS:
        digits = {_C.float16: 11, _C.bfloat16: 8, _C.float32: 24, _C.float64: 53}[dtype]
        return 0, (1 << digits) + 1
    from ._finfo import iinfo
    return 0, iinfo(dtype).max + 1


def random_(self, *args, generator=None, **kwargs):
    """random_(), random_(to), random_(from, to): integers uniform on [from, to)."""
    names = ("from", "to")
    vals = dict(zip(names, args))
    vals.update(kwargs)
    lo, hi = _random_bounds(self.dtype)
    if len(args) == 1 and not kwargs:  # random_(to)
        lo, hi = 0, vals.pop("from")
    else:
        lo = vals.get("from", lo)
        hi = hi if vals.get("to") is None else vals["to"]
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    rng = _gen()._numpy_rng(generator, "random_")
    a = rng.integers(lo, hi - 1, size=tuple(self.shape), dtype=np.int64, endpoint=True)
    return _write(self, _C.from_numpy(a))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the rows of `input` (unnormalised probabilities)."""
    if not _is_float(input):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {_tname(input.dtype)}")
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = input.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = _host(input).astype(np.float64).reshape(-1, n)
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _gen()._numpy_rng(generator, "multinomial")
    if replacement:
        cdf = np.cumsum(p, -1)
        u = rng.random((p.shape[0], num_samples)) * cdf[:, -1:]
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)]).clip(0, n - 1)
    else:
        # Efraimidis-Spirakis: the k largest keys log(U) / p are a weighted draw without replacement
        with np.errstate(divide="ignore"):
            keys = np.log(rng.random(p.shape)) / p
        keys[p == 0] = -np.inf
        out = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64)
    return _from_host(out if input.dim() == 2 else out[0], input)


# ------------------------------------------------------------------ exports
__all__ = """
bernoulli multinomial
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
bernoulli multinomial
""".split()
TENSOR_ATTRIBUTES = {n: globals()[n] for n in """
uniform_ normal_ log_normal_ exponential_ geometric_ cauchy_ bernoulli_ random_
""".split()}
