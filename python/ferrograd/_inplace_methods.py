"""Tensor in-place methods written in Python: the in-place forms of out-of-place ops (`_INPLACE`,
made by `_inplace` for every listed name whose out-of-place method exists and which the native class
lacks), the logical in-place ops, cumsum_/cumprod_, float_power_, gcd_, lcm_ and ldexp_.
(The top-level in-place functions, torch.relu_(x) and friends, are _inplace_functions.py.)

No gradient rule lives here. Note [in-place through copy_]: an in-place form `x.op_(...)` computes
`op(x, ...)` out of place and writes it with `x.copy_(result)`, the engine's differentiable in-place
write: it bumps the version counter, returns `self`, refuses a leaf that requires grad, writes through
a non-contiguous view into its base and rebases a view's history (CopySlices), so the gradient is
op's. When autograd records, `op` reads a clone of `x` (the copy_ would otherwise change a value
`op` saved for its backward). The result's grad_fn is CopyBackwards where torch names the op's own.
"""

import builtins

from . import _C
from ._op_utils import Tensor
from ._out import scalar_type_name as _tname
from ._pointwise import gcd, lcm, ldexp


_LEAF_MSG = "a leaf Variable that requires grad is being used in an in-place operation."


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
            # self's old values enter as a copy; an argument that is self stays self, so a rule that
            # saved it sees the write below and raises at backward, as torch's (v.addcmul_(v, v))
            src = self.clone()
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
gcd_ = _inplace("gcd_", gcd)
lcm_ = _inplace("lcm_", lcm)
ldexp_ = _inplace("ldexp_", ldexp)


# ------------------------------------------------------------------ exports
__all__ = """
gcd_ lcm_ ldexp_
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
gcd_ lcm_ ldexp_
""".split()
TENSOR_ATTRIBUTES = {n: globals()[n] for n in """
float_power_ cumsum_ cumprod_ logical_and_ logical_or_ logical_xor_ logical_not_
""".split()}
