"""torch.autograd.forward_ad: forward-mode automatic differentiation with dual tensors.

A dual tensor carries a primal value and a tangent (the directional derivative along the direction
the user chose). Inside `dual_level()`, `make_dual(x, t)` makes one; every ferrograd operation on it
computes its primal result as usual and its tangent by the op's JVP rule (`_jvp_rules.py`); the rules
are written with ferrograd's own differentiable ops, so reverse mode records them like any other
computation (reverse-over-forward), and `autograd.grad` of a dual has a JVP rule of its own
(forward-over-reverse, what `hessian = jacfwd(jacrev(f))` needs).

Note [dual tensors are wrappers]
ferrograd's Tensor is a native class, so a dual tensor is a Python object that wraps its primal and
tangent (`DualTensor`, a `_transform_levels.TransformWrapper`), as an fx Proxy wraps a graph node:
its methods and operators go to `__torch_function__`, and ferrograd's public functions hand a call with
a DualTensor argument to it too (Note [torch_function dispatch] in ferrograd/overrides.py). The level
recorded in each wrapper orders nested transforms: the innermost (highest level) handles a call first,
computing on its primals, which may themselves be wrappers of an outer transform (vmap's batched
tensors, an outer jvp's duals), so the transforms compose. `isinstance(dual, ferrograd.Tensor)` is
False (documented in docs/guides/forward-ad.md); everything else a program reads from a tensor (shape,
dtype, device, requires_grad, methods, operators, indexing, len/iter, item) works on a dual.

torch keeps one forward AD level at a time (nesting `dual_level` raises, as torch); `torch.func.jvp`
takes levels of its own and nests.
"""

import collections

from .. import _C, _transform_levels
from .._transform_levels import TransformWrapper
from ..overrides import handle_torch_function

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]

_Tensor = _C.Tensor

# The dual level opened by enter_dual_level (torch has one at a time; its public number is 0)
_dual_api_level = None
# Every level whose dual tensors are live (forward_ad's and torch.func.jvp's); a dual of a level that
# has ended acts as its primal (torch drops the tangents when a level exits)
_live = set()


class UnpackedDualTensor(collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """The (primal, tangent) of a dual tensor; `tangent` is None for a tensor without one."""

    __slots__ = ()


def enter_dual_level():
    """Open the forward AD level; returns its number (0, as torch). One level at a time."""
    global _dual_api_level
    if _dual_api_level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _dual_api_level = _new_level("dual")
    return 0


def exit_dual_level(*, level=None):
    """Close the forward AD level: the tangents of its dual tensors are dropped."""
    global _dual_api_level
    if level is None:
        level = 0 if _dual_api_level is not None else -1
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if _dual_api_level is None or level != 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    _end_level(_dual_api_level)
    _dual_api_level = None


class dual_level:
    """Context manager (and decorator) for a forward AD level: dual tensors made inside it lose their
    tangents when it exits."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper


def _new_level(kind):
    level = _transform_levels.enter_level(kind)
    _live.add(level)
    return level


def _end_level(level):
    _live.discard(level)
    _transform_levels.exit_level(level)


def _api_level(level, fname):
    if level is None:
        level = _dual_api_level
        if level is None and fname == "_make_dual":
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                               "enter_dual_level() first.")
        return level
    if level == 0 and _dual_api_level is not None:
        return _dual_api_level
    if isinstance(level, int) and level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    raise RuntimeError(f"Invalid level given to {fname}")


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor of primal `tensor` and tangent `tangent` (same shape, floating point) at the
    current forward AD level."""
    lvl = _api_level(level, "_make_dual")
    return _make_dual_at(tensor, tangent, lvl)


def _make_dual_at(tensor, tangent, level):
    for name, v in (("tensor", tensor), ("tangent", tangent)):
        if not _is_tensor(v):
            raise TypeError(f"make_dual(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if not _is_floating(tensor.dtype):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {_dtype_name(tensor.dtype)}")
    if not _is_floating(tangent.dtype):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {_dtype_name(tangent.dtype)}")
    if isinstance(tensor, DualTensor) and tensor._level == level and tensor._level in _live:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the "
                           f"same level {0 if level == _dual_api_level else level} is not supported.")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    return DualTensor(tensor, tangent, level)


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor at the current level; (tensor, None) for any other tensor."""
    if not isinstance(tensor, DualTensor):
        return UnpackedDualTensor(tensor, None)
    lvl = _api_level(level, "_fw_primal")
    if lvl is not None and tensor._level == lvl and lvl in _live:
        return UnpackedDualTensor(tensor._primal, tensor._tangent)
    return UnpackedDualTensor(_strip_dead(tensor), None)


def _is_tensor(v):
    return isinstance(v, (_Tensor, TransformWrapper))


_FLOATING = None


def _is_floating(dtype):
    global _FLOATING
    if _FLOATING is None:
        _FLOATING = {d for d in (getattr(_C, n, None) for n in ("float16", "bfloat16", "float32", "float64",
                                                                  "complex64", "complex128")) if d is not None}
    return dtype in _FLOATING


def _dtype_name(dtype):
    return str(dtype) if str(dtype).startswith("torch.") else f"torch.{str(dtype).split('.')[-1]}"


def _strip_dead(x):
    """A dual of an ended level stands for its primal."""
    while isinstance(x, DualTensor) and x._level not in _live:
        x = x._primal
    return x


# ---------------------------------------------------------------------------------------------------
# The wrapper

_METHOD_NAMES = {}  # id(Tensor.<name>) -> name, for the methods and operators a dual forwards


class DualTensor(TransformWrapper):
    """A tensor with a tangent at one forward AD level (Note [dual tensors are wrappers])."""

    __slots__ = ("_primal", "_tangent", "_level", "__weakref__")

    def __init__(self, primal, tangent, level):
        self._primal = primal
        self._tangent = tangent
        self._level = level

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from ._jvp_rules import apply

        return apply(func, args, kwargs or {})

    # what a program reads without computing

    @property
    def shape(self):
        return self._primal.shape

    @property
    def dtype(self):
        return self._primal.dtype

    @property
    def device(self):
        return self._primal.device

    @property
    def ndim(self):
        return self._primal.ndim

    @property
    def layout(self):
        return self._primal.layout

    @property
    def is_cuda(self):
        return self._primal.is_cuda

    @property
    def is_cpu(self):
        return self._primal.is_cpu

    @property
    def requires_grad(self):
        return self._primal.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self._primal.requires_grad = value

    @property
    def grad(self):
        return self._primal.grad

    @grad.setter
    def grad(self, value):
        self._primal.grad = value

    @property
    def grad_fn(self):
        return self._primal.grad_fn

    @property
    def is_leaf(self):
        return self._primal.is_leaf

    @property
    def data(self):
        return _strip(self._primal).data if _is_plain(_strip(self._primal)) else self._primal.data

    @property
    def itemsize(self):
        return self._primal.itemsize

    @property
    def nbytes(self):
        return self._primal.nbytes

    @property
    def T(self):
        return _dispatch(_Tensor.permute, (self, tuple(range(self.ndim - 1, -1, -1))), {}) if self.ndim else self

    @property
    def mT(self):
        return _dispatch(_Tensor.transpose, (self, -2, -1), {})

    H = T
    mH = mT

    @property
    def real(self):
        return self

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        attr = getattr(_Tensor, name, None)
        if attr is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if not callable(attr):
            return getattr(self._primal, name)
        _METHOD_NAMES.setdefault(id(attr), (name, attr))

        def method(*args, **kwargs):
            return _dispatch(attr, (self,) + args, kwargs)

        method.__name__ = name
        return method

    def __repr__(self):
        p = _strip(self._primal)
        if self._level not in _live:
            return repr(p)
        text = repr(p)
        t = self._tangent
        body = text[:-1] if text.endswith(")") else text
        return f"{body},\n       tangent={t!r})"

    def __str__(self):
        return self.__repr__()

    def __format__(self, spec):
        if self.dim() == 0 and spec:
            return format(self.item(), spec)
        return object.__format__(self, spec) if not spec else format(str(self), spec)

    __hash__ = object.__hash__

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self):
        return bool(_strip(self._primal))

    def __float__(self):
        return float(_strip(self._primal))

    def __int__(self):
        return int(_strip(self._primal))

    def __index__(self):
        return _strip(self._primal).__index__()

    def __complex__(self):
        return complex(_strip(self._primal))

    def __array__(self, dtype=None, copy=None):
        a = _strip(self._primal).__array__()
        return a if dtype is None else a.astype(dtype)

    def __contains__(self, item):
        return bool((self == item).any())

    def __reduce_ex__(self, protocol):
        raise RuntimeError("a dual tensor cannot be pickled; unpack_dual it first")

    def __deepcopy__(self, memo):
        return DualTensor(self._primal.clone(), None if self._tangent is None else self._tangent.clone(), self._level)


def _strip(x):
    """The plain tensor under any number of dual wrappers (for what reads values: bool(), item())."""
    while isinstance(x, DualTensor):
        x = x._primal
    return x


def _is_plain(x):
    return isinstance(x, _Tensor)


def _dispatch(func, args, kwargs):
    return handle_torch_function(func, (args, kwargs), *args, **kwargs)


def _operator(name):
    attr = getattr(_Tensor, name)
    _METHOD_NAMES[id(attr)] = (name, attr)

    def op(self, *args):
        return _dispatch(attr, (self,) + args, {})

    op.__name__ = name
    setattr(DualTensor, name, op)


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__",
              "__rmatmul__", "__neg__", "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__",
              "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__",
              "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__setitem__",
              "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__", "__ipow__",
              "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
    if hasattr(_Tensor, _name):
        _operator(_name)


def method_name(func):
    """The Tensor method or operator name of `func` when it is one (as a dual's methods pass it), else None."""
    entry = _METHOD_NAMES.get(id(func))
    return entry[0] if entry is not None and entry[1] is func else None



def peel_duals(x):
    """(the value under x's live dual wrappers, those wrappers outermost first): for a transform that
    must work on the primal and hand the function a dual again (`rewrap_duals`)."""
    duals = []
    while isinstance(x, DualTensor) and x._level in _live:
        duals.append(x)
        x = x._primal
    return x, duals


def rewrap_duals(value, duals):
    """`value` inside the duals `peel_duals` took off (same tangents and levels)."""
    for d in reversed(duals):
        value = DualTensor(value, d._tangent, d._level)
    return value
