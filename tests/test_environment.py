"""What scripts touch around the ops, against torch: torch.backends switches and
set_float32_matmul_precision, torch.accelerator, autograd.Variable, torch.onnx, torch.ops.aten,
the legacy typed constructors with Tensor.type/new, format() of tensors, set_default_dtype,
set_printoptions and the deterministic-algorithms switches.

Every check runs the same code on torch and on the library under test and compares; global
settings are restored after each test. Where ferrograd reports its own capabilities (no cuDNN, no
oneDNN/MKL/OpenMP, no ONNX exporter) the test checks the type and ferrograd's documented answer."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

LIBS = (torch, fg)


def outcome(fn):
    """fn()'s result, or its exception's type and message with the library's name taken out."""
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, re.sub(r"\b(torch|ferrograd)\.", "", str(e)))


def norm(v):
    """A value made comparable across the libraries: tensors as (dtype name, shape, values)."""
    if isinstance(v, (torch.Tensor, fg.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), v.detach().cpu().tolist())
    if isinstance(v, (torch.dtype, fg.dtype)):
        return str(v).split(".")[-1]
    if isinstance(v, (torch.device, fg.device)):
        return str(v)
    if isinstance(v, (tuple, list)):
        return type(v).__name__, [norm(x) for x in v]
    if isinstance(v, str):
        return re.sub(r"\b(torch|ferrograd)\.", "", v)
    return v


def close(a, b):
    """Equal, floats to within 1e-12 relative (the libraries may round the last bit differently)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or np.isclose(a, b, rtol=1e-12, atol=1e-300, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def both(fn, kind_only=False):
    """fn(L) for torch and the library under test, compared (result, or exception kind and message;
    kind only where torch's message is C++ internals)."""
    a, b = (outcome(lambda: norm(fn(L))) for L in LIBS)
    if kind_only and a[0] != "ok":
        assert a[0] == b[0], (a, b)
    else:
        assert close(a, b), (a, b)
    return a


@pytest.fixture(autouse=True)
def _restore_globals():
    """Every global switch a test may change, put back afterwards (both libraries)."""
    saved = []
    for L in LIBS:
        b = L.backends
        flags = dict(tf32=b.cuda.matmul.allow_tf32, fp16=b.cuda.matmul.allow_fp16_reduced_precision_reduction,
                     bf16=b.cuda.matmul.allow_bf16_reduced_precision_reduction, bench=b.cudnn.benchmark,
                     det=b.cudnn.deterministic, ctf32=b.cudnn.allow_tf32, en=b.cudnn.enabled,
                     flash=b.cuda.flash_sdp_enabled(), mem=b.cuda.mem_efficient_sdp_enabled(),
                     math=b.cuda.math_sdp_enabled(), cud=b.cuda.cudnn_sdp_enabled(),
                     dtype=L.get_default_dtype(), algo=L.are_deterministic_algorithms_enabled(),
                     warn=L.is_deterministic_algorithms_warn_only_enabled(),
                     prec=L.get_float32_matmul_precision())
        saved.append(flags)
    yield
    for L, f in zip(LIBS, saved):
        b = L.backends
        L.set_float32_matmul_precision(f["prec"])
        b.cuda.matmul.allow_fp16_reduced_precision_reduction = f["fp16"]
        b.cuda.matmul.allow_bf16_reduced_precision_reduction = f["bf16"]
        b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.allow_tf32, b.cudnn.enabled = (
            f["bench"], f["det"], f["ctf32"], f["en"])
        b.cuda.enable_flash_sdp(f["flash"])
        b.cuda.enable_mem_efficient_sdp(f["mem"])
        b.cuda.enable_math_sdp(f["math"])
        b.cuda.enable_cudnn_sdp(f["cud"])
        L.set_default_dtype(f["dtype"])
        L.use_deterministic_algorithms(f["algo"], warn_only=f["warn"])
        L.set_printoptions(profile="default")


# ---- torch.backends ------------------------------------------------------------------------

def _flags(L):
    b = L.backends
    return [b.cuda.matmul.allow_tf32, b.cuda.matmul.allow_fp16_reduced_precision_reduction,
            b.cuda.matmul.allow_bf16_reduced_precision_reduction, b.cudnn.benchmark, b.cudnn.deterministic,
            b.cudnn.allow_tf32, b.cudnn.enabled, b.cuda.flash_sdp_enabled(), b.cuda.mem_efficient_sdp_enabled(),
            b.cuda.math_sdp_enabled(), b.cuda.cudnn_sdp_enabled(), b.cuda.fp16_bf16_reduction_math_sdp_allowed(),
            L.get_float32_matmul_precision(), b.opt_einsum.enabled]


def test_backend_flag_defaults():
    both(_flags)


def test_backend_flags_settable():
    def run(L):
        b = L.backends
        b.cuda.matmul.allow_tf32 = True
        b.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        b.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        b.cudnn.benchmark = True
        b.cudnn.deterministic = True
        b.cudnn.allow_tf32 = False
        b.cudnn.enabled = False
        b.cuda.enable_flash_sdp(False)
        b.cuda.enable_mem_efficient_sdp(False)
        b.cuda.enable_math_sdp(False)
        b.cuda.enable_cudnn_sdp(False)
        return _flags(L)
    both(run)


def test_float32_matmul_precision_tied_to_allow_tf32():
    def run(L):
        seen = []
        for p in ("high", "highest", "medium", "highest"):
            L.set_float32_matmul_precision(p)
            seen.append((L.get_float32_matmul_precision(), L.backends.cuda.matmul.allow_tf32,
                         L.backends.cudnn.allow_tf32))
        L.backends.cuda.matmul.allow_tf32 = True
        seen.append(L.get_float32_matmul_precision())
        L.backends.cuda.matmul.allow_tf32 = False
        seen.append(L.get_float32_matmul_precision())
        return seen
    both(run)


def test_float32_matmul_precision_errors():
    both(lambda L: L.set_float32_matmul_precision(1))
    for L in LIBS:
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            L.set_float32_matmul_precision("fastest")
    both(lambda L: L.get_float32_matmul_precision())


@pytest.mark.parametrize("value", [1, None, "x"])
def test_backend_flag_wrong_type(value):
    def setter(attr):
        def run(L):
            obj = L.backends.cudnn if attr == "benchmark" else L.backends.cuda.matmul
            setattr(obj, attr, value)
        return run
    for attr in ("benchmark", "allow_tf32"):
        kinds = [outcome(lambda: setter(attr)(L))[0] for L in LIBS]
        assert kinds == ["RuntimeError", "RuntimeError"]


def test_matmul_unknown_attribute():
    both(lambda L: L.backends.cuda.matmul.allow_everything)

    def set_unknown(L):
        L.backends.cuda.matmul.allow_everything = True
    both(set_unknown)


def test_cudnn_flags_context():
    def run(L):
        b = L.backends.cudnn
        b.benchmark = True
        with b.flags(enabled=False, deterministic=True):
            inside = (b.enabled, b.benchmark, b.deterministic)
        return inside, (b.enabled, b.benchmark, b.deterministic)
    both(run)


def test_sdp_kernel_context():
    def run(L):
        c = L.backends.cuda
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch deprecates sdp_kernel
            with c.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
                inside = (c.flash_sdp_enabled(), c.math_sdp_enabled(), c.mem_efficient_sdp_enabled())
        return inside, (c.flash_sdp_enabled(), c.math_sdp_enabled(), c.mem_efficient_sdp_enabled())
    both(run)


def test_backend_reports():
    b = fg.backends
    # ferrograd's own capabilities (torch's answers depend on how torch was built)
    assert isinstance(b.cuda.is_built(), bool)
    assert isinstance(b.cudnn.is_available(), bool) and isinstance(b.mps.is_available(), bool)
    assert b.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512", "NO AVX", "VSX", "Z VECTOR", "SVE256")
    for m in (b.mkldnn, b.mkl, b.openmp, b.opt_einsum):
        assert isinstance(m.is_available(), bool)
    if not AGAINST_TORCH:
        assert not b.cudnn.is_available() and b.cudnn.version() is None
        assert not b.mps.is_available() and not b.mps.is_built()
        assert b.opt_einsum.strategy is None  # as torch without opt_einsum
        assert b.cuda.is_built() == ("cuda" in fg._C._build_info()["features"])
    both(lambda L: (L.backends.mps.is_available(), L.backends.mps.is_built()))


def test_backends_import_forms():
    import importlib

    name = fg.__name__
    for sub in ("cuda", "cudnn", "mps", "cpu", "opt_einsum", "mkldnn", "mkl", "openmp"):
        mod = importlib.import_module(f"{name}.backends.{sub}")
        assert mod is getattr(fg.backends, sub)
    assert fg.backends.cuda.SDPBackend.FLASH_ATTENTION.name == torch.backends.cuda.SDPBackend.FLASH_ATTENTION.name


# ---- torch.accelerator ---------------------------------------------------------------------

def test_accelerator_delegates_to_cuda():
    a = fg.accelerator
    assert a.is_available() == fg.cuda.is_available()
    assert a.device_count() == (fg.cuda.device_count() if fg.backends.cuda.is_built() else 0)
    acc = a.current_accelerator()
    assert acc is None or acc.type == "cuda"
    if not fg.cuda.is_available():
        assert a.current_accelerator(check_available=True) is None
        with pytest.raises(RuntimeError):
            a.current_device_index()
        with pytest.raises(RuntimeError):
            a.set_device_index(0)
    else:
        assert a.current_device_index() == 0
        a.set_device_index(0)
        a.synchronize()
        assert str(a.current_accelerator(check_available=True)) == "cuda"


def test_accelerator_matches_torch_without_gpu():
    if torch.cuda.is_available() or fg.cuda.is_available():
        pytest.skip("compares the no-GPU answers")
    both(lambda L: (L.accelerator.is_available(), L.accelerator.device_count(),
                    L.accelerator.current_accelerator(check_available=True)))
    assert both(lambda L: L.accelerator.synchronize())[0] == "RuntimeError"


# ---- autograd.Variable ---------------------------------------------------------------------

def test_variable():
    def run(L):
        V = L.autograd.Variable
        t = L.ones(2)
        v = V(t, requires_grad=True)
        w = V(t)
        w[0] = 5.0  # shares t's data
        x = L.ones(2, requires_grad=True) * 2
        d = V(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vol = V(t, volatile=True)
        return (type(v) is L.Tensor, v.requires_grad, v.is_leaf, w.requires_grad, t, isinstance(t, V),
                isinstance(1.0, V), issubclass(L.Tensor, V), d.grad_fn is None, d.requires_grad, V(), vol)
    both(run)
    both(lambda L: L.autograd.Variable([1, 2]))
    both(lambda L: L.autograd.Variable(L.ones(2, dtype=L.int64), requires_grad=True))


def test_variable_backward():
    def run(L):
        from importlib import import_module
        V = import_module(f"{L.__name__}.autograd").Variable
        x = V(L.tensor([1.0, 2.0]), requires_grad=True)
        (x * x).sum().backward()
        return x.grad
    both(run)


# ---- torch.onnx ----------------------------------------------------------------------------

def test_onnx_module():
    import importlib

    mod = importlib.import_module(f"{fg.__name__}.onnx")
    assert mod.is_in_onnx_export() is False
    assert issubclass(mod.OnnxExporterError, RuntimeError)
    both(lambda L: sorted(L.onnx.TrainingMode.__members__))


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd has no ONNX exporter; torch's export works")
def test_onnx_export_raises(tmp_path):
    model = fg.nn.Linear(2, 2)
    for catch in (NotImplementedError, fg.onnx.OnnxExporterError, RuntimeError):
        with pytest.raises(catch, match="ferrograd does not export ONNX"):
            fg.onnx.export(model, (fg.ones(1, 2),), str(tmp_path / "m.onnx"))
    assert not (tmp_path / "m.onnx").exists()


# ---- torch.ops -----------------------------------------------------------------------------

A = np.array([[1.0, -2.0, 3.0], [-0.5, 4.0, -6.0]])
B = np.array([[0.5, 1.0], [2.0, -1.0], [1.5, 0.25]])


def _aten_cases():
    t = lambda L, a=A: L.tensor(a)  # noqa: E731
    return {
        "add.Tensor": lambda L, ops: ops.add.Tensor(t(L), t(L), alpha=2),
        "add.Scalar": lambda L, ops: ops.add.Scalar(t(L), 3),
        "add packet": lambda L, ops: ops.add(t(L), t(L)),
        "sub.Tensor": lambda L, ops: ops.sub.Tensor(t(L), t(L) * 3),
        "mul.Tensor": lambda L, ops: ops.mul.Tensor(t(L), t(L)),
        "mul.Scalar": lambda L, ops: ops.mul.Scalar(t(L), 0.5),
        "div.Tensor": lambda L, ops: ops.div.Tensor(t(L), 2.0),
        "div.Tensor_mode": lambda L, ops: ops.div.Tensor_mode(t(L), t(L) + 10, rounding_mode="floor"),
        "pow.Tensor_Scalar": lambda L, ops: ops.pow.Tensor_Scalar(t(L), 2),
        "relu.default": lambda L, ops: ops.relu.default(t(L)),
        "relu_.default": lambda L, ops: ops.relu_.default(t(L)),
        "neg.default": lambda L, ops: ops.neg.default(t(L)),
        "exp.default": lambda L, ops: ops.exp.default(t(L)),
        "tanh.default": lambda L, ops: ops.tanh.default(t(L)),
        "sigmoid.default": lambda L, ops: ops.sigmoid.default(t(L)),
        "gelu.default": lambda L, ops: ops.gelu.default(t(L)),
        "mm.default": lambda L, ops: ops.mm.default(t(L), t(L, B)),
        "mm packet": lambda L, ops: ops.mm(t(L), t(L, B)),
        "bmm.default": lambda L, ops: ops.bmm.default(t(L)[None], t(L, B)[None]),
        "addmm.default": lambda L, ops: ops.addmm.default(L.ones(2, dtype=L.float64), t(L), t(L, B), beta=2, alpha=0.5),
        "t.default": lambda L, ops: ops.t.default(t(L)),
        "transpose.int": lambda L, ops: ops.transpose.int(t(L), 0, 1),
        "view.default": lambda L, ops: ops.view.default(t(L), [3, 2]),
        "_unsafe_view.default": lambda L, ops: ops._unsafe_view.default(t(L), [6]),
        "reshape.default": lambda L, ops: ops.reshape.default(t(L), [6]),
        "permute.default": lambda L, ops: ops.permute.default(t(L), [1, 0]),
        "expand.default": lambda L, ops: ops.expand.default(t(L)[:1], [4, 3]),
        "unsqueeze.default": lambda L, ops: ops.unsqueeze.default(t(L), 1),
        "squeeze.dim": lambda L, ops: ops.squeeze.dim(t(L)[None], 0),
        "sum.default": lambda L, ops: ops.sum.default(t(L)),
        "sum.dim_IntList": lambda L, ops: ops.sum.dim_IntList(t(L), [1], True),
        "mean.dim": lambda L, ops: ops.mean.dim(t(L), [0]),
        "amax.default": lambda L, ops: ops.amax.default(t(L), [1]),
        "max.dim": lambda L, ops: tuple(ops.max.dim(t(L), 1)),
        "_softmax.default": lambda L, ops: ops._softmax.default(t(L), 1, False),
        "_log_softmax.default": lambda L, ops: ops._log_softmax.default(t(L), 0, False),
        "softmax.int": lambda L, ops: ops.softmax.int(t(L), 1),
        "slice.Tensor": lambda L, ops: ops.slice.Tensor(t(L), 1, 0, 3, 2),
        "select.int": lambda L, ops: ops.select.int(t(L), 1, 2),
        "cat.default": lambda L, ops: ops.cat.default([t(L), t(L)], 1),
        "stack.default": lambda L, ops: ops.stack.default([t(L), t(L)]),
        "clone.default": lambda L, ops: ops.clone.default(t(L)),
        "detach.default": lambda L, ops: ops.detach.default(t(L)),
        "where.self": lambda L, ops: ops.where.self(t(L) > 0, t(L), -t(L)),
        "eq.Scalar": lambda L, ops: ops.eq.Scalar(t(L), 3.0),
        "gt.Tensor": lambda L, ops: ops.gt.Tensor(t(L), -t(L)),
        "native_layer_norm.default": lambda L, ops: ops.native_layer_norm.default(t(L), [3], None, None, 1e-5),
        "linear.default": lambda L, ops: ops.linear.default(t(L), t(L, B).T, None),
        "embedding.default": lambda L, ops: ops.embedding.default(t(L, B), L.tensor([2, 0])),
        "_to_copy.default": lambda L, ops: ops._to_copy.default(t(L), dtype=L.float32),
        "convolution.default": lambda L, ops: ops.convolution.default(
            t(L).reshape(1, 1, 6), L.ones(2, 1, 3, dtype=L.float64), None, [1], [1], [1], False, [0], 1),
        "threshold_backward.default": lambda L, ops: ops.threshold_backward.default(L.ones(2, 3, dtype=L.float64),
                                                                                    t(L), 0.0),
        "zeros.default": lambda L, ops: ops.zeros.default([2, 2]),
        "arange.start_step": lambda L, ops: ops.arange.start_step(0, 6, 2),
        "scalar_tensor.default": lambda L, ops: ops.scalar_tensor.default(2.5),
        "split.Tensor": lambda L, ops: ops.split.Tensor(t(L), 1, 1),
        "var.correction": lambda L, ops: ops.var.correction(t(L), [1], correction=0),
    }


@pytest.mark.parametrize("case", list(_aten_cases()))
def test_aten_op(case):
    fn = _aten_cases()[case]
    both(lambda L: fn(L, L.ops.aten))


def test_aten_op_objects():
    def run(L):
        aten = L.ops.aten
        o, p = aten.add.Tensor, aten.add
        return (str(o), repr(o), o.name(), o.__name__, o._overloadname, o._opname, o.namespace,
                o is aten.add.Tensor, p is aten.add, o.overloadpacket is p, str(p), repr(p), p.__name__,
                p._qualified_op_name, "Tensor" in p.overloads(), "default" in aten.relu.overloads(),
                str(aten.relu.default), aten.mm.default.overloadpacket.__name__, hash(o) == hash(aten.add.Tensor),
                {o: 1}[aten.add.Tensor])
    both(run)


def test_aten_errors():
    both(lambda L: L.ops.aten.nonexistent_op_xyz)
    both(lambda L: L.ops.aten.add.nonexistent)
    both(lambda L: L.ops.myns.myop)
    both(lambda L: L.ops.load_library("/nonexistent/libmyops.so"))


@pytest.mark.skipif(AGAINST_TORCH, reason="torch loads the library")
def test_load_library_existing_file(tmp_path):
    lib = tmp_path / "libfake.so"
    lib.write_bytes(b"\x7fELF")
    with pytest.raises(NotImplementedError, match="ferrograd cannot load C\\+\\+ operator libraries"):
        fg.ops.load_library(str(lib))


def test_aten_op_gradient():
    def run(L):
        x = L.tensor(A, requires_grad=True)
        y = L.ops.aten.mul.Tensor(L.ops.aten.relu.default(x), 3.0)
        L.ops.aten.sum.default(y).backward()
        return x.grad
    both(run)


# ---- legacy typed constructors, Tensor.type / new ------------------------------------------

TYPES = ["FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor",
         "BoolTensor", "HalfTensor", "BFloat16Tensor"]


@pytest.mark.parametrize("name", TYPES)
def test_typed_constructor(name):
    def run(L):
        T = getattr(L, name)
        data = T([1, 0, 2]) if name != "BoolTensor" else T([True, False])
        sized = T(2, 3)
        sized2 = T(L.Size([4]))
        empty = T()
        same = T(data)
        return (data, sized.dtype, tuple(sized.shape), tuple(sized2.shape), empty, same.data_ptr() == data.data_ptr(),
                isinstance(data, T), isinstance(L.ones(1), T), isinstance(data, L.Tensor), type(data) is L.Tensor,
                T.dtype, T.__name__, issubclass(T, L.Tensor) if isinstance(T, type) else None, T.is_cuda)
    both(run)


def test_typed_constructor_errors():
    both(lambda L: L.FloatTensor(L.ones(2, dtype=L.float64)), kind_only=True)
    both(lambda L: L.FloatTensor(2, device="cuda"))
    both(lambda L: L.LongTensor([1.7, -2.2]))
    both(lambda L: L.FloatTensor((1, 2)))


def test_cuda_typed_classes():
    def run(L):
        return (isinstance(L.ones(1), L.cuda.FloatTensor), L.cuda.LongTensor.dtype, L.cuda.FloatTensor.is_cuda)
    both(run)
    if not torch.cuda.is_available() and not fg.cuda.is_available():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch: the cuda typed constructors are not recommended
            assert both(lambda L: L.cuda.FloatTensor([1.0]))[0] == "RuntimeError"


def test_tensor_type():
    def run(L):
        x = L.ones(2)
        return ([L.ones(1, dtype=d).type() for d in (L.float32, L.float64, L.int64, L.int32, L.bool, L.uint8,
                                                      L.float16, L.bfloat16, L.int8, L.int16)],
                x.type("torch.DoubleTensor"), x.type(L.DoubleTensor).dtype, x.type(L.int64).dtype,
                x.type(L.float32) is x, x.type("torch.FloatTensor") is x, x.type(L.FloatTensor) is x,
                x.type(non_blocking=True))
    both(run)
    both(lambda L: L.ones(2).type("foo"))


def test_tensor_new():
    def run(L):
        x = L.ones(2, 3, dtype=L.float64)
        return (x.new(), x.new(2).dtype, tuple(x.new(2, 3).shape), x.new([1, 2]), x.new(L.Size([4])).shape,
                x.new(x).data_ptr() == x.data_ptr(), x.new((1, 2)))
    both(run)
    both(lambda L: L.ones(2).new([1, 2], dtype=L.int64), kind_only=True)
    both(lambda L: L.ones(2).new(L.ones(2, dtype=L.int64)), kind_only=True)


def test_new_family():
    def run(L):
        x = L.ones(2, dtype=L.float64)
        return (x.new_tensor([1, 2]), x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2,), 7),
                tuple(x.new_empty(3).shape), x.new_empty(3).dtype, x.new_zeros(2, dtype=L.int64))
    both(run)


# ---- format() -----------------------------------------------------------------------------

def test_format_tensors():
    def run(L):
        return (format(L.tensor(3.14159), ".3f"), f"{L.tensor(2.5):.4f}", f"{L.tensor(7):d}", f"{L.tensor(7):5}",
                format(L.tensor(1.5)), format(L.tensor(True)), f"{L.tensor(2.5, requires_grad=True):.2f}",
                f"{L.tensor([1.5])}", f"{L.tensor(0.000123):.2e}", format(L.ones(2), ""))
    both(run)
    both(lambda L: format(L.ones(2), ".3f"))


# ---- default dtype -----------------------------------------------------------------------------

def test_default_dtype_float64():
    def run(L):
        L.set_default_dtype(L.float64)
        out = [L.get_default_dtype(), L.tensor([1.5]), L.tensor(1.5), L.zeros(2), L.ones(2), L.empty(1).dtype,
               L.rand(2).dtype, L.randn(2).dtype, L.arange(3.0), L.arange(3), L.linspace(0, 1, 3), L.full((2,), 1.5),
               L.full((2,), 1), L.eye(2), L.Tensor([1]), L.Tensor(2).dtype, L.as_tensor([1.0]), L.FloatTensor([1]),
               L.ones(2, dtype=L.int64) * 1.5, L.ones(1, dtype=L.int32) / 2, L.ones(2, dtype=L.float32) * 2.5,
               L.ones(2, dtype=L.float16) * 2.5, L.tensor([1, 2]).sqrt(), L.nn.Linear(2, 2).weight.dtype,
               L.nn.Conv2d(1, 1, 1).weight.dtype, L.nn.LayerNorm(2).weight.dtype, L.tensor([]).dtype,
               L.logspace(0, 1, 2), L.randint(0, 2, (2,)).dtype, L.zeros(2).sum() + 0.1]
        return out
    both(run)


def test_default_dtype_other_floats():
    def run(L):
        out = []
        for d in (L.float16, L.bfloat16, L.float32):
            L.set_default_dtype(d)
            out.append((L.get_default_dtype(), L.zeros(1).dtype, L.tensor(1.5).dtype, L.arange(2.0).dtype))
        return out
    both(run)


def test_default_dtype_errors():
    both(lambda L: L.set_default_dtype(L.int64))
    both(lambda L: L.set_default_dtype("float64"))
    both(lambda L: L.get_default_dtype())


def test_default_dtype_repr():
    def run(L):
        L.set_default_dtype(L.float64)
        return repr(L.tensor([1.5])), repr(L.tensor([1.5], dtype=L.float32)), repr(L.zeros(0)), repr(L.tensor([1]))
    both(run)


def test_set_default_tensor_type():
    def run(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            L.set_default_tensor_type(L.DoubleTensor)
            a = (L.zeros(1).dtype, L.get_default_dtype())
            L.set_default_tensor_type("torch.FloatTensor")
            return a, L.zeros(1).dtype
    both(run)
    for bad in ("LongTensor", "float64"):
        def run(L):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                L.set_default_tensor_type(getattr(L, bad))
        both(run)


def test_default_device():
    both(lambda L: L.get_default_device())
    for L in LIBS:
        L.set_default_device("cpu")
        L.set_default_device(None)


# ---- print options ---------------------------------------------------------------------------

def test_printoptions():
    def run(L):
        out = []
        x = L.tensor([1.123456, 2.5])
        L.set_printoptions(precision=2)
        out.append(repr(x))
        L.set_printoptions(sci_mode=True)
        out.append(repr(x))
        L.set_printoptions(precision=3)  # sci_mode back to automatic
        out.append(repr(x))
        L.set_printoptions(profile="default")
        out.append(repr(x))
        L.set_printoptions(threshold=5, edgeitems=2)
        out.append(repr(L.arange(10.0)))
        L.set_printoptions(profile="full")
        out.append(repr(L.arange(1200)))
        L.set_printoptions(profile="short")
        out += [repr(L.arange(2000.0)), repr(L.tensor([1.123456]))]
        L.set_printoptions(profile="default", linewidth=30)
        out.append(repr(L.arange(20.0)))
        L.set_printoptions(profile="default", sci_mode=False)
        out.append(repr(L.tensor([1e-8, 1e5])))
        L.set_printoptions(sci_mode=None)
        out.append(repr(L.tensor([1e-8, 1e5])))
        L.set_printoptions(precision=6)
        out += [repr(L.tensor(1.123456789)), repr(L.tensor([1, 2])), f"{L.tensor([2.0, 3.5])}"]
        L.set_printoptions(profile="no such profile")
        out.append(repr(x))
        return out
    both(run)


# ---- deterministic algorithms ------------------------------------------------------------------

def test_deterministic_algorithms():
    def run(L):
        out = [(L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                L.get_deterministic_debug_mode())]
        for mode, warn in ((True, False), (True, True), (False, True), (False, False)):
            L.use_deterministic_algorithms(mode, warn_only=warn)
            out.append((L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                        L.get_deterministic_debug_mode()))
        for m in ("warn", "error", "default", 1, 2, 0):
            L.set_deterministic_debug_mode(m)
            out.append((L.are_deterministic_algorithms_enabled(), L.is_deterministic_algorithms_warn_only_enabled(),
                        L.get_deterministic_debug_mode()))
        return out
    both(run)
    both(lambda L: L.use_deterministic_algorithms(1))
    both(lambda L: L.set_deterministic_debug_mode("x"))
    both(lambda L: L.set_deterministic_debug_mode(5))
