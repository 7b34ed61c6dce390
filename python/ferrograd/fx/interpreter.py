"""torch.fx.Interpreter and Transformer: run a graph node by node, or rebuild it.

Interpreter.run executes each node with the method named after its opcode (placeholder,
get_attr, call_function, call_method, call_module, output); override one to change what a kind
of node does, or `run_node` to see every node. Values are dropped after their last use. A
Transformer runs the same methods on Proxies, so that what they return is recorded into a new
graph, and `transform()` returns it as a GraphModule.
"""

import inspect

from ._symbolic_trace import Tracer, _Patcher, _patch_namespaces, _recorded_targets
from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Execute a GraphModule's graph (or `graph`, with `module` holding its attributes)."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            seen = set()
            self.user_to_last_uses = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on `args`; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list):
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode ----------------------------------------------------------------

    def placeholder(self, target, args, kwargs):
        if target.startswith("**"):
            return {}
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!") \
                from si

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers ------------------------------------------------------------------------------

    def fetch_attr(self, target):
        obj = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(a):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[a]

        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root
        self.tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """Rebuild a GraphModule node by node: each method returns a Proxy recorded into a new graph.
    Override call_function & co. to substitute operations; `transform()` returns the result."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)
        self._wrappers = {}

    def run_node(self, n):
        if n.op == "call_function" and id(n.target) in self._wrappers:
            # overrides see the function as the namespace holds it now (`target is ferrograd.relu`)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return self.call_function(self._wrappers[id(n.target)], args, kwargs)
        return super().run_node(n)

    def placeholder(self, target, args, kwargs):
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self):
        """Run the graph on Proxies and return the new GraphModule."""
        # ferrograd functions called on Proxies in overrides are recorded (Note [how calls are recorded])
        with _Patcher() as patcher:
            _patch_namespaces(patcher, _recorded_targets())
            self._wrappers = patcher.wrappers
            result = self.run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)
