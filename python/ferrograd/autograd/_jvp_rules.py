"""Forward-mode AD: the JVP rule of each op, and the dispatcher that applies them to dual tensors.

`apply(func, args, kwargs)` is what a DualTensor's `__torch_function__` runs (Note [dual tensors are
wrappers] in forward_ad.py): it takes the duals of the innermost live level among the arguments,
runs the op on their primals, and computes the output's tangent by the op's rule. A rule is called as
`rule(ctx, *args, **kwargs)` with the op's own arguments, where each dual of the level is a `Pair`
(`.p` primal, `.t` tangent) and everything else is as the caller gave it; `ctx.out` is the primal
result and `ctx.same(...)` calls the op again (on tangents, for the linear ops). Rules are written with
ferrograd's public differentiable ops only, so reverse mode records them, and an outer transform's
wrappers (in `.p`/`.t`) handle them in turn.

Kinds of rule (`KIND`, what the coverage test reports):
- "explicit": a formula written here from the op's math;
- "linear": the op is linear in its differentiable inputs, its tangent is the same op on the tangents
  (views, shape ops, indexing, sums; the tangent of a view is the same view of the tangent, as torch);
- "zero": piecewise constant (floor, round, sign): a zero tangent;
- "fallback": no rule; the JVP of that one call is computed by two reverse passes through the op's
  backward (the "double-vjp" identity: for g(u) = J^T u, J v = d/du <g(u), v>), counted in
  `FALLBACK_USED` so the coverage test names these ops.
Outputs that are not floating point (comparisons, argmax, sizes) never carry a tangent.
"""

import collections
import math
import operator

import ferrograd as fg

from . import forward_ad as _fad
from .forward_ad import DualTensor, _live, _strip_dead, method_name
from .function import Function as _Function, FunctionCtx as _FunctionCtx, _apply_with

_Tensor = fg.Tensor

RULES = {}
KIND = {}
# ops that torch refuses under forward AD (NotImplementedError, naming its internal op): refused here too
REFUSED = {"ctc_loss": "_ctc_loss", "cdist": "_cdist_forward", "pdist": "_pdist_forward", "zeta": "special_zeta",
           "special_zeta": "special_zeta", "igamma": "igamma", "igammac": "igammac",
           "special_gammainc": "igamma", "special_gammaincc": "igammac", "embedding_bag": "_embedding_bag",
           "multilabel_margin_loss": "multilabel_margin_loss_forward", "unique": "_unique2",
           "segment_reduce": "segment_reduce"}
FALLBACK_USED = collections.Counter()


class Pair:
    """A dual argument as a rule sees it: `p` primal, `t` tangent."""

    __slots__ = ("p", "t", "dual")

    def __init__(self, dual):
        self.p = dual._primal
        self.t = dual._tangent
        self.dual = dual


class _Ctx:
    __slots__ = ("func", "name", "out")

    def __init__(self, func, name, out):
        self.func = func
        self.name = name
        self.out = out

    def same(self, *args, **kwargs):
        return _call(self.func, self.name, args, kwargs)


def P(a):
    """The primal of a rule argument."""
    return a.p if isinstance(a, Pair) else a


def T(a):
    """The tangent of a rule argument (None when it has none)."""
    return a.t if isinstance(a, Pair) else None


def _is_wrapper(v):
    return isinstance(v, _fad.TransformWrapper)


def _floating(v):
    return (isinstance(v, _Tensor) or _is_wrapper(v)) and v.dtype.is_floating_point


# ---------------------------------------------------------------------------------------------------
# dispatch

def _map(fn, value):
    t = type(value)
    if t is list:
        return [_map(fn, v) for v in value]
    if t is tuple:
        return tuple(_map(fn, v) for v in value)
    if t is dict:
        return {k: _map(fn, v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # (values, indices) results
        return t(*(_map(fn, v) for v in value))
    return fn(value)


def _find_level(value, best):
    t = type(value)
    if t is DualTensor:
        lv = value._level
        if lv in _live and (best is None or lv > best):
            return lv
        return best
    if t is list or t is tuple:
        for v in value:
            best = _find_level(v, best)
    elif t is dict:
        for v in value.values():
            best = _find_level(v, best)
    return best


def _call(func, name, args, kwargs):
    """Run op `func` (a Tensor method when `name` is one) on the given arguments."""
    if name is not None:
        op = _OPERATORS.get(name)
        if op is not None:  # Python's operator protocol, so that the other operand's reflected form gets its turn
            return op(*args)
        return getattr(args[0], name)(*args[1:], **kwargs)
    return func(*args, **kwargs)


def _operator_table():
    table = {}
    for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"):
        fn = getattr(operator, n + "_" if n in ("and", "or") else n)
        table[f"__{n}__"] = fn
        table[f"__r{n}__"] = (lambda fn: lambda a, b: fn(b, a))(fn)
        table[f"__i{n}__"] = getattr(operator, f"i{n}")
    for n in ("eq", "ne", "lt", "le", "gt", "ge", "getitem", "setitem", "neg", "pos", "abs", "invert"):
        table[f"__{n}__"] = getattr(operator, n)
    return table


_OPERATORS = _operator_table()


_REFLECTED = {"__radd__": "add", "__rsub__": "sub", "__rmul__": "mul", "__rtruediv__": "div",
              "__rfloordiv__": "floor_divide", "__rmod__": "remainder", "__rpow__": "pow", "__rmatmul__": "matmul",
              "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor"}
_DUNDER = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__floordiv__": "floor_divide",
           "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul", "__neg__": "neg", "__pos__": "positive",
           "__abs__": "abs", "__getitem__": "getitem", "__and__": "bitwise_and", "__or__": "bitwise_or",
           "__xor__": "bitwise_xor", "__invert__": "bitwise_not", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt",
           "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__lshift__": "bitwise_left_shift",
           "__rshift__": "bitwise_right_shift"}
_INPLACE_DUNDER = {"__iadd__": "add", "__isub__": "sub", "__imul__": "mul", "__itruediv__": "div",
                   "__ifloordiv__": "floor_divide", "__imod__": "remainder", "__ipow__": "pow", "__iand__": "bitwise_and",
                   "__ior__": "bitwise_or", "__ixor__": "bitwise_xor", "__ilshift__": "bitwise_left_shift",
                   "__irshift__": "bitwise_right_shift", "__setitem__": "setitem_"}
# torch functions whose name differs from the rule's
_ALIASES = {"absolute": "abs", "arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh",
            "arcsinh": "asinh", "arctanh": "atanh", "arctan2": "atan2", "negative": "neg", "subtract": "sub",
            "multiply": "mul", "divide": "div", "true_divide": "div", "clip": "clamp", "fix": "trunc",
            "swapaxes": "transpose", "swapdims": "transpose", "moveaxis": "movedim", "concat": "cat",
            "concatenate": "cat", "greater": "gt", "less": "lt", "greater_equal": "ge", "less_equal": "le",
            "not_equal": "ne", "special_expit": "sigmoid", "expit": "sigmoid", "ger": "outer", "det": "det",
            "matrix_power": "matrix_power"}


def rule_name(func):
    """The rule key of `func`: its Tensor method/operator name or its function name, aliases resolved."""
    name = method_name(func) or getattr(func, "__name__", None)
    return _ALIASES.get(name, name)


def apply(func, args, kwargs):
    level = _find_level(args, _find_level(kwargs, None))
    mname = method_name(func)
    if level is None:  # only duals of ended levels: they stand for their primals
        args, kwargs = _map(_strip_dead, args), _map(_strip_dead, kwargs)
        return _call(func, mname, args, kwargs)

    def unwrap(v):
        if type(v) is DualTensor:
            if v._level == level:
                return Pair(v)
            return _strip_dead(v)
        return v

    pargs, pkw = _map(unwrap, args), _map(unwrap, kwargs)
    owner = getattr(func, "__self__", None)
    if isinstance(owner, type) and issubclass(owner, _Function):
        return _custom_function(owner, pargs, pkw, level)
    name = mname or getattr(func, "__name__", "")
    if name in _SPECIAL:
        return _SPECIAL[name](func, mname, pargs, pkw, level)
    base = None
    if name in _INPLACE_DUNDER:
        base = _INPLACE_DUNDER[name]
    elif mname is not None and name.endswith("_") and not name.endswith("__") and name[:-1] in _KNOWN_BASES:
        base = name[:-1]
    if base is not None:
        return _apply_inplace(func, mname, base, pargs, pkw, level)
    if name in REFUSED:
        raise NotImplementedError(f"Trying to use forward AD with {REFUSED[name]} that does not support it because it "
                                  "has not been implemented yet (as in torch).")
    prim_args, prim_kw = _map(P, pargs), _map(P, pkw)
    out = _call(func, mname, prim_args, prim_kw)
    if not _has_float(out):
        return out
    if name in _REFLECTED:
        key = _REFLECTED[name]
        pargs = (pargs[1], pargs[0]) + tuple(pargs[2:])
        ctx = _Ctx(getattr(fg, key), None, out)  # (rules that call the op again call it unreflected)
    else:
        key = _DUNDER.get(name) or _ALIASES.get(name, name)
        ctx = _Ctx(func, mname, out)
    rule = RULES.get(key)
    if rule is None:
        return _fallback(func, mname, key, pargs, pkw, level)
    try:
        tangent = rule(ctx, *pargs, **pkw)
    except _UseFallback:
        return _fallback(func, mname, key, pargs, pkw, level)
    return _wrap(out, tangent, level)


def _has_float(out):
    if isinstance(out, (tuple, list)):
        return any(_has_float(o) for o in out)
    return _floating(out)


def _fit(t, out):
    """A rule's tangent made to match the output it belongs to (shape by broadcasting, dtype)."""
    if t is None or not _floating(out):
        return None
    if tuple(t.shape) != tuple(out.shape):
        t = t.expand(out.shape).contiguous()
    if t.dtype != out.dtype:
        t = t.to(out.dtype)
    return t


def _wrap(out, tangent, level):
    if isinstance(out, (tuple, list)):
        tans = tangent if isinstance(tangent, (tuple, list)) else (None,) * len(out)
        items = [_wrap(o, t, level) for o, t in zip(out, tans)]
        if type(out) is list:
            return items
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    t = _fit(tangent, out)
    return out if t is None else DualTensor(out, t, level)


# ---------------------------------------------------------------------------------------------------
# in-place ops and the calls handled whole

def _apply_inplace(func, mname, base, pargs, pkw, level):
    """`self.op_(...)`: the primal updated in place, then the tangent (in place too, so that views of it,
    which are the tangents of the primal's views, see the change)."""
    self = pargs[0]
    if not isinstance(self, Pair):  # the dual is an argument of an in-place op on a plain tensor
        return _call(func, mname, _map(P, pargs), _map(P, pkw))
    old = self.p.clone() if base not in _NO_OLD else self.p
    result = _call(func, mname, _map(P, pargs), _map(P, pkw))
    before = Pair.__new__(Pair)
    before.p, before.t, before.dual = old, self.t, self.dual
    ctx = _Ctx(getattr(_Tensor, base, None), base if hasattr(_Tensor, base) else None, self.p)
    rule = _INPLACE_RULES.get(base) or RULES.get(_DUNDER.get(base, base))
    if rule is None:
        fb = _fallback(ctx.func, ctx.name, base, (before,) + tuple(pargs[1:]), pkw, level)
        tangent = fb._tangent if isinstance(fb, DualTensor) else None
    else:
        tangent = rule(ctx, before, *pargs[1:], **pkw)
    if tangent is None:
        tangent = fg.zeros_like(self.p)
    tangent = _fit(tangent, self.p)
    dual = self.dual
    if dual._tangent is not None and tuple(dual._tangent.shape) == tuple(tangent.shape):
        dual._tangent.copy_(tangent)
    else:
        dual._tangent = tangent
    return dual if result is self.p or not isinstance(result, (_Tensor, DualTensor)) else _wrap(result, dual._tangent, level)


_NO_OLD = {"setitem_", "copy", "zero", "fill", "uniform", "normal", "bernoulli", "random", "exponential",
           "geometric", "cauchy", "log_normal"}


def _inplace_setitem(ctx, self, key, value):
    t = self.t.clone() if self.t is not None else fg.zeros_like(self.p)
    tv = T(value)
    if tv is None:
        t[_map(P, key)] = 0.0
    else:
        t[_map(P, key)] = tv
    return t


def _inplace_copy(ctx, self, src, non_blocking=False):
    ts = T(src)
    return fg.zeros_like(self.p) if ts is None else ts.expand(self.p.shape)


def _inplace_zero(ctx, self, *args, **kwargs):
    return fg.zeros_like(self.p)


_INPLACE_RULES = {"setitem_": _inplace_setitem, "copy": _inplace_copy, "zero": _inplace_zero, "fill": _inplace_zero,
                  "uniform": _inplace_zero, "normal": _inplace_zero, "bernoulli": _inplace_zero,
                  "random": _inplace_zero, "exponential": _inplace_zero, "geometric": _inplace_zero,
                  "cauchy": _inplace_zero, "log_normal": _inplace_zero}


def _special_requires_grad_(func, mname, pargs, pkw, level):
    _call(func, mname, _map(P, pargs), _map(P, pkw))
    return pargs[0].dual if isinstance(pargs[0], Pair) else pargs[0]


def _special_inplace_view(func, mname, pargs, pkw, level):
    """t_, transpose_, squeeze_, unsqueeze_: the same change of view on the primal and the tangent."""
    self = pargs[0]
    _call(func, mname, _map(P, pargs), _map(P, pkw))
    if isinstance(self, Pair) and self.t is not None:
        _call(func, mname, (self.t,) + tuple(_map(P, pargs[1:])), _map(P, pkw))
        return self.dual
    return pargs[0]


def _special_backward(func, mname, pargs, pkw, level):
    return _call(func, mname, _map(P, pargs), _map(P, pkw))


_SPECIAL = {"requires_grad_": _special_requires_grad_, "retain_grad": _special_backward,
            "backward": _special_backward, "register_hook": _special_backward,
            "t_": _special_inplace_view, "transpose_": _special_inplace_view, "squeeze_": _special_inplace_view,
            "unsqueeze_": _special_inplace_view, "swapaxes_": _special_inplace_view,
            "swapdims_": _special_inplace_view}


# ---------------------------------------------------------------------------------------------------
# custom autograd.Function: its own `jvp(ctx, *tangents)`

def _custom_function(cls, pargs, pkw, level):
    """Forward on the primals (recorded for reverse mode as usual), then `cls.jvp(ctx, *tangents)` with a
    tangent per argument: the dual's, zeros for a tensor without one, None for a non-tensor (as torch)."""
    ctx = _FunctionCtx()
    out = _apply_with(cls, ctx, _map(P, pargs), _map(P, pkw))
    tangents = []
    for a in pargs:
        if isinstance(a, Pair):
            tangents.append(a.t)
        elif isinstance(a, _Tensor) or _is_wrapper(a):
            tangents.append(fg.zeros_like(a))
        else:
            tangents.append(None)
    fw_saved = ctx.__dict__.get("saved_for_forward")
    if fw_saved is not None:
        ctx.__dict__["_saved_unpacked"] = tuple(fw_saved)
    try:
        result = cls.jvp(ctx, *tangents)
    finally:
        if fw_saved is not None:
            ctx.__dict__.pop("_saved_unpacked", None)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    tans = (result,) if single or not isinstance(result, tuple) else result
    if len(tans) != len(outs):
        raise RuntimeError(f"Function {cls.__name__} returned an invalid number of tangents from jvp (expected "
                           f"{len(outs)} but got {len(tans)})")
    non_diff = ctx.non_differentiable or ()
    wrapped = []
    for i, (o, t) in enumerate(zip(outs, tans)):
        differentiable = _floating(o) and all(o is not n for n in non_diff)
        if t is not None and not differentiable:
            raise RuntimeError(f"Function's jvp returned a gradient at position {i}, but  the corresponding forward "
                               "output is not a differentiable Tensor.You should return None at that position "
                               "instead.")
        wrapped.append(_wrap(o, t, level) if differentiable else o)
    return wrapped[0] if single else tuple(wrapped)


# ---------------------------------------------------------------------------------------------------
# the fallback: JVP of one call by two reverse passes

class _Unsupported(NotImplementedError):
    pass


def _fallback(func, mname, key, pargs, pkw, level):
    FALLBACK_USED[key] += 1
    pairs = []

    def collect(v):
        if isinstance(v, Pair) and all(v is not q for q in pairs):
            pairs.append(v)
        return v

    _map(collect, (pargs, pkw))
    for q in pairs:
        if not isinstance(q.p, _Tensor):
            raise NotImplementedError(f"forward AD: '{key}' has no JVP rule, and its fallback (two reverse passes) "
                                      "needs plain tensors, not the wrappers of another transform")
    from . import grad as _grad
    from .grad_mode import enable_grad

    outer = fg.is_grad_enabled()
    attached = outer and any(q.p.requires_grad for q in pairs)
    aliases = {}
    for q in pairs:
        aliases[id(q)] = q.p.view_as(q.p) if (attached and q.p.requires_grad) else q.p.detach().requires_grad_()
    sub = lambda v: aliases[id(v)] if isinstance(v, Pair) else v  # noqa: E731
    with enable_grad():
        out = _call(func, mname, _map(sub, pargs), _map(sub, pkw))
        flat = []

        def gather(v):
            if isinstance(v, _Tensor) and v.dtype.is_floating_point and v.requires_grad:
                flat.append(v)
            return v

        _map(gather, out if isinstance(out, (tuple, list)) else (out,))
        xs = [aliases[id(q)] for q in pairs]
        tans = {}
        if flat:
            us = [fg.zeros_like(o).requires_grad_() for o in flat]
            gs = _grad(flat, xs, us, create_graph=True, allow_unused=True)
            keep = [(g, q.t) for g, q in zip(gs, pairs) if g is not None and g.requires_grad and q.t is not None]
            if keep:
                want_graph = outer and (attached or any(t.requires_grad for _, t in keep))
                js = _grad([g for g, _ in keep], us, [t for _, t in keep], create_graph=want_graph, allow_unused=True)
                for o, j in zip(flat, js):
                    tans[id(o)] = j if j is not None else fg.zeros_like(o)
            for o in flat:
                tans.setdefault(id(o), fg.zeros_like(o))
    if not attached:
        detached = {}

        def det(v):
            if isinstance(v, _Tensor) and v.requires_grad:
                d = v.detach()
                detached[id(d)] = tans.get(id(v))
                return d
            return v

        out = out if not isinstance(out, (tuple, list)) else out
        out = _map(det, out) if isinstance(out, (tuple, list)) else det(out)
        tans = detached

    def tan_of(v):
        return tans.get(id(v))

    if isinstance(out, (tuple, list)):
        return _wrap(out, [tan_of(o) for o in out], level)
    return _wrap(out, tan_of(out), level)


# ---------------------------------------------------------------------------------------------------
# rule registration

def rule(*names, kind="explicit"):
    def deco(fn):
        for n in names:
            if n in RULES:
                raise RuntimeError(f"JVP rule for {n} declared twice")
            RULES[n] = fn
            KIND[n] = kind
        return fn
    return deco


def _linear_first(ctx, x, *args, **kwargs):
    """An op linear in its first argument (the others are sizes, dims, indices): the same op on the tangent."""
    if not isinstance(x, Pair):
        return None
    return ctx.same(x.t, *_map(P, args), **_map(P, kwargs))


def _tangent_or_zero(v):
    if isinstance(v, Pair):
        return v.t
    if _floating(v):
        return fg.zeros_like(v)
    return v


def _linear_all(ctx, *args, **kwargs):
    """An op linear in all its floating-point tensor arguments (cat, stack, where's branches)."""
    return ctx.same(*_map(_tangent_or_zero, args), **_map(_tangent_or_zero, kwargs))


def _zero(ctx, *args, **kwargs):
    return fg.zeros_like(ctx.out)


# views, shape and indexing: the tangent of a view is the same view of the tangent
for _n in """view view_as reshape reshape_as permute transpose t movedim squeeze unsqueeze flatten unflatten
        expand expand_as broadcast_to contiguous clone narrow select getitem unbind split split_with_sizes chunk
        tensor_split hsplit vsplit dsplit unsafe_split unsafe_chunk diagonal diag diagflat diag_embed tril triu
        flip fliplr flipud roll rot90 repeat tile repeat_interleave index_select gather take take_along_dim
        masked_select unfold ravel narrow_copy sum mean nansum_unused cumsum trace to type_as float double
        half bfloat16 cpu cuda adjoint positive neg real resolve_conj resolve_neg conj sum_to_size
        atleast_1d atleast_2d atleast_3d fold squeeze_copy view_copy pixel_shuffle pixel_unshuffle channel_shuffle
        nll_loss embedding_unused""".split():
    if _n.endswith("_unused"):
        continue
    rule(_n, kind="linear")(_linear_first)

for _n in "cat stack hstack vstack dstack column_stack row_stack block_diag add_unused".split():
    if not _n.endswith("_unused"):
        rule(_n, kind="linear")(_linear_all)

for _n in "floor ceil round trunc sign sgn floor_divide heaviside".split():
    rule(_n, kind="zero")(_zero)


@rule("detach")
def _detach(ctx, x):
    return None


# elementwise unary ops: tangent = t · f'(x), the derivative written from the math (x: input, y: output)

_SQRT_PI = math.sqrt(math.pi)


def _d_sinc(x, y):
    px = x * math.pi
    safe = fg.where(x == 0, fg.ones_like(x), x)
    d = (fg.cos(px) * math.pi * safe - fg.sin(safe * math.pi)) / (math.pi * safe * safe)
    return fg.where(x == 0, fg.zeros_like(x), d)


UNARY_DERIVATIVES = {
    "exp": lambda x, y: y,
    "exp2": lambda x, y: y * math.log(2.0),
    "log": lambda x, y: x.reciprocal(),
    "log2": lambda x, y: (x * math.log(2.0)).reciprocal(),
    "log10": lambda x, y: (x * math.log(10.0)).reciprocal(),
    "log1p": lambda x, y: (x + 1.0).reciprocal(),
    "expm1": lambda x, y: y + 1.0,
    "sqrt": lambda x, y: 0.5 / y,
    "rsqrt": lambda x, y: -0.5 * y * y * y,
    "sin": lambda x, y: fg.cos(x),
    "cos": lambda x, y: -fg.sin(x),
    "tan": lambda x, y: 1.0 + y * y,
    "tanh": lambda x, y: 1.0 - y * y,
    "sigmoid": lambda x, y: y * (1.0 - y),
    "reciprocal": lambda x, y: -(y * y),
    "erf": lambda x, y: (2.0 / _SQRT_PI) * fg.exp(-(x * x)),
    "erfc": lambda x, y: (-2.0 / _SQRT_PI) * fg.exp(-(x * x)),
    "erfinv": lambda x, y: (_SQRT_PI / 2.0) * fg.exp(y * y),
    "asin": lambda x, y: fg.rsqrt(1.0 - x * x),
    "acos": lambda x, y: -fg.rsqrt(1.0 - x * x),
    "atan": lambda x, y: (1.0 + x * x).reciprocal(),
    "sinh": lambda x, y: fg.cosh(x),
    "cosh": lambda x, y: fg.sinh(x),
    "asinh": lambda x, y: fg.rsqrt(x * x + 1.0),
    "acosh": lambda x, y: fg.rsqrt(x * x - 1.0),
    "atanh": lambda x, y: (1.0 - x * x).reciprocal(),
    "lgamma": lambda x, y: fg.digamma(x),
    "digamma": lambda x, y: fg.polygamma(1, x),
    "i0": lambda x, y: fg.special.i1(x),
    "abs": lambda x, y: fg.sign(x),
    "relu": lambda x, y: (y > 0).to(y.dtype),
    "square": lambda x, y: 2.0 * x,
    "frac": lambda x, y: fg.ones_like(x),
    "sinc": _d_sinc,
    "deg2rad": lambda x, y: fg.full_like(x, math.pi / 180.0),
    "rad2deg": lambda x, y: fg.full_like(x, 180.0 / math.pi),
    "silu": lambda x, y: fg.sigmoid(x) * (1.0 + x * (1.0 - fg.sigmoid(x))),
    "mish": lambda x, y: _d_mish(x),
    "logsigmoid": lambda x, y: fg.sigmoid(-x),
    "softsign": lambda x, y: (1.0 + x.abs()).pow(-2),
    "tanhshrink": lambda x, y: fg.tanh(x) ** 2,
    "hardswish": lambda x, y: fg.where(x < -3.0, fg.zeros_like(x),
                                       fg.where(x <= 3.0, x / 3.0 + 0.5, fg.ones_like(x))),
    "hardsigmoid": lambda x, y: ((x > -3.0) & (x < 3.0)).to(x.dtype) / 6.0,
    "relu6": lambda x, y: ((x > 0.0) & (x < 6.0)).to(x.dtype),
    "selu": lambda x, y: fg.where(x > 0, fg.full_like(x, 1.0507009873554804934193349852946),
                                  1.0507009873554804934193349852946 * 1.6732632423543772848170429916717 * fg.exp(x)),
    "special_i1": None,
}


def _d_mish(x):
    sp = fg.nn.functional.softplus(x)
    tsp = fg.tanh(sp)
    return tsp + x * (1.0 - tsp * tsp) * fg.sigmoid(x)


def _unary(deriv):
    def jvp(ctx, x, *args, **kwargs):
        if not isinstance(x, Pair):
            return None
        return x.t * deriv(x.p, ctx.out)
    return jvp


for _n, _d in UNARY_DERIVATIVES.items():
    if _d is not None:
        rule(_n)(_unary(_d))


# elementwise ops with parameters

@rule("leaky_relu")
def _leaky_relu(ctx, x, negative_slope=0.01, inplace=False):
    if not isinstance(x, Pair):
        return None
    return x.t * fg.where(x.p > 0, fg.ones_like(x.p), fg.full_like(x.p, negative_slope))


@rule("elu")
def _elu(ctx, x, alpha=1.0, inplace=False):
    if not isinstance(x, Pair):
        return None
    return x.t * fg.where(x.p > 0, fg.ones_like(x.p), alpha * fg.exp(x.p))


@rule("celu")
def _celu(ctx, x, alpha=1.0, inplace=False):
    if not isinstance(x, Pair):
        return None
    return x.t * fg.where(x.p > 0, fg.ones_like(x.p), fg.exp(x.p / alpha))


@rule("gelu")
def _gelu(ctx, x, approximate="none"):
    if not isinstance(x, Pair):
        return None
    v = x.p
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = k * (v + 0.044715 * v * v * v)
        th = fg.tanh(inner)
        d = 0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * v * v)
    else:
        d = 0.5 * (1.0 + fg.erf(v / math.sqrt(2.0))) + v * fg.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi)
    return x.t * d


@rule("softplus")
def _softplus(ctx, x, beta=1.0, threshold=20.0):
    if not isinstance(x, Pair):
        return None
    bx = x.p * beta
    return x.t * fg.where(bx > threshold, fg.ones_like(x.p), fg.sigmoid(bx))


@rule("hardtanh")
def _hardtanh(ctx, x, min_val=-1.0, max_val=1.0, inplace=False):
    if not isinstance(x, Pair):
        return None
    return x.t * ((x.p > min_val) & (x.p < max_val)).to(x.p.dtype)


@rule("threshold")
def _threshold(ctx, x, threshold, value, inplace=False):
    if not isinstance(x, Pair):
        return None
    return x.t * (x.p > threshold).to(x.p.dtype)


@rule("hardshrink", "softshrink")
def _shrink(ctx, x, lambd=0.5):
    if not isinstance(x, Pair):
        return None
    return x.t * ((x.p > lambd) | (x.p < -lambd)).to(x.p.dtype)


@rule("logit")
def _logit(ctx, x, eps=None):
    if not isinstance(x, Pair):
        return None
    v = x.p
    d = (v * (1.0 - v)).reciprocal()
    if eps is not None:
        d = fg.where((v < eps) | (v > 1.0 - eps), fg.zeros_like(v), d)
    return x.t * d


@rule("polygamma")
def _polygamma(ctx, n, x):
    if not isinstance(x, Pair):
        return None
    return x.t * fg.polygamma(n + 1, x.p)


@rule("nan_to_num")
def _nan_to_num(ctx, x, nan=0.0, posinf=None, neginf=None):
    if not isinstance(x, Pair):
        return None
    return fg.where(fg.isfinite(x.p), x.t, fg.zeros_like(x.t))


@rule("clamp", "clamp_min", "clamp_max")
def _clamp(ctx, x, min=None, max=None):
    """As torch: a number bound passes the tangent strictly inside it (none at the bound itself); a tensor
    bound is max(x, min) then min(·, max), whose ties take the mean of the two tangents."""
    if (ctx.name or getattr(ctx.func, "__name__", "")) == "clamp_max":
        min, max = None, min
    v = P(x)
    t = T(x) if T(x) is not None else fg.zeros_like(ctx.out)
    for bound, upper in ((min, False), (max, True)):
        b = P(bound)
        if b is None:
            continue
        inside = v < b if upper else v > b
        if _is_tensorish(b):
            tb = T(bound) if T(bound) is not None else fg.zeros_like(t)
            t = fg.where(v == b, (t + tb) / 2, fg.where(inside, t, tb))
            v = fg.minimum(v, b) if upper else fg.maximum(v, b)
        else:
            t = fg.where(inside, t, fg.zeros_like(t))
            v = v.clamp_max(b) if upper else v.clamp_min(b)
    return t


def _is_tensorish(v):
    return isinstance(v, _Tensor) or _is_wrapper(v)


# binary ops

def _scaled(t, s):
    return t if s == 1 else t * s


@rule("add")
def _add(ctx, a, b, *, alpha=1, out=None):
    ta, tb = T(a), T(b)
    if tb is not None:
        tb = _scaled(tb, alpha)
    return tb if ta is None else (ta if tb is None else ta + tb)


@rule("sub")
def _sub(ctx, a, b, *, alpha=1, out=None):
    ta, tb = T(a), T(b)
    if tb is not None:
        tb = -_scaled(tb, alpha)
    return tb if ta is None else (ta if tb is None else ta + tb)


@rule("rsub")
def _rsub(ctx, a, b, *, alpha=1):
    return _sub(ctx, b, a, alpha=alpha)


@rule("mul")
def _mul(ctx, a, b, *, out=None):
    ta, tb = T(a), T(b)
    r = None if ta is None else ta * P(b)
    if tb is not None:
        r = tb * P(a) if r is None else r + tb * P(a)
    return r


@rule("div")
def _div(ctx, a, b, *, rounding_mode=None, out=None):
    if rounding_mode is not None:
        return fg.zeros_like(ctx.out)
    ta, tb = T(a), T(b)
    r = None if ta is None else ta / P(b)
    if tb is not None:
        s = -(tb * ctx.out) / P(b)
        r = s if r is None else r + s
    return r


@rule("pow")
def _pow(ctx, a, b, *, out=None):
    ta, tb = T(a), T(b)
    x, e = P(a), P(b)
    r = None
    if ta is not None:
        if _is_tensorish(e):
            d = fg.where(e == 0, fg.zeros_like(ctx.out), e * x.pow(e - 1))
        elif e == 0:
            d = fg.zeros_like(x)
        else:
            d = e * x.pow(e - 1)
        r = ta * d
    if tb is not None:
        xv = x if _is_tensorish(x) else fg.full_like(ctx.out, x)
        d = fg.where((xv == 0) & (e >= 0), fg.zeros_like(ctx.out), ctx.out * fg.log(xv))
        s = tb * d
        r = s if r is None else r + s
    return r


@rule("atan2")
def _atan2(ctx, a, b):
    ta, tb = T(a), T(b)
    x, y = P(a), P(b)
    den = x * x + y * y
    r = None if ta is None else ta * y / den
    if tb is not None:
        s = -tb * x / den
        r = s if r is None else r + s
    return r


@rule("maximum", "minimum", "fmax", "fmin")
def _maximum(ctx, a, b):
    x, y = P(a), P(b)
    ta = T(a) if T(a) is not None else fg.zeros_like(ctx.out)
    tb = T(b) if T(b) is not None else fg.zeros_like(ctx.out)
    first = (x > y) if ctx_is_max(ctx) else (x < y)
    if getattr(ctx.func, "__name__", "") in ("fmax", "fmin") or ctx.name in ("fmax", "fmin"):
        first = first | fg.isnan(y)
    return fg.where(x == y, (ta + tb) / 2, fg.where(first, ta, tb))


def ctx_is_max(ctx):
    n = ctx.name or getattr(ctx.func, "__name__", "")
    return n in ("maximum", "fmax", "max")


@rule("hypot")
def _hypot(ctx, a, b):
    r = None
    for v in (a, b):
        if T(v) is not None:
            s = T(v) * P(v) / ctx.out
            r = s if r is None else r + s
    return r


@rule("remainder", "fmod")
def _remainder(ctx, a, b):
    ta, tb = T(a), T(b)
    r = ta
    if tb is not None:
        q = P(a) / P(b)
        q = q.trunc() if (ctx.name or getattr(ctx.func, "__name__", "")) == "fmod" else q.floor()
        r = -tb * q if r is None else r - tb * q
    return r


@rule("xlogy")
def _xlogy(ctx, a, b):
    x, y = P(a), P(b)
    r = None
    if T(a) is not None:
        r = T(a) * fg.where((x == 0) & ~fg.isnan(fg.as_tensor(y) if not _is_tensorish(y) else y), fg.zeros_like(ctx.out), fg.log(y if _is_tensorish(y) else fg.full_like(ctx.out, y)))
    if T(b) is not None:
        s = T(b) * fg.where(x == 0, fg.zeros_like(ctx.out), x / y)
        r = s if r is None else r + s
    return r


@rule("lerp")
def _lerp(ctx, a, b, w):
    x, y, wv = P(a), P(b), P(w)
    r = None
    if T(a) is not None:
        r = T(a) * (1 - wv)
    if T(b) is not None:
        s = T(b) * wv
        r = s if r is None else r + s
    if T(w) is not None:
        s = T(w) * (y - x)
        r = s if r is None else r + s
    return r


@rule("addcmul")
def _addcmul(ctx, inp, t1, t2, *, value=1):
    r = T(inp)
    prod = _mul(ctx, t1, t2)
    if prod is not None:
        prod = _scaled(prod, value)
        r = prod if r is None else r + prod
    return r


@rule("addcdiv")
def _addcdiv(ctx, inp, t1, t2, *, value=1):
    r = T(inp)
    q = None
    if T(t1) is not None:
        q = T(t1) / P(t2)
    if T(t2) is not None:
        s = -T(t2) * P(t1) / (P(t2) * P(t2))
        q = s if q is None else q + s
    if q is not None:
        q = _scaled(q, value)
        r = q if r is None else r + q
    return r


@rule("logaddexp")
def _logaddexp(ctx, a, b):
    r = None
    for v in (a, b):
        if T(v) is not None:
            s = T(v) * fg.exp(P(v) - ctx.out)
            r = s if r is None else r + s
    return r


@rule("logaddexp2")
def _logaddexp2(ctx, a, b):
    r = None
    for v in (a, b):
        if T(v) is not None:
            s = T(v) * fg.exp2(P(v) - ctx.out)
            r = s if r is None else r + s
    return r


@rule("where")
def _where(ctx, cond, a=None, b=None):
    if ctx.name == "where":  # the method: self.where(condition, other)
        cond, a = a, cond
    ta = T(a) if T(a) is not None else fg.zeros_like(ctx.out)
    tb = T(b) if T(b) is not None else fg.zeros_like(ctx.out)
    return fg.where(P(cond), ta, tb)


@rule("masked_fill")
def _masked_fill(ctx, x, mask, value):
    tx = T(x) if T(x) is not None else fg.zeros_like(ctx.out)
    tv = T(value)
    return tx.masked_fill(P(mask), 0.0) if tv is None else fg.where(P(mask), tv, tx)


@rule("pad")
def _pad(ctx, x, pad, mode="constant", value=None):
    if not isinstance(x, Pair):
        return None
    return ctx.same(x.t, pad, mode, 0.0 if mode == "constant" else value)


# reductions

def _reduced_dims(x, dim):
    nd = x.dim()
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(nd))
    if isinstance(dim, int):
        dim = (dim,)
    return tuple(sorted(d % nd if nd else 0 for d in dim))


def _keep(v, dims, keepdim):
    if keepdim or v.dim() == 0 and not dims:
        return v
    for d in dims:
        v = v.unsqueeze(d)
    return v


def _even_jvp(x, t, out, dims, keepdim):
    """Tangent of a max/min-like reduction: the tangents of the selected elements, averaged over ties."""
    if x.dim() == 0:
        return t
    o = _keep(out, dims, keepdim)
    mask = (x == o).to(t.dtype)
    return (t * mask).sum(dims, keepdim=keepdim) / mask.sum(dims, keepdim=keepdim)


@rule("amax", "amin")
def _amax(ctx, x, dim=(), keepdim=False):
    if not isinstance(x, Pair):
        return None
    dims = _reduced_dims(x.p, dim)
    return _even_jvp(x.p, x.t, ctx.out, dims, keepdim)


def _indexed_jvp(t, dim, indices, keepdim):
    if t.dim() == 0:
        return t
    idx = indices if keepdim else indices.unsqueeze(dim)
    g = t.gather(dim, idx)
    return g if keepdim else g.squeeze(dim)


@rule("max", "min")
def _max(ctx, x, *args, **kwargs):
    out = ctx.out
    if isinstance(out, tuple):  # (values, indices) along a dim
        if not isinstance(x, Pair):
            return None
        dim = args[0] if args else kwargs.get("dim")
        keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
        return (_indexed_jvp(x.t, dim, out[1], keepdim), None)
    other = args[0] if args else kwargs.get("other")
    if other is not None:
        return _maximum(ctx, x, other)
    if not isinstance(x, Pair):
        return None
    return _even_jvp(x.p, x.t, out, tuple(range(x.p.dim())), False)


@rule("median", "nanmedian", "kthvalue", "mode")
def _median(ctx, x, *args, **kwargs):
    if not isinstance(x, Pair):
        return None
    out = ctx.out
    if isinstance(out, tuple):
        if ctx.name == "kthvalue" or getattr(ctx.func, "__name__", "") == "kthvalue":
            dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
            keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
        else:
            dim = args[0] if args else kwargs.get("dim", -1)
            keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
        return (_indexed_jvp(x.t, dim, out[1], keepdim), None)
    return _even_jvp(x.p, x.t, out, tuple(range(x.p.dim())), False)


@rule("sort", "topk", "cummax", "cummin")
def _sort(ctx, x, *args, **kwargs):
    if not isinstance(x, Pair):
        return None
    values, indices = ctx.out
    n = ctx.name or getattr(ctx.func, "__name__", "")
    if n == "topk":
        dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
    elif n == "sort":
        dim = args[0] if args and not isinstance(args[0], bool) else kwargs.get("dim", -1)
    else:
        dim = args[0] if args else kwargs.get("dim")
    if x.t.dim() == 0:
        return (x.t, None)
    return (x.t.gather(dim, indices), None)


@rule("msort")
def _msort(ctx, x):
    if not isinstance(x, Pair):
        return None
    return x.t.gather(0, fg.argsort(x.p, dim=0))


@rule("prod")
def _prod(ctx, x, dim=None, keepdim=False, *, dtype=None):
    if not isinstance(x, Pair):
        return None
    v, t = x.p, x.t
    if dtype is not None:
        v, t = v.to(dtype), t.to(dtype)
    if dim is None:
        v, t, d = v.reshape(-1), t.reshape(-1), 0
    else:
        d = dim
    # sum_i t_i · prod_{j != i} x_j, without dividing by x (zeros allowed): exclusive products from both sides
    n = v.shape[d] if v.dim() else 1
    if v.dim() == 0:
        return t
    ones = fg.ones_like(v.narrow(d, 0, 1))
    left = fg.cat([ones, v.narrow(d, 0, n - 1).cumprod(d)], d) if n > 1 else ones
    rev = v.flip(d)
    right = fg.cat([ones, rev.narrow(d, 0, n - 1).cumprod(d)], d).flip(d) if n > 1 else ones
    r = (t * left * right).sum(d, keepdim=keepdim if dim is not None else False)
    return r


def _var_parts(x, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    dims = _reduced_dims(x, dim)
    n = 1
    for d in dims:
        n *= x.shape[d]
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dims, n, correction


@rule("var")
def _var(ctx, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if not isinstance(x, Pair):
        return None
    dims, n, c = _var_parts(x.p, dim, unbiased, keepdim, correction)
    xc = x.p - x.p.mean(dims, keepdim=True)
    return (xc * x.t).sum(dims, keepdim=keepdim) * (2.0 / max(n - c, 0))


@rule("std")
def _std(ctx, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if not isinstance(x, Pair):
        return None
    dims, n, c = _var_parts(x.p, dim, unbiased, keepdim, correction)
    xc = x.p - x.p.mean(dims, keepdim=True)
    return (xc * x.t).sum(dims, keepdim=keepdim) / (ctx.out * max(n - c, 0))


@rule("var_mean", "std_mean")
def _var_mean(ctx, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if not isinstance(x, Pair):
        return None
    dims, n, c = _var_parts(x.p, dim, unbiased, keepdim, correction)
    xc = x.p - x.p.mean(dims, keepdim=True)
    s = (xc * x.t).sum(dims, keepdim=keepdim)
    n_name = ctx.name or getattr(ctx.func, "__name__", "")
    first = s * (2.0 / max(n - c, 0)) if n_name == "var_mean" else s / (ctx.out[0] * max(n - c, 0))
    return (first, x.t.mean(dims, keepdim=keepdim))


@rule("logsumexp")
def _logsumexp(ctx, x, dim=(), keepdim=False):
    if not isinstance(x, Pair):
        return None
    dims = _reduced_dims(x.p, dim)
    o = _keep(ctx.out, dims, keepdim)
    return (x.t * fg.exp(x.p - o)).sum(dims, keepdim=keepdim)


@rule("norm")
def _norm(ctx, x, p="fro", dim=None, keepdim=False, dtype=None):
    if not isinstance(x, Pair):
        return None
    return _vector_norm_jvp(x.p, x.t, ctx.out, 2.0 if p in ("fro", None) else p, dim, keepdim)


@rule("vector_norm")
def _vector_norm(ctx, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if not isinstance(x, Pair):
        return None
    return _vector_norm_jvp(x.p, x.t, ctx.out, ord, dim, keepdim)


def _vector_norm_jvp(v, t, out, p, dim, keepdim):
    dims = _reduced_dims(v, dim)
    o = _keep(out, dims, keepdim)
    if p == 2:
        return _masked_div((v * t).sum(dims, keepdim=keepdim), out)
    if p == 1:
        return (fg.sign(v) * t).sum(dims, keepdim=keepdim)
    if p == 0:
        return fg.zeros_like(out)
    if p in (math.inf, -math.inf):
        return _even_jvp(v.abs(), fg.sign(v) * t, out, dims, keepdim)
    a = v.abs()
    num = (a.pow(p - 1) * fg.sign(v) * t).sum(dims, keepdim=keepdim)
    return _masked_div(num, out.pow(p - 1))


def _masked_div(num, den):
    zero = den == 0
    return fg.where(zero, fg.zeros_like(num), num / fg.where(zero, fg.ones_like(den), den))


@rule("dist")
def _dist(ctx, a, b, p=2):
    ta = T(a) if T(a) is not None else None
    tb = T(b)
    d = P(a) - P(b)
    td = ta if tb is None else (-tb if ta is None else ta - tb)
    return _vector_norm_jvp(d, td.expand(d.shape), ctx.out, p, None, False)


@rule("cumprod")
def _cumprod(ctx, x, dim, *, dtype=None):
    if not isinstance(x, Pair):
        return None
    # d(prod_{j<=i} x_j) = sum_{k<=i} t_k prod_{j<=i, j!=k} x_j; computed without division (zeros allowed) for
    # small sizes by a running recurrence: (y_i)' = y'_{i-1} x_i + y_{i-1} t_i
    v, t = x.p, x.t
    if dtype is not None:
        v, t = v.to(dtype), t.to(dtype)
    if v.dim() == 0:
        return t
    n = v.shape[dim]
    y = ctx.out
    pieces = []
    prev_t = None
    for i in range(n):
        ti = t.select(dim, i)
        if i == 0:
            cur = ti
        else:
            cur = prev_t * v.select(dim, i) + y.select(dim, i - 1) * ti
        pieces.append(cur)
        prev_t = cur
    return fg.stack(pieces, dim)


@rule("logcumsumexp")
def _logcumsumexp(ctx, x, dim):
    if not isinstance(x, Pair):
        return None
    # d/dx_k of log sum_{j<=i} e^{x_j} = e^{x_k - y_i} for k <= i:  sum_{k<=i} t_k e^{x_k} / e^{y_i}
    m = x.p.amax(dim, keepdim=True)
    return (x.t * fg.exp(x.p - m)).cumsum(dim) * fg.exp(m - ctx.out)


# softmax family

@rule("softmax", "_softmax")
def _softmax(ctx, x, dim=None, dtype=None, *args, **kwargs):
    if not isinstance(x, Pair):
        return None
    y = ctx.out
    t = x.t.to(y.dtype)
    d = dim if isinstance(dim, int) else kwargs.get("dim", -1)
    return y * (t - (y * t).sum(d, keepdim=True))


@rule("log_softmax", "_log_softmax")
def _log_softmax(ctx, x, dim=None, dtype=None, *args, **kwargs):
    if not isinstance(x, Pair):
        return None
    y = ctx.out
    t = x.t.to(y.dtype)
    d = dim if isinstance(dim, int) else kwargs.get("dim", -1)
    return t - (fg.exp(y) * t).sum(d, keepdim=True)


@rule("normalize")
def _normalize(ctx, x, p=2.0, dim=1, eps=1e-12, out=None):
    if not isinstance(x, Pair):
        return None
    n = fg.linalg.vector_norm(x.p, p, dim, keepdim=True)
    tn = _vector_norm_jvp(x.p, x.t, n, p, dim, True)
    den = n.clamp_min(eps)
    tden = fg.where(n >= eps, tn, fg.zeros_like(tn))
    return x.t / den - x.p * tden / (den * den)


# products: bilinear in their two operands (tangent = f(ta, b) + f(a, tb)), plus any bias

def _bilinear_terms(ctx, operands, args, kwargs, positions, drop=None):
    """sum over each operand position i with a tangent of op(..., t_i, ...) with the other operands' primals;
    `drop`: keyword arguments (bias) to leave out of those calls."""
    total = None
    base_args = list(_map(P, args))
    base_kw = dict(_map(P, kwargs))
    if drop:
        for k in drop:
            base_kw[k] = None
    for pos in positions:
        a = args[pos] if isinstance(pos, int) else kwargs.get(pos)
        if not isinstance(a, Pair):
            continue
        call_args, call_kw = list(base_args), dict(base_kw)
        if isinstance(pos, int):
            call_args[pos] = a.t
        else:
            call_kw[pos] = a.t
        term = ctx.same(*call_args, **call_kw)
        total = term if total is None else total + term
    return total


@rule("mm", "matmul", "bmm", "mv", "dot", "vdot", "inner", "outer", "kron", "cross", "linalg_cross",
      "chain_unused")
def _product(ctx, a, b, *args, **kwargs):
    return _bilinear_terms(ctx, None, (a, b) + args, kwargs, (0, 1))


@rule("tensordot")
def _tensordot(ctx, a, b, *args, **kwargs):
    return _bilinear_terms(ctx, None, (a, b) + args, kwargs, (0, 1))


@rule("einsum")
def _einsum(ctx, equation, *operands):
    ops = operands[0] if len(operands) == 1 and isinstance(operands[0], (list, tuple)) else operands
    total = None
    for i, a in enumerate(ops):
        if not isinstance(a, Pair):
            continue
        subst = [o.t if j == i else P(o) for j, o in enumerate(ops)]
        term = fg.einsum(equation, *subst)
        total = term if total is None else total + term
    return total


@rule("multi_dot", "chain_matmul")
def _multi_dot(ctx, *tensors):
    ops = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    total = None
    for i, a in enumerate(ops):
        if not isinstance(a, Pair):
            continue
        subst = [o.t if j == i else P(o) for j, o in enumerate(ops)]
        term = subst[0]
        for s in subst[1:]:
            term = term @ s
        total = term if total is None else total + term
    return total


@rule("linear")
def _linear(ctx, x, weight, bias=None):
    r = None
    if isinstance(x, Pair):
        r = fg.nn.functional.linear(x.t, P(weight))
    if isinstance(weight, Pair):
        s = fg.nn.functional.linear(P(x), weight.t)
        r = s if r is None else r + s
    if isinstance(bias, Pair):
        r = bias.t if r is None else r + bias.t
    return r


@rule("bilinear")
def _bilinear(ctx, x1, x2, weight, bias=None):
    r = None
    F = fg.nn.functional
    for i in range(3):
        args = [x1, x2, weight]
        if not isinstance(args[i], Pair):
            continue
        subst = [a.t if j == i else P(a) for j, a in enumerate(args)]
        term = F.bilinear(*subst)
        r = term if r is None else r + term
    if isinstance(bias, Pair):
        r = bias.t if r is None else r + bias.t
    return r


@rule("addmm", "addbmm", "baddbmm", "addmv", "addr")
def _addmm(ctx, inp, m1, m2, *, beta=1, alpha=1, out=None):
    name = ctx.name or getattr(ctx.func, "__name__", "")
    prod = {"addmm": fg.mm, "addbmm": lambda a, b: fg.bmm(a, b).sum(0), "baddbmm": fg.bmm, "addmv": fg.mv,
            "addr": fg.outer}[name]
    r = None
    if isinstance(m1, Pair):
        r = prod(m1.t, P(m2))
    if isinstance(m2, Pair):
        s = prod(P(m1), m2.t)
        r = s if r is None else r + s
    if r is not None:
        r = _scaled(r, alpha)
    if isinstance(inp, Pair) and beta != 0:
        s = _scaled(inp.t, beta)
        r = s if r is None else r + s
    return r


def _conv_rule(ctx, input, weight, bias=None, *args, **kwargs):
    r = _bilinear_terms(ctx, None, (input, weight, None) + args, kwargs, (0, 1))
    if isinstance(bias, Pair):
        wdim = P(weight).dim()
        shape = (-1,) + (1,) * (wdim - 2)
        if ctx.out.dim() == wdim:  # batched
            shape = (1,) + shape
        tb = bias.t.reshape(shape)
        r = tb if r is None else r + tb
    return r


for _n in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    rule(_n)(_conv_rule)


# pooling and friends that pick elements: the tangent follows the picked element

def _avg_like(ctx, x, *args, **kwargs):
    return _linear_first(ctx, x, *args, **kwargs)


for _n in ("avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "interpolate_unused"):
    if not _n.endswith("_unused"):
        rule(_n, kind="linear")(_avg_like)


# normalisation layers: x̂ = (x - μ)/σ over `dims`; dx̂ = (tx - mean(tx) - x̂ mean(x̂ tx)) / σ

def _normalized(x, tx, dims, eps):
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dims, keepdim=True)
    inv = fg.rsqrt(var + eps)
    xh = xc * inv
    if tx is None:
        return xh, None
    dxh = (tx - tx.mean(dims, keepdim=True) - xh * (xh * tx).mean(dims, keepdim=True)) * inv
    return xh, dxh


def _affine(xh, dxh, weight, bias, shape):
    r = dxh
    if weight is not None:
        w = P(weight).reshape(shape)
        r = None if r is None else r * w
        if T(weight) is not None:
            s = xh * T(weight).reshape(shape)
            r = s if r is None else r + s
    if T(bias) is not None:
        s = T(bias).reshape(shape)
        r = s if r is None else r + s
    return r


@rule("layer_norm")
def _layer_norm(ctx, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    k = len(normalized_shape) if not isinstance(normalized_shape, int) else 1
    dims = tuple(range(P(x).dim() - k, P(x).dim()))
    xh, dxh = _normalized(P(x), T(x), dims, eps)
    return _affine(xh, dxh, weight, bias, tuple(P(x).shape[P(x).dim() - k:]))


@rule("rms_norm")
def _rms_norm(ctx, x, normalized_shape, weight=None, eps=None):
    k = len(normalized_shape) if not isinstance(normalized_shape, int) else 1
    v = P(x)
    dims = tuple(range(v.dim() - k, v.dim()))
    e = eps if eps is not None else fg.finfo(v.dtype).eps
    inv = fg.rsqrt((v * v).mean(dims, keepdim=True) + e)
    xh = v * inv
    dxh = None
    if T(x) is not None:
        dxh = (T(x) - xh * (xh * T(x)).mean(dims, keepdim=True)) * inv
    return _affine(xh, dxh, weight, None, tuple(v.shape[v.dim() - k:]))


@rule("group_norm")
def _group_norm(ctx, x, num_groups, weight=None, bias=None, eps=1e-5):
    v = P(x)
    n, c = v.shape[0], v.shape[1]
    g = v.reshape(n, num_groups, -1)
    tg = None if T(x) is None else T(x).reshape(n, num_groups, -1)
    xh, dxh = _normalized(g, tg, (2,), eps)
    xh = xh.reshape(v.shape)
    dxh = None if dxh is None else dxh.reshape(v.shape)
    return _affine(xh, dxh, weight, bias, (1, c) + (1,) * (v.dim() - 2))


@rule("batch_norm")
def _batch_norm(ctx, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    v = P(x)
    shape = (1, v.shape[1]) + (1,) * (v.dim() - 2)
    if training or running_mean is None:
        dims = (0,) + tuple(range(2, v.dim()))
        xh, dxh = _normalized(v, T(x), dims, eps)
    else:
        inv = fg.rsqrt(P(running_var).reshape(shape) + eps)
        xh = (v - P(running_mean).reshape(shape)) * inv
        dxh = None if T(x) is None else T(x) * inv
    return _affine(xh, dxh, weight, bias, shape)


@rule("instance_norm")
def _instance_norm(ctx, x, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                   momentum=0.1, eps=1e-5):
    v = P(x)
    shape = (1, v.shape[1]) + (1,) * (v.dim() - 2)
    if not use_input_stats and running_mean is not None:
        inv = fg.rsqrt(P(running_var).reshape(shape) + eps)
        xh = (v - P(running_mean).reshape(shape)) * inv
        dxh = None if T(x) is None else T(x) * inv
    else:
        xh, dxh = _normalized(v, T(x), tuple(range(2, v.dim())), eps)
    return _affine(xh, dxh, weight, bias, shape)


# losses

def _reduce(v, reduction):
    if reduction == "mean":
        return v.mean()
    if reduction == "sum":
        return v.sum()
    return v


def _legacy(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return "none" if not reduce else ("mean" if size_average else "sum")


def _diff_tangent(a, b):
    ta, tb = T(a), T(b)
    if ta is None:
        return None if tb is None else -tb
    return ta if tb is None else ta - tb


@rule("mse_loss")
def _mse_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    td = _diff_tangent(input, target)
    if td is None:
        return None
    d = P(input) - P(target)
    v = 2.0 * d * td
    if weight is not None:
        v = v * P(weight)
    return _reduce(v, _legacy(size_average, reduce, reduction))


@rule("l1_loss")
def _l1_loss(ctx, input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    td = _diff_tangent(input, target)
    if td is None:
        return None
    v = fg.sign(P(input) - P(target)) * td
    if weight is not None:
        v = v * P(weight)
    return _reduce(v, _legacy(size_average, reduce, reduction))


@rule("smooth_l1_loss")
def _smooth_l1(ctx, input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    td = _diff_tangent(input, target)
    if td is None:
        return None
    d = P(input) - P(target)
    g = fg.sign(d) if beta == 0 else fg.where(d.abs() < beta, d / beta, fg.sign(d))
    return _reduce(g * td, _legacy(size_average, reduce, reduction))


@rule("huber_loss")
def _huber(ctx, input, target, reduction="mean", delta=1.0, weight=None):
    td = _diff_tangent(input, target)
    if td is None:
        return None
    d = P(input) - P(target)
    g = fg.where(d.abs() <= delta, d, delta * fg.sign(d))
    v = g * td
    if weight is not None:
        v = v * P(weight)
    return _reduce(v, reduction)


@rule("cross_entropy")
def _cross_entropy(ctx, input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                   reduction="mean", label_smoothing=0.0):
    if not isinstance(input, Pair) or isinstance(target, Pair) or P(target).dtype.is_floating_point \
            or label_smoothing != 0.0:
        return _NEEDS_FALLBACK
    cdim = 1 if P(input).dim() > 1 else 0
    lsm = fg.log_softmax(P(input), cdim)
    tl = input.t - (fg.exp(lsm) * input.t).sum(cdim, keepdim=True)
    # the loss is linear in the log-probabilities: the same nll on their tangent
    return fg.nn.functional.nll_loss(tl, P(target), weight=P(weight), ignore_index=ignore_index,
                                     reduction=_legacy(size_average, reduce, reduction))


@rule("binary_cross_entropy_with_logits")
def _bce_logits(ctx, input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                pos_weight=None):
    if pos_weight is not None or isinstance(target, Pair) or isinstance(weight, Pair):
        return _NEEDS_FALLBACK
    if not isinstance(input, Pair):
        return None
    v = (fg.sigmoid(input.p) - P(target)) * input.t
    if weight is not None:
        v = v * P(weight)
    return _reduce(v, _legacy(size_average, reduce, reduction))


@rule("binary_cross_entropy")
def _bce(ctx, input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if isinstance(target, Pair) or isinstance(weight, Pair):
        return _NEEDS_FALLBACK
    if not isinstance(input, Pair):
        return None
    p = input.p
    v = (p - P(target)) / ((p * (1.0 - p)).clamp_min(1e-12)) * input.t
    if weight is not None:
        v = v * P(weight)
    return _reduce(v, _legacy(size_average, reduce, reduction))


_NEEDS_FALLBACK = object()


# autograd.grad of duals (forward-over-reverse): Note [jvp of a gradient]

def _special_grad(func, mname, pargs, pkw, level):
    """Note [jvp of a gradient]: g = J(x)^T v computed on the primals with a graph; its tangent along
    (tx, tv) is d/dx (J^T v)·tx + J^T tv: the first term by the double-vjp identity on g's graph, the
    second a vector-Jacobian product with the tangent of v."""
    from . import grad as _grad

    names = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
             "is_grads_batched", "materialize_grads")
    bound = dict(zip(names, pargs))
    bound.update(pkw)
    outs = bound["outputs"]
    ins = bound["inputs"]
    gos = bound.get("grad_outputs")
    seq_out = isinstance(outs, (tuple, list))
    seq_in = isinstance(ins, (tuple, list))
    outs = list(outs) if seq_out else [outs]
    ins = list(ins) if seq_in else [ins]
    gos = [None] * len(outs) if gos is None else (list(gos) if isinstance(gos, (tuple, list)) else [gos])
    allow_unused = bound.get("allow_unused")
    materialize = bound.get("materialize_grads", False)
    out_p = [P(o) for o in outs]
    in_p = [P(i) for i in ins]
    go_p = [P(g) for g in gos]
    if not all(isinstance(v, _Tensor) for v in in_p + out_p):
        raise NotImplementedError("forward AD of autograd.grad needs plain tensors under the dual tensors")
    gs = _grad(out_p, in_p, go_p, retain_graph=True, create_graph=True, allow_unused=True)
    tans = [None] * len(gs)
    # d/dx (J^T v) · tx through g's graph (double-vjp)
    tx = [(i, T(x)) for i, x in enumerate(ins) if T(x) is not None]
    live = [(k, g) for k, g in enumerate(gs) if g is not None and g.requires_grad]
    if tx and live:
        us = [fg.zeros_like(g).requires_grad_() for _, g in live]
        hs = _grad([g for _, g in live], [in_p[i] for i, _ in tx], us, retain_graph=True, create_graph=True,
                   allow_unused=True)
        pairs = [(h, t) for h, (_, t) in zip(hs, tx) if h is not None and h.requires_grad]
        if pairs:
            js = _grad([h for h, _ in pairs], us, [t for _, t in pairs], retain_graph=True, create_graph=True,
                       allow_unused=True)
            for (k, _), j in zip(live, js):
                if j is not None:
                    tans[k] = j
    # J^T tv, and the part of the outputs' tangents that does not come through the inputs' primals is
    # already in their graphs (their tangents were computed from the primals)
    tv = [(k, T(g)) for k, g in enumerate(gos) if T(g) is not None]
    if tv:
        extra = _grad([out_p[k] for k, _ in tv], in_p, [t for _, t in tv], retain_graph=True, create_graph=True,
                      allow_unused=True)
        for k, e in enumerate(extra):
            if e is not None:
                tans[k] = e if tans[k] is None else tans[k] + e
    res = []
    for k, g in enumerate(gs):
        if g is None:
            if materialize:
                g = fg.zeros_like(in_p[k])
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        if g is not None and tans[k] is None:
            tans[k] = fg.zeros_like(g)
        if g is not None and not bound.get("create_graph"):
            # the graphs above were for the tangents; what the caller gets has none, as it asked
            g, tans[k] = g.detach(), tans[k].detach()
        res.append(None if g is None else _wrap(g, tans[k], level))
    return tuple(res)


_SPECIAL["grad"] = _special_grad


def _finish_rules():
    """Rules that return _NEEDS_FALLBACK for some argument combinations are wrapped to take the fallback."""
    for name, fn in list(RULES.items()):
        if fn in (_cross_entropy, _bce_logits, _bce):
            RULES[name] = _with_fallback(name, fn)


def _with_fallback(name, fn):
    def wrapped(ctx, *args, **kwargs):
        r = fn(ctx, *args, **kwargs)
        if r is _NEEDS_FALLBACK:
            raise _UseFallback
        return r
    return wrapped


class _UseFallback(Exception):
    pass


_finish_rules()

_KNOWN_BASES = set(RULES) | set(_INPLACE_RULES) | {n.rstrip("_") for n in dir(_Tensor) if not n.startswith("_")}


# special functions

def _d_i1(x, y):
    safe = fg.where(x == 0, fg.ones_like(x), x)
    return fg.where(x == 0, fg.full_like(x, 0.5), fg.i0(x) - y / safe)


for _n, _d in (("special_i1", _d_i1), ("i1", _d_i1),
               ("special_erfcx", lambda x, y: 2.0 * x * y - 2.0 / _SQRT_PI),
               ("erfcx", lambda x, y: 2.0 * x * y - 2.0 / _SQRT_PI),
               ("special_ndtr", lambda x, y: fg.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
               ("ndtr", lambda x, y: fg.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
               ("special_log_ndtr", lambda x, y: fg.exp(-0.5 * x * x - y) / math.sqrt(2 * math.pi)),
               ("log_ndtr", lambda x, y: fg.exp(-0.5 * x * x - y) / math.sqrt(2 * math.pi)),
               ("special_ndtri", lambda x, y: math.sqrt(2 * math.pi) * fg.exp(0.5 * y * y)),
               ("ndtri", lambda x, y: math.sqrt(2 * math.pi) * fg.exp(0.5 * y * y))):
    rule(_n)(_unary(_d))


@rule("special_xlog1py", "xlog1py")
def _xlog1py(ctx, a, b):
    x, y = P(a), P(b)
    r = None
    if T(a) is not None:
        yv = y if _is_tensorish(y) else fg.full_like(ctx.out, y)
        r = T(a) * fg.where((x == 0) & ~fg.isnan(yv), fg.zeros_like(ctx.out), fg.log1p(yv))
    if T(b) is not None:
        s = T(b) * x / (1.0 + y)
        r = s if r is None else r + s
    return r


@rule("nextafter")
def _nextafter(ctx, a, b):
    return T(a)  # (torch's: the input's tangent passes, the direction's is dropped)


def _max_pool(ctx, x, *args, **kwargs):
    """The tangent of the picked element: the pooling's indices gather it from the tangent."""
    if not isinstance(x, Pair):
        return None
    out = ctx.out
    picked = out[0] if isinstance(out, tuple) else out
    args = args[:5]
    kwargs = {k: v for k, v in kwargs.items() if k != "return_indices"}
    _, idx = ctx.same(x.p, *args, return_indices=True, **kwargs)
    nd = int((ctx.name or getattr(ctx.func, "__name__", ""))[-2])
    start = x.p.dim() - nd
    t = x.t.flatten(start).gather(start, idx.flatten(start)).reshape(picked.shape)
    return (t, None) if isinstance(out, tuple) else t


for _n in ("max_pool1d", "max_pool2d", "max_pool3d"):
    rule(_n)(_max_pool)


@rule("embedding", kind="linear")
def _embedding(ctx, input, weight, *args, **kwargs):
    if not isinstance(weight, Pair):
        return None
    return ctx.same(P(input), weight.t, *args, **kwargs)


def coverage(names):
    """name -> how forward AD differentiates it: "explicit", "linear", "zero" (a rule here), or "fallback"."""
    return {n: KIND.get(_ALIASES.get(n, n), "fallback") for n in names}


# values that do not depend on the input's values: no tangent

@rule("zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like", "new_zeros",
      "new_ones", "new_full", "new_empty", "new_tensor", "bernoulli", "multinomial", "poisson", kind="zero")
def _constant(ctx, *args, **kwargs):
    return None


@rule("aminmax")
def _aminmax(ctx, x, *, dim=None, keepdim=False):
    if not isinstance(x, Pair):
        return None
    dims = _reduced_dims(x.p, dim)
    return tuple(_even_jvp(x.p, x.t, o, dims, keepdim) for o in ctx.out)


@rule("nansum")
def _nansum(ctx, x, *args, **kwargs):
    if not isinstance(x, Pair):
        return None
    return ctx.same(fg.where(fg.isnan(x.p), fg.zeros_like(x.t), x.t), *args, **kwargs)


@rule("nanmean")
def _nanmean(ctx, x, dim=None, keepdim=False, *, dtype=None):
    if not isinstance(x, Pair):
        return None
    keep = (~fg.isnan(x.p)).to(x.t.dtype)
    t = fg.where(fg.isnan(x.p), fg.zeros_like(x.t), x.t)
    dims = _reduced_dims(x.p, dim)
    return t.sum(dims, keepdim=keepdim) / keep.sum(dims, keepdim=keepdim)


# linear in the tensor being written and in the values written into it (the index is not differentiable)
for _n in ("index_add", "index_copy", "scatter_add", "index_put", "masked_scatter", "diagonal_scatter",
           "select_scatter", "slice_scatter", "diff", "put"):
    rule(_n, kind="linear")(_linear_all)


@rule("scatter", kind="linear")
def _scatter(ctx, x, dim, index, src=None, *, value=None, reduce=None):
    if reduce is not None:
        raise _UseFallback
    if src is not None and not _is_tensorish(P(src)):  # scatter(dim, index, value): affine in x
        return ctx.same(_tangent_or_zero(x), dim, P(index), 0.0)
    if value is not None:
        return ctx.same(_tangent_or_zero(x), dim, P(index), value=0.0)
    return ctx.same(_tangent_or_zero(x), dim, P(index), _tangent_or_zero(src))


@rule("index_fill")
def _index_fill(ctx, x, dim, index, value):
    tx = _tangent_or_zero(x)
    tv = T(value)
    out = tx.index_fill(dim, P(index), 0.0)
    if tv is not None:
        out = out + fg.zeros_like(tx).index_fill(dim, P(index), 1.0) * tv
    return out


@rule("copysign")
def _copysign(ctx, a, b):
    if T(a) is None:
        return None
    x = P(a)
    safe = fg.where(x == 0, fg.ones_like(x), x)
    return T(a) * fg.where(x == 0, fg.zeros_like(ctx.out), ctx.out / safe)


@rule("kl_div")
def _kl_div(ctx, input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    x, y = P(input), P(target)
    r = None
    if log_target:
        ey = fg.exp(y)
        if T(input) is not None:
            r = -ey * T(input)
        if T(target) is not None:
            s = ey * (y - x + 1.0) * T(target)
            r = s if r is None else r + s
    else:
        if T(input) is not None:
            r = -y * T(input)
        if T(target) is not None:
            s = fg.where(y > 0, fg.log(fg.where(y > 0, y, fg.ones_like(y))) + 1.0 - x, fg.zeros_like(y)) * T(target)
            r = s if r is None else r + s
    if r is None:
        return None
    red = _legacy(size_average, reduce, reduction)
    if red == "batchmean":
        return r.sum() / (x.shape[0] if x.dim() else 1)
    return _reduce(r, red)


# linear algebra: d(A^-1) = -A^-1 dA A^-1; d det A = det A · tr(A^-1 dA); d(A^-1 B) = A^-1 (dB - dA X)

@rule("inv")
def _inv(ctx, A):
    if not isinstance(A, Pair):
        return None
    return -(ctx.out @ A.t @ ctx.out)


@rule("det")
def _det(ctx, A):
    if not isinstance(A, Pair):
        return None
    s = fg.linalg.solve(A.p, A.t)
    return ctx.out * s.diagonal(0, -2, -1).sum(-1)


@rule("slogdet")
def _slogdet(ctx, A):
    if not isinstance(A, Pair):
        return None
    s = fg.linalg.solve(A.p, A.t)
    return (fg.zeros_like(ctx.out[0]), s.diagonal(0, -2, -1).sum(-1))


@rule("logdet")
def _logdet(ctx, A):
    if not isinstance(A, Pair):
        return None
    return fg.linalg.solve(A.p, A.t).diagonal(0, -2, -1).sum(-1)


@rule("solve")
def _solve(ctx, A, B, *, left=True, out=None):
    if not left:
        raise _UseFallback
    X = ctx.out
    rhs = None
    vec = P(B).dim() == 1 or (P(B).dim() == P(A).dim() - 1 and tuple(P(B).shape) == tuple(P(A).shape[:-1]))
    if T(B) is not None:
        rhs = T(B)
    if T(A) is not None:
        s = -(T(A) @ X.unsqueeze(-1)).squeeze(-1) if vec else -(T(A) @ X)
        rhs = s if rhs is None else rhs + s
    return None if rhs is None else fg.linalg.solve(P(A), rhs)


@rule("matrix_exp", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_norm",
      "quantile", "nanquantile", "renorm", "float_power")
def _by_fallback(ctx, *args, **kwargs):
    """Ops whose JVP comes from two reverse passes (counted as fallback in the coverage)."""
    raise _UseFallback


for _n in ("matrix_exp", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_norm",
           "quantile", "nanquantile", "renorm", "float_power"):
    KIND[_n] = "fallback"


@rule("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
def _dropout(ctx, input, p=0.5, training=True, inplace=False):
    """Identity outside training (or with p = 0); in training the random mask is known only to the op's
    backward, so the fallback (two reverse passes through it) gives the tangent of this very draw."""
    if not training or p == 0:
        return T(input)
    raise _UseFallback
