"""The torch.* forms of nn.functional ops (torch.conv2d, torch.layer_norm, torch.embedding, ...) and
torch.ger / trapz / cumulative_trapezoid / scalar_tensor / range, against torch: values, gradients,
dtypes."""
import warnings

import numpy as np
import pytest
import torch

from conftest import fg

R = np.random.default_rng(11)


def _same(r, e, tol=1e-10):
    assert isinstance(r, fg.Tensor)
    assert str(r.dtype).rsplit(".", 1)[-1] == str(e.dtype).rsplit(".", 1)[-1]
    assert tuple(r.shape) == tuple(e.shape)
    np.testing.assert_allclose(r.detach().numpy(), e.detach().numpy(), rtol=tol, atol=tol)


def _check(name, arrays, *args, ints=(), **kw):
    res = []
    for lib in (fg, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in arrays]
        ix = [lib.tensor(a) for a in ints]
        out = getattr(lib, name)(*ts, *ix, *args, **kw)
        w = lib.tensor(np.sin(np.arange(out.numel())).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        res.append((out, [t.grad for t in ts]))
    _same(res[0][0], res[1][0])
    for a, b in zip(res[0][1], res[1][1]):
        _same(a, b, 1e-8)


CASES = [
    ("conv1d", [R.normal(size=(2, 3, 9)), R.normal(size=(4, 3, 3)), R.normal(size=4)], (2, 1), {}),
    ("conv2d", [R.normal(size=(1, 2, 6, 6)), R.normal(size=(3, 2, 3, 3))], (), dict(padding=1)),
    ("conv_transpose1d", [R.normal(size=(2, 3, 5)), R.normal(size=(3, 2, 3))], (), dict(stride=2)),
    ("conv_transpose2d", [R.normal(size=(1, 2, 4, 4)), R.normal(size=(2, 3, 3, 3))], (), {}),
    ("pixel_shuffle", [R.normal(size=(1, 8, 3, 3))], (2,), {}),
    ("pixel_unshuffle", [R.normal(size=(1, 2, 4, 4))], (2,), {}),
    ("cosine_similarity", [R.normal(size=(4, 5)), R.normal(size=(4, 5))], (), dict(dim=1)),
    ("pairwise_distance", [R.normal(size=(4, 5)), R.normal(size=(4, 5))], (3.0,), {}),
    ("bilinear", [R.normal(size=(2, 3)), R.normal(size=(2, 4)), R.normal(size=(5, 3, 4)), R.normal(size=5)], (), {}),
    ("max_pool1d", [R.normal(size=(2, 3, 8))], (2,), {}),
    ("max_pool2d", [R.normal(size=(1, 2, 6, 6))], (3, 2), {}),
    ("avg_pool1d", [R.normal(size=(2, 3, 8))], (3,), {}),
    ("adaptive_avg_pool1d", [R.normal(size=(2, 3, 8))], (3,), {}),
    ("rms_norm", [R.normal(size=(2, 3, 4)), R.normal(size=4)], ([4],), dict(eps=1e-6)),
    ("layer_norm", [R.normal(size=(2, 3, 4))], ([3, 4],), {}),
    ("group_norm", [R.normal(size=(2, 4, 5))], (2,), {}),
    ("ger", [R.normal(size=3), R.normal(size=4)], (), {}),
    ("trapz", [R.normal(size=(3, 5))], (), dict(dx=0.5)),
    ("trapz", [R.normal(size=(3, 5)), np.cumsum(R.uniform(size=5))], (), {}),
    ("cumulative_trapezoid", [R.normal(size=(3, 5))], (), {}),
    ("cumulative_trapezoid", [R.normal(size=(3, 5))], (), dict(dx=2.0, dim=0)),
    ("cumulative_trapezoid", [R.normal(size=(3, 5)), np.cumsum(R.uniform(size=5))], (), {}),
]


@pytest.mark.parametrize("name,arrays,args,kw", CASES, ids=[c[0] for c in CASES])
def test_forms(name, arrays, args, kw):
    if name == "rms_norm":  # torch.rms_norm(input, normalized_shape, weight, eps)
        _check(name, arrays[:1], args[0], None, **kw)
        res = []
        for lib in (fg, torch):
            x, wt = lib.tensor(arrays[0]), lib.tensor(arrays[1])
            res.append(lib.rms_norm(x, args[0], wt, **kw))
        _same(res[0], res[1])
        return
    _check(name, arrays, *args, **kw)


def test_embedding():
    wt = R.normal(size=(6, 3))
    idx = np.array([[1, 2], [5, 1]])
    _check("embedding", [wt], ints=[idx])
    r = fg.embedding(fg.tensor(wt), fg.tensor(idx), 1)
    e = torch.embedding(torch.tensor(wt), torch.tensor(idx), 1)
    _same(r, e)


def test_tensor_ger():
    a, b = R.normal(size=3), R.normal(size=2)
    _same(fg.tensor(a).ger(fg.tensor(b)), torch.tensor(a).ger(torch.tensor(b)))


def test_scalar_tensor_and_range():
    for s, kw in ((3, {}), (2.5, {}), (True, {}), (2, {"dtype": "int64"}), (1.5, {"dtype": "float64"})):
        k = {"dtype": getattr(fg, kw["dtype"])} if kw else {}
        r = fg.scalar_tensor(s, **k)
        e = torch.scalar_tensor(s, **({"dtype": getattr(torch, kw["dtype"])} if kw else {}))
        _same(r, e)
    assert fg.scalar_tensor(1.0, requires_grad=True).requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args, kw in (((0, 1, 0.3), {}), ((3, 1, -1), {}), ((1, 4), {"dtype": "int64"}),
                         ((0.5, 2.5, 0.5), {"dtype": "float64"})):
            r = fg.range(*args, **({"dtype": getattr(fg, kw["dtype"])} if kw else {}))
            e = torch.range(*args, **({"dtype": getattr(torch, kw["dtype"])} if kw else {}))
            _same(r, e, 1e-6)
        for lib in (fg, torch):
            with pytest.raises(RuntimeError, match="step must be nonzero"):
                lib.range(0, 1, 0)
            with pytest.raises(TypeError):
                lib.range(5)
