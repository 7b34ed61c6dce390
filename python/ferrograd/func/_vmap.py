"""torch.func.vmap: the batched tensor and the transform that makes them.

A `BatchedTensor` stands, inside the function that vmap runs, for one sample of a batch: it holds a
real value (a ferrograd tensor, or the batched tensor of an outer vmap) whose dimension `_bdim` is the
batch, and shows the user the shape without it. Every ferrograd call that receives one is handed to
`BatchedTensor.__torch_function__` (Note [torch_function dispatch] in ferrograd/overrides.py), which
runs the op's batching rule (func/_batching_rules.py) once on the whole batch: the batch dimension is
carried through the op, not looped over. Each vmap takes a level (ferrograd/_transform_levels.py);
a wrapper of an inner vmap holds the wrapper of the outer one, so `vmap(vmap(f))` peels one level per
call, innermost first, as JAX's batching interpreters and torch's BatchedTensor levels do.
"""

import functools

from .. import _C, _transform_levels
from .._size import Size
from ._pytree import broadcast_prefix, spec_str, tree_flatten, tree_unflatten

__all__ = ["vmap", "BatchedTensor"]

# level -> (batch size, randomness) of each vmap running now
_LEVELS = {}

_ITEM = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
         "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
         "inside PyTorch internals, please file a bug report.")
_NO_STORAGE = "Cannot access data pointer of Tensor that doesn't have storage"
_CONTROL_FLOW = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We "
                 "don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")


def batch_size(level):
    return _LEVELS[level][0]


def randomness(level):
    return _LEVELS[level][1]


class BatchedTensor(_transform_levels.TransformWrapper):
    """One sample of a batch, for the function under vmap; `_value` holds the whole batch along `_bdim`."""

    __slots__ = ("_value", "_bdim", "_level", "__weakref__")

    def __init__(self, value, bdim, level):
        self._value = value
        self._bdim = bdim
        self._level = level

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._batching_rules import dispatch

        return dispatch(func, args, kwargs or {})

    # ---- what the user sees: the shape of one sample ----------------------------------------------
    @property
    def shape(self):
        s = tuple(self._value.shape)
        return Size(s[:self._bdim] + s[self._bdim + 1:])

    def size(self, dim=None):
        s = self.shape
        if dim is None:
            return s
        return s[_C._parse_arg("int", dim, "size", "dim", 1) if not isinstance(dim, int) else dim]

    def dim(self):
        return self._value.dim() - 1

    ndimension = dim

    @property
    def ndim(self):
        return self._value.dim() - 1

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self):
        s = self.shape
        if not s:
            raise TypeError("len() of a 0-d tensor")
        return s[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def device(self):
        return self._value.device

    @property
    def is_cuda(self):
        return self._value.is_cuda

    @property
    def layout(self):
        return self._value.layout

    @property
    def requires_grad(self):
        return self._value.requires_grad

    @property
    def is_leaf(self):
        return self._value.is_leaf

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def itemsize(self):
        return self._value.itemsize

    def element_size(self):
        return self._value.element_size()

    def is_floating_point(self):
        return self._value.is_floating_point()

    def is_complex(self):
        return self._value.is_complex()

    def get_device(self):
        return self._value.get_device()

    def stride(self, dim=None):
        raise RuntimeError("Cannot access strides of a batched tensor inside vmap")

    def data_ptr(self):
        raise RuntimeError(_NO_STORAGE)

    # ---- what needs a value: refused, as torch.func refuses it ------------------------------------
    def item(self):
        raise RuntimeError(_ITEM)

    def __bool__(self):
        raise RuntimeError(_CONTROL_FLOW)

    def __float__(self):
        raise RuntimeError(_ITEM)

    def __int__(self):
        raise RuntimeError(_ITEM)

    def __index__(self):
        raise RuntimeError(_CONTROL_FLOW)

    def tolist(self):
        raise RuntimeError(_NO_STORAGE)

    def numpy(self, *args, **kwargs):
        raise RuntimeError(_NO_STORAGE)

    def __array__(self, *args, **kwargs):
        raise RuntimeError(_NO_STORAGE)

    def backward(self, *args, **kwargs):
        raise RuntimeError("backward() called inside a functorch transform. This is not supported, please use "
                           "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
                           "transforms.")

    def __repr__(self):
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n{self._value!r}\n)"

    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol):
        raise RuntimeError("Cannot pickle a batched tensor inside vmap")


def _install_tensor_methods():
    """Every method and operator of Tensor, on BatchedTensor, as a call of that Tensor method handed to
    the batching rules; the properties that are ops (T, mT, H, mH, real, imag) likewise."""
    from ._batching_rules import dispatch

    Tensor = _C.Tensor
    own = set(BatchedTensor.__dict__)
    skip = {"__init__", "__new__", "__getattribute__", "__setattr__", "__delattr__", "__class__", "__doc__",
            "__module__", "__repr__", "__str__", "__hash__", "__reduce__", "__reduce_ex__", "__init_subclass__",
            "__subclasshook__", "__sizeof__", "__dir__", "__format__", "__getstate__", "__setstate__",
            "__deepcopy__", "__copy__", "__array_priority__", "__array_interface__", "__dlpack__",
            "__dlpack_device__", "__array_wrap__", "__torch_function__", "__weakref__", "__contains__",
            "__delitem__", "__eq__", "__ne__"}
    for name in dir(Tensor):
        if name in own or name in skip:
            continue
        attr = Tensor.__dict__.get(name, None)
        if attr is None:
            attr = getattr(Tensor, name, None)
        kind = type(attr).__name__
        if kind in ("method_descriptor", "wrapper_descriptor", "function", "builtin_function_or_method"):
            setattr(BatchedTensor, name, _method(getattr(Tensor, name), name))
    for name in ("__eq__", "__ne__"):
        setattr(BatchedTensor, name, _method(getattr(Tensor, name), name))
    for name in ("T", "mT", "H", "mH", "real", "imag"):
        method = getattr(Tensor, name)
        setattr(BatchedTensor, name, property(_property_op(method, name)))
    BatchedTensor.__hash__ = object.__hash__
    _ = dispatch


def _method(method, name):
    from ._batching_rules import dispatch

    def call(self, *args, **kwargs):
        return dispatch(method, (self,) + args, kwargs)

    call.__name__ = name
    call._dispatches = True
    return call


def _property_op(descriptor, name):
    from ._batching_rules import dispatch

    def get(self):
        return dispatch(descriptor, (self,), {})

    get.__name__ = name
    return get


_installed = False


def _ensure_installed():
    global _installed
    if not _installed:
        _install_tensor_methods()
        _installed = True


# ---- wrapping and unwrapping -------------------------------------------------------------------------

def unwrap(x, level):
    """(value, bdim) of x at `level`: bdim is None for a value not batched at that level."""
    if type(x) is BatchedTensor and x._level == level:
        return x._value, x._bdim
    return x, None


def wrap(value, bdim, level):
    return value if bdim is None else BatchedTensor(value, bdim, level)


def to_front(x):
    """(physical tensor, levels): every vmap level's batch dimension of x moved to the front, outermost
    level first."""
    if type(x) is not BatchedTensor:
        return x, []
    inner, levels = to_front(x._value)
    k = len(levels)
    if x._bdim != 0:
        inner = inner.movedim(k + x._bdim, k)
    return inner, levels + [x._level]


def from_front(phys, levels):
    """The batched tensor of `phys` whose leading dims are the batches of `levels` (outermost first)."""
    value = phys
    for level in levels:
        value = BatchedTensor(value, 0, level)
    return value


def _is_tensor_like(x):
    return isinstance(x, (_C.Tensor, _transform_levels.TransformWrapper))


# ---- the transform ---------------------------------------------------------------------------------------

def _fname(func):
    return getattr(func, "__name__", repr(func))


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap: `func` applied to each slice along `in_dims` of its inputs, computed once on the
    whole batch by the ops' batching rules; the results stacked along `out_dims`."""
    _ensure_installed()
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs)

    return wrapped


def _check_in_dims(func, in_dims, args):
    name = _fname(func)
    if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    if isinstance(in_dims, tuple) and len(in_dims) != len(args):
        _, spec_in = tree_flatten(in_dims)
        _, spec_args = tree_flatten(args)
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {spec_str(spec_in)} but inputs has "
                         f"structure {spec_str(spec_args)}.")
    try:
        dims = broadcast_prefix(in_dims, args)
    except ValueError:
        _, spec_in = tree_flatten(in_dims)
        _, spec_args = tree_flatten(args)
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {spec_str(spec_in)} but inputs has "
                         f"structure {spec_str(spec_args)}.") from None
    return dims


def _vmap_call(func, in_dims, out_dims, randomness, chunk_size, args, kwargs):
    name = _fname(func)
    dims = _check_in_dims(func, in_dims, args)
    leaves, spec = tree_flatten(args)
    size = None
    sizes = []
    for leaf, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(d)}.")
        if not _is_tensor_like(leaf):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(leaf)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        n = leaf.dim()
        if not -n <= d < n:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {n} so expected in_dim to satisfy -{n} <= "
                             f"in_dim < {n}.")
        sizes.append(leaf.shape[d])
    if not sizes:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be batched; "
                         "expected `in_dims` to be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    size = sizes[0]
    if chunk_size is not None and chunk_size < size:
        return _chunked(func, dims, leaves, spec, out_dims, randomness, chunk_size, size, kwargs)
    return _run(func, dims, leaves, spec, out_dims, randomness, size, kwargs)


def _chunked(func, dims, leaves, spec, out_dims, randomness, chunk_size, size, kwargs):
    from .. import cat

    parts = []
    for start in range(0, size, chunk_size):
        n = min(chunk_size, size - start)
        chunk = [leaf if d is None else leaf.narrow(d, start, n) for leaf, d in zip(leaves, dims)]
        parts.append(_run(func, dims, chunk, spec, out_dims, randomness, n, kwargs))
    flat = [tree_flatten(p)[0] for p in parts]
    out_spec = tree_flatten(parts[0])[1]
    odims = _out_dims_for(func, out_dims, parts[0])
    merged = []
    for i, d in enumerate(odims):
        values = [f[i] for f in flat]
        merged.append(values[0] if d is None else cat(values, d))
    return tree_unflatten(merged, out_spec)


def _out_dims_for(func, out_dims, outputs):
    name = _fname(func)
    try:
        return broadcast_prefix(out_dims, outputs)
    except ValueError:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         "structure of `outputs`.") from None


def _run(func, dims, leaves, spec, out_dims, randomness, size, kwargs):
    name = _fname(func)
    level = _transform_levels.enter_level("vmap")
    _LEVELS[level] = (size, randomness)
    try:
        wrapped = [leaf if d is None else BatchedTensor(leaf, d % leaf.dim(), level) for leaf, d in zip(leaves, dims)]
        out = func(*tree_unflatten(wrapped, spec), **kwargs)
        flat, out_spec = tree_flatten(out)
        odims = _out_dims_for(func, out_dims, out)
        result = []
        for value, d in zip(flat, odims):
            result.append(_unbatch_output(name, value, d, level, size))
        return tree_unflatten(result, out_spec)
    finally:
        del _LEVELS[level]
        _transform_levels.exit_level(level)


def _unbatch_output(name, value, out_dim, level, size):
    """A result of the function under vmap, with its batch at `out_dim` (an unbatched result expanded)."""
    if out_dim is None:
        if type(value) is BatchedTensor and value._level == level:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return value
    if not _is_tensor_like(value):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(value)}. Did you "
                         "mean to set out_dims= to None for output?")
    phys, bdim = unwrap(value, level)
    n = phys.dim() if bdim is not None else phys.dim() + 1
    if not isinstance(out_dim, int) or not -n <= out_dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {out_dim})")
    out_dim %= n
    if bdim is None:
        return phys.unsqueeze(out_dim).expand(*phys.shape[:out_dim], size, *phys.shape[out_dim:])
    if bdim != out_dim:
        phys = phys.movedim(bdim, out_dim)
    return phys


# ---- random factories ------------------------------------------------------------------------------------

_FACTORY_DEPTH = []


def random_factory(fn, size, kwargs):
    """torch.rand(*size) / randn under vmap: refused in randomness="error" mode; "different": one
    draw per sample of each such vmap (a batched result); "same": one draw for all (unbatched).
    NotImplemented outside vmap (the caller draws as usual)."""
    levels = _transform_levels.current_levels("vmap")
    if not levels or _FACTORY_DEPTH:
        return NotImplemented
    from ._batching_rules import _random_error

    batched = []
    for level, _ in levels:
        if level not in _LEVELS:
            continue
        mode = _LEVELS[level][1]
        if mode == "error":
            _random_error()
        if mode == "different":
            batched.append(level)
    if not batched:
        return NotImplemented
    if "size" in kwargs:
        shape = tuple(kwargs.pop("size"))
    elif len(size) == 1 and isinstance(size[0], (tuple, list)) or (len(size) == 1 and hasattr(size[0], "__len__")):
        shape = tuple(size[0])
    else:
        shape = tuple(size)
    full = tuple(_LEVELS[lv][0] for lv in batched) + shape
    _FACTORY_DEPTH.append(1)
    try:
        value = fn(full, **kwargs)
    finally:
        _FACTORY_DEPTH.pop()
    return from_front(value, batched)
