"""Anomaly mode and thread settings, compared with torch."""

import pytest
import torch

import ferrograd as fg


def _nan_backward(L):
    x = L.tensor([0.0, 1.0], requires_grad=True)
    with L.autograd.detect_anomaly():
        (x.sqrt() * 0).sum().backward()


def test_nan_in_backward_names_the_function():
    with pytest.raises(RuntimeError) as t_err, pytest.warns(UserWarning):
        _nan_backward(torch)
    with pytest.raises(RuntimeError) as f_err:
        _nan_backward(fg)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in str(t_err.value)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in str(f_err.value)
    # ferrograd puts the forward stack in the message: it names this file and the line
    assert "test_anomaly.py" in str(f_err.value) and "x.sqrt()" in str(f_err.value)


def test_without_anomaly_mode_nan_flows_through():
    for L in (torch, fg):
        x = L.tensor([0.0, 1.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()
        assert x.grad[0].item() != x.grad[0].item()  # NaN, as torch
        assert x.grad[1].item() == 0.0


def test_check_nan_false_and_modes_restored():
    for L in (torch, fg):
        assert not L.is_anomaly_enabled()
        x = L.tensor([0.0, 1.0], requires_grad=True)
        with L.autograd.detect_anomaly(check_nan=False):
            assert L.is_anomaly_enabled()
            (x.sqrt() * 0).sum().backward()  # no error
        assert not L.is_anomaly_enabled()
        L.autograd.set_detect_anomaly(True)
        assert L.is_anomaly_enabled()
        L.autograd.set_detect_anomaly(False)
        assert not L.is_anomaly_enabled()


def test_error_in_backward_shows_forward_stack():
    class Boom(fg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = fg.tensor([1.0], requires_grad=True)
    with fg.autograd.detect_anomaly():
        y = Boom.apply(x)
        with pytest.raises(ValueError, match="boom"):
            y.sum().backward()


def test_num_threads_roundtrip():
    n = fg.get_num_threads()
    assert n >= 1
    fg.set_num_threads(1)
    assert fg.get_num_threads() == 1
    a = fg.randn(300, 300)
    b = fg.randn(300, 300)
    r1 = (a @ b).numpy().copy()
    fg.set_num_threads(n)
    assert fg.get_num_threads() == n
    r2 = (a @ b).numpy()
    assert abs(r1 - r2).max() < 1e-3
    with pytest.raises(RuntimeError):
        fg.set_num_threads(0)
