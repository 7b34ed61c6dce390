"""torch's sym_* functions on plain Python numbers (torch.sym_max, sym_int, ...). In torch they also
accept the symbolic integers of traced shapes; ferrograd's shapes are always concrete ints, so these are
the arithmetic torch gives for concrete values (a float in, a float out)."""

import builtins
import math


def sym_int(a):
    """int(a), truncating toward zero."""
    return builtins.int(math.trunc(a)) if isinstance(a, builtins.float) else builtins.int(a)


def sym_float(a):
    return builtins.float(a)


def sym_not(a):
    return not a


def sym_max(a, b):
    """max(a, b); a float when either is a float."""
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, builtins.float) or isinstance(b, builtins.float) else out


def sym_min(a, b):
    """min(a, b); a float when either is a float."""
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, builtins.float) or isinstance(b, builtins.float) else out


def sym_ite(b, t, f):
    """t if b else f (both branches already evaluated)."""
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(args):
    """The sum of an iterable of numbers (0 for an empty one)."""
    return builtins.sum(args)


__all__ = ["sym_int", "sym_float", "sym_not", "sym_max", "sym_min", "sym_ite", "sym_sqrt", "sym_sum"]
