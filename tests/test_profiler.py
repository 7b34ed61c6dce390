"""autograd.profiler: per-op counts and times for forward and backward, torch's table layout.

Every assertion holds for torch's profiler too (FG_TEST_AGAINST_TORCH=1 runs it against torch)."""
import re

import numpy as np

from conftest import fg


def leaf(shape=(8, 8), grad=True):
    return fg.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=grad)


def averages(prof):
    return {e.key: e for e in prof.key_averages()}


def test_forward_ops_counted_by_torch_names():
    x = leaf(grad=False)
    with fg.autograd.profiler.profile() as prof:
        for _ in range(3):
            x.exp()
        x.tanh()
        x @ x
    avg = averages(prof)
    assert avg["aten::exp"].count == 3
    assert avg["aten::tanh"].count == 1
    assert avg["aten::matmul"].count == 1
    assert not any("Backward" in k for k in avg)


def test_backward_nodes_recorded_with_grad_fn_names():
    x = leaf()
    with fg.autograd.profiler.profile() as prof:
        y = (x * 2).tanh().sum()
        y.backward()
    avg = averages(prof)
    for name in ("aten::mul", "aten::tanh", "aten::sum", "MulBackward0", "TanhBackward0", "SumBackward0"):
        assert name in avg, name
    for name in ("MulBackward0", "TanhBackward0", "SumBackward0"):
        assert avg[name].count == 1
    # gradient math still correct while profiling
    expected = 2 * (1 - np.tanh(2 * x.detach().numpy()) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_times_are_consistent():
    x = leaf((64, 64))
    with fg.autograd.profiler.profile() as prof:
        (x @ x).relu().sum().backward()
    for e in prof.key_averages():
        assert e.count >= 1
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-6
        assert abs(e.cpu_time * e.count - e.cpu_time_total) <= 1e-6 * max(1.0, e.cpu_time_total)
    total = prof.key_averages().self_cpu_time_total
    assert total > 0


def test_record_function_scope_contains_its_ops():
    x = leaf(grad=False)
    with fg.autograd.profiler.profile() as prof:
        with fg.autograd.profiler.record_function("my_block"):
            x.exp().sin()
    avg = averages(prof)
    assert avg["my_block"].count == 1
    assert avg["my_block"].cpu_time_total >= avg["aten::exp"].cpu_time_total + avg["aten::sin"].cpu_time_total - 1e-3
    events = [e for e in prof.function_events if e.name == "aten::exp"]
    assert len(events) == 1 and events[0].cpu_parent is not None and events[0].cpu_parent.name == "my_block"


def test_custom_function_backward_is_recorded():
    class Square(fg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = leaf()
    with fg.autograd.profiler.profile() as prof:
        Square.apply(x).sum().backward()
    assert averages(prof)["SquareBackward"].count == 1


def test_table_layout():
    x = leaf()
    with fg.autograd.profiler.profile() as prof:
        (x * 3).sum().backward()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=5)
    lines = table.strip().split("\n")
    sep = lines[0]
    assert set(sep) == {"-", " "} and sep.startswith("-")
    header = lines[1].split()
    assert header[:1] == ["Name"] and " ".join(header).endswith("Self CPU % Self CPU CPU total % CPU total CPU time avg # of Calls")
    assert lines[2] == sep and lines[-2] == sep
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:-2]
    assert 1 <= len(rows) <= 5
    selfs = [r.split()[-5] for r in rows]  # "Self CPU" column, e.g. 12.345us
    assert all(re.fullmatch(r"[0-9.]+(us|ms|s)", s) for s in selfs)
    pct = [float(r.split()[-6].rstrip("%")) for r in rows]
    assert pct == sorted(pct, reverse=True)  # sorted by self time


def test_profiler_off_records_nothing_and_export(tmp_path):
    x = leaf()
    with fg.autograd.profiler.profile(enabled=False):
        (x * 2).sum().backward()
    with fg.autograd.profiler.profile() as prof:
        x.exp()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    import json

    trace = json.loads(path.read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    assert any(e.get("name") == "aten::exp" for e in events)


def test_new_profiler_api():
    x = leaf(grad=False)
    with fg.profiler.profile(activities=[fg.profiler.ProfilerActivity.CPU]) as prof:
        with fg.profiler.record_function("region"):
            x.exp()
    assert {"aten::exp", "region"} <= set(averages(prof))
