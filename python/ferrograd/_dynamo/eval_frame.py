"""The compiled-function object: its cache of entries, the guard check on every call, recompiles,
the recompile limit, automatic dynamic shapes, and torch's OptimizedModule.

A call of a compiled function flattens its arguments (tuples, lists, dicts; tensors and Python
values), then asks each cache entry's guards in turn; the first entry whose guards hold replays its
graph. A miss records a new entry (see capture.py) by running the function for real, so the call
that compiles returns eager's result. Entries whose recording met a graph break replay nothing:
they run the function eagerly (the break reasons stay visible through the logs and `explain`).
"""

import copy
import functools
import logging
import time
import weakref

from .. import _C, _logging
from . import capture, config, exc, segmented
from .graph import generate_guards, generate_replay, live_nodes

Tensor = _C.Tensor
log = logging.getLogger("ferrograd._dynamo")

_frames = weakref.WeakSet()   # every CompiledFrame, for reset()
_disabled_depth = 0           # >0 inside `compiler.disable`d code
stance = "default"            # compiler.set_stance
compile_times = {}            # stage -> [seconds, ...] (record, graph, guards), all frames


_marks = {}  # id(tensor) -> (weakref, {dim: dynamic?}) from mark_dynamic / mark_static


def mark(t, index, dynamic):
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor, got {type(t).__name__}")
    dims = [index] if isinstance(index, int) else list(index)
    key = id(t)
    entry = _marks.get(key)
    if entry is None or entry[0]() is not t:
        entry = _marks[key] = (weakref.ref(t, lambda _, key=key: _marks.pop(key, None)), {})
    for d in dims:
        if not -t.dim() <= d < max(t.dim(), 1):
            raise IndexError(f"dimension {d} out of range for a {t.dim()}-d tensor")
        entry[1][d % max(t.dim(), 1)] = dynamic


def _marked(t):
    entry = _marks.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else {}


def _flatten(obj, out):
    """Append the leaves of `obj` to `out`; return its structure (part of the guards)."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return "T"
    t = type(obj)
    if t is list or (isinstance(obj, tuple) and t is not _size_type()):
        return (t, tuple(_flatten(x, out) for x in obj))
    if t is dict:
        return (dict, tuple(obj.keys()), tuple(_flatten(v, out) for v in obj.values()))
    out.append(obj)
    return "V"


@functools.lru_cache(maxsize=None)
def _size_type():
    from .._size import Size

    return Size


def _simple_globals(fn):
    """(globals, names) of the compiled function's plain-valued globals, guarded by value."""
    f = getattr(fn, "__func__", fn)
    code, g = getattr(f, "__code__", None), getattr(f, "__globals__", None)
    if code is None or g is None:
        return None
    from .capture import _SIMPLE

    names = [n for n in code.co_names if n in g and type(g[n]) in _SIMPLE]
    return (g, names) if names else None


class CacheEntry:
    """One capture: its guards and its replay (None for an entry whose capture met a graph break)."""

    def __init__(self):
        self.guards = None
        self.guard_code = ""
        self.guard_text = []
        self.replay = None
        self.segmented = None  # the regions of an entry with graph breaks (segmented.py)
        self.graph_code = ""
        self.breaks = []
        self.ops = []
        self.shapes = {}
        self.regions = [[]]
        self.t_record = self.t_graph = self.t_guards = 0.0


class CompiledFrame:
    """What `ferrograd.compile(fn)` calls: the cache of one function."""

    def __init__(self, fn, fullgraph=False, dynamic=None, backend="inductor", name=None):
        self.fn = fn
        self._name = name
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.entries = []
        self.dynamic_dims = {}  # input index -> dims made symbolic (dynamic=True or automatic dynamic)
        self.first_shapes = None
        self.warned_limit = False
        _frames.add(self)

    @property
    def name(self):
        if self._name:
            return self._name
        return getattr(self.fn, "__qualname__", None) or getattr(self.fn, "__name__", repr(self.fn))

    def __deepcopy__(self, memo):
        """A copy (of an OptimizedModule, say) compiles afresh for the copied function: the entries
        guard and fetch the original's modules and parameters."""
        return CompiledFrame(copy.deepcopy(self.fn, memo), self.fullgraph, self.dynamic, self.backend, self._name)

    def reset(self):
        self.entries.clear()
        self.dynamic_dims.clear()
        self.first_shapes = None
        self.warned_limit = False

    def __call__(self, *args, **kwargs):
        if _disabled_depth or capture._current is not None or stance == "force_eager":
            # disabled; inlined into this thread's capture; or another thread is capturing
            return self.fn(*args, **kwargs)  # disabled, or inlined into an enclosing capture
        flat = []
        spec = _flatten((args, kwargs), flat)
        for entry in self.entries:
            ok, externals = entry.guards(flat, spec)
            if ok:
                if entry.replay is not None:
                    return entry.replay(flat, externals)
                seg = entry.segmented
                if seg is not None and seg.misses < segmented.MAX_MISSES:
                    return seg.run(self.fn, args, kwargs, flat, externals)
                return self.fn(*args, **kwargs)
        return self._miss(args, kwargs, flat, spec)

    def _miss(self, args, kwargs, flat, spec):
        if self.entries:
            def failures():
                return [e.why(flat, spec) for e in self.entries]
            if stance == "eager_on_recompile":
                return self.fn(*args, **kwargs)
            if config.error_on_recompile or stance == "fail_on_recompile":
                raise exc.RecompileError(f"Recompiling function {self.name}: guard failed: {failures()[-1]}")
            if len(self.entries) >= config.recompile_limit:
                if not self.warned_limit:
                    self.warned_limit = True
                    log.warning(
                        f"ferrograd.compile hit config.recompile_limit ({config.recompile_limit})\n"
                        f"   function: {self.name!r}\n   last reason: {failures()[-1]}\n"
                        "To log all recompilation reasons, use TORCH_LOGS=\"recompiles\".")
                return self.fn(*args, **kwargs)
            if _logging.enabled("recompiles"):
                _logging.emit("recompiles", f"Recompiling function {self.name}, triggered by the guard failure(s):"
                              + "".join(f"\n    - {i}: {r}" for i, r in enumerate(failures())))
            self._update_dynamic(flat)
        else:
            if self.dynamic is True:
                for i, v in enumerate(flat):
                    if isinstance(v, Tensor):
                        self.dynamic_dims[i] = set(range(v.dim()))
            self.first_shapes = {i: tuple(v.shape) for i, v in enumerate(flat) if isinstance(v, Tensor)}
        return self._compile(args, kwargs, flat, spec)

    def _update_dynamic(self, flat):
        if self.dynamic is False or not config.automatic_dynamic_shapes or self.first_shapes is None:
            return
        for i, v in enumerate(flat):
            old = self.first_shapes.get(i)
            if isinstance(v, Tensor) and old is not None and len(old) == v.dim():
                changed = {d for d, (a, b) in enumerate(zip(old, v.shape)) if a != b}
                new = changed - self.dynamic_dims.get(i, set())
                if new:
                    self.dynamic_dims.setdefault(i, set()).update(new)
                    _logging.emit("dynamic", f"{self.name}: input {i} dims {sorted(new)} changed size: "
                                  "recompiling with them symbolic")

    def _compile(self, args, kwargs, flat, spec):
        wanted = {i: set(dims) for i, dims in self.dynamic_dims.items() if isinstance(flat[i], Tensor)}
        for i, v in enumerate(flat):
            if isinstance(v, Tensor) and _marks:
                for d, dynamic in _marked(v).items():
                    (wanted.setdefault(i, set()).add if dynamic else wanted.setdefault(i, set()).discard)(d)
        dyn = {i: {d for d in dims if flat[i].shape[d] not in (0, 1)} for i, dims in wanted.items()}
        t0 = time.perf_counter()
        try:
            result, rec = capture.record(self.fn, args, kwargs, flat, dyn, self.fullgraph)
        except capture.GraphBreak as e:
            reason, where = e.args
            raise exc.Unsupported(f"graph break in {self.name} (fullgraph=True): {reason}\n  at {where}") from None
        t1 = time.perf_counter()
        entry = CacheEntry()
        try:
            self._build(entry, rec, result, flat, spec, dyn)
        except capture.GraphBreak as e:
            raise exc.Unsupported(f"graph break in {self.name} (fullgraph=True): {e.args[0]}\n  at {e.args[1]}") \
                from None
        except Exception as e:  # a bug of the compiler itself, not of the user's function
            if not config.suppress_errors:
                raise exc.InternalTorchDynamoError(f"ferrograd.compile failed on {self.name}: "
                                                   f"{type(e).__name__}: {e}") from e
            log.warning(f"ferrograd.compile failed on {self.name} ({type(e).__name__}: {e}); running eagerly")
            entry.replay = None
            entry.breaks = [(f"internal error: {e}", "")]
        t3 = time.perf_counter()
        entry.t_record = t1 - t0
        self.entries.append(entry)
        stages = {"record": t1 - t0, "graph": entry.t_graph, "guards": entry.t_guards}
        for k, v in stages.items():
            compile_times.setdefault(k, []).append(v)
        _logging.info(f"{self.name}: entry {len(self.entries) - 1}: {len(entry.ops)} ops, "
                      f"{len(entry.breaks)} graph breaks; record {1e3 * stages['record']:.2f} ms, graph "
                      f"{1e3 * stages['graph']:.2f} ms, guards {1e3 * stages['guards']:.2f} ms "
                      f"(total {1e3 * (t3 - t0):.2f} ms)")
        return result

    def _build(self, entry, rec, result, flat, spec, dyn):
        entry.t_graph = entry.t_guards = 0.0
        entry.ops = [n.name for n in rec.nodes]
        out = None
        rec.depth += 1
        try:
            out = rec.template(result)
        except capture._Unknown:
            rec.graph_break("the function returned a tensor whose origin was not recorded")
        finally:
            rec.depth -= 1
        if not _rebuildable(result):
            rec.graph_break(f"the function returned a {type(result).__name__}, which the graph cannot rebuild")
        root = getattr(self.fn, "__self__", None)
        from ..nn.modules.module import Module

        if isinstance(root, Module):
            rec.modules.setdefault(id(root), root)
        for m in rec.modules.values():
            if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
                rec.graph_break(f"module {type(m).__name__} has hooks (they run in Python)")
                break
        entry.breaks = list(rec.breaks)
        entry.regions = [[] for _ in range(len(entry.breaks) + 1)]
        for n in rec.nodes:
            entry.regions[n.region].append(n.name)
        for reason, where in entry.breaks:
            _logging.emit("graph_breaks", f"Graph break in {self.name}: {reason}\n    at {where}")
        input_dims = {} if rec.all_static else {
            i: {d for d in dims if (i, d) not in rec.specialised} for i, dims in dyn.items()}
        input_dims = {i: d for i, d in input_dims.items() if d}
        if input_dims:
            _logging.emit("dynamic", f"{self.name}: symbolic dims {input_dims}")
        entry.shapes = {i: tuple(v.shape) for i, v in enumerate(flat) if isinstance(v, Tensor)}
        t0 = time.perf_counter()
        if not entry.breaks:
            tensor_inputs = [i for i, v in enumerate(flat) if isinstance(v, Tensor)]
            live = live_nodes(rec.nodes, out)
            if len(live) != len(rec.nodes):
                _logging.info(f"{self.name}: {len(rec.nodes) - len(live)} ops whose values are unused are not replayed")
            rec.nodes = live
            if callable(self.backend):
                from .backends import compile_with_backend

                gm, entry.replay = compile_with_backend(self.backend, rec, out, tensor_inputs, flat)
                entry.graph_code = gm.code
            else:
                entry.graph_code, entry.replay = generate_replay(rec, out, tensor_inputs)
        elif rec.nodes and not any(src[0] == "unknown" for src, _ in rec.externals):
            entry.segmented = segmented.SegmentedEntry(rec)
            entry.graph_code = entry.segmented.code
        if entry.graph_code:
            _logging.emit("graph_code", f"Captured graph of {self.name} (entry {len(self.entries)}):\n"
                          + entry.graph_code)
        t1 = time.perf_counter()
        entry.guard_code, entry.guards, entry.guard_text, entry.why = generate_guards(
            rec, flat, spec, input_dims, _simple_globals(self.fn), _aliases(flat))
        t2 = time.perf_counter()
        entry.t_graph, entry.t_guards = t1 - t0, t2 - t1
        _logging.emit("guards", f"Guards of {self.name} (entry {len(self.entries)}):\n"
                      + "\n".join("    " + g for g in entry.guard_text))


def _aliases(flat):
    """Pairs (i, j) of input positions holding the same tensor object (guarded to stay so)."""
    first, pairs = {}, []
    for i, v in enumerate(flat):
        if isinstance(v, Tensor):
            j = first.setdefault(id(v), i)
            if j != i:
                pairs.append((j, i))
    return pairs


def _rebuildable(value):
    if isinstance(value, Tensor) or type(value) in capture._SIMPLE or value is None:
        return True
    if isinstance(value, (tuple, list)):
        return all(_rebuildable(v) for v in value)
    if type(value) is dict:
        return all(_rebuildable(v) for v in value.values())
    if type(value) is slice:
        return True
    return False


def reset():
    """Forget every compiled entry (torch._dynamo.reset / torch.compiler.reset)."""
    for frame in list(_frames):
        frame.reset()
    compile_times.clear()


# ---- the public wrappers --------------------------------------------------------------------------

def compiled_function(fn, **options):
    """`fn` compiled: a function with fn's name and docstring, as torch.compile returns."""
    frame = CompiledFrame(fn, **options)

    @functools.wraps(fn)
    def compiled(*args, **kwargs):
        return frame(*args, **kwargs)

    compiled._torchdynamo_orig_callable = fn
    compiled._ferrograd_frame = frame
    return compiled


def _optimized_module_class():
    from ..nn.modules.module import Module

    class OptimizedModule(Module):
        """torch._dynamo.eval_frame.OptimizedModule: wraps a module; calls go through the compiled
        forward; attributes, parameters and state_dict are the original's (keys prefixed `_orig_mod.`)."""

        _torchdynamo_orig_callable = None

        def __init__(self, mod, **options):
            super().__init__()
            self._orig_mod = mod
            self.__dict__["_frame"] = CompiledFrame(mod.__call__, name=f"{type(mod).__name__}.forward", **options)
            self.training = mod.training

        def forward(self, *args, **kwargs):
            return self._frame(*args, **kwargs)

        def __call__(self, *args, **kwargs):
            return self._frame(*args, **kwargs) if not (self._forward_hooks or self._forward_pre_hooks) \
                else self._call_impl(*args, **kwargs)

        def __getattr__(self, name):
            if name == "_orig_mod":
                return self._modules["_orig_mod"]
            return getattr(self._modules["_orig_mod"], name)

        def __setattr__(self, name, value):
            if name in ("_orig_mod", "training") or "_frame" not in self.__dict__ or name in self.__dict__:
                Module.__setattr__(self, name, value)
            else:
                setattr(self._modules["_orig_mod"], name, value)

        @property
        def _torchdynamo_orig_callable(self):
            return self._orig_mod

        def get_compiler_config(self):
            return None

    OptimizedModule.__module__ = "ferrograd._dynamo.eval_frame"
    return OptimizedModule


_om = None


def __getattr__(name):
    global _om
    if name == "OptimizedModule":
        if _om is None:
            _om = _optimized_module_class()
        return _om
    raise AttributeError(name)


def is_compiling():
    return capture.current() is not None

