"""torch.fx.GraphModule: an nn.Module whose forward is generated from a Graph.

It holds the submodules, parameters and buffers the graph's get_attr / call_module nodes name, at
the same dotted paths as in the traced module (the same objects, not copies), so its state_dict
has the original's keys. `recompile()` regenerates `code` from `graph` and execs it as `forward`;
each GraphModule gets its own subclass so that forwards of different instances do not collide.
"""

import copy
import itertools
import linecache

from .. import _C
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_counter = itertools.count()


def _forward_from_src(src, globals_):
    """exec the generated source; registered in linecache so tracebacks show its lines."""
    key = f"<eval_with_key>.{next(_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    scope = dict(globals_)
    exec(compile(src, key, "exec"), scope)
    return scope["forward"]


def _copy_attr(from_module, to_module, target):
    """Install `from_module`'s `target` (a dotted path) on `to_module`, making empty Modules for
    the path's intermediate modules that `to_module` lacks."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, _C.Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(value, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(value, _C.Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


class GraphModule(Module):
    """A Module built from `root` (the module that owns the attributes the graph names, or a dict
    from target to value) and a Graph; `forward` runs the graph."""

    def __new__(cls, *args, **kwargs):
        base = next(c for c in cls.__mro__ if c.__name__ != "GraphModuleImpl")

        class GraphModuleImpl(base):
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            self.training = getattr(root, "training", True)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was "
                                           "not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.meta = {}
        self._tracer_cls = graph._tracer_cls
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of `forward`, as generated from the graph at the last recompile()."""
        return self._code

    def recompile(self):
        """Regenerate `code` from `graph` (after editing it) and install it as `forward`."""
        python_code = self._graph.python_code(root_module="self")
        object.__setattr__(self, "_code", python_code.src)
        type(self).forward = _forward_from_src(python_code.src, python_code.globals)
        return python_code

    def print_readable(self, print_output=True):
        body = self._code.strip("\n")
        src = f"class {type(self).__name__}(ferrograd.nn.Module):\n" + "\n".join(
            ("    " + line) if line.strip() else "" for line in body.split("\n")) + "\n"
        if print_output:
            print(src)
        return src

    # ---- submodules ---------------------------------------------------------------------------

    def add_submodule(self, target, m):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field) or not isinstance(getattr(mod, field), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # ---- copying and printing -----------------------------------------------------------------

    def __deepcopy__(self, memo):
        holder = Module()
        for key in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            object.__setattr__(holder, key, self.__dict__[key])
        holder_copy = copy.deepcopy(holder, memo)
        res = GraphModule(holder_copy, copy.deepcopy(self.graph, memo), type(self).__name__)
        res.training = self.training
        res.meta = copy.deepcopy(self.meta, memo)
        memo[id(self)] = res
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = copy.copy(self.meta)
        return res

    def __str__(self):
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])
