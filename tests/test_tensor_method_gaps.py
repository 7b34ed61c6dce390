"""The Tensor methods and properties the API census found missing, against torch: as_strided_scatter
(also torch.as_strided_scatter), const_data_ptr, is_set_to, the dense answers of dense_dim / sparse_dim /
to_dense / is_distributed, the is_xpu/is_mps/... device flags, and the torch-level empty_permuted,
get_device_module, is_vulkan_available and set_flush_denormal."""
import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

D = torch.float64


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def twin(*shape):
    x = torch.randn(*shape, dtype=D)
    return x.clone().requires_grad_(True), fg.tensor(_np(x), requires_grad=True)


@pytest.mark.parametrize("shape,src,size,stride,offset", [
    ((6,), (2,), (2,), (2,), 1), ((3, 4), (2, 2), (2, 2), (4, 1), 5), ((3, 4), (3,), (3,), (5,), None),
    ((2, 3, 2), (2, 3), (2, 3), (1, 2), 0),
])
def test_as_strided_scatter(shape, src, size, stride, offset):
    xt, xf = twin(*shape)
    st, sf = twin(*src)
    yt = torch.as_strided_scatter(xt, st, size, stride, offset)
    yf = fg.as_strided_scatter(xf, sf, size, stride, offset)
    np.testing.assert_array_equal(_np(yf), _np(yt))
    np.testing.assert_array_equal(_np(xf.as_strided_scatter(sf, size, stride, offset)), _np(yt))
    # gradients: those of torch's clone-then-write composition (torch's own as_strided_scatter backward
    # gives input a gradient at the overwritten elements and zero elsewhere, the opposite of the derivative)
    ref = xt.clone()
    ref.as_strided(size, stride, offset).copy_(st)
    np.testing.assert_array_equal(_np(ref), _np(yt))
    w = torch.randn(yt.shape, dtype=D)
    (ref * w).sum().backward()
    (yf * fg.tensor(_np(w))).sum().backward()
    if not AGAINST_TORCH:  # (torch's own op has the inverted input gradient described above)
        np.testing.assert_allclose(_np(xf.grad), _np(xt.grad))
    np.testing.assert_allclose(_np(sf.grad), _np(st.grad))
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        fg.as_strided_scatter(xf, fg.ones(7), size, stride, offset)


def test_pointer_and_identity_methods():
    for lib in (torch, fg):
        t = lib.randn(2, 3)
        assert t.const_data_ptr() == t.data_ptr()
        assert t.is_set_to(t) and t.is_set_to(t.view(2, 3))
        assert not t.is_set_to(t[:1]) and not t.is_set_to(t.clone()) and not t.is_set_to(t.t())
        assert t.dense_dim() == 2 and t.sparse_dim() == 0 and lib.zeros(()).dense_dim() == 0
        assert t.to_dense() is t and t.to_dense(lib.float32) is t
        assert t.to_dense(lib.float64).dtype == lib.float64
        assert t.is_distributed() is False and lib.is_distributed(t) is False
        for flag in ("is_xpu", "is_mps", "is_ipu", "is_xla", "is_maia", "is_mtia", "is_vulkan"):
            assert getattr(t, flag) is False, flag


def test_empty_permuted_and_device_queries():
    for size, order in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,))):
        got = fg.empty_permuted(size, order)
        want = torch.empty_permuted(size, order)
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    assert fg.empty_permuted((2, 3), (1, 0), dtype=fg.float64).dtype == fg.float64
    with pytest.raises(RuntimeError):
        fg.empty_permuted((2, 3), (0, 0))
    assert fg.get_device_module("cuda") is fg.cuda and fg.get_device_module(fg.device("cpu")) is fg.cpu
    assert fg.get_device_module() in (fg.cuda, fg.cpu)
    with pytest.raises(RuntimeError):
        fg.get_device_module("foo")
    assert fg.is_vulkan_available() is False and torch.is_vulkan_available() is False
    assert isinstance(fg.set_flush_denormal(False), bool)


def test_deprecated_resize():
    xt, xf = twin(4, 3)
    for args in ((3, 4), (2, 6)):
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            yf = xf.resize(*args)
        with pytest.warns(UserWarning):
            yt = xt.resize(*args)
        np.testing.assert_array_equal(_np(yf), _np(yt))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        yf = xf.resize_as(fg.zeros(6, 2))
    yf.sum().backward()
    assert tuple(yf.shape) == (6, 2) and (_np(xf.grad) == 1).all()
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="autograd's resize can only change the shape"):
        xf.resize(5)


def test_pin_memory():
    if not fg.cuda.is_available():
        for lib in (torch, fg):
            if lib is torch and torch.cuda.is_available():
                continue
            with pytest.raises(RuntimeError, match="Found no NVIDIA driver"):
                lib.randn(3).pin_memory()
        return
    t = fg.randn(2, 3).t()
    p = t.pin_memory()
    assert p.device.type == "cpu" and p.is_contiguous() and (_np(p) == _np(t)).all()
    assert p.data_ptr() != t.data_ptr()
    assert (_np(p.to("cuda", non_blocking=True).cpu()) == _np(t)).all()
