"""torch.fx.subgraph_rewriter.replace_pattern: find a pattern graph in a GraphModule and replace
each (non-overlapping) occurrence with a replacement graph.

`pattern` and `replacement` are functions (traced with symbolic_trace) or GraphModules with the same
number of inputs. A match starts from a node that plays the part of the pattern's output and
walks the pattern backwards: same opcode and target, same literal arguments, and each pattern
input bound to one value throughout. Nodes of a match other than its output must not be used
outside the match (they are erased).
"""

from typing import NamedTuple

from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node  # the pattern's output node (the node the search starts from)
    nodes_map: dict  # pattern Node -> Node (or value, for an input) of the searched graph


def _graph_of(obj):
    if isinstance(obj, GraphModule):
        return obj.graph, obj
    if isinstance(obj, Graph):
        return obj, None
    from ._symbolic_trace import symbolic_trace

    gm = symbolic_trace(obj)
    return gm.graph, gm


def _match(pattern_anchor, node):
    """The pattern-node -> graph-value map if the pattern ends at `node`, else None."""
    nodes_map = {}

    def match_value(p, g):
        if isinstance(p, Node):
            if p.op == "placeholder":
                if p in nodes_map:
                    bound = nodes_map[p]
                    return bound is g if isinstance(bound, Node) or isinstance(g, Node) else bound == g
                nodes_map[p] = g
                return True
            return isinstance(g, Node) and match_node(p, g)
        if isinstance(p, (tuple, list)):
            return type(p) is type(g) and len(p) == len(g) and all(match_value(a, b) for a, b in zip(p, g))
        if isinstance(p, dict):
            return isinstance(g, dict) and p.keys() == g.keys() and all(match_value(p[k], g[k]) for k in p)
        return not isinstance(g, Node) and type(p) is type(g) and p == g

    def match_node(p, g):
        if p in nodes_map:
            return nodes_map[p] is g
        if p.op != g.op or p.target != g.target or len(p.args) != len(g.args) or p.kwargs.keys() != g.kwargs.keys():
            return False
        if g in nodes_map.values():  # one graph node plays one pattern part
            return False
        nodes_map[p] = g
        return all(match_value(a, b) for a, b in zip(p.args, g.args)) and \
            all(match_value(p.kwargs[k], g.kwargs[k]) for k in p.kwargs)

    if not match_node(pattern_anchor, node):
        return None
    inner = {g for p, g in nodes_map.items() if p.op != "placeholder"}
    for p, g in nodes_map.items():
        if p.op != "placeholder" and p is not pattern_anchor and any(u not in inner for u in g.users):
            return None  # an intermediate value is used outside the match
    return nodes_map


def replace_pattern(gm, pattern, replacement):
    """Replace every non-overlapping match of `pattern` in `gm.graph` with `replacement`; returns
    the Matches, recompiles `gm`."""
    graph = gm.graph
    pattern_graph, _ = _graph_of(pattern)
    replacement_graph, replacement_gm = _graph_of(replacement)
    p_out = next(n for n in pattern_graph.nodes if n.op == "output")
    if not isinstance(p_out.args[0], Node):
        raise NotImplementedError("replace_pattern: the pattern must return a single value")
    anchor = p_out.args[0]
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs but the replacement takes "
                         f"{len(r_inputs)}")

    found, taken = [], set()
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        nodes_map = _match(anchor, node)
        if nodes_map is None:
            continue
        inner = {g for p, g in nodes_map.items() if p.op != "placeholder"}
        if inner & taken:
            continue
        taken |= inner
        found.append((node, nodes_map))

    replaced = {}  # a replaced match's output -> the replacement's output
    for node, nodes_map in found:
        if replacement_gm is not None:
            for rn in replacement_graph.nodes:
                if rn.op in ("get_attr", "call_module") and not hasattr(gm, rn.target.split(".")[0]):
                    _copy_attr(replacement_gm, gm, rn.target)
        for p in p_inputs:  # an input may be the output of an earlier, now replaced, match
            while p in nodes_map and isinstance(nodes_map[p], Node) and nodes_map[p] in replaced:
                nodes_map[p] = replaced[nodes_map[p]]
        val_map = {r: nodes_map.get(p) for p, r in zip(p_inputs, r_inputs)}
        with graph.inserting_before(node):
            new_out = graph.graph_copy(replacement_graph, val_map)
        node.replace_all_uses_with(new_out)
        replaced[node] = new_out
        for p in reversed(pattern_graph.nodes):
            if p.op not in ("placeholder", "output"):
                graph.erase_node(nodes_map[p])
    gm.recompile()
    return [Match(anchor=anchor, nodes_map=nodes_map) for _, nodes_map in found]
