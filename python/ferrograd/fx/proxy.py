"""torch.fx.Proxy: the stand-in value that records what a traced program does with it.

Every operation on a Proxy adds a Node to the tracer's graph and returns a new Proxy: Python
operators become call_function nodes on `operator.*`, attribute reads become `getattr` nodes
(or, when called, call_method nodes), indexing becomes `operator.getitem`. Whatever would need the
*value* (`if proxy:`, `for v in proxy`, `len(proxy)`) cannot be recorded and raises TraceError or
RuntimeError with torch.fx's messages.
"""

import dis
import inspect
import operator

from .graph import _BINARY, _UNARY

__all__ = ["Proxy", "Attribute", "TraceError", "GraphAppendingTracer"]


class TraceError(ValueError):
    """Raised when a traced program needs a concrete value that symbolic tracing cannot give."""


class Proxy:
    """A value flowing through a traced program; `node` is the graph Node that produces it."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            from ._symbolic_trace import GraphAppendingTracer

            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    __hash__ = object.__hash__

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __getitem__(self, key):
        return self.tracer.create_proxy("call_function", operator.getitem, (self, key), {})

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __iter__(self):
        # `a, b = proxy` is fine when the caller unpacks a known number of values
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call ferrograd.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)

    def __deepcopy__(self, memo):
        # a copy stands for the same value: same node, same tracer
        return Proxy(self.node, self.tracer)

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        """A ferrograd function called with a Proxy among its arguments (Note [torch_function
        dispatch] in ferrograd/overrides.py): recorded as a call_function node on the function."""
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = []
        for p in _proxies((args, kwargs)):
            if all(p.tracer is not t for t in tracers):
                tracers.append(p.tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {tracers} while trying to trace operations {orig_method}")
        return tracers[0].create_proxy("call_function", orig_method, args, kwargs)


def _proxies(values):
    stack = [values]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            yield a
        elif isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
        elif isinstance(a, slice):
            stack.extend((a.start, a.stop, a.step))


def __getattr__(name):
    # torch.fx.proxy.GraphAppendingTracer (defined beside the Tracer it extends)
    if name == "GraphAppendingTracer":
        from ._symbolic_trace import GraphAppendingTracer

        return GraphAppendingTracer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _binary(name):
    target = getattr(operator, name)

    def forward(self, other):
        return self.tracer.create_proxy("call_function", target, (self, other), {})

    def reflected(self, other):
        return self.tracer.create_proxy("call_function", target, (other, self), {})

    dunder = name.rstrip("_")
    forward.__name__ = f"__{dunder}__"
    reflected.__name__ = f"__r{dunder}__"
    setattr(Proxy, forward.__name__, forward)
    if name not in ("eq", "ne", "lt", "gt", "le", "ge"):
        setattr(Proxy, reflected.__name__, reflected)


def _unary(name):
    target = getattr(operator, name)

    def method(self):
        return self.tracer.create_proxy("call_function", target, (self,), {})

    method.__name__ = f"__{name}__"
    setattr(Proxy, method.__name__, method)


for _name in _BINARY:
    _binary(_name)
for _name in _UNARY:
    _unary(_name)


class Attribute(Proxy):
    """`proxy.attr`: a call_method node when called, else a `getattr` node (made on first use)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)
