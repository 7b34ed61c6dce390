"""torch._dynamo: the capture behind ferrograd.compile (see docs/guides/compile.md).

`reset()`, `config`, `exc`, `explain(fn)(*args)`, `list_backends()`, `OptimizedModule`,
`mark_dynamic` / `mark_static` / `maybe_mark_dynamic`, `disable`, `is_compiling`."""

from . import config, exc
from .eval_frame import reset, is_compiling
from .explain import explain, ExplainOutput

__all__ = ["config", "exc", "reset", "explain", "ExplainOutput", "list_backends", "is_compiling",
           "OptimizedModule", "disable", "mark_dynamic", "mark_static", "maybe_mark_dynamic", "is_dynamo_compiling"]

BACKENDS = ("cudagraphs", "inductor", "openxla", "tvm")
DEBUG_BACKENDS = ("eager", "aot_eager", "aot_eager_decomp_partition", "aot_eager_default_partitioner")


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names torch.compile accepts (the debug ones too when exclude_tags is empty).
    ferrograd runs every one of them with its own executor; the name only selects torch's
    behaviour where it differs (none today)."""
    return sorted(BACKENDS if exclude_tags else BACKENDS + DEBUG_BACKENDS)


def is_dynamo_compiling():
    return is_compiling()


def disable(fn=None, recursive=True, *, reason=None):
    from ..compiler import disable as _disable

    return _disable(fn, recursive, reason=reason)


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None):
    """Keep dim(s) `index` of `t` symbolic in the next capture that receives `t` as an input."""
    from .eval_frame import mark

    mark(t, index, dynamic=True)


def maybe_mark_dynamic(t, index):
    mark_dynamic(t, index)


def mark_static(t, index=None):
    """Keep dim(s) `index` (every dim when None) of `t` static, automatic dynamic sizes included."""
    from .eval_frame import mark

    mark(t, range(t.dim()) if index is None else index, dynamic=False)


def __getattr__(name):
    if name == "OptimizedModule":
        from . import eval_frame

        return eval_frame.OptimizedModule
    raise AttributeError(f"module 'ferrograd._dynamo' has no attribute '{name}'")
