"""Backward-graph objects (`tensor.grad_fn`) and engine statistics."""

from .. import _C

Node = _C.Node
AccumulateGrad = _C.AccumulateGrad


def stats():
    """Live graph nodes in the arena and the arena's capacity (slots allocated)."""
    live, capacity = _C._graph_stats()
    return {"live_nodes": live, "arena_capacity": capacity}
