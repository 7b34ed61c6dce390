"""Zero-copy interop: DLPack (`from_dlpack`, `Tensor.__dlpack__`, `__dlpack_device__`) with torch
and NumPy in both directions, and NumPy's `__array__` / `__array_interface__`.

Sharing is verified by mutation: a write on one side must be seen on the other. Lifetimes are
verified with weak references to NumPy arrays (NumPy's DLPack export keeps the array alive until
the consumer calls the deleter). With FG_TEST_AGAINST_TORCH=1 `fg` is torch, which checks that
these tests encode torch's behaviour.
"""
import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg

DTYPES = [
    (np.float32, torch.float32, "float32"),
    (np.float64, torch.float64, "float64"),
    (np.int64, torch.int64, "int64"),
    (np.bool_, torch.bool, "bool"),
]


def _np_values(np_dtype, shape=(2, 3)):
    n = int(np.prod(shape))
    if np_dtype is np.bool_:
        return (np.arange(n) % 3 == 0).reshape(shape)
    return np.arange(1, n + 1).astype(np_dtype).reshape(shape)


def _collect():
    gc.collect()
    gc.collect()


# ---- NumPy -> fg ---------------------------------------------------------------------------------


@pytest.mark.parametrize("np_dtype,_tdt,name", DTYPES)
def test_from_numpy_via_dlpack_shares_memory(np_dtype, _tdt, name):
    a = _np_values(np_dtype)
    t = fg.from_dlpack(a)
    assert t.dtype == getattr(fg, name)
    assert tuple(t.shape) == (2, 3)
    assert t.tolist() == a.tolist()
    # numpy writes, fg sees
    a[0, 1] = a[1, 2]
    assert t[0, 1].item() == a[1, 2].item()
    # fg writes (in place), numpy sees
    t[1, 0] = t[0, 0]
    assert a[1, 0] == a[0, 0]


def test_from_numpy_non_contiguous():
    base = np.arange(24.0).reshape(4, 6)
    for view in (base.T, base[::2, 1::2], base[:, 3]):
        t = fg.from_dlpack(view)
        assert tuple(t.shape) == view.shape
        assert t.stride() == tuple(s // view.itemsize for s in view.strides)
        np.testing.assert_array_equal(np.array(t.tolist()), view)
    t = fg.from_dlpack(base.T)
    base[2, 5] = -1.0
    assert t[5, 2].item() == -1.0


def test_from_numpy_zero_dim_and_empty():
    z = np.array(2.5)
    t = fg.from_dlpack(z)
    assert t.dim() == 0 and t.item() == 2.5
    z[()] = 4.0
    assert t.item() == 4.0
    e = fg.from_dlpack(np.zeros((0, 3), dtype=np.int64))
    assert tuple(e.shape) == (0, 3) and e.dtype == fg.int64


def test_from_dlpack_copy_true_does_not_share():
    a = np.arange(4.0)
    t = fg.from_dlpack(a, copy=True)
    a[0] = 99.0
    assert t[0].item() == 0.0
    s = fg.from_dlpack(a, copy=False)
    a[1] = 42.0
    assert s[1].item() == 42.0


def test_numpy_producer_deleted_before_consumer():
    a = np.arange(6.0)
    ref = weakref.ref(a)
    t = fg.from_dlpack(a)
    view = t[2:]
    del a
    _collect()
    assert ref() is not None  # the consumer keeps the producer's memory alive
    del t
    _collect()
    assert ref() is not None  # a view of the imported tensor still does
    assert view.tolist() == [2.0, 3.0, 4.0, 5.0]
    del view
    _collect()
    assert ref() is None  # and the deleter ran with the last one


# ---- fg -> NumPy ---------------------------------------------------------------------------------


@pytest.mark.parametrize("np_dtype,_tdt,name", DTYPES)
def test_numpy_from_fg_shares_memory(np_dtype, _tdt, name):
    t = fg.tensor(_np_values(np_dtype).tolist(), dtype=getattr(fg, name))
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype
    assert a.tolist() == t.tolist()
    t[0, 0] = t[1, 1]
    assert a[0, 0] == a[1, 1]
    a[1, 2] = a[0, 1]
    assert t[1, 2].item() == t[0, 1].item()


def test_numpy_from_fg_strided_and_zero_dim():
    t = fg.arange(12.0).reshape(3, 4)
    for v in (t.t(), t[:, 1::2], t[1]):
        a = np.from_dlpack(v)
        assert a.shape == tuple(v.shape)
        assert tuple(s // a.itemsize for s in a.strides) == v.stride()
        assert a.tolist() == v.tolist()
    tt = t.t()
    a = np.from_dlpack(tt)
    a[3, 0] = -7.0
    assert t[0, 3].item() == -7.0
    z = np.from_dlpack(fg.tensor(3.0))
    assert z.shape == () and z == 3.0


def test_fg_producer_deleted_before_numpy_consumer():
    src = np.arange(5.0)
    ref = weakref.ref(src)
    t = fg.from_dlpack(src)
    a = np.from_dlpack(t)  # numpy holds fg's export, which holds the imported numpy memory
    del src, t
    _collect()
    assert ref() is not None
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    del a
    _collect()
    assert ref() is None


# ---- torch <-> fg --------------------------------------------------------------------------------


@pytest.mark.parametrize("_np,tdt,name", DTYPES)
def test_from_torch_shares_memory(_np, tdt, name):
    src = torch.tensor(_np_values(_np).tolist(), dtype=tdt)
    t = fg.from_dlpack(src)
    assert t.dtype == getattr(fg, name)
    assert t.tolist() == src.tolist()
    src[0, 2] = src[1, 0]
    assert t[0, 2].item() == src[1, 0].item()
    t[1, 1] = t[0, 0]
    assert src[1, 1].item() == src[0, 0].item()


@pytest.mark.parametrize("_np,tdt,name", DTYPES)
def test_torch_from_fg_shares_memory(_np, tdt, name):
    t = fg.tensor(_np_values(_np).tolist(), dtype=getattr(fg, name))
    dst = torch.from_dlpack(t)
    assert dst.dtype == tdt
    assert dst.tolist() == t.tolist()
    dst[0, 0] = dst[1, 2]
    assert t[0, 0].item() == t[1, 2].item()
    t[1, 1] = t[0, 1]
    assert dst[1, 1].item() == dst[0, 1].item()


def test_torch_fg_strided_zero_dim_and_round_trip():
    src = torch.arange(20.0, dtype=torch.float64).reshape(4, 5)
    for v in (src.t(), src[1:, ::2], src[2]):
        t = fg.from_dlpack(v)
        assert tuple(t.shape) == tuple(v.shape) and t.stride() == v.stride()
        assert t.tolist() == v.tolist()
        back = torch.from_dlpack(t)
        assert back.data_ptr() == v.data_ptr() and back.stride() == v.stride()
    z = fg.from_dlpack(torch.tensor(7, dtype=torch.int64))
    assert z.dim() == 0 and z.item() == 7
    z2 = torch.from_dlpack(fg.tensor(True))
    assert z2.dim() == 0 and z2.item() is True


def test_torch_producer_deleted_before_consumer():
    src = torch.arange(6.0)
    t = fg.from_dlpack(src)
    del src
    _collect()
    torch.ones(6) * 5  # reuse freed memory, if it had been freed
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    out = torch.from_dlpack(fg.arange(4.0) * 2)
    _collect()
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_results_of_ops_on_imported_memory():
    a = np.arange(4.0)
    t = fg.from_dlpack(a)
    y = (t * 2 + 1).sum()
    assert y.item() == 16.0
    t.add_(1)
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.0, 4.0])


# ---- the protocol itself -------------------------------------------------------------------------


def test_dlpack_device_and_capsule_names():
    t = fg.arange(3.0)
    assert t.__dlpack_device__() == (1, 0)  # (kDLCPU, 0)
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))


def test_capsule_consumed_once():
    cap = fg.arange(3.0).__dlpack__()
    t = fg.from_dlpack(cap)
    assert t.tolist() == [0.0, 1.0, 2.0]
    assert '"used_dltensor"' in repr(cap)
    with pytest.raises(RuntimeError, match="consumed only once"):
        fg.from_dlpack(cap)


def test_unconsumed_capsule_releases_memory():
    src = np.arange(3.0)
    ref = weakref.ref(src)
    t = fg.from_dlpack(src)
    cap = t.__dlpack__(max_version=(1, 0))
    del src, t
    _collect()
    assert ref() is not None
    del cap  # never consumed: the capsule's destructor calls the deleter
    _collect()
    assert ref() is None


def test_export_copy_true_is_a_copy():
    t = fg.arange(4.0)
    a = np.from_dlpack(t, copy=True)
    t[0] = 10.0
    assert a[0] == 0.0


def test_export_requires_grad_is_refused():
    t = fg.ones(2, requires_grad=True)
    with pytest.raises(BufferError, match="require gradient"):
        t.__dlpack__()
    assert np.from_dlpack(t.detach()).tolist() == [1.0, 1.0]


def test_invalid_objects():
    with pytest.raises(RuntimeError, match="invalid capsule"):
        fg.from_dlpack(5)
    with pytest.raises(TypeError, match="stream must be"):
        fg.ones(2).__dlpack__(stream="x")
    # an explicit CPU target is accepted (another device needs that device's runtime)
    assert np.from_dlpack(fg.ones(2), device="cpu").tolist() == [1.0, 1.0]
    assert '"dltensor"' in repr(fg.ones(2).__dlpack__(dl_device=(1, 0)))


# ---- NumPy's __array__ / __array_interface__ -----------------------------------------------------


def test_array_protocol_shares_and_converts():
    t = fg.arange(6.0).reshape(2, 3)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (2, 3)
    t[0, 0] = 5.0
    assert a[0, 0] == 5.0
    d = np.asarray(t, dtype=np.float64)
    assert d.dtype == np.float64
    t[0, 1] = 8.0
    assert d[0, 1] == 1.0  # a converted copy
    tt = np.asarray(t.t())
    assert tt.shape == (3, 2) and tt[1, 0] == 8.0
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(fg.ones(2, requires_grad=True))


ferrograd_only = pytest.mark.skipif(AGAINST_TORCH, reason="torch has no __array_interface__ and its __array__ takes no copy=")


@ferrograd_only
def test_array_copy_keyword():
    t = fg.arange(3.0)
    c = np.array(t, copy=True)
    t[0] = 9.0
    assert c[0] == 0.0
    v = np.asarray(t, copy=False)
    t[1] = 7.0
    assert v[1] == 7.0
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)


@ferrograd_only
def test_array_interface():
    t = fg.arange(12, dtype=fg.int64).reshape(3, 4)
    iface = t.__array_interface__
    assert iface["typestr"] == "<i8" and iface["shape"] == (3, 4) and iface["version"] == 3
    assert iface["data"][0] == t.data_ptr()
    v = t.t()[1:]
    a = np.array(type("I", (), {"__array_interface__": v.__array_interface__})(), copy=False)
    assert a.tolist() == v.tolist()
    a[0, 0] = -1
    assert t[0, 1].item() == -1
    assert fg.tensor([True]).__array_interface__["typestr"] == "|b1"


@ferrograd_only
def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="uint16"):
        fg.from_dlpack(np.arange(3, dtype=np.uint16))


def _from_numpy_result(L, arr):
    try:
        t = L.from_numpy(arr)
    except Exception as e:  # noqa: BLE001 (the kind and message are compared)
        return type(e).__name__, str(e)[:60]
    return str(t.dtype).split(".")[-1], tuple(t.shape), t.stride(), t.tolist()


def test_from_numpy_dtypes_strides_and_errors_match_torch():
    """from_numpy reads the dtype from NumPy's descriptor (kind, size, byte order): every dtype kept,
    both int64 spellings, strided views; torch's checks in its order (strides that are no multiple
    of the item size, then negative strides, then the byte order, then the dtype)."""
    odd = np.ndarray((3,), np.float32, np.zeros(13, np.uint8).data, offset=1, strides=(3,))
    arrays = [np.ones((2, 3), t) for t in (np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                                            np.uint8, np.bool_, np.dtype("l"), np.dtype("q"))]
    arrays += [np.arange(12.0).reshape(3, 4)[:, ::2], np.ones((3, 4), np.float32).T, np.zeros((2, 0), np.uint8),
               np.array(2.5), np.ones(3, ">i8"), np.ones(3, ">f4"), np.arange(5.0)[::-1], odd,
               np.array([1, 2], object)[::-1], np.ones(3, np.longdouble), np.zeros(3, [("a", "f4")])]
    for arr in arrays:
        assert _from_numpy_result(fg, arr) == _from_numpy_result(torch, arr), arr.dtype


def test_from_numpy_of_a_read_only_array_shares_it():
    # torch warns once per process (TORCH_WARN_ONCE) about the read-only array, and shares it
    a = np.arange(4.0)
    a.flags.writeable = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t, t2 = fg.from_numpy(a), fg.from_numpy(a)
    assert t.tolist() == t2.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert all(issubclass(x.category, UserWarning) and "not writable" in str(x.message) for x in w) and len(w) <= 1
