"""Every op of the op table (src/ops/table.rs, read through `_C.op_table()`), on every dtype its row
declares, against torch: forward values and dtype, the gradient and grad_fn name (float dtypes), the
in-place form (values, grad_fn name), `out=` (the out returned, values, resize and its warning, the
dtype and autograd refusals), each alias and torch.special name. With FERROGRAD_FAKE_CUDA=1 (or a
GPU) the same cases run on the "cuda" device for the dtypes the row declares there.

The cases are generated from the table: an op added to it is tested here without a line added. The
coverage tests fail when a row has no binding, function form, in-place form or stub entry.
"""
import pathlib
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import dtype_name, error_kind, node_name, raised

if AGAINST_TORCH:
    pytest.skip("the op table is ferrograd's own (torch has none to read)", allow_module_level=True)

ROWS = [r for r in fg._C.op_table() if r["binding"] in ("method", "custom", "private")]
_BY_NAME = {r["name"]: r for r in ROWS}
DEVICES = ["cpu"] + (["cuda"] if fg.cuda.is_available() else [])
FLOATS = ("float32", "float64")
HALVES = ("float16", "bfloat16")

# input ranges where the op is defined (elsewhere both give NaN, which compares equal, but the
# gradients would compare nothing)
_RANGE = {
    "log": (0.2, 3), "log2": (0.2, 3), "log1p": (-0.8, 3), "sqrt": (0.2, 3), "rsqrt": (0.2, 3),
    "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "erfinv": (-0.9, 0.9),
    "acosh": (1.1, 3), "lgamma": (0.3, 4), "digamma": (0.3, 4), "reciprocal": (0.3, 3),
}
# reductions: the arguments after the input (besides the full reduction)
_REDUCE_ARGS = {"logsumexp": [(1,)], "cumsum": [(1,)]}
# float32 results of the special functions: ferrograd computes in float64 and rounds once, torch
# with float32 formulas (a few ulp apart)
_LOOSE = {"lgamma", "digamma", "erfinv", "i0", "_special_i1", "erfc", "tan", "acosh", "asinh", "atanh"}


# torch.special.round refuses integer dtypes ('"round_vml_cpu" not implemented') where torch.round
# takes them; ferrograd's special.round is torch.round (a documented difference)
_SPECIAL_DIFFERENCES = {("round", d) for d in ("int64", "int32", "int16", "int8", "uint8")}
# known bugs outside the table's generation (strict xfail: they fail until fixed)
_KNOWN_OUT_BUGS = {("cumsum", "bool")}  # cumsum(dtype=bool) computes; torch: "cumsum_out_cpu" not implemented
_KNOWN_INPLACE_BUGS = {"floor_divide": "floor_divide_ records FloorDivideBackward0; torch records NotImplemented"}


def _tol(dtype, op):
    if dtype == "float16":
        return 2e-3, 1e-3
    if dtype == "bfloat16":
        return 1.6e-2, 1e-2
    if dtype == "float32":
        return (1e-4, 1e-5) if op in _LOOSE else (2e-5, 1e-6)
    return 1e-9, 1e-12


def _array(name, dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        return rng.integers(0, 10, shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-6, 7, shape).astype(np.int64)
    lo, hi = _RANGE.get(name, (-2, 2))
    return rng.uniform(lo, hi, shape)


def _tensor(lib, a, dtype, device="cpu", grad=False):
    t = lib.tensor(a.astype(np.float64) if a.dtype.kind == "f" else a).to(getattr(lib, dtype))
    if device != "cpu":
        t = t.to(device)
    if grad:
        t.requires_grad_(True)
    return t


def _inputs(row, dtype, seed=0):
    """numpy inputs and the extra arguments of one call of the row's op."""
    fam, name = row["family"], row["name"]
    if fam in ("binary", "float_binary", "comparison", "logical"):
        b = _array(name, dtype, (4,), seed + 1)
        if name in ("floor_divide", "remainder", "div") or (name == "pow" and dtype.startswith("int")):
            b = np.where(b == 0, 3, b).astype(b.dtype)  # (integer division by zero: torch's error)
        if name == "pow" and dtype not in FLOATS + HALVES:
            b = np.abs(b) % 4
        return [_array(name, dtype, (3, 4), seed), b], ()
    return [_array(name, dtype, (3, 4), seed)], ()


def _calls(row):
    """(label, args) of the calls to make: reductions over all and over a dim."""
    if row["family"] == "reduction":
        return [(str(a), a) for a in _REDUCE_ARGS.get(row["name"], [(), (1,)])]
    return [("", ())]


def _fn(lib, name, special=False):
    if special:
        return getattr(lib.special, name)
    row = _BY_NAME.get(name)
    if row is not None and row["binding"] == "private":
        return getattr(lib.special, row["special"][0])  # (an op torch has in torch.special only)
    return getattr(lib, name)


def _compare(t, f, dtype, op, what):
    if isinstance(t, torch.Tensor):
        assert isinstance(f, fg.Tensor), f"{what}: {type(f).__name__}"
        assert dtype_name(f.dtype) == dtype_name(t.dtype), f"{what}: dtype {f.dtype} != torch {t.dtype}"
        assert tuple(f.shape) == tuple(t.shape), f"{what}: shape {tuple(f.shape)} != {tuple(t.shape)}"
        ta = (t.detach().float() if t.dtype == torch.bfloat16 else t.detach()).numpy(force=True)
        fa = f.detach().cpu()
        fa = (fa.float() if dtype_name(fa.dtype) == "bfloat16" else fa).numpy()
        if ta.dtype.kind in "biu":
            np.testing.assert_array_equal(fa, ta, err_msg=what)
        else:
            r, a = _tol(dtype_name(t.dtype), op)
            np.testing.assert_allclose(fa, ta, rtol=r, atol=a, equal_nan=True, err_msg=what)
    else:
        assert type(f) is type(t) or (isinstance(t, tuple) and isinstance(f, tuple)), what
        for i, (a, b) in enumerate(zip(t, f)):
            _compare(a, b, dtype, op, f"{what}[{i}]")


def _run(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _same(tf, ff, dtype, op, what):
    """Both raise the same kind of error, or both give the same result."""
    te, fe = raised(lambda _: tf(), None), raised(lambda _: ff(), None)
    assert error_kind(fe) == error_kind(te), f"{what}: ferrograd {fe!r}, torch {te!r}"
    if te is None:
        _compare(_run(tf), _run(ff), dtype, op, what)


def _cases(devices_key):
    out = []
    for row in ROWS:
        for device in DEVICES:
            for dtype in row["dtypes"][device if device == "cpu" else "cuda"]:
                out.append(pytest.param(row, device, dtype, id=f"{row['name']}-{device}-{dtype}"))
    return out


CASES = _cases("dtypes")


# ------------------------------------------------------------------------------------ forward
@pytest.mark.parametrize("row,device,dtype", CASES)
def test_forward(row, device, dtype):
    arrays, _ = _inputs(row, dtype)
    name = row["name"]
    for label, extra in _calls(row):
        # (aliases and torch.special names: the same function; checked on two dtypes)
        names = (name, *row["aliases"]) if dtype in ("float32", "int64") else (name,)
        for n in names:
            tf = lambda n=n: _fn(torch, n)(*[_tensor(torch, a, dtype) for a in arrays], *extra)  # noqa: E731
            ff = lambda n=n: _fn(fg, n)(*[_tensor(fg, a, dtype, device) for a in arrays], *extra)  # noqa: E731
            _same(tf, ff, dtype, name, f"{n}({dtype}{label}) on {device}")
            if te := raised(lambda _: tf(), None):
                continue
            r = _run(ff)
            if isinstance(r, fg.Tensor):
                assert r.device.type == device, f"{n}: result on {r.device}, expected {device}"
        for sp in row["special"] if dtype in ("float32", "int64") else ():
            if (sp, dtype) in _SPECIAL_DIFFERENCES:
                continue
            tf = lambda sp=sp: _fn(torch, sp, True)(*[_tensor(torch, a, dtype) for a in arrays], *extra)  # noqa: E731
            ff = lambda sp=sp: _fn(fg, sp, True)(*[_tensor(fg, a, dtype, device) for a in arrays], *extra)  # noqa: E731
            _same(tf, ff, dtype, name, f"special.{sp}({dtype}{label}) on {device}")


# ------------------------------------------------------------------------------------ backward
GRAD_CASES = [c for c in CASES if c.values[0]["grad_fn"] and c.values[2] in FLOATS]


@pytest.mark.parametrize("row,device,dtype", GRAD_CASES)
def test_gradient(row, device, dtype):
    arrays, _ = _inputs(row, dtype, seed=7)
    name = row["name"]
    for label, extra in _calls(row):
        res = {}
        for lib, dev in ((torch, "cpu"), (fg, device)):
            xs = [_tensor(lib, a, dtype, dev, grad=True) for a in arrays]
            y = _fn(lib, name)(*xs, *extra)
            w = _tensor(lib, np.random.default_rng(3).uniform(-1, 1, tuple(y.shape)), dtype, dev)
            (y * w).sum().backward()
            res[lib] = (node_name(y.grad_fn), [x.grad for x in xs])
        (tname, tgrads), (fname, fgrads) = res[torch], res[fg]
        assert fname == tname, f"{name}{label}: grad_fn {fname}, torch {tname}"
        for i, (tg, fgr) in enumerate(zip(tgrads, fgrads)):
            assert (tg is None) == (fgr is None), f"{name}{label}: grad {i} None-ness"
            if tg is not None:
                _compare(tg, fgr, dtype, name, f"{name}{label} grad {i} on {device}")


# ------------------------------------------------------------------------------------ in place
INPLACE_CASES = [
    pytest.param(*c.values, id=c.id, marks=pytest.mark.xfail(strict=True, reason=_KNOWN_INPLACE_BUGS[c.values[0]["name"]]))
    if c.values[0]["name"] in _KNOWN_INPLACE_BUGS and c.values[2] in FLOATS else c
    for c in CASES if c.values[0]["inplace"] and c.values[0]["inplace_native"]]


@pytest.mark.parametrize("row,device,dtype", INPLACE_CASES)
def test_inplace(row, device, dtype):
    arrays, _ = _inputs(row, dtype, seed=11)
    extra = _calls(row)[-1][1]
    for n in (row["name"], *row["aliases"]):
        m = n + "_"

        def tf(m=m):
            xs = [_tensor(torch, a, dtype) for a in arrays]
            r = getattr(xs[0], m)(*xs[1:], *extra)
            assert r is xs[0]
            return xs[0]

        def ff(m=m):
            xs = [_tensor(fg, a, dtype, device) for a in arrays]
            r = getattr(xs[0], m)(*xs[1:], *extra)
            assert r is xs[0], f"{m} returned another tensor"
            return xs[0]

        _same(tf, ff, dtype, row["name"], f"x.{m}() ({dtype}) on {device}")
        if row["inplace_function"] and hasattr(torch, m):
            tfn = lambda m=m: getattr(torch, m)(_tensor(torch, arrays[0], dtype))  # noqa: E731
            ffn = lambda m=m: getattr(fg, m)(_tensor(fg, arrays[0], dtype, device))  # noqa: E731
            _same(tfn, ffn, dtype, row["name"], f"torch.{m}(x) ({dtype}) on {device}")
        if dtype in FLOATS:
            names = {}
            for lib, dev in ((torch, "cpu"), (fg, device)):
                xs = [_tensor(lib, a, dtype, dev, grad=True) for a in arrays]
                y = xs[0].clone()
                getattr(y, m)(*xs[1:], *extra)
                names[lib] = node_name(y.grad_fn)
            assert names[fg] == names[torch], f"{m}: grad_fn {names[fg]}, torch {names[torch]}"


# ------------------------------------------------------------------------------------ out=
OUT_CASES = [c for c in CASES if c.values[2] in ("float32", "int64", "bool")]


def _out_call(lib, name, arrays, dtype, out, extra=(), device="cpu", grad=False):
    xs = [_tensor(lib, a, dtype, device, grad=grad and i == 0) for i, a in enumerate(arrays)]
    return _fn(lib, name)(*xs, *extra, out=out)


@pytest.mark.parametrize("row,device,dtype", OUT_CASES)
def test_out(row, device, dtype):
    arrays, _ = _inputs(row, dtype, seed=5)
    name = row["name"]
    label, extra = _calls(row)[-1]
    # the result torch gives (its dtype is what out must hold)
    te = raised(lambda _: _fn(torch, name)(*[_tensor(torch, a, dtype) for a in arrays], *extra), None)
    if te is not None:
        return
    expected = _run(lambda: _fn(torch, name)(*[_tensor(torch, a, dtype) for a in arrays], *extra))
    rdt = dtype_name(expected.dtype)
    # not taking out=: torch's TypeError
    if not row["out"]:
        with pytest.raises(TypeError):
            _out_call(torch, name, arrays, dtype, torch.empty(0), extra)
        with pytest.raises(TypeError):
            _out_call(fg, name, arrays, dtype, fg.empty(0, device=device), extra, device)
        return
    # an empty out: resized without a warning, returned, holding the values
    o = fg.empty(0, dtype=getattr(fg, rdt), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = _out_call(fg, name, arrays, dtype, o, extra, device)
    assert r is o, f"{name}(out=): returned another tensor"
    _compare(expected, o, dtype, name, f"{name}(out=) ({dtype}) on {device}")
    # a non-empty out of another shape: resized with torch's UserWarning
    if expected.dim() > 0:
        o = fg.zeros(7, dtype=getattr(fg, rdt), device=device)
        with pytest.warns(UserWarning, match="resized"):
            _out_call(fg, name, arrays, dtype, o, extra, device)
        _compare(expected, o, dtype, name, f"{name}(out= resized) ({dtype})")
    # an out of a dtype the result cannot be cast to, and an out of another dtype it can (the
    # values compared in the result's dtype: both compute in it, then cast)
    for odt in ("bool", "int64", "float64"):
        if (name, odt) in _KNOWN_OUT_BUGS:
            continue
        tt = lambda odt=odt: _out_call(torch, name, arrays, dtype, torch.empty(0, dtype=getattr(torch, odt)), extra).to(expected.dtype)  # noqa: E731
        ff = lambda odt=odt: _out_call(fg, name, arrays, dtype, fg.empty(0, dtype=getattr(fg, odt), device=device), extra, device).to(getattr(fg, rdt))  # noqa: E731
        _same(tt, ff, dtype, name, f"{name}({dtype}, out={odt}) on {device}")
    # autograd: an input that requires grad is refused (torch's RuntimeError), with grad mode on
    if dtype == "float32":
        tt = lambda: _out_call(torch, name, arrays, dtype, torch.empty(0, dtype=expected.dtype), extra, grad=True)  # noqa: E731
        ff = lambda: _out_call(fg, name, arrays, dtype, fg.empty(0, dtype=getattr(fg, rdt), device=device), extra, device, grad=True)  # noqa: E731
        assert error_kind(raised(lambda _: ff(), None)) == error_kind(raised(lambda _: tt(), None)), f"{name}(out=) with grad"


# ------------------------------------------------------------------------------------ coverage
_STUB = (pathlib.Path(fg.__file__).parent / "_C.pyi").read_text()
_NO_INPLACE_FUNCTION = fg._function_forms._NO_INPLACE_FUNCTION  # (x.absolute_ without torch.absolute_)


def _stub_methods():
    """The method names of the stub's Tensor class."""
    import ast
    tree = ast.parse(_STUB)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Tensor":
            return {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return set()


def test_every_row_is_bound_and_has_its_forms():
    """A row's Tensor methods, torch functions, in-place forms, torch.special names and stub entries
    all exist (generated from the row; this fails when one is missing)."""
    stub = _stub_methods()
    missing = []
    for row in ROWS:
        names = [row["name"], *row["aliases"]]
        for n in names:
            if not hasattr(fg.Tensor, n):
                missing.append(f"Tensor.{n}")
            if row["binding"] != "private" and not callable(getattr(fg, n, None)):
                missing.append(f"torch.{n}")
            if n not in stub:
                missing.append(f"stub Tensor.{n}")
            if row["inplace"]:
                if not hasattr(fg.Tensor, n + "_"):
                    missing.append(f"Tensor.{n}_")
                if row["inplace_native"] and row["binding"] != "custom" and n + "_" not in stub:
                    missing.append(f"stub Tensor.{n}_")
                if row["inplace_function"] and n + "_" not in _NO_INPLACE_FUNCTION and not callable(getattr(fg, n + "_", None)):
                    missing.append(f"torch.{n}_")
        for sp in row["special"]:
            if not callable(getattr(fg.special, sp, None)):
                missing.append(f"torch.special.{sp}")
    assert not missing, f"op table rows without a binding or form: {missing}"


def test_native_inplace_forms_are_not_python_copies():
    """A native in-place form records the op's grad_fn (not CopyBackwards from a Python copy_)."""
    for row in ROWS:
        if row["inplace_native"] and row["inplace_grad_fn"] and row["family"] != "reduction":
            for n in (row["name"], *row["aliases"]):
                method = getattr(fg.Tensor, n + "_")
                assert type(method).__name__ in ("method_descriptor", "builtin_function_or_method"), (
                    f"Tensor.{n}_ is {type(method).__name__}, not the native method")


def test_table_names_match_torch():
    """Every name the table declares exists in torch (no invented names)."""
    bad = []
    for row in ROWS:
        for n in (row["name"], *row["aliases"]):
            if row["binding"] != "private" and not hasattr(torch, n):
                bad.append(f"torch.{n}")
            if row["binding"] != "private" and not hasattr(torch.Tensor, n):
                bad.append(f"Tensor.{n}")
            if row["inplace_function"] and not hasattr(torch, n + "_") and n + "_" not in _NO_INPLACE_FUNCTION:
                bad.append(f"torch.{n}_")
        for sp in row["special"]:
            if not hasattr(torch.special, sp):
                bad.append(f"torch.special.{sp}")
    assert not bad, bad


@pytest.mark.xfail(strict=True, reason="bug: cumsum(dtype=bool) computes; torch raises NotImplementedError")
def test_cumsum_bool_dtype_refused():
    with pytest.raises(NotImplementedError):
        torch.cumsum(torch.ones(3), 0, dtype=torch.bool)
    with pytest.raises(NotImplementedError):
        fg.cumsum(fg.ones(3), 0, dtype=fg.bool)


def test_out_is_never_silently_ignored():
    """Every function form given an out either honours it (returns out) or raises."""
    x = fg.rand(3, 3)
    for name in ("reshape", "flip", "clone", "transpose"):
        with pytest.raises(TypeError):
            getattr(fg, name)(x, *((9,),) if name == "reshape" else ((0,),) if name == "flip" else (0, 1) if name == "transpose" else (), out=fg.empty(0))
    o = fg.empty(0)
    assert fg.mm(x, x, out=o) is o
    np.testing.assert_allclose(o.numpy(), (x @ x).numpy(), rtol=1e-6)
    o = fg.empty(0)
    assert fg.clamp(x, 0.2, 0.5, out=o) is o
    np.testing.assert_allclose(o.numpy(), x.clamp(0.2, 0.5).numpy())
