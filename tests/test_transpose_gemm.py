"""Transposed layouts through the kernels that move them: contiguous copies of transposed views
(register transposes of 8x8 four-byte / 4x4 eight-byte blocks, the edges element by element),
matrix products whose right operand is a transposed view (`x @ w.T`, moved into row-major order
first when the left operand has many rows), their gradients, and the thread-count setting. Values
against torch (or numpy for plain copies, which must be exact)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

DTYPES = ["float32", "float64", "int32", "int64", "int16", "int8", "uint8", "bool", "float16", "bfloat16"]
SHAPES = [(8, 8), (9, 17), (37, 53), (256, 256), (3, 300), (130, 64)]


def _array(shape, dtype, seed=0):
    g = np.random.default_rng(seed)
    if dtype == "bool":
        return g.random(shape) > 0.5
    if dtype.startswith("int") or dtype == "uint8":
        return g.integers(0, 100, size=shape).astype(dtype)
    return g.standard_normal(shape)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_contiguous_copy_of_a_transpose_is_exact(dtype, shape):
    a = _array(shape, dtype)
    want = torch.tensor(a, dtype=getattr(torch, dtype)).t().contiguous()
    got = fg.tensor(a, dtype=getattr(fg, dtype)).t().contiguous()
    assert tuple(got.shape) == tuple(want.shape) and got.is_contiguous()
    if dtype == "bfloat16":  # numpy has no bfloat16: compare the bits
        assert torch.equal(torch.from_numpy(got.view(fg.int16).numpy()), want.view(torch.int16))
    else:
        assert np.array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_permuted_3d_and_offset_views_copy_exactly(dtype):
    a = _array((5, 40, 24), dtype, seed=1)
    t, f = torch.tensor(a), fg.tensor(a)
    for fn in (lambda x: x.permute(0, 2, 1), lambda x: x.permute(2, 1, 0), lambda x: x[1:, 3:35, 2:].transpose(1, 2),
               lambda x: x[:, ::2].transpose(1, 2)):
        assert np.array_equal(fn(f).contiguous().numpy(), fn(t).contiguous().numpy())


# (m, k, n): many rows of x (the row-major copy of w first), few rows, few rows with many columns,
# a large w
PRODUCTS = [(256, 256, 256), (300, 70, 90), (129, 33, 17), (64, 784, 256), (32, 512, 512), (200, 9, 8), (7, 300, 5),
            (300, 600, 200),  # float32 on AVX-512: our kernel with two k blocks and two row blocks
            (150, 2050, 2050)]  # the last: w over 4M elements, packed by the gemm crate itself


@pytest.mark.parametrize("mkn", PRODUCTS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_product_with_a_transposed_right_operand_and_its_gradients(dtype, mkn):
    m, k, n = mkn
    g = np.random.default_rng(m + k + n)
    xa, wa = g.standard_normal((m, k)), g.standard_normal((n, k)) / np.sqrt(k)
    out = {}
    for L in (torch, fg):
        x = L.tensor(xa, dtype=getattr(L, dtype), requires_grad=True)
        w = L.tensor(wa, dtype=getattr(L, dtype), requires_grad=True)
        y = x @ w.T
        (y.tanh() * y).sum().backward()
        out[L] = [y.detach().numpy(), x.grad.numpy(), w.grad.numpy()]
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for got, want in zip(out[fg], out[torch]):
        np.testing.assert_allclose(got, want, **tol)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's promise: split kernels do not depend on the thread count")
def test_transposed_operand_products_are_the_same_with_one_thread():
    g = np.random.default_rng(7)
    x = fg.tensor(g.standard_normal((256, 200)), dtype=fg.float32)
    w = fg.tensor(g.standard_normal((180, 200)), dtype=fg.float32)
    n = fg.get_num_threads()
    try:
        fg.set_num_threads(1)
        one = [(x @ w.T).numpy().copy(), w.T.contiguous().numpy().copy()]
    finally:
        fg.set_num_threads(n)
    assert all(np.array_equal(a, b) for a, b in zip(one, [(x @ w.T).numpy(), w.T.contiguous().numpy()]))


def _fresh(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's thread pool")
def test_set_num_threads_can_go_down_and_back_up_in_a_fresh_process():
    """torch lets set_num_threads(1) be undone; the first call no longer fixes the pool's size."""
    import os
    cores = os.cpu_count() or 1
    out = _fresh("import ferrograd as fg, numpy as np\n"
                 "fg.set_num_threads(1); a = fg.randn(300, 300); one = (a @ a.T).numpy(); print(fg.get_num_threads())\n"
                 "fg.set_num_threads(2); print(fg.get_num_threads(), np.array_equal(one, (a @ a.T).numpy()))\n"
                 "fg.set_num_threads(1); print(fg.get_num_threads())")
    assert out == ["1", str(min(2, cores)), "True", "1"]


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's engine setting")
def test_parallel_backward_setting_is_checked():
    before = fg._C._set_parallel_backward("off")
    try:
        assert before in ("auto", "always")
        assert fg._C._set_parallel_backward("auto") == "off"
        with pytest.raises(ValueError, match="expected 'off', 'auto' or 'always'"):
            fg._C._set_parallel_backward("sometimes")
    finally:
        fg._C._set_parallel_backward(before)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's promise: split kernels do not depend on the thread count")
def test_split_kernels_give_the_same_bits_with_sixteen_threads():
    """A fresh process with a 16-thread pool (on any machine): GEMMs cut into up to 16 blocks
    (k > 512 with few rows once changed the bits: the crate's k-blocks differ for small
    products), transposed operands, sums and row sums, each bitwise the one-thread result."""
    code = (
        "import numpy as np, ferrograd as fg\n"
        "g = np.random.default_rng(5)\n"
        "t = lambda *s: fg.tensor(g.standard_normal(s), dtype=fg.float32)\n"
        "ops = [(t(64, 784), t(784, 256)), (t(32, 600), t(600, 512)), (t(300, 520), t(520, 40)), (t(33, 900), t(900, 97)),\n"
        "       (t(256, 256), t(256, 256)), (t(130, 1030), t(1030, 70)), (t(300, 600), t(600, 200))]\n"
        "big, d = t(700, 900), fg.tensor(g.standard_normal(300_001))\n"
        "def run():\n"
        "    out = [(a @ b).numpy().copy() for a, b in ops] + [(a @ b.t().contiguous().t()).numpy().copy() for a, b in ops]\n"
        "    return out + [(b.t() @ a.t()).numpy().copy() for a, b in ops] + [big.sum(1).numpy().copy(), big.sum(0).numpy().copy(), np.array(d.sum().item())]\n"
        "many = run(); fg.set_num_threads(1); one = run()\n"
        "print(fg.get_num_threads(), all(np.array_equal(x, y) for x, y in zip(many, one)))\n"
    )
    import os
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, RAYON_NUM_THREADS="16", FERROGRAD_NUM_THREADS=""))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "True"]


@pytest.mark.skipif(AGAINST_TORCH or fg._config.config()["simd_level"] != 2,
                    reason="ferrograd's float32 kernel for AVX-512 CPUs")
def test_float32_kernel_is_used_and_agrees_with_the_crate():
    """Mid-size float32 products run on ferrograd's own kernel on AVX-512 CPUs
    (`FERROGRAD_GEMM=crate` keeps them on the gemm crate). Ours adds each element's products in
    one chain over k; the crate does too up to k = 512 (the same bits: measured), but splits a
    longer k into blocks added separately, so at k = 700 the bits differ where the kernels differ:
    that shows the default really is the other kernel. Values agree within float32 rounding."""
    code = (
        "import numpy as np, ferrograd as fg\n"
        "g = np.random.default_rng(9)\n"
        "a, b = (fg.tensor(g.standard_normal(s), dtype=fg.float32) for s in ((256, 700), (700, 256)))\n"
        "np.save(__import__('sys').argv[1], np.stack([(a @ b).numpy(), (a @ b.t().contiguous().t()).numpy()]))\n"
    )
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = {}
        for kernel in ("ours", "crate"):
            env = dict(os.environ)
            env.pop("FERROGRAD_GEMM", None)
            if kernel == "crate":
                env["FERROGRAD_GEMM"] = "crate"
            path = os.path.join(d, kernel + ".npy")
            r = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120, env=env)
            assert r.returncode == 0, r.stderr
            out[kernel] = np.load(path)
    assert not np.array_equal(out["ours"], out["crate"])
    np.testing.assert_allclose(out["ours"], out["crate"], rtol=1e-4, atol=1e-3)


PAIRED = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (32, 512, 512), (64, 784, 256), (300, 70, 90), (129, 33, 17),
          (7, 30, 5)]  # the last: below the size from which products are split (computed in turn)


def _two_threads():
    """The matrix-product backward computes both gradients concurrently only with two threads."""
    n = fg.get_num_threads()
    fg.set_num_threads(2)
    return n


def _grads(L, xa, wa, ba, how, create_graph=False):
    x = L.tensor(xa, requires_grad=True)
    w = L.tensor(wa, requires_grad=True)
    b = L.tensor(ba, requires_grad=True)
    if how == "mm":
        y = x @ w
    elif how == "linear":  # addmm: the bias and both matrices
        y = L.nn.functional.linear(x, w.T, b)
    else:  # a transposed gradient reaches the product
        y = (x @ w).T
    loss = (y.tanh() * y).sum() if how != "t" else (y * y.detach().cos()).sum()
    gx, gw = L.autograd.grad(loss, (x, w), create_graph=create_graph)
    return [y.detach().numpy(), gx.detach().numpy(), gw.detach().numpy()]


@pytest.mark.parametrize("how", ["mm", "linear", "t"])
@pytest.mark.parametrize("mkn", PAIRED, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_both_gradients_of_a_product_match_torch(dtype, mkn, how):
    m, k, n = mkn
    g = np.random.default_rng(m * 7 + k * 3 + n)
    xa, wa, ba = (g.standard_normal((m, k)).astype(dtype), (g.standard_normal((k, n)) / np.sqrt(k)).astype(dtype),
                  g.standard_normal(n).astype(dtype))
    before = _two_threads()
    try:
        got = _grads(fg, xa, wa, ba, how)
    finally:
        fg.set_num_threads(before)
    want = _grads(torch, xa, wa, ba, how)
    tol = dict(rtol=2e-4, atol=2e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, **tol)


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's promise: gradients do not depend on the thread count")
@pytest.mark.parametrize("how", ["mm", "linear", "t"])
@pytest.mark.parametrize("mkn", PAIRED, ids=str)
def test_both_gradients_of_a_product_have_the_same_bits_however_computed(mkn, how):
    """Two threads (each gradient's product whole on one thread), one thread, and with
    create_graph (grad mode on: the products one after the other, each split): the same bits."""
    m, k, n = mkn
    g = np.random.default_rng(m + k + n)
    xa, wa, ba = (g.standard_normal((m, k)).astype("float32"), g.standard_normal((k, n)).astype("float32"),
                  g.standard_normal(n).astype("float32"))
    before = _two_threads()
    try:
        paired = _grads(fg, xa, wa, ba, how)
        graph = _grads(fg, xa, wa, ba, how, create_graph=True)
        fg.set_num_threads(1)
        one = _grads(fg, xa, wa, ba, how)
    finally:
        fg.set_num_threads(before)
    for p, o, c in zip(paired, one, graph):
        assert np.array_equal(p, o) and np.array_equal(p, c)


def test_the_profiler_sees_both_gradient_products():
    """Computed at once on two threads, the products still show as aten::mm, as torch's do."""
    counts = {}
    for L in (torch, fg):
        x = L.randn(128, 128, requires_grad=True)
        w = L.randn(128, 128, requires_grad=True)
        with L.profiler.profile() as prof:
            (x @ w).tanh().sum().backward()
        counts[L] = sum(e.count for e in prof.key_averages() if e.key == "aten::mm")
    assert counts[fg] == counts[torch] == 3
