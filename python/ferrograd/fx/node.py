"""torch.fx.Node: one operation of a Graph, and the helpers that walk nested arguments.

A Node records an opcode (placeholder, get_attr, call_function, call_method, call_module, output),
a target (a function for call_function, a name or dotted path otherwise), args and kwargs that may
hold other Nodes (nested in tuples, lists, dicts and slices), and its users. The uses are kept in
both directions: setting `args`/`kwargs` updates the `users` of the nodes it references. Nodes of one
Graph form a doubly linked list (see graph.py), so inserting and erasing are O(1).
"""

import builtins

__all__ = ["Node", "map_arg", "map_aggregate"]

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")


def map_aggregate(a, fn):
    """Apply `fn` to every leaf of `a`, rebuilding tuples (namedtuples too), lists, dicts and slices."""
    if isinstance(a, tuple):
        vals = [map_aggregate(x, fn) for x in a]
        if hasattr(a, "_fields"):
            return type(a)(*vals)
        return tuple(vals) if type(a) is tuple else type(a)(vals)
    if isinstance(a, list):
        return [map_aggregate(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply `fn` to every Node inside the (nested) argument `a`; other values are kept."""
    if not callable(fn):
        raise TypeError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(fn):
    """How a call_function target is named when printed (`operator.add`, `ferrograd.relu`)."""
    from ._symbolic_trace import _public_name

    public = _public_name(fn)
    if public is not None:
        return public
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return f"builtins.{fn.__name__}"
    module = getattr(fn, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    return f"{module}.{getattr(fn, '__qualname__', None) or getattr(fn, '__name__', repr(fn))}"


def _type_repr(t):
    if t is None:
        return ""
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        return _qualified_name(t)
    return repr(t)


def _format_arg(arg):
    """torch.fx's printing of arguments: `%name` for Nodes, strings unquoted, dict keys unquoted."""
    if isinstance(arg, Node):
        return "%" + arg.name
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation in a Graph. Create Nodes through Graph (create_node, call_function, ...)."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPS:
            raise ValueError(f"Node {name} had unknown opcode {op}!")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "get_attr", "call_method", "call_module", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target).__name__} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}  # ordered set of the Nodes in args/kwargs
        self._args = ()
        self._kwargs = {}
        self.users = {}  # ordered set: user Node -> None
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._update_args_kwargs(tuple(args), dict(kwargs))

    # ---- the linked list ------------------------------------------------------------------------

    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def _unlink(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    def prepend(self, x):
        """Put `x` just before this node (moving it if it is already in the list)."""
        if x is self:
            raise RuntimeError("Cannot prepend a node to itself")
        if x.graph is not self.graph:
            raise RuntimeError("Attempting to move a Node into a different Graph")
        if x._next is not x:  # already linked somewhere
            x._unlink()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Put `x` just after this node."""
        self._next.prepend(x)

    # ---- arguments and uses ---------------------------------------------------------------------

    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(tuple(a), self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, dict(k))

    @property
    def all_input_nodes(self):
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = new_args, new_kwargs
        self._input_nodes = {}
        map_arg(self._args, lambda n: self._input_nodes.setdefault(n))
        map_arg(self._kwargs, lambda n: self._input_nodes.setdefault(n))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def update_arg(self, idx, arg):
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key, arg):
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input, new_input):
        """Use `new_input` wherever this node's arguments use `old_input`."""
        def swap(n):
            return new_input if n is old_input else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *, propagate_meta=False):
        """Make every user of this node (for which `delete_user_cb(user)` is true) use `replace_with`
        instead. Returns the users that changed."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # ---- queries --------------------------------------------------------------------------------

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace")

    def is_impure(self):
        """Whether dead-code elimination must keep this node although nothing uses its value."""
        from ._symbolic_trace import _side_effectful_functions

        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            # in-place tensor methods (add_, copy_, ...) mutate an input: keep them
            return self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module":
            mod = self.graph.owning_module
            if mod is None:
                return False
            return getattr(mod.get_submodule(self.target), "_is_impure", False)
        return False

    def _pretty_target(self):
        if self.op == "call_function":
            return _qualified_name(self.target)
        return self.target

    def format_node(self):
        """One line of `print(graph)`: `%add : [num_users=1] = call_function[target=operator.add](...)`."""
        if self.op == "output":
            return f"return {self.args[0]}"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}[target={self._pretty_target()}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def __repr__(self):
        return self.name

