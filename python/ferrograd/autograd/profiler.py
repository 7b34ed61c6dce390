"""`ferrograd.autograd.profiler`: per-op counts and times, forward and backward, in torch's format.

The engine records the events (`src/autograd/profiler.rs`): each op entry point opens a scope named as
torch names the aten op (`aten::mul`), each backward node the engine runs opens one named after the
node (`MulBackward0`); a scope's self time excludes the scopes nested in it on the same thread.
This module only groups those events and prints them: `key_averages().table()` is laid out as torch's.
"""

import json
from collections import OrderedDict

from .. import _C

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


def _format_time(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{us * 100.0 / total_us:.2f}%"


class FunctionEvent:
    """One recorded scope. Times are in microseconds, as torch's."""

    def __init__(self, id, name, thread, start_ns, end_ns, self_ns, depth, is_backward):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread
        self.start_us = start_ns / 1e3
        self.end_us = end_ns / 1e3
        self.cpu_time_total = (end_ns - start_ns) / 1e3
        self.self_cpu_time_total = self_ns / 1e3
        self.depth = depth
        self.is_backward = is_backward
        self.count = 1
        self.cpu_parent = None
        self.cpu_children = []
        self.input_shapes = None
        self.stack = None
        self.node_id = -1

    @property
    def cpu_time(self):
        return self.cpu_time_total

    @property
    def time_range(self):
        return (self.start_us, self.end_us)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={_format_time(self.cpu_time_total)} self_cpu_time={_format_time(self.self_cpu_time_total)}>")


class FunctionEventAvg:
    """Events of one name, summed (`key_averages()`)."""

    def __init__(self, key):
        self.key = key
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = None
        self.node_id = -1
        self.cpu_parent = None

    def add(self, evt):
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        return self

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time)} count={self.count}>")


class EventList(list):
    """A list of events with torch's `table`, `key_averages`, `total_average` and chrome export."""

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = OrderedDict()
        for evt in self:
            groups.setdefault(evt.key, FunctionEventAvg(evt.key)).add(evt)
        return EventList(groups.values())

    def total_average(self):
        total = FunctionEventAvg("Total")
        for evt in self:
            total.add(evt)
        return total

    @property
    def self_cpu_time_total(self):
        return sum(evt.self_cpu_time_total for evt in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        return _build_table(self, sort_by, row_limit, max_name_column_width, header, top_level_events_only, time_unit)

    def export_chrome_trace(self, path):
        """Chrome trace-event JSON (open in chrome://tracing or Perfetto)."""
        events = [{"name": e.name, "ph": "X", "ts": e.start_us, "dur": e.cpu_time_total, "pid": "CPU",
                   "tid": e.thread, "cat": "backward" if e.is_backward else "forward", "args": {}}
                  for e in self if isinstance(e, FunctionEvent)]
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)


def _build_table(events, sort_by, row_limit, max_name_width, header, top_level_only, time_unit):
    if not events:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by), reverse=True)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_width is not None:
        name_width = min(name_width, max_name_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [name_width] + [12] * (len(headers) - 1)
    row_format = "".join("{: >" + str(w) + "}  " for w in widths)
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt(us):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return _format_time(us)

    total_self = sum(e.self_cpu_time_total for e in events)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_only and getattr(e, "depth", 0) != 0:
            continue
        shown += 1
        name = e.key
        if max_name_width is not None and len(name) >= max_name_width - 3:
            name = name[: max_name_width - 3] + "..."
        out.append(row_format.format(
            name, _format_share(e.self_cpu_time_total, total_self), fmt(e.self_cpu_time_total),
            _format_share(e.cpu_time_total, total_self), fmt(e.cpu_time_total), fmt(e.cpu_time), e.count))
    out += [sep, f"Self CPU time total: {_format_time(total_self)}"]
    return "\n".join(out) + "\n"


class profile:
    """Context manager that records every op run inside it, forward and backward.

    >>> with ferrograd.autograd.profiler.profile() as prof:
    ...     loss = model(x).sum(); loss.backward()
    >>> print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

    Only CPU time is measured (there is no device timeline); `record_shapes`, `profile_memory`,
    `with_stack` and `with_flops` are accepted for torch compatibility and record nothing more.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=True, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_device = use_device
        self.function_events = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        if _C._profiler_enabled():
            raise RuntimeError("Profiler is already enabled on this thread")
        self.entered = True
        _C._profiler_start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.enabled:
            return False
        raw = _C._profiler_stop()
        self.function_events = EventList(FunctionEvent(i, *r) for i, r in enumerate(raw))
        _link_parents(self.function_events)
        return False

    def _check_finished(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def events(self):
        self._check_finished()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finished()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finished()
        return self.function_events.table(sort_by, row_limit, max_src_column_width, max_name_column_width,
                                          max_shapes_column_width, header, top_level_events_only, time_unit)

    def total_average(self):
        self._check_finished()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finished()
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finished()
        self.function_events.export_chrome_trace(path)

    def __str__(self):
        return self.table() if self.function_events is not None else "<unfinished profiler>"


def _link_parents(events):
    """cpu_parent / cpu_children from nesting on each thread (events are ordered by start)."""
    open_by_thread = {}
    for e in events:
        stack = open_by_thread.setdefault(e.thread, [])
        while stack and stack[-1].end_us < e.end_us:
            stack.pop()
        if stack and e.depth > stack[-1].depth:
            e.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(e)
        stack.append(e)


class record_function:
    """A user-named scope in the profile: `with record_function("attention"): ...` (also a decorator)."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._scope = None

    def __enter__(self):
        self._scope = _C._RecordFunction(self.name)
        self._scope.__enter__()
        return self

    def __exit__(self, *exc):
        scope, self._scope = self._scope, None
        if scope is not None:
            scope.__exit__()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with record_function(self.name, self.args):
                return fn(*a, **kw)

        return wrapper
