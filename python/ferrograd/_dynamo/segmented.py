"""Running a function with graph breaks: Python runs, the regions between the breaks run captured.

Note [regions around a graph break]
torch resumes after a break in a new compiled function made from the rest of the bytecode. Here the
function's Python runs on every call (the break needs it: `.item()`, a print, a branch on data),
while the ops the recording saw are intercepted (only those: a handful of sites, so installing them
is cheap). When Python calls the first op of a region, the whole region is computed at once by its
generated function (the unit a fusing backend rewrites); each intercepted call is then *matched*
against the recorded node (same function, grad mode, same argument objects and constants) and gets
its precomputed result. A call that does not match (Python took another path) ends matching for
the rest of this call: it and everything after it run eagerly, and an entry that misses too often
stops matching. Only *pure* regions are computed ahead: a region with an in-place op, a random op,
a custom Function or a tensor handed out by a break runs op by op as Python calls it (still
matched), so that computing ahead can never apply a side effect Python would not have applied.
"""

import math
import threading
import operator

from .. import _C
from .capture import Interception, Ref, Sym, _SIMPLE, _tensor_paths, is_impure
from .graph import Codegen

Tensor = _C.Tensor

MAX_MISSES = 3


class Region:
    def __init__(self, nodes, rec, cg):
        self.start = nodes[0].index
        self.stop = nodes[-1].index + 1
        broken_ext = {e for e, (src, _) in enumerate(rec.externals) if src[0] in ("break", "unknown")}
        uses_broken = any(_uses_ext(n.args, broken_ext) or _uses_ext(n.kwargs, broken_ext) for n in nodes)
        self.speculate = not uses_broken and not any(is_impure(n) for n in nodes)
        self.fn = self.code = None
        if self.speculate:
            self.code, self.fn = _region_source(nodes, cg, self.start)


def _uses_ext(template, ids):
    if isinstance(template, Ref):
        return template.key[0] == "ext" and template.key[1] in ids
    if isinstance(template, (list, tuple)):
        return any(_uses_ext(x, ids) for x in template)
    if isinstance(template, dict):
        return any(_uses_ext(x, ids) for x in template.values())
    if isinstance(template, slice):
        return any(_uses_ext(x, ids) for x in (template.start, template.stop, template.step))
    return False


def _region_source(nodes, cg, start):
    inside = {n.index for n in nodes}
    needed = set()

    def scan(t):
        if isinstance(t, Ref):
            if t.key[0] == "node" and t.key[1] not in inside:
                needed.add(t.key[1])
        elif isinstance(t, Sym):
            _scan_sym(t.expr)
        elif isinstance(t, (list, tuple)):
            for x in t:
                scan(x)
        elif isinstance(t, dict):
            for x in t.values():
                scan(x)
        elif isinstance(t, slice):
            scan(t.start), scan(t.stop), scan(t.step)

    def _scan_sym(e):
        if isinstance(e, tuple):
            if e[0] == "size":
                scan(Ref(e[1]))
            else:
                _scan_sym(e[1]), _scan_sym(e[2])

    for n in nodes:
        scan(n.args), scan(n.kwargs)
    lines = ["def region(inputs, externals, env):"]
    ins, exts = set(), set()

    def collect(t):
        if isinstance(t, Ref):
            (ins if t.key[0] == "in" else exts if t.key[0] == "ext" else set()).add(t.key[1])
        elif isinstance(t, Sym):
            _collect_sym(t.expr)
        elif isinstance(t, (list, tuple)):
            for x in t:
                collect(x)
        elif isinstance(t, dict):
            for x in t.values():
                collect(x)
        elif isinstance(t, slice):
            collect(t.start), collect(t.stop), collect(t.step)

    def _collect_sym(e):
        if isinstance(e, tuple):
            if e[0] == "size":
                collect(Ref(e[1]))
            else:
                _collect_sym(e[1]), _collect_sym(e[2])

    for n in nodes:
        collect(n.args), collect(n.kwargs)
    lines += [f"    i{i} = inputs[{i}]" for i in sorted(ins)]
    lines += [f"    e{e} = externals[{e}]" for e in sorted(exts)]
    lines += [f"    v{k} = env[{k}]" for k in sorted(needed)]
    grad = nodes[0].grad
    body = []
    for n in nodes:
        if n.grad != grad:
            body.append(f"_set_grad({n.grad})")
            grad = n.grad
        body.append(f"env[{n.index}] = v{n.index} = {cg.call(n)}  # {n.name}")
    if grad != nodes[0].grad:
        lines.append("    try:")
        lines += ["        " + b for b in body]
        lines.append("    finally:")
        lines.append(f"        _set_grad({nodes[0].grad})")
    else:
        lines += ["    " + b for b in body]
    src = "\n".join(lines) + "\n"
    scope = dict(cg.scope.globals)
    scope["_set_grad"] = _C._set_grad_enabled
    exec(compile(src, f"<ferrograd.compile region at node {start}>", "exec"), scope)
    return src, scope["region"]


class SegmentedEntry:
    """The regions of a recording with breaks, and the sites to intercept when it runs."""

    def __init__(self, rec):
        self.nodes = rec.nodes
        self.externals_kind = [src[0] for src, _ in rec.externals]
        cg = Codegen(rec.nodes)
        by_region = {}
        for n in rec.nodes:
            by_region.setdefault(n.region, []).append(n)
        self.regions = [Region(nodes, rec, cg) for _, nodes in sorted(by_region.items())]
        self.region_of = {}
        for r in self.regions:
            for k in range(r.start, r.stop):
                self.region_of[k] = r
        keys = {id(n.fn) for n in rec.nodes}
        applies = any(n.name.endswith(".apply") for n in rec.nodes)
        self.sites = [site for site in Interception.plan()
                      if site[4] is not None and not isinstance(site[4], str) and id(site[4]) in keys
                      or (site[4] == "apply" and applies)]
        self.misses = 0
        self.ahead = 0  # regions computed ahead, over all runs (observability, tests)
        self.code = "\n".join(r.code for r in self.regions if r.code)

    def run(self, fn, args, kwargs, flat, externals):
        from . import capture

        if capture._current is not None:
            return fn(*args, **kwargs)
        player = Player(self, flat, externals)
        with Interception(self.sites):
            capture._current = player
            try:
                result = fn(*args, **kwargs)
            finally:
                capture._current = None
        if player.failed or player.pos != len(self.nodes):
            self.misses += 1
        return result


class Player:
    """Stands in for the Recorder while a SegmentedEntry runs (the wrappers call `call`)."""

    def __init__(self, entry, flat, externals):
        self.entry = entry
        self.flat = flat
        self.externals = list(externals)
        self.env = {}
        self.pos = 0
        self.failed = False
        self.depth = 0
        self.thread = threading.get_ident()
        self.active = True
        self.modules = {}
        self.attr_sources = {}
        self.computed = set()
        self.dirty = set()
        self.versions = {}

    def shape_of(self, t, value):
        return value

    def graph_break(self, reason):
        pass

    def call(self, fn, name, args, kwargs, kind):
        self.depth += 1
        try:
            return self._call(fn, name, args, kwargs)
        finally:
            self.depth -= 1

    def _fail(self):
        self.failed = True

    def _call(self, fn, name, args, kwargs):
        if self.failed or self.pos >= len(self.entry.nodes):
            self.failed = True
            return fn(*args, **kwargs)
        node = self.entry.nodes[self.pos]
        region = self.entry.region_of[node.index]
        if node.name != name or not (node.fn is fn or node.fn == fn) or node.grad != _C.is_grad_enabled():
            self.failed = True  # Python took another path: eager from here on
            return fn(*args, **kwargs)
        ahead = region.speculate and region.start not in self.dirty
        if ahead and region.start not in self.computed:
            self.computed.add(region.start)
            try:
                region.fn(self.flat, self.externals, self.env)
            except Exception:
                self.failed = True
                return fn(*args, **kwargs)
            self.entry.ahead += 1
            for k in range(region.start, region.stop):
                for _, t in _tensor_paths(self.env[k]):
                    self.versions[id(t)] = t._version
            for _, t in _tensor_paths((self.flat, self.externals)):
                self.versions.setdefault(id(t), t._version)
        if not (self._match(node.args, args) and self._match(node.kwargs, kwargs)):
            if not self._same_refs(node.args, args) or not self._same_refs(node.kwargs, kwargs):
                self.failed = True
                return fn(*args, **kwargs)
            # only Python constants differ (say, a value read by `.item()`): run this node and the
            # rest of its region as Python asks, and go on matching
            self.dirty.add(region.start)
            ahead = False
        self.pos += 1
        if ahead:
            return self.env[node.index]
        result = fn(*args, **kwargs)
        self.env[node.index] = result
        return result

    def _same_refs(self, tmpl, actual):
        """Whether the tensor arguments are still the recorded ones (constants may differ)."""
        if isinstance(tmpl, Ref):
            return self._match(tmpl, actual)
        if isinstance(tmpl, (list, tuple)) and isinstance(actual, (list, tuple)) and len(tmpl) == len(actual):
            return all(self._same_refs(a, b) for a, b in zip(tmpl, actual))
        if isinstance(tmpl, dict) and type(actual) is dict and tmpl.keys() == actual.keys():
            return all(self._same_refs(tmpl[k], actual[k]) for k in tmpl)
        return not isinstance(actual, Tensor) and not _has_ref(tmpl)

    def _value(self, key):
        if key[0] == "in":
            return self.flat[key[1]]
        if key[0] == "ext":
            return self.externals[key[1]]
        v = self.env.get(key[1], _ABSENT)
        if v is _ABSENT:
            return _ABSENT
        for p in self.entry.nodes[key[1]].out_paths[key[2]]:
            v = v[p]
        return v

    def _sym(self, e):
        if isinstance(e, int):
            return e
        if e[0] == "size":
            t = self._value(e[1])
            return _ABSENT if t is _ABSENT else t.shape[e[2]]
        a, b = self._sym(e[1]), self._sym(e[2])
        if a is _ABSENT or b is _ABSENT:
            return _ABSENT
        return _OPS[e[0]](a, b)

    def _match(self, tmpl, actual):
        if isinstance(tmpl, Ref):
            if tmpl.key[0] == "ext" and self.entry.externals_kind[tmpl.key[1]] in ("break", "unknown"):
                return isinstance(actual, Tensor)
            if actual is not self._value(tmpl.key):
                return False
            v = self.versions.get(id(actual))
            return v is None or actual._version == v  # mutated since the region was computed: no
        if isinstance(tmpl, Sym):
            return type(actual) is int and actual == self._sym(tmpl.expr) if not isinstance(actual, bool) else False
        if isinstance(tmpl, (list, tuple)):
            if not isinstance(actual, (list, tuple)) or len(actual) != len(tmpl) or \
                    isinstance(actual, list) != isinstance(tmpl, list):
                return False
            return all(self._match(a, b) for a, b in zip(tmpl, actual))
        if isinstance(tmpl, dict):
            return type(actual) is dict and actual.keys() == tmpl.keys() and \
                all(self._match(tmpl[k], actual[k]) for k in tmpl)
        if isinstance(tmpl, slice):
            return type(actual) is slice and self._match(tmpl.start, actual.start) and \
                self._match(tmpl.stop, actual.stop) and self._match(tmpl.step, actual.step)
        if isinstance(actual, Tensor):
            return False
        if type(tmpl) in _SIMPLE:
            if type(actual) is not type(tmpl):
                return False
            if type(tmpl) is float and math.isnan(tmpl):
                return math.isnan(actual)
            return actual == tmpl
        return actual is tmpl


_ABSENT = object()
_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def _has_ref(t):
    if isinstance(t, Ref):
        return True
    if isinstance(t, (list, tuple)):
        return any(_has_ref(x) for x in t)
    if isinstance(t, dict):
        return any(_has_ref(x) for x in t.values())
    if isinstance(t, slice):
        return any(_has_ref(x) for x in (t.start, t.stop, t.step))
    return False
