"""Autocast against torch on the CPU: the output dtype of every op-table row and of the ops outside the table
(matmuls, linear, convolutions, losses, norms, cat/stack, ...) under torch.autocast("cpu", bfloat16/float16),
with float32, lower-precision and mixed inputs; the table's `autocast` column against the autocast kernels
torch registers (its CPU and CUDA lists); gradients flowing back to float32 parameters; the weight-cast cache;
nesting, enabled=False, the decorator form and the thread-local state; custom_fwd(cast_inputs=)/custom_bwd.
With a CUDA device (FERROGRAD_FAKE_CUDA=1 gives a stand-in) the table's CUDA column is checked by dtype too."""
import threading

import numpy as np
import pytest
import torch
from conftest import AGAINST_TORCH, fg

LOWER = ("bfloat16", "float16")


def _to(lib, a, dtype, device="cpu"):
    return lib.tensor(a, dtype=getattr(lib, dtype), device=device)


def _data(shape, positive=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(np.float32)
    return np.abs(a) + 0.5 if positive else np.clip(a, -0.9, 0.9)


# ---- the op table --------------------------------------------------------------------------------------------

ROWS = [r for r in fg._C.op_table()] if not AGAINST_TORCH else []
FLOAT_ROWS = [r for r in ROWS if r["binding"] in ("method", "custom") and "float32" in r["dtypes"]["cpu"]]


def _call_row(lib, row, xs):
    fn = getattr(lib, row["name"])
    fam = row["family"]
    if fam == "reduction":
        if row["name"] in ("cumsum", "logsumexp"):
            return fn(xs[0], 0)
        return fn(xs[0])
    if fam in ("binary", "float_binary", "comparison", "logical"):
        return fn(xs[0], xs[1])
    return fn(xs[0])


def _row_inputs(row):
    positive = row["name"] in ("acosh", "lgamma", "digamma", "polygamma", "log", "log2", "log1p", "sqrt", "rsqrt",
                               "pow", "remainder", "floor_divide", "div")
    return [_data((3, 4), positive, seed=s) for s in (1, 2)]


@pytest.mark.skipif(AGAINST_TORCH, reason="walks ferrograd's op table")
@pytest.mark.parametrize("fast", LOWER)
@pytest.mark.parametrize("row", FLOAT_ROWS, ids=[r["name"] for r in FLOAT_ROWS])
def test_table_row_dtype_under_cpu_autocast(row, fast):
    arrays = _row_inputs(row)
    for in_dtypes in (("float32", "float32"), (fast, fast), ("float32", fast), (fast, "float32")):
        outs = {}
        for lib in (torch, fg):
            xs = [_to(lib, a, d) for a, d in zip(arrays, in_dtypes)]
            try:
                with lib.autocast("cpu", dtype=getattr(lib, fast)):
                    outs[lib] = _call_row(lib, row, xs)
            except (RuntimeError, TypeError, NotImplementedError) as e:
                outs[lib] = type(e)
        t, f = outs[torch], outs[fg]
        if isinstance(t, type):
            continue  # torch refuses (no kernel for the dtype): not autocast's concern
        assert not isinstance(f, type), (row["name"], in_dtypes, f)
        assert str(f.dtype) == str(t.dtype), (row["name"], in_dtypes, f.dtype, t.dtype)


def _torch_autocast_registrations():
    """aten op name (without overload) -> the device types for which torch registers an autocast kernel."""
    keys = {}
    for op in torch._C._dispatch_get_all_op_names():
        for key, device in (("AutocastCPU", "cpu"), ("AutocastCUDA", "cuda")):
            if torch._C._dispatch_has_kernel_for_dispatch_key(op, key):
                keys.setdefault(op.split(".")[0].removeprefix("aten::"), set()).add(device)
    return keys


@pytest.mark.skipif(AGAINST_TORCH, reason="walks ferrograd's op table")
def test_table_autocast_column_matches_torch_registrations():
    """A row is on a device type's list (its class is not "none") exactly when torch registers an autocast
    kernel for it there; composite ops torch decomposes into listed ones (square is pow) are named."""
    decomposed = {"square": {"cuda"}}  # aten::square is pow(x, 2), and pow is on the CUDA list
    registered = _torch_autocast_registrations()
    wrong = []
    for row in ROWS:
        on = {d for d in ("cpu", "cuda") if row["autocast"][d] != "none"}
        names = [row["name"]] + [a for a in row["aliases"] if "." not in a]
        torch_on = set().union(*(registered.get(n, set()) for n in names)) | decomposed.get(row["name"], set())
        if on != torch_on:
            wrong.append((row["name"], sorted(on), sorted(torch_on)))
    assert not wrong


# ---- ops outside the table -----------------------------------------------------------------------------------

def _w(shape, seed=5):
    return _data(shape, seed=seed)


def _cases():
    """(name, input arrays, f(lib, *tensors)) for the ops outside the table."""
    F = "nn.functional"

    def fn(path):
        def get(lib):
            obj = lib
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        return get

    a34, a45, a4, b234, b245, a3 = _w((3, 4)), _w((4, 5), 6), _w((4,), 7), _w((2, 3, 4), 8), _w((2, 4, 5), 9), _w((3,), 10)
    img, k = _w((1, 2, 6, 6), 11), _w((3, 2, 3, 3), 12)
    seq, k1 = _w((2, 2, 7), 13), _w((3, 2, 3), 14)
    tgt = np.array([0, 2, 1])
    probs = 1.0 / (1.0 + np.exp(-_w((3, 4), 15)))
    return [
        ("mm", [a34, a45], lambda L, x, y: L.mm(x, y)),
        ("matmul", [a34, a45], lambda L, x, y: L.matmul(x, y)),
        ("matmul 1-d", [a4, a4], lambda L, x, y: L.matmul(x, y)),
        ("@", [b234, b245], lambda L, x, y: x @ y),
        ("bmm", [b234, b245], lambda L, x, y: L.bmm(x, y)),
        ("mv", [a34, a4], lambda L, x, y: L.mv(x, y)),
        ("dot", [a4, a4], lambda L, x, y: L.dot(x, y)),
        ("addmm", [_w((3, 5)), a34, a45], lambda L, b, x, y: L.addmm(b, x, y)),
        ("baddbmm", [_w((2, 3, 5)), b234, b245], lambda L, b, x, y: L.baddbmm(b, x, y)),
        ("addbmm", [_w((3, 5)), b234, b245], lambda L, b, x, y: L.addbmm(b, x, y)),
        ("addmv", [a3, a34, a4], lambda L, b, x, y: L.addmv(b, x, y)),
        ("einsum", [a34, a45], lambda L, x, y: L.einsum("ij,jk->ik", x, y)),
        ("tensordot", [a34, a45], lambda L, x, y: L.tensordot(x, y, dims=1)),
        ("inner", [a34, a34], lambda L, x, y: L.inner(x, y)),
        ("outer", [a4, a4], lambda L, x, y: L.outer(x, y)),
        ("linear", [a34, _w((6, 4)), _w((6,))], lambda L, x, w, b: fn(F + ".linear")(L)(x, w, b)),
        ("linear 3-d", [b234, _w((6, 4)), _w((6,))], lambda L, x, w, b: fn(F + ".linear")(L)(x, w, b)),
        ("linear no bias", [a34, _w((6, 4))], lambda L, x, w: fn(F + ".linear")(L)(x, w)),
        ("bilinear", [a34, a34, _w((2, 4, 4))], lambda L, x, y, w: fn(F + ".bilinear")(L)(x, y, w)),
        ("conv1d", [seq, k1, a3], lambda L, x, w, b: fn(F + ".conv1d")(L)(x, w, b)),
        ("conv2d", [img, k, a3], lambda L, x, w, b: fn(F + ".conv2d")(L)(x, w, b, padding=1)),
        ("conv_transpose2d", [img, _w((2, 3, 3, 3))], lambda L, x, w: fn(F + ".conv_transpose2d")(L)(x, w)),
        ("prelu", [a34, _w((1,))], lambda L, x, w: fn(F + ".prelu")(L)(x, w)),
        ("sdpa", [b234, b234, b234], lambda L, q, k_, v: fn(F + ".scaled_dot_product_attention")(L)(q, k_, v)),
        ("cat", [a34, a34], lambda L, x, y: L.cat([x, y])),
        ("stack", [a34, a34], lambda L, x, y: L.stack([x, y])),
        ("softmax", [a34], lambda L, x: L.softmax(x, 1)),
        ("log_softmax", [a34], lambda L, x: fn(F + ".log_softmax")(L)(x, 1)),
        ("layer_norm", [a34, a4, a4], lambda L, x, w, b: fn(F + ".layer_norm")(L)(x, (4,), w, b)),
        ("group_norm", [_w((2, 4, 3))], lambda L, x: fn(F + ".group_norm")(L)(x, 2)),
        ("mse_loss", [a34, a34], lambda L, x, y: fn(F + ".mse_loss")(L)(x, y)),
        ("l1_loss", [a34, a34], lambda L, x, y: fn(F + ".l1_loss")(L)(x, y)),
        ("smooth_l1_loss", [a34, a34], lambda L, x, y: fn(F + ".smooth_l1_loss")(L)(x, y)),
        ("huber_loss", [a34, a34], lambda L, x, y: fn(F + ".huber_loss")(L)(x, y)),
        ("cross_entropy", [a34], lambda L, x: fn(F + ".cross_entropy")(L)(x, L.tensor(tgt))),
        ("nll_loss", [a34], lambda L, x: fn(F + ".nll_loss")(L)(x, L.tensor(tgt))),
        ("bce", [probs, probs], lambda L, x, y: fn(F + ".binary_cross_entropy")(L)(x, y)),
        ("bce_with_logits", [a34, probs], lambda L, x, y: fn(F + ".binary_cross_entropy_with_logits")(L)(x, y)),
        ("kl_div", [a34, probs], lambda L, x, y: fn(F + ".kl_div")(L)(x, y, reduction="batchmean")),
        ("cdist", [a34, a34], lambda L, x, y: L.cdist(x, y)),
        ("prod", [a34], lambda L, x: L.prod(x)),
        ("sum", [a34], lambda L, x: L.sum(x)),
        ("mean", [a34], lambda L, x: L.mean(x)),
        ("cumsum", [a34], lambda L, x: L.cumsum(x, 0)),
        ("gelu", [a34], lambda L, x: fn(F + ".gelu")(L)(x)),
        ("relu", [a34], lambda L, x: fn(F + ".relu")(L)(x)),
        ("dropout eval", [a34], lambda L, x: fn(F + ".dropout")(L)(x, training=False)),
        ("embedding", [_w((10, 4))], lambda L, w: fn(F + ".embedding")(L)(L.tensor([1, 2]), w)),
        ("trace", [_w((4, 4))], lambda L, x: L.trace(x)),
        ("index_copy", [a34, _w((2, 4))], lambda L, x, y: L.index_copy(x, 0, L.tensor([0, 2]), y)),
        ("addcmul", [a34, a34, a34], lambda L, x, y, z: L.addcmul(x, y, z)),
        ("where", [a34, a34], lambda L, x, y: L.where(x > 0, x, y)),
        ("max_pool3d", [_w((1, 1, 4, 4, 4))], lambda L, x: fn(F + ".max_pool3d")(L)(x, 2)),
        ("avg_pool3d", [_w((1, 1, 4, 4, 4))], lambda L, x: fn(F + ".avg_pool3d")(L)(x, 2)),
        ("adaptive_avg_pool3d", [_w((1, 1, 4, 4, 4))], lambda L, x: fn(F + ".adaptive_avg_pool3d")(L)(x, 2)),
        ("avg_pool1d", [seq], lambda L, x: fn(F + ".avg_pool1d")(L)(x, 2)),
        ("pad reflect", [seq], lambda L, x: fn(F + ".pad")(L)(x, (1, 1), mode="reflect")),
        ("pad replicate", [img], lambda L, x: fn(F + ".pad")(L)(x, (1, 1, 1, 1), mode="replicate")),
        ("pad circular", [seq], lambda L, x: fn(F + ".pad")(L)(x, (1, 1), mode="circular")),
        ("interpolate", [seq], lambda L, x: fn(F + ".interpolate")(L)(x, scale_factor=2)),
        ("cosine_similarity", [a34, a34], lambda L, x, y: fn(F + ".cosine_similarity")(L)(x, y)),
        ("logsumexp", [a34], lambda L, x: L.logsumexp(x, 0)),
        ("pinv", [_w((3, 3))], lambda L, x: L.linalg.pinv(x)),
        ("linalg.inv", [_w((3, 3)) + 3 * np.eye(3, dtype=np.float32)], lambda L, x: L.linalg.inv(x)),
        ("vector_norm", [a34], lambda L, x: L.linalg.vector_norm(x)),
    ]


CASES = _cases()


@pytest.mark.parametrize("fast", LOWER)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_non_table_op_dtype_under_cpu_autocast(case, fast):
    name, arrays, f = case
    n = len(arrays)
    combos = [("float32",) * n, (fast,) * n, (fast,) + ("float32",) * (n - 1), ("float32",) * (n - 1) + (fast,)]
    for dtypes in combos:
        outs = {}
        for lib in (torch, fg):
            xs = [_to(lib, a, d) for a, d in zip(arrays, dtypes)]
            try:
                with lib.autocast("cpu", dtype=getattr(lib, fast)):
                    outs[lib] = f(lib, *xs)
            except (RuntimeError, TypeError, NotImplementedError, ValueError) as e:
                outs[lib] = type(e)
        t, g = outs[torch], outs[fg]
        if isinstance(t, type):
            # torch refuses these dtypes; when it refuses them without autocast too, that is dtype checking,
            # not autocast (tested elsewhere)
            try:
                f(torch, *[_to(torch, a, d) for a, d in zip(arrays, dtypes)])
            except (RuntimeError, TypeError, NotImplementedError, ValueError):
                continue
            assert isinstance(g, type), (name, dtypes, g.dtype)
            continue
        assert not isinstance(g, type), (name, dtypes, g)
        assert str(g.dtype) == str(t.dtype), (name, dtypes, g.dtype, t.dtype)


MODULES = {
    "LSTMCell": lambda L: L.nn.LSTMCell(4, 3),
    "GRU": lambda L: L.nn.GRU(4, 3),
    "RNN": lambda L: L.nn.RNN(4, 3),
    "MultiheadAttention": lambda L: L.nn.MultiheadAttention(4, 2),
    "TransformerEncoderLayer": lambda L: L.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0),
    "BatchNorm1d": lambda L: L.nn.BatchNorm1d(3),
    "Conv1d": lambda L: L.nn.Conv1d(3, 2, 2),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_output_dtype_under_cpu_autocast(name):
    x = _w((5, 3, 4))
    out = {}
    for lib in (torch, fg):
        m = MODULES[name](lib)
        t = lib.tensor(x[0] if name == "LSTMCell" else x)
        xs = [t] * (3 if name == "MultiheadAttention" else 1)
        with lib.autocast("cpu"):
            y = m(*xs)
        out[lib] = str((y[0] if isinstance(y, tuple) else y).dtype)
    assert out[fg] == out[torch]


# ---- gradients, cache, state ---------------------------------------------------------------------------------

def _mlp(lib):
    lib.manual_seed(0)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))
    if lib is torch:
        return net
    ours = fg.nn.Sequential(fg.nn.Linear(8, 16), fg.nn.GELU(), fg.nn.LayerNorm(16), fg.nn.Linear(16, 4))
    ours.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in net.state_dict().items()})
    return ours


@pytest.mark.parametrize("fast", LOWER)
def test_gradients_flow_back_to_float32_parameters(fast):
    x, tgt = _data((5, 8), seed=3), np.array([0, 1, 2, 3, 1])
    res = {}
    for lib in (torch, fg):
        net = _mlp(lib)
        with lib.autocast("cpu", dtype=getattr(lib, fast)):
            out = net(lib.tensor(x))
            loss = lib.nn.functional.cross_entropy(out, lib.tensor(tgt))
        assert str(out.dtype) == f"torch.{fast}" and loss.dtype == lib.float32
        loss.backward()
        res[lib] = (out.float().detach().numpy(), loss.item(), [(p.grad.dtype, p.grad.numpy()) for p in net.parameters()])
    np.testing.assert_allclose(res[fg][0], res[torch][0], rtol=0.05, atol=0.05)
    assert abs(res[fg][1] - res[torch][1]) < 0.03
    for (gd, g), (td, t) in zip(res[fg][2], res[torch][2]):
        assert str(gd) == str(td) == "torch.float32"
        np.testing.assert_allclose(g, t, rtol=0.1, atol=0.03)


def test_weight_cast_is_cached_for_the_region():
    for lib in (torch, fg):
        w = lib.randn(4, 4, requires_grad=True)
        x = lib.randn(2, 4)
        with lib.autocast("cpu"):
            y1 = lib.mm(x, w)
            y2 = lib.mm(x, w)
            c1, c2 = y1.grad_fn.next_functions[1][0], y2.grad_fn.next_functions[1][0]
            assert c1.name() == "ToCopyBackward0"
            assert c1 == c2  # one cast of the leaf, shared
            (y1.sum() + y2.sum()).backward()
        assert w.grad.dtype == lib.float32
        with lib.autocast("cpu"):
            y3 = lib.mm(x, w)
        assert y3.grad_fn.next_functions[1][0] != c1  # the cache was cleared on exit
        with lib.autocast("cpu", cache_enabled=False):
            a, b = lib.mm(x, w), lib.mm(x, w)
            assert a.grad_fn.next_functions[1][0] != b.grad_fn.next_functions[1][0]


def test_state_nesting_disable_and_decorator():
    for lib in (torch, fg):
        assert not lib.is_autocast_enabled("cpu")
        x = lib.randn(3, 3)
        with lib.autocast("cpu"):
            assert lib.is_autocast_enabled("cpu") and not lib.is_autocast_enabled("cuda")
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16
            assert lib.mm(x, x).dtype == lib.bfloat16
            with lib.autocast("cpu", dtype=lib.float16):
                assert lib.mm(x, x).dtype == lib.float16
                with lib.autocast("cpu", enabled=False):
                    assert not lib.is_autocast_enabled("cpu")
                    assert lib.mm(x, x).dtype == lib.float32
                assert lib.get_autocast_dtype("cpu") == lib.float16
            assert lib.get_autocast_dtype("cpu") == lib.bfloat16
            assert lib.mm(x, x).dtype == lib.bfloat16
        assert not lib.is_autocast_enabled("cpu") and lib.mm(x, x).dtype == lib.float32

        @lib.autocast("cpu")
        def f(a):
            return a @ a

        assert f(x).dtype == lib.bfloat16
        with pytest.warns(FutureWarning):
            ctx = lib.cpu.amp.autocast()
        with ctx:
            assert lib.mm(x, x).dtype == lib.bfloat16
        # float64 tensors are left alone; integer ones too
        with lib.autocast("cpu"):
            assert lib.mm(x.double(), x.double()).dtype == lib.float64
            assert lib.cat([x.long(), x.long()]).dtype == lib.int64


def test_state_is_per_thread():
    for lib in (torch, fg):
        seen = []
        x = lib.randn(2, 2)

        def other():
            seen.append((lib.is_autocast_enabled("cpu"), lib.mm(x, x).dtype))

        with lib.autocast("cpu"):
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert seen == [(False, lib.float32)]


def test_set_autocast_functions_match_torch():
    for lib in (torch, fg):
        x = lib.randn(2, 2)
        lib.set_autocast_enabled("cpu", True)
        try:
            assert lib.is_autocast_enabled("cpu") and lib.mm(x, x).dtype == lib.bfloat16
            lib.set_autocast_dtype("cpu", lib.float16)
            assert lib.mm(x, x).dtype == lib.float16
        finally:
            lib.set_autocast_enabled("cpu", False)
            lib.set_autocast_dtype("cpu", lib.bfloat16)
        assert lib.mm(x, x).dtype == lib.float32
        assert lib.is_autocast_cache_enabled()
        assert lib.autocast_increment_nesting() == 1
        assert lib.autocast_decrement_nesting() == 0
        lib.clear_autocast_cache()


def test_custom_fwd_cast_inputs_and_custom_bwd():
    for lib in (torch, fg):
        seen = {}

        class MulW(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu", cast_inputs=lib.float32)
            def forward(ctx, a, w):
                seen["fwd"] = (a.dtype, w.dtype, lib.is_autocast_enabled("cpu"))
                ctx.save_for_backward(a, w)
                return a @ w

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                seen["bwd"] = lib.is_autocast_enabled("cpu")
                a, w = ctx.saved_tensors
                return g @ w.t(), a.t() @ g

        a = lib.randn(2, 3, dtype=lib.bfloat16)
        w = lib.randn(3, 3, requires_grad=True)
        with lib.autocast("cpu"):
            out = MulW.apply(a, w)
        assert out.dtype == lib.float32
        assert seen["fwd"] == (lib.float32, lib.float32, False)
        out.sum().backward()
        assert seen["bwd"] is False and w.grad.dtype == lib.float32

        class Plain(lib.autograd.Function):
            @staticmethod
            @lib.amp.custom_fwd(device_type="cpu")
            def forward(ctx, a):
                seen["plain"] = lib.is_autocast_enabled("cpu")
                return a @ a

            @staticmethod
            @lib.amp.custom_bwd(device_type="cpu")
            def backward(ctx, g):
                seen["plain_bwd"] = lib.is_autocast_enabled("cpu")
                return g

        x = lib.randn(2, 2, requires_grad=True)
        with lib.autocast("cpu"):
            y = Plain.apply(x)
        assert y.dtype == lib.bfloat16 and seen["plain"] is True
        y.float().sum().backward()
        assert seen["plain_bwd"] is True


def test_binary_cross_entropy_refused_under_cuda_autocast_message():
    if not fg.cuda.is_available():
        pytest.skip("no CUDA device (FERROGRAD_FAKE_CUDA=1 gives a host stand-in)")
    p = fg.rand(3, device="cuda")
    with fg.autocast("cuda"):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            fg.nn.functional.binary_cross_entropy(p, p)


# ---- CUDA lists (on a device, or the FERROGRAD_FAKE_CUDA=1 stand-in) -----------------------------------------

# torch's CUDA classes for the table rows and the common ops outside it (torch's autocast_mode.cpp lists:
# its membership is checked against torch's registrations above; this is the class within the list)
CUDA_EXPECT = {
    "exp": "float32", "log": "float32", "log2": "float32", "log1p": "float32", "expm1": "float32",
    "rsqrt": "float32", "sinh": "float32", "cosh": "float32", "tan": "float32", "reciprocal": "float32",
    "asin": "float32", "acos": "float32", "erfinv": "float32", "pow": "float32", "square": "float32",
    "sum": "float32", "prod": "float32", "cumsum": "float32", "logsumexp": "float32", "atan2": "promote",
    "sin": "none", "tanh": "none", "sigmoid": "none", "add": "none", "mul": "none", "mean": "none",
}


@pytest.mark.skipif(AGAINST_TORCH, reason="walks ferrograd's op table")
def test_table_cuda_column_classes():
    by_name = {r["name"]: r for r in ROWS}
    for name, cls in CUDA_EXPECT.items():
        assert by_name[name]["autocast"]["cuda"] == cls, name


@pytest.mark.skipif(AGAINST_TORCH or not fg.cuda.is_available(), reason="no CUDA device (FERROGRAD_FAKE_CUDA=1)")
@pytest.mark.parametrize("fast", ("float16", "bfloat16"))
def test_cuda_autocast_dtypes(fast):
    lower = getattr(fg, fast)
    x = fg.tensor(_data((3, 4), positive=True), device="cuda")
    w = fg.tensor(_data((4, 4), seed=4), device="cuda")
    with fg.autocast("cuda", dtype=lower):
        assert fg.mm(x, w).dtype == lower and (x @ w).dtype == lower
        assert fg.nn.functional.linear(x, w, w[0]).dtype == lower
        assert fg.mv(x, w[0]).dtype == lower
        h = x.to(lower)
        for name, cls in CUDA_EXPECT.items():
            row = next(r for r in ROWS if r["name"] == name)
            out = _call_row(fg, row, [h, h])
            want = {"float32": fg.float32, "promote": lower, "none": out.dtype if out.dtype == fg.bool else lower}[cls]
            assert out.dtype == want, (name, out.dtype)
        assert fg.atan2(h, x).dtype == fg.float32  # promote: the widest
        assert fg.softmax(h, 1).dtype == fg.float32 and fg.softmax(h, 1, dtype=lower).dtype == lower
        assert fg.nn.functional.layer_norm(h, (4,)).dtype == fg.float32
        assert fg.nn.functional.mse_loss(h, h).dtype == fg.float32
        assert fg.cat([h, x]).dtype == fg.float32  # cat promotes natively on CUDA
        with fg.autocast("cpu"):  # the CPU's state does not touch CUDA tensors
            assert fg.exp(h).dtype == fg.float32
    with fg.autocast("cpu"):
        assert fg.mm(x, w).dtype == fg.float32  # CPU autocast leaves CUDA tensors alone
