"""torch.fx.Graph: the node list, its editing API, torch.fx's printing, and code generation.

The nodes live in a circular doubly linked list through a sentinel `root` node; `graph.nodes` is a
live view of it. Names are unique within a graph and never shadow a Python builtin or keyword (a
second `add` is `add_1`, `sum` is `sum_1`), as torch.fx names them. `python_code` turns the graph
back into the source of a `forward(self, ...)` function (GraphModule.recompile runs it), writing
operators infix, tensor methods as method calls, and releasing each value after its last use.
"""

import builtins
import inspect
import keyword
import math
import operator
import re
from collections import namedtuple

from .node import Node, _qualified_name, map_arg

__all__ = ["Graph", "PythonCode"]

PythonCode = namedtuple("PythonCode", ["src", "globals"])

# names a node may not take: keywords, builtins, and the globals generated code relies on
_ILLEGAL_NAMES = set(keyword.kwlist) | set(dir(builtins)) | {"self", "ferrograd", "inf", "nan", "NoneType", "device"}
_NAME_RE = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHAR_RE = re.compile(r"[^0-9a-zA-Z_]+")
_SNAKE_RE = re.compile(r"(?<=[a-z])([A-Z])")

# operator functions written infix by the code generator and by Proxy's magic methods
_BINARY = {
    "add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/", "mod": "%", "pow": "**",
    "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^", "matmul": "@",
    "eq": "==", "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">=",
}
_UNARY = {"neg": "-", "pos": "+", "invert": "~"}
_INFIX = {getattr(operator, k): v for k, v in _BINARY.items()}
_PREFIX = {getattr(operator, k): v for k, v in _UNARY.items()}


class _Namespace:
    """Unique, legal Python names: `candidate`, else `base_1`, `base_2`, ... (torch.fx's scheme)."""

    def __init__(self, illegal=_ILLEGAL_NAMES):
        self._used = set()
        self._base_count = {}
        self._illegal = illegal

    def create_name(self, candidate):
        match = _NAME_RE.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHAR_RE.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = "_" + candidate
            match = _NAME_RE.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if candidate in self._illegal:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        return candidate


def _snake_case(s):
    return _SNAKE_RE.sub(r"_\1", s).lower()


class _NodeList:
    """A live view of a graph's nodes, in order (or reversed); safe to erase while iterating."""

    def __init__(self, graph, direction="_next"):
        self._graph = graph
        self._direction = direction

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root, step = self._graph._root, self._direction
        cur = getattr(root, step)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, step)  # read after the yield: nodes inserted meanwhile are visited

    def __reversed__(self):
        return _NodeList(self._graph, "_prev" if self._direction == "_next" else "_next")

    def __repr__(self):
        return repr(list(self))


class _InsertPoint:
    def __init__(self, graph, insert):
        self.graph = graph
        self.orig, graph._insert = graph._insert, insert

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.graph._insert = self.orig


def _format_target(base, target):
    """`self.a.b`, or getattr(self.a, "0") for path elements that are not identifiers."""
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if elem.isidentifier() else f'getattr({r}, "{elem}")'
    return r


class Graph:
    """A list of Nodes: placeholders (the inputs), operations, and one output."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._namespace = _Namespace()
        self._len = 0
        self._insert = self._root.prepend
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self):
        return _NodeList(self)

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    def find_nodes(self, *, op, target=None, sort=True):
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- building -------------------------------------------------------------------------------

    def _target_to_str(self, target):
        name = target if isinstance(target, str) else getattr(target, "__name__", type(target).__name__)
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            name = name[2:-2]
        return _snake_case(name)

    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Make a Node and insert it at the current insert point (the end, unless inside
        `inserting_before`/`inserting_after`)."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
        if op == "call_function":  # a function as patched during tracing: record the original
            target = getattr(target, "__fx_original__", target)
        candidate = name if name is not None else self._target_to_str(target)
        node = Node(self, self._namespace.create_name(candidate), op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n=None):
        """Context manager: new nodes go just before `n` (the start of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """Context manager: new nodes go just after `n` (the end of the graph when None). As in
        torch.fx, each new node goes directly after `n`, so several land in reverse order."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase):
        """Remove a node that nothing uses any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(map_arg(to_erase.args, lambda n: None), map_arg(to_erase.kwargs, lambda n: None))

    def node_copy(self, node, arg_transform=lambda x: x):
        """Copy `node` (from any graph) into this one, mapping its input Nodes through `arg_transform`."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copy every node of `g` except its output into this graph; `val_map` maps g's nodes to
        their copies (pre-filled entries are used as given). Returns the value g outputs, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo):
        g = Graph(tracer_cls=self._tracer_cls)
        memo[id(self)] = g
        out = g.graph_copy(self, {}, return_output_node=True)
        if out is not None:
            rv, out_node = out
            g.output(rv, type_expr=out_node.type)
        return g

    # ---- checks and passes ----------------------------------------------------------------------

    def lint(self):
        """Check the graph's invariants: ownership, topological order, unique names, targets that
        exist in the owning module. Raises RuntimeError naming the first problem."""
        seen_names, seen = set(), set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.op not in ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output"):
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       "used as an argument! If you are copying nodes from another graph, make "
                                       "sure to use ``arg_transform`` on node_copy() to remap values")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' uses '{arg}' but is not among its users")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            seen.add(node)
        mod = self.owning_module
        if mod is None:
            return
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            obj, qual = mod, []
            for atom in node.target.split("."):
                if not hasattr(obj, atom):
                    raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                       f"{atom} of {'.'.join(qual) or 'root'}")
                obj = getattr(obj, atom)
                qual.append(atom)
            from ..nn import Module

            if node.op == "call_module" and not isinstance(obj, Module):
                raise RuntimeError(f"Node {node} target {node.target} {atom} of {'.'.join(qual[:-1]) or 'root'} "
                                   "does not reference an nn.Module")

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase the nodes whose values nothing uses (from the end, so chains go at once), except
        impure ones (placeholders, output, asserts, in-place methods). Returns whether it changed."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # ---- printing -------------------------------------------------------------------------------

    def __str__(self):
        return "graph():" + "".join("\n    " + n.format_node() for n in self.nodes)

    def print_tabular(self):
        """Print one row per node: opcode, name, target, args, kwargs (with the `tabulate` package
        when it is installed, as torch does; as a plain aligned table otherwise)."""
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
        except ImportError:
            cells = [headers] + [[str(c) for c in r] for r in rows]
            widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
            lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
            lines.insert(1, "  ".join("-" * w for w in widths))
            print("\n".join(lines))
            return
        print(tabulate(rows, headers=headers))

    def to_dot(self, path=None):
        """The graph as Graphviz DOT source (see ferrograd.fx.to_dot)."""
        from ._dot import to_dot

        return to_dot(self, path)

    # ---- code generation ------------------------------------------------------------------------

    def python_code(self, root_module="self", *, verbose=False):
        """The source of `def forward(self, ...)` computing this graph, and the globals it needs."""
        import ferrograd

        nodes = list(self.nodes)
        globals_ = {"ferrograd": ferrograd, "torch": ferrograd, "inf": math.inf, "nan": math.nan, "NoneType": type(None),
                    "device": ferrograd.device}
        taken = {n.name for n in nodes} | {n.target.lstrip("*") for n in nodes if n.op == "placeholder"}
        gnames = _Namespace(_ILLEGAL_NAMES | taken)
        for name in list(globals_) + ["self", root_module]:
            gnames._used.add(name)
        gnames._used |= taken
        by_obj = {}

        def add_global(hint, obj):
            if id(obj) in by_obj:
                return by_obj[id(obj)]
            name = gnames.create_name(hint)
            globals_[name] = obj
            by_obj[id(obj)] = name
            return name

        def fn_name(fn):
            qual = _qualified_name(fn)
            if qual.startswith("ferrograd.") and _resolve(qual) is fn:
                return qual
            if qual.startswith("builtins.") and getattr(builtins, fn.__name__, None) is fn:
                return fn.__name__
            return add_global(_ILLEGAL_CHAR_RE.sub("_", getattr(fn, "__name__", "fn")), fn)

        def type_name(t):
            if isinstance(t, type) and t.__module__ == "builtins":
                return t.__qualname__
            qual = _qualified_name(t)
            if qual.startswith("ferrograd.") and _resolve(qual) is t:
                return qual
            return add_global(getattr(t, "__name__", "T"), t)

        def r(a):
            if isinstance(a, Node):
                return a.name
            if isinstance(a, tuple) and not hasattr(a, "_fields"):
                items = ", ".join(r(x) for x in a)
                return f"({items},)" if len(a) == 1 else f"({items})"
            if isinstance(a, list):
                return "[" + ", ".join(r(x) for x in a) + "]"
            if isinstance(a, dict):
                return "{" + ", ".join(f"{r(k)}: {r(v)}" for k, v in a.items()) + "}"
            if isinstance(a, slice):
                return f"slice({r(a.start)}, {r(a.stop)}, {r(a.step)})"
            if isinstance(a, type) or inspect.isfunction(a) or inspect.isbuiltin(a):
                return fn_name(a) if not isinstance(a, type) else type_name(a)
            return repr(a)

        def call_args(args, kwargs):
            return ", ".join([r(a) for a in args] + [f"{k} = {r(v)}" for k, v in kwargs.items()])

        # the last user of each value: the value is released (`x = None`) right after it
        last_use = {}
        to_release = {}
        for node in reversed(nodes):
            for inp in node._input_nodes:
                if inp not in last_use:
                    last_use[inp] = node
                    to_release.setdefault(node, []).append(inp)

        signature, body = [], []
        for node in nodes:
            if node.op == "placeholder":
                target = node.target
                ann = f" : {type_name(node.type)}" if node.type is not None else ""
                default = f" = {r(node.args[0])}" if node.args else ""
                signature.append(f"{target}{ann}{default}")
                if target.lstrip("*") != node.name:
                    body.append(f"{node.name} = {target.lstrip('*')}")
                continue
            if node.op == "output":
                body.append(f"return {r(node.args[0])}")
                continue
            if node.op == "get_attr":
                expr = _format_target(root_module, node.target)
            elif node.op == "call_module":
                expr = f"{_format_target(root_module, node.target)}({call_args(node.args, node.kwargs)})"
            elif node.op == "call_method":
                expr = f"{_format_target(r(node.args[0]), node.target)}({call_args(node.args[1:], node.kwargs)})"
            else:
                expr = _call_function_expr(node, r, fn_name, call_args)
            released = [n.name for n in to_release.get(node, [])]
            if not node.users:
                released.append(node.name)
            line = f"{node.name} = {expr}"
            if released:
                line += ";  " + " = ".join(released) + " = None"
            body.append(line)

        outputs = [n for n in nodes if n.op == "output"]
        ret = ""
        if outputs and outputs[0].type is not None:
            ret = f" -> {type_name(outputs[0].type)}"
        body = body or ["pass"]
        src = (f"\n\n\ndef forward({', '.join([root_module] + _order_signature(signature))}){ret}:\n"
               + "".join("    " + line + "\n" for line in body) + "    ")
        return PythonCode(src, globals_)


def _order_signature(signature):
    """Python needs `*args` after the positional parameters and `**kwargs` last."""
    star = [s for s in signature if s.startswith("*") and not s.startswith("**")]
    dstar = [s for s in signature if s.startswith("**")]
    plain = [s for s in signature if not s.startswith("*")]
    return plain + star + dstar


def _resolve(qualname):
    import importlib

    parts = qualname.split(".")
    try:
        obj = importlib.import_module(parts[0])
        for p in parts[1:]:
            obj = getattr(obj, p)
    except (ImportError, AttributeError):
        return None
    return obj


def _call_function_expr(node, r, fn_name, call_args):
    target, args, kwargs = node.target, node.args, node.kwargs
    if not kwargs:
        if target in _INFIX and len(args) == 2:
            return f"{r(args[0])} {_INFIX[target]} {r(args[1])}"
        if target in _PREFIX and len(args) == 1:
            return f"{_PREFIX[target]}{r(args[0])}"
        if target is operator.getitem and len(args) == 2:
            return f"{r(args[0])}[{r(args[1])}]"
        if target is getattr and len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier():
            return f"{r(args[0])}.{args[1]}"
    return f"{fn_name(target)}({call_args(args, kwargs)})"

