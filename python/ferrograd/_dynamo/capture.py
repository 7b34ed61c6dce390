"""Capture: run the user's function once on its real tensors and record every ferrograd op it calls.

Note [capture by recording real calls]
torch.compile reads the function's bytecode (dynamo). ferrograd records instead: while the first
call of a compiled function runs normally, the public ferrograd functions (in every ferrograd
namespace, so names imported by the library's own modules are seen too), the Tensor methods,
operators and tensor-valued properties, `autograd.Function.apply` and `Module.__getattr__` are
temporarily replaced by recording wrappers (as ferrograd.fx's tracer does). The outermost call of
each op is recorded (the ops a composite like `F.layer_norm` calls inside are its own business),
with its arguments turned into references: to an input of the call, to an output of an earlier
node, to an *external* tensor found by its source (a module's parameter or buffer, a global or a
closure variable of the function, fetched again at every call), a symbolic size, or a constant.
Recording on real tensors means every value Python reads is real (shapes, branches on sizes), so
no Python feature is unsupported: what the recording cannot see becomes a *graph break* instead.

A graph break is where the trace cannot stand in for Python: Python needs a value computed from
tensor data (`.item()`, `bool(t)`, `.tolist()`, printing a tensor), a call is not a ferrograd op
(it returns a Python value, or hands out a tensor of unknown origin), a module has hooks, or the
function returns an object the trace cannot rebuild. The call that is recording simply goes on
eagerly (it is a real run), and the breaks are reported with their reasons and source lines.
"""

import builtins
import threading
import functools
import importlib
import sys
import traceback
import types

from .. import _C
from .symbolic import SymInt, expr_refs

Tensor = _C.Tensor
_ident = threading.get_ident

# Tensor methods whose result is a Python value computed from data (or a side effect Python must
# see): a graph break. torch's dynamo breaks on the same ones.
BREAK_METHODS = {
    "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "__complex__", "__repr__",
    "__str__", "__format__", "__array__", "data_ptr", "backward", "register_hook", "retain_grad",
    "requires_grad_", "equal", "allclose", "is_nonzero", "is_set_to", "set_", "resize_", "resize_as_", "share_memory_",
    "untyped_storage", "storage", "__dlpack__", "__reduce_ex__", "__deepcopy__", "__setstate__",
    "register_post_accumulate_grad_hook",
}
# ferrograd functions that are graph breaks although they return tensors or None.
BREAK_FUNCTIONS = {"backward", "manual_seed", "seed", "set_rng_state", "save", "load", "set_printoptions",
                   "set_default_dtype", "set_num_threads", "use_deterministic_algorithms", "set_grad_enabled"}
# calls that return Python values fixed by the inputs' metadata (guarded), not by their data.
QUERIES = {
    "size", "dim", "ndimension", "numel", "nelement", "stride", "storage_offset", "is_contiguous",
    "is_floating_point", "is_complex", "is_signed", "element_size", "get_device", "type", "__len__", "__hash__",
    "is_inference", "has_names", "is_tensor", "is_grad_enabled", "get_default_dtype", "promote_types",
    "result_type", "can_cast", "finfo", "iinfo", "is_autocast_enabled", "get_autocast_dtype", "is_storage",
    "is_pinned", "is_shared", "dim_order", "__eq__", "__ne__",
}
# Tensor attributes never wrapped (object protocol, not ops).
_SKIP_ATTRS = {"__new__", "__init__", "__getattribute__", "__setattr__", "__delattr__", "__class__",
               "__init_subclass__", "__subclasshook__", "__reduce__", "__sizeof__", "__dir__", "__getstate__",
               "__torch_function__", "__doc__", "__module__", "__array_priority__",
               "__array_interface__", "__array_wrap__", "__copy__"}
_TENSOR_PROPERTIES = ("T", "mT", "H", "mH", "data", "real", "imag")
_SIZE_QUERIES = ("size", "numel", "nelement", "__len__", "stride")
_NAMESPACES = ("ferrograd", "ferrograd.nn.functional", "ferrograd.linalg", "ferrograd.special", "ferrograd.fft",
               "ferrograd.autograd")
_SIMPLE = (int, float, bool, str, complex, type(None), type(Ellipsis), _C.dtype, _C.device)


RANDOM = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rand",
          "randn", "randint", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial", "normal",
          "randperm", "poisson", "rrelu", "gumbel_softmax", "uniform_", "normal_", "exponential_", "geometric_",
          "cauchy_", "log_normal_", "random_", "bernoulli_"}


def is_impure(node):
    """Whether a recorded call has an effect besides its result: in-place, random, `out=`, a custom
    Function (user code), autograd calls."""
    name = node.name
    return (name in RANDOM or name.endswith(".apply") or name == "__setitem__" or name.startswith("__i")
            or (name.endswith("_") and not name.startswith("__")) or name in ("grad", "backward")
            or (isinstance(node.kwargs, dict) and "out" in node.kwargs))


class GraphBreak(Exception):
    """Raised inside the recording wrappers when fullgraph=True asks for an error at the first break."""


class Ref:
    """A graph value in an argument template: ('in', i), ('node', k, j) or ('ext', e)."""

    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"Ref{self.key}"


class Sym:
    """A symbolic size in an argument template (its expression; see symbolic.py)."""

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr


class Node:
    """One recorded call: fn(*args, **kwargs) with templates for the arguments, the grad mode it ran
    under, and the paths (index tuples) of the tensors in its result."""

    __slots__ = ("fn", "name", "args", "kwargs", "grad", "out_paths", "index", "region")

    def __init__(self, fn, name, args, kwargs, grad, out_paths, index, region):
        self.fn, self.name, self.args, self.kwargs = fn, name, args, kwargs
        self.grad, self.out_paths, self.index, self.region = grad, out_paths, index, region


def user_location():
    """'file:line in function' of the innermost frame outside ferrograd, for break reports."""
    for frame in reversed(traceback.extract_stack()):
        if "/ferrograd/" not in frame.filename.replace("\\", "/"):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return "<unknown>"


def _tensor_paths(value, path=()):
    """Yield (path, tensor) for the tensors in a result (tuples, lists, namedtuples, dict values)."""
    if isinstance(value, Tensor):
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            yield from _tensor_paths(v, path + (i,))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _tensor_paths(v, path + (k,))


def _has_tensor(value):
    return next(_tensor_paths(value), None) is not None


class Recorder:
    """The state of one capture (see Note [capture by recording real calls])."""

    def __init__(self, fn, dynamic_inputs, fullgraph):
        self.fn = fn
        self.nodes = []
        self.refs = {}       # id(tensor) -> Ref
        self.keep = []       # every tensor seen, kept alive so that ids stay unique while recording
        self.externals = []  # (source, tensor)
        self.attr_sources = {}  # id(tensor) -> (module, name) seen through Module.__getattr__
        self.modules = {}    # id(module) -> module, every module whose attributes forward read
        self.breaks = []     # (reason, location)
        self.dynamic_inputs = dynamic_inputs  # input index -> set of dims that are symbolic
        self.specialised = set()  # (input index, dim) made static by a Python use
        self.all_static = False
        self.fullgraph = fullgraph
        self.depth = 0
        self.thread = _ident()  # the interception is process-wide; other threads pass through
        self.active = True  # False once fullgraph's error is raised

    # ---- references -------------------------------------------------------------------------

    def add_input(self, i, t):
        self.keep.append(t)
        self.refs[id(t)] = Ref(("in", i))

    def _external_source(self, t):
        src = self.attr_sources.get(id(t))
        if src is not None:
            return ("attr",) + src
        for m in self.modules.values():  # a tensor kept as a plain module attribute (a cached mask)
            for name, v in m.__dict__.items():
                if v is t:
                    return ("attr", m, name)
        fn = getattr(self.fn, "__func__", self.fn)
        code = getattr(fn, "__code__", None)
        if code is not None:
            for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
                try:
                    if cell.cell_contents is t:
                        return ("cell", cell, name)
                except ValueError:
                    continue
            g = getattr(fn, "__globals__", {})
            for name in code.co_names:
                if g.get(name) is t:
                    return ("global", g, name)
        return None

    def ref_of(self, t):
        """The Ref of a tensor argument; a new external for a tensor with a known source; None when
        its origin is unknown (a graph break)."""
        r = self.refs.get(id(t))
        if r is not None:
            return r
        src = self._external_source(t)
        if src is None:
            return None
        r = Ref(("ext", len(self.externals)))
        self.externals.append((src, t))
        self.keep.append(t)
        self.refs[id(t)] = r
        return r

    def template(self, value):
        """An argument turned into a template; raises _Unknown for a tensor of unknown origin."""
        if isinstance(value, Tensor):
            r = self.ref_of(value)
            if r is None:
                raise _Unknown()
            return r
        if isinstance(value, SymInt):
            return Sym(value.expr)
        t = type(value)
        if t is _size_type() and not any(isinstance(v, SymInt) for v in value):
            return value
        if t in (list, tuple) or (isinstance(value, tuple) and not hasattr(value, "_fields")):
            items = [self.template(v) for v in value]
            return items if t is list else tuple(items)
        if isinstance(value, tuple):  # a namedtuple
            return t(*[self.template(v) for v in value])
        if t is dict:
            return {k: self.template(v) for k, v in value.items()}
        if t is slice:
            return slice(self.template(value.start), self.template(value.stop), self.template(value.step))
        return value

    # ---- symbolic sizes ---------------------------------------------------------------------

    def sym_size(self, t, dim, value):
        """x.shape[dim] as a SymInt where the dim is symbolic in this trace, else the plain int."""
        r = self.refs.get(id(t))
        if r is None or value in (0, 1) or self.all_static:
            return value
        if r.key[0] == "in":
            if dim not in self.dynamic_inputs.get(r.key[1], ()) or (r.key[1], dim) in self.specialised:
                return value
        elif r.key[0] != "node" or not self._any_dynamic():
            return value
        return SymInt(value, ("size", r.key, dim), self)

    def _any_dynamic(self):
        return any(dims for dims in self.dynamic_inputs.values())

    def specialise(self, expr):
        for leaf in expr_refs(expr, []):
            key, dim = leaf[1], leaf[2]
            if key[0] == "in":
                self.specialised.add((key[1], dim))
            else:
                self.all_static = True

    def specialise_tensor(self, t):
        """A use that depends on all of a tensor's sizes (its strides, its len)."""
        r = self.refs.get(id(t))
        if r is None:
            return
        if r.key[0] == "in":
            for d in self.dynamic_inputs.get(r.key[1], ()):
                self.specialised.add((r.key[1], d))
        elif r.key[0] == "node":
            self.all_static = True

    # ---- breaks -----------------------------------------------------------------------------

    def graph_break(self, reason):
        where = user_location()
        if self.fullgraph:
            self.active = False
            raise GraphBreak(reason, where)
        self.breaks.append((reason, where))  # recording goes on: the next region starts here

    def _adopt(self, value, why):
        """Tensors handed out by a break (or of unknown origin) become externals of kind `why`, so
        that what follows is still recorded (for the report; a broken entry does not replay)."""
        for _, t in _tensor_paths(value):
            if id(t) not in self.refs:
                self.refs[id(t)] = Ref(("ext", len(self.externals)))
                self.externals.append(((why,), t))
                self.keep.append(t)

    # ---- the recording of one call ----------------------------------------------------------

    def call(self, fn, name, args, kwargs, kind):
        self.depth += 1  # the recorder's own tensor calls are not recorded
        try:
            return self._call(fn, name, args, kwargs, kind)
        finally:
            self.depth -= 1

    def _call(self, fn, name, args, kwargs, kind):
        if name in BREAK_METHODS or (kind == "function" and (name in BREAK_FUNCTIONS or name.startswith(_C_STATE))):
            self.graph_break(f"{_describe(name, kind)} needs a Python value (or a side effect) from tensor data")
            result = fn(*args, **kwargs)
            self._adopt(result, "break")
            return result
        try:
            targs, tkwargs = self.template(args), self.template(kwargs)
        except _Unknown:
            self.graph_break(f"{_describe(name, kind)} received a tensor whose origin was not recorded "
                             "(made by a call ferrograd.compile does not capture)")
            self._adopt((args, kwargs), "unknown")
            targs, tkwargs = self.template(args), self.template(kwargs)
        grad = _C.is_grad_enabled()
        result = fn(*args, **kwargs)
        if result is NotImplemented:
            return result
        paths = list(_tensor_paths(result))
        if not paths and result is not None:
            if name in QUERIES:
                return self._query(name, args, result)
            if not _has_tensor((args, kwargs)):
                return result  # a function of Python values only: a constant of this trace
            self.graph_break(f"{_describe(name, kind)} returned a Python value ({type(result).__name__})")
            return result
        index = len(self.nodes)
        self.nodes.append(Node(fn, name, targs, tkwargs, grad, [p for p, _ in paths], index, len(self.breaks)))
        for j, (_, t) in enumerate(paths):
            self.keep.append(t)
            self.refs[id(t)] = Ref(("node", index, j))
        return result

    def _query(self, name, args, result):
        t = args[0] if args and isinstance(args[0], Tensor) else None
        if t is None or not self._any_dynamic():
            return result
        if name == "size":
            if len(args) > 1:
                d = args[1] % t.dim() if isinstance(args[1], int) else None
                return self.sym_size(t, d, result) if d is not None else result
            return type(result)(self.sym_size(t, d, v) for d, v in enumerate(result))
        if name in ("numel", "nelement"):
            sizes = [self.sym_size(t, d, v) for d, v in enumerate(t.shape)]
            out = 1
            for s in sizes:
                out = s * out
            return out
        if name in ("stride", "__len__"):
            self.specialise_tensor(t)
        return result

    def shape_of(self, t, value):
        if not self._any_dynamic():
            return value
        return type(value)(self.sym_size(t, d, v) for d, v in enumerate(value))


def _size_type():
    from .._size import Size

    return Size


class _Unknown(Exception):
    pass


def _describe(name, kind):
    return f"Tensor.{name}()" if kind == "method" else f"{name}()"


# ---- the interception ---------------------------------------------------------------------------

_current = None  # the Recorder of the capture running now (captures do not nest)


def current():
    """The capture (Recorder, or segmented Player) running in this thread, or None."""
    rec = _current
    return rec if rec is not None and rec.thread == _ident() else None


def busy_elsewhere():
    """Whether another thread is capturing now (captures are one at a time: this thread runs eagerly)."""
    rec = _current
    return rec is not None and rec.thread != _ident()


def _method_wrapper(orig, name):
    def wrapper(*args, **kwargs):
        rec = _current
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return orig(*args, **kwargs)
        return rec.call(orig, name, args, kwargs, "method")
    wrapper.__name__ = name
    return wrapper


def _iter_wrapper(orig, unbind):
    def __iter__(self):
        rec = _current
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return orig(self)
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        rec.specialise_tensor(self)
        return iter(rec.call(unbind, "unbind", (self, 0), {}, "method"))
    return __iter__


def _property_wrapper(desc, name):
    if isinstance(desc, property):
        get, setter = desc.fget, desc.fset
    else:
        def get(t):
            return desc.__get__(t, Tensor)

        def setter(t, value):
            desc.__set__(t, value)
    get.__name__ = name

    def fget(self):
        rec = _current
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return get(self)
        return rec.call(get, name, (self,), {}, "method")
    fget._get = get
    return property(fget, setter)


def _shape_wrapper(desc):
    def fget(self):
        value = desc.__get__(self, Tensor)
        rec = _current
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return value
        rec.depth += 1
        try:
            return rec.shape_of(self, value)
        finally:
            rec.depth -= 1
    return property(fget)


def _function_wrapper(orig, name):
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        rec = _current
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return orig(*args, **kwargs)
        return rec.call(orig, name, args, kwargs, "function")
    wrapper.__dynamo_original__ = orig
    return wrapper


def _print_wrapper(orig):
    def print(*args, **kwargs):
        rec = _current
        if rec is not None and not rec.depth and rec.active and rec.thread == _ident():
            # as torch's: a print is a graph break, so that it prints on every call
            rec.graph_break("print() needs its values" if _has_tensor((args, kwargs)) else "print() is a side effect")
        return orig(*args, **kwargs)
    return print


def _range_wrapper(orig):
    def range_(*args):
        if any(isinstance(a, SymInt) for a in args):
            args = tuple(int(a) for a in args)  # specialises (Note [specialising a symbolic size])
        return orig(*args)
    return range_


# native functions that only read settings (grad mode is recorded per node): not intercepted at all
_C_SILENT = {"_set_grad_enabled", "is_grad_enabled", "_get_default_dtype", "_promote_types", "_result_type",
             "_can_cast", "_parse_arg", "_build_info", "_graph_stats", "_cuda_is_available", "_cuda_device_count",
             "_cuda_device_name", "_cuda_capability", "_nccl_available", "_nccl_version", "_cuda_nvrtc_present",
             "_cuda_has_kernels", "_profiler_enabled", "_function_record", "is_anomaly_enabled",
             "is_anomaly_check_nan_enabled", "get_num_threads", "_cuda_set_python_paths"}
# the other native functions that change state Python must see happen: graph breaks
_C_STATE = ("_set_", "_nccl", "_fused_", "set_", "_cuda", "_after_fork", "manual_seed", "seed", "initial_seed",
            "_enter", "_exit", "_push", "_pop", "_autocast", "_anomaly", "_engine", "_profiler", "_record",
            "_grad_mode", "_enable", "_disable", "_tape", "_hooks", "_register")


def _function_targets():
    """id -> (function, name) of every public ferrograd function a capture records, and of the
    native module's functions the library's own modules call directly (`_C.cat`, `_C.zeros`, ...),
    except those that change or read global state (grad mode, seeds, devices, hooks)."""
    table = {}
    for name, obj in vars(_C).items():
        if name.startswith("__") or isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            continue
        if name in _C_SILENT:
            continue
        table.setdefault(id(obj), (obj, name))
    for ns in _NAMESPACES:
        try:
            mod = importlib.import_module(ns)
        except ImportError:
            continue
        for name, obj in vars(mod).items():
            # private helpers of the Python namespaces are not ops: the ops inside them are recorded
            if name.startswith("_") or isinstance(obj, (type, types.ModuleType)) or not callable(obj):
                continue
            if getattr(obj, "__dynamo_original__", None) is not None:
                continue
            table.setdefault(id(obj), (obj, name))
    return table


class Interception:
    """Installs the recording wrappers for the duration of a `with` block and restores everything.
    The plan (which dict entries and class attributes to replace, by which wrapper) is computed once
    and again only when new modules were imported; installing it is then a few thousand stores."""

    _plan = None
    _plan_modules = -1

    def __init__(self, sites=None):
        self._undo = []
        self._sites = sites

    @staticmethod
    def plan():
        if Interception._plan is None or Interception._plan_modules != len(sys.modules):
            Interception._plan = _make_plan()
            Interception._plan_modules = len(sys.modules)
        return Interception._plan

    def __enter__(self):
        sites = self.plan() if self._sites is None else self._sites
        undo = self._undo
        try:
            for obj, name, orig, new, _ in sites:
                if isinstance(obj, dict):
                    if obj.get(name, _MISSING) is not orig:
                        continue  # rebound since the plan was made: leave it alone
                    obj[name] = new
                else:
                    setattr(obj, name, new)
                undo.append((obj, name, orig))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        while self._undo:
            obj, name, old = self._undo.pop()
            if isinstance(obj, dict):
                obj[name] = old
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        return False


def _make_plan():
    """[(dict or class, name, original, replacement, key)] for every site Note [capture by recording
    real calls] names; `key` is what a Node records as its `fn` for calls through that site (None
    for the sites that record no node of their own)."""
    from ..autograd.function import Function
    from ..nn.modules.module import Module

    targets = _function_targets()
    plan, wrappers = [], {}
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "ferrograd" or mod_name.startswith("ferrograd.")):
            continue
        if mod_name.startswith("ferrograd._dynamo") or mod_name.startswith("ferrograd.compiler"):
            continue
        d = getattr(mod, "__dict__", None)
        if d is None:
            continue
        for name, value in list(d.items()):
            entry = targets.get(id(value))
            if entry is None or entry[0] is not value:
                continue
            w = wrappers.get(id(value))
            if w is None:
                w = wrappers[id(value)] = _function_wrapper(value, entry[1])
            plan.append((d, name, value, w, value))

    def cls_site(cls, name, new, key=None):
        plan.append((cls, name, cls.__dict__.get(name, _MISSING), new, key))

    unbind = Tensor.__dict__["unbind"]
    for name, desc in list(Tensor.__dict__.items()):
        if name in _SKIP_ATTRS:
            continue
        if name == "__iter__":
            cls_site(Tensor, name, _iter_wrapper(desc, unbind), unbind)
        elif name == "shape":
            cls_site(Tensor, name, _shape_wrapper(desc))
        elif name in _TENSOR_PROPERTIES:
            prop = _property_wrapper(desc, name)
            cls_site(Tensor, name, prop, prop.fget._get)
        elif isinstance(desc, (types.FunctionType, types.BuiltinFunctionType)) or type(desc).__name__ in (
                "method_descriptor", "wrapper_descriptor"):
            cls_site(Tensor, name, _method_wrapper(desc, name), desc)
    plan.append((builtins.__dict__, "print", builtins.print, _print_wrapper(builtins.print), None))
    plan.append((builtins.__dict__, "range", builtins.range, _range_wrapper(builtins.range), None))
    orig_getattr = Module.__dict__["__getattr__"]

    def __getattr__(module, name):
        value = orig_getattr(module, name)
        rec = _current
        if rec is not None:
            rec.modules.setdefault(id(module), module)
            if isinstance(value, Tensor):
                rec.attr_sources.setdefault(id(value), (module, name))
            elif isinstance(value, Module):
                rec.modules.setdefault(id(value), value)
        return value

    cls_site(Module, "__getattr__", __getattr__)
    orig_setattr = Module.__dict__["__setattr__"]

    def __setattr__(module, name, value):
        rec = _current
        if rec is not None and not rec.depth and rec.active and rec.thread == _ident():
            rec.graph_break(f"assignment to module attribute {type(module).__name__}.{name} (a Python side effect)")
        orig_setattr(module, name, value)

    cls_site(Module, "__setattr__", __setattr__, "setattr")
    orig_apply = Function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        rec = _current
        bound = orig_apply.__get__(cls)
        if rec is None or rec.depth or not rec.active or rec.thread != _ident():
            return bound(*args, **kwargs)
        return rec.call(bound, f"{cls.__name__}.apply", args, kwargs, "function")

    cls_site(Function, "apply", classmethod(apply), "apply")
    return plan


_MISSING = object()


def record(fn, args, kwargs, flat_inputs, dynamic_inputs, fullgraph):
    """Run fn(*args, **kwargs) once, recording; returns (result, recorder). The result is the real
    result of the call (breaks do not change what the call computes)."""
    global _current
    if _current is not None:
        raise RuntimeError("ferrograd.compile: a capture is already running (captures do not nest)")
    rec = Recorder(fn, dynamic_inputs, fullgraph)
    for i, t in enumerate(flat_inputs):
        if isinstance(t, Tensor):
            rec.add_input(i, t)
    root = getattr(fn, "__self__", None)
    if root is not None and hasattr(root, "_parameters"):  # a bound Module method
        rec.modules[id(root)] = root
    rec.entry_grad = _C.is_grad_enabled()
    with Interception():
        _current = rec
        try:
            result = fn(*args, **kwargs)
        finally:
            _current = None
    rec.exit_grad = _C.is_grad_enabled()
    return result, rec
