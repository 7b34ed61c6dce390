"""ferrograd.compile and torch.compiler: reset, disable, is_compiling, is_dynamo_compiling,
compile_times. See docs/guides/compile.md for what a compiled function captures and replays."""

import functools

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "compile_times", "list_backends", "set_stance", "assume_constant_result", "allow_in_graph"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """torch.compile: a Module gives an `OptimizedModule`, a function gives a function; with no
    `model`, a decorator. Every backend name runs ferrograd's capture-and-replay executor."""
    from .._dynamo import exc, list_backends as _list
    from .._dynamo.eval_frame import OptimizedModule, compiled_function
    from ..nn.modules.module import Module

    if model is None:
        def decorator(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorator
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if isinstance(backend, str):
        if backend not in _list(exclude_tags=()):
            raise exc.InvalidBackend(backend)
    elif not callable(backend):
        raise exc.InvalidBackend(backend)
    if backend == "inductor" and mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, not {type(options).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")
    if disable:
        return model
    opts = dict(fullgraph=bool(fullgraph), dynamic=dynamic, backend=backend)
    if isinstance(model, Module):
        return OptimizedModule(model, **opts)
    return compiled_function(model, **opts)


def reset():
    """Forget every compiled entry of every compiled function (and the compile times)."""
    from .._dynamo.eval_frame import reset as _reset

    _reset()


def disable(fn=None, recursive=True, *, reason=None):
    """A function that ferrograd.compile does not capture: inside a compiled function, a call to it
    is a graph break and it runs eagerly. Without `fn`, a decorator."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    from .._dynamo import capture, eval_frame

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        rec = capture.current()
        if rec is not None and not rec.depth and rec.active:
            rec.graph_break(f"call to {getattr(fn, '__qualname__', fn)!r}, which compiler.disable excludes"
                            + (f" ({reason})" if reason else ""))
        eval_frame._disabled_depth += 1
        if rec is None:
            try:
                return fn(*args, **kwargs)
            finally:
                eval_frame._disabled_depth -= 1
        rec.depth += 1  # its ops run eagerly, unrecorded
        try:
            return fn(*args, **kwargs)
        finally:
            rec.depth -= 1
            eval_frame._disabled_depth -= 1

    disabled._torchdynamo_disable = True
    return disabled


def is_compiling():
    """True while ferrograd.compile is capturing (the function runs for real then; replays do not
    run it)."""
    from .._dynamo.eval_frame import is_compiling as _is

    return _is()


def is_dynamo_compiling():
    return is_compiling()


def is_exporting():
    return False


def compile_times(repr="str", aggregate=False):
    """Time per capture stage (record, graph, guards) over every capture so far, as
    torch._dynamo.utils.compile_times: a table string, or with repr="csv" (names, values)."""
    from .._dynamo.eval_frame import compile_times as times

    if repr == "csv":
        names = list(times)
        return names, [sum(v) if aggregate else list(v) for v in times.values()]
    lines = ["ferrograd.compile times (seconds per capture)", "stage      calls   total     mean"]
    for stage, v in times.items():
        lines.append(f"{stage:<10} {len(v):>5} {sum(v):>8.5f} {sum(v) / max(len(v), 1):>8.5f}")
    return "\n".join(lines)


def list_backends(exclude_tags=("debug", "experimental")):
    from .._dynamo import list_backends as _list

    return _list(exclude_tags)


def set_stance(stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
    """torch.compiler.set_stance: "force_eager" runs compiled functions eagerly, "default" restores."""
    from .._dynamo import eval_frame

    if stance not in ("default", "force_eager", "eager_on_recompile", "fail_on_recompile"):
        raise RuntimeError(f"invalid stance {stance!r}")
    eval_frame.stance = stance
    return None


def assume_constant_result(fn):
    return fn


def allow_in_graph(fn):
    return fn
