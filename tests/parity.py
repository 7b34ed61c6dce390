"""The one parity helper: run the same op on torch and on the library under test, compare.

`check_op(fn, *specs)` builds seeded numpy inputs (float64 by default, per-argument domain and layout),
makes the same tensors in torch and in fg with `lib.tensor(ndarray, requires_grad=...)`, runs
`fn(lib, *tensors)` on both and compares:

  1. forward: output structure (tensor / tuple / namedtuple / Python scalar), shape, dtype (by the name
     after the dot: 'torch.float64' ~ 'ferrograd.float64'), requires_grad, values;
  2. backward: `sum_k (out_k * W_k).sum()` with seeded random weights W_k, `.backward()`, then the
     `.grad` of every input that requires grad (None-ness, shape, dtype, values);
  3. double backward (unless double=False): the first backward runs with create_graph=True; then
     `sum_i (grad_i * V_i).sum()` is backpropagated again and the second-order grads are compared.

Expected values always come from torch; nothing is computed by the library under test alone.
"""
import warnings

import numpy as np
import torch

from conftest import fg

# Input value domains (see In).
DOMAINS = ("normal", "pos", "nonzero", "unit", "ints", "small")


class In:
    """Spec of one input.

    shape:  the tensor's shape (as seen by fn).
    domain: 'normal' N(0,1); 'pos' U(0.5, 2); 'nonzero' +-U(0.5, 2); 'unit' U(-0.9, 0.9);
            'ints' small integer-valued numbers (ties for comparisons, exact for // and %);
            'small' U(-1.2, 1.2).
    dtype:  'float64' (default), 'float32', 'int64', 'bool'.
    layout: None (contiguous), 'T' (a transposed view of a contiguous base: last two dims swapped),
            'step' (base[..., ::2] of a base twice as wide in the last dim). The non-contiguous tensor is
            made a leaf with `.requires_grad_()` after taking the view.
    grad:   requires_grad; default True for floating dtypes.
    value:  an explicit array (overrides shape/domain).
    """

    def __init__(self, shape=None, domain=None, dtype="float64", layout=None, grad=None, value=None):
        if value is not None:
            value = np.asarray(value)
            shape = value.shape
            if dtype == "float64" and value.dtype != np.float64:
                dtype = {"b": "bool", "i": "int64", "u": "int64", "f": str(value.dtype)}[value.dtype.kind]
        self.shape = tuple(shape) if shape is not None else ()
        self.domain = domain
        self.dtype = dtype
        self.layout = layout
        self.grad = grad
        self.value = value
        assert domain is None or domain in DOMAINS, domain
        assert layout in (None, "T", "step"), layout
        assert layout != "T" or len(self.shape) >= 2

    def with_domain(self, domain):
        if self.domain is not None or domain is None:
            return self
        return In(self.shape, domain, self.dtype, self.layout, self.grad, self.value)

    def with_dtype(self, dtype):
        return In(self.shape, self.domain, dtype, self.layout, self.grad, self.value)

    @property
    def is_float(self):
        return self.dtype in ("float32", "float64")

    @property
    def requires_grad(self):
        return self.is_float if self.grad is None else self.grad

    def __repr__(self):
        bits = [str(self.shape)]
        if self.dtype != "float64":
            bits.append(self.dtype)
        if self.layout:
            bits.append(self.layout)
        return "In(" + ",".join(bits) + ")"


def as_spec(s):
    if isinstance(s, In):
        return s
    if isinstance(s, np.ndarray):
        return In(value=s)
    if isinstance(s, tuple):
        return In(s)
    raise TypeError(f"bad input spec {s!r}")


def _draw(rng, shape, domain, dtype):
    domain = domain or "normal"
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "int64":
        if domain == "pos":
            v = rng.integers(1, 6, size=shape)
        elif domain == "nonzero":
            v = rng.integers(1, 6, size=shape) * rng.choice([-1, 1], size=shape)
        else:
            v = rng.integers(-5, 6, size=shape)
        return np.asarray(v, dtype=np.int64)
    if domain == "normal":
        v = rng.standard_normal(shape)
    elif domain == "pos":
        v = rng.uniform(0.5, 2.0, shape)
    elif domain == "nonzero":
        v = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], size=shape)
    elif domain == "unit":
        v = rng.uniform(-0.9, 0.9, shape)
    elif domain == "small":
        v = rng.uniform(-1.2, 1.2, shape)
    elif domain == "ints":
        v = rng.integers(-4, 5, size=shape).astype(np.float64)
    else:
        raise ValueError(domain)
    return np.asarray(v, dtype=np.float64).astype(dtype)


def _base_array(rng, spec):
    """The contiguous numpy array an input is made from (_make takes the view for a layout)."""
    shape = spec.shape
    if spec.value is not None:
        data = np.array(spec.value, dtype=spec.dtype)
        shape = data.shape
    else:
        data = None
    if spec.layout == "T":
        if data is None:
            base = _draw(rng, shape[:-2] + (shape[-1], shape[-2]), spec.domain, spec.dtype)
        else:
            base = np.swapaxes(data, -1, -2)
    elif spec.layout == "step":
        if data is None:
            base = _draw(rng, shape[:-1] + (shape[-1] * 2,), spec.domain, spec.dtype)
        else:
            base = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype=data.dtype)
            base[..., ::2] = data
    else:
        base = data if data is not None else _draw(rng, shape, spec.domain, spec.dtype)
    return np.array(base, order="C")  # (np.ascontiguousarray would turn 0-d into 1-d)


def _make(lib, base, spec):
    """The same input tensor in `lib`: a leaf, possibly a non-contiguous view."""
    if spec.layout is None:
        return lib.tensor(base.copy(), requires_grad=spec.requires_grad)
    t = lib.tensor(base.copy())
    t = t.transpose(-1, -2) if spec.layout == "T" else t[..., ::2]
    if lib is torch:
        assert not t.is_contiguous(), "spec layout must give a non-contiguous input"
    if spec.requires_grad:
        t.requires_grad_()
    return t


def dtype_name(dt):
    """'torch.float64' and 'ferrograd.float64' both give 'float64'."""
    return str(dt).rsplit(".", 1)[-1]


def to_numpy(t):
    if isinstance(t, torch.Tensor):  # torch may hand out lazy zero tensors (ZeroTensor) as grads
        return t.detach().numpy(force=True)
    return t.detach().numpy()


def _tols(dtype, rtol, atol):
    if dtype_name(dtype) in ("float32", "float16", "bfloat16"):
        return max(rtol, 1e-5), max(atol, 1e-6)
    return rtol, atol


def assert_tensor_close(tt, ft, rtol=1e-7, atol=1e-9, what="output", check_grad_flag=True):
    """Compare a torch tensor (expected) with a tensor of the library under test."""
    assert isinstance(ft, fg.Tensor), f"{what}: expected a Tensor, got {type(ft).__name__}"
    assert tuple(ft.shape) == tuple(tt.shape), f"{what}: shape {tuple(ft.shape)} != torch {tuple(tt.shape)}"
    assert dtype_name(ft.dtype) == dtype_name(tt.dtype), (
        f"{what}: dtype {ft.dtype} != torch {tt.dtype}")
    if check_grad_flag:
        assert bool(ft.requires_grad) == bool(tt.requires_grad), (
            f"{what}: requires_grad {ft.requires_grad} != torch {tt.requires_grad}")
    expected = to_numpy(tt)
    got = to_numpy(ft)
    assert got.shape == expected.shape, f"{what}: numpy() shape {got.shape} != {expected.shape}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        r, a = _tols(tt.dtype, rtol, atol)
        np.testing.assert_allclose(got, expected, rtol=r, atol=a, equal_nan=True, err_msg=what)


def assert_same_output(t_out, f_out, rtol=1e-7, atol=1e-9, what="output"):
    """Recursive comparison of an op's result: tensors, (named) tuples, lists, Python scalars."""
    if isinstance(t_out, torch.Tensor):
        assert_tensor_close(t_out, f_out, rtol, atol, what)
    elif isinstance(t_out, (tuple, list)):
        kind = list if isinstance(t_out, list) else tuple
        assert isinstance(f_out, kind), f"{what}: expected a {kind.__name__}, got {type(f_out).__name__}"
        assert len(f_out) == len(t_out), f"{what}: {len(f_out)} results != torch {len(t_out)}"
        for field in ("values", "indices"):  # torch.return_types (max, min, ...)
            if hasattr(t_out, field):
                assert hasattr(f_out, field), f"{what}: result has no .{field}"
                assert_same_output(getattr(t_out, field), getattr(f_out, field), rtol, atol, f"{what}.{field}")
        for i, (t, f) in enumerate(zip(t_out, f_out)):
            assert_same_output(t, f, rtol, atol, f"{what}[{i}]")
    elif isinstance(t_out, np.ndarray):
        assert isinstance(f_out, np.ndarray), f"{what}: expected an ndarray, got {type(f_out).__name__}"
        assert f_out.dtype == t_out.dtype, f"{what}: numpy dtype {f_out.dtype} != torch {t_out.dtype}"
        assert f_out.shape == t_out.shape, f"{what}: numpy shape {f_out.shape} != torch {t_out.shape}"
        np.testing.assert_allclose(f_out, t_out, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    elif isinstance(t_out, torch.dtype):
        assert dtype_name(f_out) == dtype_name(t_out), f"{what}: dtype {f_out} != torch {t_out}"
    elif isinstance(t_out, str):
        assert isinstance(f_out, str) and f_out == t_out, f"{what}: {f_out!r} != torch {t_out!r}"
    elif isinstance(t_out, (bool, int, float)) or t_out is None:
        assert type(f_out) is type(t_out), f"{what}: {type(f_out).__name__} != torch {type(t_out).__name__}"
        if isinstance(t_out, float):
            np.testing.assert_allclose(f_out, t_out, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
        else:
            assert f_out == t_out, f"{what}: {f_out!r} != torch {t_out!r}"
    else:
        raise TypeError(f"{what}: unsupported torch result type {type(t_out)}")


def _leaves(out):
    """The tensors of a result, flattened."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _leaves(o)]
    if isinstance(out, (torch.Tensor, fg.Tensor)):
        return [out]
    return []


def _np_dtype(dt):
    return np.float32 if dtype_name(dt) == "float32" else np.float64


def _grads_close(t_inputs, f_inputs, specs, rtol, atol, what, none_as_zero=False):
    for i, (ti, fi, s) in enumerate(zip(t_inputs, f_inputs, specs)):
        if not s.requires_grad:
            continue
        tg, fgr = ti.grad, fi.grad
        if none_as_zero:
            if tg is None and fgr is None:
                continue
            if tg is None:
                tg = torch.zeros_like(ti)
            if fgr is None:
                assert torch.count_nonzero(tg) == 0, f"{what} of input {i}: None, torch has {tg}"
                continue
        if tg is None:
            assert fgr is None, f"{what} of input {i}: torch gives None, got {fgr}"
            continue
        assert fgr is not None, f"{what} of input {i} is None; torch: {tg}"
        assert_tensor_close(tg.detach(), fgr.detach(), rtol, atol, f"{what} of input {i}",
                            check_grad_flag=False)


def check_op(fn, *specs, rtol=1e-7, atol=1e-9, grad=True, double=True, grad_rtol=None,
             grad_atol=None, seed=0):
    """Run fn(lib, *inputs) in torch and in fg on the same seeded inputs; compare forward,
    gradients of a random-weighted sum, and (double=True) second-order gradients."""
    specs = [as_spec(s) for s in specs]
    if not grad:
        specs = [In(s.shape, s.domain, s.dtype, s.layout, False, s.value) for s in specs]
    rng = np.random.default_rng(seed)
    bases = [_base_array(rng, s) for s in specs]
    t_in = [_make(torch, b, s) for b, s in zip(bases, specs)]
    f_in = [_make(fg, b, s) for b, s in zip(bases, specs)]
    for s, t in zip(specs, t_in):
        assert tuple(t.shape) == s.shape, f"input spec {s} made shape {tuple(t.shape)}"
    for i, (t, f) in enumerate(zip(t_in, f_in)):  # the inputs themselves must agree
        assert_tensor_close(t, f, 0, 0, f"input {i}")

    t_out = fn(torch, *t_in)
    f_out = fn(fg, *f_in)
    assert_same_output(t_out, f_out, rtol, atol)

    if not grad:
        return
    t_res = [t for t in _leaves(t_out) if t.requires_grad]
    f_res = [f for t, f in zip(_leaves(t_out), _leaves(f_out)) if t.requires_grad]
    if not t_res:
        return
    weights = [np.asarray(rng.standard_normal(tuple(t.shape)), dtype=_np_dtype(t.dtype)) for t in t_res]
    grtol = grad_rtol if grad_rtol is not None else rtol
    gatol = grad_atol if grad_atol is not None else atol
    if any(s.dtype == "float32" for s in specs):
        # gradients that flowed through float32 ops carry float32 rounding, whatever the
        # dtype of the input they land on (float32 sums need not round as torch's do)
        grtol, gatol = max(grtol, 1e-5), max(gatol, 1e-6)

    def first_backward(lib, res, inputs):
        loss = sum((r * lib.tensor(w)).sum() for r, w in zip(res, weights))
        with warnings.catch_warnings():  # torch warns about create_graph=True + .backward
            warnings.simplefilter("ignore")
            loss.backward(create_graph=double)
        return [x.grad for x in inputs]

    t_g = first_backward(torch, t_res, t_in)
    f_g = first_backward(fg, f_res, f_in)
    _grads_close(t_in, f_in, specs, grtol, gatol, "grad")

    if not double:
        return
    vs = [np.asarray(rng.standard_normal(tuple(s.shape))) for s in specs]

    def second_backward(lib, grads, inputs):
        terms = []
        for g, v, x in zip(grads, vs, inputs):
            if g is not None and g.requires_grad:
                terms.append((g * lib.tensor(np.asarray(v, dtype=_np_dtype(g.dtype)))).sum())
        for x in inputs:
            x.grad = None
        if terms:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sum(terms).backward()

    second_backward(torch, t_g, t_in)
    second_backward(fg, f_g, f_in)
    _grads_close(t_in, f_in, specs, grtol * 10, gatol * 10, "second-order grad", none_as_zero=True)


def same(fn, rtol=1e-7, atol=1e-9):
    """Run fn(torch) and fn(fg); the results (tensors, arrays, tuples, lists, scalars, str, dtypes, None)
    must agree. Use it for semantics: return what the test observes, torch's answer is the expectation."""
    expected = fn(torch)
    got = fn(fg)
    assert_same_output(expected, got, rtol, atol)
    return expected, got


def node_name(node):
    """grad_fn / next_functions node name, e.g. 'MulBackward0', 'AccumulateGrad' (None for None).
    torch's AccumulateGrad.name() is 'torch::autograd::AccumulateGrad': the namespace is dropped."""
    return None if node is None else node.name().rsplit("::", 1)[-1]


def graph(node, depth=8):
    """The backward graph from a node, as nested (name, [(child, input_nr), ...])."""
    if node is None:
        return None
    if depth == 0:
        return node_name(node)
    return (node_name(node), [(graph(n, depth - 1), i) for n, i in node.next_functions])


def _quiet(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(lib)


def raised(fn, lib):
    """The exception `fn(lib)` raises (warnings silenced), or None."""
    try:
        _quiet(fn, lib)
    except Exception as e:  # noqa: BLE001 - any exception is compared with torch's
        return e
    return None


def error_kind(e):
    """The builtin exception class name an exception is (for comparing torch's and ours)."""
    if e is None:
        return None
    for k in (NotImplementedError, IndexError, TypeError, ValueError, RuntimeError):
        if isinstance(e, k):
            return k.__name__
    return type(e).__name__


def same_semantics(fn, rtol=1e-6, atol=1e-8):
    """`fn(lib)` raises the same kind of exception in torch and ferrograd, or neither raises and
    the results agree (warnings silenced)."""
    te, fe = raised(fn, torch), raised(fn, fg)
    assert error_kind(fe) == error_kind(te), (te, fe)
    if te is None:
        same(lambda L: _quiet(fn, L), rtol=rtol, atol=atol)
