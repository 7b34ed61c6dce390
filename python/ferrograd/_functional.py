"""torch's function forms (`torch.exp(x)`, `torch.sum(x, 1)`), each forwarding to the Tensor
method of the same name, which calls the engine."""

import numbers

from . import _C
from ._argcheck import tensor_args

_METHODS = """
add sub subtract mul multiply div divide true_divide floor_divide remainder neg negative abs absolute
eq ne lt le gt ge greater less greater_equal less_equal not_equal maximum minimum clamp clip clamp_min clamp_max
exp log log2 log1p expm1 sqrt rsqrt sin cos tan tanh sigmoid relu sign floor ceil round trunc reciprocal square erf
isnan isinf isfinite logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
sum mean prod amax amin argmax argmin var std logsumexp norm all any cumsum
matmul mm bmm mv dot outer softmax log_softmax
reshape flatten squeeze unsqueeze transpose swapaxes permute movedim broadcast_to clone detach split chunk unbind
flip narrow select gather index_select masked_fill masked_select nonzero t
""".split()

__all__ = list(_METHODS) + ["pow", "max", "min", "rsub", "is_floating_point"]


def _forward(name):
    def fn(input, *args, **kwargs):
        if not isinstance(input, _C.Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        kwargs.pop("out", None)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: see Tensor.{name}."
    return fn


for _n in _METHODS:
    globals()[_n] = _forward(_n)


def _is_number(v):
    return isinstance(v, numbers.Number)


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


@tensor_args("input")
def max(input, dim=None, keepdim=False, *, out=None):
    if isinstance(dim, _C.Tensor):
        return input.maximum(dim)
    return input.max(dim, keepdim) if dim is not None else input.max()


@tensor_args("input")
def min(input, dim=None, keepdim=False, *, out=None):
    if isinstance(dim, _C.Tensor):
        return input.minimum(dim)
    return input.min(dim, keepdim) if dim is not None else input.min()


def rsub(input, other, alpha=1):
    return input.rsub(other) if alpha == 1 else (input * -alpha).add(other)


def is_floating_point(input):
    return input.is_floating_point()
