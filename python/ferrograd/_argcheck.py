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
    is allowed. The value the function sees is the converted one (ints, tuples of ints, floats)."""
    def deco(fn):
        params = list(inspect.signature(fn).parameters)
        checks = sorted((params.index(name), name, kind) for name, kind in kinds.items())  # in torch's order
        fname = fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            args = list(args)
            for i, name, kind in checks:
                if i < len(args):
                    args[i] = check_arg(kind, args[i], fname, name, i + 1)
                elif name in kwargs:  # (torch names no position for a keyword)
                    kwargs[name] = check_arg(kind, kwargs[name], fname, name, 0)
                # missing: the call itself raises Python's TypeError, or the default stands
            return fn(*args, **kwargs)
        return checked
    return deco


def check_arg(kind, value, fname, name, pos):
    """One argument checked and converted (also used in a function's body, where torch checks late)."""
    if kind[0] == "T" and (isinstance(value, _C.Tensor) or (value is None and kind == "Tensor?")):
        return value  # the common case, without a call into the engine
    return _parse_arg(kind, value, fname, name, pos)


def tensor_args(*names):
    """parse_args for Tensor parameters only: tensor_args("input", "bias?")."""
    return parse_args(**{n.rstrip("?"): "Tensor?" if n.endswith("?") else "Tensor" for n in names})
