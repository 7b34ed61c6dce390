"""Edge cases against torch: crashes and memory errors, panics, views through expand and diagonal,
values at the edges (inf, nan, ties), dtypes, and the exception kinds torch raises.
Each case runs the same code on torch and on ferrograd and compares."""

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

LIBS = [torch, fg]


def _run(code, timeout=120):
    """Run `code` in a fresh interpreter with the library under test as `L` (a crash is a signal)."""
    lib = "torch" if AGAINST_TORCH else "ferrograd"
    src = f"import {lib} as L\nimport numpy as np\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def _both(f):
    """f(torch) and f(ferrograd): each a value or the exception type."""
    out = []
    for L in LIBS:
        try:
            out.append(f(L))
        except Exception as e:  # noqa: BLE001 - the kind is what is compared
            out.append(type(e))
    return out


def _same_kind(f):
    t, g = _both(f)
    assert isinstance(t, type) and issubclass(t, Exception), f"torch did not raise: {t}"
    assert g is t, f"torch raised {t.__name__}, ferrograd gave {g}"


def _close(a, b, **kw):
    np.testing.assert_allclose(a.detach().double().numpy(), b.detach().double().numpy(), **kw)


# ---- crashes: a long chain of views, NumPy arrays outliving a tensor's storage ----------------------


def test_long_view_chain_is_freed_on_a_small_stack():
    # each view of a view used to hold the replay of the one before: dropping the last one recursed
    # once per view (a 1 MB stack died at ~40k) and the chain held all of them
    r = _run("""
        import threading, resource
        def work():
            x = L.zeros(4)
            y = x[:]
            for _ in range(40_000):
                y = y.view(4)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            for _ in range(200_000):
                y = y.view(4)
            grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            y.add_(1)
            assert x.tolist() == [1.0] * 4
            del y
            print("grown_kb", grown)
        threading.stack_size(1 << 20)
        t = threading.Thread(target=work)
        t.start(); t.join()
        print("ok")
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ok" in r.stdout
    grown = int(r.stdout.split("grown_kb")[1].split()[0])
    assert grown < 8_000, f"200k dropped views grew the process by {grown} kB"


def test_view_of_view_replay_keeps_gradients():
    # views of views replay from the base in one step: in-place through them, gradients as torch's
    def f(L):
        a = L.arange(12.0, dtype=L.float64).requires_grad_()
        b = a * 1
        v = b.view(3, 4)[1:, ::2].t()[0]
        v.mul_(3)
        w = b.view(4, 3).transpose(0, 1)[:, 1:3].reshape(-1)
        (b * b).sum().backward()
        return a.grad, v, w
    (ta, tv, tw), (ga, gv, gw) = _both(f)
    _close(ta, ga)
    _close(tv, gv)
    _close(tw, gw)


def test_numpy_array_keeps_the_storage():
    # an array from .numpy(), np.asarray (NumPy's __array_interface__ or __array__), __array__ or
    # the interface itself outlives `t.data = ...` / `resize_`: writing through it used to write
    # into freed memory, which the next tensor had reused
    exports = {"numpy": "t.numpy()", "asarray": "np.asarray(t)", "array": "t.__array__()",
               "interface": "np.asarray(type('I', (), {'__array_interface__': t.__array_interface__, 't': t})())"}
    if AGAINST_TORCH:
        del exports["interface"]  # torch has no __array_interface__
    cases = "".join(f"""
for swap in ("data", "resize"):
    t = L.arange(float(n))
    a = {get}
    if swap == "resize":
        t.resize_(3)
    t.data = L.zeros(3)
    v = L.full((n,), 7.0)
    a[:] = -1
    assert float(v.min()) == 7.0 and float(v.max()) == 7.0, ("another tensor was written", {name!r}, swap)
    assert float(a.sum()) == -n
    print("ok", {name!r}, swap)
""" for name, get in exports.items())
    r = _run("n = 2_000_000\n" + cases)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("ok") == 2 * len(exports), r.stdout


@pytest.mark.skipif(AGAINST_TORCH, reason="torch 2.x itself crashes (SIGSEGV) on this sequence")
def test_dlpack_capsule_keeps_the_storage():
    r = _run("""
        n = 2_000_000
        t = L.arange(float(n))
        cap = t.__dlpack__()
        t.data = L.zeros(3)
        v = L.full((n,), 7.0)
        u = L.from_dlpack(cap)
        u.fill_(-1)
        assert float(v.min()) == 7.0 and float(u.sum()) == -n
        print("ok")
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ok" in r.stdout


@pytest.mark.parametrize("export", [lambda t: t.numpy(), lambda t: np.asarray(t)], ids=["numpy", "asarray"])
def test_resize_of_an_exported_storage_is_refused(export):
    def f(L):
        t = L.arange(8.0)
        a = export(t)
        t.resize_(100)
        return a
    _same_kind(f)

    def shrink(L):
        t = L.arange(8.0)
        a = export(t)
        t.resize_(3)
        return t.tolist(), a.tolist()
    assert _both(shrink)[0] == _both(shrink)[1]


def test_resize_of_a_tensor_from_numpy_is_refused():
    _same_kind(lambda L: L.from_numpy(np.arange(8.0)).resize_(100))


# ---- panics that reached Python -------------------------------------------------------------------


def test_adaptive_max_pool_of_an_empty_plane():
    _same_kind(lambda L: L.nn.functional.adaptive_max_pool2d(L.ones(1, 1, 3, 0), 2))
    _same_kind(lambda L: L.nn.functional.adaptive_max_pool1d(L.ones(2, 1, 0), 2))
    t, g = _both(lambda L: tuple(L.nn.functional.adaptive_max_pool2d(L.ones(0, 1, 3, 3), 2).shape))
    assert t == g


@pytest.mark.parametrize("dt", ["float32", "bfloat16"])
def test_conv_transpose_output_too_small(dt):
    def one(L):
        d = getattr(L, dt)
        return L.nn.functional.conv_transpose1d(L.ones(1, 1, 2, dtype=d), L.ones(1, 2, 2, dtype=d), stride=2, padding=2)

    def two(L):
        d = getattr(L, dt)
        return L.nn.functional.conv_transpose2d(L.ones(1, 1, 2, 2, dtype=d), L.ones(1, 2, 2, 2, dtype=d), stride=2,
                                                padding=2)
    _same_kind(one)
    _same_kind(two)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        one(fg)


def test_conv2d_backward_of_an_empty_batch():
    def f(L):
        x = L.ones(0, 3, 0, 2, requires_grad=True)
        y = L.nn.functional.conv2d(x, L.ones(1, 3, 1, 1), stride=3, padding=(1, 0))
        y.sum().backward()
        return tuple(y.shape), tuple(x.grad.shape)
    t, g = _both(f)
    assert t == g


# ---- views: expand, diagonal, as_strided ---------------------------------------------------------


def test_write_through_an_expanded_view_reaches_the_base():
    def f(L):
        a = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 1
        t = b.expand(2, 3)
        t[0] = 5.0
        return b.tolist(), t.tolist()
    t, g = _both(f)
    assert t == g


def test_gradient_after_in_place_on_an_expanded_view():
    def f(L):
        a = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
        b = a * 1
        t = b.expand(2, 3)
        t[0].add_(10)
        (b.sum() + t.sum()).backward()
        return a.grad.tolist(), b.tolist()
    t, g = _both(f)
    assert t == g


def test_gradient_through_an_expanded_view_rebased_by_mul():
    def f(L):
        a = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = a * 1
        t = b.expand(4, 3)
        b.mul_(2)
        (t * L.arange(12.0).view(4, 3)).sum().backward()
        return a.grad.tolist()
    t, g = _both(f)
    assert t == g


def test_diagonal_is_a_view():
    def f(L):
        A = L.zeros(2, 2)
        A.diagonal().add_(1)
        B = L.zeros(2, 3, 4)
        B.diagonal(1, 1, 2).fill_(2)
        C = L.arange(16.0).view(4, 4)
        return A.tolist(), B.tolist(), C.diagonal(-1).tolist(), C.diagonal(2).tolist(), C.diagonal(9).tolist()
    t, g = _both(f)
    assert t == g


def test_diagonal_gradients_and_in_place():
    def f(L):
        a = L.arange(9.0, dtype=L.float64).view(3, 3).requires_grad_()
        b = a * 1
        d = b.diagonal()
        d.mul_(3)
        (b * L.arange(9.0, dtype=L.float64).view(3, 3)).sum().backward()
        g1 = a.grad.clone()
        x = L.arange(24.0, dtype=L.float64).view(2, 3, 4).requires_grad_()
        (x.diagonal(1, -1, -2) ** 2).sum().backward()
        return g1, x.grad, b.detach()
    for tv, gv in zip(*_both(f)):
        _close(tv, gv)
    _same_kind(lambda L: L.ones(3).diagonal())
    _same_kind(lambda L: L.ones(2, 2).diagonal(0, 1, 1))


def test_as_strided():
    def f(L):
        x = L.arange(10.0, dtype=L.float64).requires_grad_()
        y = x * 1
        w = y.as_strided((3, 3), (2, 1), 1)  # overlapping windows
        (w * L.arange(9.0, dtype=L.float64).view(3, 3)).sum().backward()
        z = L.as_strided(L.arange(6.0), (2, 2), (1, 2))
        return x.grad, w.detach(), z
    for tv, gv in zip(*_both(f)):
        _close(tv, gv)
    _same_kind(lambda L: L.arange(4.0).as_strided((3, 3), (1, 1)))
    _same_kind(lambda L: L.arange(4.0).as_strided((2,), (1, 1)))

    def write(L):
        base = L.zeros(6)
        base.as_strided((2, 2), (3, 1), 1).fill_(4)
        return base.tolist()
    t, g = _both(write)
    assert t == g


# ---- values at the edges -------------------------------------------------------------------------


def test_adaptive_avg_pool_keeps_inf_in_its_windows():
    def f(L):
        x = L.tensor([[[1.0, 2.0, math.inf, 4.0]]])
        return [L.nn.functional.adaptive_avg_pool1d(x, n).tolist() for n in (8, 3, 5)]
    t, g = _both(f)
    assert t == g

    def grad(L):
        x = L.arange(35.0, dtype=L.float64).view(1, 5, 7).requires_grad_()
        y = L.nn.functional.adaptive_avg_pool2d(x, (3, 9))
        (y * L.arange(27.0, dtype=L.float64).view(1, 3, 9)).sum().backward()
        return y, x.grad
    for tv, gv in zip(*_both(grad)):
        _close(tv, gv)


def test_hypot_does_not_overflow_or_underflow():
    def f(L):
        a = L.tensor([1e20, 3e-30, 3.0, -5.0, math.inf, 0.0], requires_grad=True)
        b = L.tensor([1.0, 4e-30, 4.0, 12.0, math.nan, 0.0])
        h = L.hypot(a, b)
        h[:4].sum().backward()
        return h, a.grad[[0, 2, 3]]
    (th, tg), (gh, gg) = _both(f)
    _close(th, gh, rtol=1e-6)
    _close(tg, gg, rtol=1e-6)


def test_prod_dtype():
    t, g = _both(lambda L: (lambda r: (r.item(), str(r.dtype)))(L.tensor([100, 3], dtype=L.int32).prod(dtype=L.int8)))
    assert t[0] == g[0] and t[1].split(".")[-1] == g[1].split(".")[-1]


def test_smooth_l1_gradient_at_inf():
    def f(L):
        x = L.tensor([math.inf, -math.inf, 0.5], requires_grad=True)
        L.nn.functional.smooth_l1_loss(x, L.zeros(3)).backward()
        return x.grad.tolist()
    t, g = _both(f)
    assert t == g


def test_threshold_with_nan():
    def f(L):
        x = L.tensor([1.0, -1.0, math.nan])
        return [str(v) for v in L.nn.Threshold(math.nan, 7.0)(x).tolist() + L.nn.Threshold(0.0, math.nan)(x).tolist()]
    t, g = _both(f)
    assert t == g


def test_adaptive_max_pool_tie_gives_the_gradient_to_one_element():
    def f(L):
        x = L.tensor([[[[0.0, 1.0], [1.0, 0.0]], [[2.0, 2.0], [2.0, 2.0]]]], requires_grad=True)
        L.nn.functional.adaptive_max_pool2d(x, 1).sum().backward()
        y = L.tensor([[[3.0, 3.0, 1.0, 3.0]]], requires_grad=True)
        L.nn.functional.adaptive_max_pool1d(y, 2).sum().backward()
        return x.grad.tolist(), y.grad.tolist()
    t, g = _both(f)
    assert t == g


# ---- dtypes --------------------------------------------------------------------------------------


def _dt(t):
    return str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("case", [
    lambda L: L.xlogy(L.ones(2, dtype=L.float16), L.ones(2, dtype=L.int8)),
    lambda L: L.nn.Threshold(1, 2)(L.arange(3)),
    lambda L: L.lcm(L.ones(2, dtype=L.int16), L.tensor(3, dtype=L.int32)),
    lambda L: L.gcd(L.ones(2, dtype=L.int16), L.tensor(3, dtype=L.int32)),
    lambda L: L.ldexp(L.ones(2, dtype=L.bool), L.ones(2, dtype=L.bfloat16)),
], ids=["xlogy", "threshold", "lcm", "gcd", "ldexp"])
def test_result_dtypes(case):
    t, g = _both(case)
    assert not isinstance(g, type), g
    assert _dt(t) == _dt(g)
    _close(t, g)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("norm", [
    lambda L, x: L.nn.functional.group_norm(x, 2),
    lambda L, x: L.nn.functional.rms_norm(x, (3,)),
    lambda L, x: L.nn.functional.instance_norm(x),
    lambda L, x: L.nn.functional.layer_norm(x, (3,)),
    lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
    lambda L, x: L.nn.BatchNorm1d(4).to(x.dtype)(x),
    lambda L, x: L.nn.LayerNorm(3).to(x.dtype)(x),
    lambda L, x: L.nn.GroupNorm(2, 4).to(x.dtype)(x),
    lambda L, x: L.nn.InstanceNorm1d(4)(x),
    lambda L, x: L.nn.BatchNorm1d(4)(x),  # float32 parameters, a half input: torch's mixed type
    lambda L, x: L.nn.LayerNorm(3)(x),
    lambda L, x: L.nn.GroupNorm(2, 4)(x),
    lambda L, x: L.nn.InstanceNorm1d(4, affine=True, track_running_stats=True)(x),
    lambda L, x: L.nn.RMSNorm(3)(x),
], ids=["group", "rms", "instance", "layer", "batch", "BatchNorm1d", "LayerNorm", "GroupNorm", "InstanceNorm1d",
        "BatchNorm1d-mixed", "LayerNorm-mixed", "GroupNorm-mixed", "InstanceNorm1d-mixed", "RMSNorm-mixed"])
def test_norms_on_half(dt, norm):
    data = np.random.RandomState(0).randn(2, 4, 3)

    def f(L):
        return norm(L, L.tensor(data, dtype=getattr(L, dt)))
    t, g = _both(f)
    assert not isinstance(g, type), g
    assert _dt(t) == _dt(g)
    _close(t, g, atol=0.05, rtol=0.05)


def test_mixed_norm_gradients():
    data = np.random.RandomState(1).randn(3, 4, 5)

    def f(L):
        x = L.tensor(data, dtype=L.bfloat16, requires_grad=True)
        m = L.nn.BatchNorm1d(4)
        ln = L.nn.LayerNorm(5)
        (m(x).float().sum() + (ln(x).float() ** 2).sum()).backward()
        return x.grad, m.weight.grad, ln.weight.grad, m.running_var
    t, g = _both(f)
    for a, b in zip(t, g):
        assert _dt(a) == _dt(b)
        _close(a, b, atol=0.1, rtol=0.05)


# ---- gradients that hooks and callers return -------------------------------------------------------


def test_hook_changing_the_dtype_is_refused():
    def f(L):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g.long())
        y.sum().backward()
    _same_kind(f)
    with pytest.raises(RuntimeError, match="changed the type of value"):
        f(fg)


def test_node_hooks_changing_the_shape_are_refused():
    def pre(L):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        y.grad_fn.register_prehook(lambda gs: (L.ones(2),))
        y.sum().backward()

    def post(L):
        x = L.ones(3, requires_grad=True)
        y = x * 2
        y.grad_fn.register_hook(lambda gi, go: (L.ones(2), None))
        y.sum().backward()
    _same_kind(pre)
    _same_kind(post)
    with pytest.raises(RuntimeError, match="changed the size of value"):
        pre(fg)


def test_backward_with_an_integer_gradient():
    def f(L):
        x = L.ones(3, requires_grad=True)
        (x * 2).backward(gradient=L.ones(3, dtype=L.int64))
        return x.grad.tolist(), _dt(x.grad)
    t, g = _both(f)
    assert t == g


def test_custom_function_with_a_default_argument():
    def f(L):
        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, k=2.0):
                ctx.k = k
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None
        x = L.ones(2, requires_grad=True)
        Scale.apply(x).sum().backward()
        return x.grad.tolist()
    t, g = _both(f)
    assert t == g


# ---- exception kinds -----------------------------------------------------------------------------


def test_cells_with_no_hidden_units():
    for make in (lambda L: L.nn.LSTMCell(2, 0), lambda L: L.nn.GRUCell(2, 0), lambda L: L.nn.RNNCell(2, 0)):
        t, g = _both(lambda L: repr(make(L)))
        assert t == g


@pytest.mark.parametrize("case", [
    lambda L: L.nn.PixelShuffle(0)(L.ones(1, 4, 2, 2)),
    lambda L: L.nn.functional.pixel_shuffle(L.ones(1, 4, 2, 2), -1),
    lambda L: L.nn.PixelUnshuffle(0)(L.ones(1, 4, 2, 2)),
], ids=["shuffle0", "shuffle-1", "unshuffle0"])
def test_pixel_shuffle_factor(case):
    _same_kind(case)


@pytest.mark.parametrize("mask", [(2, 5), (3,), (3, 2)])
def test_key_padding_mask_shape(mask):
    def f(L):
        L.manual_seed(0)
        m = L.nn.MultiheadAttention(4, 2, batch_first=True)
        q = L.ones(2, 3, 4)
        return m(q, q, q, key_padding_mask=L.zeros(*mask, dtype=L.bool))
    _same_kind(f)


def test_detach_in_place_of_a_view():
    _same_kind(lambda L: L.ones(2, 2)[0].detach_())
    _same_kind(lambda L: (L.ones(2, 2, requires_grad=True) * 1)[0].detach_())


@pytest.mark.parametrize("name,args", [("t_", ()), ("squeeze_", ()), ("unsqueeze_", (0,)), ("transpose_", (0, 1))])
def test_in_place_shape_ops_on_tensors_requiring_grad(name, args):
    _same_kind(lambda L: getattr(L.ones(2, 1, requires_grad=True), name)(*args))

    def f(L):
        x = L.arange(2.0, dtype=L.float64).view(2, 1).requires_grad_()
        y = x * 1
        r = getattr(y, name)(*args)
        assert r is y
        (y * L.arange(y.numel(), dtype=L.float64).view(y.shape)).sum().backward()
        return tuple(y.shape), y.grad_fn.name(), x.grad.tolist()
    t, g = _both(f)
    assert t[0] == g[0] and t[2] == g[2]


# ---- load: crafted metadata ----------------------------------------------------------------------


def _safetensors_bytes(header, data=b""):
    import json
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + data


def _meta(structure):
    import json
    return {"__metadata__": {"format": "pt", "ferrograd": structure if isinstance(structure, str)
                             else json.dumps(structure)},
            "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's safetensors loader")
@pytest.mark.parametrize("structure", [
    [1, 2], {"version": 1}, {"version": "1", "obj": None}, {"version": True, "obj": None},
    {"version": 1, "obj": {"F": "x"}}, {"version": 1, "obj": {"D": [[{"L": []}, 1]]}},
    {"version": 1, "obj": {"device": "nonsense"}}, {"version": 1, "obj": {"D": 5}},
    "[" * 100_000, {"version": 1, "obj": {"L": [{"L": []}]}},
], ids=["list", "no-obj", "str-version", "bool-version", "bad-float", "unhashable-key", "bad-device",
        "bad-meta", "deep-json", "fine"])
def test_load_crafted_metadata_is_one_runtime_error(tmp_path, structure):
    import io
    blob = _safetensors_bytes(_meta(structure), b"\0" * 4)
    p = tmp_path / "f.safetensors"
    p.write_bytes(blob)
    if structure == {"version": 1, "obj": {"L": [{"L": []}]}}:
        assert fg.load(io.BytesIO(blob)) == [[]]
        return
    for src in (io.BytesIO(blob), str(p)):
        with pytest.raises(RuntimeError) as e:
            fg.load(src)
        assert type(e.value) is RuntimeError, type(e.value)
        assert "newer ferrograd" not in str(e.value)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's safetensors loader")
def test_load_deeply_nested_structure(tmp_path):
    import io
    import json
    deep = '{"L": [' * 5000 + '{"L": []}' + ']}' * 5000  # parses (json is iterative), decodes deeply
    blob = _safetensors_bytes(_meta('{"version": 1, "obj": ' + deep + '}'), b"\0" * 4)
    with pytest.raises(RuntimeError) as e:
        fg.load(io.BytesIO(blob))
    assert type(e.value) is RuntimeError


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's safetensors loader")
def test_load_overlapping_bf16_offsets_refused_from_both(tmp_path):
    import io
    header = {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
              "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]}}
    blob = _safetensors_bytes(header, b"\0" * 6)
    p = tmp_path / "f.safetensors"
    p.write_bytes(blob)
    for src in (io.BytesIO(blob), str(p)):
        with pytest.raises(RuntimeError, match="overlap"):
            fg.load(src)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.GroupNorm(1, 1)(L.ones(1, 1)),
    lambda L: L.nn.GroupNorm(1, 1).eval()(L.ones(1, 1)),
    lambda L: L.nn.functional.group_norm(L.ones(1, 2, 1), 2),
    lambda L: list(L.utils.data.RandomSampler(L.utils.data.TensorDataset(L.zeros(0, 3)), replacement=True,
                                               num_samples=2)),
], ids=["groupnorm-one-value", "groupnorm-one-value-eval", "group_norm-one-per-group", "sampler-empty"])
def test_fuzz_found_exception_kinds(make):
    _same_kind(make)


def _node_hook_returning_a_tensor(L, kind):
    x = L.ones(3, requires_grad=True)
    y = (x * 2).sum()
    if kind == "post":
        y.grad_fn.register_hook(lambda gi, go: gi[0])
    else:
        y.grad_fn.register_prehook(lambda go: go[0])
    y.backward()


@pytest.mark.parametrize("kind", ["post", "pre"])
def test_node_hook_must_return_a_tuple(kind):
    """A node hook returning a Tensor instead of a tuple: torch's TypeError ("expected tuple")."""
    _same_kind(lambda L: _node_hook_returning_a_tensor(L, kind))


# ---- the engine's hook and version checks the differential fuzzer found (tests/fuzz/known.py) -------


def _messages(f):
    """f(L) for torch and ferrograd: ('ok', value list) or (exception type, message)."""
    out = []
    for L in LIBS:
        try:
            out.append(("ok", f(L).tolist()))
        except Exception as e:  # noqa: BLE001 - the kind and message are what is compared
            out.append((type(e), str(e)))
    return out


@pytest.mark.parametrize("ret", ["both", "none_slot", "number"])
def test_node_hook_cannot_fill_a_slot_without_gradient(ret):
    # MulBackward0 of x * 2 has two slots, the second without a gradient (the number)
    def f(L):
        x = L.ones(2, 3, requires_grad=True)
        y = x * 2
        hooks = {"both": lambda gi, go: (gi[0],) * 2, "none_slot": lambda gi, go: (gi[0] * 3, None),
                 "number": lambda gi, go: (3, None)}
        y.grad_fn.register_hook(hooks[ret])
        y.sin().sum().backward()
        return x.grad
    (tk, tm), (gk, gm) = _messages(f)
    assert gk == tk
    if tk == "ok":
        np.testing.assert_allclose(gm, tm, rtol=1e-6)
    else:
        assert gm == tm


def test_once_differentiable_result_cannot_be_differentiated_again():
    def f(L):
        once = (torch.autograd.function if L is torch else fg.autograd.function).once_differentiable

        class Sq(L.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * 2 * x

        x = L.ones(2, requires_grad=True)
        y = Sq.apply(x)
        g, = L.autograd.grad((y * y).sum(), x, create_graph=True)  # g requires grad: a graph is built
        assert g.requires_grad
        g.sum().backward()
        return x.grad
    (tk, tm), (gk, gm) = _messages(f)
    assert tk is RuntimeError and "once_differentiable" in tm
    assert gk is tk and gm == tm


@pytest.mark.parametrize("op", ["addcmul_", "addcdiv_", "mul_", "multiply_"])
def test_inplace_op_that_saves_its_own_target_raises_at_backward(op):
    def f(L):
        x = L.ones(2, 2, requires_grad=True)
        y = x * 2
        v = y.t()[1:]
        if op in ("mul_", "multiply_"):
            getattr(v, op)(v)
        else:
            getattr(v, op)(v, v)
        y.sum().backward()
        return x.grad
    (tk, tm), (gk, gm) = _messages(f)
    assert tk is RuntimeError and "modified by an inplace operation" in tm
    assert gk is tk and "modified by an inplace operation" in gm


@pytest.mark.parametrize("op", ["zero_", "fill_", "index_fill_", "masked_fill_", "row_add_"])
def test_filled_expanded_view_of_a_tensor_requiring_grad_refuses_its_gradient(op):
    def f(L):
        a = L.ones(3, 3, requires_grad=True)
        b = a * 1
        v = b.expand(2, 3, 3)
        if op == "zero_":
            v.zero_()
        elif op == "fill_":
            v.fill_(2.0)
        elif op == "index_fill_":
            v.index_fill_(0, L.tensor([0]), 1.0)
        elif op == "masked_fill_":
            v.masked_fill_(L.ones(2, 3, 3, dtype=L.bool), 1.0)
        else:  # a write through one row, which shares no memory within itself: allowed
            v[0].add_(10)
        (b * b).sum().backward()
        return a.grad
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warning for index_fill_/masked_fill_ on expanded tensors
        (tk, tm), (gk, gm) = _messages(f)
    assert gk == tk
    if tk == "ok":
        np.testing.assert_allclose(gm, tm)
    else:
        assert gm == tm


def test_node_post_hook_sees_each_input_gradient_in_the_input_shape():
    # x * w with w broadcast: the hook sees w's gradient already summed to w's shape (torch), and a
    # hook that puts x's gradient in w's slot changes its size
    def shapes(L):
        x = L.ones(2, 3, requires_grad=True)
        w = L.ones(3, requires_grad=True)
        y = x * w
        seen = []
        y.grad_fn.register_hook(lambda gi, go: seen.append([tuple(g.shape) for g in gi]))
        y.exp().sum().backward()
        return seen
    assert shapes(fg) == shapes(torch) == [[(2, 3), (3,)]]

    def swapped(L):
        x = L.ones(2, 3, requires_grad=True)
        w = L.ones(3, requires_grad=True)
        y = x * w
        y.grad_fn.register_hook(lambda gi, go: (gi[0],) * 2)
        y.exp().sum().backward()
        return x.grad
    (tk, tm), (gk, gm) = _messages(swapped)
    assert tk is RuntimeError and gk is tk and gm == tm


@pytest.mark.parametrize("shape", [(1, 3), (3, 1), (1, 1, 4)])
def test_writing_a_region_with_its_own_values_is_allowed(shape):
    # the same elements read and written (a size-1 dim's stride can differ between two views of them)
    def f(L):
        b = L.arange(float(np.prod(shape))).reshape(shape)
        b[..., 0] = b[..., 0]
        b[..., :1] += b[..., :1]
        return b
    t, g = _both(f)
    assert not isinstance(t, type), t
    np.testing.assert_array_equal(g.numpy(), t.numpy())
