"""Bad input raises what torch raises: the same exception kind and a message with the same content.

Each case is fn(L) run on torch and on the library under test. `assert_same_error` checks that both
raise, that the library's exception is of torch's kind (IndexError / TypeError / ValueError /
RuntimeError, most specific first), that its message is not empty, and that it contains the given key
words (sizes, dims, phrases), which are first checked to be in torch's own message. A Rust panic
(pyo3 PanicException is a BaseException) is never caught here, so it fails the test.
"""
import re

import numpy as np
import pytest
import torch

from conftest import fg

# (NotImplementedError before RuntimeError, its base class: torch raises it for a dtype a kernel lacks)
KINDS = (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError)


def _kind(exc):
    for k in KINDS:
        if isinstance(exc, k):
            return k
    return type(exc)


def _has(msg, word):
    if re.fullmatch(r"-?\d+", word):  # a number: not part of a longer number
        return re.search(rf"(?<![\d.]){re.escape(word)}(?![\d.])", msg) is not None
    return word.lower() in msg.lower()


def assert_same_error(fn, *words):
    with pytest.raises(Exception) as t_info:
        fn(torch)
    t_exc = t_info.value
    for w in words:  # the key words are torch's own
        assert _has(str(t_exc), w), f"test bug: {w!r} not in torch's message {str(t_exc)!r}"
    with pytest.raises(Exception) as f_info:
        fn(fg)
    f_exc = f_info.value
    kind = _kind(t_exc)
    assert isinstance(f_exc, kind), (
        f"raised {type(f_exc).__name__}({f_exc}); torch raises {type(t_exc).__name__}({t_exc})")
    msg = str(f_exc)
    assert msg.strip(), f"{type(f_exc).__name__} with an empty message; torch says: {t_exc}"
    missing = [w for w in words if not _has(msg, w)]
    assert not missing, f"message {msg!r} lacks {missing}; torch says: {t_exc}"


CASES = []


def err(id, *words):
    def deco(fn):
        CASES.append(pytest.param(fn, words, id=id))
        return fn
    return deco


def E(id, fn, *words):
    CASES.append(pytest.param(fn, words, id=id))


def leaf(L, *shape):
    return L.ones(shape, requires_grad=True)


# ---------------------------------------------------------------- shape mismatch
E("cross_entropy_0d_target", lambda L: L.nn.functional.cross_entropy(L.ones(2, 3), L.tensor(1)), "batch_size", "2", "0")
E("cross_entropy_smoothing_unbatched",
  lambda L: L.nn.functional.cross_entropy(L.ones(3), L.tensor([1]), label_smoothing=0.2), "shape", "[1]")
E("add_shape", lambda L: L.ones(2, 7) + L.ones(5), "7", "5")
E("mul_shape", lambda L: L.ones(2, 7) * L.ones(3, 5), "7", "5")
E("sub_shape_fn", lambda L: L.sub(L.ones(4, 3), L.ones(2, 3)), "4", "2")
E("maximum_shape", lambda L: L.maximum(L.ones(2, 7), L.ones(5)), "7", "5")
E("where_shape", lambda L: L.where(L.ones(2, 3) > 0, L.ones(2, 3), L.ones(4)), "3", "4")
E("add_grad_shape", lambda L: leaf(L, 2, 7) + L.ones(5), "7", "5")
E("add__out_shape", lambda L: L.ones(3).add_(L.ones(2, 3)), "[3]", "[2, 3]")
E("copy__shape", lambda L: L.ones(3).copy_(L.ones(4)), "3", "4")
E("matmul_shape", lambda L: L.ones(2, 3) @ L.ones(4, 5), "2x3", "4x5")
E("matmul_shape_grad", lambda L: L.matmul(leaf(L, 2, 3), L.ones(4, 5)), "2x3", "4x5")
E("matmul_batch_shape", lambda L: L.ones(2, 3, 4) @ L.ones(3, 4, 5), "2", "3")
E("matmul_0d", lambda L: L.ones(()) @ L.ones(3), "1D")
E("mm_shape", lambda L: L.mm(L.ones(2, 3), L.ones(4, 5)), "2x3", "4x5")
E("mm_1d", lambda L: L.mm(L.ones(3), L.ones(3, 4)), "matrix")
E("bmm_batch", lambda L: L.bmm(L.ones(2, 3, 4), L.ones(3, 4, 5)), "[2, 4]", "[3, 4]")
E("bmm_2d", lambda L: L.bmm(L.ones(3, 4), L.ones(4, 5)), "3D")
E("mv_shape", lambda L: L.mv(L.ones(2, 3), L.ones(4)), "3", "4")
E("dot_shape", lambda L: L.dot(L.ones(3), L.ones(4)), "3", "4")
E("dot_2d", lambda L: L.dot(L.ones(3, 3), L.ones(3, 3)), "1D")
E("outer_2d", lambda L: L.outer(L.ones(2, 3), L.ones(4)), "1-D")
E("cat_shape", lambda L: L.cat([L.ones(2, 3), L.ones(2, 4)]), "3", "4")
E("cat_ndim", lambda L: L.cat([L.ones(2, 3), L.ones(3)]), "2", "1")
E("cat_empty_list", lambda L: L.cat([]), "non-empty")
E("stack_shape", lambda L: L.stack([L.ones(2, 3), L.ones(2, 4)]), "[2, 3]", "[2, 4]")
E("view_numel", lambda L: L.ones(2, 3).view(4), "[4]", "6")
E("reshape_numel", lambda L: L.ones(2, 3).reshape(4, 2), "[4, 2]", "6")
E("view_two_infer", lambda L: L.ones(2, 3).view(-1, -1), "one dimension")
E("view_noncontig", lambda L: L.ones(2, 3).t().view(6), "view", "stride")
E("expand_size", lambda L: L.ones(3).expand(2, 4), "4", "3")
E("expand_fewer_dims", lambda L: L.ones(2, 3).expand(3), "2")
E("broadcast_to_size", lambda L: L.ones(3).broadcast_to((2, 4)), "4", "3")
E("permute_len", lambda L: L.ones(2, 3).permute(0, 1, 2), "2", "3")
E("permute_dup", lambda L: L.ones(2, 3).permute(0, 0), "duplicate")
E("repeat_fewer", lambda L: L.ones(2, 3).repeat(2), "repeat")
E("split_sizes_sum", lambda L: L.ones(3, 4).split([1, 1]), "3", "[1, 1]")
E("split_zero", lambda L: L.ones(3, 4).split(0), "3")
E("chunk_zero", lambda L: L.ones(3, 4).chunk(0), "0")
E("narrow_len", lambda L: L.ones(3, 4).narrow(0, 2, 3), "2", "3")
E("setitem_value_shape", lambda L: L.ones(3, 4).__setitem__(0, L.ones(3)), "4", "3")
E("mT_1d", lambda L: L.ones(3).mT, "1-D")
E("sum_dup_dims", lambda L: L.ones(3, 4).sum((0, 0)), "0", "multiple")
E("flip_dup_dims", lambda L: L.ones(3, 4).flip(0, 0), "0", "multiple")

# ---------------------------------------------------------------- dim out of range (IndexError in torch)
X = (lambda L: L.ones(3, 4))
for _id, _f, _w in (
        ("sum", lambda L: X(L).sum(dim=5), "5"), ("mean", lambda L: X(L).mean(-3), "-3"),
        ("prod", lambda L: X(L).prod(2), "2"), ("max", lambda L: X(L).max(dim=-4), "-4"),
        ("argmax", lambda L: X(L).argmax(7), "7"), ("amax", lambda L: X(L).amax((0, 2)), "2"),
        ("var", lambda L: X(L).var(3), "3"), ("logsumexp", lambda L: X(L).logsumexp(3), "3"),
        ("softmax", lambda L: X(L).softmax(3), "3"), ("log_softmax", lambda L: X(L).log_softmax(-3), "-3"),
        ("cumsum", lambda L: X(L).cumsum(5), "5"), ("transpose", lambda L: X(L).transpose(0, 4), "4"),
        ("permute", lambda L: X(L).permute(0, 5), "5"), ("unsqueeze", lambda L: X(L).unsqueeze(4), "4"),
        ("squeeze", lambda L: X(L).squeeze(3), "3"), ("flatten", lambda L: X(L).flatten(0, 5), "5"),
        ("cat", lambda L: L.cat([X(L), X(L)], 3), "3"), ("stack", lambda L: L.stack([X(L), X(L)], 4), "4"),
        ("narrow", lambda L: X(L).narrow(3, 0, 1), "3"), ("split", lambda L: X(L).split(1, dim=2), "2"),
        ("flip", lambda L: X(L).flip(2), "2"), ("norm", lambda L: X(L).norm(dim=2), "2"),
        ("index_select", lambda L: X(L).index_select(2, L.tensor([0])), "2"),
        ("gather", lambda L: X(L).gather(2, L.tensor([[0]])), "2"),
        ("all", lambda L: (X(L) > 0).all(2), "2"), ("size", lambda L: X(L).size(2), "2"),
        ("grad_sum", lambda L: leaf(L, 3, 4).sum(2), "2"),
):
    E(f"dim_out_of_range_{_id}", _f, "range", _w)

# ---------------------------------------------------------------- dtype errors
E("requires_grad_int_tensor", lambda L: L.tensor([1, 2], requires_grad=True), "floating point")
E("requires_grad_int_ones", lambda L: L.ones(2, dtype=L.int64, requires_grad=True), "floating point")
E("requires_grad_bool", lambda L: L.zeros(2, dtype=L.bool, requires_grad=True), "floating point")
E("requires_grad_arange", lambda L: L.arange(3, requires_grad=True), "floating point")
E("requires_grad__int", lambda L: L.tensor([1, 2]).requires_grad_(), "floating point")
E("requires_grad_setter_int", lambda L: setattr(L.tensor([1, 2]), "requires_grad", True), "floating point")
E("matmul_dtype", lambda L: L.ones(2, 3) @ L.ones(3, 2, dtype=L.float64), "dtype")
E("mean_int", lambda L: L.tensor([1, 2]).mean(), "dtype")
E("var_int", lambda L: L.tensor([1, 2]).std(), "floating point")
E("int_negative_power", lambda L: L.tensor([2]) ** -1, "negative")
E("int_inplace_true_div", lambda L: L.tensor([2]).div_(2), "cast")
E("where_float_cond", lambda L: L.where(L.ones(3), L.ones(3), L.ones(3)), "bool")
E("masked_fill_float_mask", lambda L: L.ones(3).masked_fill(L.ones(3), 1.0), "bool")
E("gather_float_index", lambda L: L.ones(3).gather(0, L.tensor([0.0])), "int64")
E("index_select_float_index", lambda L: L.ones(3).index_select(0, L.tensor([0.0])), "int64")
E("index_float_tensor", lambda L: L.ones(3)[L.tensor([1.0])], "long", "bool")
E("invert_float", lambda L: ~L.ones(3), "integer", "boolean")
E("and_float", lambda L: L.ones(3) & L.ones(3), "float")
# a kernel without the dtype: torch's NotImplementedError
E("xor_float", lambda L: L.ones(3) ^ L.ones(3), "bitwise_xor", "float")
E("softmax_int", lambda L: L.tensor([1, 2]).softmax(0), "softmax", "long")
E("log_softmax_int", lambda L: L.tensor([1, 2]).log_softmax(0), "log_softmax", "long")
E("abs_bool", lambda L: L.ones(2, dtype=L.bool).abs(), "abs", "bool")
E("floor_bool", lambda L: L.ones(2, dtype=L.bool).floor(), "bool")
E("mm_bool", lambda L: L.ones(1, 2, dtype=L.bool) @ L.ones(2, 1, dtype=L.bool), "addmm", "bool")
E("arange_bool", lambda L: L.arange(3, dtype=L.bool), "arange", "bool")
E("rand_int", lambda L: L.rand(2, dtype=L.int64), "check_uniform_bounds", "long")
E("randn_int", lambda L: L.randn(2, dtype=L.int64), "normal_kernel_cpu", "long")

# ---------------------------------------------------------------- wrong argument types (TypeError)
E("add_str", lambda L: L.ones(2) + "a", "str")
E("zeros_str", lambda L: L.zeros("a"), "str")
E("ones_dtype_str", lambda L: L.ones(2, dtype="float32"), "dtype")
E("reshape_str", lambda L: L.ones(2, 3).reshape("a"), "str")
E("sum_dim_str", lambda L: L.ones(2, 3).sum(dim="a"), "str")
E("view_float", lambda L: L.ones(2, 3).view(2.5), "float")
E("pow_str", lambda L: L.ones(2).pow("x"), "str")
E("exp_list", lambda L: L.exp([1.0]), "list")
E("matmul_int", lambda L: L.matmul(L.ones(2), 3), "int")
E("cat_tensor_not_list", lambda L: L.cat(L.ones(2)), "tensors")
E("transpose_missing_arg", lambda L: L.ones(2, 3).transpose(0), "dim1")
E("masked_fill_str", lambda L: L.ones(2).masked_fill(L.ones(2) > 0, "x"), "str")
E("tensor_str", lambda L: L.tensor("abc"), "str")
E("argmax_tuple_dim", lambda L: L.ones(2, 3).argmax((0, 1)), "tuple")
E("softmax_no_dim", lambda L: L.ones(3).softmax(), "dim")
E("from_numpy_list", lambda L: L.from_numpy([1, 2]), "list")
E("len_0d", lambda L: len(L.tensor(1.0)), "0-d")
E("iter_0d", lambda L: iter(L.tensor(1.0)), "0-d")

# ---------------------------------------------------------------- bad values
E("tensor_ragged", lambda L: L.tensor([[1, 2], [3]]), "2", "1")
E("item_multi", lambda L: L.ones(3, 4).item(), "12")
E("float_multi", lambda L: float(L.ones(2)), "one element")
E("int_multi", lambda L: int(L.ones(2)), "one element")
E("bool_multi", lambda L: bool(L.ones(2)), "ambiguous")
E("zeros_negative", lambda L: L.zeros(-1), "negative")
E("arange_zero_step", lambda L: L.arange(0, 5, 0), "nonzero")
E("arange_bad_sign", lambda L: L.arange(5, 0, 1), "step")
E("linspace_negative", lambda L: L.linspace(0, 1, -1), "non-negative")
E("eye_negative", lambda L: L.eye(-1), "-1")
E("randint_empty_range", lambda L: L.randint(5, 2, (3,)), "5", "2")
E("clamp_no_bounds", lambda L: L.ones(3).clamp(), "min", "max")
E("numpy_requires_grad", lambda L: leaf(L, 2).numpy(), "detach")

# ---------------------------------------------------------------- indexing out of range
E("index_int", lambda L: L.ones(3, 4)[5], "5", "3")
E("index_negative", lambda L: L.ones(3, 4)[-4], "-4", "3")
E("index_second_dim", lambda L: L.ones(3, 4)[0, 9], "9", "4")
E("index_tensor", lambda L: L.ones(3, 4)[L.tensor([5])], "5", "3")
E("index_too_many", lambda L: L.ones(3, 4)[0, 0, 0], "2")
E("index_mask_shape", lambda L: L.ones(3, 4)[L.tensor([True, False])], "[2]", "[3, 4]")
E("setitem_out_of_range", lambda L: L.ones(3, 4).__setitem__(5, 1.0), "5", "3")
E("index_select_out_of_range", lambda L: L.ones(3, 4).index_select(0, L.tensor([5])), "range")
E("narrow_negative_length", lambda L: L.ones(3, 4, 5).narrow(2, -1, -2**62), "non-negative")
E("narrow_start_out_of_range", lambda L: L.ones(3, 4, 5).narrow(2, -9, 1), "-9")
E("index_select_negative", lambda L: L.ones(3, 4).index_select(0, L.tensor([-1])), "range")
E("gather_negative", lambda L: L.ones(2, 3).gather(1, L.tensor([[-1], [0]])), "out of bounds")
E("index_select_2d_index", lambda L: L.ones(3, 4).index_select(0, L.tensor([[0]])), "vector")
E("gather_out_of_range", lambda L: L.ones(3, 4).gather(1, L.tensor([[5]])), "5", "4")
E("grad_index_out_of_range", lambda L: leaf(L, 3)[3], "3")


# ---------------------------------------------------------------- autograd misuse
@err("backward_non_scalar", "scalar")
def _(L):
    (leaf(L, 3) * 2).backward()


@err("backward_second_time", "second time")
def _(L):
    x = leaf(L, 3)
    y = (x * x).sum()
    y.backward()
    y.backward()


@err("backward_second_time_exp", "second time")
def _(L):
    y = leaf(L, 3).exp().sum()
    y.backward()
    y.backward()


@err("backward_no_grad_tensor", "does not require grad")
def _(L):
    L.ones(3).sum().backward()


@err("backward_made_under_no_grad", "does not require grad")
def _(L):
    x = leaf(L, 3)
    with L.no_grad():
        y = (x * 2).sum()
    y.backward()


@err("backward_gradient_shape", "shape", "3", "2")
def _(L):
    (leaf(L, 2) * 2).backward(L.ones(3))


@err("inplace_leaf_add_", "leaf", "in-place")
def _(L):
    leaf(L, 3).add_(1)


@err("inplace_leaf_iadd", "leaf", "in-place")
def _(L):
    x = leaf(L, 3)
    x += 1


@err("inplace_leaf_zero_", "leaf", "in-place")
def _(L):
    leaf(L, 3).zero_()


@err("inplace_leaf_setitem", "leaf", "in-place")
def _(L):
    x = leaf(L, 3)
    x[0] = 2.0


@err("inplace_leaf_view", "leaf", "in-place")
def _(L):
    leaf(L, 2, 3)[0].mul_(2)


@err("inplace_leaf_copy_", "leaf", "in-place")
def _(L):
    leaf(L, 3).copy_(L.zeros(3))


@err("saved_input_modified", "modified by an inplace operation")
def _(L):
    a = leaf(L, 3).clone()
    b = a.sin()
    a.mul_(2)
    b.sum().backward()


@err("saved_output_modified", "modified by an inplace operation")
def _(L):
    y = leaf(L, 3).exp()
    y.add_(1)
    y.sum().backward()


@err("saved_modified_by_setitem", "modified by an inplace operation")
def _(L):
    a = leaf(L, 3).clone()
    b = a * a
    a[0] = 0.0
    b.sum().backward()


@err("saved_modified_through_view", "modified by an inplace operation")
def _(L):
    a = leaf(L, 2, 3).clone()
    b = a.tanh()
    b[0] += 1
    b.sum().backward()


@err("saved_modified_by_iadd", "modified by an inplace operation")
def _(L):
    x = leaf(L, 3)
    y = x.sigmoid()
    y *= 2
    y.sum().backward()


@err("grad_setter_wrong_shape", "size")
def _(L):
    x = leaf(L, 3)
    x.grad = L.ones(4)


@err("requires_grad_false_on_non_leaf", "leaf")
def _(L):
    y = leaf(L, 3) * 2
    y.requires_grad = False


@err("retain_grad_without_requires_grad", "requires_grad")
def _(L):
    L.ones(3).retain_grad()


@pytest.mark.parametrize("fn,words", CASES)
def test_error(fn, words):
    assert_same_error(fn, *words)


# ---------------------------------------------------------------- the checker itself
def test_assert_same_error_detects_wrong_kind():
    calls = []

    def fn(L):
        calls.append(L)
        raise (IndexError if len(calls) == 1 else RuntimeError)("index 5 out of range")

    with pytest.raises(AssertionError):
        assert_same_error(fn, "5")


def test_assert_same_error_detects_missing_words():
    calls = []

    def fn(L):
        calls.append(L)
        raise RuntimeError("sizes 3 and 4" if len(calls) == 1 else "sizes 3 and 44")

    with pytest.raises(AssertionError):
        assert_same_error(fn, "3", "4")


def test_assert_same_error_requires_an_error():
    calls = []

    def fn(L):
        calls.append(L)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return 1

    with pytest.raises(pytest.fail.Exception):
        assert_same_error(fn)


def test_errors_leave_state_usable():
    """After a failed op the library keeps working: grad mode on, tensors intact."""
    for L in (torch, fg):
        x = L.ones(2, 3, requires_grad=True)
        with pytest.raises(RuntimeError):
            x @ L.ones(4, 5)
        with pytest.raises(RuntimeError):
            with L.no_grad():
                x + L.ones(4)
        y = (x * 2).sum()
        assert y.requires_grad
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0, dtype=np.float32))


def test_matmul_defers_to_the_other_operand_and_raises_typeerror_otherwise():
    class Other:
        def __rmatmul__(self, lhs):
            return "rmatmul"

        def __matmul__(self, rhs):
            return "matmul"

    t = fg.ones(3)
    assert t @ Other() == "rmatmul"
    assert Other() @ t == "matmul"
    with pytest.raises(TypeError, match="unsupported operand type"):
        t @ [1.0, 2.0, 3.0]
