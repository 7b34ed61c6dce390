"""Convolution, pooling, unfold/fold against torch (forward, gradients, second order)."""

import pytest
import torch

import ferrograd as fg
from parity import In, check_op

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
    ("unfold", lambda L, x: L.nn.functional.unfold(x, (2, 3), dilation=1, padding=1, stride=(2, 1)), [(2, 3, 5, 6)]),
    ("fold", lambda L, c: L.nn.functional.fold(c, (5, 6), (2, 3), padding=1, stride=(2, 1)), [(2, 18, 18)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_conv_pool_parity(name, fn, shapes):
    check_op(fn, *[In(s) for s in shapes], rtol=1e-6, atol=1e-8)


def test_conv_modules_match_torch_with_copied_weights():
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                             torch.nn.Conv2d(4, 2, 3, stride=2, bias=False), torch.nn.AdaptiveAvgPool2d(1),
                             torch.nn.Flatten()).double()
    fm = fg.nn.Sequential(fg.nn.Conv2d(3, 4, 3, padding=1), fg.nn.ReLU(), fg.nn.MaxPool2d(2),
                          fg.nn.Conv2d(4, 2, 3, stride=2, bias=False), fg.nn.AdaptiveAvgPool2d(1),
                          fg.nn.Flatten()).double()
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = torch.randn(2, 3, 10, 10, dtype=torch.float64)
    tout, fout = tm(x), fm(fg.tensor(x.numpy()))
    assert abs(tout.detach().numpy() - fout.detach().numpy()).max() < 1e-10
    tout.sum().backward()
    fout.sum().backward()
    for (k, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        assert abs(tp.grad.numpy() - fp.grad.numpy()).max() < 1e-10, k
    assert repr(fm[0]) == repr(tm[0])


def test_conv_errors_match_torch():
    for L in (torch, fg):
        with pytest.raises(RuntimeError):
            L.nn.functional.conv2d(L.zeros(1, 3, 5, 5), L.zeros(2, 4, 3, 3))  # channel mismatch
        with pytest.raises(RuntimeError):
            L.nn.functional.conv2d(L.zeros(1, 3, 2, 2), L.zeros(2, 3, 3, 3))  # kernel larger than input
        with pytest.raises(RuntimeError):
            L.nn.functional.conv2d(L.zeros(3, 5), L.zeros(2, 3, 3, 3))  # 2-d input
