"""A captured graph and its guards, turned into Python source (the executor of a cache entry).

A recording (capture.py) becomes two generated functions, compiled with `exec` once per entry:
  guards(inputs, spec) -> (None, externals) when every guard holds, else (failed guard, None)
  replay(inputs, externals) -> the function's result, by calling the recorded ops in order
The source of both is kept (`CacheEntry.graph_code`, `CacheEntry.guard_code`) and is what the
`graph_code` / `guards` logs print. The replay calls the very ops eager mode calls, so values,
autograd graphs (backward, create_graph, hooks on the outputs) and errors are eager's; what a
compiled entry saves is the Python of the function itself (argument handling, module calls,
attribute look-ups, control flow on shapes), and it is the unit a fusing backend will rewrite.
"""

import math
import re

from .. import _C
from .capture import Ref, Sym, _SIMPLE, is_impure
from .symbolic import expr_refs

Tensor = _C.Tensor


class _Scope:
    """Names for the non-literal objects the generated source refers to."""

    def __init__(self):
        self.globals = {}
        self.shown = {}  # name -> how reports write it
        self._ids = {}

    def name(self, obj, prefix="k", shown=None):
        key = (prefix, id(obj))
        name = self._ids.get(key)
        if name is None:
            name = f"{prefix}{len(self._ids)}"
            self._ids[key] = name
            self.globals[name] = obj
            if shown is not None:
                self.shown[name] = shown
        return name


def _is_literal(v):
    t = type(v)
    if t is float:
        return math.isfinite(v)
    return t in (int, bool, str, type(None))


class Codegen:
    def __init__(self, nodes):
        self.nodes = {n.index: n for n in nodes}
        self.scope = _Scope()

    def ref(self, key):
        if key[0] == "in":
            return f"i{key[1]}"
        if key[0] == "ext":
            return f"e{key[1]}"
        node = self.nodes[key[1]]
        expr = f"v{key[1]}"
        for p in node.out_paths[key[2]]:
            expr += f"[{p!r}]"
        return expr

    def sym(self, expr):
        if isinstance(expr, int):
            return repr(expr)
        if expr[0] == "size":
            return f"{self.ref(expr[1])}.shape[{expr[2]}]"
        op, a, b = expr
        return f"({self.sym(a)} {op} {self.sym(b)})"

    def value(self, v):
        if isinstance(v, Ref):
            return self.ref(v.key)
        if isinstance(v, Sym):
            return self.sym(v.expr)
        if _is_literal(v):
            return repr(v)
        if v is Ellipsis:
            return "..."
        t = type(v)
        if t is list:
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if t is tuple:
            return "(" + "".join(self.value(x) + ", " for x in v) + ")"
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return f"{self.scope.name(t)}(" + ", ".join(self.value(x) for x in v) + ")"
        if t is dict and all(_is_literal(k) for k in v):
            return "{" + ", ".join(f"{k!r}: {self.value(x)}" for k, x in v.items()) + "}"
        if t is slice:
            return f"slice({self.value(v.start)}, {self.value(v.stop)}, {self.value(v.step)})"
        return self.scope.name(v)

    def call(self, node):
        fn = self.scope.name(node.fn, "f")
        args = [self.value(a) for a in node.args]
        args += [f"{k}={self.value(v)}" for k, v in node.kwargs.items()]
        return f"{fn}({', '.join(args)})"


def live_nodes(nodes, output_template):
    """The nodes the result depends on, and every node with a side effect (dead-code elimination:
    a pure op whose value nothing uses is not replayed)."""
    needed = set()

    def mark(t):
        if isinstance(t, Ref):
            if t.key[0] == "node":
                needed.add(t.key[1])
        elif isinstance(t, Sym):
            for leaf in expr_refs(t.expr, []):
                if leaf[1][0] == "node":
                    needed.add(leaf[1][1])
        elif isinstance(t, (list, tuple)):
            for x in t:
                mark(x)
        elif isinstance(t, dict):
            for x in t.values():
                mark(x)
        elif isinstance(t, slice):
            mark(t.start), mark(t.stop), mark(t.step)

    mark(output_template)
    for node in reversed(nodes):
        if node.index in needed or is_impure(node):
            needed.add(node.index)
            mark(node.args)
            mark(node.kwargs)
    return [n for n in nodes if n.index in needed]


def generate_replay(rec, output_template, tensor_inputs):
    """The source and the function of `replay(inputs, externals)` for a recording."""
    cg = Codegen(rec.nodes)
    cg.scope.globals["_set_grad"] = _C._set_grad_enabled
    lines = ["def replay(inputs, externals):"]
    for i in tensor_inputs:
        lines.append(f"    i{i} = inputs[{i}]")
    for e in range(len(rec.externals)):
        lines.append(f"    e{e} = externals[{e}]")
    body = []
    grad = rec.entry_grad
    switches = False
    for node in rec.nodes:
        if node.grad != grad:
            body.append(f"_set_grad({node.grad})")
            grad, switches = node.grad, True
        body.append(f"v{node.index} = {cg.call(node)}  # {node.name}")
    if grad != rec.exit_grad:
        body.append(f"_set_grad({rec.exit_grad})")
        switches = True
    body.append(f"return {cg.value(output_template)}")
    if switches:
        lines.append("    try:")
        lines += ["        " + b for b in body]
        lines.append("    except BaseException:")
        lines.append(f"        _set_grad({rec.entry_grad})")
        lines.append("        raise")
    else:
        lines += ["    " + b for b in body]
    src = "\n".join(lines) + "\n"
    scope = dict(cg.scope.globals)
    exec(compile(src, "<ferrograd.compile replay>", "exec"), scope)
    return src, scope["replay"]


def _simple_attrs(module):
    return {k: v for k, v in module.__dict__.items() if type(v) in _SIMPLE}


def _literal(v, scope):
    return repr(v) if _is_literal(v) else scope.name(v)


def _has_hooks(module):
    return bool(module._forward_hooks or module._forward_pre_hooks or module._backward_hooks
                or module._backward_pre_hooks)


def _fetch_attr(module, name):
    return getattr(module, name, None)


def tensor_guard_exprs(name, t, dynamic_dims, scope):
    """Guard expressions for one tensor (an input or an external) as `name`."""
    out = [f"type({name}) is {scope.name(type(t))}",
           f"{name}.dtype == {scope.name(t.dtype)}",
           f"{name}.device == {scope.name(t.device)}",
           f"{name}.requires_grad is {t.requires_grad}"]
    shape = tuple(t.shape)
    if not dynamic_dims:
        out.append(f"{name}.shape == {shape!r}")
        out.append(f"{name}.stride() == {tuple(t.stride())!r}")
    else:
        out.append(f"{name}.dim() == {len(shape)}")
        for d, s in enumerate(shape):
            if d in dynamic_dims:
                out.append(f"{name}.shape[{d}] >= 2")
            else:
                out.append(f"{name}.shape[{d}] == {s}")
        out.append(f"{name}.is_contiguous()")
    return out


def generate_guards(rec, flat, spec, input_dims, fn_globals, aliases=()):
    """Source and function of `guards(inputs, spec)`. `input_dims`: input index -> dims that stay
    symbolic in this entry. `fn_globals`: (globals dict, names) of the compiled function to guard."""
    scope = _Scope()
    scope.globals.update(_is_grad=_C.is_grad_enabled, _default_dtype=_get_default_dtype(),
                         _simple_attrs=_simple_attrs, _has_hooks=_has_hooks, _fetch=_fetch_attr)
    checks = [f"spec == {scope.name(spec)}"]
    binds = []
    for i, v in enumerate(flat):
        if isinstance(v, Tensor):
            binds.append((f"i{i} = inputs[{i}]", tensor_guard_exprs(f"i{i}", v, input_dims.get(i, ()), scope)))
        elif type(v) in _SIMPLE:
            if type(v) is float and math.isnan(v):
                binds.append((f"i{i} = inputs[{i}]", [f"type(i{i}) is float", f"i{i} != i{i}"]))
            else:
                binds.append((f"i{i} = inputs[{i}]", [f"type(i{i}) is {scope.name(type(v))}",
                                                       f"i{i} == {scope.name(v)}"]))
        else:
            binds.append((f"i{i} = inputs[{i}]", [f"i{i} is {scope.name(v)}"]))
    checks_global = [f"inputs[{i}] is inputs[{j}]" for i, j in aliases]
    checks_global += [f"_is_grad() is {rec.entry_grad}", f"_default_dtype() == {scope.name(_get_default_dtype()())}"]
    for m in rec.modules.values():
        mn = scope.name(m, "m")
        d = scope.name(m.__dict__, "m", f"{type(m).__name__}.__dict__")
        for k, v in _simple_attrs(m).items():
            if type(v) in (bool, type(None)):
                checks_global.append(f"{d}.get({k!r}, 0) is {v!r}")
            elif type(v) is float and math.isnan(v):
                checks_global.append(f"{d}.get({k!r}) != {d}.get({k!r})")
            else:
                checks_global.append(f"type({d}.get({k!r})) is {scope.name(type(v))} and "
                                     f"{d}[{k!r}] == {_literal(v, scope)}")
        checks_global.append(f"not ({mn}._forward_hooks or {mn}._forward_pre_hooks or {mn}._backward_hooks "
                             f"or {mn}._backward_pre_hooks)")
    if fn_globals is not None:
        g, names = fn_globals
        gn = scope.name(g, "g")
        for name in names:
            v = g[name]
            checks_global.append(f"type({gn}.get({name!r})) is {scope.name(type(v))} and "
                                 f"{gn}[{name!r}] == {scope.name(v)}")
    ext_binds = []
    for e, (src, t) in enumerate(rec.externals):
        if src[0] in ("break", "unknown"):  # only in entries that do not replay
            ext_binds.append((f"e{e} = None", []))
            continue
        if src[0] == "attr":
            mod, name = src[1], src[2]
            store = next((st for st in ("_parameters", "_buffers") if name in mod.__dict__.get(st, ())), None)
            if store is not None:
                fetch = f"{scope.name(mod.__dict__[store], 'm', f'{type(mod).__name__}.{store}')}.get({name!r})"
            elif name in mod.__dict__:
                fetch = f"{scope.name(mod.__dict__, 'm', f'{type(mod).__name__}.__dict__')}.get({name!r})"
            else:
                fetch = f"_fetch({scope.name(mod, 'm')}, {name!r})"
        elif src[0] == "cell":
            fetch = f"{scope.name(src[1], 'c')}.cell_contents"
        else:
            fetch = f"{scope.name(src[1], 'g')}.get({src[2]!r})"
        ext_binds.append((f"e{e} = {fetch}", tensor_guard_exprs(f"e{e}", t, (), scope)))
    text = []

    def shown(expr):  # the guard with its constants written out, for reports
        return re.sub(r"\b[kmgc]\d+\b", lambda m: scope.shown.get(m.group(0)) or
                      _short(scope.globals.get(m.group(0), m.group(0))), expr)

    # the fast check: one condition per group; `why` (compiled only when asked) names the guard
    lines, why = ["def guards(inputs, spec):"], ["def why(inputs, spec):"]

    def emit(exprs):
        if exprs:
            lines.append(f"    if not ({' and '.join(f'({x})' for x in exprs)}):")
            lines.append("        return False, None")
        for x in exprs:
            why.append(f"    if not ({x}):")
            why.append(f"        return {shown(x)!r}")
            text.append(shown(x))
    emit(checks + checks_global)
    for bind, exprs in binds + ext_binds:
        lines.append(f"    {bind}")
        why.append(f"    {bind}")
        emit(exprs)
    lines.append("    return True, (" + "".join(f"e{e}, " for e in range(len(rec.externals))) + ")")
    why.append("    return None")
    src = "\n".join(lines) + "\n"
    ns = dict(scope.globals)
    exec(compile(src, "<ferrograd.compile guards>", "exec"), ns)
    why_src = "\n".join(why) + "\n"

    def reason(inputs, spec):
        if "why" not in ns:
            exec(compile(why_src, "<ferrograd.compile guard reasons>", "exec"), ns)
        return ns["why"](inputs, spec)
    return src, ns["guards"], text, reason


def _get_default_dtype():
    from .._settings import get_default_dtype

    return get_default_dtype


def _short(obj):
    if isinstance(obj, type):
        return obj.__name__
    if isinstance(obj, dict):
        return "<dict>"
    text = repr(obj) if isinstance(obj, (_C.dtype, _C.device, int, float, str, bool, type(None), tuple)) else \
        f"<{type(obj).__name__}>"
    return text if len(text) < 80 else text[:77] + "..."
