"""Backward-graph objects (`tensor.grad_fn`) and engine statistics."""

import contextlib

from .. import _C

# Every grad_fn is an instance of Node: of a subclass named for its kind (`MulBackward0`, made
# once per kind by the engine's binding), or AccumulateGrad for a leaf's accumulator; the same
# object on every read while the node lives. `_saved_<name>` / `_raw_saved_<name>` as torch's.
Node = _C.Node
AccumulateGrad = _C.AccumulateGrad
SavedTensor = _C.SavedTensor


_hooks_disabled_message = None  # set while disable_saved_tensors_hooks is active


class saved_tensors_hooks:
    """Inside this context, every tensor saved for backward is passed through `pack_hook` and
    restored with `unpack_hook` when backward needs it (torch.autograd.graph.saved_tensors_hooks)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hooks_disabled_message is not None:
            raise RuntimeError(_hooks_disabled_message)
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors already live on the CPU here: kept as they are."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t, lambda t: t)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside this context, entering saved_tensors_hooks (or save_on_cpu) raises RuntimeError(error_message)."""
    global _hooks_disabled_message
    previous = _hooks_disabled_message
    _hooks_disabled_message = error_message
    try:
        yield
    finally:
        _hooks_disabled_message = previous


def stats():
    """Engine counters: live graph nodes in the arena, the arena's capacity (slots allocated), and
    the bytes of tensors saved for backward by live nodes (per saved reference; a buffer saved by
    two nodes counts twice; values packed by saved_tensors_hooks are not counted)."""
    live, capacity, saved = _C._graph_stats()
    return {"live_nodes": live, "arena_capacity": capacity, "saved_bytes": saved}
