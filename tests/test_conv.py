"""Convolution, pooling, unfold/fold against torch (forward, gradients, second order), pooling indices
(ties, NaN, -inf windows), the pooling modules, and torch's errors for bad convolution/pooling input."""

import math
import re

import pytest
import torch

from conftest import fg
from parity import In, check_op, same


def ints(shape):
    """Small integer values: many ties inside each pooling window."""
    return In(shape, domain="ints")


def pooled_then_unpooled(L, x, k, s, p):
    out, idx = L.nn.functional.max_pool2d(x, k, s, p, return_indices=True)
    return L.nn.functional.max_unpool2d(out, idx, k, s, p, output_size=x.shape[-2:])

CASES = [
    ("conv2d", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b), [(2, 3, 7, 6), (4, 3, 3, 2), (4,)]),
    ("conv2d_stride_pad", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=2, padding=1), [(2, 3, 7, 6), (4, 3, 3, 3), (4,)]),
    ("conv2d_dilation", lambda L, x, w: L.nn.functional.conv2d(x, w, None, padding=(2, 1), dilation=2), [(1, 2, 8, 8), (3, 2, 3, 3)]),
    ("conv2d_groups", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, groups=2), [(2, 4, 5, 5), (6, 2, 3, 3), (6,)]),
    ("conv2d_same", lambda L, x, w: L.nn.functional.conv2d(x, w, padding="same"), [(1, 2, 5, 5), (2, 2, 3, 3)]),
    ("conv2d_unbatched", lambda L, x, w: L.nn.functional.conv2d(x, w), [(3, 5, 5), (2, 3, 2, 2)]),
    ("conv1d", lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, stride=2, padding=1), [(2, 3, 9), (4, 3, 3), (4,)]),
    ("conv1d_groups_dil", lambda L, x, w: L.nn.functional.conv1d(x, w, None, dilation=2, groups=3), [(2, 3, 9), (3, 1, 3)]),
    ("max_pool2d", lambda L, x: L.nn.functional.max_pool2d(x, 2), [(2, 3, 6, 6)]),
    ("max_pool2d_stride_pad", lambda L, x: L.nn.functional.max_pool2d(x, 3, stride=2, padding=1), [(2, 2, 7, 5)]),
    ("max_pool2d_dilation", lambda L, x: L.nn.functional.max_pool2d(x, 2, stride=1, dilation=2), [(1, 2, 6, 6)]),
    ("avg_pool2d", lambda L, x: L.nn.functional.avg_pool2d(x, 2), [(2, 3, 6, 4)]),
    ("avg_pool2d_pad", lambda L, x: L.nn.functional.avg_pool2d(x, 3, stride=2, padding=1), [(2, 2, 7, 7)]),
    ("avg_pool2d_pad_exclude", lambda L, x: L.nn.functional.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), [(1, 2, 6, 6)]),
    ("adaptive_avg_pool2d", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (2, 3)), [(2, 3, 6, 6)]),
    ("adaptive_avg_pool2d_uneven", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3), [(1, 2, 7, 5)]),
    ("conv2d_same_even", lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, padding="same"), [(1, 2, 5, 6), (3, 2, 2, 4), (3,)]),
    ("conv1d_same_even", lambda L, x, w: L.nn.functional.conv1d(x, w, padding="same", dilation=3), [(2, 2, 9), (3, 2, 2)]),
    ("conv1d_unbatched", lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, padding=2), [(3, 7), (2, 3, 4), (2,)]),
    ("max_pool2d_ceil", lambda L, x: L.nn.functional.max_pool2d(x, 3, stride=2, ceil_mode=True), [(2, 2, 7, 6)]),
    ("max_pool2d_ceil_pad_dilation", lambda L, x: L.nn.functional.max_pool2d(x, 2, 2, 1, 2, ceil_mode=True), [(1, 2, 7, 8)]),
    ("max_pool2d_indices_ties", lambda L, x: L.nn.functional.max_pool2d(x, 2, return_indices=True), [ints((2, 3, 6, 6))]),
    ("max_pool2d_indices_overlap", lambda L, x: L.nn.functional.max_pool2d(x, 3, 1, 1, return_indices=True), [ints((2, 2, 5, 6))]),
    ("max_pool2d_indices_ceil_rect", lambda L, x: L.nn.functional.max_pool2d(x, (2, 3), (2, 2), (1, 0), 1, True, True), [ints((1, 3, 7, 8))]),
    ("max_pool2d_unbatched_ceil", lambda L, x: L.nn.functional.max_pool2d(x, 2, ceil_mode=True, return_indices=True), [ints((3, 5, 5))]),
    ("max_pool2d_module", lambda L, x: L.nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True)(x), [ints((2, 2, 8, 8))]),
    ("avg_pool2d_ceil", lambda L, x: L.nn.functional.avg_pool2d(x, 3, stride=2, ceil_mode=True), [(2, 2, 7, 6)]),
    ("avg_pool2d_ceil_pad", lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True), [(1, 2, 8, 7)]),
    ("avg_pool2d_ceil_pad_exclude", lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1, True, False), [(1, 2, 8, 7)]),
    ("avg_pool2d_divisor", lambda L, x: L.nn.functional.avg_pool2d(x, 2, divisor_override=3), [(2, 2, 6, 5)]),
    ("avg_pool2d_divisor_ceil_pad", lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1, True, False, 2), [(1, 2, 6, 6)]),
    ("avg_pool2d_rect", lambda L, x: L.nn.functional.avg_pool2d(x, (2, 3), (1, 2), (1, 0)), [(2, 3, 5, 7)]),
    ("avg_pool2d_module", lambda L, x: L.nn.AvgPool2d(2, 1, 1, True, False, None)(x), [(2, 2, 5, 5)]),
    ("max_pool1d", lambda L, x: L.nn.functional.max_pool1d(x, 3, 2, 1, 1, True, True), [ints((2, 3, 9))]),
    ("max_pool1d_unbatched_dilation", lambda L, x: L.nn.functional.max_pool1d(x, 2, 1, 0, 3), [(3, 9)]),
    ("max_pool1d_module", lambda L, x: L.nn.MaxPool1d(2, ceil_mode=True)(x), [(2, 3, 9)]),
    ("avg_pool1d", lambda L, x: L.nn.functional.avg_pool1d(x, 3, 2, 1, True, False), [(2, 3, 9)]),
    ("avg_pool1d_module", lambda L, x: L.nn.AvgPool1d(4, 3, 2, False, True)(x), [(3, 10)]),
    ("adaptive_avg_pool1d", lambda L, x: L.nn.functional.adaptive_avg_pool1d(x, 4), [(2, 3, 10)]),
    ("adaptive_avg_pool1d_module", lambda L, x: L.nn.AdaptiveAvgPool1d(3)(x), [(3, 7)]),
    ("adaptive_avg_pool2d_none", lambda L, x: L.nn.AdaptiveAvgPool2d((3, None))(x), [(2, 3, 7, 5)]),
    ("adaptive_avg_pool2d_larger", lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (5, 4)), [(3, 4, 3)]),
    ("max_unpool2d", lambda L, x: pooled_then_unpooled(L, x, 2, None, 0), [(2, 3, 7, 5)]),
    ("max_unpool2d_overlap", lambda L, x: pooled_then_unpooled(L, x, 3, 2, 1), [(1, 2, 6, 6)]),
    ("max_unpool2d_module", lambda L, x: L.nn.MaxUnpool2d(2)(*L.nn.MaxPool2d(2, return_indices=True)(x)), [(2, 2, 4, 6)]),
    ("bilinear", lambda L, a, b, w, bias: L.nn.functional.bilinear(a, b, w, bias), [(2, 5, 3), (2, 5, 4), (6, 3, 4), (6,)]),
    ("bilinear_unbatched", lambda L, a, b, w: L.nn.functional.bilinear(a, b, w), [(3,), (4,), (2, 3, 4)]),
    ("unfold", lambda L, x: L.nn.functional.unfold(x, (2, 3), dilation=1, padding=1, stride=(2, 1)), [(2, 3, 5, 6)]),
    ("fold", lambda L, c: L.nn.functional.fold(c, (5, 6), (2, 3), padding=1, stride=(2, 1)), [(2, 18, 18)]),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_conv_pool_parity(name, fn, shapes):
    check_op(fn, *[s if isinstance(s, In) else In(s) for s in shapes], rtol=1e-6, atol=1e-8)


def _cnn(L, ceil):
    torch.manual_seed(0)
    pool = L.nn.MaxPool2d(3, 2, 1, ceil_mode=True) if ceil else L.nn.MaxPool2d(2)
    return L.nn.Sequential(L.nn.Conv2d(3, 4, 3, padding=1), L.nn.ReLU(), pool,
                           L.nn.Conv2d(4, 2, 3, stride=2, bias=False), L.nn.AvgPool2d(2, ceil_mode=ceil),
                           L.nn.AdaptiveAvgPool2d(1), L.nn.Flatten()).double()


@pytest.mark.parametrize("ceil", [False, True])
def test_conv_modules_match_torch_with_copied_weights(ceil):
    tm, fm = _cnn(torch, ceil), _cnn(fg, ceil)
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = torch.randn(2, 3, 11, 11, dtype=torch.float64)
    tout, fout = tm(x), fm(fg.tensor(x.numpy()))
    assert abs(tout.detach().numpy() - fout.detach().numpy()).max() < 1e-10
    tout.sum().backward()
    fout.sum().backward()
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        assert abs(tp.grad.numpy() - fp.grad.numpy()).max() < 1e-10, k
    assert re.sub("torch|ferrograd", "", repr(fm)) == re.sub("torch|ferrograd", "", repr(tm))


def test_max_pool_special_values():
    """NaN wins a window (its last NaN is the index); a window of -inf points at its first cell inside the
    input, even when padding comes first; the gradient goes to the index alone."""
    nan, inf = math.nan, math.inf
    rows = [[1.0, nan, 3.0, nan, 2.0, 5.0, 5.0, -1.0],
            [-inf, -inf, 2.0, -inf, -inf, -inf, -inf, -inf],
            [0.0, 0.0, 0.0, 0.0, -2.0, -2.0, 7.0, 7.0]]

    def run(L):
        x = L.tensor([[rows]], dtype=L.float64, requires_grad=True)
        out = []
        for args in [dict(kernel_size=(1, 3)), dict(kernel_size=(1, 2), padding=(0, 1)),
                     dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True),
                     dict(kernel_size=(3, 2), stride=1, dilation=(1, 3))]:
            x.grad = None
            y, idx = L.nn.functional.max_pool2d(x, return_indices=True, **args)
            y.sum().backward()
            out.append((y.detach(), idx, x.grad))
        return out

    same(run)


def test_pool_module_reprs_and_attributes():
    def run(L):
        mods = [L.nn.MaxPool2d(2), L.nn.MaxPool2d((2, 3), 1, 1, 2, True, True), L.nn.MaxPool1d(3, padding=1),
                L.nn.AvgPool2d(3, ceil_mode=True, count_include_pad=False, divisor_override=2), L.nn.AvgPool1d(3),
                L.nn.AvgPool1d(3, 2, 1, True, False), L.nn.AdaptiveAvgPool1d(3), L.nn.AdaptiveAvgPool2d((2, None)),
                L.nn.MaxUnpool2d(2), L.nn.MaxUnpool2d((2, 3), 1, (1, 0))]
        attrs = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices", "count_include_pad",
                 "divisor_override", "output_size")
        return [(repr(m), [getattr(m, a, "-") for a in attrs], list(m.state_dict())) for m in mods]

    same(run)


def _raises(fn, exc, pattern):
    """fn(torch) and fn(fg) both raise `exc` with a message matching `pattern`."""
    for L in (torch, fg):
        with pytest.raises(exc, match=pattern):
            fn(L)


def F(L):
    return L.nn.functional


ERRORS = [
    ("conv2d_rank", lambda L: L.nn.Conv2d(3, 2, 3)(L.zeros(5, 5)), RuntimeError,
     re.escape("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [5, 5]")),
    ("conv2d_rank5", lambda L: F(L).conv2d(L.zeros(1, 1, 3, 5, 5), L.zeros(2, 1, 3, 3)), RuntimeError,
     re.escape("input to conv2d, but got input of size: [1, 1, 3, 5, 5]")),
    ("conv1d_rank", lambda L: L.nn.Conv1d(3, 2, 3)(L.zeros(1, 3, 5, 5)), RuntimeError,
     re.escape("Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [1, 3, 5, 5]")),
    ("conv2d_channels", lambda L: L.nn.Conv2d(3, 2, 3)(L.zeros(1, 4, 5, 5)), RuntimeError,
     re.escape("Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 4, 5, 5] to have 3 channels, "
               "but got 4 channels instead")),
    ("conv1d_channels", lambda L: L.nn.Conv1d(3, 2, 3)(L.zeros(2, 4, 5)), RuntimeError,
     re.escape("weight of size [2, 3, 3], expected input[2, 4, 5] to have 3 channels, but got 4")),
    ("conv2d_kernel_too_big", lambda L: F(L).conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3), dilation=2),
     RuntimeError, re.escape("Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size "
                             "can't be greater than actual input size")),
    ("conv1d_kernel_too_big", lambda L: F(L).conv1d(L.zeros(1, 1, 2), L.zeros(1, 1, 3), padding=0), RuntimeError,
     re.escape("Calculated padded input size per channel: (2). Kernel size: (3).")),
    ("conv2d_groups_weight", lambda L: F(L).conv2d(L.zeros(1, 4, 4, 4), L.zeros(3, 2, 3, 3), groups=2),
     RuntimeError, "expected weight to be divisible by 2 at dimension 0"),
    ("conv2d_bias_size", lambda L: F(L).conv2d(L.zeros(1, 4, 4, 4), L.zeros(3, 4, 3, 3), L.zeros(2)),
     RuntimeError, re.escape("expected bias to be 1-dimensional with 3 elements, but got bias of size [2]")),
    ("conv1d_weight_rank", lambda L: F(L).conv1d(L.zeros(1, 4, 4), L.zeros(3, 4, 3, 3)), RuntimeError,
     re.escape("Expected 4-dimensional input for 4-dimensional weight [3, 4, 3, 3], but got 3-dimensional input")),
    ("conv_stride_0", lambda L: F(L).conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    ("conv_negative_padding", lambda L: F(L).conv1d(L.zeros(1, 1, 4), L.zeros(1, 1, 3), padding=-1), RuntimeError,
     "negative padding is not supported"),
    ("conv_same_strided", lambda L: F(L).conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3), padding="same",
                                                stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    ("conv_padding_string", lambda L: F(L).conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3), padding="full"),
     RuntimeError, "Invalid padding string: 'full'"),
    ("conv_dtype", lambda L: F(L).conv2d(L.zeros(1, 1, 4, 4), L.zeros(1, 1, 3, 3, dtype=L.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    ("Conv2d_padding_string", lambda L: L.nn.Conv2d(2, 2, 3, padding="full"), ValueError,
     "Invalid padding string 'full'"),
    ("Conv1d_same_strided", lambda L: L.nn.Conv1d(2, 2, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
    ("Conv2d_groups_0", lambda L: L.nn.Conv2d(2, 2, 3, groups=0), ValueError, "groups must be a positive integer"),
    ("Conv2d_padding_mode", lambda L: L.nn.Conv2d(2, 2, 3, padding_mode="mirror"), ValueError,
     "padding_mode must be one of"),
    ("max_pool2d_rank", lambda L: L.nn.MaxPool2d(2)(L.zeros(5)), RuntimeError,
     re.escape("non-empty 3D or 4D (batch mode) tensor expected for input")),
    ("max_pool2d_too_small", lambda L: L.nn.MaxPool2d(4)(L.zeros(1, 1, 3, 3)), RuntimeError,
     re.escape("Given input size: (1x3x3). Calculated output size: (1x0x0). Output size is too small")),
    ("avg_pool2d_too_small", lambda L: F(L).avg_pool2d(L.zeros(2, 3, 2), 3), RuntimeError,
     re.escape("Given input size: (2x3x2). Calculated output size: (2x1x0). Output size is too small")),
    ("max_pool2d_pad", lambda L: F(L).max_pool2d(L.zeros(1, 1, 9, 9), (3, 5), padding=(1, 3)), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=3, kernel_size=5 and dilation=1"),
    ("avg_pool2d_pad", lambda L: F(L).avg_pool2d(L.zeros(1, 1, 9, 9), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3"),
    ("max_pool2d_stride_0", lambda L: F(L).max_pool2d(L.zeros(1, 1, 4, 4), 2, stride=0), RuntimeError,
     "stride should not be zero"),
    ("max_pool2d_kernel_arity", lambda L: F(L).max_pool2d(L.zeros(1, 1, 4, 4), (2, 2, 2)), RuntimeError,
     "kernel_size must either be a single int, or a tuple of two ints"),
    ("avg_pool2d_divisor_0", lambda L: F(L).avg_pool2d(L.zeros(1, 1, 4, 4), 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    ("max_pool1d_rank", lambda L: F(L).max_pool1d(L.zeros(5), 2), RuntimeError,
     re.escape("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
               "but got:[5]")),
    ("avg_pool1d_rank", lambda L: F(L).avg_pool1d(L.zeros(1, 1, 1, 5), 2), RuntimeError,
     "Expected 2 to 3 dimensions, but got 4-dimensional tensor"),
    ("adaptive_avg_pool2d_rank", lambda L: F(L).adaptive_avg_pool2d(L.zeros(5), 2), RuntimeError,
     re.escape("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5]")),
    ("max_unpool2d_output_size", lambda L: F(L).max_unpool2d(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 2, 2, dtype=L.int64),
                                                             2, output_size=(9, 4)), ValueError,
     re.escape("(dim 0 must be between 2 and 6)")),
    ("max_unpool2d_index", lambda L: F(L).max_unpool2d(L.zeros(1, 1, 2, 2), L.full((1, 1, 2, 2), 16, dtype=L.int64),
                                                       2), RuntimeError,
     re.escape("Found an invalid max index: 16 (output volumes are of size 4x4")),
    ("bilinear_sizes", lambda L: F(L).bilinear(L.zeros(2, 2), L.zeros(2, 4), L.zeros(5, 3, 4)), RuntimeError,
     re.escape("bilinear(): input1 size does not match weight size: got 2 but expected 3")),
]


@pytest.mark.parametrize("fn,exc,pattern", [pytest.param(*e[1:], id=e[0]) for e in ERRORS])
def test_conv_pool_errors_as_torch(fn, exc, pattern):
    _raises(fn, exc, pattern)


# ---------------------------------------------------------------- padding_mode
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims,padding", [(1, 2), (2, 1), (2, (1, 2)), (2, "same"), (1, "same")])
def test_conv_padding_modes_match_torch(mode, dims, padding):
    """Conv1d/Conv2d with padding_mode other than zeros: the input is padded by F.pad's mode first
    (torch's own path); outputs, input and parameter gradients and repr match torch."""
    from test_nn import check_module
    shape = (2, 3, 9) if dims == 1 else (2, 3, 7, 8)
    make = (lambda L: L.nn.Conv1d(3, 4, 3, padding=padding, padding_mode=mode, dtype=L.float64)) if dims == 1 else (
        lambda L: L.nn.Conv2d(3, 4, (3, 2), padding=padding, padding_mode=mode, dilation=(1, 2), dtype=L.float64))
    check_module(make, shape)
    assert repr(make(fg)) == repr(make(torch))
