"""The levels of nested function transforms (torch.func's vmap, grad, jvp; forward-mode AD's dual levels).

Each transform that wraps tensors (vmap's batched tensors, forward AD's dual tensors) takes a fresh level
when it starts and gives it back when it ends; its wrappers record that level. When one call receives
wrappers of several transforms, the one with the highest level (the innermost transform) handles the call
first and passes its unwrapped values on, so `vmap(jvp(f))`, `jacfwd(jacrev(f))` and `vmap(vmap(f))` nest
the way torch.func's do. `overrides.handle_torch_function` asks `TransformWrapper` for this order.
"""
import itertools

__all__ = ["TransformWrapper", "enter_level", "exit_level", "current_levels"]

_counter = itertools.count(1)
_active = []  # (level, kind) of every transform running now, outermost first


class TransformWrapper:
    """Base of the objects a transform hands to the user's function in place of tensors. A subclass sets
    `_level` on each instance and defines `__torch_function__`."""

    __slots__ = ()
    _level = 0


def enter_level(kind):
    """Start a transform of `kind` ("vmap", "grad", "jvp", "dual", ...); returns its level number."""
    level = next(_counter)
    _active.append((level, kind))
    return level


def exit_level(level):
    """End the transform that `enter_level` returned `level` for (they end innermost first)."""
    for i in range(len(_active) - 1, -1, -1):
        if _active[i][0] == level:
            del _active[i]
            return
    raise RuntimeError(f"transform level {level} is not active")


def current_levels(kind=None):
    """The active (level, kind) pairs, outermost first; only those of `kind` when it is given."""
    return [entry for entry in _active if kind is None or entry[1] == kind]


def precedence(value):
    """Sort key for overriding arguments: transform wrappers by level, innermost (highest) first, before
    other tensor-likes; those by subclass depth, as torch."""
    if isinstance(value, TransformWrapper):
        return (1, value._level, 0)
    return (0, 0, len(type(value).__mro__))
