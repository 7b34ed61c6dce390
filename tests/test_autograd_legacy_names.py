"""torch.autograd names added for the census: set_multithreading_enabled and enforce_grad_layout_policy
(flag semantics as torch's: call, context manager, decorator, per thread; gradients unchanged) and the
legacy NestedIOFunction (nested inputs/outputs; gradients compared with the same function written as a
torch.autograd.Function, since torch 2.15's own NestedIOFunction fails when called)."""
import threading

import numpy as np
import pytest
import torch

from conftest import fg


def _flags(L):
    if L is torch:
        return torch._C._is_multithreading_enabled(), torch._C._is_grad_layout_enforcement_enabled()
    m = fg.autograd.engine_modes
    return m._is_multithreading_enabled(), m._is_grad_layout_enforcement_enabled()


@pytest.mark.parametrize("name", ["set_multithreading_enabled", "enforce_grad_layout_policy"])
def test_switch_semantics(name):
    seen = {}
    for L in (torch, fg):
        switch = getattr(L.autograd, name)
        idx = 0 if name == "set_multithreading_enabled" else 1
        log = [_flags(L)[idx]]
        with switch(False):
            log.append(_flags(L)[idx])
        log.append(_flags(L)[idx])

        @switch(False)
        def inside():
            return _flags(L)[idx]
        log += [_flags(L)[idx], inside(), _flags(L)[idx]]
        s = switch(False)  # a plain call sets the flag until the next switch
        log.append(_flags(L)[idx])
        c = s.clone()
        log.append((type(c).__name__, c.mode))
        switch(True)
        log.append(_flags(L)[idx])
        other = []
        with switch(False):
            t = threading.Thread(target=lambda: other.append(_flags(L)[idx]))
            t.start()
            t.join()
        log.append(other[0])  # per thread: another thread keeps the default
        # gradients are the same with the switch off
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with switch(False):
            (x.sin() * x).sum().backward()
        log.append(x.grad.tolist())
        seen[L] = log
    assert seen[fg] == seen[torch]


class _TorchMul(torch.autograd.Function):
    """The reference: the nested function below, flattened by hand."""

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b, c)
        return a * b, a * c

    @staticmethod
    def backward(ctx, g1, g2):
        a, b, c = ctx.saved_tensors
        return g1 * b + g2 * c, g1 * a, g2 * a


class _NestedMul(fg.autograd.NestedIOFunction):
    def forward_extended(self, a, pair):
        b, c = pair
        self.save_for_backward(a, (b, c))
        return a * b, [a * c]

    def backward_extended(self, g1, gs):
        a, (b, c) = self.saved_tensors
        (g2,) = gs
        return g1 * b + g2 * c, (g1 * a, g2 * a)


def test_nested_io_function():
    rng = np.random.default_rng(0)
    vals = [rng.standard_normal(4) for _ in range(3)]
    w = rng.standard_normal(4)
    ta, tb, tc = (torch.tensor(v, requires_grad=True) for v in vals)
    t1, t2 = _TorchMul.apply(ta, tb, tc)
    (t1 * torch.tensor(w) + 2 * t2).sum().backward()
    fa, fb, fc = (fg.tensor(v, requires_grad=True) for v in vals)
    f1, (f2,) = _NestedMul()(fa, (fb, fc))
    assert isinstance(_NestedMul()(fa, (fb, fc))[1], list)
    (f1 * fg.tensor(w) + 2 * f2).sum().backward()
    np.testing.assert_allclose(f1.detach().numpy(), t1.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(f2.detach().numpy(), t2.detach().numpy(), rtol=1e-15)
    for f, t in ((fa, ta), (fb, tb), (fc, tc)):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-15)
    assert issubclass(fg.autograd.NestedIOFunction, fg.autograd.Function)
    assert issubclass(torch.autograd.NestedIOFunction, torch.autograd.Function)


def test_nested_io_function_needs_input_grad_and_errors():
    class Scale(fg.autograd.NestedIOFunction):
        def forward_extended(self, xs):
            self.seen = self.needs_input_grad
            return [x * 3 for x in xs]

        def backward_extended(self, g0, g1):  # (the output list arrives unpacked, one gradient each)
            return ([g0 * 3, g1 * 3],)

    x, y = fg.ones(2, requires_grad=True), fg.ones(2)
    fn = Scale()
    out = fn([x, y])
    assert fn.seen == (True, False)
    out[0].sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]

    class Missing(fg.autograd.NestedIOFunction):
        pass
    with pytest.raises(NotImplementedError):
        Missing()(x)


def test_disable_saved_tensors_hooks_and_mode_clone():
    for L in (torch, fg):
        G = L.autograd.graph
        with G.disable_saved_tensors_hooks("no hooks here"):
            with pytest.raises(RuntimeError, match="no hooks here"):
                with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            with pytest.raises(RuntimeError, match="no hooks here"):
                with G.save_on_cpu():
                    pass
        x = L.ones(2, requires_grad=True)
        with G.saved_tensors_hooks(lambda t: t * 2, lambda t: t):  # enabled again after the block
            y = (x * x).sum()
        y.backward()
        assert x.grad.tolist() == [4.0, 4.0]
        for switch in (L.no_grad(), L.enable_grad(), L.inference_mode()):
            c = switch.clone()
            assert type(c) is type(switch) and c is not switch
        with L.no_grad().clone():
            assert not (x * 2).requires_grad
