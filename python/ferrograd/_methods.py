"""torch.Tensor methods (and their torch.* functions) built in Python over the engine's ops: in-place
random fills, in-place forms of out-of-place ops, and small properties/compositions.

No gradient rule lives here. Note [in-place through copy_]: an in-place form `x.op_(...)` computes
`op(x, ...)` out of place and writes it with `x.copy_(result)`, the engine's differentiable in-place
write: it bumps the version counter, returns `self`, refuses a leaf that requires grad, writes through
a non-contiguous view into its base and rebases a view's history (CopySlices), so the gradient is
op's. When autograd records, `op` reads a clone of `x` (the copy_ would otherwise change a value
`op` saved for its backward). The result's grad_fn is CopyBackwards where torch names the op's own.

Random fills draw float64 (or int64) values from ferrograd's global RNG (`manual_seed`) or a
`ferrograd.Generator`-like `generator` (utils/_generator.py) and copy_ them in; values follow the
right distributions but not torch's bit streams.
"""

import builtins
import math
from collections import namedtuple

from . import _C
from . import return_types as _rt
from ._lazy import numpy as np
from ._more_ops import _as_method, _wrap_dim, _host, _from_host
from ._out import scalar_type_name as _tname

Tensor = _C.Tensor

_LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."
_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _gen():
    from .utils import _generator
    return _generator


def _is_float(t):
    return t.dtype in _FLOATS


# ------------------------------------------------------------------ in-place random fills
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


# ------------------------------------------------------------------ in-place forms (Note [in-place through copy_])
def _check_out(self, r, name, cast):
    if tuple(r.shape) != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(r.shape)}")
    if cast and not _C._can_cast(r.dtype, self.dtype):
        raise RuntimeError(f"result type {_tname(r.dtype)} can't be cast to the desired output type {_tname(self.dtype)}")


def _records(self, args, kwargs):
    return _C.is_grad_enabled() and (
        self.requires_grad or builtins.any(isinstance(a, Tensor) and a.requires_grad
                                           for a in (*args, *kwargs.values())))


def _inplace(name, out_of_place, cast=True):
    """The in-place method `name` of an out-of-place function out_of_place(self, *args, **kwargs)."""
    def method(self, *args, **kwargs):
        if self.is_leaf and self.requires_grad and _C.is_grad_enabled():
            raise RuntimeError(_LEAF_MSG)
        src = self
        if _records(self, args, kwargs):
            src = self.clone()
            args = tuple(src if a is self else a for a in args)
        r = out_of_place(src, *args, **kwargs)
        _check_out(self, r, name, cast)
        if not cast and _C.is_grad_enabled():
            # torch gives a comparison's tensor arguments a zero gradient (not None)
            for a in args:
                if isinstance(a, Tensor) and a.requires_grad:
                    r = _C.where(_C.zeros((), dtype=_C.bool, device=a.device), a, r.to(self.dtype))
        return self.copy_(r)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place form of `{name[:-1]}` (written through copy_)."
    return method


# name_ -> cast check (False: the result is written in self's dtype whatever it is, as torch's
# comparison and logical in-place ops do)
_INPLACE = {n: True for n in """
addcmul_ addcdiv_ addmm_ addmv_ addr_ addbmm_ baddbmm_ lerp_ clamp_min_ clamp_max_ copysign_ log10_
exp2_ frac_ deg2rad_ rad2deg_ hypot_ heaviside_
xlogy_ logit_ sinc_ bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_
""".split()}
_INPLACE.update({n: False for n in """
eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_
""".split()})


def _logical_inplace(name):
    """torch's logical in-place ops have no derivative: they write the values and leave the tensor's
    autograd history as it was (even on a leaf that requires grad)."""
    op = getattr(Tensor, name[:-1])

    def method(self, *args):
        r = op(self, *args)
        _check_out(self, r, name, False)
        from .autograd.grad_mode import no_grad
        with no_grad():
            return self.copy_(r)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{name[:-1]}` (values only; the autograd history is kept, as torch's)."
    return method


logical_and_ = _logical_inplace("logical_and_")
logical_or_ = _logical_inplace("logical_or_")
logical_xor_ = _logical_inplace("logical_xor_")
logical_not_ = _logical_inplace("logical_not_")


def float_power_(self, exponent):
    if self.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_tname(self.dtype)} but the operation's "
                           "result requires dtype Double")
    return _inplace("float_power_", Tensor.float_power)(self, exponent)


def _cum_inplace(name):
    def method(self, dim, *, dtype=None):
        return _inplace(name, getattr(Tensor, name[:-1]), cast=False)(self, dim, dtype=dtype)
    method.__name__ = method.__qualname__ = name
    return method


cumsum_ = _cum_inplace("cumsum_")
cumprod_ = _cum_inplace("cumprod_")


# ------------------------------------------------------------------ shape in-place (metadata)
def _restride(self, new, name):
    """Give self the shape/strides of `new` (a view of self's storage) in place, bumping the version."""
    if _C.is_grad_enabled() and self.requires_grad:
        if self.is_leaf:
            raise RuntimeError(_LEAF_MSG)
        raise NotImplementedError(f"ferrograd: {name} on a tensor that requires grad is not supported yet "
                                  f"(use the out-of-place {name[:-1]})")
    # (the engine's set_data starts a fresh version counter: after this op it reads 1, not old + 1)
    self.data = new
    from .autograd.grad_mode import no_grad
    with no_grad():
        self.copy_(self)  # an in-place write of the same values: the version counter moves as torch's does
    return self


def _shape_inplace(name):
    op = getattr(Tensor, name[:-1])

    def method(self, *args, **kwargs):
        if _C.is_grad_enabled() and self.requires_grad and not self.is_leaf:
            # torch records the op (TBackward1, ...): self becomes its result, a view of itself
            new = op(self, *args, **kwargs)
            from .autograd.grad_mode import no_grad
            with no_grad():
                self.copy_(self)  # the version counter moves, as for any in-place op
            self._assume_view(new)
            return self
        return _restride(self, op(self.detach(), *args, **kwargs), name)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place `{name[:-1]}`: self takes the result's shape and strides."
    return method


squeeze_ = _shape_inplace("squeeze_")
unsqueeze_ = _shape_inplace("unsqueeze_")
t_ = _shape_inplace("t_")
transpose_ = _shape_inplace("transpose_")
swapaxes_ = _shape_inplace("swapaxes_")


def resize_(self, *sizes, memory_format=None):
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(sizes)
    if not (n <= self.numel() and self.is_contiguous()) and not self._storage_resizable():
        # a buffer from or handed to NumPy/DLPack stays where it is (Note [Exported storage])
        raise RuntimeError("Trying to resize storage that is not resizable")
    if n <= self.numel() and self.is_contiguous():
        new = self.detach().reshape(-1)[:n].view(sizes)  # the same storage, as torch keeps it
    else:
        flat = _C.zeros(n, dtype=self.dtype, device=self.device)
        k = builtins.min(n, self.numel())
        flat[:k] = self.detach().reshape(-1)[:k]
        new = flat.view(sizes)
    return _restride(self, new, "resize_")


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


# ------------------------------------------------------------------ pointwise compositions
def fmax(input, other):
    # NaN loses: where one side is NaN the other is taken (and gets the gradient); else maximum,
    # whose gradient splits ties evenly as torch's fmax does
    return _C.where(other.isnan(), input, _C.where(input.isnan(), other, input.maximum(other)))


def fmin(input, other):
    return _C.where(other.isnan(), input, _C.where(input.isnan(), other, input.minimum(other)))


def _integral(t, name):
    if t.dtype in _FLOATS:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_tname(t.dtype)}'")


def _host_binary(input, other, name, f):
    _integral(input, name)
    if isinstance(other, Tensor):
        _integral(other, name)
    b = _host(other) if isinstance(other, Tensor) else other
    # NumPy's promotion differs (a 0-d tensor counts there): the result in torch's dtype
    return _from_host(f(_host(input), b), input).to(_C.result_type(input, other))


def gcd(input, other):
    return _host_binary(input, other, "gcd", np.gcd)


def lcm(input, other):
    return _host_binary(input, other, "lcm", np.lcm)


def ldexp(input, other):
    # input * 2**other
    dt = _C.result_type(input, other)
    x = input.to(dt if dt.is_floating_point else _C.float32)
    return x * _C.full((), 2.0, dtype=x.dtype, device=x.device).pow(other)


def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1)."""
    if not _is_float(input):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    _, e = np.frexp(_host(input))
    exponent = _from_host(e.astype(np.int32), input)
    # the mantissa as input / 2**exponent: its gradient is torch's grad / 2**exponent
    return _rt.frexp(input / exponent.to(input.dtype).exp2(), exponent)


_rt.frexp = namedtuple("frexp", ["mantissa", "exponent"])


gcd_ = _inplace("gcd_", gcd)
lcm_ = _inplace("lcm_", lcm)
ldexp_ = _inplace("ldexp_", ldexp)


def msort(input):
    return input.sort(0).values


def hardshrink(input, lambd=0.5):
    from .nn import functional as F
    return F.hardshrink(input, lambd)


def prelu(input, weight):
    from .nn import functional as F
    return F.prelu(input, weight)


def angle(input):
    # a real number's argument: pi below zero, 0 otherwise (NaN stays NaN); zero gradient
    x = input if _is_float(input) else input.to(_C.float32)
    return _C.where(x < 0, math.pi, 0.0).to(x.dtype) + x * 0


# ------------------------------------------------------------------ scatter-type compositions
def _check_embed(view_shape, src):
    if tuple(view_shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view_shape)}")


def _set_into(input, idx, src):
    out = input.clone()
    _check_embed(out[idx].shape, src)
    out[idx] = src  # index_put, differentiable in both
    return out


def select_scatter(input, src, dim, index):
    idx = [builtins.slice(None)] * input.dim()
    idx[_wrap_dim(dim, input.dim())] = index
    return _set_into(input, tuple(idx), src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    idx = [builtins.slice(None)] * input.dim()
    idx[_wrap_dim(dim, input.dim())] = builtins.slice(start, end, step)
    return _set_into(input, tuple(idx), src)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    d1, d2 = _wrap_dim(dim1, input.dim()), _wrap_dim(dim2, input.dim())
    moved = input.movedim((d1, d2), (-2, -1))
    n = builtins.max(0, builtins.min(moved.shape[-2] - builtins.max(-offset, 0), moved.shape[-1] - builtins.max(offset, 0)))
    rows = _C.arange(n, device=input.device) + builtins.max(-offset, 0)
    cols = _C.arange(n, device=input.device) + builtins.max(offset, 0)
    out = _set_into(moved, (Ellipsis, rows, cols), src)
    return out.movedim((-2, -1), (d1, d2))


def _scatter_reduce_impl(input, dim, index, src, reduce, include_self, op):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _wrap_dim(dim, input.dim())
    if src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return input.clone()
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(builtins.slice(0, s) for s in index.shape)]
    # the values, on the host: every src element reduced into its destination (a flat index into input)
    x, s = _host(input), _host(src).reshape(-1)
    grids = list(np.indices(tuple(index.shape)))
    grids[d] = _host(index)
    flat = np.ravel_multi_index(tuple(grids), x.shape, mode="raise").reshape(-1)
    kind = x.dtype.kind
    big = np.inf if kind == "f" else np.iinfo(x.dtype).max
    ident = {"sum": 0, "mean": 0, "prod": 1, "amax": -big, "amin": big}[reduce]
    touched = np.zeros(x.size, dtype=bool)
    touched[flat] = True
    keep = np.ones(x.size, dtype=bool) if include_self else ~touched  # input's own value takes part
    acc = x.reshape(-1).astype(np.float64 if kind == "f" else np.int64)
    acc[~keep] = ident
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}[reduce]
    ufunc.at(acc, flat, s)
    count = keep.astype(np.int64)
    np.add.at(count, flat, 1)
    count = np.maximum(count, 1)
    if reduce == "mean":
        acc = acc / count if kind == "f" else np.floor_divide(acc, count)
    value = _from_host(acc.reshape(x.shape).astype(x.dtype), input)
    if not (_C.is_grad_enabled() and (input.requires_grad or src.requires_grad)):
        return value
    # Gradient: out = value + (c - c.detach()) with c linear in input and src, its coefficients torch's
    # (mean: 1/count; amax/amin: split evenly among the elements equal to the result; prod: the product
    # of the other factors). The coefficients are constants, so there is no second-order gradient.
    if reduce in ("sum", "mean"):
        ci, cs = keep / count, 1.0 / count[flat]
        if reduce == "sum":
            ci, cs = keep.astype(np.float64), np.ones(flat.size)
    elif reduce in ("amax", "amin"):
        hit_i = keep & (x.reshape(-1) == acc)
        hit_s = s == acc[flat]
        hits = (x.reshape(-1) == acc).astype(np.int64)  # torch counts an excluded self that equals the result
        np.add.at(hits, flat, hit_s.astype(np.int64))
        hits = np.maximum(hits, 1)
        ci, cs = hit_i / hits, hit_s / hits[flat]
    else:
        xi = np.where(keep, x.reshape(-1), 1).astype(np.float64)
        zeros = (xi == 0).astype(np.int64)
        np.add.at(zeros, flat, (s == 0).astype(np.int64))
        nonzero_prod = np.where(xi == 0, 1.0, xi)
        np.multiply.at(nonzero_prod, flat, np.where(s == 0, 1.0, s))

        def others(v, at):  # the product of the other factors of v's group
            z, pr = zeros[at], nonzero_prod[at]
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(v == 0, np.where(z == 1, pr, 0.0), np.where(z == 0, pr / np.where(v == 0, 1, v), 0.0))
        ci, cs = others(xi, np.arange(x.size)) * keep, others(s.astype(np.float64), flat)
    cin = input * _from_host(ci.reshape(x.shape).astype(x.dtype), input)
    csrc = (src * _from_host(cs.reshape(tuple(index.shape)).astype(x.dtype), input)).reshape(-1)
    spread = _C.zeros(x.size, dtype=input.dtype, device=input.device).index_add(0, _from_host(flat, input), csrc)
    c = cin + spread.reshape(x.shape)
    return value + (c - c.detach())


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    return _scatter_reduce_impl(input, dim, index, src, reduce, include_self, "scatter_reduce")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = _wrap_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    shape = [1] * builtins.max(source.dim(), 1)
    shape[d] = -1
    full = index.reshape(shape).expand(tuple(source.shape)) if source.dim() else index.reshape(())
    return _scatter_reduce_impl(input, d, full, source, reduce, include_self, "index_reduce")


scatter_reduce_ = _inplace("scatter_reduce_", scatter_reduce)
index_reduce_ = _inplace("index_reduce_", index_reduce)


def fill_diagonal_(self, fill_value, wrap=False):
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and builtins.len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    shape = tuple(self.shape)
    mask = np.zeros(math.prod(shape), dtype=bool)
    if self.dim() == 2:
        step = shape[1] + 1
        stop = mask.size if wrap else builtins.min(shape) * shape[1]
        mask[0:stop:step] = True
    else:
        n = shape[0]
        mask[0:n ** self.dim():sum(n ** k for k in range(self.dim()))] = True
    return self.masked_fill_(_from_host(mask.reshape(shape), self), fill_value)


# ------------------------------------------------------------------ statistics
def cov(input, *, correction=1, fweights=None, aweights=None):
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    x = x if _is_float(x) else x.to(_C.float32)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm = n - correction
        xm = x - avg.unsqueeze(1)
        c = xm.matmul(xm.t()) / builtins.max(norm, 0)
    else:
        w = w.to(x.dtype)
        wsum = w.sum()
        avg = (x * w).sum(1) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights.to(x.dtype)).sum() / wsum
        xm = x - avg.unsqueeze(1)
        c = (xm * w).matmul(xm.t()) / norm.clamp_min(0)
    return c.squeeze() if input.dim() < 2 else c


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal().sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    return c.clamp(-1, 1)


# ------------------------------------------------------------------ shape helpers
def ravel(input):
    return input.reshape(-1)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """An uninitialised tensor with the given strides: dense strides in any dimension order (what
    copying another tensor's geometry asks for); other strides need as_strided, which ferrograd lacks."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides ({len(stride)})")
    order = sorted(range(len(size)), key=lambda i: (-stride[i], -size[i]))  # outermost first
    out = self.new_empty(tuple(size[i] for i in order), dtype=dtype, device=device)
    out = out.permute(tuple(order.index(i) for i in range(len(size)))) if size else out
    if builtins.any(n > 1 and a != b for n, a, b in zip(size, out.stride(), stride)):
        raise NotImplementedError(f"ferrograd: new_empty_strided with strides {stride} for size {size} needs "
                                  "as_strided, which is not supported yet (dense strides are)")
    return out.requires_grad_(requires_grad) if requires_grad else out


def narrow_copy(input, dim, start, length):
    return input.narrow(dim, start, length).clone()


def split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return input.split(list(split_sizes), dim)


def unsafe_chunk(input, chunks, dim=0):
    return input.chunk(chunks, dim)


def sum_to_size(self, *size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    out = self
    if lead:
        out = out.sum(tuple(range(lead)))
    dims = tuple(i for i, s in enumerate(size) if s == 1 and out.shape[i] != 1)
    if dims:
        out = out.sum(dims, keepdim=True)
    return out


def nonzero_static(input, *, size, fill_value=-1):
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size]
    pad = _C.full((size - k, input.dim()), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([nz, pad])


def is_nonzero(input):
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    return input.dtype not in (_C.uint8, _C.bool)


def is_complex(input):
    return False


def is_conj(input):
    return False


def is_neg(input):
    return False


def conj(input):
    return input


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def conj_physical(input):
    return input


def adjoint(input):
    if input.dim() == 0:
        return input
    if input.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return input.transpose(-2, -1)


def real(input):
    return input


def imag(input):
    raise TypeError("imag is not implemented for tensors with non-complex dtypes.")


def apply_(self, callable):
    """Replace every element x by callable(x) (CPU only, slow: one Python call per element)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    vals = [callable(v) for v in self.detach().reshape(-1).tolist()]
    return _map_write(self, vals, "apply_")


def map_(self, tensor, callable):
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    b = tensor.expand(tuple(self.shape)).reshape(-1).tolist()
    vals = [callable(a, c) for a, c in zip(self.detach().reshape(-1).tolist(), b)]
    return _map_write(self, vals, "map_")


def map2_(self, x, y, callable):
    if self.device.type != "cpu":
        raise TypeError("map2_ is only implemented on CPU tensors")
    bx = x.expand(tuple(self.shape)).reshape(-1).tolist()
    by = y.expand(tuple(self.shape)).reshape(-1).tolist()
    vals = [callable(a, b, c) for a, b, c in zip(self.detach().reshape(-1).tolist(), bx, by)]
    return _map_write(self, vals, "map2_")


def _map_write(self, vals, name):
    from ._creation import tensor as _tensor
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    return self.copy_(_tensor(vals, dtype=self.dtype).reshape(tuple(self.shape)))


def module_load(self, other, assign=False):
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def dim_order(self, *, ambiguity_check=False):
    st = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda i: -st[i]))


def get_device(self):
    return -1 if self.device.type == "cpu" else self.device.index


def is_pinned(self, device=None):
    return False


def is_shared(self):
    return False


# ------------------------------------------------------------------ layout
class layout:
    """A tensor layout. ferrograd has one, strided (dense), printed as torch prints it."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


strided = layout("strided")


# ------------------------------------------------------------------ install
_PROPERTIES = {
    "is_cpu": lambda self: self.device.type == "cpu",
    "nbytes": lambda self: self.numel() * self.element_size(),
    "itemsize": lambda self: self.element_size(),
    "layout": lambda self: strided,
    "H": lambda self: _H(self),
    "mH": lambda self: _mH(self),
    "is_sparse": lambda self: False,
    "is_quantized": lambda self: False,
    "is_meta": lambda self: False,
    "is_nested": lambda self: False,
    "is_mkldnn": lambda self: False,
    "is_sparse_csr": lambda self: False,
    "real": real,
    "imag": imag,
}


def _H(self):
    if self.dim() == 0:
        return self
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""))
    return self.t()


def _mH(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


# torch.* functions (each also a Tensor method unless listed in _NOT_METHODS)
_FUNCTIONS = """
bernoulli multinomial fmax fmin gcd gcd_ lcm lcm_ ldexp ldexp_ frexp msort hardshrink prelu angle scatter_reduce
index_reduce select_scatter slice_scatter diagonal_scatter cov corrcoef ravel narrow_copy split_with_sizes
unsafe_split unsafe_split_with_sizes unsafe_chunk nonzero_static is_nonzero is_same_size is_signed is_complex
is_conj is_neg conj resolve_conj resolve_neg conj_physical adjoint real imag
""".split()
_NOT_METHODS = ("real", "imag")
_METHOD_ONLY = """
uniform_ normal_ log_normal_ exponential_ geometric_ cauchy_ bernoulli_ random_ float_power_ cumsum_ cumprod_
squeeze_ unsqueeze_ t_ transpose_ swapaxes_ resize_ resize_as_ scatter_reduce_ index_reduce_ fill_diagonal_
sum_to_size new_empty_strided apply_ map_ map2_ logical_and_ logical_or_ logical_xor_ logical_not_ module_load dim_order get_device is_pinned is_shared
""".split()

__all__ = list(_FUNCTIONS) + ["strided", "layout"]


def _install():
    g = globals()
    for n in _FUNCTIONS:
        if n not in _NOT_METHODS and not hasattr(Tensor, n):
            setattr(Tensor, n, _as_method(g[n]))
    for n in _METHOD_ONLY:
        setattr(Tensor, n, g[n])
    for n, cast in _INPLACE.items():
        if n not in g and hasattr(Tensor, n[:-1]) and not hasattr(Tensor, n):
            setattr(Tensor, n, _inplace(n, getattr(Tensor, n[:-1]), cast))
    for n, f in _PROPERTIES.items():
        setattr(Tensor, n, property(f))


_install()
