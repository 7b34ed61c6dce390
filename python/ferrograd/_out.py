"""torch's `out=` semantics, in one place, for every function that takes an `out` argument.

A function computes its result as usual, then hands it here with `out`:

    return out_call("pow", lambda: input.pow(exponent), out, (input,), dtype="cast")

and gets torch's behaviour: the autograd check (with grad mode on, an input or `out` that requires
grad is refused, before anything is computed), the dtype check (castable or exact, with the message
of the torch kernel the function stands for), the resize of `out` to the result's shape (with torch's
UserWarning when `out` had elements), the copy into `out`'s own storage, and `out` itself returned
(a tuple of outs as the function's named tuple). Never silently ignore an `out=`: a function that
cannot honour it yet calls `unsupported(fname, out)`.
"""
import warnings

from . import _C

# torch's names for a dtype: ScalarType ("Float") and C++ type ("float") as its messages print them
_SCALAR = {"float64": "Double", "float32": "Float", "float16": "Half", "bfloat16": "BFloat16",
           "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
           "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
_CTYPE = {"float64": "double", "float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
          "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
          "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
          "complex128": "c10::complex<double>"}

# dtype rules: "cast" (TensorIterator ops: the result must be castable to out's dtype), "cancast"
# (max/min full reductions: the same rule, with the reduction's TORCH_CHECK message), "exact"
# (linalg and most composite ops: out must have the result's dtype), or a format string for an
# exact check with an op's own message ({r}/{o}: ScalarType names, {rc}/{oc}: C++ names)
_EXACT = "Expected out tensor to have dtype {rc}, but got {oc} instead"
_CANCAST = ("Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) "
            "to be true, but got false.  (Could this error message be improved?  If so, please report "
            "an enhancement request to PyTorch.)")
_RESIZED = ("An output with one or more elements was resized since it had shape {}, which does not match "
            "the required output shape {}. This behavior is deprecated, and in a future PyTorch release "
            "outputs will not be resized unless they have zero elements. You can explicitly reuse an out "
            "tensor t by resizing it, inplace, to zero elements with t.resize_(0).")


def _no_grad():
    from .autograd.grad_mode import no_grad
    return no_grad()


def _can_cast(a, b):
    return _C._can_cast(a, b)


def _key(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def scalar_type_name(dtype):
    """torch's ScalarType name of a dtype ("Float", "Long"), as its kernels' messages print it."""
    k = _key(dtype)
    return _SCALAR.get(k, k)


def unsupported(fname, out):
    """For a function whose out= is not implemented yet: refuse a given out, never ignore it."""
    if out is not None:
        raise NotImplementedError(f"ferrograd: {fname}(out=...) is not supported yet")


def check_grad(gname, out, inputs):
    """torch's autograd refusal for an out= call (gname is the op torch names, e.g. 'pow',
    'linalg_inv_ex'); only with grad mode on, when an input or an out requires grad."""
    if gname is None or not _C.is_grad_enabled():
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in (*inputs, *outs):
        if isinstance(t, _C.Tensor) and t.requires_grad:
            raise RuntimeError(f"{gname}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")


def _check_out_tensor(fname, out):
    if not isinstance(out, _C.Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")


def _check_dtype(result, out, dtype):
    r, o = _key(result.dtype), _key(out.dtype)
    if r == o or dtype == "copy":  # ("copy": torch's Python wrappers that copy_ into out, casting anything)
        return
    if isinstance(dtype, tuple):  # ("cast", an op's own message)
        if _can_cast(result.dtype, out.dtype):
            return
        dtype = dtype[1]
    elif dtype in ("cast", "cancast"):
        if _can_cast(result.dtype, out.dtype):
            return
        if dtype == "cancast":
            raise RuntimeError(_CANCAST)
        raise RuntimeError(f"result type {_SCALAR.get(r, r)} can't be cast to the desired output type "
                           f"{_SCALAR.get(o, o)}")
    fmt = _EXACT if dtype == "exact" else dtype
    raise RuntimeError(fmt.format(r=_SCALAR.get(r, r), o=_SCALAR.get(o, o), rc=_CTYPE.get(r, r), oc=_CTYPE.get(o, o)))


def store(result, out, *, dtype="exact", warn=True, track=False):
    """Write `result` into `out` (resized to result's shape, with torch's warning when it had
    elements and warn) and return `out`. Without track the copy is made without autograd (the
    autograd check has refused anything that needed it); with track (torch's composite ops, whose
    out= is a tracked copy_) the copy is recorded as torch records it."""
    _check_dtype(result, out, dtype)
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to be on device {result.device}, but got {out.device}")
    shape = tuple(result.shape)
    if tuple(out.shape) != shape:
        if warn and out.numel() != 0:
            warnings.warn(_RESIZED.format(list(out.shape), list(shape)), UserWarning, stacklevel=3)
        if track and out.requires_grad and _C.is_grad_enabled() and out.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        with _no_grad():
            if out.requires_grad and out.is_leaf:  # (grad mode off: torch resizes it all the same)
                out.requires_grad_(False)
                _resize(out, shape)
                out.requires_grad_(True)
            else:
                _resize(out, shape)
    if track:
        out.copy_(result)
    else:
        with _no_grad():
            out.copy_(result)
    return out


def _resize(out, shape):
    """out.resize_(shape); a device tensor's storage, which resize_ cannot grow yet, is replaced by
    a new one of the shape (out stays the same tensor object, as torch's)."""
    if out.device.type != "cpu" and not out._storage_resizable():
        out.data = _C.empty(shape, dtype=out.dtype, device=out.device)
        return
    out.resize_(shape)


def out_call(fname, compute, out, inputs=(), *, grad=None, dtype="exact", warn=True, track=False):
    """`compute()` as the function's result, or, with an out, torch's out= call: grad is the op
    name in torch's autograd refusal (default fname; False for composite ops that record the copy)."""
    if out is None:
        return compute()
    _check_out_tensor(fname, out)
    if grad is not False:
        check_grad(grad or fname, out, inputs)
    if track:
        return store(compute(), out, dtype=dtype, warn=warn, track=True)
    with _no_grad():
        result = compute()
    return store(result, out, dtype=dtype, warn=warn)


def out_call_many(fname, compute, out, inputs=(), *, kind, grad=None, dtypes=None, warn=True):
    """out_call for a function returning several tensors: out is a tuple (or list) of as many
    tensors, each written as store does; the outs are returned as the named tuple `kind`'s
    `<name>_out` twin (as torch returns them)."""
    if out is None:
        return compute()
    if not isinstance(out, (tuple, list)) or not all(isinstance(o, _C.Tensor) for o in out):
        raise TypeError(f"{fname}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    if grad is not False:
        check_grad(grad or fname, out, inputs)
    with _no_grad():
        results = tuple(compute())
    if len(out) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(out)}")  # (torch's parser)
    dtypes = dtypes or ("exact",) * len(results)
    for r, o, d in zip(results, out, dtypes):
        _check_dtype(r, o, d)
    for r, o, d in zip(results, out, dtypes):
        store(r, o, dtype=d, warn=warn)
    return _out_kind(kind)(*out)


def _out_kind(kind):
    """torch's named tuple for an out= call: the function's, named `<name>_out`
    (torch.return_types.max_out, linalg_qr_out), made once and kept in return_types."""
    from collections import namedtuple
    from . import return_types
    name = kind.__name__ + "_out"
    t = getattr(return_types, name, None)
    if t is None:
        t = namedtuple(name, kind._fields)
        t.__module__ = return_types.__name__
        setattr(return_types, name, t)
    return t


def creation_out(fname, args, kwargs, out, fn=None):
    """torch.<fname>(..., out=t) for the creation functions (called by the engine's zeros, ones,
    empty, full, arange, linspace, eye, rand, randn and randint only when an out is given): the
    values made in out's dtype on out's device (a dtype given must be out's), out resized without a
    warning, out's requires_grad set to requires_grad (torch's binding sets it on the result, out)."""
    _check_out_tensor(fname, out)
    check_grad(f"aten::{fname}", out, ())
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    dtype = kwargs.pop("dtype", None)
    requires_grad = bool(kwargs.pop("requires_grad", False))
    if dtype is not None and _key(dtype) != _key(out.dtype):
        raise RuntimeError(f"dtype {_SCALAR.get(_key(dtype))} does not match dtype of out parameter "
                           f"({_SCALAR.get(_key(out.dtype))})")
    kwargs.setdefault("device", out.device)
    result = (fn or getattr(_C, fname))(*args, **kwargs, dtype=out.dtype)
    store(result, out, warn=False)
    if out.requires_grad != requires_grad:  # (torch sets it either way)
        out.requires_grad_(requires_grad)
    return out


def _tensors(values):
    for v in values:
        if isinstance(v, _C.Tensor):
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _tensors(v)


def supports_out(grad=None, dtype="exact", warn=True, track=False, kind=None, dtypes=None):
    """Decorator: gives a function torch's out= semantics (see out_call / out_call_many). The
    function's own body never sees out (it computes its result as without one); its tensor
    arguments are the inputs of the autograd check. kind: the named tuple of a several-result
    function, whose out is then a tuple."""
    import functools
    import inspect

    def deco(fn):
        params = list(inspect.signature(fn).parameters.values())
        names = [p.name for p in params]
        pos = names.index("out") if params[names.index("out")].kind == inspect.Parameter.POSITIONAL_OR_KEYWORD else None

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            out = kwargs.pop("out", None)
            if pos is not None and len(args) > pos:
                out, args = args[pos], args[:pos] + args[pos + 1:]
            if out is None:
                try:
                    return fn(*args, **kwargs)
                except TypeError:
                    # a tensor-like non-tensor among the arguments takes the call (Note [torch_function
                    # dispatch] in overrides.py)
                    from .overrides import dispatch_if_overridden

                    result = dispatch_if_overridden(wrapped, args, kwargs)
                    if result is NotImplemented:
                        raise
                    return result
            fname = fn.__name__
            inputs = tuple(_tensors((*args, *kwargs.values())))
            compute = functools.partial(fn, *args, **kwargs)
            if kind is not None:
                return out_call_many(fname, compute, out, inputs, kind=kind, grad=grad, dtypes=dtypes, warn=warn)
            return out_call(fname, compute, out, inputs, grad=grad, dtype=dtype, warn=warn, track=track)
        return wrapped
    return deco
