"""torch's function forms: `torch.exp(x)`, `torch.arcsin(x)`, `torch.special.expm1(x)`, `torch.exp_(x)`,
`torch.sum(x, 1)`, each with torch's `out=`.

The op table's (src/ops/table.rs, read through `_C.op_table()`) are generated here, one per torch
name, alias and `torch.special` name, and its in-place functions (`torch.exp_`); each forwards to
the Tensor method of the op, which calls the engine, and takes `out=` with torch's semantics
(`_out.out_call`) where the row declares it. The other Tensor methods' function forms (`_OTHERS`)
forward the same way: `out=` is honoured where torch's function has it, else refused as torch
refuses an unexpected keyword (never silently dropped).
"""

import numbers

from . import _C
from ._argcheck import tensor_args
from .overrides import _overrides, dispatch_if_overridden, handle_torch_function
from ._out import out_call, out_call_many, supports_out
from . import return_types as _return_types

OP_TABLE = _C.op_table()

# the function forms of the Tensor methods outside the op table: name -> torch's out= dtype rule,
# or None when torch's function takes no out=
_OTHERS = {n: None for n in """
reshape flatten squeeze unsqueeze transpose swapaxes permute movedim broadcast_to clone detach split chunk unbind
flip narrow select as_strided diagonal masked_fill t
""".split()}
_OTHERS.update({n: "cast" for n in "clamp clip clamp_min clamp_max".split()})
_OTHERS.update({n: "exact" for n in """
norm matmul mm bmm mv dot outer softmax log_softmax gather index_select masked_select nonzero mvlgamma
""".split()})

# torch's function forms that take a Python number as `input` (a wrapped number, promoted as one):
# always, or (an overload (Number self, Tensor other)) when `other` is a tensor
_NUMBER_INPUT = set("add sub subtract mul multiply div divide true_divide floor_divide".split())
_NUMBER_SELF = set("remainder bitwise_and bitwise_or bitwise_xor".split())
# function forms of methods that take their size varargs (x.reshape(2, 3)): the function takes one
# tuple of ints (torch.reshape(x, (2, 3)); a lone int is a TypeError)
_INT_LIST = {"reshape": "shape", "permute": "dims", "flip": "dims", "broadcast_to": "size"}
# torch's functions written in Python, which reach for an attribute of `input` first (a non-tensor:
# their AttributeError)
_ATTRIBUTE_FIRST = {"norm": "layout"}
# reductions whose full form (no dim) has no out= overload in torch
_OUT_NEEDS_DIM = {"sum", "prod"}
# in-place aliases torch has as a method only (x.absolute_(), no torch.absolute_)
_NO_INPLACE_FUNCTION = {"absolute_"}


def _number_input(name, input, args, kwargs):
    """`input` as a wrapped number. An int too big for one is reported after the other arguments'
    types, as torch's parser checks every type before converting any value."""
    try:
        return _C._wrapped_number(input, name)
    except OverflowError:
        try:
            getattr(_C._wrapped_number(0, name), name)(*args, **kwargs)
        except TypeError:
            raise
        except Exception:  # noqa: BLE001 - only a type error of the other arguments comes first
            pass
        raise


def _no_out(fname):
    return TypeError(f"{fname}() got an unexpected keyword argument 'out'")


def _tensors(values):
    return tuple(v for v in values if isinstance(v, _C.Tensor))


# torch's out= dtype rules (`_out_rule`): "cast" (the result, computed in its own dtype, must be
# castable to out's dtype), "same" (out must have the result's dtype),
# "input" (out must have the input's dtype: amax/amin), "exact" (argmax/argmin: int64), "bool"
# (all/any: a bool out), "dtype" (sum/prod/cumsum: computed in out's dtype, as dtype=)
_SAME = "Found dtype {o} but expected {r}"
_INPUT = "Expected the dtype for input and out to match, but got {r} for input's dtype and {o} for out's dtype."
_BOOL = "{name} only supports bool tensor for result, got: {o}"
_REDUCTION_OUT = {"amax": "input", "amin": "input", "argmax": "exact", "argmin": "exact", "all": "bool",
                  "any": "bool", "sum": "dtype", "prod": "dtype", "cumsum": "dtype"}


def _out_rule(row):
    """The out= dtype rule of a table row (None: torch's function takes no out=)."""
    if not row["out"]:
        return None
    fam, name = row["family"], row["name"]
    if fam == "num_unary" or name in ("neg", "sign", "sgn", "bitwise_not"):
        return "same"
    if fam == "reduction":
        return _REDUCTION_OUT.get(name, "cast")
    return "cast"


def _with_out(fname, call, input, args, kwargs, out, rule, grad):
    """call(input, *args, **kwargs) written into out by torch's rule for the op."""
    inputs = _tensors((input, *args, *kwargs.values()))
    if rule == "dtype" and isinstance(out, _C.Tensor):
        kwargs = {**kwargs, "dtype": out.dtype}
    dtype = {"dtype": "cast", "same": _SAME, "input": _INPUT, "exact": "exact",
             "bool": _BOOL.replace("{name}", fname)}.get(rule, rule)
    return out_call(fname, lambda: call(input, *args, **kwargs), out, inputs, grad=grad, dtype=dtype)


def _forward(name, method=None, out_rule=None, grad=None, fname=None):
    """torch.<fname>(input, ...) -> input.<method>(...); `out_rule`: the out= dtype rule
    (`_out_rule`), None when torch's function takes no out=; `grad`: the op named in torch's
    refusal of out= with autograd (False: the op is not differentiable, nothing is refused)."""
    method = method or name
    fname = fname or name
    number_input = name in _NUMBER_INPUT
    number_self = name in _NUMBER_SELF
    int_list = _INT_LIST.get(name)

    def call(input, *args, **kwargs):
        return getattr(input, method)(*args, **kwargs)

    def fn(input, *args, **kwargs):
        if not isinstance(input, _C.Tensor):
            # an fx Proxy or another tensor-like takes the call (Note [torch_function dispatch])
            if _overrides(input):
                return handle_torch_function(fn, (input, args, kwargs), input, *args, **kwargs)
            if name in _ATTRIBUTE_FIRST:
                getattr(input, _ATTRIBUTE_FIRST[name])
            other = args[0] if args else kwargs.get("other")
            if number_input or (number_self and isinstance(other, _C.Tensor)):
                input = _number_input(name, input, args, kwargs)
            else:
                _C._parse_arg("Tensor", input, name, "input", 1)
        if int_list is not None and len(args) == 1:
            args = (_C._parse_arg("int[]", args[0], name, int_list, 2),)
        if "out" not in kwargs:
            try:
                return call(input, *args, **kwargs)
            except TypeError:
                # a tensor-like non-tensor after the first argument (torch.add(x, batched))
                result = dispatch_if_overridden(fn, (input, *args), kwargs)
                if result is NotImplemented:
                    raise
                return result
        out = kwargs.pop("out")
        if out_rule is None or (name in _OUT_NEEDS_DIM and not args and "dim" not in kwargs):
            raise _no_out(fname)
        return _with_out(fname, call, input, args, kwargs, out, out_rule, grad if grad is not None else name)

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"torch.{fname}: see Tensor.{method}."
    return fn


def _inplace_form(name):
    """torch.<name>_(input): the in-place method input.<name>_()."""
    def fn(input, *args, **kwargs):
        _C._parse_arg("Tensor", input, name, "input", 1)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input): the in-place method input.{name}()."
    return fn


def _table_forms():
    """name -> function for the op table's rows: torch.<name>, its aliases, torch.<name>_."""
    forms = {}
    for row in OP_TABLE:
        if row["binding"] not in ("method", "custom"):
            continue
        grad = row["name"] if row["grad_fn"] else False
        for n in (row["name"], *row["aliases"]):
            forms[n] = _forward(n, out_rule=_out_rule(row), grad=grad)
            if row["inplace"] and row["inplace_function"] and n + "_" not in _NO_INPLACE_FUNCTION:
                forms[n + "_"] = _inplace_form(n + "_")
    return forms


def _alias_inplace_methods():
    """An alias's in-place method is the op's own (x.subtract_ is x.sub_: native, recording
    SubBackward0), for the rows whose in-place method is bound by hand: name -> method, installed
    by the Tensor assembly (_tensor_methods) as TENSOR_ATTRIBUTES."""
    methods = {}
    for row in OP_TABLE:
        if row["inplace"] and row["inplace_native"]:
            for a in row["aliases"]:
                if not hasattr(_C.Tensor, a + "_") or not _is_native(getattr(_C.Tensor, a + "_")):
                    methods[a + "_"] = getattr(_C.Tensor, row["inplace"])
    return methods


def _is_native(f):
    return type(f).__name__ in ("method_descriptor", "builtin_function_or_method")


def special_forms():
    """name -> function for torch.special: the table rows' `special` names (special.expm1 is
    torch's `special_expm1`, calling the row's method)."""
    forms = {}
    for row in OP_TABLE:
        method = "_" + row["name"].lstrip("_") if row["binding"] == "private" else row["name"]
        for n in row["special"]:
            forms[n] = _forward(row["name"].lstrip("_"), method=method, out_rule=_out_rule(row),
                                grad=f"special_{n}" if row["grad_fn"] else False, fname=f"special_{n}")
    return forms


_TABLE_FORMS = _table_forms()
TENSOR_METHODS = []
TENSOR_ATTRIBUTES = _alias_inplace_methods()
globals().update(_TABLE_FORMS)
for _n, _rule in _OTHERS.items():
    globals()[_n] = _forward(_n, out_rule=_rule)

__all__ = list(_TABLE_FORMS) + list(_OTHERS) + ["pow", "max", "min", "rsub", "is_floating_point"]


def split(tensor, split_size_or_sections, dim=0):
    """torch.split, as torch's (written in Python): `tensor.split(split_size_or_sections, dim)`."""
    return tensor.split(split_size_or_sections, dim)


def _is_number(v):
    return isinstance(v, numbers.Number)


@supports_out(grad="pow", dtype="cast")
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


_NOT_GIVEN = object()


@tensor_args("input")
def max(input, dim=_NOT_GIVEN, keepdim=False, *, out=None):
    if out is not None:
        return _minmax_out("max", max, input, dim, keepdim, out)
    if isinstance(dim, _C.Tensor):
        return input.maximum(dim)
    return input.max(dim, keepdim) if dim is not _NOT_GIVEN else input.max()  # dim=None: torch's TypeError


@tensor_args("input")
def min(input, dim=_NOT_GIVEN, keepdim=False, *, out=None):
    if out is not None:
        return _minmax_out("min", min, input, dim, keepdim, out)
    if isinstance(dim, _C.Tensor):
        return input.minimum(dim)
    return input.min(dim, keepdim) if dim is not _NOT_GIVEN else input.min()


def _minmax_out(name, fn, input, dim, keepdim, out):
    """max/min with out=: a tensor out for the full reduction and the elementwise overload, a
    (values, indices) tuple for a reduction over dim (torch's overloads)."""
    inputs = (input, dim) if isinstance(dim, _C.Tensor) else (input,)
    if dim is _NOT_GIVEN or isinstance(dim, _C.Tensor):
        if not isinstance(out, _C.Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if dim is _NOT_GIVEN:
            return out_call(name, lambda: fn(input), out, inputs, dtype="cancast")
        return out_call(name, lambda: fn(input, dim), out, inputs, grad=name + "imum", dtype="cast")
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    kind = getattr(_return_types, name)
    return out_call_many(name, lambda: fn(input, dim, keepdim), out, inputs, kind=kind)


def rsub(input, other, alpha=1):
    return input.rsub(other) if alpha == 1 else (input * -alpha).add(other)


def is_floating_point(input):
    return input.is_floating_point()
