"""torch's function forms (`torch.exp(x)`, `torch.sum(x, 1)`), each forwarding to the Tensor
method of the same name, which calls the engine."""

import numbers

from . import _C
from ._argcheck import tensor_args
from .overrides import _overrides, handle_torch_function
from ._out import out_call, out_call_many, supports_out
from . import return_types as _return_types

_METHODS = """
add sub subtract mul multiply div divide true_divide floor_divide remainder neg negative abs absolute
eq ne lt le gt ge greater less greater_equal less_equal not_equal maximum minimum clamp clip clamp_min clamp_max
exp log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu sign floor ceil round trunc reciprocal square erf
isnan isinf isfinite logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
sum mean prod amax amin argmax argmin var std logsumexp norm all any cumsum
matmul mm bmm mv dot outer softmax log_softmax
reshape flatten squeeze unsqueeze transpose swapaxes permute movedim broadcast_to clone detach split chunk unbind
flip narrow select as_strided diagonal gather index_select masked_fill masked_select nonzero t
asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh atan2 arctan2
erfc erfinv lgamma digamma i0 sgn fix nextafter mvlgamma
""".split()

__all__ = list(_METHODS) + ["pow", "max", "min", "rsub", "is_floating_point"]


# torch's function forms that take a Python number as `input` (a wrapped number, promoted as one):
# always, or (an overload (Number self, Tensor other)) when `other` is a tensor
_NUMBER_INPUT = set("add sub subtract mul multiply div divide true_divide floor_divide".split())
_NUMBER_SELF = set("remainder bitwise_and bitwise_or bitwise_xor".split())
# function forms of methods that take their size varargs (x.reshape(2, 3)): the function takes one
# tuple of ints (torch.reshape(x, (2, 3)); a lone int is a TypeError)
_INT_LIST = {"reshape": "shape", "permute": "dims", "flip": "dims", "broadcast_to": "size"}
# torch's functions written in Python, which reach for an attribute of `input` first (a non-tensor:
# their AttributeError)
_ATTRIBUTE_FIRST = {"norm": "layout"}


def _number_input(name, input, args, kwargs):
    """`input` as a wrapped number. An int too big for one is reported after the other arguments'
    types, as torch's parser checks every type before converting any value."""
    try:
        return _C._wrapped_number(input, name)
    except OverflowError:
        try:
            getattr(_C._wrapped_number(0, name), name)(*args, **kwargs)
        except TypeError:
            raise
        except Exception:  # noqa: BLE001 - only a type error of the other arguments comes first
            pass
        raise


def _forward(name):
    number_input = name in _NUMBER_INPUT
    number_self = name in _NUMBER_SELF
    int_list = _INT_LIST.get(name)

    def fn(input, *args, **kwargs):
        if not isinstance(input, _C.Tensor):
            # an fx Proxy or another tensor-like takes the call (Note [torch_function dispatch])
            if _overrides(input):
                return handle_torch_function(fn, (input, args, kwargs), input, *args, **kwargs)
            if name in _ATTRIBUTE_FIRST:
                getattr(input, _ATTRIBUTE_FIRST[name])
            other = args[0] if args else kwargs.get("other")
            if number_input or (number_self and isinstance(other, _C.Tensor)):
                input = _number_input(name, input, args, kwargs)
            else:
                _C._parse_arg("Tensor", input, name, "input", 1)
        kwargs.pop("out", None)
        if int_list is not None and len(args) == 1:
            args = (_C._parse_arg("int[]", args[0], name, int_list, 2),)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: see Tensor.{name}."
    return fn


for _n in _METHODS:
    globals()[_n] = _forward(_n)


def split(tensor, split_size_or_sections, dim=0):
    """torch.split, as torch's (written in Python): `tensor.split(split_size_or_sections, dim)`."""
    return tensor.split(split_size_or_sections, dim)


def _is_number(v):
    return isinstance(v, numbers.Number)


@supports_out(grad="pow", dtype="cast")
def pow(input, exponent, *, out=None):
    # torch's overloads: (Tensor, Tensor), (Number, Tensor), (Tensor, Number); two numbers are a
    # TypeError (not Python's pow, whose big ints could take forever)
    if isinstance(input, _C.Tensor) and (isinstance(exponent, _C.Tensor) or _is_number(exponent)):
        return input.pow(exponent)
    if _is_number(input) and isinstance(exponent, _C.Tensor):
        return exponent.__rpow__(input)
    raise TypeError(f"pow() received an invalid combination of arguments - got ({type(input).__name__}, "
                    f"{type(exponent).__name__}), but expected one of:\n"
                    " * (Tensor input, Tensor exponent, *, Tensor out = None)\n"
                    " * (Number self, Tensor exponent, *, Tensor out = None)\n"
                    " * (Tensor input, Number exponent, *, Tensor out = None)")


_NOT_GIVEN = object()


@tensor_args("input")
def max(input, dim=_NOT_GIVEN, keepdim=False, *, out=None):
    if out is not None:
        return _minmax_out("max", max, input, dim, keepdim, out)
    if isinstance(dim, _C.Tensor):
        return input.maximum(dim)
    return input.max(dim, keepdim) if dim is not _NOT_GIVEN else input.max()  # dim=None: torch's TypeError


@tensor_args("input")
def min(input, dim=_NOT_GIVEN, keepdim=False, *, out=None):
    if out is not None:
        return _minmax_out("min", min, input, dim, keepdim, out)
    if isinstance(dim, _C.Tensor):
        return input.minimum(dim)
    return input.min(dim, keepdim) if dim is not _NOT_GIVEN else input.min()


def _minmax_out(name, fn, input, dim, keepdim, out):
    """max/min with out=: a tensor out for the full reduction and the elementwise overload, a
    (values, indices) tuple for a reduction over dim (torch's overloads)."""
    inputs = (input, dim) if isinstance(dim, _C.Tensor) else (input,)
    if dim is _NOT_GIVEN or isinstance(dim, _C.Tensor):
        if not isinstance(out, _C.Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if dim is _NOT_GIVEN:
            return out_call(name, lambda: fn(input), out, inputs, dtype="cancast")
        return out_call(name, lambda: fn(input, dim), out, inputs, grad=name + "imum", dtype="cast")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    kind = getattr(_return_types, name)
    return out_call_many(name, lambda: fn(input, dim, keepdim), out, inputs, kind=kind)


def rsub(input, other, alpha=1):
    return input.rsub(other) if alpha == 1 else (input * -alpha).add(other)


def is_floating_point(input):
    return input.is_floating_point()
