"""The dtypes beyond float32/float64/int64/bool: float16, bfloat16, int32, int16, int8, uint8.

Every expected value comes from torch on the same inputs: dtype objects and aliases, torch's
promotion table (every pair), creation, casts between every pair of dtypes (out-of-range, NaN and
negative values included), integer arithmetic that overflows and wraps, float16/bfloat16 arithmetic
(computed in float32 and rounded once, as torch's CPU kernels), comparisons, reductions, matmul,
autograd and a small training step in float16/bfloat16, printing, NumPy interop, pickling and
save/load.
"""
import copy
import pickle

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from ferrograd._C import op_table

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NEW = ["float16", "bfloat16", "int32", "int16", "int8", "uint8"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
HALF = ["float16", "bfloat16"]
# float16/bfloat16 results of math functions may differ from torch's by the last bit (a float32
# result rounded once either way, from slightly different float32 functions)
ULP = {"float16": dict(rtol=1e-3, atol=1e-5), "bfloat16": dict(rtol=8e-3, atol=1e-5),
       "float32": dict(rtol=1e-6, atol=1e-7), "float64": dict(rtol=1e-12, atol=1e-14)}


def T(name):
    return getattr(torch, name)


def F(name):
    return getattr(fg, name)


def name_of(dt):
    return str(dt).rsplit(".", 1)[-1]


def values(t):
    """A tensor's values as NumPy (bfloat16 as float32, exactly)."""
    t = t.detach().cpu()
    return (t.float() if name_of(t.dtype) == "bfloat16" else t).numpy()


def mirror(t):
    """The library-under-test tensor holding exactly torch tensor t's values and dtype."""
    if name_of(t.dtype) == "bfloat16":
        return fg.from_numpy(t.float().numpy().copy()).to(fg.bfloat16)
    return fg.from_numpy(np.array(t.numpy(), copy=True))


def same(f, t, **tol):
    """f (library under test) has t's (torch's) dtype, shape and values (within tol, if given)."""
    assert name_of(f.dtype) == name_of(t.dtype), (f.dtype, t.dtype)
    assert tuple(f.shape) == tuple(t.shape)
    a, b = values(f), values(t)
    if tol and a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(a, b)


def sample(name, n=40, seed=0):
    """A torch tensor of dtype `name`: a spread of values including the type's extremes."""
    g = torch.Generator().manual_seed(seed)
    if name == "bool":
        return torch.rand(n, generator=g) > 0.5
    if name in INTS:
        info = torch.iinfo(T(name))
        lo, hi = max(info.min, -(2 ** 40)), min(info.max, 2 ** 40)
        edge = torch.tensor([lo, hi, 0, 1, -1 if lo < 0 else 2], dtype=torch.int64)
        return torch.cat([edge, torch.randint(lo, hi, (max(n - 5, 0),), generator=g)])[:n].to(T(name))
    x = torch.randn(n, generator=g, dtype=torch.float64) * 3
    return x.to(T(name))


# ------------------------------------------------------------------ dtype objects


@pytest.mark.parametrize("name", NAMES)
def test_dtype_objects(name):
    d, t = F(name), T(name)
    assert name_of(repr(d)) == name_of(repr(t))
    assert d.is_floating_point == t.is_floating_point
    assert d.is_signed == t.is_signed
    assert d.itemsize == t.itemsize
    assert pickle.loads(pickle.dumps(d)) is d
    assert fg.zeros(2, dtype=d).dtype is d


def test_aliases():
    for alias, name in [("half", "float16"), ("int", "int32"), ("short", "int16"), ("float", "float32"),
                        ("double", "float64"), ("long", "int64")]:
        assert name_of(getattr(torch, alias)) == name
        assert getattr(fg, alias) is F(name)
    x = fg.tensor([1.5, -2.0])
    for method, name in [("half", "float16"), ("bfloat16", "bfloat16"), ("int", "int32"), ("short", "int16"),
                         ("char", "int8"), ("byte", "uint8")]:
        y = getattr(x, method)()
        assert name_of(y.dtype) == name
        assert name_of(getattr(torch.tensor([1.5, -2.0]), method)().dtype) == name


def test_promote_types_every_pair():
    for a in NAMES:
        for b in NAMES:
            assert name_of(fg.promote_types(F(a), F(b))) == name_of(torch.promote_types(T(a), T(b))), (a, b)


def test_can_cast_every_pair():
    for a in NAMES:
        for b in NAMES:
            assert fg.can_cast(F(a), F(b)) == torch.can_cast(T(a), T(b)), (a, b)


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_binary_promotion_tensors_zero_dim_and_numbers(a, b):
    # the result dtype of an op over (dim tensor, 0-d tensor), (0-d, 0-d), (dim, dim) and numbers
    ta, tb = torch.ones(2, dtype=T(a)), torch.ones(2, dtype=T(b))
    fa, fb = fg.ones(2, dtype=F(a)), fg.ones(2, dtype=F(b))
    pairs = [(ta, tb[0], fa, fb[0]), (ta[0], tb, fa[0], fb), (ta[0], tb[0], fa[0], fb[0]), (ta, tb, fa, fb)]
    for x, y, u, v in pairs:
        assert name_of(fg.result_type(u, v)) == name_of(torch.result_type(x, y)), (a, b, x.shape, y.shape)
        assert name_of((u * v).dtype) == name_of((x * y).dtype)
    for num in [True, 3, 2.5]:
        assert name_of(fg.result_type(fa, num)) == name_of(torch.result_type(ta, num))
        assert name_of(fg.result_type(fa[0], num)) == name_of(torch.result_type(ta[0], num))


# ------------------------------------------------------------------ creation


@pytest.mark.parametrize("name", NEW)
def test_creation_functions(name):
    for f, t in [(fg.zeros(2, 3, dtype=F(name)), torch.zeros(2, 3, dtype=T(name))),
                 (fg.ones(3, dtype=F(name)), torch.ones(3, dtype=T(name))),
                 (fg.full((2,), 7, dtype=F(name)), torch.full((2,), 7, dtype=T(name))),
                 (fg.arange(5, dtype=F(name)), torch.arange(5, dtype=T(name))),
                 (fg.arange(0, 10, 3, dtype=F(name)), torch.arange(0, 10, 3, dtype=T(name))),
                 (fg.eye(3, dtype=F(name)), torch.eye(3, dtype=T(name))),
                 (fg.empty(0, dtype=F(name)), torch.empty(0, dtype=T(name))),
                 (fg.zeros_like(fg.ones(2), dtype=F(name)), torch.zeros_like(torch.ones(2), dtype=T(name))),
                 (fg.tensor([[1, 2], [3, 4]], dtype=F(name)), torch.tensor([[1, 2], [3, 4]], dtype=T(name))),
                 (fg.tensor(5, dtype=F(name)), torch.tensor(5, dtype=T(name)))]:
        same(f, t)
    if name in HALF:
        same(fg.linspace(0, 1, 7, dtype=F(name)), torch.linspace(0, 1, 7, dtype=T(name)))
        same(fg.tensor([0.1, 1e5, -3.3, 1e-6], dtype=F(name)), torch.tensor([0.1, 1e5, -3.3, 1e-6], dtype=T(name)))
        assert name_of(fg.randn(3, dtype=F(name)).dtype) == name
        assert name_of(fg.rand(3, dtype=F(name)).dtype) == name
    else:
        r = fg.randint(0, 100, (50,), dtype=F(name))
        assert name_of(r.dtype) == name and 0 <= int(r.min()) and int(r.max()) < 100


@pytest.mark.parametrize("name,value", [("int8", 300), ("int8", -129), ("uint8", 256), ("uint8", -256),
                                        ("int16", 40000), ("int32", 2 ** 31), ("int8", 128.0), ("int8", -128.5),
                                        ("uint8", -0.5), ("int32", 2147483648.0), ("int8", float("nan")),
                                        ("float16", 1e6), ("bfloat16", 1e39), ("float32", 1e39)])
@pytest.mark.parametrize("shape", [(2,), (0,), (1,)])
def test_fill_overflow_is_refused(name, value, shape):
    if shape == (1,) and name in HALF:  # torch does not check a one-element float16/bfloat16 fill
        same(fg.full(shape, value, dtype=F(name)), torch.full(shape, value, dtype=T(name)))
        return
    with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow") as e:
        torch.full(shape, value, dtype=T(name))
    msg = str(e.value)
    with pytest.raises(RuntimeError, match="value cannot be converted") as e:
        fg.full(shape, value, dtype=F(name))
    assert str(e.value) == msg
    with pytest.raises(RuntimeError, match="value cannot be converted") as e:
        fg.zeros(shape, dtype=F(name)).fill_(value)
    assert str(e.value) == msg
    # a tensor value is copied, unchecked
    same(fg.zeros(shape, dtype=F(name)).fill_(fg.tensor(value)), torch.zeros(shape, dtype=T(name)).fill_(torch.tensor(value)))


@pytest.mark.parametrize("name,value", [("uint8", -1), ("uint8", -255), ("int8", -128), ("float16", float("inf")),
                                        ("bfloat16", float("nan")), ("int8", 127.9), ("uint8", 255.5), ("int8", -127.9),
                                        ("int32", 2147483647.5), ("float16", 65504.0)])
def test_fill_in_range_wraps_or_keeps(name, value):
    same(fg.full((2,), value, dtype=F(name)), torch.full((2,), value, dtype=T(name)))
    same(fg.zeros(2, dtype=F(name)).fill_(value), torch.zeros(2, dtype=T(name)).fill_(value))


@pytest.mark.parametrize("data,name", [([300.0], "int8"), ([1e10], "int32"), ([-1.5], "uint8"), ([-256], "uint8"),
                                       ([[1, 2], [3, 400]], "int8"), ([float("nan")], "int8")])
def test_tensor_overflow_is_refused(data, name):
    with pytest.raises(RuntimeError) as e:
        torch.tensor(data, dtype=T(name))
    with pytest.raises(RuntimeError, match="without overflow") as e2:
        fg.tensor(data, dtype=F(name))
    assert str(e2.value) == str(e.value)


@pytest.mark.parametrize("data,name", [([2 ** 40], "float16"), ([-255, 255], "uint8"), ([True, 2], "int8"),
                                       ([1e39], "bfloat16"), ([1.7, -2.9], "int16"), ([1 + 2 ** -11 + 2 ** -40], "float16")])
def test_tensor_in_range(data, name):
    same(fg.tensor(data, dtype=F(name)), torch.tensor(data, dtype=T(name)))


# ------------------------------------------------------------------ casts


CAST_VALUES = [0.0, 1.0, -1.0, 1.5, -1.5, 2.5, 127.9, 128.0, -128.7, 255.9, 256.0, 300.0, -300.0, 65504.0, 65520.0,
               1e9, 3e9, -3e9, 1e10, 1e20, 2.0 ** 31, 2.0 ** 31 - 1, -(2.0 ** 31) - 1, 4294967297.0,
               1 + 2 ** -11 + 2 ** -40, 1 / 3, 3.4e38, 1e39, 1e-8, float("inf"), float("-inf"), float("nan")]


def cast_sources():
    """One torch tensor per dtype, holding awkward values (as far as the dtype can hold them)."""
    out = {}
    f64 = torch.tensor(CAST_VALUES, dtype=torch.float64)
    for name in NAMES:
        if name in INTS:
            info = torch.iinfo(T(name))
            ints = [0, 1, -1, 2, 127, 128, 255, 256, -129, 300, 70000, 2 ** 31 - 1, -(2 ** 31), 2 ** 40 + 3,
                    16777217, 2049, -(2 ** 62)]
            out[name] = torch.tensor([v for v in ints if info.min <= v <= info.max], dtype=T(name))
        elif name == "bool":
            out[name] = torch.tensor([True, False, True])
        else:
            out[name] = f64.to(T(name))
    return out


SOURCES = cast_sources()


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", NAMES)
def test_cast_every_pair(src, dst):
    t = SOURCES[src]
    for reps in (1, 200):  # a short tensor and a long one (vectorised loops)
        tt = t.repeat(reps)
        same(mirror(tt).to(F(dst)), tt.to(T(dst)))


def test_cast_strided_and_zero_dim():
    t = torch.arange(24, dtype=torch.float64).reshape(4, 6).t()[::2] * 37.3
    f = mirror(torch.arange(24, dtype=torch.float64).reshape(4, 6)).t()[::2] * 37.3
    for dst in NEW:
        same(f.to(F(dst)), t.to(T(dst)))
        same(f[0, 0].to(F(dst)), t[0, 0].to(T(dst)))


def test_item_tolist_and_python_numbers():
    for name in NEW:
        t = torch.tensor([3, 1], dtype=T(name))
        f = mirror(t)
        assert f.tolist() == t.tolist() and [type(v) for v in f.tolist()] == [type(v) for v in t.tolist()]
        assert f[0].item() == t[0].item() and type(f[0].item()) is type(t[0].item())
        assert int(f[0]) == int(t[0]) and float(f[1]) == float(t[1])
    assert [1, 2, 3][fg.tensor(1, dtype=fg.int8)] == 2


# ------------------------------------------------------------------ arithmetic


# ops that take a Python number as either operand
NUMBER_OPS = ["add", "sub", "mul", "div", "floordiv", "rem", "eq", "lt", "ge"]
BIN = {
    "add": lambda L, a, b: a + b, "sub": lambda L, a, b: a - b, "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b, "floordiv": lambda L, a, b: a // b, "rem": lambda L, a, b: a % b,
    "maximum": lambda L, a, b: L.maximum(a, b), "minimum": lambda L, a, b: L.minimum(a, b),
    "eq": lambda L, a, b: a == b, "lt": lambda L, a, b: a < b, "ge": lambda L, a, b: a >= b,
}


def op_tol(op, name):
    """torch's vectorised float16/bfloat16 floor_divide and remainder round each intermediate step
    to 16 bits (its scalar tail does not): ours compute in float32 and round once, within an ulp."""
    if name not in HALF or op not in ("floordiv", "rem"):
        return {}
    return dict(rtol=2e-2, atol=1e-5) if op == "floordiv" else ULP[name]


def nonzero_divisor(t):
    return torch.where(t == 0, torch.ones((), dtype=t.dtype), t)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("op", sorted(BIN))
def test_binary_same_dtype(name, op):
    a, b = sample(name, seed=1), nonzero_divisor(sample(name, seed=2))
    fn = BIN[op]
    same(fn(fg, mirror(a), mirror(b)), fn(torch, a, b), **op_tol(op, name))
    # broadcast and a non-contiguous operand
    a2, b2 = a[:36].reshape(6, 6), b[:6]
    same(fn(fg, mirror(a2).t(), mirror(b2)), fn(torch, a2.t(), b2), **op_tol(op, name))


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("op", NUMBER_OPS)
@pytest.mark.parametrize("number", [3, -1, 300, 0.1, 2.5, True])
def test_binary_with_number(name, op, number):
    if op == "sub" and number is True:
        number = 3  # torch refuses bool subtraction
    a = sample(name, seed=3)
    fn = BIN[op]
    same(fn(fg, mirror(a), number), fn(torch, a, number), **op_tol(op, name))
    if op not in ("floordiv", "rem", "div") or name in HALF:
        b = nonzero_divisor(a)
        same(fn(fg, number, mirror(b)), fn(torch, number, b), **op_tol(op, name))


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("other", ["float64", "float32", "int64", "bool", "int8", "uint8"])
def test_binary_with_zero_dim_tensor(name, other):
    a = sample(name, seed=4)
    for v in [0.1, 3.0, -2.0]:
        s = torch.tensor(v).to(T(other)) if other != "bool" else torch.tensor(True)
        for op in ("add", "mul", "div", "sub", "floordiv", "maximum", "lt"):
            if op == "sub" and other == "bool":
                continue  # torch refuses bool subtraction
            if op == "floordiv" and not torch.result_type(a, s).is_floating_point and s == 0:
                continue  # integer division by zero (an error, tested elsewhere)
            tol = op_tol(op, name_of(torch.result_type(a, s)))
            same(BIN[op](fg, mirror(a), mirror(s)), BIN[op](torch, a, s), **tol)
            same(BIN[op](fg, mirror(s), mirror(nonzero_divisor(a))), BIN[op](torch, s, nonzero_divisor(a)), **tol)


@pytest.mark.parametrize("a", NAMES)
@pytest.mark.parametrize("b", NAMES)
def test_mixed_dtype_arithmetic(a, b):
    x, y = sample(a, 12, seed=5), sample(b, 12, seed=6)
    if a == b == "bool":
        same(mirror(x) + mirror(y), x + y)
        return
    for op in ("add", "mul", "maximum", "lt") + (("sub",) if "bool" not in (a, b) else ()):
        same(BIN[op](fg, mirror(x), mirror(y)), BIN[op](torch, x, y))


def test_integer_wraparound():
    i8 = torch.tensor([127, -128, 5, -1], dtype=torch.int8)
    u8 = torch.tensor([255, 0, 1, 128], dtype=torch.uint8)
    for t in (i8, u8):
        f = mirror(t)
        same(f + 1, t + 1)
        same(f * 3, t * 3)
        same(f - 2, t - 2)
        same(-f, -t)
        same(abs(f), abs(t))
        same(f ** 3, t ** 3)
        same(f // -1 if t.dtype == torch.int8 else f // 3, t // -1 if t.dtype == torch.int8 else t // 3)
        same(f.sign(), t.sign())
        same(f.sum(), t.sum())
        same(f.prod(), t.prod())
        same(f.cumsum(0), t.cumsum(0))
        same(f.sum(dtype=F(name_of(t.dtype))), t.sum(dtype=t.dtype))
        same(f == -1, t == -1)
        same(f < -1, t < -1)
        same(f & 3, t & 3)
        same(~f, ~t)
        same(f ^ mirror(i8), t ^ i8)
    i16 = torch.tensor([32767, -32768], dtype=torch.int16)
    same(mirror(i16) + 1, i16 + 1)
    i32 = torch.tensor([2 ** 31 - 1, -(2 ** 31)], dtype=torch.int32)
    same(mirror(i32) + 1, i32 + 1)
    same(mirror(i32) * 2, i32 * 2)
    same(mirror(torch.tensor([-128], dtype=torch.int8)) // mirror(torch.tensor([-1], dtype=torch.int8)),
         torch.tensor([-128], dtype=torch.int8) // torch.tensor([-1], dtype=torch.int8))


def test_integer_errors():
    for name in ("int8", "int32", "uint8"):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            torch.tensor([5], dtype=T(name)) // torch.tensor([0], dtype=T(name))
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fg.tensor([5], dtype=F(name)) // fg.tensor([0], dtype=F(name))
        with pytest.raises(RuntimeError, match="negative integer powers"):
            fg.tensor([2], dtype=F(name)) ** -1
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        fg.tensor([1.0], dtype=fg.float16) & fg.tensor([1.0], dtype=fg.float16)
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        torch.tensor([1.0], dtype=torch.float16) & torch.tensor([1.0], dtype=torch.float16)


# the one-tensor ops of the op table (src/ops/table.rs): float math, and the ops that keep integer dtypes
_TABLE = [r for r in op_table() if r["binding"] in ("method", "custom")]
UNARY_FLOAT = [r["name"] for r in _TABLE if r["family"] in ("float_unary", "num_unary", "unary")]
KEEPS_INT = {r["name"] for r in _TABLE if r["family"] in ("num_unary", "unary")}


@pytest.mark.parametrize("name", HALF + ["int8", "uint8", "int32"])
@pytest.mark.parametrize("op", UNARY_FLOAT)
def test_unary(name, op):
    t = sample(name, seed=7)
    if op in ("log", "log2", "sqrt", "rsqrt", "log1p") and name in HALF:
        t = t.abs()
    if op in KEEPS_INT and name in INTS:
        same(getattr(mirror(t), op)(), getattr(t, op)())  # integer results, wrapped
        return
    tol = ULP.get(name_of(getattr(t, op)().dtype), {})
    same(getattr(mirror(t), op)(), getattr(t, op)(), **tol)


@pytest.mark.parametrize("name", HALF)
def test_half_elementwise_is_computed_in_float32_and_rounded_once(name):
    x = sample(name, 400, seed=8) * 50
    y = sample(name, 400, seed=9)
    f, g = mirror(x), mirror(y)
    same(f + g, x + y)
    same(f * g, x * y)
    same(f / g, x / y)
    same(f * 0.1, x * 0.1)
    same(0.1 * f, 0.1 * x)
    same(f + 0.1, x + 0.1)
    same(f - 0.1, x - 0.1)
    same(0.1 - f, 0.1 - x)
    same(f / 0.1, x / 0.1)
    same(0.3 / f, 0.3 / x)
    same(f // 0.7, x // 0.7, **op_tol("floordiv", name))
    same(f % 0.7, x % 0.7, **op_tol("rem", name))
    same(f.abs() ** 0.3, x.abs() ** 0.3, **ULP[name])
    # (torch's vector loop rounds once; its scalar tail rounds alpha * y first: within an ulp)
    same(fg.add(f, g, alpha=0.3), torch.add(x, y, alpha=0.3), **ULP[name])
    same(f.clamp(-1.3, 2.1), x.clamp(-1.3, 2.1))
    same(fg.where(f > 0, f, g), torch.where(x > 0, x, y))
    same(f.masked_fill(f > 0, 0.1), x.masked_fill(x > 0, 0.1))
    same(f.isnan(), x.isnan())
    same(mirror(torch.tensor([float("inf"), 1.0], dtype=T(name))).isinf(), torch.tensor([float("inf"), 1.0], dtype=T(name)).isinf())


# ------------------------------------------------------------------ reductions


@pytest.mark.parametrize("name", NEW)
def test_reductions(name):
    t = sample(name, 60, seed=10).reshape(6, 10)
    if name in INTS and name != "uint8":
        t = t % 50 - 25  # keep prod within int64 and the sums readable
    elif name == "uint8":
        t = t % 7
    f = mirror(t)
    tol = ULP.get(name, {})
    # torch's float16/bfloat16 prod rounds the product to 16 bits at every step; ours keeps it
    # in float64 and rounds once (more accurate, so within a few 16-bit ulps of torch's)
    same(f.prod(1), t.prod(1), **(dict(rtol=3e-2, atol=1e-5) if name in HALF else {}))
    for fn in [lambda x: x.sum(), lambda x: x.sum(1), lambda x: x.sum(0, keepdim=True), lambda x: x.cumsum(1), lambda x: x.max(), lambda x: x.min(1)[0],
               lambda x: x.max(1)[1], lambda x: x.argmax(), lambda x: x.argmin(0), lambda x: x.amax(0),
               lambda x: x.all(), lambda x: x.any(1), lambda x: x.sum(dtype=x.dtype)]:
        same(fn(f), fn(t), **tol)
    if name in HALF:
        for fn in [lambda x: x.mean(), lambda x: x.mean(1), lambda x: x.var(1), lambda x: x.std(),
                   lambda x: x.norm(), lambda x: x.logsumexp(1), lambda x: x.softmax(1),
                   lambda x: x.log_softmax(0), lambda x: x.norm(dim=1, p=1)]:
            same(fn(f), fn(t), **tol)
    else:
        with pytest.raises(RuntimeError):
            torch.mean(t)
        with pytest.raises((RuntimeError, NotImplementedError)):
            fg.mean(f)


@pytest.mark.parametrize("name", HALF)
def test_half_sum_accumulates_in_float32(name):
    # 4096 values of ~1: a float16 accumulator would stall at 2048; torch sums in float32
    t = torch.ones(4096, dtype=T(name)) + sample(name, 4096, seed=11).abs() * 1e-2
    same(mirror(t).sum(), t.sum(), **ULP[name])
    same(mirror(t).mean(), t.mean(), **ULP[name])


# ------------------------------------------------------------------ matmul


@pytest.mark.parametrize("name", HALF)
def test_half_matmul_accumulates_in_float32(name):
    a, b = torch.randn(33, 70).to(T(name)), torch.randn(70, 17).to(T(name))
    ref = (a.double() @ b.double()).to(T(name))
    same(mirror(a) @ mirror(b), ref, **ULP[name])
    same(mirror(a) @ mirror(b), a @ b, **ULP[name])
    same(fg.mm(mirror(a.t().contiguous()).t(), mirror(b)), torch.mm(a, b), **ULP[name])
    x, y = torch.randn(3, 5, 8).to(T(name)), torch.randn(3, 8, 4).to(T(name))
    same(fg.bmm(mirror(x), mirror(y)), torch.bmm(x, y), **ULP[name])
    v = torch.randn(70).to(T(name))
    same(mirror(a) @ mirror(v), a @ v, **ULP[name])
    same(mirror(v) @ mirror(v), v @ v, rtol=2e-2 if name == "bfloat16" else 2e-3)


@pytest.mark.parametrize("name", ["int8", "int32", "uint8", "int16"])
def test_integer_matmul_wraps(name):
    a = torch.tensor([[100, 100], [1, 2]], dtype=T(name))
    same(mirror(a) @ mirror(a), a @ a)
    v = torch.tensor([100, 100], dtype=T(name))
    same(mirror(v) @ mirror(v), v @ v)


# ------------------------------------------------------------------ autograd and training


@pytest.mark.parametrize("name", HALF)
def test_half_autograd(name):
    x = torch.randn(4, 5).to(T(name)).requires_grad_()
    w = torch.randn(5, 3).to(T(name)).requires_grad_()
    fx, fw = mirror(x.detach()).requires_grad_(), mirror(w.detach()).requires_grad_()

    def f(L, x, w):
        return ((x @ w).tanh() * 2 + x.sum(1, keepdim=True).sigmoid()).softmax(1).log().mean()

    f(torch, x, w).backward()
    out = f(fg, fx, fw)
    assert name_of(out.dtype) == name
    out.backward()
    for g, t in [(fx.grad, x.grad), (fw.grad, w.grad)]:
        same(g, t, rtol=5e-2, atol=2e-3 if name == "float16" else 2e-2)
    # a float32 leaf used through a cast receives a float32 gradient
    a = fg.randn(3, requires_grad=True)
    (a.to(F(name)) * 2).sum().backward()
    assert name_of(a.grad.dtype) == "float32"
    with pytest.raises(RuntimeError, match="floating point"):
        fg.zeros(2, dtype=fg.int32).requires_grad_()


@pytest.mark.parametrize("name", HALF)
def test_half_training_step(name):
    torch.manual_seed(0)
    tnet = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3)).to(T(name))
    fnet = fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.ReLU(), fg.nn.Linear(16, 3)).to(F(name))
    for (k, p), q in zip(fnet.state_dict().items(), tnet.state_dict().values()):
        p.copy_(mirror(q))
    x, y = torch.randn(8, 6).to(T(name)), torch.randint(0, 3, (8,))
    fx, fy = mirror(x), mirror(y)
    topt = torch.optim.SGD(tnet.parameters(), lr=0.1, momentum=0.9)
    fopt = fg.optim.SGD(fnet.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        for L, net, opt, xx, yy in [(torch, tnet, topt, x, y), (fg, fnet, fopt, fx, fy)]:
            opt.zero_grad()
            loss = L.nn.functional.cross_entropy(net(xx), yy)
            loss.backward()
            opt.step()
    tol = dict(rtol=2e-2, atol=2e-3) if name == "float16" else dict(rtol=6e-2, atol=2e-2)
    for p, q in zip(fnet.parameters(), tnet.parameters()):
        assert name_of(p.grad.dtype) == name
        same(p, q.detach(), **tol)


# ------------------------------------------------------------------ printing, indexing, interop


@pytest.mark.parametrize("name", NEW)
def test_printing(name):
    cases = [sample(name, 5, seed=12), sample(name, 12, seed=13).reshape(3, 4), sample(name, 1, seed=14)[0],
             torch.zeros(0, dtype=T(name)), torch.zeros(2, 0, dtype=T(name)), sample(name, 2000, seed=15)]
    if name in HALF:
        cases += [torch.tensor([1.0, 2.0], dtype=T(name)), torch.tensor([1e-5, 3e4, float("nan")], dtype=T(name)),
                  torch.tensor([0.1, 0.25], dtype=T(name)).requires_grad_()]
    for t in cases:
        assert repr(mirror(t.detach()).requires_grad_(t.requires_grad)).replace("ferrograd.", "torch.") == repr(t)


def test_index_dtypes():
    x = torch.arange(10.0)
    f = mirror(x)
    for name in ("int32", "int64"):
        i = torch.tensor([3, 1, 3], dtype=T(name))
        same(f[mirror(i)], x[i])
        same(f[mirror(i[0])], x[i[0]])
    for name in ("int8", "int16"):
        with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
            f[fg.tensor([1], dtype=F(name))]
        same(f[mirror(torch.tensor(2, dtype=T(name)))], x[torch.tensor(2, dtype=T(name))])


@pytest.mark.parametrize("name", [n for n in NEW if n != "bfloat16"])
def test_numpy_round_trip(name):
    a = values(sample(name, 10, seed=16))
    t = fg.from_numpy(a)
    assert name_of(t.dtype) == name
    t[0] = 1
    assert a[0] == 1  # shared memory
    b = t.numpy()
    assert b.dtype == a.dtype and np.shares_memory(a, b)
    assert name_of(fg.tensor(a).dtype) == name_of(torch.tensor(a).dtype)
    assert name_of(fg.as_tensor(a).dtype) == name_of(torch.as_tensor(a).dtype)
    assert np.shares_memory(fg.as_tensor(a).numpy(), a)
    assert name_of(fg.tensor(a[0]).dtype) == name_of(torch.tensor(a[0]).dtype)


def test_bfloat16_numpy_raises_as_torch():
    with pytest.raises(TypeError) as e:
        torch.tensor([1.0], dtype=torch.bfloat16).numpy()
    with pytest.raises(TypeError) as e2:
        fg.tensor([1.0], dtype=fg.bfloat16).numpy()
    assert str(e2.value) == str(e.value)


def test_numpy_of_unsupported_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.longdouble"):
        fg.from_numpy(np.zeros(2, dtype=np.longdouble))


@pytest.mark.parametrize("name", NEW)
def test_pickle_and_deepcopy(name):
    t = sample(name, 7, seed=17).reshape(7)
    f = mirror(t)
    same(pickle.loads(pickle.dumps(f)), t)
    same(copy.deepcopy(f), t)


@pytest.mark.parametrize("name", NEW)
def test_save_load(tmp_path, name):
    t = sample(name, 12, seed=18).reshape(3, 4)
    sd = {"w": mirror(t), "s": mirror(t[0, 0]), "strided": mirror(t).t()}
    fg.save(sd, tmp_path / "ckpt.pt")
    back = fg.load(tmp_path / "ckpt.pt")
    same(back["w"], t)
    same(back["s"], t[0, 0])
    same(back["strided"], t.t())


def test_finfo_iinfo():
    for name in HALF + ["float32", "float64"]:
        a, b = fg.finfo(F(name)), torch.finfo(T(name))
        assert (a.bits, a.eps, a.max, a.min, a.tiny, a.smallest_normal, a.resolution) == \
            (b.bits, b.eps, b.max, b.min, b.tiny, b.smallest_normal, b.resolution)
        assert repr(a) == repr(b) and name_of(a.dtype) == name_of(b.dtype)
    for name in INTS:
        a, b = fg.iinfo(F(name)), torch.iinfo(T(name))
        assert (a.bits, a.max, a.min) == (b.bits, b.max, b.min) and repr(a) == repr(b)
    assert fg.finfo().bits == torch.finfo().bits
    with pytest.raises(TypeError):
        fg.finfo(fg.int32)
    with pytest.raises(TypeError):
        fg.iinfo(fg.float16)
    with pytest.raises(TypeError):
        fg.iinfo(fg.bool)


# ------------------------------------------------------------------ view(dtype)


@pytest.mark.parametrize("src", NAMES)
@pytest.mark.parametrize("dst", NAMES)
def test_view_dtype_every_pair(src, dst):
    if dst == "bool" and src != "bool":
        return  # see test_view_as_bool_is_refused
    # 48 bytes of 0 and 1 (valid as every dtype, bool included), as a [2, n] tensor of src
    t = (torch.arange(48) % 3 == 1).to(torch.uint8).view(T(src)).reshape(2, -1)
    f = mirror(t)
    r, g = t.view(T(dst)), f.view(F(dst))
    same(g, r)
    assert g.stride() == r.stride() and g.storage_offset() == r.storage_offset()
    assert g.data_ptr() == f.data_ptr()


def test_view_as_bool_is_refused():
    # a deliberate difference: torch reads any byte as a bool; in Rust a byte other than 0 or 1
    # is not a valid bool, so ferrograd refuses the view (a bool tensor viewed as bool is itself)
    if AGAINST_TORCH:
        pytest.skip("ferrograd's own rule")
    with pytest.raises(RuntimeError, match="does not view uint8 as bool"):
        fg.zeros(3, dtype=fg.uint8).view(fg.bool)
    assert fg.zeros(3, dtype=fg.bool).view(fg.bool).dtype == fg.bool


def test_view_dtype_shares_memory_and_versions():
    t = torch.arange(8, dtype=torch.int16).reshape(2, 4)
    f = mirror(t)
    for x, L in ((t, torch), (f, fg)):
        v = x.view(L.int32)
        v[0, 0] = 65536 * 7 + 3
        v.add_(1)
        x.view(L.int8)[1, 0] = -1
    same(f, t)
    # not differentiable: no history, no requires_grad
    for L in (torch, fg):
        x = L.randn(4, requires_grad=True)
        for d in (L.float32, L.int32, L.float16):
            v = x.view(d)
            assert v.grad_fn is None and not v.requires_grad and v.is_leaf
    # sliced views: offsets and strides scale
    base = torch.arange(24, dtype=torch.int32).reshape(4, 6)
    for sl in (lambda x: x[1:], lambda x: x[:, 2:], lambda x: x[::2, 2:4]):
        same(sl(mirror(base)).view(fg.int16), sl(base).view(torch.int16))
        same(sl(mirror(base)).view(fg.float16), sl(base).view(torch.float16))
        same(sl(mirror(base)).view(fg.uint8), sl(base).view(torch.uint8))
    same(mirror(base)[:, 2:].view(fg.int64), base[:, 2:].view(torch.int64))


@pytest.mark.parametrize("make,dst", [
    (lambda L: L.zeros(()), "int8"),
    (lambda L: L.arange(6, dtype=L.int16).reshape(2, 3), "int32"),
    (lambda L: L.arange(6, dtype=L.int16).reshape(2, 3), "float64"),
    (lambda L: L.arange(6, dtype=L.int16).reshape(2, 3).t(), "int8"),
    (lambda L: L.arange(6, dtype=L.int16).reshape(2, 3)[:, :2], "int32"),
    (lambda L: L.arange(8, dtype=L.int16)[1:5], "int32"),
    (lambda L: L.arange(8, dtype=L.int16).reshape(4, 2).t(), "int32"),
])
def test_view_dtype_errors(make, dst):
    with pytest.raises(RuntimeError) as e:
        make(torch).view(T(dst))
    with pytest.raises(RuntimeError) as e2:
        make(fg).view(F(dst))
    assert str(e2.value) == str(e.value)
    assert make(fg).view(dtype=make(fg).dtype).dtype == make(fg).dtype


@pytest.mark.parametrize("name,low,high", [("int8", 0, 300), ("uint8", -5, 5), ("uint8", 0, 257), ("int16", 0, 70000),
                                           ("int32", 0, 2 ** 33), ("float16", 0, 70000), ("bool", 0, 3)])
def test_randint_bounds_of_the_dtype(name, low, high):
    with pytest.raises(RuntimeError) as e:
        torch.randint(low, high, (3,), dtype=T(name))
    with pytest.raises(RuntimeError) as e2:
        fg.randint(low, high, (3,), dtype=F(name))
    assert str(e2.value) == str(e.value)


def test_linspace_bounds_of_the_dtype():
    for name, a, b in [("int8", 0, 300), ("uint8", 0, 300), ("int16", 0, 40000)]:
        with pytest.raises(RuntimeError) as e:
            torch.linspace(a, b, 3, dtype=T(name))
        with pytest.raises(RuntimeError) as e2:
            fg.linspace(a, b, 3, dtype=F(name))
        assert str(e2.value) == str(e.value)
    same(fg.linspace(-1, 5, 4, dtype=fg.uint8), torch.linspace(-1, 5, 4, dtype=torch.uint8))
    same(fg.linspace(0, 100, 7, dtype=fg.int8), torch.linspace(0, 100, 7, dtype=torch.int8))
