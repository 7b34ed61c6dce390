"""The nested containers that torch.func's transforms accept and return (torch.utils._pytree's
"pytrees"): tuples, lists, dicts (insertion order), namedtuples; anything else is a leaf.

`tree_flatten` gives the leaves in order and a spec that `tree_unflatten` rebuilds the container from;
`broadcast_prefix` expands an `in_dims`/`out_dims`-style prefix tree (an int or None standing for a
whole subtree) over a full tree, as vmap reads them.
"""

__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "broadcast_prefix", "LEAF"]

LEAF = None  # the spec of a leaf


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree):
    """(leaves, spec): spec is LEAF for a leaf, else (kind, keys, child specs)."""
    leaves = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _flatten(tree, leaves):
    if isinstance(tree, (tuple, list)) and not _is_namedtuple(tree) and type(tree) in (tuple, list):
        return (type(tree), None, [_flatten(v, leaves) for v in tree])
    if _is_namedtuple(tree):
        return (type(tree), None, [_flatten(v, leaves) for v in tree])
    if isinstance(tree, dict):
        keys = list(tree)
        return (type(tree), keys, [_flatten(tree[k], leaves) for k in keys])
    leaves.append(tree)
    return LEAF


def tree_unflatten(leaves, spec):
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec is LEAF:
        return next(it)
    kind, keys, children = spec
    values = [_unflatten(it, c) for c in children]
    if keys is not None:
        return kind(zip(keys, values))
    if kind in (tuple, list):
        return kind(values)
    return kind(*values)  # a namedtuple


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(v) for v in leaves], spec)


def spec_str(spec):
    """A short text of a spec, for error messages."""
    if spec is LEAF:
        return "*"
    kind, keys, children = spec
    inner = ", ".join(spec_str(c) for c in children)
    if keys is not None:
        return "{" + ", ".join(f"{k!r}: {spec_str(c)}" for k, c in zip(keys, children)) + "}"
    return f"{kind.__name__}({inner})"


def broadcast_prefix(prefix, tree, is_leaf_value=lambda v: v is None or isinstance(v, int)):
    """The leaves of `prefix` expanded over `tree`'s leaves: a leaf of the prefix (an int or None)
    covers the whole subtree at its place. Raises ValueError when the structures disagree."""
    out = []
    _broadcast(prefix, tree, out, is_leaf_value)
    return out


def _broadcast(prefix, tree, out, is_leaf_value):
    if is_leaf_value(prefix):
        n = len(tree_flatten(tree)[0])
        out.extend([prefix] * n)
        return
    if isinstance(prefix, (tuple, list)) and not isinstance(tree, dict) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            raise ValueError("structure mismatch")
        for p, t in zip(prefix, tree):
            _broadcast(p, t, out, is_leaf_value)
        return
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            raise ValueError("structure mismatch")
        for k in tree:
            _broadcast(prefix[k], tree[k], out, is_leaf_value)
        return
    raise ValueError("structure mismatch")
