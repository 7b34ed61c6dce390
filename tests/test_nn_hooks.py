"""Module full backward hooks (register_full_backward_hook / register_full_backward_pre_hook), each run
in torch and in the library under test on the same modules (torch's weights copied in).

Covers: the arguments (grad_input for positional tensor inputs, zeros for a tensor input that does not
require grad, None for non-tensors and unused outputs), replacement of grad_input / grad_output, the
order of several hooks (prepend, pre-hooks first, nested modules), handles, hooks firing once per
backward, modules whose inputs do not require grad (warning, grad_input all None), grad mode off,
double backward, in-place modification of hooked inputs and outputs, and the errors for hooks that
return the wrong number of gradients."""
import gc
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import same

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def vals(gs):
    """A grad tuple as comparable values (tensors as nested lists, None kept)."""
    return tuple(None if g is None else g.detach().tolist() for g in gs)


def linear(L, i=3, o=2):
    torch.manual_seed(0)
    t = torch.nn.Linear(i, o).double()
    m = L.nn.Linear(i, o).double()
    m.load_state_dict(OrderedDict((k, L.tensor(v.detach().numpy())) for k, v in t.state_dict().items()))
    return m


def error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    return None


def test_hook_arguments_and_gradients():
    def run(L):
        log = []
        m = linear(L)
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", mod is m, vals(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", mod is m, vals(gi), vals(go))))
        x = L.tensor(X, requires_grad=True)
        y = m(x)
        (y * L.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=L.float64)).sum().backward()
        return log, x.grad, m.weight.grad, m.bias.grad, y.grad_fn.name()

    same(run)


def test_hooks_replace_grad_input_and_grad_output():
    def run(L):
        m = linear(L)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((vals(gi), vals(go))))
        x = L.tensor(X, requires_grad=True)
        m(x).sum().backward()
        # the parameters see the replaced grad_output; the input sees the replaced grad_input
        return seen, x.grad, m.weight.grad, m.bias.grad

    same(run)


def test_order_prepend_remove_and_once_per_backward():
    def run(L):
        log = []
        m = linear(L)
        h1 = m.register_full_backward_hook(lambda *a: log.append("h1"))
        m.register_full_backward_hook(lambda *a: log.append("h2"))
        m.register_full_backward_hook(lambda *a: log.append("h0"), prepend=True)
        m.register_full_backward_pre_hook(lambda *a: log.append("p1"))
        p0 = m.register_full_backward_pre_hook(lambda *a: log.append("p0"), prepend=True)
        x = L.tensor(X, requires_grad=True)
        (m(x) + m(x * 2)).sum().backward()  # two calls, one backward: each call's hooks fire once
        log.append("|")
        h1.remove()
        with p0:
            pass
        y = m(x)
        y.sum().backward(retain_graph=True)
        log.append("|")
        y.sum().backward()  # the same graph again: the hooks fire again
        return log

    same(run)


class Two(object):
    """A module with two tensor inputs, a non-tensor input and a keyword, and three outputs."""

    @staticmethod
    def make(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = L.nn.Parameter(L.tensor([1.0, -2.0, 0.5], dtype=L.float64))

            def forward(self, a, k, b, scale=1.0):
                return a * self.w * b * k * scale, (a + b).exp(), "text"

        return M()


def test_several_inputs_and_outputs():
    def run(L):
        log = []
        m = Two.make(L)
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", vals(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", vals(gi), vals(go))))
        a = L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True)
        b = L.tensor([0.5, 0.25, -1.0], dtype=L.float64)  # no grad: its grad_input is zeros
        p, q, s = m(a, 3, b, scale=2.0)
        p.sum().backward()  # q unused: its grad_output is None
        return log, a.grad, m.w.grad, s, p.requires_grad, q.requires_grad

    same(run)


def test_nested_modules_fire_inner_to_outer():
    def run(L):
        log = []
        torch.manual_seed(0)
        net = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.Tanh(), L.nn.Linear(4, 2)).double()
        for name, mod in [("net", net), *net.named_children()]:
            mod.register_full_backward_pre_hook(lambda m, go, name=name: log.append(("pre", name)))
            mod.register_full_backward_hook(lambda m, gi, go, name=name: log.append(("hook", name, len(gi))))
        net(L.tensor(X, requires_grad=True)).sum().backward()
        return log

    same(run)


def test_no_input_requires_grad():
    def run(L):
        log = []
        m = linear(L)
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", vals(go))))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", vals(gi), vals(go))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(L.tensor(X)).sum().backward()
        msgs = [str(x.message) for x in w]
        assert any("no inputs require gradients" in s for s in msgs), msgs
        # returning None for every gradient is fine; returning a gradient is not
        m.register_full_backward_hook(lambda mod, gi, go: (None,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(L.tensor(X)).sum().backward()
            m.register_full_backward_hook(lambda mod, gi, go: (L.ones(2, 3),))
            err = error(lambda: m(L.tensor(X)).sum().backward())
        return log, m.weight.grad, err

    same(run)


def test_hooks_that_return_the_wrong_number():
    for L in (torch, fg):
        m = linear(L)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, "
                                               "but expected 1"):
            m(L.tensor(X, requires_grad=True)).sum().backward()
        m = linear(L)
        m.register_full_backward_pre_hook(lambda mod, go: ())
        with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, "
                                               "got 0, but expected 1"):
            m(L.tensor(X, requires_grad=True)).sum().backward()


def test_no_grad_and_double_backward():
    def run(L):
        log = []
        m = linear(L)
        m.register_full_backward_hook(lambda mod, gi, go: log.append(vals(gi)))
        x = L.tensor(X, requires_grad=True)
        with L.no_grad():
            y0 = m(x)
        y = m(x)
        (g,) = L.autograd.grad((y * y).sum(), x, create_graph=True)
        log.append("second")
        g.sum().backward()  # reaches the input node without passing the output node: no call
        return log, y0.requires_grad, y0.grad_fn is None, x.grad

    same(run)


def test_forward_hooks_see_the_wrapped_inputs():
    def run(L):
        m = linear(L)
        m.register_full_backward_hook(lambda *a: None)
        x = L.tensor(X, requires_grad=True)
        seen = []
        m.register_forward_pre_hook(lambda mod, args: seen.append(args[0] is x))
        m.register_forward_hook(
            lambda mod, args, out: seen.append((args[0] is x, out.grad_fn.name() == "BackwardHookFunctionBackward")))
        y = m(x)
        return seen, y.grad_fn.name()

    same(run)


def test_in_place_on_hooked_tensors_is_an_error():
    for L in (torch, fg):
        net = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.ReLU(inplace=True))
        net[1].register_full_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified "
                                               "inplace"):
            net(L.randn(2, 3)).sum().backward()
        m = L.nn.Linear(3, 2)
        m.register_full_backward_hook(lambda *a: None)
        # torch raises at the in-place op; ferrograd when backward reaches the module
        with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
            y = m(L.randn(2, 3, requires_grad=True))
            y.mul_(2)
            y.sum().backward()
        # an input that does not require grad is not wrapped: modifying it is allowed
        m.register_full_backward_pre_hook(lambda *a: None)
        x = L.zeros(2, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(x.add_(1)).sum().backward()
        assert m.weight.grad.tolist() == [[2.0] * 3] * 2


@pytest.mark.skipif(AGAINST_TORCH, reason="ferrograd's live-node count")
def test_hooked_module_graph_is_released():
    m = fg.nn.Linear(3, 2)
    m.register_full_backward_hook(lambda *a: None)
    m.register_full_backward_pre_hook(lambda *a: None)
    gc.collect()
    before = fg.autograd.graph.stats()["live_nodes"]
    y = m(fg.randn(4, 3, requires_grad=True))
    assert fg.autograd.graph.stats()["live_nodes"] > before
    del y
    gc.collect()
    assert fg.autograd.graph.stats()["live_nodes"] == before
    m(fg.randn(4, 3, requires_grad=True)).sum().backward()
    gc.collect()
    assert fg.autograd.graph.stats()["live_nodes"] == before
