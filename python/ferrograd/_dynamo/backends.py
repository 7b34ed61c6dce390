"""Custom backends: `torch.compile(fn, backend=my_backend)` with `my_backend(gm, example_inputs)`.

As torch's dynamo does, each captured graph is handed to a callable backend as an fx `GraphModule`
(ferrograd.fx) whose placeholders are the graph's tensor inputs followed by the tensors it reads
from modules, globals and closures (torch lifts parameters to inputs the same way), and whose
output is the tuple of the tensors the function returns; `example_inputs` are the recording's real
tensors in that order. The callable the backend returns is then called with those tensors on every
replay, and the function's result is rebuilt around its outputs. Grad-mode changes inside the graph
are `ferrograd._C._set_grad_enabled` calls, as in torch's graphs. Entries with graph breaks run
their regions as usual (see segmented.py) without calling the backend.
"""

import builtins
import operator

from .. import _C
from .capture import Ref, Sym, _TENSOR_PROPERTIES

Tensor = _C.Tensor
_OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul, "__truediv__": operator.truediv,
    "__floordiv__": operator.floordiv, "__mod__": operator.mod, "__pow__": operator.pow,
    "__matmul__": operator.matmul, "__getitem__": operator.getitem, "__setitem__": operator.setitem,
    "__neg__": operator.neg, "__pos__": operator.pos, "__abs__": operator.abs, "__invert__": operator.invert,
    "__and__": operator.and_, "__or__": operator.or_, "__xor__": operator.xor, "__lt__": operator.lt,
    "__le__": operator.le, "__gt__": operator.gt, "__ge__": operator.ge, "__eq__": operator.eq,
    "__ne__": operator.ne, "__iadd__": operator.iadd, "__isub__": operator.isub, "__imul__": operator.imul,
    "__itruediv__": operator.itruediv}
_REFLECTED = {"__radd__": operator.add, "__rsub__": operator.sub, "__rmul__": operator.mul,
              "__rtruediv__": operator.truediv, "__rfloordiv__": operator.floordiv, "__rpow__": operator.pow,
              "__rmatmul__": operator.matmul, "__rmod__": operator.mod}
_SYM_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def to_graph_module(rec, output_template, tensor_inputs):
    """(GraphModule, placeholder order) for a recording without breaks: placeholders are the tensor
    inputs ('in', i) and then the externals ('ext', e)."""
    from ..fx import Graph, GraphModule
    from ..nn.modules.module import Module

    graph = Graph()
    env = {}
    order = []
    for i in tensor_inputs:
        env[("in", i)] = graph.placeholder(f"L_input_{i}_")
        order.append(("in", i))
    for e, (src, _) in enumerate(rec.externals):
        name = f"L_{src[2]}_{e}_" if src[0] in ("attr", "global", "cell") else f"L_ext_{e}_"
        env[("ext", e)] = graph.placeholder(name.replace(".", "_"))
        order.append(("ext", e))
    outs = {}
    by_index = {n.index: n for n in rec.nodes}

    def ref(key):
        if key[0] != "node":
            return env[key]
        node = outs[key[1]]
        for p in by_index[key[1]].out_paths[key[2]]:
            node = graph.call_function(operator.getitem, (node, p))
        return node

    def sym(e):
        if isinstance(e, int):
            return e
        if e[0] == "size":
            return graph.call_method("size", (ref(e[1]), e[2]))
        return graph.call_function(_SYM_OPS[e[0]], (sym(e[1]), sym(e[2])))

    def arg(v):
        if isinstance(v, Ref):
            return ref(v.key)
        if isinstance(v, Sym):
            return sym(v.expr)
        if type(v) is list:
            return [arg(x) for x in v]
        if type(v) is tuple:
            return tuple(arg(x) for x in v)
        if type(v) is dict:
            return {k: arg(x) for k, x in v.items()}
        if type(v) is slice:
            return slice(arg(v.start), arg(v.stop), arg(v.step))
        return v

    grad = rec.entry_grad
    for n in rec.nodes:
        if n.grad != grad:
            graph.call_function(_C._set_grad_enabled, (n.grad,))
            grad = n.grad
        args, kwargs = arg(n.args), arg(n.kwargs)
        if n.name in _OPERATORS and not kwargs and Tensor.__dict__.get(n.name) is n.fn:
            outs[n.index] = graph.call_function(_OPERATORS[n.name], args)
        elif n.name in _REFLECTED and not kwargs and len(args) == 2:
            outs[n.index] = graph.call_function(_REFLECTED[n.name], (args[1], args[0]))
        elif n.name in _TENSOR_PROPERTIES:
            outs[n.index] = graph.call_function(builtins.getattr, (args[0], n.name))
        elif Tensor.__dict__.get(n.name) is n.fn:
            outs[n.index] = graph.call_method(n.name, args, kwargs)
        else:
            outs[n.index] = graph.call_function(n.fn, args, kwargs)
    if grad != rec.exit_grad:
        graph.call_function(_C._set_grad_enabled, (rec.exit_grad,))
    leaves = []
    _leaves(output_template, leaves)
    graph.output(tuple(ref(r.key) for r in leaves))
    return GraphModule(Module(), graph), order, leaves


def _leaves(t, out):
    if isinstance(t, Ref):
        out.append(t)
    elif isinstance(t, (list, tuple)):
        for x in t:
            _leaves(x, out)
    elif isinstance(t, dict):
        for x in t.values():
            _leaves(x, out)


def _rebuild(t, values):
    if isinstance(t, Ref):
        return values[id(t)]
    if type(t) is list:
        return [_rebuild(x, values) for x in t]
    if type(t) is tuple:
        return tuple(_rebuild(x, values) for x in t)
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return type(t)(*[_rebuild(x, values) for x in t])
    if type(t) is dict:
        return {k: _rebuild(x, values) for k, x in t.items()}
    return t


def compile_with_backend(backend, rec, output_template, tensor_inputs, flat):
    """A replay(inputs, externals) that runs what `backend(gm, example_inputs)` returned."""
    if any(isinstance(x, Sym) for x in _walk(output_template)):
        raise NotImplementedError("a callable backend with a symbolic size in the result")
    gm, order, leaves = to_graph_module(rec, output_template, tensor_inputs)
    example = [flat[k[1]] if k[0] == "in" else rec.externals[k[1]][1] for k in order]
    compiled = backend(gm, example)
    if compiled is None or not callable(compiled):
        from .exc import BackendCompilerFailed

        raise BackendCompilerFailed(f"backend {getattr(backend, '__name__', backend)!r} returned "
                                    f"{type(compiled).__name__}, not a callable")

    def replay(inputs, externals):
        args = [inputs[k[1]] if k[0] == "in" else externals[k[1]] for k in order]
        outs = compiled(*args)
        return _rebuild(output_template, {id(r): v for r, v in zip(leaves, outs)})

    return gm, replay


def _walk(t):
    if isinstance(t, (list, tuple)):
        for x in t:
            yield from _walk(x)
    elif isinstance(t, dict):
        for x in t.values():
            yield from _walk(x)
    else:
        yield t
