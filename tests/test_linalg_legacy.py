"""torch.svd / Tensor.svd (U, S, V; some; compute_uv) and Tensor.swapdims_ against torch."""
import numpy as np
import pytest
import torch

from conftest import fg

R = np.random.default_rng(5)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("some", [True, False])
def test_svd(shape, some):
    a = R.normal(size=shape)
    r = fg.svd(fg.tensor(a), some=some)
    e = torch.svd(torch.tensor(a), some=some)
    assert type(r).__name__ == "svd"
    for x, y in zip(r, e):
        assert tuple(x.shape) == tuple(y.shape)
    np.testing.assert_allclose(r.S.numpy(), e.S.numpy(), rtol=1e-10)
    k = min(shape[-2:])
    # singular vectors are unique up to sign: compare |U| and |V| on the first k columns
    np.testing.assert_allclose(np.abs(r.U.numpy()[..., :k]), np.abs(e.U.numpy()[..., :k]), atol=1e-8)
    np.testing.assert_allclose(np.abs(r.V.numpy()[..., :k]), np.abs(e.V.numpy()[..., :k]), atol=1e-8)
    rec = r.U[..., :k] @ fg.diag_embed(r.S) @ r.V[..., :k].mT
    np.testing.assert_allclose(rec.numpy(), a, atol=1e-10)
    m = fg.tensor(a).svd(some)
    np.testing.assert_allclose(m.S.numpy(), e.S.numpy(), rtol=1e-10)


def test_svd_grad_of_singular_values():
    a = R.normal(size=(4, 3))
    g = []
    for lib in (fg, torch):
        t = lib.tensor(a, requires_grad=True)
        (lib.svd(t).S * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        g.append(t.grad.numpy())
    np.testing.assert_allclose(g[0], g[1], rtol=1e-8, atol=1e-10)


def test_svd_no_uv():
    a = R.normal(size=(4, 3))
    r = fg.svd(fg.tensor(a), compute_uv=False)
    e = torch.svd(torch.tensor(a), compute_uv=False)
    for x, y in zip(r, e):
        assert tuple(x.shape) == tuple(y.shape)
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)


def test_swapdims_():
    a = R.normal(size=(2, 3, 4))
    x, y = fg.tensor(a), torch.tensor(a)
    assert x.swapdims_(0, 2) is x
    y.swapdims_(0, 2)
    assert tuple(x.shape) == tuple(y.shape)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
