"""Symbolic tracing: run a Module's forward (or a function) on Proxies and record a Graph.

Note [how calls are recorded]
torch records its own functions through `__torch_function__`; ferrograd's hand a Proxy argument to
`Proxy.__torch_function__` only on the failure path of their argument checks (Note
[torch_function dispatch] in ferrograd/overrides.py), which not every function has (`math`'s, the
factories, user functions registered with `wrap`). So while a trace runs, a patcher replaces
every public function of the `ferrograd` and `ferrograd.nn.functional` namespaces (and of the
autowrapped modules, `math` by default, and whatever `wrap` registered) with a wrapper: called with
a Proxy anywhere in its arguments it records a call_function node whose target is the *original*
function; otherwise it calls the original. The same wrapper replaces globals of the traced code
that are bound to one of those functions (`from ferrograd.nn.functional import relu`). The
patcher also replaces `Module.__call__` (so submodule calls go through `Tracer.call_module`, which
records leaf modules as call_module nodes and traces through the others) and `Module.__getattr__`
(so parameters and buffers read in forward become get_attr nodes). Everything is restored when
the trace ends, by an exception too.
"""

import builtins
import functools
import importlib
import inspect
import math
import operator
import types
import warnings

from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph
from .node import Node
from .proxy import Attribute, Proxy, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]

_PUBLIC_NAMESPACES = ("ferrograd", "ferrograd.nn.functional")
_NOT_RECORDED = {"is_tensor", "is_grad_enabled", "manual_seed", "save", "load", "set_num_threads",
                 "get_num_threads", "get_default_dtype", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"}
_public = None  # id(obj) -> (obj, public dotted name), built on first use


def _public_objects():
    global _public
    if _public is None:
        table = {}
        for ns_name in _PUBLIC_NAMESPACES:
            for name, obj in vars(importlib.import_module(ns_name)).items():
                if name.startswith("_") or isinstance(obj, types.ModuleType) or not callable(obj):
                    continue
                entry = table.get(id(obj))
                # first namespace wins; within it, the name the object calls itself (`cat`, not `concat`)
                if entry is None or (entry[1].rsplit(".", 1)[0] == ns_name and getattr(obj, "__name__", None) == name):
                    table[id(obj)] = (obj, f"{ns_name}.{name}")
        _public = table
    return _public


def _public_name(obj):
    """`ferrograd.relu` for ferrograd's public functions and classes; None for anything else."""
    entry = _public_objects().get(id(obj))
    return entry[1] if entry is not None and entry[0] is obj else None


def _recorded_targets():
    """The public ferrograd functions a trace records (id -> function)."""
    return {i: obj for i, (obj, name) in _public_objects().items()
            if not isinstance(obj, type) and name.rsplit(".", 1)[1] not in _NOT_RECORDED}


def _patch_namespaces(patcher, targets):
    for ns_name in _PUBLIC_NAMESPACES:
        patcher.patch_functions(vars(importlib.import_module(ns_name)), targets)


def _assert(condition, message=""):
    """torch._assert: the check a specialised trace adds for each concrete argument."""
    if not condition:
        raise AssertionError(message)


def _assert_is_none(value, message=""):
    if value is not None:
        raise AssertionError(message)


_assert.__module__ = _assert_is_none.__module__ = "ferrograd.fx"
_side_effectful_functions = {_assert, _assert_is_none, operator.setitem}


class _PHBase:
    """concrete_args marker (`PH`): keep this argument a placeholder."""

    def __repr__(self):
        return "PH"


PH = _PHBase()

_wrapped_names = []  # (globals dict, name) registered by `wrap`


def wrap(fn_or_name):
    """At module scope: record calls to this module-level function (or builtin, by name) as
    call_function nodes instead of tracing into them."""
    if callable(fn_or_name):
        name = fn_or_name.__name__
    elif isinstance(fn_or_name, str):
        name = fn_or_name
    else:
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_names.append((frame.f_globals, name))
    return fn_or_name


def _find_proxy(*values):
    """A Proxy anywhere in `values` (inside tuples, lists, dicts, slices), or None."""
    stack = list(values)
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
        elif isinstance(a, slice):
            stack.extend((a.start, a.stop, a.step))
    return None


def _recording(orig):
    """The wrapper of Note [how calls are recorded]."""
    orig = getattr(orig, "__fx_original__", orig)

    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", orig, args, kwargs)
        return orig(*args, **kwargs)

    wrapper.__fx_original__ = orig
    return wrapper


class _Patcher:
    """Set attributes / dict entries for the duration of a `with` block; restore them all after."""

    def __init__(self):
        self._undo = []
        self.wrappers = {}  # id(original) -> its recording wrapper

    def setattr(self, obj, name, value):
        self._undo.append((setattr, obj, name, obj.__dict__.get(name, _MISSING) if isinstance(obj, type)
                           else getattr(obj, name, _MISSING)))
        setattr(obj, name, value)

    def setitem(self, d, name, value):
        self._undo.append((dict.__setitem__, d, name, d.get(name, _MISSING)))
        d[name] = value

    def patch_functions(self, namespace_dict, targets):
        """Wrap the entries of a module's dict that are among `targets` (ids of originals)."""
        for name, value in list(namespace_dict.items()):
            orig = getattr(value, "__fx_original__", value)
            if id(orig) in targets and targets[id(orig)] is orig and value is orig:
                if id(orig) not in self.wrappers:
                    self.wrappers[id(orig)] = _recording(orig)
                self.setitem(namespace_dict, name, self.wrappers[id(orig)])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            kind, obj, name, old = self._undo.pop()
            if kind is setattr:
                if old is _MISSING:
                    delattr(obj, name)
                else:
                    setattr(obj, name, old)
            elif old is _MISSING:
                del obj[name]
            else:
                obj[name] = old
        return False


_MISSING = object()


def _flatten_varargs(fn, nargs):
    """`fn` with *args / **kwargs / keyword-only parameters turned into plain positional ones, so the
    tracer can hand each of them a single Proxy."""
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_flags=flags, co_argcount=nargs, co_kwonlyargcount=0, co_posonlyargcount=0)
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


class Tracer:
    """Records a Graph from a Module or function (torch.fx.Tracer). Subclass and override
    `is_leaf_module`, `call_module`, `create_arg`, `to_bool`, ... to change what is recorded."""

    traced_func_name = "forward"

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.proxy_buffer_attributes = True
        self.submodule_paths = None
        self.root = None
        self.graph = None
        self.tensor_attrs = {}

    # ---- what gets recorded -------------------------------------------------------------------

    def is_leaf_module(self, m, module_qualified_name):
        """Leaf modules are recorded as call_module, not traced into: ferrograd.nn's layers (except
        Sequential), as torch.fx treats torch.nn's."""
        from ..nn import Sequential

        return type(m).__module__.startswith("ferrograd.nn") and not isinstance(m, Sequential)

    def path_of_module(self, mod):
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(mod)
            if path is not None:
                return path
        for name, m in self.root.named_modules():
            if m is mod:
                return name
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward, args, kwargs):
        """A submodule call: a call_module node for a leaf, else trace through `forward`."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A module attribute read in forward: parameters (and buffers) become get_attr proxies."""
        from .. import _C

        if isinstance(attr_val, Parameter):
            candidates = self.root.named_parameters()
        elif self.proxy_buffer_attributes and isinstance(attr_val, _C.Tensor):
            candidates = self.root.named_buffers()
        else:
            return attr_val
        for name, p in candidates:
            if p is attr_val:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def to_bool(self, obj):
        raise TraceError(
            "symbolically traced variables cannot be used as inputs to control flow: the traced value "
            f"'{obj.node.name}' was used where Python needs a real bool (if/while/assert/and/or/not). "
            "If the branch depends on an argument that is fixed for this model, pass it in concrete_args "
            "(e.g. symbolic_trace(model, concrete_args={'flag': True})); otherwise move the branch into a leaf "
            "module or a function registered with ferrograd.fx.wrap")

    def iter(self, obj):
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop or as a "
            "*args or **kwargs function argument. Iterate over a Python value that is fixed for the model "
            "instead (e.g. range(n) with n in concrete_args), or unpack a known number of values (a, b = x)")

    def keys(self, obj):
        return Attribute(obj, "keys")()

    # ---- nodes and proxies --------------------------------------------------------------------

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Turn a value into a node argument: Proxies into their nodes, parameters and tensors into
        get_attr nodes (a tensor that is no attribute becomes `_tensor_constantN` on the root)."""
        from .. import _C

        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if p is a:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, _C.Tensor):
            path = self.tensor_attrs.get(id(a))
            if path is None or path[0] is not a:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                object.__setattr__(self.root, qualname, a)
                self.tensor_attrs[id(a)] = path = (a, qualname)
            return self.create_node("get_attr", path[1], (), {})
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            vals = [self.create_arg(x) for x in a]
            if hasattr(a, "_fields"):
                return type(a)(*vals)
            return tuple(vals) if type(a) is tuple else type(a)(vals)
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot contain a Node. "
                                       f"Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if a is None or a is Ellipsis or isinstance(a, (str, int, float, bool, complex, _C.dtype, _C.device)):
            return a
        if isinstance(a, type) or callable(a) and not isinstance(a, Module):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    # ---- tracing ------------------------------------------------------------------------------

    def _placeholders(self, fn, is_module, concrete_args):
        """Placeholder proxies for fn's parameters (after `self`), specialising concrete_args."""
        co = fn.__code__
        names = list(co.co_varnames[: co.co_argcount + co.co_kwonlyargcount])
        has_varargs = bool(co.co_flags & inspect.CO_VARARGS)
        has_varkw = bool(co.co_flags & inspect.CO_VARKEYWORDS)
        extra = co.co_argcount + co.co_kwonlyargcount
        if has_varargs:
            names.append("*" + co.co_varnames[extra])
            extra += 1
        if has_varkw:
            names.append("**" + co.co_varnames[extra])
        sig = inspect.signature(fn)
        args = [self.root] if is_module else []
        if is_module:
            names = names[1:]
        if isinstance(concrete_args, tuple):
            plain = [n for n in names if not n.startswith("*")]
            if len(plain) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(plain)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(plain, concrete_args))
        concrete_args = concrete_args or {}
        for name in names:
            if name in concrete_args:
                args.append(self._specialise(name, concrete_args[name], sig))
                continue
            param = sig.parameters.get(name.lstrip("*"))
            default = () if param is None or param.default is inspect.Parameter.empty or name.startswith("*") \
                else (param.default,)
            ann = getattr(fn, "__annotations__", {}).get(name.lstrip("*"))
            ann = ann if isinstance(ann, type) else None
            args.append(self.create_proxy("placeholder", name, default, {}, type_expr=ann))
        if co.co_kwonlyargcount or has_varargs or has_varkw:
            fn = _flatten_varargs(fn, len(args))
        return fn, args

    def _specialise(self, name, value, sig):
        """A concrete argument: still a placeholder (`name_1`), plus an assert that callers pass the
        value the trace was specialised on (torch.fx's behaviour)."""
        param = sig.parameters[name]
        default = () if param.default is inspect.Parameter.empty else (param.default,)
        ph = self.create_proxy("placeholder", f"{name}_1", default, {})
        if isinstance(value, _PHBase):
            return ph
        if type(value) in (bool, int, float, str, complex):
            msg = f"{name} has been specialized to have value {value} but got another value"
            self.create_proxy("call_function", _assert, (ph == value, msg), {})
        elif value is None:
            msg = f"{name} has been specialized to have value None but got another value"
            self.create_proxy("call_function", _assert_is_none, (ph, msg), {})
        else:
            warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                          "function. It is up to the user to make sure that your inputs match the inputs you "
                          "specialized the function with.")
        return value

    def trace(self, root, concrete_args=None):
        """Trace `root` (a Module: its forward; or a function) and return the Graph."""
        from .. import _C

        if isinstance(root, Module):
            self.root = root
            fn = getattr(type(root), self.traced_func_name)
            self.submodule_paths = {mod: name for name, mod in root.named_modules()}
        else:
            self.root = Module()
            fn = root
        fn = inspect.unwrap(fn)
        if not isinstance(fn, types.FunctionType):
            raise TypeError(f"symbolic_trace needs a Python function or a Module with a Python "
                            f"{self.traced_func_name}(); got {type(fn).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {}

        def collect(m, prefix):
            for k, v in m.__dict__.items():
                if isinstance(v, _C.Tensor) and not isinstance(v, Parameter):
                    self.tensor_attrs[id(v)] = (v, prefix + k)
            for k, child in m.named_children():
                collect(child, prefix + k + ".")

        collect(self.root, "")
        fn_globals = fn.__globals__
        try:
            with _Patcher() as patcher:
                fn, args = self._placeholders(fn, isinstance(root, Module), concrete_args)
                self._patch(patcher, fn_globals)
                out = fn(*args)
                ann = inspect.get_annotations(fn).get("return")
                ann = ann if isinstance(ann, type) else None
                self.create_node("output", "output", (self.create_arg(out),), {}, type_expr=ann)
        finally:
            self.submodule_paths = None
        return self.graph

    def _patch(self, patcher, fn_globals):
        tracer = self
        orig_call = Module.__call__
        orig_getattr = Module.__getattr__
        cache = {}
        targets = _recorded_targets()
        for mod in self._autowrap_modules:
            for k, v in vars(mod).items():
                if not k.startswith("_") and callable(v) and not isinstance(v, type):
                    targets[id(v)] = v
        for f in self._autowrap_functions:
            targets[id(f)] = f
        for d, name in _wrapped_names:
            f = d.get(name, getattr(builtins, name, None))
            if f is not None:
                targets[id(getattr(f, "__fx_original__", f))] = getattr(f, "__fx_original__", f)
        seen_globals = set()

        def patch_globals(g):
            if id(g) not in seen_globals:
                seen_globals.add(id(g))
                patcher.patch_functions(g, targets)
                for d, name in _wrapped_names:
                    if d is g and name not in g and hasattr(builtins, name):  # wrap('len'): a builtin
                        patcher.setitem(g, name, _recording(getattr(builtins, name)))

        def module_call(mod, *args, **kwargs):
            def forward(*a, **k):
                return orig_call(mod, *a, **k)

            fwd = getattr(type(mod), "forward", None)
            if isinstance(fwd, types.FunctionType):
                patch_globals(fwd.__globals__)
            return tracer.call_module(mod, forward, args, kwargs)

        def module_getattr(mod, attr):
            return tracer.getattr(attr, orig_getattr(mod, attr), cache)

        patcher.setattr(Module, "__call__", module_call)
        patcher.setattr(Module, "__getattr__", module_getattr)
        _patch_namespaces(patcher, targets)
        for mod in self._autowrap_modules:
            patcher.patch_functions(vars(mod), targets)
        for d, _ in _wrapped_names:
            patch_globals(d)
        patch_globals(fn_globals)


class GraphAppendingTracer(Tracer):
    """torch.fx.proxy.GraphAppendingTracer: the tracer of Proxies made directly on a graph's nodes
    (`Proxy(graph.placeholder("x"), GraphAppendingTracer(graph))`): what they do is appended to that
    graph, ferrograd's functions included (`F.relu(proxy)`, through `Proxy.__torch_function__`)."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.root = Module()
        self.scope = None
        self.module_stack = {}
        self.node_name_to_scope = {}


_GraphAppendingTracer = GraphAppendingTracer


def symbolic_trace(root, concrete_args=None):
    """Trace a Module or function into a GraphModule (torch.fx.symbolic_trace)."""
    from .graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

