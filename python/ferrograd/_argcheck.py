"""torch's TypeError for an argument that must be a Tensor and is not. Functions written in Python
would otherwise fail later, with an AttributeError ('int' object has no attribute 'dim')."""

import functools
import inspect

from . import _C


def tensor_args(*names):
    """Check the named parameters before the call (a trailing '?' also allows None), as torch's
    argument parser does for functions written in C++."""
    def deco(fn):
        params = list(inspect.signature(fn).parameters)
        checks = [(params.index(n.rstrip("?")), n.rstrip("?"), n.endswith("?")) for n in names]
        fname = fn.__name__

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            for i, name, optional in checks:
                if i < len(args):
                    v = args[i]
                elif name in kwargs:
                    v = kwargs[name]
                else:
                    continue  # missing: the call itself raises Python's TypeError
                if not isinstance(v, _C.Tensor) and not (optional and v is None):
                    raise TypeError(f"{fname}(): argument '{name}' (position {i + 1}) must be Tensor, not "
                                    f"{type(v).__name__}")
            return fn(*args, **kwargs)
        return checked
    return deco
