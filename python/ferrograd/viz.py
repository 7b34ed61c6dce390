"""Graph inspection: the backward graph of a tensor as Graphviz DOT (`to_dot`).

Boxes: the root tensor(s) with their shapes (green), one box per grad_fn node with its name (grey),
one per leaf's AccumulateGrad with the leaf's shape and dtype (blue), and the tensors each node saved
for backward with shape, dtype and size in bytes (orange, dashed edge; ferrograd nodes expose them as
`_saved_tensors`, torch's as `_saved_*` attributes). Edges point
the way the forward went: from each node's next_functions to the node, and from the root's grad_fn
to the root. Works on torch tensors too, which is how the tests compare the two graphs.
"""

import os
import shutil
import subprocess

__all__ = ["to_dot"]


def _shape(t):
    return "(" + ", ".join(str(int(s)) for s in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def _dtype(t):
    return str(t.dtype).split(".")[-1]


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _node_name(fn):
    return fn.name().split("::")[-1]


def _nbytes(t):
    return int(t.numel()) * int(t.element_size())


def _size_str(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def _saved_tensors(fn):
    """(name, tensor) of the saved tensors a node exposes: torch's one-by-one `_saved_self`,
    `_saved_other`, ... attributes (which ferrograd's nodes have too), else ferrograd's
    `_saved_tensors` tuple (nodes whose saved values have no names)."""
    out = []
    named = False
    for attr in dir(fn):
        if not attr.startswith("_saved_") or attr == "_saved_tensors":
            continue
        named = True
        try:
            val = getattr(fn, attr)
        except RuntimeError:  # freed after backward
            continue
        vals = val if isinstance(val, (tuple, list)) else (val,)
        for k, v in enumerate(vals):
            if hasattr(v, "shape") and hasattr(v, "dtype"):
                out.append((attr[len("_saved_"):] + (f"[{k}]" if len(vals) > 1 else ""), v))
    if named:
        return out
    try:
        own = getattr(fn, "_saved_tensors", None)
    except RuntimeError:  # freed after backward
        own = None
    if own is not None:
        return [(f"saved[{k}]" if len(own) > 1 else "saved", t) for k, t in enumerate(own)]
    return out


def to_dot(tensor, path=None):
    """The backward graph of `tensor` (or a sequence of tensors) as DOT source, returned.

    With `path`, the source is also written there, and, when the Graphviz `dot` program is on PATH,
    rendered to SVG beside it (same name, `.svg`)."""
    roots = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
    lines = [
        "digraph backward {",
        '  graph [rankdir=TB, fontname="Helvetica"];',
        '  node [shape=box, style="filled,rounded", fontname="Helvetica", fontsize=11, height=0.3];',
        '  edge [arrowsize=0.7];',
    ]
    ids = {}

    def node_id(obj):
        key = hash(obj)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
        return ids[key], key

    seen = set()
    todo = []
    for i, t in enumerate(roots):
        rid = f"out{i}"
        lines.append(f"  {rid} [label={_quote('output' + (str(i) if len(roots) > 1 else '') + chr(10) + _shape(t))}, fillcolor=darkolivegreen1];")
        fn = t.grad_fn
        if fn is None:
            if t.requires_grad:  # a leaf on its own
                lines[-1] = f"  {rid} [label={_quote('leaf' + chr(10) + _shape(t) + ' ' + _dtype(t))}, fillcolor=lightblue];"
            continue
        nid, _ = node_id(fn)
        lines.append(f"  {nid} -> {rid};")
        todo.append(fn)
    while todo:
        fn = todo.pop()
        nid, key = node_id(fn)
        if key in seen:
            continue
        seen.add(key)
        variable = getattr(fn, "variable", None)
        if variable is not None:
            label = "AccumulateGrad" + "\n" + _shape(variable) + " " + _dtype(variable)
            lines.append(f"  {nid} [label={_quote(label)}, fillcolor=lightblue];")
            continue
        lines.append(f"  {nid} [label={_quote(_node_name(fn))}, fillcolor=lightgrey];")
        for k, (name, saved) in enumerate(_saved_tensors(fn)):
            sid = f"{nid}_s{k}"
            label = name + chr(10) + _shape(saved) + " " + _dtype(saved) + chr(10) + _size_str(_nbytes(saved))
            lines.append(f"  {sid} [label={_quote(label)}, fillcolor=orange];")
            lines.append(f"  {sid} -> {nid} [style=dashed, arrowhead=none];")
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            cid, _ = node_id(nxt)
            lines.append(f"  {cid} -> {nid};")
            todo.append(nxt)
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
