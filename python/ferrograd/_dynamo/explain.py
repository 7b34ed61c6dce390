"""torch._dynamo.explain(fn)(*args): capture `fn` once and report its graphs, ops, graph breaks with
their reasons and places, and guards, without keeping anything in a cache."""

from . import eval_frame

__all__ = ["explain", "ExplainOutput", "BreakReason"]


class BreakReason:
    def __init__(self, reason, where):
        self.reason = reason
        self.user_stack = [where]

    def __repr__(self):
        return f"BreakReason(reason={self.reason!r}, user_stack={self.user_stack!r})"


class ExplainOutput:
    """torch._dynamo.backends.debugging.ExplainOutput's fields: graphs (the replay source of each
    captured graph), graph_count, graph_break_count, break_reasons, op_count, ops_per_graph,
    out_guards, compile_times."""

    def __init__(self, entry, regions):
        self.graphs = [entry.graph_code] if entry.replay is not None else []
        self.ops_per_graph = regions
        self.graph_count = sum(1 for ops in regions if ops)
        self.graph_break_count = len(entry.breaks)
        self.break_reasons = [BreakReason(r, w) for r, w in entry.breaks]
        self.op_count = sum(len(ops) for ops in regions)
        self.out_guards = list(entry.guard_text)
        self.compile_times = (f"record {entry.t_record:.6f} s, graph {entry.t_graph:.6f} s, "
                              f"guards {entry.t_guards:.6f} s")

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]
        for i, b in enumerate(self.break_reasons):
            lines.append(f"  Break Reason {i + 1}:\n    Reason: {b.reason}\n    User Stack: {b.user_stack[0]}")
        lines.append("Ops per Graph:")
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}:")
            lines += [f"    {op}" for op in ops]
        lines.append(f"Compile times: {self.compile_times}")
        return "\n".join(lines)


def explain(f, *extra_args, **extra_kwargs):
    """`explain(f)(*args, **kwargs)` -> ExplainOutput (f runs once, for real)."""
    def inner(*args, **kwargs):
        frame = eval_frame.CompiledFrame(f)
        frame(*args, **kwargs)
        entry = frame.entries[0]
        return ExplainOutput(entry, entry.regions)

    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
