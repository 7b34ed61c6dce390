"""The CUDA device: every op of the foundation computed on "cuda" must give the CPU path's values and
gradients (and stay on the device), the device rules torch enforces, training, memory accounting and
custom autograd.Functions on CUDA tensors.

Runs where `fg.cuda.is_available()`: on a GPU, or here with FERROGRAD_FAKE_CUDA=1 (a host-memory
stand-in device on which every op takes the host fallback). With FG_TEST_AGAINST_TORCH=1 it needs torch's
CUDA. Expected values come from the CPU path of the same library (which the rest of the suite checks
against torch); where torch has CUDA too (the GPU machine), the CUDA results are also compared with
torch's CUDA results for every sweep case.
"""
import copy
import gc
import io
import pickle
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, _base_array, _np_dtype, dtype_name, node_name

if not fg.cuda.is_available():
    pytest.skip("no CUDA device (FERROGRAD_FAKE_CUDA=1 gives a host stand-in)", allow_module_level=True)
if not AGAINST_TORCH:
    import ferrograd.optim  # noqa: F401  (the package does not import optim itself)

# fg's CUDA results can also be checked against torch's CUDA results (not when fg is torch)
TORCH_CUDA = (not AGAINST_TORCH) and torch.cuda.is_available()
if torch.cuda.is_available():  # torch's CUDA results are the float32 reference: no TF32 in matmul/conv
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
CUDA = "cuda"

# float32: CUDA kernels may sum in another order and use other (correctly rounded to a few ulp) math
# functions; float64 must still be float64-accurate (a kernel computing in float32 fails here).
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-9, 1e-10)}
# against torch's CUDA: the main suite's tolerance (torch's and ferrograd's formulas may round differently)
TORCH_TOL = (1e-7, 1e-9)


def bug(reason):
    """A known ferrograd bug: the test keeps torch's expectation and must fail until it is fixed."""
    return pytest.mark.xfail(not AGAINST_TORCH, strict=True, reason="bug: " + reason)


def _is_tensor(x):
    return isinstance(x, (fg.Tensor, torch.Tensor))


def _host(t):
    return t.detach().cpu().numpy()


def assert_match(exp, got, what="output", device=CUDA, rtol=None, atol=None, grad_flag=True):
    """Recursive comparison of an expected result (CPU, or torch's CUDA) with a result on `device`."""
    if _is_tensor(exp):
        assert isinstance(got, fg.Tensor), f"{what}: expected a Tensor, got {type(got).__name__}"
        assert got.device.type == device, f"{what}: on {got.device}, expected {device}"
        assert tuple(got.shape) == tuple(exp.shape), f"{what}: shape {tuple(got.shape)} != {tuple(exp.shape)}"
        assert dtype_name(got.dtype) == dtype_name(exp.dtype), f"{what}: dtype {got.dtype} != {exp.dtype}"
        if grad_flag:
            assert got.requires_grad == exp.requires_grad, (
                f"{what}: requires_grad {got.requires_grad} != {exp.requires_grad}")
        e, g = _host(exp), _host(got)
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e, err_msg=what)
        else:
            r, a = TOL.get(dtype_name(exp.dtype), TOL["float32"])
            r, a = max(r, rtol or 0), max(a, atol or 0)
            np.testing.assert_allclose(g, e, rtol=r, atol=a, equal_nan=True, err_msg=what)
    elif isinstance(exp, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(exp), f"{what}: {got!r} vs {exp!r}"
        for field in ("values", "indices"):  # torch.return_types (max, min, ...)
            if hasattr(exp, field):
                assert hasattr(got, field), f"{what}: result has no .{field}"
        for i, (e, g) in enumerate(zip(exp, got)):
            assert_match(e, g, f"{what}[{i}]", device, rtol, atol, grad_flag)
    else:
        assert type(got) is type(exp) and got == exp, f"{what}: {got!r} != {exp!r}"


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _leaves(o)]
    return [out] if _is_tensor(out) else []


def _make(lib, base, spec, device):
    """The input as a leaf on `device`, possibly a non-contiguous view (spec.layout)."""
    if spec.layout is None:
        return lib.tensor(base.copy(), device=device, requires_grad=spec.requires_grad)
    t = lib.tensor(base.copy(), device=device)
    t = t.transpose(-1, -2) if spec.layout == "T" else t[..., ::2]
    if spec.requires_grad:
        t.requires_grad_()
    return t


def _forward(lib, fn, specs, bases, device):
    ins = [_make(lib, b, s, device) for b, s in zip(bases, specs)]
    return ins, fn(lib, *ins)


def _backward(lib, ins, out, weights):
    """Backward of a random-weighted sum of the differentiable outputs; the inputs' grads."""
    res = [t for t in _leaves(out) if t.requires_grad]
    if not res:
        return None
    loss = sum((r * lib.tensor(w, device=r.device)).sum() for r, w in zip(res, weights))
    loss.backward()
    return [x.grad for x in ins]


def _check_grads(specs, exp, got, what, rtol, atol):
    for i, (s, e, g) in enumerate(zip(specs, exp, got)):
        if s.requires_grad:
            assert (e is None) == (g is None), f"{what} of input {i}: {g} vs {e}"
            if e is not None:
                assert_match(e, g, f"{what} of input {i}", CUDA, rtol, atol, grad_flag=False)


def check_cuda(fn, specs, rtol=None, atol=None, seed=0):
    """fn(lib, *inputs) on CPU and on CUDA from the same seeded inputs: values, dtypes, requires_grad,
    devices, and the gradients of every float input (on the input's device)."""
    specs = [s if isinstance(s, In) else In(s) for s in specs]
    if any(s.dtype == "float32" for s in specs):  # float64 results computed from float32 values
        rtol, atol = max(rtol or 0, TOL["float32"][0]), max(atol or 0, TOL["float32"][1])
    rng = np.random.default_rng(seed)
    bases = [_base_array(rng, s) for s in specs]
    c_in, c_out = _forward(fg, fn, specs, bases, "cpu")
    g_in, g_out = _forward(fg, fn, specs, bases, CUDA)
    assert all(x.device.type == CUDA for x in g_in)
    assert_match(c_out, g_out, "output", CUDA, rtol, atol)
    weights = [np.asarray(rng.standard_normal(tuple(t.shape)), dtype=_np_dtype(t.dtype))
               for t in _leaves(c_out) if t.requires_grad]
    c_g = _backward(fg, c_in, c_out, weights)
    g_g = _backward(fg, g_in, g_out, weights)
    if c_g is not None:
        _check_grads(specs, c_g, g_g, "grad", rtol, atol)
    if TORCH_CUDA:  # the GPU machine: torch's CUDA results are the expectation too
        rtol, atol = max(rtol or 0, TORCH_TOL[0]), max(atol or 0, TORCH_TOL[1])
        t_in, t_out = _forward(torch, fn, specs, bases, CUDA)
        assert_match(t_out, g_out, "output vs torch cuda", CUDA, rtol, atol)
        t_g = _backward(torch, t_in, t_out, weights)
        if t_g is not None:
            _check_grads(specs, t_g, g_g, "grad vs torch cuda", rtol, atol)


# ================================================================ 1. the parity sweep
CASES = []


def case(cid, fn, *specs, xfail=None, **kw):
    assert cid not in {c.id for c in CASES}, cid
    marks = [bug(xfail)] if xfail else []
    CASES.append(pytest.param(fn, specs, kw, id=cid, marks=marks))


def both(cid, fn, *shapes, domain=None, **kw):
    """One case in float64 and one in float32 (shapes may be In specs for a layout or an int input)."""
    for dt in ("float64", "float32"):
        specs = []
        for s in shapes:
            s = s if isinstance(s, In) else In(s)
            if s.is_float:
                s = In(s.shape, s.domain or domain, dt, s.layout, s.grad, s.value)
            specs.append(s)
        case(f"{cid}-{dt[5:]}", fn, *specs, **kw)


def F(L):
    return L.nn.functional


def I(values):  # an int64 input (indices), never differentiable
    return In(value=np.array(values, dtype=np.int64))


def B(values):  # a bool input
    return In(value=np.array(values, dtype=bool))


# ---- elementwise unary (contiguous, and a transposed view)
for nm, dom in (("neg", None), ("abs", "nonzero"), ("exp", None), ("log", "pos"), ("log2", "pos"),
                ("log1p", "pos"), ("expm1", None), ("sqrt", "pos"), ("rsqrt", "pos"), ("sin", None),
                ("cos", None), ("tan", "unit"), ("tanh", None), ("sigmoid", None), ("relu", "nonzero"),
                ("sign", "nonzero"), ("floor", None), ("ceil", None), ("round", None), ("trunc", None),
                ("reciprocal", "nonzero"), ("square", None), ("erf", None)):
    f = eval(f"lambda L, x: (x.{nm}(), L.{nm}(x))")
    both(nm, f, (3, 5), domain=dom)
    case(f"{nm}-T", f, In((3, 4), dom, layout="T"))
case("neg-int64", lambda L, i: (-i, i.abs(), i.sign()), In((2, 3), dtype="int64"))
# the math functions: device kernels where CUDA's math library has the function, the host path
# for the others (digamma, polygamma, mvlgamma, i0, special.i1)
for nm, dom in (("asin", "unit"), ("acos", "unit"), ("atan", None), ("sinh", None), ("cosh", None),
                ("asinh", None), ("atanh", "unit"), ("erfc", None), ("erfinv", "unit"), ("lgamma", "pos"),
                ("digamma", "pos"), ("i0", None)):
    both(nm, eval(f"lambda L, x: (x.{nm}(), L.{nm}(x))"), (3, 5), domain=dom)
both("acosh", lambda L, x: (x + 1).acosh(), (3, 5), domain="pos")
both("polygamma-mvlgamma", lambda L, x: (L.polygamma(1, x), x.polygamma(2), x.mvlgamma(2), L.special.i1(x)),
     (2, 3), domain="pos")
both("atan2", lambda L, a, b: (L.atan2(a, b), a.atan2(b)), (4, 1, 3), (2, 1))
# (values only: whether nextafter has a derivative changed between torch releases; 2.11's CUDA has
# none, later ones do, and the main suite checks ferrograd's against the torch installed there)
case("nextafter", lambda L, a, b: L.nextafter(a, b), In((2, 3), grad=False), In((3,), grad=False))
case("unary-large-f32", lambda L, x: (x.exp(), x.tanh(), x.sigmoid(), x.sin()), In((1000, 33), "small", "float32"))

# ---- elementwise binary: broadcasting, scalars, dtypes
for nm, sym, doms in (("add", "+", (None, None)), ("sub", "-", (None, None)), ("mul", "*", (None, None)),
                      ("div", "/", (None, "nonzero")), ("remainder", "%", (None, "nonzero")),
                      ("pow", "**", ("pos", None))):
    f = eval(f"lambda L, a, b: (a {sym} b, L.{nm}(a, b))")
    both(f"{nm}-same", f, In((2, 3), doms[0]), In((2, 3), doms[1]))
    both(f"{nm}-bcast", f, In((4, 1, 3), doms[0]), In((2, 1), doms[1]))
    case(f"{nm}-0d", f, In((2, 3), doms[0]), In((), doms[1]))
    case(f"{nm}-T", f, In((3, 4), doms[0], layout="T"), In((3, 4), doms[1], layout="step"))
    case(f"{nm}-f32_f64", f, In((2, 3), doms[0], "float32"), In((3,), doms[1]))
for sid, f in {"add": lambda L, x: (x + 2, 2.5 + x, x.add(1.5)), "sub": lambda L, x: (x - 2, 2.5 - x),
               "mul": lambda L, x: (x * 3, -1.5 * x), "div": lambda L, x: (x / 2, 3 / x),
               "pow": lambda L, x: (x ** 2, x ** 0.5, 2 ** x, L.pow(x, 3)),
               "mod": lambda L, x: (x % 1.5, x % -0.7)}.items():
    both(f"scalar-{sid}", f, (2, 3), domain="pos")
case("int64-arith", lambda L, a, b: (a + b, a - b, a * b, a // b, a % b, a / b, a * 2, a + 1.5, a ** 2),
     In((2, 3), "nonzero", "int64"), In((3,), "nonzero", "int64"))
case("int-float-promote", lambda L, i, x: (i + x, i * x, x / i), In((2, 3), "nonzero", "int64"), (3,))
case("floor_divide", lambda L, a, b: (a // b, L.floor_divide(a, b), a // 2),  # no derivative in torch
     In((2, 3), "ints", grad=False), In((2, 3), "nonzero", grad=False))
case("binary-large-f32", lambda L, a, b: (a * b + a, a / b), In((300, 257), dtype="float32"),
     In((257,), "nonzero", "float32"))

# ---- comparisons, logical ops, where, clamp, maximum/minimum
case("compare", lambda L, a, b: (a == b, a != b, a < b, a <= b, a > b, a >= b, a > 0.5, 1 <= a,
                                 L.eq(a, b), a.ge(0)), In((2, 3), "ints"), In((3,), "ints"))
case("compare-int64", lambda L, a, b: (a == b, a < b, a >= 1, a != b), In((2, 3), "ints", "int64"),
     In((3,), "ints", "int64"))
case("compare-bool", lambda L, a, b: (a == b, a != b), In((2, 3), dtype="bool"), In((3,), dtype="bool"))
case("logical", lambda L, a, b: (L.logical_and(a, b), L.logical_or(a, b), L.logical_xor(a, b),
                                 L.logical_not(a), a & b, a | b, a ^ b, ~a),
     In((2, 3), dtype="bool"), In((3,), dtype="bool"))
case("logical-float", lambda L, a, b: (L.logical_and(a, b), L.logical_not(b), (a > 0) & (b < 0)),
     In((2, 3), "ints"), In((2, 3), "ints"))
case("isnan-isinf", lambda L, x: (x.isnan(), x.isinf(), x.isfinite()),
     In(value=np.array([0.0, -1.5, np.nan, np.inf, -np.inf, 1e300])))
both("where", lambda L, c, x, y: (L.where(c, x, y), x.where(c, y)), B([[1, 0, 1], [0, 0, 1]]),
     (2, 3), (3,))
both("where-scalar", lambda L, x: (L.where(x > 0, x, 0.0), L.where(x > 0, 1.0, x)), (2, 3))
both("clamp", lambda L, x: (x.clamp(-0.5, 0.5), L.clamp(x, min=-0.3), x.clamp(max=0.2),
                            L.clip(x, -0.5, 0.5)), (3, 4))
case("clamp-int64", lambda L, i: (i.clamp(-2, 3), i.clamp(-2.5, 3.5)), In((2, 3), dtype="int64"))
both("maximum", lambda L, a, b: (L.maximum(a, b), L.minimum(a, b), L.max(a, b)), (2, 3), (3,))
case("maximum-ties", lambda L, a, b: (L.maximum(a, b), L.minimum(a, b)), In((2, 3), "ints"),
     In((2, 3), "ints"))

# ---- reductions
both("sum", lambda L, x: (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), L.sum(x, -1)), (2, 3, 4))
both("mean", lambda L, x: (x.mean(), x.mean(0), x.mean((1, 2), keepdim=True)), (2, 3, 4))
both("prod", lambda L, x: (x.prod(), x.prod(1), x.prod(0, keepdim=True)), (3, 4), domain="nonzero")
both("max-min", lambda L, x: (x.max(), x.min(), x.max(1), x.min(0, keepdim=True), L.max(x, -1)), (3, 5))
both("amax-amin", lambda L, x: (x.amax(), x.amax(1), x.amin((0, 2)), x.amax(-1, keepdim=True)), (2, 3, 4))
both("argmax", lambda L, x: (x.argmax(), x.argmax(1), x.argmin(0), x.argmin(1, keepdim=True)), (3, 5))
both("var-std", lambda L, x: (x.var(), x.var(1), x.std(0), x.std(1, keepdim=True), x.var(1, unbiased=False),
                              x.std(unbiased=False)), (4, 6))
both("logsumexp", lambda L, x: (x.logsumexp(1), L.logsumexp(x, 0, keepdim=True), x.logsumexp((0, 1))),
     (3, 5))
both("norm", lambda L, x: (x.norm(), x.norm(dim=1), x.norm(p=1, dim=0), x.norm(p=3), x.norm(p=float("inf"))),
     (3, 4), domain="nonzero")
case("all-any", lambda L, b: (b.all(), b.any(), b.all(1), b.any(0), L.all(b), L.any(b, 1)),
     B([[1, 1, 0], [1, 1, 1]]))
case("all-any-float", lambda L, x: (x.all(), x.any(1)), In((2, 3), "ints", grad=False))
both("cumsum", lambda L, x: (x.cumsum(0), x.cumsum(1), L.cumsum(x, -1)), (3, 5))
case("cumsum-int64", lambda L, i: (i.cumsum(1), i.sum(), i.sum(0), i.max(), i.prod()),
     In((3, 4), "nonzero", "int64"))
case("sum-bool", lambda L, b: (b.sum(), b.sum(0)), B([[1, 0, 1], [1, 1, 0]]))
case("reduce-T", lambda L, x: (x.sum(0), x.max(1), x.logsumexp(0), x.var(1), x.cumsum(1)),
     In((3, 4), layout="T"))
case("reduce-large-f32", lambda L, x: (x.sum(), x.sum(1), x.sum(0), x.mean(0), x.amax(1), x.argmax(1),
                                       x.logsumexp(1), x.var(0)),
     In((37, 1031), "small", "float32"), rtol=1e-4, atol=1e-4)
case("reduce-large-f64", lambda L, x: (x.sum(), x.max(0), x.norm(), x.std(1)), (1031, 37))
case("reduce-empty", lambda L, x: (x.sum(), x.sum(0), x.mean(1), x.prod()), (0, 3))

# ---- softmax
both("softmax", lambda L, x: (x.softmax(-1), L.softmax(x, 0), x.log_softmax(1), F(L).log_softmax(x, dim=0)),
     (3, 5))
case("softmax-T", lambda L, x: (x.softmax(1), x.log_softmax(0)), In((4, 6), layout="T"))
case("softmax-large-f32", lambda L, x: (x.softmax(-1) * 100, x.log_softmax(-1)), In((8, 2049), dtype="float32"))

# ---- linear algebra (cuBLAS), incl. transposed views
both("mm", lambda L, a, b: (a @ b, L.mm(a, b), a.mm(b), L.matmul(a, b)), (3, 4), (4, 5))
both("mm-T", lambda L, a, b: (a @ b, a.mT @ b.mT), In((3, 4), layout="T"), In((4, 3), layout="T"))
both("matmul-batched", lambda L, a, b: (a @ b, L.matmul(b.mT, a.mT)), (2, 3, 4), (4, 5))
both("matmul-bcast", lambda L, a, b: a @ b, (2, 1, 3, 4), (3, 4, 2))
both("bmm", lambda L, a, b: (L.bmm(a, b), a.bmm(b), L.bmm(a, b.transpose(1, 2).transpose(1, 2))),
     (2, 3, 4), (2, 4, 5))
both("mv-outer", lambda L, m, v, w: (L.mv(m, v), m @ v, v @ m.T, L.outer(v, w)), (3, 4), (4,), (4,))
both("dot", lambda L, v, w: (L.dot(v, w), v @ w), (4,), (4,))
both("matmul-step", lambda L, a, b: a @ b, In((3, 4), layout="step"), In((4, 2), layout="step"))
case("matmul-large-f32", lambda L, a, b: (a @ b, b.mT @ a.mT), In((64, 130), dtype="float32"),
     In((130, 33), dtype="float32", layout="T"), rtol=1e-4, atol=1e-4)
case("matmul-large-f64", lambda L, a, b: a.mT @ b, (130, 64), (130, 33))
# (no int64 matmul: torch's CUDA has none, "addmm_cuda" not implemented for 'Long')
case("matmul-empty", lambda L, a, b: (a @ b, (a.mT @ a)), (0, 3), (3, 2))

# ---- views and shape ops
both("reshape-view", lambda L, x: (x.reshape(4, 6), x.view(2, 12), x.view(-1), x.flatten(1), x.reshape(-1, 3).T,
                                   x.unsqueeze(1).squeeze(1), x.unsqueeze(0)), (2, 3, 4))
both("permute-transpose", lambda L, x: (x.permute(2, 0, 1), x.transpose(0, 2) * 2, x.mT.contiguous(),
                                        x.permute(1, 2, 0).reshape(3, 8)), (2, 3, 4))
both("expand", lambda L, x: (x.expand(2, 3, 4), x.expand_as(L.ones(5, 3, 4, device=x.device)),
                             L.broadcast_to(x, (2, 3, 4)) * 1), (3, 1))
both("cat-stack", lambda L, a, b: (L.cat([a, b]), L.cat([a, b], 1), L.cat([a.T, b.T], -1), L.stack([a, b]),
                                   L.stack([a, b], 2)), (2, 3), (2, 3))
case("cat-stack-int64", lambda L, i: (L.cat([i, i]), L.stack([i, i], 1)), In((2, 3), dtype="int64"))
both("split-chunk", lambda L, x: (x.split(2), x.split([1, 3], 1), x.chunk(3, 0), L.chunk(x, 2, 1), x.unbind(1)),
     (5, 4))
both("narrow", lambda L, x: (x.narrow(1, 1, 2), x.narrow(0, 0, 1)), (3, 4))
both("flip-repeat", lambda L, x: (x.flip(0), x.flip((0, 1)), x.repeat(2, 1), x.repeat(1, 2, 3)), (3, 4))
case("shape-int64", lambda L, i: (i.T.flip(0), i.repeat(2, 2), i.reshape(-1), i.narrow(1, 1, 2), i.split(1)),
     In((2, 3), dtype="int64"))
case("view-then-op", lambda L, x: (x.T.exp(), x.T.sum(1), x.mT.reshape(-1) * 2), (4, 6))
case("slice-then-op", lambda L, x: x[:, ::2].sin() * x[:, 1::2], (4, 6))

# ---- indexing
both("index-basic", lambda L, x: (x[1], x[:, 1:3], x[::2], x[..., None], x[-1, 1:4:2], x[1:, None, 2]),
     (4, 5))
both("index-tensor", lambda L, x, i: (x[i], x[:, i], x[i, i], x[[0, 2, 2]], x.index_select(0, i),
                                      L.index_select(x, 1, i)), (4, 5), I([0, 3, 3, 1]))
both("index-mask", lambda L, x, m: (x[m], x[x > 0], x[m.any(1)], x.masked_fill(m, 0.5),
                                    x.masked_fill(x > 0, -1.0)),
     (3, 4), B([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 1, 1]]))
both("gather", lambda L, x, i: (x.gather(1, i), L.gather(x, 0, i)), (4, 5), I([[0, 1], [2, 2], [3, 0], [1, 1]]))
both("scatter_add", lambda L, x, i, s: (x.scatter_add(1, i, s), L.scatter_add(x, 0, i, s)),
     (4, 5), I([[0, 1], [2, 2], [3, 0], [1, 1]]), (4, 2))
both("setitem", lambda L, x, v: _setitem(x, v), (4, 5), (5,))
case("setitem-int64", lambda L, i: _setitem_int(i), In((3, 4), dtype="int64"))
case("index-int64", lambda L, i, j: (i[j], i[i > 0], i.gather(0, j.unsqueeze(1).expand(4, 4))),
     In((4, 4), dtype="int64"), I([3, 0, 0, 2]))

# device kernels of indexing (offsets computed on the host, one kernel per gather/put), gather /
# scatter_add with the index read on the device, flip through negative strides, long scans
_RNG_IDX = np.random.default_rng(7)
_IDX_A = _RNG_IDX.integers(0, 40, size=(30, 300))   # gather/scatter_add along dim 1 of (30, 300)
_IDX_B = _RNG_IDX.integers(0, 30, size=(25, 41))     # along dim 0 of (30, 300), index narrower in dim 1
_IDX_C = _RNG_IDX.integers(-5, 5, size=(2, 3))        # advanced indexing, negative indices included
both("index-adv-device", lambda L, x, i: (x[:, i], x[i, :, i], x[i, 1], x[..., i], x[i][..., i.abs() % 5],
                                          x[1:, i.abs(), ::2], x.permute(2, 0, 1)[i]),
     (5, 6, 5), I(_IDX_C))
both("index_put-accumulate", lambda L, x, v, i: (x.index_put((i.abs() % 5,), v, accumulate=True),
                                                x.index_put((i.abs() % 5, i.abs() % 5), v[:, :, 0], accumulate=True),
                                                x.index_put((L.tensor([4, 0, 2], device=x.device),), v[0])),
     (5, 5, 4), (2, 3, 5, 4), I(_IDX_C))
case("index-adv-dtypes", lambda L, i, b, h, j: (i[:, j], b[j], h[j, 1], i[j.abs() % 5]),
     In((5, 6), dtype="int64"), B(np.arange(30).reshape(5, 6) % 3 == 0), In((5, 6), dtype="float32", grad=False),
     I(_IDX_C))
both("gather-scatter-large", lambda L, x, i, j, s: (x.gather(1, i), x.gather(0, j), x.mT.gather(1, j.mT),
                                                   x.scatter_add(1, i, s), x.scatter_add(0, j, s[:25, :41]),
                                                   L.zeros(30, 300, dtype=x.dtype, device=x.device).scatter_add(1, i, s)),
     (30, 300), I(_IDX_A), I(_IDX_B), (30, 300))
case("gather-scatter-int64", lambda L, x, i: (x.gather(1, i), x.scatter_add(1, i, x)),
     In((30, 300), "ints", "int64"), I(_IDX_A))
both("flip-layouts", lambda L, x: (x.flip(2), x.flip((0, 2)), x.mT.flip(1), x[:, ::2].flip(0, 1, 2),
                                   x.flip(-1).sum(2)), (4, 5, 6))
# advanced indexing with the index tensors on the device (one kernel over the result, indices
# wrapped and checked there), more index tensors than one launch takes (host offsets), masks of
# 1 to 5 dims (nonzero on the device: counts per 4096-element chunk, a scan, ranks by ballots)
_IDX_D = _RNG_IDX.integers(-3, 3, size=(4, 1))
_IDX_E = _RNG_IDX.integers(0, 2, size=(5,))
_MASK_BIG = _RNG_IDX.random((7, 1500)) < 0.4   # three chunks of the nonzero kernels
_MASK_4D = _RNG_IDX.random((2, 3, 2, 4)) < 0.5
both("index-adv-broadcast", lambda L, x, i, j: (x[i, j], x[i.abs(), :, j], x[:, i, j.abs() % 3], x[i, 1, j],
                                                x[j, j, j, j], x[j, j, j, j, j],  # 5 > 4: host offsets
                                                x.view(-1)[i.abs() * 7]),
     (3, 3, 3, 3, 2), I(_IDX_D), I(_IDX_E[None, :] % 2))
both("index-mask-large", lambda L, x, m: (x[m], x[~m] * 2, x[m[:, 0]], x[:, m[0]], x.T[m.T]), (7, 1500), B(_MASK_BIG))
both("index-mask-nd", lambda L, x, m: (x[m], x[0][m[0]], x[:, m[0]], x[m > 2]),  # (m > 2: a 4-d all-false mask)
     (2, 3, 2, 4), B(_MASK_4D))
both("index-mask-5d", lambda L, x: (x[x > 0], x[0][x[0] < 0]), (2, 2, 3, 2, 2))
case("nonzero-device", lambda L, x, m, i: (x.nonzero(), L.nonzero(m), L.nonzero(m, as_tuple=True), L.argwhere(i),
                                           m[0].nonzero(), (x > 5).nonzero(), x.T.nonzero(), L.where(m)),
     In((7, 1500), "ints", "float32", grad=False), B(_MASK_BIG), In((3, 4, 5), "ints", "int64"))
both("setitem-device-index", lambda L, x, v, i: _setitem_dev(L, x, v, i), (6, 5), (5,), I([0, -1, 3]))
case("index_put-dup-large", lambda L, x, v, i: (x.index_put((i,), v, accumulate=True),
                                                x.index_put((i, i % 7), v[:, 0], accumulate=True)),
     (40, 30), (3000, 30), I(_RNG_IDX.integers(0, 40, size=3000)))


def _index_put_inplace(L, x, v, i):
    y = x.detach().clone()
    y.T.index_put_((i.abs() % 5,), v[:3, None].expand(3, 6), accumulate=True)  # through a view
    y[1:].index_put_((i, i.abs()), v[:3], accumulate=True)
    return y, x.detach().clone().index_put_((i,), v, accumulate=True)


both("index_put_-inplace", _index_put_inplace, (6, 5), (5,), I([0, -1, 3]))


def _setitem_dev(L, x, v, i):
    y = x * 1
    y[i] = v
    y[:, i.abs()] = -1.0
    y[i, i.abs()] += 3.0
    y[y > 1] = v.sum()
    z = x.clone()
    z[x < 0] = v[0]
    return y, z


def _cumsums(L, x):
    return x.cumsum(1), x.cumsum(0), x.mT.cumsum(1), x[:, 1:600].cumsum(1)


case("cumsum-long-64", _cumsums, In((7, 1030), "small"))
# (float32: torch's CUDA scan sums in float32, ferrograd's in float64)
case("cumsum-long-32", _cumsums, In((7, 1030), "small", "float32"), rtol=1e-4, atol=1e-4)
case("cumsum-long-int64", lambda L, i: (i.cumsum(1), i.cumsum(0), i.bool().cumsum(1)), In((5, 700), "ints", "int64"))


def _setitem(x, v):
    y = x * 1
    y[0] = v
    y[1, 2:4] = 0.5
    y[:, 0] = v[:4] * 2
    y[y < -1] = 0.0
    y[[2, 3]] = v
    z = x.clone()
    z[1:3] += v
    return y, z


def _setitem_int(i):
    j = i.clone()
    j[0] = 7
    j[j < 0] = -1
    return j


# ---- in-place ops (on non-leaves, and on views)
def _inplace(L, x, z):
    y = x * 1
    y.add_(z)
    y.mul_(2)
    y.sub_(z, alpha=0.5)
    y.div_(1.5)
    y.clamp_(-1.0, 1.0)
    y += z
    y *= z
    u = x * 1
    u.zero_()
    v = x * 1
    v.fill_(2.5)
    c = L.empty(4, 4, dtype=x.dtype, device=x.device)
    c.copy_(z)
    return y, u, v, c


def _inplace_view(L, x, z):
    w = x.clone()
    w[0].mul_(3)
    w[:, 1].copy_(z[:3])
    u = x * 1
    u[1].fill_(2.5)
    u[:, 2].zero_()
    u[2:].clamp_(-0.2, 0.2)
    return w, u


both("inplace", _inplace, (3, 4), (4,))
both("inplace-view", _inplace_view, (3, 4), (4,))
case("inplace-int64", lambda L, i: (i.clone().add_(2), i.clone().mul_(3), i.clone().fill_(1),
                                    i.clone().zero_(), i.clone().clamp_(-1, 1)), In((2, 3), dtype="int64"))
case("inplace-cross-dtype", lambda L, x, i: (L.zeros(2, 3, dtype=x.dtype, device=x.device).copy_(i),
                                             (x * 1).add_(i), x.clone().copy_(x.float())),
     (2, 3), In((2, 3), dtype="int64"))

# ---- dtype conversions
case("to-dtype-f64", lambda L, x: (x.to(L.float32), x.float(), x.double(), x.long(), x.bool(), x.to(L.int64),
                                   x.float().type_as(x), x.to(x.device, L.float32)), In((3, 4), "small"))
case("to-dtype-f32", lambda L, x: (x.to(L.float64), x.double() * 2, x.long(), (x > 0).float(),
                                   x.type_as(L.zeros(1, dtype=L.float64, device=x.device))),
     In((3, 4), "small", "float32"))
case("to-dtype-int", lambda L, i, b: (i.float(), i.double(), i.bool(), b.long(), b.float(), i.to(L.float32) / 2),
     In((2, 3), "ints", "int64"), In((2, 3), dtype="bool"))

# ---- nn.functional
both("linear", lambda L, x, w, b: (F(L).linear(x, w, b), F(L).linear(x, w)), (2, 3, 4), (5, 4), (5,))
both("activations", lambda L, x: (F(L).relu(x), F(L).gelu(x), F(L).gelu(x, approximate="tanh"), F(L).silu(x),
                                  F(L).softplus(x), F(L).softplus(x, beta=2.0, threshold=1.0)),
     (3, 7), domain="nonzero")
both("logsigmoid", lambda L, x: F(L).logsigmoid(x), (3, 7))
both("cross_entropy", lambda L, x, y, w: (F(L).cross_entropy(x, y), F(L).cross_entropy(x, y, reduction="sum"),
                                          F(L).cross_entropy(x, y, weight=w),
                                          F(L).cross_entropy(x, y, ignore_index=2, reduction="none"),
                                          F(L).cross_entropy(x, y, label_smoothing=0.1)),
     (5, 4), I([0, 3, 2, 1, 2]), In((4,), "pos", grad=False))
both("nll_loss", lambda L, x, y: (F(L).nll_loss(x.log_softmax(1), y), F(L).nll_loss(x, y, reduction="none")),
     (5, 4), I([0, 3, 2, 1, 2]))
both("mse_loss", lambda L, a, b: (F(L).mse_loss(a, b), F(L).mse_loss(a, b, reduction="none"),
                                  F(L).mse_loss(a, b, reduction="sum")), (3, 4), (3, 4))
both("bce_with_logits", lambda L, x, t, pw: (F(L).binary_cross_entropy_with_logits(x, t),
                                             F(L).binary_cross_entropy_with_logits(x, t, pos_weight=pw),
                                             F(L).binary_cross_entropy_with_logits(x, t, reduction="none")),
     (3, 4), In((3, 4), "unit"), In((4,), "pos", grad=False))
both("dropout-eval", lambda L, x: (F(L).dropout(x, 0.5, training=False), F(L).dropout(x, 0.0)), (3, 4))
both("layer_norm", lambda L, x, w, b: (F(L).layer_norm(x, (4,), w, b), F(L).layer_norm(x, (3, 4)),
                                       F(L).layer_norm(x, (4,), eps=1e-3)), (2, 3, 4), (4,), (4,))
both("embedding", lambda L, i, w: (F(L).embedding(i, w), F(L).embedding(i, w, padding_idx=0)),
     I([[0, 2, 4], [4, 4, 1]]), (5, 3))
both("conv2d", lambda L, x, w, b: (F(L).conv2d(x, w, b), F(L).conv2d(x, w, None, stride=2, padding=1),
                                   F(L).conv2d(x, w, b, padding=1, dilation=2)),
     (2, 3, 7, 6), (4, 3, 3, 2), (4,))
case("conv2d-groups", lambda L, x, w: F(L).conv2d(x, w, groups=2, padding=1), (1, 4, 5, 5), (6, 2, 3, 3))
both("max_pool2d", lambda L, x: (F(L).max_pool2d(x, 2), F(L).max_pool2d(x, (3, 2), stride=(2, 1))), (2, 3, 7, 6))
both("max_pool2d-pad", lambda L, x: (F(L).max_pool2d(x, 3, stride=2, padding=1), F(L).max_pool2d(x, 2, ceil_mode=True)),
     (2, 3, 7, 6))
both("pad", lambda L, x: (F(L).pad(x, (1, 2)), F(L).pad(x, (1, 1, 2, 0), value=0.5)), (2, 3, 4))
case("unfold-fold", lambda L, x: (F(L).unfold(x, 3, padding=1), F(L).fold(F(L).unfold(x, 2), (5, 4), 2)),
     (2, 3, 5, 4))


@pytest.mark.parametrize("fn,specs,kw", CASES)
def test_cuda_matches_cpu(fn, specs, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_cuda(fn, specs, **kw)


# ================================================================ 2. device rules
def _dev_err():
    return pytest.raises(RuntimeError, match="Expected all tensors to be on the same device")


@pytest.mark.parametrize("op", ["add", "radd", "mul", "matmul", "where", "maximum", "add_", "copy_ok",
                                "cuda0d_cpu", "linear", "masked_fill", "cat", "index_put", "gather",
                                "index_select"])
def test_mixed_devices_raise(op):
    a, b = fg.ones(2, 3, device=CUDA), fg.ones(2, 3)
    if op == "add":
        with _dev_err():
            a + b
    elif op == "radd":
        with _dev_err():
            b + a
    elif op == "mul":
        with _dev_err():
            fg.mul(a, fg.ones(3))
    elif op == "matmul":
        with _dev_err():
            a @ fg.ones(3, 2)
    elif op == "cat":
        with _dev_err():
            fg.cat([a, b])
    elif op == "where":
        with _dev_err():
            fg.where(a > 0, a, b)
    elif op == "maximum":
        with _dev_err():
            fg.maximum(b, a)
    elif op == "add_":
        with _dev_err():
            a.add_(b)
    elif op == "copy_ok":  # copy_ is the one op that crosses devices
        a.copy_(fg.full((2, 3), 2.0))
        b.copy_(a * 2)
        assert a.device.type == CUDA and b.device.type == "cpu"
        assert b.tolist() == [[4.0] * 3] * 2 and a.tolist() == [[2.0] * 3] * 2
    elif op == "cuda0d_cpu":  # only a CPU scalar is allowed to join a CUDA op, not the other way round
        with _dev_err():
            b + fg.tensor(1.0, device=CUDA)
    elif op == "linear":
        lin = fg.nn.Linear(3, 2).to(CUDA)
        with _dev_err():
            lin(b)
    elif op == "index_put":  # advanced-index assignment of CPU values
        with _dev_err():
            a[fg.tensor([0, 1], device=CUDA)] = fg.ones(3)
    elif op == "gather":
        with _dev_err():
            a.gather(0, fg.zeros(1, 3, dtype=fg.int64))
    elif op == "index_select":
        with _dev_err():
            a.index_select(0, fg.tensor([0]))
    elif op == "masked_fill":  # torch's message differs here: "expected self and mask to be on the same device"
        with pytest.raises(RuntimeError, match="same device"):
            a.masked_fill(fg.ones(2, 3, dtype=fg.bool), 1.0)


def test_cpu_scalars_with_cuda_tensors():
    x = fg.tensor([1.0, -2.0, 3.0], device=CUDA, requires_grad=True)
    s = fg.tensor(2.0)  # a 0-d CPU tensor
    outs = [x * s, s * x, x + s, s - x, x / s, fg.where(x > 0, x, s), fg.maximum(x, s), x * 2, 2.5 - x, x ** 2,
            x.clamp(min=s.item())]
    for o in outs:
        assert o.device.type == CUDA
    assert (x * s).tolist() == [2.0, -4.0, 6.0]
    assert fg.maximum(x, s).tolist() == [2.0, 2.0, 3.0]
    sum(o.sum() for o in outs).backward()
    assert x.grad.device.type == CUDA
    i = fg.tensor([0, 2], device=CUDA)
    assert (i * fg.tensor(3)).tolist() == [0, 6] and (i * fg.tensor(3)).device.type == CUDA
    x.data.add_(fg.tensor(1.0))  # in-place with a CPU scalar
    assert x.tolist() == [2.0, -1.0, 4.0]
    assert x.masked_fill(x > 3, fg.tensor(0.5)).tolist() == [2.0, -1.0, 0.5]


def test_cpu_indices_and_values_that_torch_accepts():
    """Indexing a CUDA tensor with CPU indices or masks, and basic-index assignment of CPU values, work."""
    x = fg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=CUDA, requires_grad=True)
    a = x[fg.tensor([2, 0])]
    m = x[fg.tensor([True, False, True])]
    assert a.device.type == CUDA and a.tolist() == [[5.0, 6.0], [1.0, 2.0]]
    assert m.device.type == CUDA and m.tolist() == [[1.0, 2.0], [5.0, 6.0]]
    (a.sum() + m.sum()).backward()
    assert x.grad.device.type == CUDA and x.grad.tolist() == [[2.0, 2.0], [0.0, 0.0], [2.0, 2.0]]
    y = fg.zeros(2, 3, device=CUDA)
    y[0] = fg.tensor([1.0, 2.0, 3.0])  # basic indexing: a copy_, which crosses devices
    y[y > 2] = fg.tensor(9.0)  # a 0-d CPU value
    y[fg.tensor([1])] = fg.tensor([4.0, 5.0, 6.0], device=CUDA)  # CPU indices
    assert y.device.type == CUDA and y.tolist() == [[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]]


def test_host_conversions():
    x = fg.tensor([[1.5, -2.0], [0.25, 4.0]], device=CUDA)
    with pytest.raises(TypeError, match="cuda"):
        x.numpy()
    assert x.tolist() == [[1.5, -2.0], [0.25, 4.0]]
    assert x[1, 0].item() == 0.25 and isinstance(x.sum().item(), float)
    assert fg.tensor(7, device=CUDA).item() == 7 and float(x[0, 0]) == 1.5 and int(x[1, 1]) == 4
    assert bool(x[0, 0] > 0) and x.cpu().numpy().tolist() == x.tolist()
    r = repr(x)
    assert "device='cuda:0'" in r and r.startswith("tensor([[ 1.5000, -2.0000]")
    assert "device='cuda:0'" in repr(fg.ones(2, dtype=fg.float64, device=CUDA, requires_grad=True))
    assert "device='cuda:0'" in str(fg.tensor(3, device=CUDA))
    assert x.is_cuda and not x.cpu().is_cuda
    assert fg.tensor([True, False], device=CUDA).tolist() == [True, False]


def test_device_objects():
    x = fg.ones(2, device=CUDA)
    assert x.device == fg.device("cuda:0") == fg.device("cuda", 0)
    assert fg.device("cuda") == fg.device("cuda") and fg.device("cuda") != fg.device("cuda:0")
    assert fg.device("cuda") != fg.device("cpu") and x.device != fg.ones(1).device
    assert x.device.type == "cuda" and x.device.index == 0 and str(x.device) == "cuda:0"
    assert fg.device("cuda").index is None and str(fg.device("cuda")) == "cuda"
    assert hash(fg.device("cuda:0")) == hash(x.device)
    assert fg.ones(1).device.type == "cpu"
    assert fg.cuda.device_count() >= 1 and isinstance(fg.cuda.get_device_name(), str)
    fg.cuda.synchronize()


def test_to_cuda_is_differentiable():
    x = fg.tensor([1.0, 2.0, -3.0], requires_grad=True)
    y = x.to("cuda")
    assert y.device.type == CUDA and y.requires_grad and not y.is_leaf
    assert node_name(y.grad_fn) == "ToCopyBackward0"
    z = x.cuda() * fg.tensor([1.0, 2.0, 3.0], device=CUDA)
    (y * y).sum().backward(retain_graph=True)
    z.sum().backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [3.0, 6.0, -3.0]
    # and back: a CUDA leaf through .cpu()
    w = fg.tensor([1.0, -1.0], device=CUDA, requires_grad=True)
    (w.cpu() * fg.tensor([3.0, 4.0])).sum().backward()
    assert w.grad.device.type == CUDA and w.grad.tolist() == [3.0, 4.0]
    # with a dtype change on the way
    v = fg.tensor([0.5, 1.5], dtype=fg.float64, requires_grad=True)
    u = v.to("cuda", fg.float32)
    assert u.dtype == fg.float32 and u.device.type == CUDA
    (u * u).sum().backward()
    assert v.grad.dtype == fg.float64 and v.grad.device.type == "cpu" and v.grad.tolist() == [1.0, 3.0]


def test_to_forms_and_identity():
    x = fg.ones(2, 3)
    for y in (x.to("cuda"), x.to("cuda:0"), x.to(fg.device("cuda")), x.to(device="cuda"), x.cuda(),
              x.cuda(0), x.to("cuda", non_blocking=True)):
        assert y.device == fg.device("cuda:0") and y.dtype == fg.float32 and y.tolist() == x.tolist()
    c = x.cuda()
    assert c.cuda() is c and x.cpu() is x
    assert c.cpu() is not c and c.cpu().device.type == "cpu"
    other = fg.zeros(1, dtype=fg.float64, device=CUDA)
    m = x.to(other)  # device and dtype of the other tensor
    assert m.device.type == CUDA and m.dtype == fg.float64
    n = c.to(fg.zeros(1, dtype=fg.int64))
    assert n.device.type == "cpu" and n.dtype == fg.int64
    h = c.to(fg.float64)
    assert h.device.type == CUDA and h.dtype == fg.float64


def test_to_returns_self_when_nothing_changes():
    x = fg.ones(2, 3)
    c = x.cuda()
    assert c.to("cuda") is c and c.to("cuda:0") is c and c.to(c.device) is c
    assert c.to(fg.float32) is c and c.to("cuda", fg.float32) is c
    assert x.to("cpu") is x and x.to(fg.float32) is x


@pytest.mark.parametrize("make", [
    "tensor", "zeros", "ones", "full", "empty", "arange", "arange3", "linspace", "eye", "rand", "randn",
    "randint", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
    "tensor_dev_obj", "as_tensor"])
def test_creation_on_cuda(make):
    c = fg.ones(2, 3, device=CUDA)
    t = {
        "tensor": lambda d: fg.tensor([[1.0, 2.0], [3.0, 4.0]], device=d),
        "zeros": lambda d: fg.zeros(2, 3, device=d),
        "ones": lambda d: fg.ones((2, 3), dtype=fg.float64, device=d),
        "full": lambda d: fg.full((2, 2), 3.5, device=d),
        "empty": lambda d: fg.empty(2, 3, device=d).zero_(),
        "arange": lambda d: fg.arange(5, device=d),
        "arange3": lambda d: fg.arange(0.0, 2.0, 0.5, device=d),
        "linspace": lambda d: fg.linspace(0, 1, 5, device=d),
        "eye": lambda d: fg.eye(3, device=d),
        "rand": lambda d: fg.rand(2, 3, device=d).ge(0),
        "randn": lambda d: fg.randn(2, 3, device=d).isfinite(),
        "randint": lambda d: fg.randint(0, 3, (4,), device=d).lt(3),
        "zeros_like": lambda d: fg.zeros_like(c.to(d)),
        "ones_like": lambda d: fg.ones_like(c.to(d), dtype=fg.int64),
        "full_like": lambda d: fg.full_like(c.to(d), 7.0),
        "empty_like": lambda d: fg.empty_like(c.to(d)).fill_(1.0),
        "rand_like": lambda d: fg.rand_like(c.to(d)).lt(1),
        "randn_like": lambda d: fg.randn_like(c.to(d)).isfinite(),
        "tensor_dev_obj": lambda d: fg.tensor([1, 2], device=fg.device(d)),
        "as_tensor": lambda d: fg.as_tensor(np.arange(3.0), device=d),
    }[make]
    g, h = t(CUDA), t("cpu")
    assert g.device.type == CUDA and h.device.type == "cpu"
    assert g.dtype == h.dtype and g.shape == h.shape and g.tolist() == h.tolist()


def test_random_on_cuda():
    fg.manual_seed(0)
    a = fg.randn(1000, device=CUDA)
    fg.manual_seed(0)
    b = fg.randn(1000, device=CUDA)
    assert a.tolist() == b.tolist()  # seeded
    assert abs(a.mean().item()) < 0.2 and 0.8 < a.std().item() < 1.2
    u = fg.rand(1000, device=CUDA)
    assert 0.0 <= u.min().item() and u.max().item() < 1.0 and 0.4 < u.mean().item() < 0.6
    # normal samples come in pairs: an odd length, both dtypes, the moments of a large sample
    for dt in (fg.float32, fg.float64):
        n = fg.randn(200001, dtype=dt, device=CUDA).double()
        assert n.isfinite().all().item()
        assert abs(n.mean().item()) < 0.01 and abs(n.std().item() - 1) < 0.01
        assert abs((n ** 3).mean().item()) < 0.03 and abs((n ** 4).mean().item() - 3) < 0.1
        assert abs((n[0:-1:2] * n[1::2]).mean().item()) < 0.01  # the two of a pair uncorrelated


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32", "float64"])
def test_randint_on_cuda(dtype):
    dt = getattr(fg, dtype)
    lo, hi = (0, 2) if dtype == "bool" else (0, 200) if dtype == "uint8" else (-7, 13)
    fg.manual_seed(3)
    a = fg.randint(lo, hi, (20000,), dtype=dt, device=CUDA)
    fg.manual_seed(3)
    b = fg.randint(lo, hi, (20000,), dtype=dt, device=CUDA)
    assert a.device.type == CUDA and a.dtype == dt and a.shape == (20000,)
    assert a.tolist() == b.tolist()  # seeded
    v = a.cpu().numpy().astype(np.int64)
    assert v.min() == lo and v.max() == hi - 1  # every value in [lo, hi), both ends reached
    counts = np.bincount(v - lo, minlength=hi - lo)
    expected = len(v) / (hi - lo)
    assert np.abs(counts - expected).max() < 6 * np.sqrt(expected)  # roughly uniform
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        fg.randint(5, 5, (3,), device=CUDA)


@pytest.mark.skipif(AGAINST_TORCH or not fg._C._cuda_has_kernels(), reason="ferrograd's kernels on a real GPU")
def test_precompile_kernels_fills_the_disk_cache(tmp_path, monkeypatch):
    # the cache directory is read when a kernel is compiled: a fresh one must end up with every kernel
    monkeypatch.setenv("FERROGRAD_CACHE_DIR", str(tmp_path))
    n = fg.cuda.precompile_kernels()
    assert n > 200 and len(list(tmp_path.glob("*.ptx"))) == n


@pytest.mark.skipif(AGAINST_TORCH, reason="torch's CUDA reports an index out of range by a device-side assert")
def test_index_errors_on_cuda():
    x = fg.randn(4, 5, device=CUDA)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.gather(1, fg.tensor([[0, 5]], device=CUDA))
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.gather(0, fg.tensor([[-1, 0]], device=CUDA))
    for dt in (fg.float32, fg.int64, fg.float16):
        y = x.to(dt)
        with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 5"):
            y.scatter_add(1, fg.tensor([[0, 5]], device=CUDA), y)
        with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 4"):
            y.clone().scatter_add_(0, fg.tensor([[-1, 0]], device=CUDA), y)
    w = x.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 5"):
        x.scatter_add(1, fg.tensor([[7, 0]], device=CUDA), w)
    with pytest.raises(IndexError, match="out of bounds"):
        x[fg.tensor([4], device=CUDA)]
    with pytest.raises(IndexError, match="index -6 is out of bounds for dimension 1 with size 5"):
        x[:, fg.tensor([0, -6], device=CUDA)] = 1.0
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[fg.tensor([[4], [0]], device=CUDA), fg.tensor([1, 0], device=CUDA)]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x.index_put((fg.tensor([4], device=CUDA),), fg.ones(5, device=CUDA), accumulate=True)
    # a bad index writes nothing (the indices are checked before the write kernel runs)
    before = x.tolist()
    with pytest.raises(IndexError, match="out of bounds"):
        x[fg.tensor([0, 9], device=CUDA)] = 2.0
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_put_((fg.tensor([0, 9], device=CUDA),), fg.ones(5, device=CUDA), accumulate=True)
    assert x.tolist() == before
    assert x.gather(1, fg.tensor([[4, 0]], device=CUDA)).tolist() == [[x[0, 4].item(), x[0, 0].item()]]


def test_dropout_training_on_cuda():
    x = fg.ones(1000, device=CUDA, requires_grad=True)
    d = fg.nn.functional.dropout(x, 0.5, training=True)
    assert d.device.type == CUDA
    vals = set(d.tolist())
    assert vals <= {0.0, 2.0} and len(vals) == 2
    d.sum().backward()
    assert x.grad.device.type == CUDA and x.grad.tolist() == d.tolist()


# ================================================================ 3. training
RNG = np.random.default_rng(3)
XS = RNG.standard_normal((16, 6)).astype(np.float32)
YS = RNG.integers(0, 3, size=16)
IMG = RNG.standard_normal((4, 1, 8, 8)).astype(np.float32)


def _mlp():
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.ReLU(), fg.nn.Linear(16, 16), fg.nn.Tanh(),
                            fg.nn.Linear(16, 3))


def _cnn():
    fg.manual_seed(0)
    return fg.nn.Sequential(fg.nn.Conv2d(1, 4, 3, padding=1), fg.nn.ReLU(), fg.nn.MaxPool2d(2),
                            fg.nn.Flatten(), fg.nn.Linear(4 * 4 * 4, 3))


OPTS = {
    "sgd_momentum": lambda p: fg.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "sgd_nesterov": lambda p: fg.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    "adam": lambda p: fg.optim.Adam(p, lr=0.01),
    "adamw": lambda p: fg.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "adam_amsgrad": lambda p: fg.optim.Adam(p, lr=0.01, amsgrad=True),
    "sgd_plain_maximize": lambda p: fg.optim.SGD(p, lr=0.05, maximize=True, weight_decay=1e-2),
    "sgd_dampening": lambda p: fg.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.3),
    "rmsprop": lambda p: fg.optim.RMSprop(p, lr=0.01, weight_decay=1e-3),
    "rmsprop_centered_momentum": lambda p: fg.optim.RMSprop(p, lr=0.01, momentum=0.9, centered=True),
    "adagrad": lambda p: fg.optim.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=1e-3),
}


def _train(model, opt, device, steps, data=XS):
    x, y = fg.tensor(data, device=device), fg.tensor(YS[:len(data)], device=device)
    for _ in range(steps):
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return loss


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("opt_name", list(OPTS))
def test_training_matches_cpu(arch, opt_name):
    cpu = _mlp() if arch == "mlp" else _cnn()
    gpu = copy.deepcopy(cpu).to("cuda")
    data = XS if arch == "mlp" else IMG
    opt_c, opt_g = OPTS[opt_name](cpu.parameters()), OPTS[opt_name](gpu.parameters())
    lc = _train(cpu, opt_c, "cpu", 6, data)
    lg = _train(gpu, opt_g, CUDA, 6, data)
    assert lg.device.type == CUDA
    # (atol: a loss near 0 after a few steps of centered RMSprop differs in the 8th digit)
    np.testing.assert_allclose(lg.item(), lc.item(), rtol=1e-5, atol=1e-7)
    for (name, pc), (_, pg) in zip(cpu.named_parameters(), gpu.named_parameters()):
        assert pg.device.type == CUDA and pg.grad.device.type == CUDA, name
        np.testing.assert_allclose(_host(pg), _host(pc), rtol=1e-5, atol=1e-5, err_msg=name)
    for p in gpu.parameters():  # optimizer state lives with the parameter
        for k, v in opt_g.state[p].items():
            if _is_tensor(v) and v.dim() > 0:
                assert v.device.type == CUDA, k


def test_module_to_moves_parameters_and_buffers():
    m = fg.nn.Sequential(fg.nn.Linear(3, 4), fg.nn.BatchNorm1d(4), fg.nn.Linear(4, 2))
    ref = copy.deepcopy(m)
    assert m.to("cuda") is m
    for name, p in m.named_parameters():
        assert p.device.type == CUDA and p.is_leaf and p.requires_grad and isinstance(p, fg.nn.Parameter), name
    for name, b in m.named_buffers():
        assert b.device.type == CUDA, name
    x = fg.tensor(XS[:5, :3])
    m.train()
    ref.train()
    out_c, out_g = ref(x), m(x.cuda())
    np.testing.assert_allclose(_host(out_g), _host(out_c), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_host(m[1].running_mean), _host(ref[1].running_mean), rtol=1e-5, atol=1e-7)
    assert m[1].num_batches_tracked.device.type == CUDA and m[1].num_batches_tracked.item() == 1
    out_g.sum().backward()
    assert all(p.grad.device.type == CUDA for p in m.parameters())
    assert m.cpu() is m and all(p.device.type == "cpu" for p in m.parameters())
    assert m.cuda() is m and next(m.parameters()).device.type == CUDA
    m.to(fg.float64)
    assert next(m.parameters()).dtype == fg.float64 and next(m.parameters()).device.type == CUDA


def test_state_dict_round_trip():
    gpu = _mlp().to("cuda")
    opt = fg.optim.Adam(gpu.parameters(), lr=0.01)
    _train(gpu, opt, CUDA, 3)
    sd = gpu.state_dict()
    assert all(v.device.type == CUDA for v in sd.values())
    cpu = _mlp()
    cpu.load_state_dict(sd)  # copies across devices
    for (k, v), p in zip(sd.items(), cpu.parameters()):
        assert p.device.type == "cpu" and _host(p).tolist() == _host(v).tolist(), k
    # a CPU state dict into a CUDA model keeps the model on CUDA
    gpu2 = _mlp().to("cuda")
    gpu2.load_state_dict(cpu.state_dict())
    assert all(p.device.type == CUDA for p in gpu2.parameters())
    # optimizer state round trip: continuing from the loaded state gives the same parameters
    opt2 = fg.optim.Adam(gpu2.parameters(), lr=0.01)
    opt2.load_state_dict(_clone_state(opt.state_dict()))  # (torch's load_state_dict may share tensors)
    for p in gpu2.parameters():
        assert opt2.state[p]["exp_avg"].device.type == CUDA
    _train(gpu, opt, CUDA, 2)
    _train(gpu2, opt2, CUDA, 2)
    for a, b in zip(gpu.parameters(), gpu2.parameters()):
        assert _host(a).tolist() == _host(b).tolist()
    buf = io.BytesIO()
    fg.save(gpu.state_dict(), buf)
    buf.seek(0)
    back = fg.load(buf, map_location="cpu")
    for k, v in back.items():
        assert v.device.type == "cpu" and v.tolist() == gpu.state_dict()[k].tolist(), k


def _clone_state(sd, device=None):
    """An optimizer state dict with its own tensors (on `device` when given)."""
    def cp(v):
        return v.clone().to(device or v.device) if _is_tensor(v) else v  # (torch's "step" is a 0-d tensor)
    return {"state": {k: {n: cp(v) for n, v in st.items()} for k, st in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def test_optimizer_load_state_dict_moves_state_to_the_parameters():
    gpu = _mlp().to("cuda")
    opt = fg.optim.Adam(gpu.parameters(), lr=0.01)
    _train(gpu, opt, CUDA, 2)
    opt_g = fg.optim.Adam(_mlp().to("cuda").parameters(), lr=0.01)
    opt_g.load_state_dict(_clone_state(opt.state_dict(), "cpu"))  # CPU state -> CUDA parameters
    opt_c = fg.optim.Adam(_mlp().parameters(), lr=0.01)
    opt_c.load_state_dict(_clone_state(opt.state_dict()))  # CUDA state -> CPU parameters
    for o, dev in ((opt_g, CUDA), (opt_c, "cpu")):
        for p in o.param_groups[0]["params"]:
            assert o.state[p]["exp_avg"].device.type == dev and o.state[p]["exp_avg_sq"].device.type == dev


def test_save_load_keeps_cuda_device():
    buf = io.BytesIO()
    fg.save({"w": fg.tensor([1.0, 2.0], device=CUDA)}, buf)
    buf.seek(0)
    back = fg.load(buf)
    assert back["w"].device.type == CUDA and back["w"].tolist() == [1.0, 2.0]


def test_deepcopy_and_pickle_cuda_tensors():
    x = fg.tensor([[1.0, -2.0]], device=CUDA, requires_grad=True)
    for y in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        assert y.device.type == CUDA and y.tolist() == x.tolist() and y.requires_grad and y is not x
    m = copy.deepcopy(fg.nn.Linear(2, 3).to("cuda"))
    assert m.weight.device.type == CUDA
    opt = fg.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(x).sum().backward()
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    assert all(s["momentum_buffer"].device.type == CUDA for s in sd["state"].values())


# ================================================================ 4. memory
MiB = 1 << 20


def test_memory_grows_and_drops():
    gc.collect()
    fg.cuda.synchronize()
    base = fg.cuda.memory_allocated()
    x = fg.empty(MiB, device=CUDA)  # 4 MiB
    after = fg.cuda.memory_allocated()
    assert after - base >= 4 * MiB
    assert fg.cuda.max_memory_allocated() >= after
    assert fg.cuda.memory_reserved() >= after
    y = x + 1
    assert fg.cuda.memory_allocated() - after >= 4 * MiB
    del x, y
    assert fg.cuda.memory_allocated() == base
    assert fg.cuda.max_memory_allocated() >= base + 8 * MiB
    fg.cuda.reset_peak_memory_stats()
    assert fg.cuda.max_memory_allocated() == fg.cuda.memory_allocated() == base


def test_empty_cache_then_allocate():
    x = fg.full((MiB,), 2.0, device=CUDA)
    del x
    fg.cuda.empty_cache()
    assert fg.cuda.memory_reserved() >= fg.cuda.memory_allocated()
    y = fg.full((MiB,), 3.0, device=CUDA)
    z = y * 2
    assert z.sum().item() == 6.0 * MiB and z.max().item() == 6.0
    fg.cuda.empty_cache()
    assert y.sum().item() == 3.0 * MiB  # live tensors survive empty_cache


def test_views_do_not_allocate():
    gc.collect()
    x = fg.zeros(256, 256, device=CUDA)
    before = fg.cuda.memory_allocated()
    v = (x.T, x[1:], x.view(-1), x.unsqueeze(0), x.expand(3, 256, 256), x.narrow(0, 2, 10))
    assert fg.cuda.memory_allocated() == before
    del v


@pytest.mark.parametrize("opt_name", ["sgd_momentum", "adam"])
def test_training_memory_is_steady(opt_name):
    model = _mlp().to("cuda")
    opt = OPTS[opt_name](model.parameters())
    x, y = fg.tensor(XS, device=CUDA), fg.tensor(YS, device=CUDA)
    mem = {}
    for step in range(1, 11):
        opt.zero_grad()
        loss = fg.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        del loss
        fg.cuda.synchronize()
        mem[step] = fg.cuda.memory_allocated()
    assert mem[5] == mem[10], mem
    assert fg.cuda.max_memory_allocated() >= mem[10]


def test_graph_memory_is_released():
    gc.collect()
    x = fg.randn(512, 512, device=CUDA, requires_grad=True)
    fg.cuda.synchronize()
    base = fg.cuda.memory_allocated()
    y = (x.exp() * x).tanh().sum()  # saves intermediates on the device
    assert fg.cuda.memory_allocated() > base
    y.backward()
    del y
    g = fg.cuda.memory_allocated()
    assert g - base >= 512 * 512 * 4  # x.grad
    x.grad = None
    assert fg.cuda.memory_allocated() == base


# ================================================================ 5. custom autograd.Function
SEEN = {}


class MulSquare(fg.autograd.Function):
    """x * x * w, with a backward that makes new tensors on the input's device."""

    @staticmethod
    def forward(ctx, x, w):
        SEEN["forward"] = (x.device.type, w.device.type)
        ctx.save_for_backward(x, w)
        return x * x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        SEEN["backward"] = (g.device.type, x.device.type)
        two = fg.full_like(x, 2.0)
        return two * x * w * g, x * x * g


def test_custom_function_on_cuda():
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((3, 4)), rng.standard_normal(4)
    res = {}
    for dev in ("cpu", CUDA):
        x = fg.tensor(xv, device=dev, requires_grad=True)
        w = fg.tensor(wv, device=dev, requires_grad=True)
        out = MulSquare.apply(x, w.expand(3, 4))
        assert out.device.type == dev and out.requires_grad
        assert SEEN["forward"] == (dev, dev)
        (out * fg.tensor(np.arange(12.0).reshape(3, 4), device=dev)).sum().backward()
        assert SEEN["backward"] == (dev, dev)
        assert x.grad.device.type == dev and w.grad.device.type == dev
        res[dev] = (out, x.grad, w.grad)
    for c, g in zip(res["cpu"], res[CUDA]):
        np.testing.assert_allclose(_host(g), _host(c), rtol=1e-12)


class Scale(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g.cpu() * 3  # a gradient on the wrong device


def test_custom_function_wrong_device_grad_raises():
    x = fg.ones(2, 3, device=CUDA, requires_grad=True)
    with pytest.raises(RuntimeError, match="device"):
        Scale.apply(x).sum().backward()


class TwoOut(fg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = x.argmax(1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x)
        return x.exp(), idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (x,) = ctx.saved_tensors
        return g * x.exp()


def test_custom_function_non_differentiable_output_on_cuda():
    x = fg.tensor([[0.5, -1.0], [2.0, 0.0]], device=CUDA, requires_grad=True)
    y, idx = TwoOut.apply(x)
    assert idx.device.type == CUDA and not idx.requires_grad and idx.tolist() == [0, 0]
    y.sum().backward()
    assert x.grad.device.type == CUDA
    np.testing.assert_allclose(_host(x.grad), np.exp(_host(x)), rtol=1e-6)


# ================================================================ 6. DLPack of CUDA tensors
def test_dlpack_device_of_cuda_tensors():
    t = fg.ones(3, device=CUDA)
    assert tuple(t.__dlpack_device__()) == (2, 0)  # (kDLCUDA, 0)
    assert tuple(fg.ones(3).__dlpack_device__()) == (1, 0)


@pytest.mark.skipif(not TORCH_CUDA or not fg._C._cuda_has_kernels(), reason="needs torch on a GPU")
def test_dlpack_shares_cuda_memory_with_torch_both_ways():
    a = fg.arange(6.0, device=CUDA).reshape(2, 3)
    ta = torch.from_dlpack(a)
    assert ta.device.type == "cuda" and ta.tolist() == a.tolist()
    ta.mul_(2)  # the same memory
    assert a.tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    tb = torch.arange(4.0, device="cuda").reshape(2, 2).t()  # a strided view
    b = fg.from_dlpack(tb)
    assert b.device.type == CUDA and b.tolist() == tb.tolist()
    tb.add_(1)
    torch.cuda.synchronize()
    assert b.tolist() == tb.tolist()


@pytest.mark.skipif(not fg._C._cuda_has_kernels() and not AGAINST_TORCH, reason="the stand-in device is host memory")
def test_out_of_device_memory_is_torchs_error_and_recoverable():
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        fg.empty(2**40, device=CUDA)  # 4 TiB of float32
    x = fg.ones(1024, device=CUDA)  # the allocator still works afterwards
    assert x.sum().item() == 1024.0


# ================================================================ 7. float16, bfloat16, int32/16/8, uint8
NEW_DTYPES = ["float16", "bfloat16", "int32", "int16", "int8", "uint8"]
HALVES = ["float16", "bfloat16"]
# 16-bit results on the device may differ from the host's by the last bit (float32 math functions
# of the device vs the host's, each rounded once); matmul sums in another order
HALF_TOL = {"float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3)}


def _vals(t):
    t = t.detach().cpu()
    return (t.float() if dtype_name(t.dtype) == "bfloat16" else t).numpy()


def _same_on_device(exp, got, what, tol=None):
    """got (on CUDA) has exp's (host) dtype, shape and values (16-bit floats within `tol`)."""
    assert got.device.type == CUDA, f"{what}: on {got.device}"
    assert dtype_name(got.dtype) == dtype_name(exp.dtype), f"{what}: {got.dtype} != {exp.dtype}"
    assert tuple(got.shape) == tuple(exp.shape), what
    e, g = _vals(exp), _vals(got)
    if tol and e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=tol[0], atol=tol[1], equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, e, err_msg=what)


def _sample(name, shape, seed):
    g = np.random.default_rng(seed)
    if name in HALVES:
        return fg.tensor(g.standard_normal(shape).astype(np.float32) * 3).to(getattr(fg, name))
    lo, hi = (0, 255) if name == "uint8" else (-100, 100)
    return fg.tensor(g.integers(lo, hi, size=shape)).to(getattr(fg, name))


@pytest.mark.parametrize("src", NEW_DTYPES + ["float32", "float64", "int64", "bool"])
def test_new_dtypes_move_and_cast_on_device(src):
    # in-range values: the casts of out-of-range floats differ between torch's own CPU and CUDA
    x = fg.tensor([[0.0, 1.0, -2.0, 100.0], [3.5, -7.25, 126.0, 0.5]]).to(getattr(fg, src))
    d = x.to(CUDA)
    assert d.device.type == CUDA and dtype_name(d.dtype) == src
    _same_on_device(x, d, "to(cuda)")
    assert _vals(d.cpu()).tolist() == _vals(x).tolist()
    for dst in NEW_DTYPES + ["float32", "float64", "int64", "bool"]:
        if src in ("float32", "float64", "float16", "bfloat16") and dst == "uint8":
            continue  # -2.0 to uint8: torch's CPU and CUDA casts of negative floats differ
        _same_on_device(x.to(getattr(fg, dst)), d.to(getattr(fg, dst)), f"{src} -> {dst}")
        _same_on_device(x.t().to(getattr(fg, dst)), d.t().to(getattr(fg, dst)), f"{src} -> {dst}, strided")


@pytest.mark.parametrize("name", NEW_DTYPES)
def test_new_dtypes_elementwise_on_device(name):
    a, b = _sample(name, (4, 6), 1), _sample(name, (6,), 2)
    b = fg.where(b == 0, fg.ones((), dtype=b.dtype), b)
    tol = HALF_TOL.get(name)
    ops = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
        "mul_number": lambda x, y: x * 3, "add_number": lambda x, y: x + 0.1 if x.is_floating_point() else x + 7,
        "rsub": lambda x, y: 2 - x, "floordiv": lambda x, y: x // y, "maximum": lambda x, y: fg.maximum(x, y),
        "lt": lambda x, y: x < y, "eq_number": lambda x, y: x == 3, "where": lambda x, y: fg.where(x > 0, x, y),
        "masked_fill": lambda x, y: x.masked_fill(x > 1, 5), "abs": lambda x, y: x.abs(), "neg": lambda x, y: -x,
        "clamp": lambda x, y: x.clamp(-2, 3), "sum": lambda x, y: x.sum(1), "max": lambda x, y: x.max(0)[0],
        "argmax": lambda x, y: x.argmax(1), "cat": lambda x, y: fg.cat([x, x], 0), "getitem": lambda x, y: x[1:, ::2],
        "index": lambda x, y: x[fg.tensor([2, 0], device=x.device)], "flip": lambda x, y: x.flip(0),
        "fill": lambda x, y: x.clone().fill_(2), "setitem": lambda x, y: _set_row(x),
    }
    if name in HALVES:
        ops.update({"exp": lambda x, y: x.exp(), "tanh": lambda x, y: x.tanh(), "sigmoid": lambda x, y: x.sigmoid(),
                    "sqrt": lambda x, y: x.abs().sqrt(), "relu": lambda x, y: x.relu(), "pow": lambda x, y: x.abs() ** 1.5,
                    "mean": lambda x, y: x.mean(0), "softmax": lambda x, y: x.softmax(1),
                    "log_softmax": lambda x, y: x.log_softmax(0), "rem": lambda x, y: x % 1.5,
                    "isnan": lambda x, y: (x / 0).isnan()})
    for op, fn in ops.items():
        _same_on_device(fn(a, b), fn(a.to(CUDA), b.to(CUDA)), f"{name} {op}", tol)


def _set_row(x):
    x = x.clone()
    x[0, 1:3] = 4
    return x


@pytest.mark.parametrize("name", HALVES)
def test_half_matmul_on_device(name):
    a, b = _sample(name, (17, 40), 3), _sample(name, (40, 9), 4)
    tol = (HALF_TOL[name][0] * 4, HALF_TOL[name][1] * 40)
    _same_on_device(a @ b, a.to(CUDA) @ b.to(CUDA), "mm", tol)
    _same_on_device(a.t() @ a, a.to(CUDA).t() @ a.to(CUDA), "mm of a transposed view", tol)
    x, y = _sample(name, (3, 5, 8), 5), _sample(name, (3, 8, 2), 6)
    _same_on_device(fg.bmm(x, y), fg.bmm(x.to(CUDA), y.to(CUDA)), "bmm", tol)
    v = _sample(name, (40,), 7)
    _same_on_device(a @ v, a.to(CUDA) @ v.to(CUDA), "mv", tol)
    _same_on_device(v @ v, v.to(CUDA) @ v.to(CUDA), "dot", (tol[0] * 4, tol[1] * 4))
    if TORCH_CUDA:
        ta = torch.from_numpy(_vals(a)).to(getattr(torch, name)).cuda()
        tb = torch.from_numpy(_vals(b)).to(getattr(torch, name)).cuda()
        _same_on_device(ta @ tb, a.to(CUDA) @ b.to(CUDA), "mm vs torch's CUDA", tol)


@pytest.mark.parametrize("name", HALVES)
def test_half_training_on_device_matches_host(name):
    def run(device):
        fg.manual_seed(0)
        net = fg.nn.Sequential(fg.nn.Linear(6, 16), fg.nn.Tanh(), fg.nn.Linear(16, 3)).to(getattr(fg, name))
        net = net.to(device)
        opt = fg.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        x = _sample(name, (8, 6), 8).to(device)
        y = fg.tensor([0, 1, 2, 0, 1, 2, 0, 1], device=device)
        for _ in range(3):
            opt.zero_grad()
            loss = fg.nn.functional.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
        return [p.detach() for p in net.parameters()], [p.grad for p in net.parameters()]

    (hp, hg), (dp, dg) = run("cpu"), run(CUDA)
    tol = (HALF_TOL[name][0] * 10, HALF_TOL[name][1] * 10)
    for e, g in zip(hp + hg, dp + dg):
        assert dtype_name(g.dtype) == name
        _same_on_device(e, g, "parameter/gradient", tol)


def test_new_dtypes_on_device_misc(tmp_path):
    for name in NEW_DTYPES:
        x = _sample(name, (2, 4), 9).to(CUDA)
        assert "device='cuda:0'" in repr(x) and f"dtype=torch.{name}" in repr(x)
        fg.save({"x": x}, tmp_path / "t.pt")
        back = fg.load(tmp_path / "t.pt")["x"]
        assert back.device.type == CUDA
        _same_on_device(x.cpu(), back, f"save/load {name}")
        _same_on_device(x.cpu(), pickle.loads(pickle.dumps(x)), f"pickle {name}")
        _same_on_device(x.cpu().view(fg.int16 if x.element_size() == 2 else fg.uint8),
                        x.view(fg.int16 if x.element_size() == 2 else fg.uint8), f"view(dtype) {name}")
    for name in HALVES:
        r = fg.randn(1000, dtype=getattr(fg, name), device=CUDA)
        assert dtype_name(r.dtype) == name and r.device.type == CUDA
        assert abs(r.float().mean().item()) < 0.2 and 0.8 < r.float().std().item() < 1.2
