"""ferrograd.fx.to_dot: a Graph (or GraphModule) as Graphviz DOT, in the style of the
backward-graph viewer (ferrograd.viz): one box per node, labelled with its name and what it does
(and the shape and dtype ShapeProp recorded, if any), coloured by opcode; edges go from each
node to its users."""

import os
import shutil
import subprocess

from ..viz import _dtype, _quote, _shape
from .node import _qualified_name

__all__ = ["to_dot"]

_COLORS = {
    "placeholder": "lightblue",
    "get_attr": "orange",
    "call_module": "lightgoldenrod1",
    "call_function": "lightgrey",
    "call_method": "lightgrey",
    "output": "darkolivegreen1",
}


def _label(node):
    lines = [node.name if node.op != "output" else "output"]
    if node.op not in ("output",):
        target = _qualified_name(node.target) if node.op == "call_function" else node.target
        lines.append(f"{node.op}: {target}")
    meta = node.meta.get("tensor_meta")
    if meta is not None and hasattr(meta, "shape"):
        lines.append(f"{_shape(meta)} {_dtype(meta)}")
    return "\n".join(lines)


def to_dot(graph, path=None):
    """DOT source of `graph` (a Graph or GraphModule; torch.fx's are read too), returned; with `path` also written there and,
    when Graphviz's `dot` is on PATH, rendered to SVG beside it."""
    graph = getattr(graph, "graph", graph)
    lines = [
        "digraph fx {",
        '  graph [rankdir=TB, fontname="Helvetica"];',
        '  node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=11, height=0.3];',
        "  edge [arrowsize=0.7];",
    ]
    ids = {}
    for i, node in enumerate(graph.nodes):
        ids[node] = f"n{i}"
        lines.append(f"  n{i} [label={_quote(_label(node))}, fillcolor={_COLORS[node.op]}];")
    for node in graph.nodes:
        for inp in node.all_input_nodes:
            if inp in ids:
                lines.append(f"  {ids[inp]} -> {ids[node]};")
    lines.append("}")
    source = "\n".join(lines) + "\n"
    if path is not None:
        path = os.fspath(path)
        with open(path, "w") as f:
            f.write(source)
        dot = shutil.which("dot")
        if dot is not None:
            svg = os.path.splitext(path)[0] + ".svg"
            subprocess.run([dot, "-Tsvg", path, "-o", svg], check=True, capture_output=True)
    return source
