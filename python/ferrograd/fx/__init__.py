"""ferrograd.fx: capture a Python program as a graph to print, inspect, transform and run again
(torch.fx's API).

`symbolic_trace(model)` runs `model.forward` on Proxies and returns a GraphModule: its `graph`
prints in torch.fx's format, its `code` is the generated forward, and it computes the same values
and gradients as the model. Graphs are edited through Graph/Node (inserting_before, create_node,
replace_all_uses_with, erase_node, eliminate_dead_code, lint), executed or rebuilt by Interpreter
and Transformer, rewritten by `subgraph_rewriter.replace_pattern`, annotated by
`passes.shape_prop.ShapeProp`, and drawn by `to_dot`.
"""

from . import passes, subgraph_rewriter  # noqa: F401
from ._dot import to_dot
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError
from .subgraph_rewriter import replace_pattern

__all__ = [
    "symbolic_trace", "Tracer", "wrap", "PH", "Graph", "GraphModule", "Node", "Proxy", "Attribute", "TraceError",
    "Interpreter", "Transformer", "replace_pattern", "map_arg", "to_dot", "PythonCode", "passes",
    "subgraph_rewriter",
]
