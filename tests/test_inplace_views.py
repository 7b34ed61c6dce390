"""In-place ops on views, and views of tensors modified in place, against torch.

torch's rules (Note [View + in-place] in src/tensor/mod.rs): a view made in no_grad mode, or one of
several views returned by one op (split, chunk, unbind), may not be modified in place when something
requires grad; neither may a view of a leaf; an expanded (self-overlapping) tensor may not be written
by an op that reads it, nor a tensor that an input partly overlaps; a view whose base (or another view of it) was modified in place sees the
new history in backward. Each scenario runs in torch and in the library under test: the same
result, or the same exception kind with torch's message.
"""
import warnings

import pytest
import torch

from conftest import fg


def _name(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__ if isinstance(t, torch.Tensor) else t.grad_fn.name()


def stale_view(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    w = L.tensor(3.0, requires_grad=True)
    m = x * 1
    s = m[0]
    m.add_(w)
    name = _name(s)
    s.backward()
    return name, x.grad.tolist(), w.grad.item()


def stale_view_of_another_view(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    v1, v2 = a[0:2], a[1:3]
    v1.mul_(10)
    v2.sum().backward()
    return x.grad.tolist()


def view_of_base_that_later_requires_grad(L):
    x = L.ones(3)
    v = x[0:2]
    x.mul_(L.tensor(2.0, requires_grad=True))
    return v.requires_grad, _name(v)


def view_sees_no_grad_update_of_leaf(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    v = x[0:1]
    with L.no_grad():
        x.mul_(2)
    (v * 3).sum().backward()
    return x.grad.tolist(), v.tolist()


def inplace_on_view_then_its_grad_fn(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    v = a[0:1]
    v.mul_(3)
    names = _name(v), _name(a)
    a.sum().backward()
    return names, x.grad.tolist()


def chunk_output_inplace(L):
    (L.ones(4, requires_grad=True) * 1).chunk(2, 0)[1].mul_(3)


def split_output_inplace_of_leaf(L):
    L.ones(4, requires_grad=True).chunk(2)[0].mul_(2)


def unbind_output_inplace(L):
    (L.ones(4, requires_grad=True) * 1).unbind(0)[1].add_(1)


def view_of_split_output_inplace(L):
    (L.ones(4, requires_grad=True) * 1).split(2)[1][0:1].add_(1)


def split_output_inplace_without_grad(L):
    z = L.ones(4)
    z.split(2)[1].add_(1)
    return z.tolist()


def split_output_inplace_with_grad_operand(L):
    z = L.ones(4)
    z.split(2)[1].add_(L.ones(2, requires_grad=True))


def split_output_inplace_under_no_grad(L):
    z = L.ones(4, requires_grad=True) * 1
    p = z.split(2)[1]
    with L.no_grad():
        p.add_(1)
    return z.tolist()


def split_output_after_base_modified(L):
    z = L.ones(4, requires_grad=True)
    a = z * 1
    parts = a.split(2)
    a.mul_(2)
    parts[0].sum().backward()
    return z.grad.tolist()


def split_output_grad_fn_after_base_modified(L):
    a = L.ones(4, requires_grad=True) * 1
    parts = a.split(2)
    a.mul_(2)
    return _name(parts[0])  # torch: reading the stale history raises


def unbind_output_grad_fn_after_base_modified(L):
    a = L.ones(2, 3, requires_grad=True) * 1
    row = a.unbind()[0]
    a.add_(1)
    return _name(row)


def split_output_used_after_sibling_modified_under_no_grad(L):
    a = L.ones(4, requires_grad=True) * 1
    p, q = a.split(2)
    with L.no_grad():
        q.mul_(2)
    (p * 2).sum().backward()  # torch raises at p * 2, ferrograd at backward: the same error


def no_grad_view_grad_fn_after_base_modified(L):
    a = L.ones(4, requires_grad=True) * 1
    with L.no_grad():
        v = a[:2]
    a.mul_(2)
    return _name(v)


def no_grad_view_of_leaf_grad_fn_after_no_grad_update(L):
    x = L.ones(4, requires_grad=True)
    with L.no_grad():
        v = x[:2]
        x.mul_(2)
    return _name(v)


def no_grad_view_unchanged_base_grad_fn(L):
    a = L.ones(4, requires_grad=True) * 1
    with L.no_grad():
        v = a[:2]
    return _name(v), v.requires_grad


def split_output_detached_inplace(L):
    z = L.ones(4, requires_grad=True) * 1
    z.split(2)[1].detach().add_(1)
    return z.tolist()


def no_grad_view_inplace_in_grad_mode(L):
    z = L.ones(4, requires_grad=True) * 1
    with L.no_grad():
        p = z[1:]
    p.add_(1)


def no_grad_view_of_leaf_requires_grad(L):
    x = L.ones(4, requires_grad=True)
    with L.no_grad():
        q = x[1:]
    return q.requires_grad, q.grad_fn is None, q.is_leaf


def no_grad_view_inplace_in_no_grad(L):
    z = L.ones(4, requires_grad=True) * 1
    with L.no_grad():
        z[1:].add_(1)
    z.sum().backward()
    return z.tolist()


def view_of_view_leaf_inplace(L):
    x = L.ones(2, 3).t().requires_grad_()
    x[0].mul_(2)


def view_made_leaf_inplace(L):
    v = L.ones(3)[0:2]
    v.requires_grad_()
    v.mul_(2)


def expanded_mul_(L):
    L.tensor(0.7).unsqueeze(0).expand(2).mul_(L.tensor(0.7))


def expanded_copy_(L):
    L.zeros(1, 3).expand(2, 3).copy_(L.ones(2, 3))


def expanded_fill_zero_masked_fill(L):
    e = L.zeros(1, 3).expand(2, 3)
    e.fill_(1.0)
    e.zero_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: masked_fill_ on an expanded tensor is deprecated
        e.masked_fill_(L.ones(2, 3, dtype=L.bool), 2.0)
    e[0] = 3.0
    return e.tolist()


def expanded_fill_with_tensor(L):
    L.zeros(1, 3).expand(2, 3).fill_(L.tensor(1.0))


def expanded_setitem_tensor(L):
    L.zeros(1, 3).expand(2, 3)[:] = L.ones(3)


def expanded_row_setitem_tensor(L):
    e = L.zeros(1, 3).expand(2, 3)
    e[0] = L.ones(3)
    return e.tolist()


def clamp_with_bound_requiring_grad(L):
    x = L.tensor([0.5, 2.0, -1.0])
    hi = L.tensor([1.0, 1.0, 1.0], requires_grad=True)
    x.clamp_(max=hi)
    x.sum().backward()
    return x.requires_grad, hi.grad.tolist()


def partial_overlap_transposed(L):
    x = L.ones(2, 2)
    x.t().add_(x)


def partial_overlap_slices(L):
    x = L.arange(4.0)
    x[1:].add_(x[:3])


def partial_overlap_copy_and_setitem(L):
    x = L.ones(2, 2)
    x[:] = x.t()


def same_elements_or_disjoint_allowed(L):
    x = L.arange(4.0)
    x.add_(x)
    x[:2].add_(x[2:])
    x[0].mul_(x[:, None][1, 0])
    return x.tolist()


SCENARIOS = [stale_view, stale_view_of_another_view, view_of_base_that_later_requires_grad,
             view_sees_no_grad_update_of_leaf, inplace_on_view_then_its_grad_fn, chunk_output_inplace,
             split_output_inplace_of_leaf, unbind_output_inplace, view_of_split_output_inplace,
             split_output_inplace_without_grad, split_output_inplace_with_grad_operand,
             split_output_inplace_under_no_grad, split_output_after_base_modified, split_output_detached_inplace,
             split_output_grad_fn_after_base_modified, unbind_output_grad_fn_after_base_modified,
             split_output_used_after_sibling_modified_under_no_grad, no_grad_view_grad_fn_after_base_modified,
             no_grad_view_of_leaf_grad_fn_after_no_grad_update, no_grad_view_unchanged_base_grad_fn,
             no_grad_view_inplace_in_grad_mode, no_grad_view_of_leaf_requires_grad, no_grad_view_inplace_in_no_grad,
             view_of_view_leaf_inplace, view_made_leaf_inplace, expanded_mul_, expanded_copy_,
             expanded_fill_zero_masked_fill, expanded_fill_with_tensor, expanded_setitem_tensor,
             expanded_row_setitem_tensor, clamp_with_bound_requiring_grad, partial_overlap_transposed,
             partial_overlap_slices, partial_overlap_copy_and_setitem, same_elements_or_disjoint_allowed]


def _outcome(fn, L):
    try:
        return fn(L), None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # noqa: BLE001 - PanicException derives from BaseException
        return None, e


@pytest.mark.parametrize("fn", SCENARIOS, ids=[f.__name__ for f in SCENARIOS])
def test_inplace_and_views_like_torch(fn):
    expected, texc = _outcome(fn, torch)
    got, fexc = _outcome(fn, fg)
    if texc is not None:
        assert fexc is not None, f"torch raises {type(texc).__name__}({texc}); we return {got!r}"
        assert type(fexc) is type(texc), f"we raise {type(fexc).__name__}({fexc}); torch {type(texc).__name__}({texc})"
        # the message names the same case (its first sentence)
        assert str(fexc).split(".")[0] == str(texc).split(".")[0], f"{fexc} != torch {texc}"
    else:
        assert fexc is None, f"we raise {type(fexc).__name__}({fexc}); torch returns {expected!r}"
        assert got == expected


# ---- x op= y written straight into x (the no-recording fast path of + - * /) -------------------

def _inplace_update(L, op, dtype, shape, view):
    """`x op= y` under no_grad on plain operands: x's values, its version counter's step, what a
    view of x sees, and that y is left alone."""
    base = L.arange(1.0, 1.0 + 2 * max(1, _numel(shape)), dtype=getattr(L, dtype)) / 7.0
    x = base[: _numel(shape)].reshape(shape) if view else base[: _numel(shape)].reshape(shape).clone()
    y = (L.arange(0.5, 0.5 + _numel(shape), dtype=getattr(L, dtype)) * 0.3).reshape(shape)
    y_before = y.clone()
    v0 = x._version
    with L.no_grad():
        if op == "+":
            x += y
        elif op == "-":
            x -= y
        elif op == "*":
            x *= y
        else:
            x /= y
    return x.tolist(), x._version - v0, base[:3].tolist(), bool((y == y_before).all())


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,view", [((5,), False), ((3, 4), True), ((300, 257), False)])
def test_inplace_update_under_no_grad(op, dtype, shape, view):
    assert _inplace_update(fg, op, dtype, shape, view) == _inplace_update(torch, op, dtype, shape, view)


def _inplace_number(L, op, dtype, shape, view, number):
    """`x op= number` and the method form under no_grad: values, version step, what a view of x
    sees (the number is rounded to x's dtype first, as torch's kernels do)."""
    base = L.arange(1.0, 1.0 + 2 * _numel(shape), dtype=getattr(L, dtype)) / 7.0
    x = base[: _numel(shape)].reshape(shape) if view else base[: _numel(shape)].reshape(shape).clone()
    v0 = x._version
    with L.no_grad():
        if op == "+":
            x += number
        elif op == "-":
            x -= number
        elif op == "*":
            x *= number
        else:
            x /= number
        r = {"+": x.add_, "-": x.sub_, "*": x.mul_, "/": x.div_}[op](number)
    return x.tolist(), x._version - v0, base[:3].tolist(), r is x


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,view", [((5,), False), ((3, 4), True), ((300, 257), False)])
@pytest.mark.parametrize("number", [0.1, 3, -2.5e-3])
def test_inplace_number_under_no_grad(op, dtype, shape, view, number):
    assert _inplace_number(fg, op, dtype, shape, view, number) == _inplace_number(torch, op, dtype, shape, view, number)


def _inplace_number_cases(L):
    """Numbers the fast path leaves to the general one, and its errors."""
    out = []
    x = L.arange(6.0).reshape(2, 3).t()
    x *= 3.0  # non-contiguous target
    out.append(x.tolist())
    x = L.arange(6.0)
    x += True  # a bool number
    out.append(x.tolist())
    x = L.arange(6.0)
    x *= 2**60  # an int too large for a double's mantissa
    out.append(x.tolist())
    w = L.tensor([1.0, 2.0], requires_grad=True)
    try:
        w *= 2.0  # a leaf that requires grad, grad mode on
        out.append("no error")
    except RuntimeError as e:
        out.append(str(e).split(".")[0])
    with L.no_grad():
        w *= 2.0
    out.append((w.tolist(), w._version, w.requires_grad, w.grad_fn is None))
    return out


def test_inplace_number_cases():
    assert _inplace_number_cases(fg) == _inplace_number_cases(torch)


def _inplace_update_fallbacks(L):
    """What the fast path hands to the general one: the same storage on both sides, a
    broadcast operand, another dtype, a non-contiguous target, recording."""
    out = []
    x = L.arange(6.0).reshape(2, 3)
    with L.no_grad():
        x -= x[:, :]  # the same storage
    out.append(x.tolist())
    x = L.arange(6.0).reshape(2, 3)
    with L.no_grad():
        x *= L.tensor([1.0, 2.0, 3.0])  # broadcast
        x += L.ones(2, 3, dtype=L.float64)  # float64 into float32
    out.append(x.tolist())
    x = L.arange(6.0).reshape(2, 3).t()
    x += L.ones(3, 2)  # non-contiguous target
    out.append(x.tolist())
    w = L.tensor([1.0, 2.0], requires_grad=True)
    h = w * 2
    h -= L.tensor([0.5, 0.5])  # recorded
    h.sum().backward()
    out.append((h.tolist(), w.grad.tolist(), type(h.grad_fn).__name__ if isinstance(h, torch.Tensor) else h.grad_fn.name()))
    return out


def test_inplace_update_fallbacks():
    assert _inplace_update_fallbacks(fg) == _inplace_update_fallbacks(torch)


def _inplace_methods(L, dtype):
    """add_/sub_ (with and without alpha), mul_, div_ under no_grad on plain operands."""
    dt = getattr(L, dtype)
    out = []
    for name, kw in [("add_", {}), ("add_", {"alpha": 0.3}), ("add_", {"alpha": -2}), ("sub_", {}),
                     ("sub_", {"alpha": 1e-3}), ("mul_", {}), ("div_", {})]:
        x = L.arange(1.0, 301.0, dtype=dt).reshape(20, 15) / 9.0
        y = L.arange(2.0, 302.0, dtype=dt).reshape(20, 15) * 0.7
        with L.no_grad():
            r = getattr(x, name)(y, **kw)
        out.append((name, r is x, x.tolist()))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_inplace_methods_under_no_grad(dtype):
    assert _inplace_methods(fg, dtype) == _inplace_methods(torch, dtype)
