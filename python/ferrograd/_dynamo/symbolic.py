"""Symbolic sizes of a dynamic capture (torch's SymInt, reduced to what replay needs).

While a dynamic trace records, the sizes Python reads from a tensor (`x.shape[0]`, `x.size(1)`,
`x.numel()`) are `SymInt`s: real ints (every Python use still works) that also carry an expression
saying where they came from (`size(input 0, dim 0)`, `size(node 3, dim 1)`) and how they were
combined (`+ - * // %`). An op that receives one records the expression, and the replayed graph
recomputes it from the tensors of the new call, so a new batch size needs no new trace.

Note [specialising a symbolic size]
Where Python turns a SymInt into a decision or a plain number (`==`, `<`, `bool`, `int()`, `float`,
`/`, `range(n)`, `str`), the trace would bake that outcome in. So those uses *specialise*: the size
gets a guard equal to its value (an input's size) and that dim is static for this trace. A size of
an intermediate tensor that is specialised makes the whole trace static (its guards are checked
before replay, on the inputs only, and an intermediate's size is not known then). Specialising is
conservative: it may cost a recompile, never a wrong result.
"""

import operator

__all__ = ["SymInt", "sym_expr"]


class SymInt(int):
    """An int that remembers its expression; see the module docstring."""

    def __new__(cls, value, expr, recorder):
        obj = int.__new__(cls, value)
        obj.expr = expr
        obj.recorder = recorder
        return obj

    def _specialise(self):
        self._specialise_value()
        return int.__int__(self)

    def _binary(self, other, op, name, reflected=False):
        if isinstance(other, SymInt) or (type(other) is int):
            a, b = int.__int__(self), int.__int__(other)
            value = op(b, a) if reflected else op(a, b)
            a, b = sym_expr(self), sym_expr(other)
            return SymInt(value, (name, b, a) if reflected else (name, a, b), self.recorder)
        if isinstance(other, bool) or not isinstance(other, int):
            v = self._specialise_value()
            return op(other, v) if reflected else op(v, other)
        return NotImplemented

    def __add__(self, o):
        return self._binary(o, operator.add, "+")

    def __radd__(self, o):
        return self._binary(o, operator.add, "+", True)

    def __sub__(self, o):
        return self._binary(o, operator.sub, "-")

    def __rsub__(self, o):
        return self._binary(o, operator.sub, "-", True)

    def __mul__(self, o):
        return self._binary(o, operator.mul, "*")

    def __rmul__(self, o):
        return self._binary(o, operator.mul, "*", True)

    def __floordiv__(self, o):
        return self._binary(o, operator.floordiv, "//")

    def __rfloordiv__(self, o):
        return self._binary(o, operator.floordiv, "//", True)

    def __mod__(self, o):
        return self._binary(o, operator.mod, "%")

    def __rmod__(self, o):
        return self._binary(o, operator.mod, "%", True)

    def __neg__(self):
        return SymInt(-int.__int__(self), ("-", 0, self.expr), self.recorder)

    def __pos__(self):
        return self

    # uses that decide something: specialise (Note [specialising a symbolic size])
    def __eq__(self, o):
        return self._specialise() == o

    def __ne__(self, o):
        return self._specialise() != o

    def __lt__(self, o):
        return self._specialise() < o

    def __le__(self, o):
        return self._specialise() <= o

    def __gt__(self, o):
        return self._specialise() > o

    def __ge__(self, o):
        return self._specialise() >= o

    def __bool__(self):
        return bool(self._specialise())

    def __int__(self):
        return self._specialise_value()

    def _specialise_value(self):
        if not self.recorder.depth:  # inside a recorded op, a use is the op's own (it reruns at replay)
            self.recorder.specialise(self.expr)
        return int.__int__(self)

    def __index__(self):
        return self._specialise_value()

    def __float__(self):
        return float(self._specialise_value())

    def __truediv__(self, o):
        return self._specialise_value() / o

    def __rtruediv__(self, o):
        return o / self._specialise_value()

    def __pow__(self, o):
        return self._specialise_value() ** o

    def __abs__(self):
        return abs(self._specialise_value())

    def __hash__(self):
        return int.__hash__(self)

    def __repr__(self):
        return repr(self._specialise_value())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._specialise_value(), spec)


def sym_expr(value):
    """The expression of a SymInt, or the plain int itself."""
    return value.expr if isinstance(value, SymInt) else int(value)


def expr_refs(expr, out):
    """Collect the ('size', ref, dim) leaves of an expression into `out`."""
    if isinstance(expr, tuple):
        if expr[0] == "size":
            out.append(expr)
        else:
            expr_refs(expr[1], out)
            expr_refs(expr[2], out)
    return out
