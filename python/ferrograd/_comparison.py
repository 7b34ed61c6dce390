"""Whole-tensor comparisons: isclose, allclose and equal."""

import builtins

from . import _C
from ._argcheck import tensor_args


@tensor_args("input", "other")
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if input.dtype != other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if input.dtype == _C.bool or not input.is_floating_point():
        a, b = input.to(_C.float64), other.to(_C.float64)
    else:
        a, b = input, other
    eq = a == b
    if equal_nan:
        eq = eq | (a.isnan() & b.isnan())
    with_tol = ((a - b).abs() <= atol + rtol * b.abs()) & a.isfinite() & b.isfinite()
    return (eq | with_tol).detach()


@tensor_args("input", "other")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@tensor_args("input", "other")
def equal(input, other):
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input == other).all().item())


# ------------------------------------------------------------------ exports
__all__ = """
isclose allclose equal
""".split()

# Tensor methods, installed once by _tensor_methods.py: these functions as methods (fn(input, ...) as
# fn(self, ...)), and methods installed as they are
TENSOR_METHODS = """
isclose allclose equal
""".split()
TENSOR_ATTRIBUTES = {}
