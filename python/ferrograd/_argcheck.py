"""torch's argument parsing for functions written in Python (Note [argument parsing] in
src/python/args.rs): each checked parameter is converted as torch's C++ parser converts an argument
of its declared type, or refused with torch's TypeError, before the function body runs. Without it a
function written in Python fails later and differently (AttributeError: 'int' object has no
attribute 'dim', a bool taken as an int, ...)."""

import functools
import inspect

from . import _C

_parse_arg = _C._parse_arg


def parse_args(**kinds):
    """Check and convert the named parameters: kinds are torch's type names, "Tensor", "int",
    "int[]", "int[2]", "float", "Number", "bool", "str", "dtype", with a trailing "?" where None
    is allowed. The value the function sees is the converted one (ints, tuples of ints, floats).
    A keyword-only parameter is checked when given as a keyword (never from a function's *args)."""
    def deco(fn):
        params = inspect.signature(fn).parameters
        names = list(params)
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        checks = sorted((names.index(name), name, kind, params[name].kind in positional)
                        for name, kind in kinds.items())  # in torch's order
        fname = fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            given = args
            args = list(args)
            try:
                for i, name, kind, by_position in checks:
                    if by_position and i < len(args):
                        args[i] = check_arg(kind, args[i], fname, name, i + 1)
                    elif name in kwargs:  # (torch names no position for a keyword)
                        kwargs[name] = check_arg(kind, kwargs[name], fname, name, 0)
                    # missing: the call itself raises Python's TypeError, or the default stands
            except TypeError:
                # an fx Proxy or another tensor-like takes the call (Note [torch_function
                # dispatch] in overrides.py): asked only once an argument failed its check
                from .overrides import dispatch_if_overridden, has_transform_wrapper

                # (a transform's wrapper takes the call as made; an fx Proxy records it as torch passes it)
                passed = (given, kwargs) if has_transform_wrapper(given, kwargs) else _as_torch_passes(fn, given, kwargs)
                result = dispatch_if_overridden(checked, *passed)
                if result is NotImplemented:
                    raise
                return result
            return fn(*args, **kwargs)
        return checked
    return deco


# torch.nn.functional's functions that are C++ builtins: their __torch_function__ sees the call as
# made; the others (Python functions) pass their leading parameters without defaults by position
# and every other parameter by keyword, defaults filled in
_TORCH_BUILTIN_FUNCTIONAL = frozenset("""
adaptive_avg_pool1d avg_pool1d avg_pool2d avg_pool3d bilinear celu_ channel_shuffle conv1d conv2d conv3d
conv_tbc conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity elu_ gelu hardshrink hardtanh_
leaky_relu_ linear logsigmoid one_hot pairwise_distance pdist pixel_shuffle pixel_unshuffle prelu relu_ rrelu_
scaled_dot_product_attention selu_ softplus softshrink threshold_
""".split())


def _as_torch_passes(fn, args, kwargs):
    """(args, kwargs) of a call as torch hands them to `__torch_function__`."""
    if not fn.__module__.endswith("nn.functional") or fn.__name__ in _TORCH_BUILTIN_FUNCTIONAL:
        return args, kwargs
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    pos, kw = [], {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            return args, kwargs
        if not kw and p.default is p.empty and p.kind != p.KEYWORD_ONLY:
            pos.append(bound.arguments[name])
        else:
            kw[name] = bound.arguments[name]
    return tuple(pos), kw


def check_arg(kind, value, fname, name, pos):
    """One argument checked and converted (also used in a function's body, where torch checks late)."""
    if kind[0] == "T" and (isinstance(value, _C.Tensor) or (value is None and kind == "Tensor?")):
        return value  # the common case, without a call into the engine
    return _parse_arg(kind, value, fname, name, pos)


def tensor_args(*names):
    """parse_args for Tensor parameters only: tensor_args("input", "bias?")."""
    return parse_args(**{n.rstrip("?"): "Tensor?" if n.endswith("?") else "Tensor" for n in names})


# torch's name for the type of an argument in its messages (the C type's tp_name: 'int', 'Tensor',
# 'torch.dtype', 'numpy.int64'); ferrograd's own types are named as torch's
_TORCH_TYPES = {"dtype", "device", "memory_format", "layout", "Size", "Generator"}


def torch_type_name(value):
    t = type(value)
    if t.__name__ in _TORCH_TYPES and t.__module__.startswith(("ferrograd", "torch")):
        return f"torch.{t.__name__}"
    return f"numpy.{t.__name__}" if t.__module__ == "numpy" else t.__name__


def invalid_combination(fname, args, kwargs, signatures):
    """torch's TypeError for a call that fits none of a function's overloads (format_invalid_args):
    the types of the arguments given, then the overloads."""
    got = [torch_type_name(a) + ", " for a in args]
    got += [f"{k}={torch_type_name(v)}, " for k, v in sorted(kwargs.items())]
    desc = "".join(got)
    if args:  # (torch leaves the last ", " after keywords alone)
        desc = desc[:-2]
    lines = "".join(f" * ({s})\n" for s in signatures)
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({desc}), "
                     f"but expected one of:\n{lines}")


def _arg_counts(signature):
    """The fewest and the most arguments an overload takes (its parameters without and with defaults)."""
    params = [p for p in signature.split(", ") if p != "*"]
    return sum(" = " not in p for p in params), len(params)


def overload_error(e, fname, args, kwargs, signatures):
    """Note [overloads]: for a function torch declares with several overloads (rand with and without
    a generator; randint_like's (input, high) and (input, low, high)), torch's parser reports a call
    that fits none of them as "received an invalid combination of arguments", not as the error of
    one argument; only when exactly one overload takes that many arguments does its own error stand
    (PythonArgParser::print_error). Given the TypeError `e` of one argument (from parse_args, or
    from the engine's parser for a function of _C), this is the error torch raises. The errors torch
    raises after it has chosen an overload (a size element that is no int: "failed to unpack")
    stand. `signatures` are torch's, as its message prints them, without the parentheses."""
    n = len(args) + len(kwargs)
    if sum(lo <= n <= hi for lo, hi in map(_arg_counts, signatures)) == 1 or "failed to unpack" in str(e):
        return e
    return invalid_combination(fname, args, kwargs, signatures)


def overloads(*signatures):
    """Argument errors of the decorated function (TypeErrors) as torch's for these overloads
    (overload_error)."""
    def deco(fn):
        fname = fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except TypeError as e:
                raise overload_error(e, fname, args, kwargs, signatures) from None
        return checked
    return deco
