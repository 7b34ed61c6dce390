"""Creation functions that take Python data (nested lists, NumPy arrays, tensors)."""

import functools
import warnings

from ._lazy import numpy as np

from . import _C, _transform_levels
from ._argcheck import check_arg, invalid_combination, overload_error, overloads, parse_args, tensor_args

# NumPy dtypes a tensor keeps (others of the kind become the kind's default)
_NUMPY_KEPT = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
# torch refuses values out of an integer dtype's range in tensor() (unsigned: integers down to -max wrap)
_INT_RANGE = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767), "int32": (-2 ** 31, 2 ** 31 - 1)}
_NUMPY_KIND = {"f": "float32", "i": "int64", "u": "int64", "b": "bool"}
_SEQUENCES = (list, tuple)
_RANK = {"bool": 0, "int64": 1, "float32": 2, "float64": 3}  # torch's promotion order among these


def _dtype_name(dt):
    return None if dt is None else repr(dt).split(".")[-1]


def _type_name(obj):
    t = type(obj)
    return f"numpy.{t.__name__}" if t.__module__ == "numpy" else t.__name__


def _promote(a, b):
    if a in _RANK and b in _RANK:
        return a if _RANK[a] >= _RANK[b] else b
    za, zb = _C.zeros((), dtype=getattr(_C, a)), _C.zeros((), dtype=getattr(_C, b))
    return _dtype_name((za + zb).dtype)


def _infer(obj):
    """torch's dtype inference for Python data: floats → float32 (the default dtype), ints → int64,
    bools → bool, tensors and NumPy values their own; a sequence promotes its elements' dtypes."""
    if isinstance(obj, float):
        return _dtype_name(_C._get_default_dtype())
    if isinstance(obj, bool):
        return "bool"
    if isinstance(obj, int):
        return "int64"
    if isinstance(obj, _C.Tensor):
        return _dtype_name(obj.dtype)
    if isinstance(obj, (str, bytes, complex)):
        raise TypeError(f"new(): invalid data type '{_type_name(obj)}'")
    if isinstance(obj, (np.ndarray, np.generic)):
        return _numpy_dtype(np.asarray(obj))
    if isinstance(obj, _SEQUENCES):
        dt = None
        for v in obj:
            d = _infer(v)
            dt = d if dt is None else _promote(dt, d)
        return dt or _dtype_name(_C._get_default_dtype())
    raise RuntimeError(f"Could not infer dtype of {_type_name(obj)}")


def _numpy_dtype(arr):
    name = str(arr.dtype)
    if name in _NUMPY_KEPT:
        return name
    kind = arr.dtype.kind
    if kind not in "fiub":
        raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype.type.__name__}. The only supported types "
                        "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
    return _NUMPY_KIND[kind]


def _sizes(obj):
    """torch's compute_sizes: the lengths along the first elements."""
    sizes = []
    while isinstance(obj, _SEQUENCES) or (isinstance(obj, np.ndarray) and obj.ndim):
        sizes.append(len(obj))
        if not len(obj):
            break
        obj = obj[0]
        if isinstance(obj, str):  # torch takes a str for one more dimension, then refuses it
            raise ValueError("too many dimensions 'str'")
    return sizes


def _check_range(arr, dtype):
    """torch.tensor's overflow check for the narrow integer dtypes."""
    name = _dtype_name(dtype)
    if name not in _INT_RANGE or arr.size == 0 or arr.dtype.kind not in "fiu":
        return
    lo, hi = _INT_RANGE[name]
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr < lo) | (arr > hi)
    else:
        bad = (arr < (-hi if name == "uint8" else lo)) | (arr > hi)
    if bad.any():
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _to_float(v):
    if isinstance(v, str):
        raise TypeError(f"new(): invalid data type '{_type_name(v)}'")
    if isinstance(v, (float, int, _C.Tensor, np.generic)) or hasattr(type(v), "__float__"):
        return float(v)
    raise TypeError(f"must be real number, not {_type_name(v)}")


def _to_int(v):
    if isinstance(v, _C.Tensor):
        v = v.__index__()  # torch unpacks a tensor element as an index: an integer one
    if isinstance(v, (float, np.floating)):
        if not -2.0 ** 63 <= v < 2.0 ** 63:  # nan and inf included
            raise RuntimeError("value cannot be converted to type int64 without overflow")
        return int(v)
    if isinstance(v, str):
        raise TypeError(f"new(): invalid data type '{_type_name(v)}'")
    try:
        v = v.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"'{_type_name(v)}' object cannot be interpreted as an integer") from None
    if not -2 ** 63 <= v < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return v


def _to_bool(v):
    if isinstance(v, str):
        raise TypeError(f"new(): invalid data type '{_type_name(v)}'")
    if isinstance(v, _C.Tensor):
        return v.__index__() != 0  # torch unpacks a tensor element as an index: an integer one
    if isinstance(v, (bool, int, float, np.generic)):
        return bool(v)
    raise TypeError(f"must be real number, not {_type_name(v)}")


def _narrow_int(name):
    """_to_int for a narrow integer dtype: a float out of its range (or not finite) is refused as
    torch's (integers are checked after conversion, by _check_range)."""
    lo, hi = _INT_RANGE[name]

    def convert(v):
        if isinstance(v, (float, np.floating)) and not lo <= v <= hi:  # nan fails both comparisons
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        return _to_int(v)
    return convert


_CONVERT = {"float32": _to_float, "float64": _to_float, "int64": _to_int, "bool": _to_bool}
_PLAIN = {_to_float: {float, int, bool}, _to_int: {int, bool}, _to_bool: {bool}}


def _store(obj, sizes, dim, out, convert):
    """torch's recursive_store: every sequence of the length its dim expects, leaves converted."""
    if dim == len(sizes):
        out.append(convert(obj))
        return
    if isinstance(obj, _C.Tensor) and tuple(obj.shape) == tuple(sizes[dim:]):
        out.extend(convert(v) for v in obj.detach().reshape(-1).tolist())
        return
    if not isinstance(obj, _SEQUENCES) and not (isinstance(obj, np.ndarray) and obj.ndim):
        raise TypeError("not a sequence")
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")
    if dim == len(sizes) - 1 and _PLAIN.get(convert, frozenset()).issuperset(map(type, obj)):
        out.extend(obj)  # plain numbers: NumPy converts them (ints beyond int64: see _from_data)
        return
    for v in obj:
        _store(v, sizes, dim + 1, out, convert)


def _from_data(data, dtype):
    """A tensor copied from Python data (numbers, nested sequences, NumPy values), with torch's dtype
    inference, conversions and errors."""
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.asarray(data)
        return _C._from_numpy_copy(arr, dtype if dtype is not None else getattr(_C, _numpy_dtype(arr)))
    sizes = _sizes(data)
    name = _dtype_name(dtype) if dtype is not None else _infer(data)
    convert = _CONVERT.get(name, _to_float if "float" in name else _to_int)
    if name in _INT_RANGE:
        convert = _narrow_int(name)
    flat = []
    _store(data, sizes, 0, flat, convert)
    np_type = np.float64 if "float" in name else np.bool_ if name == "bool" else np.int64
    try:
        arr = np.array(flat, dtype=np_type).reshape(sizes)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    dtype = getattr(_C, name)
    _check_range(arr, dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # 1e39 -> float32 is inf, as torch's, quietly
        return _C._from_numpy_copy(arr, dtype)


def _index_tensor(data):
    """torch's indexing_tensor_from_data: a sequence used as an index becomes a bool tensor, or an int64
    one (float values truncated)."""
    dt = _numpy_dtype(np.asarray(data)) if isinstance(data, np.ndarray) else _infer(data)
    return _from_data(data, _C.bool if dt == "bool" else _C.int64)


@parse_args(dtype="dtype?", requires_grad="bool")
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (torch.tensor)."""
    if isinstance(data, _C.Tensor):
        t = data.detach().clone()
        if dtype is not None:
            t = t.to(dtype)
    else:
        # plain numbers and lists/tuples of them in Rust (no NumPy); anything else in Python
        t = _C._tensor_plain(data, dtype)
        if t is None:
            t = _from_data(data, dtype)
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None):
    """Share memory with `data` where possible (a tensor, or a NumPy array of a supported dtype)."""
    if isinstance(data, _C.Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, np.ndarray) and dtype is None and device is None and str(data.dtype) in _NUMPY_KEPT:
        return _C.from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


# Note [the *_like functions]: the values are made flat, as a new tensor of input's dtype and device
# (zeros, full, rand, ... with their checks), then seen with input's shape and the strides of
# `memory_format` (_C._as_like): for preserve_format, input's own strides when it is dense (a
# transposed tensor gives a transposed result), else dense strides in its dims' order, as torch's.
_PRESERVE = _C.preserve_format
Tensor = _C.Tensor
_LIKE_ARGS = dict(input="Tensor", dtype="dtype?", requires_grad="bool?", memory_format="memory_format?", layout="layout?")


def _like_options(input, dtype, device):
    return dict(dtype=dtype if dtype is not None else input.dtype, device=device if device is not None else input.device)


def _fast_like(general, kind):
    """`general` (a *_like function) with its common call, f(input) (full_like: f(input, fill_value))
    and no keyword, made by one call into the engine (_C._like, which answers None where the
    general path is needed: a fill value that is not a float or an int within int64, random values
    of a dtype that is not floating). Every other call is the general path's, as given."""
    nargs = 2 if kind == 3 else 1

    @functools.wraps(general)
    def like(*args, **kwargs):
        if not kwargs and len(args) == nargs and isinstance(args[0], Tensor):
            t = _C._like(args[0], kind, args[1]) if nargs == 2 else _C._like(args[0], kind)
            if t is not None:
                return t
        return general(*args, **kwargs)
    return like


def _like(values, input, requires_grad, memory_format):
    t = _C._as_like(values, input, memory_format)
    if requires_grad:
        t.requires_grad_(True)
    return t


@parse_args(**_LIKE_ARGS)
def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
               layout=None):
    return _like(_C.zeros(input.numel(), **_like_options(input, dtype, device)), input, requires_grad, memory_format)


@parse_args(**_LIKE_ARGS)
def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
              layout=None):
    return _like(_C.ones(input.numel(), **_like_options(input, dtype, device)), input, requires_grad, memory_format)


@parse_args(**_LIKE_ARGS)
def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
               layout=None):
    return _like(_C.empty(input.numel(), **_like_options(input, dtype, device)), input, requires_grad, memory_format)


@parse_args(fill_value="Number", **_LIKE_ARGS)
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
              layout=None):
    values = _C.full((input.numel(),), fill_value, **_like_options(input, dtype, device))
    return _like(values, input, requires_grad, memory_format)


# torch's overloads of the random functions, as its messages print them (Note [overloads])
_OPTIONS = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
            "bool pin_memory = False, bool requires_grad = False")
_LIKE_OPTIONS = "torch.memory_format memory_format = None, " + _OPTIONS


def _with_generator(params, options):
    return (f"{params}, *, torch.Generator generator, {options}", f"{params}, *, {options}")


_RAND = _with_generator("tuple of ints size", "Tensor out = None, " + _OPTIONS)
_RAND_LIKE = _with_generator("Tensor input", _LIKE_OPTIONS)
_RANDINT_LIKE = (_with_generator("Tensor input, int low, int high", _LIKE_OPTIONS)
                 + _with_generator("Tensor input, Tensor high", _LIKE_OPTIONS)
                 + _with_generator("Tensor input, int high", _LIKE_OPTIONS))


def _random_failed(e, fn, size, kwargs):
    """After fn(*size, **kwargs) (fn _C.rand or _C.randn) raised the RuntimeError e: torch's uniform
    and normal kernels take floating dtypes only, another dtype is their NotImplementedError (the
    engine says the same as a RuntimeError); torch's normal kernel is not run for an empty result,
    which is then made."""
    if "not implemented for" not in str(e):
        raise e
    if fn is _C.randn:
        t = _C.zeros(*size, **{k: v for k, v in kwargs.items() if k not in ("generator", "requires_grad")})
        if t.numel() == 0:
            return t.requires_grad_(True) if kwargs.get("requires_grad") else t
    raise NotImplementedError(str(e)) from None


def _random(fn, name, doc):
    """rand and randn: the engine's `fn`, with torch's errors (one frame: they are called often)."""
    def draw(*size, **kwargs):
        if _transform_levels._active:  # under vmap, its randomness= decides (func/_vmap.py)
            from .func._vmap import random_factory

            out = random_factory(draw, size, kwargs)
            if out is not NotImplemented:
                return out
        try:
            return fn(*size, **kwargs)
        except TypeError as e:
            raise overload_error(e, name, size, kwargs, _RAND) from None
        except RuntimeError as e:
            return _random_failed(e, fn, size, kwargs)
    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = doc
    return draw


rand = _random(_C.rand, "rand", "Values drawn uniformly from [0, 1) (torch.rand).")
randn = _random(_C.randn, "randn", "Values drawn from the standard normal distribution (torch.randn).")


def _random_like(fn, input, dtype, device, generator):
    size, kwargs = (input.numel(),), dict(_like_options(input, dtype, device), generator=generator)
    try:
        return fn(*size, **kwargs)
    except RuntimeError as e:
        return _random_failed(e, fn, size, kwargs)


@overloads(*_RAND_LIKE)
@parse_args(**_LIKE_ARGS)
def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
              generator=None, layout=None):
    return _like(_random_like(_C.rand, input, dtype, device, generator), input, requires_grad, memory_format)


@overloads(*_RAND_LIKE)
@parse_args(**_LIKE_ARGS)
def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=_C.preserve_format,
               generator=None, layout=None):
    return _like(_random_like(_C.randn, input, dtype, device, generator), input, requires_grad, memory_format)


zeros_like = _fast_like(zeros_like, 0)
ones_like = _fast_like(ones_like, 1)
empty_like = _fast_like(empty_like, 2)
full_like = _fast_like(full_like, 3)
rand_like = _fast_like(rand_like, 4)
randn_like = _fast_like(randn_like, 5)


_MISSING = object()


@overloads(*_RANDINT_LIKE)
@parse_args(**_LIKE_ARGS)
def randint_like(input, *bounds, low=_MISSING, high=_MISSING, dtype=None, device=None, requires_grad=False,
                 memory_format=_C.preserve_format, generator=None, layout=None):
    """torch's overloads: randint_like(input, low, high) of ints, randint_like(input, high) of an
    int or a 0-d tensor (its value truncated); low and high also as keywords, but high always given."""
    if len(bounds) == 2 and low is _MISSING and high is _MISSING:
        low, high = bounds
    elif len(bounds) == 1 and low is _MISSING:
        if high is _MISSING:
            high = bounds[0]
        else:
            low = bounds[0]
    elif bounds:
        raise TypeError(f"randint_like() takes from 2 to 3 positional arguments but {len(bounds) + 1} were given"
                        if len(bounds) > 2 else "randint_like() got multiple values for argument 'low'")
    if high is _MISSING:
        raise TypeError("randint_like() missing 1 required positional argument: 'high'")
    if low is not _MISSING:
        low, high = check_arg("int", low, "randint_like", "low", 2), check_arg("int", high, "randint_like", "high", 3)
    elif isinstance(high, _C.Tensor):
        if high.dim() != 0 or high.device.type != "cpu":
            raise RuntimeError("high must be a scalar tensor and on CPU")
        low, high = 0, int(high.item())
    else:
        low, high = 0, check_arg("int", high, "randint_like", "high", 2)
    values = _C.randint(low, high, (input.numel(),), generator=generator, **_like_options(input, dtype, device))
    return _like(values, input, requires_grad, memory_format)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data`, of this tensor's dtype and device unless given
    (Tensor.new_tensor; torch.tensor's conversions)."""
    if isinstance(data, _C.Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=3)  # the caller of parse_args' wrapper
    return tensor(data, **_like_options(self, dtype, device), requires_grad=requires_grad)


# Tensor methods, installed once by _tensor_methods.py
TENSOR_METHODS = []
TENSOR_ATTRIBUTES = {"new_tensor": parse_args(dtype="dtype?", requires_grad="bool")(new_tensor)}


def _rebuild_tensor(array, requires_grad, device="cpu", dtype=None):
    """Unpickling: a tensor from its values, on its device (see Tensor.__reduce__); `dtype` names
    a dtype NumPy lacks (bfloat16), whose values came as float32."""
    t = _C._from_numpy_copy(array, getattr(_C, dtype) if dtype else None)
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


_SPACE_OPTIONS = ("*, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
                  "bool pin_memory = False, bool requires_grad = False")
_LOGSPACE = tuple(f"{a} start, {b} end, int steps, float base = 10.0, {_SPACE_OPTIONS}"
                  for a, b in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number")))


@overloads(*_LOGSPACE)
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, device=None, requires_grad=False, layout=None):
    """`steps` values base ** e for e evenly spaced from start to end (torch.logspace): the
    exponents are linspace's (the same split at the halfway point) in float64, the powers rounded
    once to dtype (float32 by default; integer dtypes truncate, as torch's kernel converts)."""
    if out is not None:
        from ._out import creation_out
        return creation_out("logspace", (start, end, steps, base),
                            dict(dtype=dtype, device=device, requires_grad=requires_grad, layout=layout), out, fn=logspace)
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"logspace(): argument 'base' must be float, not {type(base).__name__}")
    check_arg("layout?", layout, "logspace", "layout", 5)
    exponents = _C.linspace(start, end, steps, dtype=_C.float64, device=device)
    values = (float(base) ** exponents).to(_C._get_default_dtype() if dtype is None else dtype)
    return values.requires_grad_(True) if requires_grad else values


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    """A random permutation of 0..n-1 (torch.randperm): int64 unless `dtype` says otherwise, drawn
    from `generator` or, without one, from ferrograd's global generator (reproducible under
    manual_seed; not torch's stream)."""
    from .utils import _generator
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if out is not None:
        from ._out import creation_out
        return creation_out("randperm", (n,), dict(generator=generator, dtype=dtype, layout=layout, device=device,
                                                   requires_grad=requires_grad), out, fn=randperm)
    check_arg("layout?", layout, "randperm", "layout", 3)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = _C.int64 if dtype is None else dtype
    if requires_grad and not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    perm = _generator.randperm(n, generator=generator, dtype=dtype)
    if device is not None:
        perm = perm.to(device)
    return perm.requires_grad_(True) if requires_grad else perm


_NORMAL = ("Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None",
           "Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = None",
           "float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None",
           "float mean, float std, tuple of ints size, *, torch.Generator generator = None, Tensor out = None, "
           "torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
           "bool pin_memory = False, bool requires_grad = False")


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False):
    """Samples of N(mean, std²) (torch.normal): elementwise for tensor means/stds (broadcast
    together), or of `size` for two numbers. The result's gradient with respect to mean and std
    is zero, as torch's NormalBackward; draws come from `generator` or ferrograd's global one."""
    from .autograd.grad_mode import no_grad
    from .utils import _generator
    from ._out import scalar_type_name
    _generator.check(generator, "normal")
    t_mean, t_std = isinstance(mean, _C.Tensor), isinstance(std, _C.Tensor)
    if out is not None:
        from ._out import creation_out, out_call
        if not (t_mean or t_std):  # made in out's dtype, as the creation functions
            return creation_out("normal", (mean, std, size), dict(generator=generator, dtype=dtype, layout=layout,
                                                                  device=device, requires_grad=requires_grad), out, fn=normal)
        return out_call("normal", lambda: normal(mean, std, size, generator=generator, dtype=dtype, layout=layout,
                                                 device=device, requires_grad=requires_grad),
                        out, [v for v in (mean, std) if isinstance(v, _C.Tensor)])
    if not (t_mean or t_std):
        if not (_number(mean) and _number(std)) or size is None:
            raise invalid_combination("normal", (mean, std) + (() if size is None else (size,)), {}, _NORMAL)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        kw = dict(dtype=dtype, device=device, generator=generator)
        sample = _C.randn(tuple(size), **kw) * std + mean
        return sample.requires_grad_(True) if requires_grad else sample
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise invalid_combination("normal", (mean, std, size), {}, _NORMAL)
    for v in (mean, std):
        if not isinstance(v, _C.Tensor) and not _number(v):
            raise invalid_combination("normal", (mean, std), {}, _NORMAL)
    ref = mean if t_mean else std
    if not ref.is_floating_point():
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{scalar_type_name(ref.dtype)}'")
    if t_std:
        if std.numel() and (std < 0).any().item():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    from ._shape_ops import broadcast_shapes
    shape = tuple(broadcast_shapes(tuple(mean.shape) if t_mean else (), tuple(std.shape) if t_std else ()))
    with no_grad():
        eps = _C.randn(shape, dtype=ref.dtype, device=ref.device, generator=generator)
        sample = eps * std + mean
    inputs = [v for v in (mean, std) if isinstance(v, _C.Tensor)]
    if _C.is_grad_enabled() and any(v.requires_grad for v in inputs):
        return _normal_fn().apply(sample, *inputs)
    return sample


@functools.lru_cache(maxsize=None)
def _normal_fn():
    from .autograd.function import Function

    class Normal(Function):
        """The sample as a function of mean and std whose gradient is zero (torch's NormalBackward)."""

        @staticmethod
        def forward(ctx, sample, *inputs):
            ctx.shapes = [v.shape for v in inputs]
            return sample.clone()

        @staticmethod
        def backward(ctx, g):
            return (None,) + tuple(g.new_zeros(s) for s in ctx.shapes)

    return Normal
