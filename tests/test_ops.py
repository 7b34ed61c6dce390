"""Parity with torch of the engine's core ops (elementwise, comparison, reduction, matmul, shape, indexing):
one table of cases, each run through `parity.check_op`.

A case is (names it covers, fn(lib, *inputs), input specs, options). The helpers below expand an op over
the standard shape sets (same shape, broadcast, 0-d, empty, non-contiguous, float32, integer/bool).
`covered_op_names()` is the set of op names (torch spellings) that have a case; test_coverage.py checks
it against the op registry of the library under test.
"""
import math

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, check_op

CASES = []
_COVERED = set()
_IDS = set()


def case(covers, fn, *specs, id=None, **kw):
    """Register one parity case. covers: op names (torch spelling) that the case exercises."""
    covers = (covers,) if isinstance(covers, str) else tuple(covers)
    base = f"{covers[0]}-{id}" if id else covers[0]
    cid, n = base, 1
    while cid in _IDS:
        n += 1
        cid = f"{base}-{n}"
    _IDS.add(cid)
    _COVERED.update(covers)
    CASES.append(pytest.param(fn, specs, kw, id=cid))


def covered_op_names():
    """Names (as torch spells the function / method / dunder) of the ops that have a parity case:
    here, or in tests/test_op_table.py, which tests every row of the op table (names and aliases)
    on every dtype it declares."""
    table = set()
    if hasattr(fg._C, "op_table"):
        for row in fg._C.op_table():
            if row["binding"] in ("method", "custom"):  # (torch names; not the torch.special-only rows)
                table.update((row["name"], *row["aliases"]))
    return frozenset(_COVERED) | frozenset(table)


# ---------------------------------------------------------------- standard shape sets
UNARY = {
    "2d": (In((2, 3)),),
    "3d": (In((2, 3, 4)),),
    "0d": (In(()),),
    "empty": (In((0, 3)),),
    "T": (In((3, 4), layout="T"),),
    "step": (In((2, 3), layout="step"),),
    "f32": (In((2, 3), dtype="float32"),),
}
BINARY = {
    "same": (In((2, 3)), In((2, 3))),
    "bcast": (In((2, 3)), In((3,))),
    "bcast2": (In((4, 1, 3)), In((2, 1))),
    "0d_l": (In(()), In((2, 3))),
    "0d_r": (In((2, 3)), In(())),
    "empty": (In((0, 3)), In((3,))),
    "T": (In((3, 4), layout="T"), In((3, 4))),
    "step": (In((3, 4)), In((3, 4), layout="step")),
    "f32": (In((2, 3), dtype="float32"), In((2, 3), dtype="float32")),
    "f32_f64": (In((2, 3), dtype="float32"), In((3,))),
}


def unary(covers, fn, domain=None, shapes=UNARY, int_ok=False, tag=None, **kw):
    for sid, specs in shapes.items():
        case(covers, fn, *(s.with_domain(domain) for s in specs), id=f"{tag}_{sid}" if tag else sid, **kw)
    if int_ok:  # integer input: integer or float32 result as torch decides, no grad
        case(covers, fn, In((2, 3), domain=domain, dtype="int64"), id=f"{tag}_int64" if tag else "int64", **kw)


def binary(covers, fn, domains=(None, None), shapes=BINARY, int_ok=False, **kw):
    for sid, specs in shapes.items():
        case(covers, fn, *(s.with_domain(d) for s, d in zip(specs, domains)), id=sid, **kw)
    if int_ok:
        case(covers, fn, In((2, 3), domain=domains[0], dtype="int64"),
             In((3,), domain=domains[1], dtype="int64"), id="int64", **kw)


def V(*a, **kw):
    """An explicit float64 value input."""
    return In(value=np.array(*a, **kw))


def F(L):
    return L.nn.functional


# ---------------------------------------------------------------- arithmetic
binary(("add", "__add__"), lambda L, a, b: (a + b, L.add(a, b), a.add(b)), int_ok=True)
binary(("sub", "__sub__"), lambda L, a, b: (a - b, L.sub(a, b), a.sub(b)), int_ok=True)
binary(("mul", "__mul__"), lambda L, a, b: (a * b, L.mul(a, b), a.mul(b)), int_ok=True)
binary(("div", "__truediv__"), lambda L, a, b: (a / b, L.div(a, b), a.div(b)),
       domains=(None, "nonzero"), int_ok=True)
# torch has no derivative for floor_divide (backward raises), so it is forward-only.
binary(("floor_divide", "__floordiv__"), lambda L, a, b: (a // b, L.floor_divide(a, b)),
       domains=("ints", "nonzero"), int_ok=True, grad=False)
binary(("floor_divide", "__floordiv__"), lambda L, a, b: a // b, domains=(None, "nonzero"),
       shapes={"frac": BINARY["same"]}, grad=False)
binary(("remainder", "__mod__"), lambda L, a, b: (a % b, L.remainder(a, b), a.remainder(b)),
       domains=(None, "nonzero"), int_ok=True)
binary(("pow", "__pow__"), lambda L, a, b: (a ** b, L.pow(a, b), a.pow(b)), domains=("pos", None))
case(("pow", "__pow__"), lambda L, a, b: a ** b, In((2, 3), dtype="int64"),
     In((3,), domain="pos", dtype="int64"), id="int64")
unary(("neg", "__neg__"), lambda L, x: (-x, L.neg(x), x.neg()), int_ok=True)
unary(("abs", "__abs__"), lambda L, x: (abs(x), L.abs(x), x.abs()), domain="nonzero", int_ok=True)
case("abs", lambda L, x: x.abs(), V([-1.5, 0.0, 2.0]), id="at0")  # d|x|/dx at 0 is 0 in torch

# with Python scalars, reflected operands
for sid, f in {
    "add_s": lambda L, x: (x + 2, x + 2.5, L.add(x, 1.5), x.add(3)),
    "radd_s": lambda L, x: (2 + x, 2.5 + x),
    "sub_s": lambda L, x: (x - 2, x - 2.5, x.sub(1.5)),
    "rsub_s": lambda L, x: (2 - x, 2.5 - x),
    "mul_s": lambda L, x: (x * 3, x * -1.5, L.mul(x, 2), x.mul(0.5)),
    "rmul_s": lambda L, x: (3 * x, -1.5 * x),
    "div_s": lambda L, x: (x / 2, x / -1.5, L.div(x, 4.0)),
    "pow_s": lambda L, x: (x ** 2, x ** 3, x ** 0, x ** 1, L.pow(x, 2), x.pow(3.0)),
    "rpow_s": lambda L, x: (2 ** x, 2.5 ** x, L.pow(2.0, x)),
    "mod_s": lambda L, x: (x % 1.5, x % -1.5, L.remainder(x, 0.7)),
}.items():
    name = {"add_s": ("add", "__add__"), "radd_s": ("add", "__radd__"), "sub_s": ("sub", "__sub__"),
            "rsub_s": ("sub", "rsub", "__rsub__"), "mul_s": ("mul", "__mul__"),
            "rmul_s": ("mul", "__rmul__"), "div_s": ("div", "__truediv__"), "pow_s": ("pow", "__pow__"),
            "rpow_s": ("pow", "__rpow__"), "mod_s": ("remainder", "__mod__")}[sid]
    unary(name, f, shapes={k: UNARY[k] for k in ("2d", "0d", "empty", "T", "f32")}, tag=sid)
unary(("div", "__rtruediv__"), lambda L, x: (2 / x, -1.5 / x), domain="nonzero",
      shapes={k: UNARY[k] for k in ("2d", "0d", "empty", "f32")})
unary(("pow", "__pow__"), lambda L, x: (x ** 0.5, x ** -1, x ** -0.5, x ** 2.5), domain="pos",
      shapes={k: UNARY[k] for k in ("2d", "0d", "f32")})
# torch has no derivative for remainder(Scalar, Tensor): forward only
unary(("remainder", "__rmod__"), lambda L, x: 5.5 % x, domain="nonzero",
      shapes={k: UNARY[k] for k in ("2d", "0d")}, grad=False)
unary(("floor_divide", "__floordiv__", "__rfloordiv__"), lambda L, x: (x // 2, x // -1.5, 7 // x),
      domain="nonzero", shapes={k: UNARY[k] for k in ("2d", "0d", "f32")}, grad=False)
# integer tensors with Python scalars (and the dtypes torch gives)
case(("add", "sub", "mul", "__radd__", "__rsub__", "__rmul__"),
     lambda L, i: (i + 1, 1 + i, i - 2, 2 - i, i * 3, 3 * i, i + 1.5, i * 2.5),
     In((2, 3), dtype="int64"), id="int_scalar")
case(("div", "floor_divide", "remainder"),
     lambda L, i: (i / 2, i // 2, i // -3, i % 3, i % -3, 7 // i, 7 % i, 6 / i),
     In((2, 3), domain="nonzero", dtype="int64"), id="int_scalar")
case(("pow", "__rpow__"), lambda L, i: (i ** 2, 2 ** i, 2.0 ** i, i ** 0.5, i.pow(3)),
     In((2, 3), domain="pos", dtype="int64"), id="int_scalar")

# ---------------------------------------------------------------- comparisons and logic
for nm, op in (("eq", "__eq__"), ("ne", "__ne__"), ("lt", "__lt__"), ("le", "__le__"),
               ("gt", "__gt__"), ("ge", "__ge__")):
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[nm]
    f = eval(f"lambda L, a, b: (L.{nm}(a, b), a.{nm}(b), a {sym} b, a {sym} 1.0, 1 {sym} a, a.{nm}(0))")
    binary((nm, op), f, domains=("ints", "ints"), int_ok=True)
    case((nm, op), eval(f"lambda L, a, b: (a {sym} b, L.{nm}(a, b))"),
         In((2, 3), dtype="bool"), In((3,), dtype="bool"), id="bool")
for nm in ("logical_and", "logical_or", "logical_xor"):
    f = eval(f"lambda L, a, b: (L.{nm}(a, b), a.{nm}(b))")
    binary(nm, f, domains=("ints", "ints"), shapes={k: BINARY[k] for k in ("same", "bcast", "0d_l",
                                                                           "empty", "T")})
    case(nm, f, In((2, 3), dtype="bool"), In((3,), dtype="bool"), id="bool")
    case(nm, f, In((2, 3), dtype="int64"), In((2, 3), dtype="bool"), id="int_bool")
unary("logical_not", lambda L, x: (L.logical_not(x), x.logical_not()), domain="ints", int_ok=True)
case("logical_not", lambda L, b: (L.logical_not(b), b.logical_not()), In((2, 3), dtype="bool"), id="bool")
# isnan/isinf/isfinite: specials in float32/float64, integer and bool inputs (never differentiable)
SPECIALS = [0.0, -1.5, float("nan"), float("inf"), -float("inf"), 1e308, 5e-324]
for nm in ("isnan", "isinf", "isfinite"):
    f = eval(f"lambda L, x: (L.{nm}(x), x.{nm}())")
    case(nm, f, V(SPECIALS), id="f64")
    case(nm, f, In(value=np.array(SPECIALS[:5], dtype=np.float32), dtype="float32"), id="f32")
    case(nm, f, In((2, 3), domain="ints", dtype="int64"), id="int64")
    case(nm, f, In((2, 3), dtype="bool"), id="bool")
    case(nm, f, In((0, 3)), id="empty")
for nm, sym, dn in (("bitwise_and", "&", "__and__"), ("bitwise_or", "|", "__or__"),
                    ("bitwise_xor", "^", "__xor__")):
    case((nm, dn), eval(f"lambda L, a, b: (a {sym} b, L.{nm}(a, b))"),
         In((2, 3), dtype="bool"), In((2, 3), dtype="bool"), id="bool")
    case((nm, dn), eval(f"lambda L, a, b: a {sym} b"), In((2, 3), dtype="bool"),
         In((3,), dtype="bool"), id="bool_bcast")
    case((nm, dn), eval(f"lambda L, a, b: (a > 0) {sym} (b < 0)"), (2, 3), (2, 3), id="from_cmp")
case(("bitwise_not", "__invert__"), lambda L, b: (~b, L.bitwise_not(b)), In((2, 3), dtype="bool"), id="bool")
case(("bitwise_not", "__invert__"), lambda L, x: ~(x > 0), (2, 3), id="from_cmp")

# ---------------------------------------------------------------- where / maximum / minimum / clamp
case("where", lambda L, c, x, y: (L.where(c, x, y), x.where(c, y)),
     In((2, 3), dtype="bool"), (2, 3), (2, 3), id="same")
case("where", lambda L, c, x, y: L.where(c, x, y), In((3,), dtype="bool"), (2, 3), (2, 1), id="bcast")
case("where", lambda L, c, x, y: L.where(c, x, y), In((0, 3), dtype="bool"), (0, 3), (3,), id="empty")
case("where", lambda L, c, x, y: L.where(c, x, y), In((3, 4), dtype="bool"), In((3, 4), layout="T"),
     (), id="T_0d")
case("where", lambda L, x: (L.where(x > 0, x, 0.0), L.where(x > 0, 1.0, x)), (2, 3), id="scalar")
case("where", lambda L, c, x, y: L.where(c, x, y), In((2, 3), dtype="bool"),
     In((2, 3), dtype="float32"), (2, 3), id="promote")
for nm in ("maximum", "minimum"):
    binary(nm, eval(f"lambda L, a, b: (L.{nm}(a, b), a.{nm}(b))"), int_ok=True)
    binary(nm, eval(f"lambda L, a, b: L.{nm}(a, b)"), domains=("ints", "ints"),
           shapes={"ties": BINARY["same"]})  # ties split the gradient in torch
case(("max", "maximum"), lambda L, a, b: L.max(a, b), (2, 3), (3,), id="binary")
case(("min", "minimum"), lambda L, a, b: L.min(a, b), (2, 3), (3,), id="binary")
unary(("clamp", "clip"), lambda L, x: (x.clamp(-0.5, 0.5), L.clamp(x, min=-0.3), x.clamp(max=0.2),
                                       L.clip(x, -0.5, 0.5), x.clip(min=0.1)), int_ok=False)
case(("clamp",), lambda L, i: (i.clamp(-2, 3), L.clamp(i, min=0)), In((2, 3), dtype="int64"), id="int64")
case(("clamp",), lambda L, i: i.clamp(-2.5, 3.5), In((2, 3), dtype="int64"), id="int64_float_bound")
case("clamp", lambda L, x: x.clamp(-1.0, 1.0), V([-2.0, -1.0, 0.0, 1.0, 2.0]), id="at_bounds")

# ---------------------------------------------------------------- elementwise math
for nm, dom, int_ok in (
        ("exp", None, True), ("log", "pos", True), ("log2", "pos", False), ("log1p", "unit", False),
        ("expm1", None, False), ("sqrt", "pos", True), ("rsqrt", "pos", False), ("sin", None, True),
        ("cos", None, False), ("tan", "small", False), ("tanh", None, True), ("sigmoid", None, True),
        ("relu", "nonzero", True), ("sign", "nonzero", True), ("floor", None, True),
        ("ceil", None, True), ("round", None, True), ("trunc", None, True),
        ("reciprocal", "nonzero", True), ("square", None, True), ("erf", None, True)):
    unary(nm, eval(f"lambda L, x: (L.{nm}(x), x.{nm}())"), domain=dom, int_ok=int_ok)
unary(("floor", "ceil", "round", "trunc"),
      lambda L, x: (x.floor(), x.ceil(), x.round(), x.trunc()), domain="ints",
      shapes={"ints": UNARY["2d"]})
case("round", lambda L, x: L.round(x), V([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, -2.5001]), id="half_even")
case(("relu", "sign"), lambda L, x: (x.relu(), x.sign(), L.relu(x), L.sign(x)), V([-1.5, 0.0, 2.0]),
     id="at0")
case(("sign", "square"), lambda L, b: (b.sign(), L.sign(b), b.square()),
     In((2, 3), dtype="bool"), id="bool")
# the math functions of tests/test_math_ops.py (which covers them in depth): one case each here
for nm, dom in (("asin", "unit"), ("acos", "unit"), ("atan", None), ("sinh", None), ("cosh", None),
                ("asinh", None), ("atanh", "unit"), ("erfc", None), ("erfinv", "unit"), ("lgamma", "pos"),
                ("digamma", "pos"), ("i0", None), ("sgn", "nonzero"), ("fix", None)):
    unary(nm, eval(f"lambda L, x: (L.{nm}(x), x.{nm}())"), domain=dom,
          shapes={k: UNARY[k] for k in ("2d", "0d", "T", "f32")}, rtol=1e-6)
unary("acosh", lambda L, x: (L.acosh(x + 1), (x + 1).acosh()), domain="pos", shapes={"2d": UNARY["2d"]})
unary(("polygamma", "mvlgamma"), lambda L, x: (L.polygamma(1, x), x.polygamma(2), L.mvlgamma(x + 1, 2)),
      domain="pos", shapes={k: UNARY[k] for k in ("2d", "0d", "f32")}, rtol=1e-6)
binary("atan2", lambda L, a, b: (L.atan2(a, b), a.atan2(b)), shapes={k: BINARY[k] for k in ("same", "bcast", "T")})
binary("nextafter", lambda L, a, b: (L.nextafter(a, b), a.nextafter(b)), shapes={k: BINARY[k] for k in ("same", "bcast")},
       double=False)
# extreme ranges: stable formulas
case(("sigmoid", "tanh", "exp", "erf"),
     lambda L, x: (x.sigmoid(), x.tanh(), L.exp(x - 100.0), x.erf()),
     V([-100.0, -30.0, -1e-8, 0.0, 1e-8, 30.0, 100.0]), id="extreme")
case(("log1p", "expm1"), lambda L, x: (x.log1p(), x.expm1()), V([1e-12, -1e-10, 1e-5, 3.0]), id="tiny")
case(("log", "sqrt", "rsqrt", "reciprocal"), lambda L, x: (x.log(), x.sqrt(), x.rsqrt(), x.reciprocal()),
     V([1e-100, 1e-10, 1.0, 1e10, 1e100]), id="extreme", double=False)

# ---------------------------------------------------------------- reductions
R = {"2d": (In((3, 4)),), "3d": (In((2, 3, 4)),), "T": (In((3, 4), layout="T"),),
     "f32": (In((3, 4), dtype="float32"),)}


def reduction(covers, fn, shapes=R, domain=None, **kw):
    for sid, specs in shapes.items():
        case(covers, fn, *(s.with_domain(domain) for s in specs), id=sid, **kw)


reduction("sum", lambda L, x: (x.sum(), L.sum(x), x.sum(0), x.sum(-1), L.sum(x, dim=1, keepdim=True),
                               x.sum(dim=(0, 1)), x.sum((0, -1), keepdim=True)))
case("sum", lambda L, x: (x.sum(), x.sum(0), x.sum(1), x.sum(1, keepdim=True)), (0, 4), id="empty")
case("sum", lambda L, x: (x.sum(), x.sum(0), L.sum(x, -1, keepdim=True)), (), id="0d")
case("sum", lambda L, i: (i.sum(), i.sum(0), i.sum(1, keepdim=True)), In((3, 4), dtype="int64"), id="int64")
case("sum", lambda L, b: (b.sum(), b.sum(0)), In((3, 4), dtype="bool"), id="bool")
reduction("mean", lambda L, x: (x.mean(), L.mean(x), x.mean(0), x.mean(-1, keepdim=True),
                                x.mean(dim=(0, 1)), L.mean(x, (1, 0), keepdim=True)))
case("mean", lambda L, x: (x.mean(), x.mean(0), x.mean(1)), (0, 4), id="empty")  # nan and empty
case("mean", lambda L, x: (x.mean(), x.mean(0)), (), id="0d")
reduction("prod", lambda L, x: (x.prod(), L.prod(x), x.prod(0), x.prod(-1, keepdim=True),
                                L.prod(x, dim=1)))
case("prod", lambda L, x: (x.prod(), x.prod(0), x.prod(1)), V([[1.5, 0.0, 2.0], [0.5, -2.0, 3.0]]),
     id="one_zero")
case("prod", lambda L, x: (x.prod(), x.prod(0), x.prod(1)), V([[0.0, 0.0, 2.0], [0.5, 0.0, 3.0]]),
     id="two_zeros")
case("prod", lambda L, x: (x.prod(), x.prod(0), x.prod(1)), (0, 4), id="empty")
case("prod", lambda L, i: (i.prod(), i.prod(1)), In((2, 3), dtype="int64"), id="int64")
for nm in ("max", "min"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x), x.{nm}(dim=1), x.{nm}(0, keepdim=True), "
                       f"L.{nm}(x, -1), x.{nm}(dim=1).values, x.{nm}(dim=1).indices)"))
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), x.{nm}(1), x.{nm}(0, keepdim=True))"), domain="ints",
              shapes={"ties": R["2d"]})
    case(nm, eval(f"lambda L, i: (i.{nm}(), i.{nm}(1))"), In((3, 4), dtype="int64"), id="int64")
    case(nm, eval(f"lambda L, x: (x.{nm}(), x.{nm}(0))"), (), id="0d")
for nm in ("amax", "amin"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x, 1), x.{nm}(dim=(0, 1)), "
                       f"x.{nm}(-1, keepdim=True), x.{nm}((0, -1), keepdim=True))"))
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), x.{nm}(1), x.{nm}(0, keepdim=True))"), domain="ints",
              shapes={"ties": R["2d"]})
    case(nm, eval(f"lambda L, i: (i.{nm}(), i.{nm}(0))"), In((3, 4), dtype="int64"), id="int64")
for nm in ("argmax", "argmin"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x), x.{nm}(1), x.{nm}(dim=0, keepdim=True), "
                       f"L.{nm}(x, -1))"))
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), x.{nm}(1), x.{nm}(0))"), domain="ints",
              shapes={"ties": R["2d"]})
    case(nm, eval(f"lambda L, i: (i.{nm}(), i.{nm}(1))"), In((3, 4), dtype="int64"), id="int64")
for nm in ("var", "std"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x), x.{nm}(1), x.{nm}(0, unbiased=False), "
                       f"x.{nm}(dim=(0, 1)), x.{nm}(dim=-1, keepdim=True), x.{nm}(1, correction=0), "
                       f"L.{nm}(x, dim=-1, correction=2, keepdim=True), x.{nm}(unbiased=True), "
                       f"x.{nm}(correction=0))"))
reduction("logsumexp", lambda L, x: (L.logsumexp(x, 1), x.logsumexp(0), x.logsumexp(dim=(0, 1)),
                                     x.logsumexp(-1, keepdim=True)))
case("logsumexp", lambda L, x: (x.logsumexp(1), x.logsumexp(0)),
     V([[1000.0, 1001.0, -1000.0], [-1000.0, -1001.0, -1002.0]]), id="large")
case("logsumexp", lambda L, x: (x.logsumexp(1), x.logsumexp(0)), (0, 3), id="empty")
reduction("norm", lambda L, x: (x.norm(), L.norm(x), x.norm(p=1), x.norm(p=float("inf")), x.norm(p="fro"),
                                x.norm(dim=1), x.norm(p=1, dim=0, keepdim=True), L.norm(x, 2, dim=-1),
                                x.norm(float("inf"), dim=1), x.norm(3), x.norm(dim=(0, 1))),
          domain="nonzero")
for nm in ("all", "any"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x), x.{nm}(1), x.{nm}(dim=0, keepdim=True))"),
              domain="ints", shapes={"2d": R["2d"], "T": R["T"]})
    case(nm, eval(f"lambda L, b: (b.{nm}(), L.{nm}(b, 1), b.{nm}(0))"), In((3, 4), dtype="bool"), id="bool")
    case(nm, eval(f"lambda L, b: (b.{nm}(), b.{nm}(0), b.{nm}(1))"), In((0, 4), dtype="bool"), id="empty")
    case(nm, eval(f"lambda L, i: (i.{nm}(), i.{nm}(1))"), In((3, 4), dtype="int64"), id="int64")
reduction("cumsum", lambda L, x: (x.cumsum(0), L.cumsum(x, dim=-1), x.cumsum(dim=1)))
case("cumsum", lambda L, x: (x.cumsum(0), x.cumsum(1)), (0, 3), id="empty")
case("cumsum", lambda L, x: x.cumsum(0), (), id="0d")
case("cumsum", lambda L, i: (i.cumsum(0), i.cumsum(1)), In((3, 4), dtype="int64"), id="int64")
case("cumsum", lambda L, b: b.cumsum(1), In((3, 4), dtype="bool"), id="bool")

# 0-d and empty inputs for the remaining reductions (where torch defines them)
case(("amax", "amin", "max", "min", "argmax", "argmin"),
     lambda L, x: (x.amax(), x.amin(0), x.max(0), x.min(), x.argmax(), x.argmin(0)), (), id="0d")
case(("amax", "amin", "max", "argmax"), lambda L, x: (x.amax(1), x.amin(1), x.max(1), x.argmax(1)), (0, 4),
     id="empty_kept_dim")
case(("var", "std"), lambda L, x: (x.var(correction=0), x.std(0, correction=0)), (), id="0d")
case(("logsumexp", "norm"), lambda L, x: (x.logsumexp(0), x.norm(), x.norm(p=1)), In((), domain="nonzero"), id="0d")
case("norm", lambda L, x: (x.norm(), x.norm(dim=0), x.norm(dim=1)), (0, 4), id="empty")
case(("all", "any"), lambda L, x: (x.all(), x.any(0)), In((), domain="ints"), id="0d")
case(("softmax", "log_softmax"), lambda L, x: (x.softmax(0), x.log_softmax(-1)), (), id="0d")

# ---------------------------------------------------------------- linear algebra
MM = {
    "1d_1d": ((4,), (4,)), "2d_1d": ((3, 4), (4,)), "1d_2d": ((4,), (4, 5)), "2d_2d": ((3, 4), (4, 5)),
    "3d_3d": ((2, 3, 4), (2, 4, 5)), "bcast_batch": ((2, 1, 3, 4), (5, 4, 2)),
    "2d_3d": ((3, 4), (2, 4, 5)), "3d_2d": ((2, 3, 4), (4, 5)), "1d_3d": ((4,), (2, 4, 5)),
    "3d_1d": ((2, 3, 4), (4,)), "empty_m": ((0, 4), (4, 5)), "empty_k": ((3, 0), (0, 5)),
}
for sid, (sa, sb) in MM.items():
    case(("matmul", "__matmul__"), lambda L, a, b: (a @ b, L.matmul(a, b), a.matmul(b)), sa, sb, id=sid)
case(("matmul", "__matmul__"), lambda L, a, b: a @ b, In((3, 4), layout="T"), In((4, 5), layout="step"),
     id="noncontig")
case(("matmul", "__matmul__"), lambda L, a, b: a @ b, In((3, 4), dtype="float32"),
     In((4, 5), dtype="float32"), id="f32")
case("matmul", lambda L, a, b: a @ b, In((3, 4), dtype="int64"), In((4, 2), dtype="int64"), id="int64")
case("mm", lambda L, a, b: (L.mm(a, b), a.mm(b)), (3, 4), (4, 5), id="2d")
case("mm", lambda L, a, b: L.mm(a, b), In((3, 4), layout="T"), (4, 5), id="T")
case("mm", lambda L, a, b: L.mm(a, b), (0, 4), (4, 5), id="empty")
case("bmm", lambda L, a, b: (L.bmm(a, b), a.bmm(b)), (2, 3, 4), (2, 4, 5), id="3d")
case("bmm", lambda L, a, b: L.bmm(a, b), In((2, 3, 4), layout="T"), (2, 4, 5), id="T")
case("mv", lambda L, a, b: (L.mv(a, b), a.mv(b)), (3, 4), (4,), id="2d")
case("mv", lambda L, a, b: L.mv(a, b), In((3, 4), layout="T"), In((4,), layout="step"), id="noncontig")
case("dot", lambda L, a, b: (L.dot(a, b), a.dot(b)), (5,), (5,), id="1d")
case("dot", lambda L, a, b: L.dot(a, b), (0,), (0,), id="empty")
case("dot", lambda L, a, b: L.dot(a, b), In((5,), layout="step"), (5,), id="step")
case("outer", lambda L, a, b: (L.outer(a, b), a.outer(b)), (3,), (4,), id="1d")
case("outer", lambda L, a, b: L.outer(a, b), (0,), (4,), id="empty")

# ---------------------------------------------------------------- softmax family
SM = {"2d": (In((3, 4)),), "3d": (In((2, 3, 4)),), "T": (In((3, 4), layout="T"),),
      "f32": (In((3, 4), dtype="float32"),), "empty": (In((0, 4)),)}
for nm in ("softmax", "log_softmax"):
    reduction(nm, eval(f"lambda L, x: (x.{nm}(-1), L.{nm}(x, 0), F(L).{nm}(x, dim=1), x.{nm}(dim=1))"),
              shapes=SM)
    case(nm, eval(f"lambda L, x: (x.{nm}(1), F(L).{nm}(x, dim=0))"),
         V([[1000.0, 1001.0, -1000.0], [-1000.0, -1001.0, -1002.0]]), id="large")

# ---------------------------------------------------------------- views and shape
case(("reshape", "view"), lambda L, x: (x.reshape(4, 3), x.reshape(-1), x.reshape((2, -1)),
                                        L.reshape(x, (12,)), x.view(4, 3), x.view(-1), x.view(2, 2, 3),
                                        x.view((6, 2)), x.reshape(1, 3, 1, 4)), (3, 4), id="2d")
case("reshape", lambda L, x: (x.reshape(-1), x.reshape(2, 6), L.reshape(x, (4, 3))),
     In((3, 4), layout="T"), id="T")
case("reshape", lambda L, x: (x.reshape(2, 3), x.reshape(3, 2), x.reshape(-1)),
     In((2, 3), layout="step"), id="step")
case(("reshape", "view"), lambda L, x: (x.reshape(1, 1), x.view(-1), x.reshape(())), (), id="0d")
case(("reshape", "view"), lambda L, x: (x.reshape(3, 0), x.view(-1), x.reshape(0, 5, 3)), (0, 3), id="empty")
case(("reshape", "view"), lambda L, i: (i.reshape(4, 3), i.view(-1)), In((3, 4), dtype="int64"), id="int64")
case("flatten", lambda L, x: (x.flatten(), L.flatten(x, 1), x.flatten(0, 1), x.flatten(start_dim=-2),
                              x.flatten(end_dim=-2)), (2, 3, 4), id="3d")
case("flatten", lambda L, x: (x.flatten(), x.flatten(1)), In((3, 4), layout="T"), id="T")
case("flatten", lambda L, x: x.flatten(), (), id="0d")
case("squeeze", lambda L, x: (x.squeeze(), x.squeeze(1), x.squeeze(-1), x.squeeze(0), L.squeeze(x, 3),
                              x.squeeze((1, 3)), L.squeeze(x)), (2, 1, 3, 1), id="4d")
case("squeeze", lambda L, x: (x.squeeze(), x.squeeze(0)), (1,), id="1")
case("squeeze", lambda L, x: (x.squeeze(), x.squeeze(0)), (), id="0d")
case("squeeze", lambda L, x: (x.squeeze(), x.squeeze(1)), In((2, 1, 3, 4), layout="T"), id="T")
case("unsqueeze", lambda L, x: (x.unsqueeze(0), x.unsqueeze(-1), L.unsqueeze(x, 1), x.unsqueeze(2),
                                x.unsqueeze(-3)), (2, 3), id="2d")
case("unsqueeze", lambda L, x: (x.unsqueeze(0), x.unsqueeze(-1)), (), id="0d")
case("unsqueeze", lambda L, x: x.unsqueeze(1), In((3, 4), layout="T"), id="T")
case(("transpose", "t"), lambda L, x: (x.transpose(0, 1), L.transpose(x, -1, 0), x.t(), L.t(x),
                                       x.transpose(1, 1)), (3, 4), id="2d")
case("transpose", lambda L, x: (x.transpose(0, 2), x.transpose(-1, -2), L.transpose(x, 1, 0)), (2, 3, 4),
     id="3d")
case("transpose", lambda L, x: x.transpose(0, 1) * 2, In((3, 4), layout="T"), id="T")
case("t", lambda L, x: (x.t(), L.t(x)), (3,), id="1d")
case("permute", lambda L, x: (x.permute(2, 0, 1), x.permute((1, 0, 2)), L.permute(x, (2, 1, 0)),
                              x.permute(-1, 0, 1), x.permute(0, 1, 2)), (2, 3, 4), id="3d")
case("permute", lambda L, x: x.permute(1, 0), In((3, 4), layout="T"), id="T")
case("permute", lambda L, x: x.permute(2, 0, 1), (2, 0, 3), id="empty")
case("expand", lambda L, x: (x.expand(3, 4), x.expand(2, 3, 4), x.expand(-1, 4), x.expand((2, -1, 5))),
     (3, 1), id="2d")
case("expand", lambda L, x: (x.expand(2, 3), x.expand(1)), (), id="0d")
case("expand", lambda L, x: x.expand(2, 4, 3), In((4, 1), layout="step").with_domain(None), id="step")
case("expand", lambda L, x: x.expand(2, 0, 3), (0, 3), id="empty")
case("expand_as", lambda L, x, y: (x.expand_as(y), x.expand_as(y) * y), (3, 1), (2, 3, 4), id="3d")
case("broadcast_to", lambda L, x: (L.broadcast_to(x, (2, 3, 4)), x.broadcast_to((3, 4)),
                                   x.broadcast_to((3, -1))), (3, 1), id="2d")
case("contiguous", lambda L, x: (x.contiguous(), x.contiguous() * 2), In((3, 4), layout="T"), id="T")
case("contiguous", lambda L, x: x.contiguous(), (2, 3), id="contig")
case("clone", lambda L, x: (x.clone(), L.clone(x)), (2, 3), id="2d")
case("clone", lambda L, x: x.clone(), In((3, 4), layout="T"), id="T")
case("clone", lambda L, i: i.clone(), In((2, 3), dtype="int64"), id="int64")
case("detach", lambda L, x: (x.detach(), x.detach() * x, L.detach(x) + x), (2, 3), id="2d")
case("cat", lambda L, a, b: (L.cat([a, b]), L.cat((a, b), dim=0), L.cat([a, b, a], 0)),
     (2, 3), (4, 3), id="dim0")
case("cat", lambda L, a, b: (L.cat([a, b], 1), L.cat([a, b], dim=-1)), (2, 3), (2, 1), id="dim1")
case("cat", lambda L, a, b, c: (L.cat([a, b, c], 0), L.cat([b, a], 0)), (2, 3), (0, 3), (1, 3), id="empty")
case("cat", lambda L, a, b: L.cat([a, b], 1), In((3, 4), layout="T"), In((3, 2), layout="step"), id="noncontig")
case("cat", lambda L, a: L.cat([a]), (2, 3), id="single")
case("cat", lambda L, a, b: L.cat([a, b]), In((2, 3), dtype="float32"), (1, 3), id="promote")
case("cat", lambda L, a, b: L.cat([a, b], 1), In((2, 3), dtype="int64"), In((2, 2), dtype="int64"), id="int64")
case("stack", lambda L, a, b: (L.stack([a, b]), L.stack((a, b), 1), L.stack([a, b, a], dim=-1),
                               L.stack([a], 2)), (2, 3), (2, 3), id="2d")
case("stack", lambda L, a, b: (L.stack([a, b]), L.stack([b, a], -1)), (), (), id="0d")
case("stack", lambda L, a, b: L.stack([a, b], 1), In((3, 4), layout="T"), (3, 4), id="T")
case("stack", lambda L, a, b: L.stack([a, b]), (0, 3), (0, 3), id="empty")
case("split", lambda L, x: (x.split(2), x.split([1, 3], dim=1), L.split(x, 2, dim=-1), x.split(5),
                            L.split(x, [2, 0, 3])), (5, 4), id="2d")
case("split", lambda L, x: x.split(2, 1), In((3, 4), layout="T"), id="T")
case("chunk", lambda L, x: (x.chunk(3), x.chunk(2, dim=1), L.chunk(x, 4, 0), x.chunk(1), x.chunk(5, -1)),
     (6, 4), id="2d")
case("chunk", lambda L, x: x.chunk(3), (5, 2), id="uneven")
case("repeat", lambda L, x: (x.repeat(2, 3), x.repeat(2, 1, 1), x.repeat(1, 1), x.repeat((1, 2))),
     (2, 3), id="2d")
case("repeat", lambda L, x: (x.repeat(3), x.repeat(2, 2)), (), id="0d")
case("repeat", lambda L, x: x.repeat(2, 1), In((3, 4), layout="T"), id="T")
case("repeat", lambda L, x: x.repeat(0, 2), (2, 3), id="zero")
case("flip", lambda L, x: (x.flip(0), L.flip(x, (0, 1)), x.flip(-1), x.flip([2, 0])), (2, 3, 4), id="3d")
case("flip", lambda L, x: x.flip(0), In((3, 4), layout="T"), id="T")
case("narrow", lambda L, x: (x.narrow(0, 1, 2), L.narrow(x, -1, 0, 2), x.narrow(1, 3, 1),
                             x.narrow(0, 2, 0)), (3, 4), id="2d")
case("narrow", lambda L, x: x.narrow(1, 1, 2), In((3, 4), layout="T"), id="T")
case("T", lambda L, x: (x.T, x.T @ x), (3, 4), id="2d")
case("T", lambda L, x: x.T, In((3, 4), layout="T"), id="T")
case("mT", lambda L, x: (x.mT, x.mT.sum(0)), (2, 3, 4), id="3d")
case("mT", lambda L, x: x.mT, (3, 4), id="2d")

# ---------------------------------------------------------------- indexing
GI = ("getitem", "__getitem__")
case(GI + ("select",), lambda L, x: (x[1], x[-1], x[1, 2], x[-1, -5], x[0][1]), (4, 5), id="int")
case(GI + ("slice",), lambda L, x: (x[1:3], x[::2], x[1::2, 1:4:2], x[:, -2:], x[-3:-1, ::3], x[3:1],
                                    x[:100], x[2:]), (4, 5), id="slice")
case(GI, lambda L, x: (x[None], x[:, None], x[..., 0], x[..., None], x[1, ...], x[None, ..., 1],
                       x[...], x[None, None, 2, None]), (4, 5), id="none_ellipsis")
case(GI + ("index",), lambda L, x: (x[x > 0], x[(x > 0).all(1)], x[:, x[0] > 0]), (4, 5), id="bool_mask")
case(GI + ("index",), lambda L, x, m: (x[m], x[1:, m[0]]), (4, 5), In((4, 5), dtype="bool"), id="bool_input")
case(GI + ("index",),
     lambda L, x: (x[L.tensor([0, 2, 2])], x[L.tensor([0, 2]), 1], x[L.tensor([0, 3]), L.tensor([4, 1])],
                   x[[0, 3]], x[L.tensor([[0, 1], [3, 3]])], x[:, L.tensor([1, 1, 0])],
                   x[1:3, [0, 2]], x[L.tensor([-1, 0])], x[L.tensor(1)], x[L.tensor([], dtype=L.int64)]),
     (4, 5), id="int_tensor")
case(GI + ("index",), lambda L, y: (y[[0, 2], :, [1, 3]], y[:, [0, 1], [1, 2]], y[1, :, [0, 0, 4]],
                                    y[None, [1], ..., 2], y[..., L.tensor([3, 0])]),
     (3, 4, 5), id="advanced_3d")
case(GI + ("select", "slice", "index"), lambda L, x: (x[1], x[::2, 1:], x[L.tensor([2, 0])], x[x > 0]),
     In((4, 5), layout="T"), id="T")
case(GI, lambda L, x: (x[1:1], x[0:0, 2]), (4, 5), id="empty_result")
case(GI, lambda L, x: (x[0], x[1:, ::2], x[L.tensor([1, 0])]), In((3, 4), dtype="int64"), id="int64")
case("gather", lambda L, x: (x.gather(1, L.tensor([[0, 0], [1, 4], [2, 2], [3, 1]])),
                             L.gather(x, 0, L.tensor([[3, 2, 1, 0, 0]])),
                             x.gather(-1, L.tensor([[1], [1], [1], [1]]))), (4, 5), id="2d")
case("gather", lambda L, x: x.gather(0, L.tensor([[2, 0, 1], [0, 0, 0]])), In((3, 3), layout="T"), id="T")
case("scatter_add", lambda L, x, s: (x.scatter_add(1, L.tensor([[0, 0], [1, 4], [2, 2], [3, 1]]), s[:, :2]),
                                    L.scatter_add(x, 0, L.tensor([[3, 3, 1, 0, 3]]), s[:1].expand(1, 5) * 1),
                                    x.scatter_add(-1, L.tensor([[1], [1], [1], [1]]), s[:, 1:2])), (4, 5), (4, 5), id="2d")
case("scatter_add", lambda L, x, s: x.scatter_add(0, L.tensor([[2, 0, 2], [0, 0, 0]]), s), In((3, 3), layout="T"),
     In((2, 3), layout="T"), id="T")
case("index_select", lambda L, x: (x.index_select(0, L.tensor([2, 0, 2])), L.index_select(x, 1, L.tensor([4])),
                                   x.index_select(-1, L.tensor([], dtype=L.int64))), (4, 5), id="2d")
case("index_select", lambda L, x: x.index_select(1, L.tensor([1, 1, 0])), In((3, 4), layout="T"), id="T")
case("masked_fill", lambda L, x: (x.masked_fill(x > 0, 0.0), L.masked_fill(x, x < 0, -1.5),
                                  x.masked_fill(L.tensor([True, False, True]), 2)), (2, 3), id="scalar")
case("masked_fill", lambda L, x, v: x.masked_fill(x > 0, v), (2, 3), (), id="tensor_value")
case("masked_fill", lambda L, x, m: x.masked_fill(m, 7.0), In((3, 4), layout="T"), In((4,), dtype="bool"),
     id="T_bcast")
case("masked_fill", lambda L, i: i.masked_fill(i > 0, -1), In((2, 3), dtype="int64"), id="int64")


# ---------------------------------------------------------------- __setitem__ (on a non-leaf clone)
def _set(fn):
    def f(L, x, *vals):
        y = x.clone()
        fn(L, y, *vals)
        return y
    return f


def _s_scalar(L, y):
    y[0] = 2.0
    y[:, 1] = -1
    y[1, 2] = 5.5


def _s_tensor(L, y, v):
    y[1] = v


def _s_bcast(L, y, v):
    y[:, 1:3] = v


def _s_mask(L, y, v):
    y[y > 0] = v


def _s_mask_scalar(L, y):
    y[y < 0] = 0.0


def _s_index(L, y, v):
    y[L.tensor([2, 0])] = v


def _s_ellipsis(L, y, v):
    y[..., 0] = v


def _s_elem(L, y, v):
    y[1, 2] = v


def _s_step(L, y, v):
    y[::2] = v


def _s_iadd(L, y, v):
    y[0] += v
    y[:, 1] *= 2.0


def _s_int(L, i):
    i[0] = 7
    i[1, ::2] = 2.7  # truncated to 2


SI = ("setitem", "__setitem__")
case(SI, _set(_s_scalar), (3, 4), id="scalar")
case(SI, _set(_s_tensor), (3, 4), (4,), id="tensor")
case(SI, _set(_s_bcast), (3, 4), (3, 1), id="bcast")
case(SI, _set(_s_mask), (3, 4), (), id="mask")
case(SI, _set(_s_mask_scalar), (3, 4), id="mask_scalar")
case(SI + ("index_put_",), _set(_s_index), (3, 4), (2, 4), id="index")
case(SI, _set(_s_ellipsis), (2, 3, 4), (2, 3), id="ellipsis")
case(SI, _set(_s_elem), (3, 4), (), id="elem")
case(SI, _set(_s_step), (3, 4), (4,), id="step")
case(SI, _set(_s_tensor), In((4, 3), layout="T"), (3,), id="T")
case(SI + ("__iadd__", "__imul__"), _set(_s_iadd), (3, 4), (4,), id="iadd_view")
case(SI, _set(_s_int), In((2, 3), dtype="int64"), id="int64")
case(SI, _set(_s_tensor), (3, 4), In((4,), dtype="float32"), id="f32_value")

# ---------------------------------------------------------------- conversion
case(("to", "float", "double", "long", "bool"),
     lambda L, x: (x.to(L.float32), x.to(dtype=L.float32), x.float(), x.double(), x.long(), x.bool(),
                   x.to(L.int64), x.to(L.float64), x.to(L.bool)), (2, 3), id="f64")
case(("to", "float", "double", "long", "bool"),
     lambda L, x: (x.to(L.float64), x.double(), x.float(), x.long(), x.bool()),
     In((2, 3), dtype="float32"), id="f32")
case(("to", "float", "double", "long", "bool"), lambda L, x: (x.float(), x.long(), x.bool()),
     V([-2.7, -0.5, 0.0, 0.5, 2.7]), id="trunc")
case(("to", "float", "double", "long", "bool"),
     lambda L, i: (i.float(), i.double(), i.bool(), i.to(L.float32), i.long()), In((2, 3), dtype="int64"),
     id="int64")
case(("to", "float", "long"), lambda L, b: (b.float(), b.long(), b.to(L.float64), b.bool()),
     In((2, 3), dtype="bool"), id="bool")
case("to", lambda L, x: x.to(L.float32), In((3, 4), layout="T"), id="T")
case("type_as", lambda L, x, y, i: (x.type_as(y), y.type_as(x), x.type_as(i), i.type_as(x)),
     (2, 3), In((2,), dtype="float32"), In((1,), dtype="int64"), id="mixed")

# ---------------------------------------------------------------- type promotion
f32, i64, bl = (lambda s: In(s, dtype="float32")), (lambda s: In(s, dtype="int64")), (lambda s: In(s, dtype="bool"))
case("add", lambda L, x: (x + 2.5, x + 2, 2.5 * x, x / 3), f32((2, 3)), id="promo_f32_pyscalar")
case("add", lambda L, i: (i + 2.5, i * 1.0, i - 0.5, i + 2, i * True), i64((2, 3)), id="promo_i64_pyscalar")
case("add", lambda L, i, x: (i + x, x * i, x - i, i / x), i64((2, 3)), (2, 3), id="promo_i64_f64")
case("add", lambda L, i, x: (i + x, x * i), i64((2, 3)), f32((2, 3)), id="promo_i64_f32")
case("div", lambda L, i, j: (i / j, L.div(i, j), i / 2, 5 / i), i64((2, 3)), In((2, 3), "nonzero", "int64"),
     id="promo_int_truediv")
case("add", lambda L, a, b: (a + b, a * b, a ^ b), bl((2, 3)), bl((2, 3)), id="promo_bool_bool")
case("add", lambda L, b, i: (b + i, b * i, b + 1, b * 2.5, b + 1.5, b.sum()), bl((2, 3)), i64((2, 3)),
     id="promo_bool_int")
case("add", lambda L, b, x: (b + x, b * x), bl((2, 3)), f32((2, 3)), id="promo_bool_f32")
case("add", lambda L, a, b: (a + b, a * b, L.maximum(a, b), L.where(a > 0, a, b)), f32((2, 3)), (2, 3),
     id="promo_f32_f64")
case("add", lambda L, a, s: (a + s, a * s, s - a), f32((2, 3)), In(()), id="promo_f32_0d_f64")
case("add", lambda L, i, s: (i + s, i * s), i64((2, 3)), In(()), id="promo_i64_0d_f64")
case("add", lambda L, s, x: (s + x, x * s), i64(()), f32((2, 3)), id="promo_0d_i64_f32")
case("add", lambda L, a, s: (a + s, a * s), f32(()), (), id="promo_0d_0d")
case("eq", lambda L, a, b: (a == b, a < b, L.eq(a, b)), f32((2, 3)), i64((2, 3)), id="promo_cmp")
case("cat", lambda L, i, x: L.cat([i, x]), i64((2, 3)), f32((1, 3)), id="promo_int_float")

# ---------------------------------------------------------------- in-place (on non-leaf clones)


def _inplace(fn):
    def f(L, x, *others):
        y = x.clone()
        fn(L, y, *others)
        return y
    return f


case("add_", _inplace(lambda L, y, z: y.add_(z)), (2, 3), (2, 3), id="tensor")
case("add_", _inplace(lambda L, y, z: y.add_(z)), (2, 3), (3,), id="bcast")
case("add_", _inplace(lambda L, y: y.add_(2.0)), (2, 3), id="scalar")
case("sub_", _inplace(lambda L, y, z: y.sub_(z).sub_(1.5)), (2, 3), (3,), id="tensor")
case("mul_", _inplace(lambda L, y, z: y.mul_(z).mul_(3)), (2, 3), (2, 3), id="tensor")
case("mul_", _inplace(lambda L, y, z: y.mul_(z)), (2, 3), (), id="0d")
case("div_", _inplace(lambda L, y, z: y.div_(z).div_(2)), (2, 3), In((3,), domain="nonzero"),
     id="tensor")
case("zero_", _inplace(lambda L, y: y.zero_()), (2, 3), id="2d")
case("zero_", _inplace(lambda L, y, z: (y.mul_(z), y.zero_(), y.add_(z))), (2, 3), (3,), id="chain")
case("fill_", _inplace(lambda L, y: y.fill_(1.5)), (2, 3), id="2d")
case("fill_", _inplace(lambda L, y: y[0].fill_(-2)), (2, 3), id="view")
case("copy_", _inplace(lambda L, y, z: y.copy_(z)), (2, 3), (3,), id="bcast")
case("copy_", _inplace(lambda L, y, z: y.copy_(z)), (2, 3), In((2, 3), dtype="float32"), id="dtype")
case("copy_", _inplace(lambda L, y, z: y[:, 1].copy_(z)), (2, 3), (2,), id="view")
case("clamp_", _inplace(lambda L, y: y.clamp_(-0.5, 0.5)), (2, 3), id="both")
case("clamp_", _inplace(lambda L, y: y.clamp_(min=0.0).clamp_(max=0.7)), (2, 3), id="one")


def _iops(L, y, z):
    y += z
    y -= 0.5
    y *= z
    y /= 2
    y += 1
    y *= 3.0
    y -= z


def _iops_t(L, y, z):
    y /= z


case(("__iadd__", "__isub__", "__imul__", "__itruediv__", "add_", "sub_", "mul_", "div_"),
     _inplace(_iops), (2, 3), (3,), id="operators")
case(("__itruediv__", "div_"), _inplace(_iops_t), (2, 3), In((2, 3), domain="nonzero"), id="operators")
case(("mul_", "__imul__"), _inplace(lambda L, y, z: y[1].mul_(z)), (3, 4), (4,), id="view")
case(("add_", "__iadd__"), _inplace(lambda L, y, z: y.t().add_(z)), (3, 4), (4, 1), id="view_T")


def _int_iops(L, i, j):
    i += j
    i *= 2
    i.sub_(1)
    i.clamp_(-3, 3)


case(("add_", "mul_", "sub_", "clamp_", "__iadd__", "__imul__"), _inplace(_int_iops),
     In((2, 3), dtype="int64"), In((3,), dtype="int64"), id="int64")


# a non-leaf that is modified in place after use by an op that does not save it: still differentiable
def _use_then_modify(L, x, z):
    y = x.clone()
    a = y + z        # add saves nothing
    y.mul_(2.0)
    return a, y


case(("add", "mul_"), _use_then_modify, (2, 3), (2, 3), id="unsaved")


# ---------------------------------------------------------------- the tests
@pytest.mark.parametrize("fn,specs,kw", CASES)
def test_op(fn, specs, kw):
    check_op(fn, *specs, **kw)


# ---------------------------------------------------------------- the helper itself must be able to fail
# Each pair: (what torch runs, what the library under test runs). check_op calls fn once per library,
# torch first, so the pair also works torch-vs-torch.
_WRONG = {
    "value": (lambda L, x: x * 2, lambda L, x: x * 2.000001),
    "shape": (lambda L, x: x.sum(), lambda L, x: x.sum(0, keepdim=True)),
    "dtype": (lambda L, x: x + 1, lambda L, x: (x + 1).float()),
    "int_value": (lambda L, x: x.argmax(), lambda L, x: x.argmin()),
    "grad": (lambda L, x: x * x, lambda L, x: x * x.detach()),
    "grad_only": (lambda L, x: x ** 3, lambda L, x: x * (x * x).detach()),
    "second_order": (lambda L, x: x.exp(), lambda L, x: x.detach().exp() * (x - x.detach() + 1)),
    "arity": (lambda L, x: (x, x), lambda L, x: (x,)),
    "requires_grad": (lambda L, x: x + 1, lambda L, x: (x + 1).detach()),
    "namedtuple": (lambda L, x: x.max(0), lambda L, x: tuple(x.max(0))),
    "grad_none": (lambda L, x, y: x * 2, lambda L, x, y: x * 2 + y * 0),
}


@pytest.mark.parametrize("name", sorted(_WRONG))
def test_parity_helper_detects(name):
    """check_op must fail when the two sides disagree (values, shapes, dtypes, grads, 2nd order...)."""
    calls = []

    def fn(L, *xs):
        calls.append(L)
        return _WRONG[name][len(calls) - 1](L, *xs)

    with pytest.raises(AssertionError):
        check_op(fn, *([(3,)] * (2 if name == "grad_none" else 1)))
    assert len(calls) >= 1


def test_covered_names_are_torch_names():
    """Every name claimed as covered exists in torch (function, Tensor method or dunder)."""
    bogus = [n for n in covered_op_names()
             if not (hasattr(torch, n) or hasattr(torch.Tensor, n)
                     or (n.startswith("nn.functional.") and hasattr(torch.nn.functional, n.split(".")[-1]))
                     or n in ("getitem", "setitem", "rsub", "index", "slice"))]
    assert not bogus, bogus


# ---------------------------------------------------------------- sliding windows (conv/pool building blocks)
case("nn.functional.unfold", lambda L, x: L.nn.functional.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
     (2, 3, 5, 7), id="geometry")
case("nn.functional.unfold", lambda L, x: L.nn.functional.unfold(x, 2), In((1, 2, 4, 4), layout="T"), id="T")
case("nn.functional.fold", lambda L, c: L.nn.functional.fold(c, (4, 5), (2, 2), stride=1), (2, 8, 12), id="overlap")
case("nn.functional.fold", lambda L, c: L.nn.functional.fold(c, (5, 6), (2, 3), padding=1, stride=(2, 1)), (1, 6, 18), id="padded")


# ---------------------------------------------------------------- output layout of elementwise ops
# Note [Elementwise output layout]: torch's elementwise outputs follow the inputs' memory order
# (TensorIterator), which decides strides, is_contiguous() and whether .view() works downstream.
LAYOUT_CASES = {
    "transposed_unary": lambda L: L.ones(4, 2).t().exp(),
    "clone_keeps_size1_strides": lambda L: L.ones(1, 2).t().clone(),
    "clone_keeps_size1_strides_3d": lambda L: L.ones(2, 1, 3).transpose(0, 1).clone(),
    "permuted_3d": lambda L: L.ones(2, 3, 4).permute(2, 0, 1).tanh(),
    "both_transposed": lambda L: L.ones(4, 3).t() + L.ones(4, 3).t(),
    "transposed_first": lambda L: L.ones(4, 3).t() + L.ones(3, 4),
    "contiguous_first": lambda L: L.ones(3, 4) * L.ones(4, 3).t(),
    "transposed_with_row": lambda L: L.ones(4, 3).t() + L.ones(4),
    "transposed_with_column": lambda L: L.ones(4, 3).t() - L.ones(3, 1),
    "transposed_times_number": lambda L: L.ones(4, 3).t() * 2.0,
    "number_minus_transposed": lambda L: 2.0 - L.ones(4, 3).t(),
    "sliced_columns": lambda L: L.ones(4, 6)[:, ::2].exp(),
    "sliced_then_transposed": lambda L: L.ones(6, 4)[::2].t().sigmoid(),
    "where": lambda L: L.where(L.ones(4, 3).t() > 0, L.ones(3, 4), 2.0),
    "unsqueezed_transposed": lambda L: L.ones(3, 4).t().unsqueeze(1).exp(),
    "broadcast_3d": lambda L: L.ones(2, 3, 4).permute(0, 2, 1) * L.ones(4, 1),
    "expanded": lambda L: L.ones(3, 1).expand(3, 4).exp(),
    "comparison": lambda L: L.ones(4, 3).t() > 0.5,
    "cast": lambda L: L.ones(4, 3).t().double(),
    "transposed_3d_pair": lambda L: L.ones(5, 4, 3).transpose(0, 2) - L.ones(5, 4, 3).transpose(0, 2),
    # clone keeps the strides of a dense (permuted) tensor, contiguous() does not
    "clone_transposed": lambda L: L.arange(8.0).reshape(4, 2).t().clone(),
    "clone_permuted": lambda L: L.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).clone(),
    "clone_sliced": lambda L: L.arange(24.0).reshape(4, 6)[:, ::2].clone(),
    "clone_offset_view": lambda L: L.arange(6.0).reshape(2, 3).t()[1:].clone(),
    "contiguous_transposed": lambda L: L.arange(8.0).reshape(4, 2).t().contiguous(),
    # storage-only dtypes (computed in a wider type): the same layout rules
    "float16_transposed_plus": lambda L: L.arange(6.0).reshape(2, 3).half().t() + 1,
    "bfloat16_transposed_exp": lambda L: L.arange(6.0).reshape(2, 3).t().bfloat16().exp(),
    "int8_transposed_clone": lambda L: L.arange(6).reshape(2, 3).to(L.int8).t().clone(),
    "uint8_where": lambda L: L.where(L.ones(3, 2, dtype=L.bool).t(), L.arange(6).reshape(2, 3).to(L.uint8), 0),
    # ops whose torch kernels work on a contiguous copy: contiguous results
    "softmax": lambda L: L.softmax(L.arange(12.0).reshape(4, 3).t(), 1),
    "log_softmax": lambda L: L.log_softmax(L.arange(12.0).reshape(4, 3).t(), 0),
    "layer_norm": lambda L: L.nn.functional.layer_norm(L.arange(12.0).reshape(4, 3).t(), (4,)),
    "masked_fill": lambda L: (lambda x: x.masked_fill(x > 3, 1.0))(L.arange(12.0).reshape(4, 3).t()),
    "softmax_grad": lambda L: (lambda x: L.autograd.grad((L.softmax(x, 1) * x.detach()).sum(), x)[0])(
        L.arange(12.0).reshape(4, 3).t().requires_grad_()),
    "log_softmax_grad": lambda L: (lambda x: L.autograd.grad((L.log_softmax(x, 1) * x.detach()).sum(), x)[0])(
        L.arange(12.0).reshape(4, 3).t().requires_grad_()),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_elementwise_output_strides_follow_torch(case):
    fn = LAYOUT_CASES[case]
    t, f = fn(torch), fn(fg)
    assert tuple(f.stride()) == tuple(t.stride())
    assert f.is_contiguous() == t.is_contiguous()
    np.testing.assert_allclose(f.detach().double().numpy(), t.detach().double().numpy(), rtol=1e-6, atol=1e-6)


def test_view_of_a_transposed_result_fails_as_in_torch():
    for L in (torch, fg):
        with pytest.raises(RuntimeError):
            L.ones(4, 2).t().exp().view(-1)


# ---- sums over dims that are not innermost (the middle-axis kernel) and split kernels --------

SUM_MIDDLE_CASES = [
    ((784, 256), (0,)),      # a bias gradient: many rows, columns in parallel or one block
    ((64, 256), (0,)),
    ((4000, 10), (0,)),      # few columns, many rows: fixed row blocks
    ((3, 700, 5), (1,)),
    ((2, 3, 4, 5), (1, 2)),
    ((5, 1, 3), (0, 1)),
    ((7, 2100), (0,)),       # more than one block of columns
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,dims", SUM_MIDDLE_CASES)
def test_sum_over_outer_dims(shape, dims, dtype):
    g = np.random.default_rng(7)
    a = g.standard_normal(shape)
    for keepdim in (False, True):
        want = torch.tensor(a, dtype=getattr(torch, dtype)).sum(dims, keepdim=keepdim)
        got = fg.tensor(a, dtype=getattr(fg, dtype)).sum(dims, keepdim=keepdim)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5 if dtype == "float32" else 1e-12)
        # and the mean built on it
        np.testing.assert_allclose(fg.tensor(a, dtype=getattr(fg, dtype)).mean(dims).numpy(),
                                   torch.tensor(a, dtype=getattr(torch, dtype)).mean(dims).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's promise; torch's kernels may split sums by thread")
def test_split_kernels_do_not_depend_on_the_thread_count():
    """GEMMs split over the team, sums over outer dims, elementwise and reductions above the
    parallel threshold: bitwise the same with one thread and with all of them."""
    g = np.random.default_rng(3)
    a = fg.tensor(g.standard_normal((64, 784)), dtype=fg.float32)
    w = fg.tensor(g.standard_normal((784, 256)), dtype=fg.float32)
    big = fg.tensor(g.standard_normal((512, 300)), dtype=fg.float32)
    tall = fg.tensor(g.standard_normal((5000, 12)), dtype=fg.float64)
    long64 = fg.tensor(g.standard_normal(300_001), dtype=fg.float64)  # a float64 sum shows any order change

    def run():
        return [(a @ w).numpy().copy(), (a @ w.t().contiguous().t()).numpy().copy(), big.sum(0).numpy().copy(),
                tall.sum(0).numpy().copy(), big.tanh().numpy().copy(), big.sum().item(), (big * 3 + 1).exp().numpy().copy(),
                long64.sum().item(), long64.float().sum().item()]

    n = fg.get_num_threads()
    try:
        fg.set_num_threads(1)
        one = run()
    finally:
        fg.set_num_threads(n)
    for x, y in zip(one, run()):
        assert np.array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("n", [1, 31, 32, 33, 1000, 65536, 131071, 131072, 300_001, 1 << 22])
def test_float32_sum_matches_a_float64_reference(n):
    """float32 sums accumulate in float64 (vector lanes, fixed blocks): the result is the exact
    sum rounded once, give or take an ulp, however long the input."""
    a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    ref = np.float32(math.fsum(a.astype(np.float64).tolist()))
    got = np.float32(fg.tensor(a).sum().item())
    assert abs(got - ref) <= np.spacing(abs(ref)), (got, ref)
    np.testing.assert_allclose(fg.tensor(a).sum().item(), torch.tensor(a).sum().item(), rtol=1e-5, atol=1e-4)


# ---- softmax / log_softmax over a contiguous last dim (the fused row kernel) ----------------

def _softmax_rows_input(dtype):
    g = np.random.default_rng(11)
    a = g.standard_normal((6, 9)) * 3
    a[1, 4] = np.nan
    a[2, 0] = np.inf
    a[3, :] = -np.inf
    a[4, 2] = -np.inf
    a[5] *= 1e4
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("case", ["special", "3d", "one", "long"])
def test_softmax_last_dim_rows(dtype, log, case):
    g = np.random.default_rng(5)
    a = {"special": lambda: _softmax_rows_input(dtype), "3d": lambda: g.standard_normal((3, 5, 7)).astype(dtype),
         "one": lambda: g.standard_normal((4, 1)).astype(dtype), "long": lambda: g.standard_normal((3, 70000)).astype(dtype)}[case]()
    name = "log_softmax" if log else "softmax"
    want = getattr(torch.tensor(a), name)(-1).numpy()
    got = getattr(fg.tensor(a), name)(-1).numpy()
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's promise: the fused row kernel computes the composition")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [9, 1000, 140_000])
def test_softmax_row_kernel_is_the_composition_bitwise(n, dtype):
    """The fused softmax/log_softmax rows give the bits of x - amax, exp, sum (float64, fixed
    blocks from 131,072 elements on), division / log, with one thread and with two."""
    x = fg.tensor(np.random.default_rng(n).standard_normal((2, n)), dtype=getattr(fg, dtype))
    e = (x - x.amax(-1, keepdim=True)).exp()
    want = [(e / e.sum(-1, keepdim=True)).numpy(), ((x - x.amax(-1, keepdim=True)) - e.sum(-1, keepdim=True).log()).numpy()]
    threads = fg.get_num_threads()
    try:
        for t in {1, threads}:
            fg.set_num_threads(t)
            assert np.array_equal(x.softmax(-1).numpy(), want[0]) and np.array_equal(x.log_softmax(-1).numpy(), want[1])
    finally:
        fg.set_num_threads(threads)
