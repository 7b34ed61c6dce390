"""Bit shifts against torch: <<, >>, <<=, >>=, bitwise_left_shift / bitwise_right_shift (function,
method, in-place), type promotion, out-of-range shift amounts, errors for float and bool results."""
import numpy as np
import pytest
import torch

from conftest import fg

INTS = ["int8", "uint8", "int16", "int32", "int64"]


def _pair(dtype):
    rng = np.random.default_rng(1)
    a = rng.integers(-100, 100, size=(3, 4))
    if dtype == "uint8":
        a = np.abs(a)
    s = rng.integers(-2, 70, size=(4,))
    return a, s


def _same(r, e):
    assert isinstance(r, fg.Tensor)
    assert str(r.dtype).rsplit(".", 1)[-1] == str(e.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(e.shape)
    np.testing.assert_array_equal(r.numpy(), e.numpy())


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("left", [True, False])
def test_tensor_tensor(dtype, left):
    a, s = _pair(dtype)
    ta, ts = torch.tensor(a).to(getattr(torch, dtype)), torch.tensor(s).to(getattr(torch, dtype))
    fa, fs = fg.tensor(a).to(getattr(fg, dtype)), fg.tensor(s).to(getattr(fg, dtype))
    if left:
        _same(fa << fs, ta << ts)
        _same(fg.bitwise_left_shift(fa, fs), torch.bitwise_left_shift(ta, ts))
        _same(fa.bitwise_left_shift(fs), ta.bitwise_left_shift(ts))
    else:
        _same(fa >> fs, ta >> ts)
        _same(fg.bitwise_right_shift(fa, fs), torch.bitwise_right_shift(ta, ts))
        _same(fa.bitwise_right_shift(fs), ta.bitwise_right_shift(ts))


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("amount", [-3, 0, 1, 5, 7, 8, 15, 31, 63, 64, 200, True])
def test_scalar_amounts(dtype, amount):
    a, _ = _pair(dtype)
    ta, fa = torch.tensor(a).to(getattr(torch, dtype)), fg.tensor(a).to(getattr(fg, dtype))
    _same(fa << amount, ta << amount)
    _same(fa >> amount, ta >> amount)


def test_mixed_promotion_and_reflected():
    a8 = np.array([1, -8, 5, 127])
    t8, f8 = torch.tensor(a8, dtype=torch.int8), fg.tensor(a8, dtype=fg.int8)
    t32, f32 = torch.tensor([1, 2, 3, 4], dtype=torch.int32), fg.tensor([1, 2, 3, 4], dtype=fg.int32)
    _same(f8 << f32, t8 << t32)
    _same(f8 >> fg.tensor(1), t8 >> torch.tensor(1))  # a 0-d tensor does not promote
    _same(f8 << fg.tensor([1]), t8 << torch.tensor([1]))
    _same(3 << f32, 3 << t32)
    _same(-100 >> f32, -100 >> t32)
    _same(fg.bitwise_left_shift(3, f32), torch.bitwise_left_shift(3, t32))
    bt, bf = torch.tensor([True, False]), fg.tensor([True, False])
    _same(bf << 1, bt << 1)
    u = np.array([200, 3, 255])
    _same(fg.tensor(u, dtype=fg.uint8) << 1, torch.tensor(u, dtype=torch.uint8) << 1)
    _same(fg.tensor(u, dtype=fg.uint8) >> fg.tensor([1, 2, 3]),
          torch.tensor(u, dtype=torch.uint8) >> torch.tensor([1, 2, 3]))
    # broadcasting
    _same(fg.tensor([[1], [2]]) << fg.tensor([0, 1, 2]), torch.tensor([[1], [2]]) << torch.tensor([0, 1, 2]))
    # empty
    _same(fg.zeros(0, dtype=fg.int64) << 2, torch.zeros(0, dtype=torch.int64) << 2)


def test_inplace():
    for dt in ("int8", "int64"):
        t = torch.tensor([1, -8, 5, 127], dtype=getattr(torch, dt))
        f = fg.tensor([1, -8, 5, 127], dtype=getattr(fg, dt))
        t2, f2 = t, f
        t <<= 2
        f <<= 2
        assert f is f2
        _same(f, t)
        t >>= torch.tensor([1, 2, 3, 4])
        f >>= fg.tensor([1, 2, 3, 4])
        _same(f, t)
        r = f.bitwise_left_shift_(fg.tensor([1], dtype=fg.int32))
        t.bitwise_left_shift_(torch.tensor([1], dtype=torch.int32))
        assert r is f
        _same(f, t)
        f.bitwise_right_shift_(1)
        t.bitwise_right_shift_(1)
        _same(f, t)
        del t2, f2


def test_out():
    t, f = torch.empty(4, dtype=torch.int64), fg.empty(4, dtype=fg.int64)
    rt = torch.bitwise_left_shift(torch.tensor([1, 2, 3, 4]), 2, out=t)
    rf = fg.bitwise_left_shift(fg.tensor([1, 2, 3, 4]), 2, out=f)
    assert rf is f and rt is t
    _same(f, t)


def _kinds(ft, tt):
    errs = []
    for fn in (ft, tt):
        try:
            fn()
            errs.append(None)
        except Exception as e:  # noqa: BLE001 (comparing kinds with torch)
            errs.append(e)
    assert type(errs[0]) is type(errs[1]), errs
    assert errs[0] is not None
    return errs


def test_errors():
    e = _kinds(lambda: fg.tensor([1.0]) << 1, lambda: torch.tensor([1.0]) << 1)
    assert str(e[0]) == str(e[1])
    e = _kinds(lambda: fg.tensor([1]) >> 1.5, lambda: torch.tensor([1]) >> 1.5)
    assert str(e[0]) == str(e[1])
    e = _kinds(lambda: fg.tensor([1.0]).bitwise_left_shift(fg.tensor([1])),
               lambda: torch.tensor([1.0]).bitwise_left_shift(torch.tensor([1])))
    _kinds(lambda: fg.tensor([True]) << fg.tensor([True]), lambda: torch.tensor([True]) << torch.tensor([True]))
    e = _kinds(lambda: fg.tensor([True]).bitwise_left_shift_(fg.tensor([1])),
               lambda: torch.tensor([True]).bitwise_left_shift_(torch.tensor([1])))
    assert str(e[0]) == str(e[1])

    def ilshift(lib):
        x = lib.tensor([1])
        x <<= 1.5

    e = _kinds(lambda: ilshift(fg), lambda: ilshift(torch))
    assert str(e[0]) == str(e[1])
    _kinds(lambda: fg.bitwise_left_shift(2, 3), lambda: torch.bitwise_left_shift(2, 3))
    _kinds(lambda: fg.tensor([1]) << "a", lambda: torch.tensor([1]) << "a")
    _kinds(lambda: fg.tensor([1]).bitwise_right_shift_(fg.tensor([[1], [2]])),
           lambda: torch.tensor([1]).bitwise_right_shift_(torch.tensor([[1], [2]])))
