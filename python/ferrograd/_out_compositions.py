"""torch's `out=` for the functions ferrograd composes in Python (`_pointwise`, `_reductions`,
`_sorting`, `_shape_ops`, `_linalg_products`, `special`, `linalg`, ...), declared in one table.

Each row names a public function (qualified by namespace: "log10", "special.entr", "linalg.eig")
and torch's out= rule for it: the dtype rule of `_out.out_call` ("cast" for torch's elementwise
kernels, "exact" for composite and linalg ops), whether torch refuses autograd (`grad=False` for
the non-differentiable ones, whose out= torch takes with inputs that require grad), and, for a
function returning several tensors, its named tuple (the out is then a tuple, returned as torch's
`<name>_out` type). `install` wraps the namespace's function once at import: the function body
computes its result as without an out, and `_out` writes it into out with torch's semantics.
The set of functions is measured by tests/test_out_everywhere.py, which walks the namespaces.
"""
import functools
import inspect

from . import _C
from . import return_types as _rt
from ._out import out_call, out_call_many

# name -> dtype rule ("cast": TensorIterator kernels)
_CAST = """
log10 exp2 hypot fmax fmin fmod frac copysign deg2rad rad2deg logaddexp logaddexp2 xlogy logit sinc heaviside
lerp addcmul addcdiv float_power nan_to_num gcd lcm ldexp polygamma angle conj_physical
special.entr special.exp2 special.logit special.ndtr special.sinc special.xlogy special.log_ndtr special.polygamma
""".split()
_EXACT = """
addbmm baddbmm addmm addmv addr cat concat concatenate column_stack dstack hstack vstack row_stack stack cross
cumprod logcumsumexp diag diff inner kron matrix_power linalg.matrix_power msort nanmean narrow_copy
renorm take_along_dim tril triu vdot where inverse histc special.multigammaln frobenius_norm nuclear_norm ormqr
""".split()
# non-differentiable: torch takes their out= whatever requires grad
_NO_GRAD = """
signbit isneginf isposinf bucketize searchsorted nonzero multinomial range
""".split()
# out= calls torch does not refuse for an input requiring grad (measured by tests/test_out_everywhere.py)
_COMPOSITE = "conj_physical diag heaviside histc inner nuclear_norm special.ndtr".split()
# outs torch resizes without its warning
_NO_WARN = "addbmm bernoulli multinomial narrow_copy range".split()
# torch's cat family: a result dtype that cannot be cast to out's is its TypeError
_CAT_FAMILY = "cat concat concatenate stack hstack vstack dstack row_stack column_stack".split()
# computed in out's dtype (torch passes out's dtype on as dtype=)
_IN_OUT_DTYPE = "cumprod nanmean range".split()
# several results: name -> named tuple
_MANY = {"aminmax": _rt.aminmax, "cummax": _rt.cummax, "cummin": _rt.cummin, "frexp": _rt.frexp,
         "geqrf": _rt.geqrf, "kthvalue": _rt.kthvalue, "mode": _rt.mode, "sort": _rt.sort, "topk": _rt.topk}


def _tensors(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _tensors(v)


def _takes_out(fn):
    try:
        return "out" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _wrap(fn, fname, *, dtype="exact", grad=None, kind=None, warn=True, pre=None, in_out_dtype=False):
    if getattr(fn, "_out_composed", False) or _takes_out(fn):
        return fn  # (a function with its own out= keeps it)

    @functools.wraps(fn)
    def wrapped(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        inputs = tuple(_tensors((*args, *kwargs.values())))
        if pre is not None:
            pre(fname, inputs, out)
        if in_out_dtype and isinstance(out, _C.Tensor):
            kwargs = {**kwargs, "dtype": out.dtype}
        compute = functools.partial(fn, *args, **kwargs)
        if kind is not None:
            return out_call_many(fname, compute, out, inputs, kind=kind, grad=grad,
                                 warn=warn)
        return out_call(fname, compute, out, inputs, grad=grad, dtype=dtype, warn=warn)

    try:
        sig = inspect.signature(fn)
        if "out" not in sig.parameters:
            params = list(sig.parameters.values())
            kw = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
            at = next((i for i, p in enumerate(params) if p.kind == p.VAR_KEYWORD), len(params))
            wrapped.__signature__ = sig.replace(parameters=params[:at] + [kw] + params[at:])
    except (TypeError, ValueError):
        pass
    wrapped._out_composed = True
    return wrapped


def _rows():
    for n in _CAST:
        yield n, {"dtype": "cast"}
    for n in _EXACT:
        yield n, {}
    for n in _NO_GRAD:
        yield n, {"grad": False}
    yield "bernoulli", {"dtype": "copy"}  # (torch draws in out's dtype: any dtype is taken)
    for n, k in _MANY.items():
        yield n, {"kind": k}


def _rule(qual, rule):
    rule = dict(rule)
    if qual in _COMPOSITE:
        rule["grad"] = False
    if qual in _NO_WARN:
        rule["warn"] = False
    if qual in _CAT_FAMILY:
        rule["pre"] = _cat_cast_check
        rule["dtype"] = "cast"
    if qual in _IN_OUT_DTYPE:
        rule["in_out_dtype"] = True
    return rule


def _cat_cast_check(fname, inputs, out):
    dt = None
    for t in inputs:
        dt = t.dtype if dt is None else _C._promote_types(dt, t.dtype)
    if dt is not None and isinstance(out, _C.Tensor) and not _C._can_cast(dt, out.dtype):
        from ._out import scalar_type_name
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{scalar_type_name(out.dtype)}")


def install(namespaces):
    """Wrap each row's function in its namespace ({"": ferrograd, "special.": ..., "linalg.": ...})."""
    for qual, rule in _rows():
        tag, _, name = qual.rpartition(".")
        mod = namespaces.get(tag + "." if tag else "")
        fn = getattr(mod, name, None) if mod is not None else None
        if fn is None or not callable(fn):
            continue
        fname = ("linalg_" if tag == "linalg" else "special_" if tag == "special" else "") + name
        setattr(mod, name, _wrap(fn, fname, **_rule(qual, rule)))
