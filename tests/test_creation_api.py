"""Creation API against torch: the Tensor.new_* methods, the `size=` keyword of the creation
functions, and the *_like functions' memory formats (strides, values, dtype, device, grad flags).

Each case is a function of the library L, run on torch and on the library under test; the results
are compared field by field (values are skipped for empty/random results, whose shape, dtype and
strides are compared), and errors by kind and torch's own key words (test_errors.assert_same_error).
"""
import pickle
import warnings

import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import error_kind, raised
from test_errors import assert_same_error


def _describe(t, values=True):
    d = dict(shape=tuple(t.shape), stride=t.stride(), dtype=str(t.dtype).split(".")[-1], device=str(t.device),
             requires_grad=t.requires_grad, is_leaf=t.is_leaf, no_grad_fn=t.grad_fn is None)
    if values:
        d["values"] = t.tolist()
    return d


def assert_same_exact_error(fn, *words):
    """assert_same_error, and the exception of torch's most specific kind: NotImplementedError where
    torch raises it, not the RuntimeError it derives from."""
    assert_same_error(fn, *words)
    assert error_kind(raised(fn, fg)) == error_kind(raised(fn, torch))


def assert_same_tensor(fn, values=True):
    expected, got = fn(torch), fn(fg)
    assert isinstance(got, fg.Tensor)
    assert _describe(got, values) == _describe(expected, values)


# ------------------------------------------------------------------ Tensor.new_*
def _f64(L):
    return L.tensor([[1.5, -2.0, 3.0], [4.0, 5.0, -6.0]], dtype=L.float64)


def _i64(L):
    return L.tensor([[1, 2], [3, 4]])


def _t_grad(L):
    return L.ones(2, 3, requires_grad=True).t()  # a non-leaf, non-contiguous float32 tensor


NEW = {
    "new_ones varargs": lambda L: _f64(L).new_ones(2, 3),
    "new_ones tuple": lambda L: _f64(L).new_ones((2, 3)),
    "new_ones list": lambda L: _i64(L).new_ones([4]),
    "new_ones size=": lambda L: _f64(L).new_ones(size=(3, 1)),
    "new_ones size= Size": lambda L: _f64(L).new_ones(size=L.Size([2])),
    "new_ones 0-d": lambda L: _f64(L).new_ones(()),
    "new_ones empty": lambda L: _f64(L).new_ones(0, 3),
    "new_ones dtype": lambda L: _f64(L).new_ones(2, dtype=L.int64),
    "new_ones dtype=None": lambda L: _i64(L).new_ones(2, dtype=None, device=None),
    "new_ones requires_grad": lambda L: _f64(L).new_ones(2, requires_grad=True),
    "new_ones requires_grad=None": lambda L: _f64(L).new_ones(2, requires_grad=None),
    "new_ones of a tensor needing grad": lambda L: _t_grad(L).new_ones(2, 2),
    "new_ones device": lambda L: _f64(L).new_ones(2, device="cpu"),
    "new_ones int tensor size": lambda L: _f64(L).new_ones(L.tensor(3)),
    "new_ones bool element": lambda L: _f64(L).new_ones(2, True),
    "new_zeros": lambda L: _f64(L).new_zeros(2, 2),
    "new_zeros int": lambda L: _i64(L).new_zeros((3,)),
    "new_zeros size=": lambda L: _i64(L).new_zeros(size=[1, 2], dtype=L.float32, requires_grad=True),
    "new_zeros of a transposed tensor": lambda L: _t_grad(L).new_zeros(3, 2),
    "new_full": lambda L: _f64(L).new_full((2, 2), 7),
    "new_full keywords": lambda L: _f64(L).new_full(fill_value=2.5, size=[3]),
    "new_full int truncates a float": lambda L: _i64(L).new_full((2,), 2.5),
    "new_full bool": lambda L: _i64(L).new_full((2,), 2.5, dtype=L.bool),
    "new_full keeps self's dtype for a bool fill": lambda L: _f64(L).new_full((2,), True),
    "new_full 0-d tensor fill": lambda L: _f64(L).new_full((2,), L.tensor(3.0)),
    "new_full dtype requires_grad": lambda L: _i64(L).new_full((2,), 1, dtype=L.float64, requires_grad=True),
    "new_tensor list": lambda L: _f64(L).new_tensor([1, 2]),
    "new_tensor int self, floats": lambda L: _i64(L).new_tensor([1.5, -2.7]),
    "new_tensor nested": lambda L: _i64(L).new_tensor([[1, 2], [3, 4]], dtype=L.float32),
    "new_tensor scalar": lambda L: _f64(L).new_tensor(3),
    "new_tensor data=": lambda L: _f64(L).new_tensor(data=[True, False]),
    "new_tensor requires_grad": lambda L: _f64(L).new_tensor([1.0], requires_grad=True),
    "new_tensor of a tensor needing grad": lambda L: _t_grad(L).new_tensor([1.0, 2.0]),
}


@pytest.mark.parametrize("fn", NEW.values(), ids=NEW.keys())
def test_new_methods_match_torch(fn):
    assert_same_tensor(fn)


def test_new_empty_matches_torch_but_values():
    for fn in (lambda L: _f64(L).new_empty(2, 3), lambda L: _i64(L).new_empty(size=(4,)),
               lambda L: _t_grad(L).new_empty((2, 1), dtype=L.float64, requires_grad=True)):
        assert_same_tensor(fn, values=False)


def test_new_tensor_copies_a_tensor_detached_with_torchs_warning():
    src = fg.tensor([1, 2, 3])
    base = fg.ones(1, dtype=fg.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="detach"):
        t = base.new_tensor(src)
    assert t.dtype == fg.float64 and t.tolist() == [1.0, 2.0, 3.0] and not t.requires_grad
    src[0] = 10  # a copy: not a view of src
    assert t.tolist() == [1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        base.new_tensor([1, 2])  # no warning for Python data


NEW_ERRORS = {
    "new_full without fill_value": (lambda L: _f64(L).new_full((2,)), ["fill_value"]),
    "new_full int size": (lambda L: _f64(L).new_full(2, 3), ["size"]),
    "new_full str fill": (lambda L: _f64(L).new_full((2,), "a"), ["fill_value", "Number"]),
    "new_full None fill": (lambda L: _f64(L).new_full((2,), None), ["fill_value"]),
    "new_full 1-d tensor fill": (lambda L: _f64(L).new_full((2,), L.ones(1)), ["fill_value"]),
    "new_full overflow": (lambda L: L.ones(2, dtype=L.uint8).new_full((2,), 300), ["overflow"]),
    "new_full negative": (lambda L: _f64(L).new_full((-1,), 2), ["negative"]),
    "new_ones negative": (lambda L: _f64(L).new_ones(2, -1), ["negative"]),
    "new_zeros negative size=": (lambda L: _f64(L).new_zeros(size=(-3,)), ["negative"]),
    "new_empty negative": (lambda L: _f64(L).new_empty(-1), ["negative"]),
    "new_ones no size": (lambda L: _f64(L).new_ones(), ["size"]),
    "new_ones size twice": (lambda L: _f64(L).new_ones(2, size=(2,)), ["size"]),
    "new_zeros size= int": (lambda L: _f64(L).new_zeros(size=2), ["size", "tuple of ints"]),
    "new_zeros size= None": (lambda L: _f64(L).new_zeros(size=None), ["size"]),
    "new_ones float": (lambda L: _f64(L).new_ones(2.0), ["size", "tuple of ints", "float"]),
    "new_ones float element": (lambda L: _f64(L).new_ones((2, 2.0)), ["size", "pos 2"]),
    "new_ones bool": (lambda L: _f64(L).new_zeros(True), ["size", "bool"]),
    "new_ones None": (lambda L: _f64(L).new_ones(None), ["size"]),
    "new_ones overflow": (lambda L: _f64(L).new_ones(2 ** 63), ["Overflow"]),
    "new_ones bad dtype": (lambda L: _f64(L).new_ones(2, dtype="a"), ["dtype"]),
    "new_ones requires_grad int": (lambda L: _f64(L).new_ones(2, requires_grad=1), ["bool"]),
    "new_ones requires_grad int64": (lambda L: _i64(L).new_ones(2, requires_grad=True), ["floating point"]),
    "new_ones bad keyword": (lambda L: _f64(L).new_ones(2, foo=1), ["foo"]),
    "new_empty memory_format": (lambda L: _f64(L).new_empty(2, memory_format=L.contiguous_format), ["memory_format"]),
    "new_tensor no data": (lambda L: _f64(L).new_tensor(), ["data"]),
    "new_tensor positional dtype": (lambda L: _f64(L).new_tensor([3], L.int64), ["positional"]),
    "tensor positional dtype": (lambda L: L.tensor([3], L.int64), ["tensor()", "1 positional argument", "2"]),
    "new_tensor str": (lambda L: _f64(L).new_tensor("a"), ["str"]),
    "new_tensor ragged": (lambda L: _f64(L).new_tensor([[1], [1, 2]]), ["length"]),
    "new_tensor requires_grad None": (lambda L: _f64(L).new_tensor([1], requires_grad=None), ["requires_grad"]),
    "new_tensor requires_grad int": (lambda L: _i64(L).new_tensor([1], requires_grad=True), ["floating point"]),
}


@pytest.mark.parametrize("fn,words", NEW_ERRORS.values(), ids=NEW_ERRORS.keys())
def test_new_methods_raise_like_torch(fn, words):
    assert_same_error(fn, *words)


# ------------------------------------------------------------------ size= keyword
SIZE_KW = {
    "zeros": lambda L: L.zeros(size=(2, 3)),
    "zeros list": lambda L: L.zeros(size=[2, 3], dtype=L.int64),
    "zeros Size": lambda L: L.zeros(size=L.Size([4])),
    "zeros 0-d": lambda L: L.zeros(size=()),
    "zeros bool element after the first": lambda L: L.zeros(size=(2, True)),
    "ones": lambda L: L.ones(size=(2,), requires_grad=True),
    "full": lambda L: L.full(size=(2, 3), fill_value=1.5),
    "full size= positional fill": lambda L: L.full((2,), fill_value=True),
    "randint high size=": lambda L: L.randint(3, size=(2, 2)).shape,
    "randint low high size=": lambda L: L.randint(1, 3, size=(5,)).dtype,
    "randint keywords": lambda L: L.randint(low=1, high=3, size=(2,)).shape,
    "randint high= keyword": lambda L: L.randint(high=3, size=(2,)).shape,
    "randint low positional high=": lambda L: L.randint(3, high=4, size=(2,)).tolist(),
    "randint dtype": lambda L: L.randint(3, size=(2,), dtype=L.float32).dtype,
    "requires_grad=None": lambda L: L.zeros(2, requires_grad=None).requires_grad,
}


@pytest.mark.parametrize("fn", SIZE_KW.values(), ids=SIZE_KW.keys())
def test_size_keyword_matches_torch(fn):
    expected, got = fn(torch), fn(fg)
    if isinstance(expected, torch.Tensor):
        assert _describe(got) == _describe(expected)
    else:
        assert str(got).split(".")[-1] == str(expected).split(".")[-1]


@pytest.mark.parametrize("name", ["empty", "rand", "randn"])
def test_size_keyword_of_random_and_empty(name):
    for kwargs in (dict(size=(2, 3)), dict(size=[4], dtype="float64"), dict(size=(), requires_grad=True)):
        def fn(L):
            kw = dict(kwargs)
            if "dtype" in kw:
                kw["dtype"] = getattr(L, kw["dtype"])
            return getattr(L, name)(**kw)
        assert_same_tensor(fn, values=False)


SIZE_ERRORS = {
    "zeros size twice": (lambda L: L.zeros(2, size=(2, 3)), ["size"]),
    "zeros tuple and size": (lambda L: L.zeros((2,), size=(2, 3)), ["size"]),
    "ones size twice": (lambda L: L.ones(2, 3, size=(2, 3)), ["size"]),
    "empty size twice": (lambda L: L.empty(2, size=(3,)), ["size"]),
    "rand size twice": (lambda L: L.rand(2, size=(3,)), ["rand()", "invalid combination", "got (int, size=tuple)"]),
    "randn size twice": (lambda L: L.randn((2,), size=(3,)), ["randn()", "invalid combination", "size=tuple"]),
    "randn sizes twice": (lambda L: L.randn(2, 3, size=(3,)), ["invalid combination", "got (int, int, size=tuple)"]),
    "zeros size twice, None": (lambda L: L.zeros(2, 3, size=None), ["size"]),
    "zeros size= int": (lambda L: L.zeros(size=2), ["size", "tuple of ints", "int"]),
    "zeros size= None": (lambda L: L.zeros(size=None), ["size", "NoneType"]),
    "zeros size= str": (lambda L: L.zeros(size="a"), ["size", "str"]),
    "zeros size= bool": (lambda L: L.zeros(size=(True,)), ["size", "tuple of ints"]),
    "zeros size= float element": (lambda L: L.zeros(size=(2, 2.0)), ["size", "pos 2", "float"]),
    "zeros size= negative": (lambda L: L.zeros(size=(2, -1)), ["non-negative"]),
    "ones negative": (lambda L: L.ones(2, -1), ["negative dimension -1", "[2, -1]"]),
    "empty negative": (lambda L: L.empty(-3), ["negative dimension -3"]),
    "rand negative": (lambda L: L.rand(size=(-1,)), ["negative dimension -1"]),
    "new_zeros negative": (lambda L: L.ones(2).new_zeros(4, -2), ["negative dimension -2", "[4, -2]"]),
    "rand size= negative": (lambda L: L.rand(size=(-1,)), ["-1"]),
    "zeros sizes=": (lambda L: L.zeros(sizes=(2,)), []),
    "zeros size= bad keyword": (lambda L: L.zeros(size=(2,), foo=1), ["foo"]),
    "full size= no fill": (lambda L: L.full(size=(2, 3)), ["fill_value"]),
    "full fill only": (lambda L: L.full(fill_value=2), []),
    "full size twice": (lambda L: L.full((2,), 3, size=(2,)), ["size"]),
    "full size= negative": (lambda L: L.full(size=(-1,), fill_value=1), ["-1"]),
    "randint size= int": (lambda L: L.randint(3, size=2), ["size", "tuple of ints"]),
    "randint size= None": (lambda L: L.randint(1, 3, size=None), []),
    "randint size twice": (lambda L: L.randint(1, 3, (2,), size=(2,)), ["randint"]),
    "randint no size": (lambda L: L.randint(3), ["randint"]),
    "randint size only": (lambda L: L.randint(size=(2,)), ["randint"]),
    "randint low only": (lambda L: L.randint(low=1, size=(2,)), ["randint"]),
    "randint low twice": (lambda L: L.randint(3, (2,), low=1), ["randint"]),
    "randint high twice": (lambda L: L.randint(3, 4, high=5, size=(2,)), ["randint"]),
    "randint size= float element": (lambda L: L.randint(3, size=(2, 2.0)), ["size", "pos 2"]),
    "randint size= negative": (lambda L: L.randint(3, size=(-1,)), ["-1"]),
}


@pytest.mark.parametrize("fn,words", SIZE_ERRORS.values(), ids=SIZE_ERRORS.keys())
def test_size_keyword_errors_match_torch(fn, words):
    assert_same_error(fn, *words)


# ------------------------------------------------------------------ *_like and memory formats
LAYOUTS = {
    "contiguous": lambda L: L.ones(2, 3),
    "transposed": lambda L: L.ones(2, 3).t(),
    "permuted 3-d": lambda L: L.ones(2, 3, 4).permute(2, 0, 1),
    "column step": lambda L: L.ones(4, 6)[:, ::2],
    "transposed step": lambda L: L.ones(4, 6).t()[::2],
    "permuted step": lambda L: L.ones(2, 3, 4).permute(2, 0, 1)[::2],
    "channels-last step": lambda L: L.ones(2, 3, 4, 5).permute(0, 2, 3, 1)[:, ::2],
    "size-1 dim of any stride": lambda L: L.ones(3, 1, 4).permute(1, 2, 0),
    "expanded": lambda L: L.ones(3, 1).expand(3, 4),
    "expanded transposed": lambda L: L.ones(1, 3).expand(4, 3).t(),
    "rows": lambda L: L.ones(4, 6)[1:3],
    "columns": lambda L: L.ones(4, 6)[:, 1:3],
    "offset transposed": lambda L: L.ones(10)[2:8].view(2, 3).t(),
    "empty transposed": lambda L: L.ones(3, 0).t(),
    "0-d": lambda L: L.tensor(2.0),
    "1-d step": lambda L: L.ones(6)[::2],
    "float64 transposed, requires grad": lambda L: L.ones(2, 3, dtype=L.float64, requires_grad=True).t(),
    "int64 transposed": lambda L: L.ones(2, 3, dtype=L.int64).t(),
}
LIKE = {
    "zeros_like": (lambda L, x, **kw: L.zeros_like(x, **kw), True),
    "ones_like": (lambda L, x, **kw: L.ones_like(x, **kw), True),
    "full_like": (lambda L, x, **kw: L.full_like(x, 7, **kw), True),
    "empty_like": (lambda L, x, **kw: L.empty_like(x, **kw), False),
    "rand_like": (lambda L, x, **kw: L.rand_like(x, **kw), False),
    "randn_like": (lambda L, x, **kw: L.randn_like(x, **kw), False),
    "randint_like": (lambda L, x, **kw: L.randint_like(x, 5, **kw), False),
}
FORMATS = {"default": None, "preserve": "preserve_format", "contiguous": "contiguous_format"}


@pytest.mark.parametrize("fmt", FORMATS.values(), ids=FORMATS.keys())
@pytest.mark.parametrize("like", LIKE.values(), ids=LIKE.keys())
@pytest.mark.parametrize("make", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_like_functions_lay_out_as_torch(make, like, fmt):
    fn, values = like
    if fn in (LIKE["rand_like"][0], LIKE["randn_like"][0]) and make is LAYOUTS["int64 transposed"]:
        pytest.skip("rand_like of an integer tensor is an error (test_like_errors_match_torch)")

    def call(L):
        kw = {} if fmt is None else dict(memory_format=getattr(L, fmt))
        return fn(L, make(L), **kw)
    assert_same_tensor(call, values)


@pytest.mark.parametrize("like", LIKE.values(), ids=LIKE.keys())
def test_like_functions_options_match_torch(like):
    fn, values = like
    for kw in (dict(dtype="float64"), dict(requires_grad=True), dict(requires_grad=None),
               dict(dtype="float64", requires_grad=True, device="cpu"), dict(memory_format=None)):
        def call(L):
            k = dict(kw)
            if "dtype" in k:
                k["dtype"] = getattr(L, k["dtype"])
            return fn(L, L.ones(3, 2, dtype=L.float32, requires_grad=True).t(), **k)
        assert_same_tensor(call, values)


@pytest.mark.parametrize("fmt,make", [
    ("channels_last", lambda L: L.ones(2, 3, 4, 5)),
    ("channels_last", lambda L: L.ones(2, 3, 4, 5).permute(0, 2, 3, 1)),
    ("channels_last_3d", lambda L: L.ones(2, 3, 4, 5, 6)),
])
@pytest.mark.parametrize("like", LIKE.values(), ids=LIKE.keys())
def test_like_functions_channels_last(like, fmt, make):
    fn, values = like
    assert_same_tensor(lambda L: fn(L, make(L), memory_format=getattr(L, fmt)), values)


def test_like_results_compute_as_torch():
    # the strided results are ordinary tensors: in-place ops, views and gradients see their layout
    def fn(L):
        x = L.arange(6.0).view(2, 3).t()
        y = L.zeros_like(x).add_(x)
        z = L.full_like(x, 2.0, requires_grad=True)
        (y * z).sum().backward()
        return [y.tolist(), y.t().reshape(-1).tolist(), z.grad.tolist(), L.ones_like(x).transpose(0, 1).is_contiguous()]
    assert fn(fg) == fn(torch)


def test_like_view_of_a_transposed_result_fails_as_torch():
    assert_same_error(lambda L: L.zeros_like(L.ones(2, 3).t()).view(-1), "view")


LIKE_ERRORS = {
    "memory_format str": (lambda L: L.zeros_like(L.ones(2), memory_format="a"), ["memory_format", "str"]),
    "memory_format int": (lambda L: L.empty_like(L.ones(2), memory_format=1), ["memory_format", "int"]),
    "channels_last of 3-d": (lambda L: L.zeros_like(L.ones(2, 3, 4), memory_format=L.channels_last),
                             ["rank 4", "channels_last"]),
    "channels_last_3d of 4-d": (lambda L: L.rand_like(L.ones(2, 3, 4, 5), memory_format=L.channels_last_3d),
                                ["rank 5"]),
    "requires_grad int": (lambda L: L.zeros_like(L.ones(2), requires_grad=1), ["requires_grad", "bool"]),
    "dtype str": (lambda L: L.ones_like(L.ones(2), dtype="a"), ["dtype"]),
    "input not a tensor": (lambda L: L.zeros_like([1, 2]), ["input", "Tensor"]),
    "positional dtype": (lambda L: L.zeros_like(L.ones(2), L.int64), ["positional"]),
    "bad keyword": (lambda L: L.zeros_like(L.ones(2), foo=1), ["foo"]),
    "int requires grad": (lambda L: L.ones_like(L.ones(2, dtype=L.int64), requires_grad=True), ["floating point"]),
    "full_like no fill": (lambda L: L.full_like(L.ones(2)), ["fill_value"]),
    "full_like str fill": (lambda L: L.full_like(L.ones(2), "a"), ["fill_value", "Number"]),
    "full_like overflow": (lambda L: L.full_like(L.ones(2, dtype=L.uint8), 300), ["overflow"]),
    "full_like input checked first": (lambda L: L.full_like(None, 2 ** 70), ["input"]),
    "rand_like int64": (lambda L: L.rand_like(L.ones(2, dtype=L.int64)), ['"check_uniform_bounds"', "Long"]),
    "rand_like dtype=int64": (lambda L: L.rand_like(L.ones(2), dtype=L.int64), ["check_uniform_bounds", "Long"]),
    "rand_like bool": (lambda L: L.rand_like(L.ones(2, dtype=L.bool)), ["check_uniform_bounds", "Bool"]),
    "rand_like empty int64": (lambda L: L.rand_like(L.ones(0, dtype=L.int64)), ["check_uniform_bounds", "Long"]),
    "randn_like int64": (lambda L: L.randn_like(L.ones(2), dtype=L.int64), ['"normal_kernel_cpu"', "Long"]),
    "randn_like int64 input": (lambda L: L.randn_like(L.ones(2, dtype=L.int64)), ["normal_kernel_cpu", "Long"]),
    "randn_like uint8": (lambda L: L.randn_like(L.ones(2, dtype=L.uint8)), ["normal_kernel_cpu", "Byte"]),
    "randn_like empty int64 requires grad": (lambda L: L.randn_like(L.ones(0, dtype=L.int64), requires_grad=True),
                                             ["floating point"]),
    "rand_like positional int": (lambda L: L.rand_like(L.ones(2), 2), ["invalid combination", "got (Tensor, int)"]),
    "rand_like dtype str": (lambda L: L.rand_like(L.ones(2), dtype="a"), ["invalid combination", "dtype=str"]),
    "rand_like requires_grad int": (lambda L: L.rand_like(L.ones(2), requires_grad=1),
                                    ["invalid combination", "requires_grad=int"]),
    "randn_like bad keyword": (lambda L: L.randn_like(L.ones(2), foo=1), ["invalid combination", "foo=int"]),
    "randn_like positional dtype": (lambda L: L.randn_like(L.ones(2), L.int64),
                                    ["invalid combination", "got (Tensor, torch.dtype)"]),
    "rand_like list": (lambda L: L.rand_like([1.0]), ["argument 'input'", "must be Tensor, not list"]),
    "randint_like no high": (lambda L: L.randint_like(L.ones(2)), ["invalid combination", "got (Tensor)"]),
    "randint_like None": (lambda L: L.randint_like(L.ones(2), None), ["invalid combination", "NoneType"]),
    "randint_like high=None": (lambda L: L.randint_like(L.ones(2), high=None),
                               ["invalid combination", "high=NoneType"]),
    "randint_like float": (lambda L: L.randint_like(L.ones(2), 2.5), ["invalid combination", "got (Tensor, float)"]),
    "randint_like bool": (lambda L: L.randint_like(L.ones(2), True), ["invalid combination", "got (Tensor, bool)"]),
    "randint_like low= only": (lambda L: L.randint_like(L.ones(2), low=5), ["invalid combination", "low=int"]),
    "randint_like high None": (lambda L: L.randint_like(L.ones(2), 2, None),
                               ["invalid combination", "got (Tensor, int, NoneType)"]),
    "randint_like low None": (lambda L: L.randint_like(L.ones(2), None, 5),
                              ["invalid combination", "got (Tensor, NoneType, int)"]),
    "randint_like low=None": (lambda L: L.randint_like(L.ones(2), low=None, high=5),
                              ["invalid combination", "low=NoneType"]),
    "randint_like low twice": (lambda L: L.randint_like(L.ones(2), 5, low=2), ["invalid combination", "low=int"]),
    "randint_like three bounds": (lambda L: L.randint_like(L.ones(2), 1, 2, 3),
                                  ["invalid combination", "got (Tensor, int, int, int)"]),
    "randint_like float low": (lambda L: L.randint_like(L.ones(2), 2.0, 5), ["invalid combination", "float"]),
    "randint_like float tensor with low": (lambda L: L.randint_like(L.ones(2), 2, L.tensor(5.0)),
                                           ["invalid combination", "got (Tensor, int, Tensor)"]),
    "randint_like str": (lambda L: L.randint_like(L.ones(2), "a"), ["invalid combination", "str"]),
    "randint_like list input": (lambda L: L.randint_like([1.0], 5), ["invalid combination", "got (list, int)"]),
    "randint_like dtype str": (lambda L: L.randint_like(L.ones(2), 5, dtype="a"), ["invalid combination", "dtype=str"]),
    "randint_like bad keyword": (lambda L: L.randint_like(L.ones(2), 5, foo=1), ["invalid combination", "foo=int"]),
    "randint_like keywords only": (lambda L: L.randint_like(high=5), ["invalid combination", "high=int"]),
    "randint_like 1-d tensor high": (lambda L: L.randint_like(L.ones(2), L.tensor([5])), ["scalar tensor"]),
    "randint_like tensor high empty range": (lambda L: L.randint_like(L.ones(2), L.tensor(0.5)), ["from", "to"]),
    "randint_like empty range": (lambda L: L.randint_like(L.ones(2), 3, 3), ["from", "to"]),
    "randint_like overflow": (lambda L: L.randint_like(L.ones(2), 2 ** 63), ["Overflow"]),
    "randint_like int requires grad": (lambda L: L.randint_like(L.ones(2, dtype=L.int64), 5, requires_grad=True),
                                       ["floating point"]),
}


@pytest.mark.parametrize("fn,words", LIKE_ERRORS.values(), ids=LIKE_ERRORS.keys())
def test_like_errors_match_torch(fn, words):
    assert_same_exact_error(fn, *words)


def test_randint_like_bounds_and_keywords():
    for fn in (lambda L: L.randint_like(L.ones(200), 3), lambda L: L.randint_like(L.ones(200), 2, 5),
               lambda L: L.randint_like(L.ones(200), low=2, high=5), lambda L: L.randint_like(L.ones(200), high=4),
               lambda L: L.randint_like(L.ones(200), L.tensor(4)), lambda L: L.randint_like(L.ones(200), 2, high=5),
               lambda L: L.randint_like(L.ones(200), L.tensor(4.7)),
               lambda L: L.randint_like(L.ones(200), high=L.tensor(3.0)),
               lambda L: L.randint_like(L.ones(200), L.tensor(True)),
               lambda L: L.randint_like(L.ones(200, dtype=L.int64), L.tensor(4.0), dtype=L.int32, requires_grad=False),
               lambda L: L.randint_like(L.ones(200), 2, 5, generator=None)):
        expected, got = fn(torch), fn(fg)
        assert _describe(got, values=False) == _describe(expected, values=False)
        lo, hi = expected.min().item(), expected.max().item()  # torch's range (seeded: both ends drawn)
        assert lo <= got.min().item() and got.max().item() <= hi


# ------------------------------------------------------------------ rand/randn: overloads and dtypes
RANDOM_ERRORS = {
    "rand int64": (lambda L: L.rand(2, dtype=L.int64), ['"check_uniform_bounds" not implemented for', "Long"]),
    "rand bool": (lambda L: L.rand(2, 3, dtype=L.bool), ["check_uniform_bounds", "Bool"]),
    "rand empty int64": (lambda L: L.rand(0, dtype=L.int64), ["check_uniform_bounds", "Long"]),
    "rand int64 requires grad": (lambda L: L.rand(2, dtype=L.int64, requires_grad=True), ["check_uniform_bounds"]),
    "randn int64": (lambda L: L.randn(2, dtype=L.int64), ['"normal_kernel_cpu" not implemented for', "Long"]),
    "randn int32 size=": (lambda L: L.randn(size=(2,), dtype=L.int32), ["normal_kernel_cpu", "Int"]),
    "randn int64 requires grad": (lambda L: L.randn(2, dtype=L.int64, requires_grad=True), ["normal_kernel_cpu"]),
    "randn empty int64 requires grad": (lambda L: L.randn(0, dtype=L.int64, requires_grad=True), ["floating point"]),
    "rand negative int64": (lambda L: L.rand(-1, dtype=L.int64), ["negative dimension -1"]),
    "rand no size": (lambda L: L.rand(), ["rand()", "invalid combination", "got ()"]),
    "rand dtype str": (lambda L: L.rand(2, dtype="a"), ["invalid combination", "got (int, dtype=str)"]),
    "rand requires_grad int": (lambda L: L.rand(2, requires_grad=1), ["invalid combination", "requires_grad=int"]),
    "rand bad keyword": (lambda L: L.rand(2, foo=1), ["invalid combination", "foo=int"]),
    "randn names": (lambda L: L.randn(2, names=None), ["randn()", "invalid combination", "names=NoneType"]),
    "rand float first": (lambda L: L.rand(2.0, 3), ["invalid combination", "got (float, int)"]),
    "rand float tuple and dtype": (lambda L: L.rand((2.0,), dtype=L.float32), ["invalid combination", "tuple"]),
    "rand size= int and dtype": (lambda L: L.rand(size=2, dtype=L.float32), ["invalid combination", "size=int"]),
    # one overload takes a single argument: its own error, as torch's
    "rand str": (lambda L: L.rand("a"), ["argument 'size'", "tuple of ints", "str"]),
    "randn float": (lambda L: L.randn(2.0), ["argument 'size'", "tuple of ints", "float"]),
    "rand dtype only": (lambda L: L.rand(dtype=L.float32), ["size"]),
    # a size element after the overload is chosen: torch's own error
    "rand float element": (lambda L: L.rand(2, 2.0), ["failed to unpack", "pos 2"]),
    "randn float element and dtype": (lambda L: L.randn((2, 2.0), dtype=L.float64), ["failed to unpack", "pos 2"]),
    "rand overflow element": (lambda L: L.rand(2, 2 ** 63), ["Overflow"]),
}


@pytest.mark.parametrize("fn,words", RANDOM_ERRORS.values(), ids=RANDOM_ERRORS.keys())
def test_random_errors_match_torch(fn, words):
    assert_same_exact_error(fn, *words)


@pytest.mark.parametrize("fn", [
    lambda L: L.randn(0, dtype=L.int64),  # torch's normal kernel is not run for an empty result
    lambda L: L.randn(2, 0, dtype=L.bool),
    lambda L: L.randn(size=(0,), dtype=L.int32, requires_grad=None),
    lambda L: L.randn_like(L.ones(0, dtype=L.int64)),
    lambda L: L.randn_like(L.ones(3, 0).t(), dtype=L.uint8),
    lambda L: L.rand(2, 3, generator=None, dtype=L.float64, requires_grad=True),
    lambda L: L.randn(L.Size([2, 3])),
    lambda L: L.rand_like(L.ones(2, 3), generator=None),
    lambda L: L.randn_like(L.ones(2, 3).t(), generator=None, dtype=L.float64),
], ids=["randn empty int64", "randn empty bool", "randn empty size=", "randn_like empty int64",
        "randn_like empty uint8", "rand generator=None", "randn Size", "rand_like generator=None",
        "randn_like generator=None"])
def test_random_functions_match_torch(fn):
    assert_same_tensor(fn, values=False)


# ------------------------------------------------------------------ memory format objects
def test_memory_format_objects():
    names = ["preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]
    objs = [getattr(fg, n) for n in names]
    assert all(isinstance(o, fg.memory_format) for o in objs)
    assert len(set(objs)) == 4 and objs[0] == fg.preserve_format and objs[0] != objs[1]
    assert [repr(o).split(".")[-1] for o in objs] == names
    assert [pickle.loads(pickle.dumps(o)) for o in objs] == objs
    with pytest.raises(TypeError):
        fg.memory_format()


@pytest.mark.parametrize("fn,words", [
    (lambda L: L.empty(2, 3, memory_format=L.preserve_format), ["Preserve"]),
    (lambda L: L.empty(2, 3, memory_format=L.channels_last), ["rank 4"]),
    (lambda L: L.empty(2, memory_format="a"), ["memory_format"]),
], ids=["preserve", "channels_last of 2-d", "str"])
def test_empty_memory_format_errors_match_torch(fn, words):
    assert_same_error(fn, *words)


def test_empty_memory_format_matches_torch():
    for fn in (lambda L: L.empty(2, 3, 4, 5, memory_format=L.channels_last),
               lambda L: L.empty(size=(2, 3, 4, 5, 6), memory_format=L.channels_last_3d),
               lambda L: L.empty(2, 3, memory_format=L.contiguous_format),
               lambda L: L.empty(2, 3, memory_format=None)):
        assert_same_tensor(fn, values=False)


@pytest.mark.skipif(AGAINST_TORCH, reason="checks ferrograd's own exports")
def test_memory_formats_are_exported():
    import ferrograd
    for n in ("memory_format", "preserve_format", "contiguous_format", "channels_last", "channels_last_3d"):
        assert getattr(ferrograd, n) is getattr(ferrograd._C, n)


# ---- tensor() from plain Python data (the Rust path, `_C._tensor_plain`, and its hand-offs) ----

class _IntLike(int):
    pass


class _FloatLike(float):
    pass


PLAIN_DATA = {
    "float": 0.5, "int": 3, "bool": True, "neg_zero": -0.0, "nan": float("nan"), "inf": float("-inf"),
    "list": [1.0, 2.5, -3.0], "ints": [1, 2, 3], "bools": [True, False], "mixed": [1, 2.5, True],
    "int_bool": [1, True], "nested": [[1.0, 2.0], [3.0, 4.0]], "tuples": ((1, 2), (3, 4)),
    "list_of_tuples": [(1.5, 2), (3, 4)], "empty": [], "empty_rows": [[], []], "deep": [[[1], [2]], [[3], [4]]],
    "big_int": [2 ** 62 + 1, 1], "int_to_f32_rounding": [2 ** 53 + 1, 2 ** 24 + 1], "f32_overflow": [1e39, -1e39],
    "tiny": [1e-46, 3e-39], "huge_int_in_floats": [1.0, 2 ** 70], "int_subclass": [_IntLike(4), 5],
    "float_subclass": [_FloatLike(1.5), 2.0], "long_row": list(range(-500, 500)),
}
PLAIN_DTYPES = [None, "float32", "float64", "int64", "bool", "int32", "float16"]


def _plain(L, data, dtype):
    t = L.tensor(data, dtype=None if dtype is None else getattr(L, dtype))
    return str(t.dtype).split(".")[-1], tuple(t.shape), t.tolist()


@pytest.mark.parametrize("dtype", PLAIN_DTYPES)
@pytest.mark.parametrize("data", PLAIN_DATA.values(), ids=PLAIN_DATA.keys())
def test_tensor_from_plain_data_matches_torch(data, dtype):
    try:
        expected = _plain(torch, data, dtype)
    except Exception:
        assert_same_error(lambda L: _plain(L, data, dtype))
        return
    got = _plain(fg, data, dtype)
    assert got[:2] == expected[:2]
    import math
    flat = lambda v: [x for e in v for x in flat(e)] if isinstance(v, list) else [v]
    assert all((isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(flat(got[2]), flat(expected[2]))), (got, expected)
    assert len(flat(got[2])) == len(flat(expected[2]))


# (complex data is left out: ferrograd has no complex dtypes, and refuses it with a TypeError)
PLAIN_ERRORS = {
    "ragged": ([[1, 2], [3]], None), "mis_nested": ([[1, 2], 3], None), "seq_at_leaf": ([1, [2]], None),
    "str": (["a"], None), "nan_to_int": ([float("nan")], "int64"), "inf_to_int": ([float("inf")], "int64"),
    "float_beyond_int64": ([1e19], "int64"), "int_beyond_int64": ([2 ** 64], None), "str_later": ([1, "a"], None),
    "strs": (["ab", "c"], None), "str_alone": ("a", None), "bytes": ([b"a"], None),
    "none": ([None], None), "int_beyond_int64_float": ([2 ** 64], "float32"),
}


@pytest.mark.parametrize("data,dtype", PLAIN_ERRORS.values(), ids=PLAIN_ERRORS.keys())
def test_tensor_from_plain_data_errors_match_torch(data, dtype):
    try:
        expected = _plain(torch, data, dtype)
    except Exception:
        assert_same_error(lambda L: _plain(L, data, dtype))
        return
    assert _plain(fg, data, dtype) == expected


def test_tensor_from_plain_data_is_a_fresh_leaf():
    for L in (fg, torch):
        data = [1.0, 2.0]
        t = L.tensor(data, requires_grad=True)
        data[0] = 9.0
        assert t.tolist() == [1.0, 2.0] and t.is_leaf and t.requires_grad and t.grad_fn is None
        t.sum().backward()
        assert t.grad.tolist() == [1.0, 1.0]


def _like_result(fn):
    try:
        t = fn()
    except Exception as e:  # noqa: BLE001 (the kind is compared)
        return type(e).__name__
    return _describe(t)


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool"])
def test_like_common_calls_match_torch(dtype):
    """f(input) and full_like(input, value), made in one call into the engine: dtype, strides of a
    transposed input, no gradient flag; a fill value of each kind (an int beyond int64, a float that
    overflows the dtype, NaN into an int: the general path's checks)."""
    for L in (fg, torch):
        L.manual_seed(0)
    for name in ("zeros_like", "ones_like", "full_like"):
        for v in ((), (2.0,), (3,), (True,), (-(2 ** 63),), (2 ** 70,), (1e300,), (float("nan"),), ("a",)):
            if (name == "full_like") != bool(v):
                continue
            got = [_like_result(lambda: getattr(L, name)(L.ones(3, 2, dtype=getattr(L, dtype)).t(), *v))
                   for L in (fg, torch)]
            assert repr(got[0]) == repr(got[1]), (name, v)
    for name in ("empty_like", "rand_like", "randn_like"):
        got = [_like_result(lambda: getattr(L, name)(L.ones(3, 2, dtype=getattr(L, dtype), requires_grad=dtype == "float32").t()))
               for L in (fg, torch)]
        got = [g if isinstance(g, str) else {k: v for k, v in g.items() if k != "values"} for g in got]
        assert got[0] == got[1], name


def test_like_keywords_and_non_tensors_take_the_general_path():
    for name in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
        for L in (fg, torch):
            assert tuple(getattr(L, name)(input=L.ones(2, 3)).shape) == (2, 3)
            assert getattr(L, name)(L.ones(2), dtype=L.float64).dtype == L.float64
            assert getattr(L, name)(L.ones(2), requires_grad=True).requires_grad
        assert_same_error(lambda L: getattr(L, name)([1.0]), "must be Tensor")
        assert_same_error(lambda L: getattr(L, name)(L.ones(2), L.float64))
    assert fg.full_like(input=fg.ones(2), fill_value=2).tolist() == [2.0, 2.0]
    p = fg.nn.Parameter(fg.ones(2))
    assert type(fg.zeros_like(p)) is fg.Tensor and not fg.zeros_like(p).requires_grad


# ------------------------------------------------------------------ logspace
LOGSPACE = {
    "default": lambda L: L.logspace(0, 2, 3),
    "int64": lambda L: L.logspace(0, 2, 3, dtype=L.int64),
    "base 2 float64": lambda L: L.logspace(-1, 1, 5, base=2.0, dtype=L.float64),
    "one step": lambda L: L.logspace(0.5, 1.0, 1),
    "no steps": lambda L: L.logspace(0, 1, 0),
    "requires_grad": lambda L: L.logspace(0, 1, 3, requires_grad=True),
    "many float32": lambda L: L.logspace(-3, 3, 50),
    "descending base 3": lambda L: L.logspace(1.5, -2.25, 17, base=3.0, dtype=L.float64),
    "tensor bounds": lambda L: L.logspace(L.tensor(0.0), L.tensor(1.0), 2),
    "keywords": lambda L: L.logspace(start=0, end=1, steps=4, base=5),
}


@pytest.mark.parametrize("name", list(LOGSPACE))
def test_logspace(name):
    assert_same_tensor(LOGSPACE[name])


@pytest.mark.parametrize("call,words", [
    (lambda L: L.logspace(0, 1, -1), ("steps", "non-negative")),
    (lambda L: L.logspace(0, 1, 2.5), ("invalid combination",)),
    (lambda L: L.logspace("a", 1, 2), ("invalid combination",)),
    (lambda L: L.logspace(0, 1, 2, "x"), ("invalid combination",)),
], ids=["negative steps", "float steps", "str start", "str base"])
def test_logspace_errors(call, words):
    assert_same_exact_error(call, *words)


# ------------------------------------------------------------------ layout= and pin_memory=
LAYOUT_OK = {
    "zeros": lambda L: L.zeros(2, 3, layout=L.strided, pin_memory=False),
    "ones": lambda L: L.ones((2,), layout=None),
    "empty": lambda L: L.empty(2, pin_memory=False, layout=L.strided).zero_(),
    "full": lambda L: L.full((2,), 1.5, layout=L.strided, pin_memory=False),
    "arange": lambda L: L.arange(1, 4, layout=L.strided, pin_memory=False),
    "linspace": lambda L: L.linspace(0, 1, 3, layout=L.strided),
    "logspace": lambda L: L.logspace(0, 1, 3, layout=L.strided),
    "eye": lambda L: L.eye(2, layout=L.strided, pin_memory=False),
    "rand": lambda L: L.rand(2, layout=L.strided, pin_memory=False) * 0,
    "randn": lambda L: L.randn(2, layout=None) * 0,
    "randint": lambda L: L.randint(1, 2, (3,), layout=L.strided, pin_memory=False),
    "zeros_like": lambda L: L.zeros_like(L.ones(2, 3), layout=L.strided),
    "ones_like": lambda L: L.ones_like(L.ones(2), layout=None),
    "empty_like": lambda L: L.empty_like(L.ones(2), layout=L.strided).zero_(),
    "full_like": lambda L: L.full_like(L.ones(2), 7, layout=L.strided),
    "rand_like": lambda L: L.rand_like(L.ones(2), layout=L.strided) * 0,
    "randn_like": lambda L: L.randn_like(L.ones(2), layout=L.strided) * 0,
    "randint_like": lambda L: L.randint_like(L.ones(2), 1, 2, layout=L.strided),
}


@pytest.mark.parametrize("name", list(LAYOUT_OK))
def test_strided_layout_and_unpinned_memory_accepted(name):
    assert_same_tensor(LAYOUT_OK[name])


LAYOUT_BAD = {
    "zeros layout int": (lambda L: L.zeros(2, layout=5), "argument 'layout' must be torch.layout, not int"),
    # (arange and randint have overloads: torch names the combination, ferrograd the argument)
    "arange layout str": (lambda L: L.arange(3, layout="strided"), "layout"),
    "full pin_memory int": (lambda L: L.full((2,), 1.0, pin_memory=1), "argument 'pin_memory' must be bool, not int"),
    "zeros_like layout int": (lambda L: L.zeros_like(L.ones(2), layout=5), "argument 'layout' must be torch.layout"),
    "randint pin_memory str": (lambda L: L.randint(3, (2,), pin_memory="no"), "pin_memory"),
}


@pytest.mark.parametrize("name", list(LAYOUT_BAD))
def test_layout_and_pin_memory_type_errors(name):
    fn, words = LAYOUT_BAD[name]
    assert_same_exact_error(fn, words)


@pytest.mark.skipif(torch.cuda.is_available() or fg.cuda.is_available(), reason="pinning needs no device here")
def test_pin_memory_needs_a_device():
    for fn in (lambda L: L.zeros(2, pin_memory=True), lambda L: L.arange(3, pin_memory=True),
               lambda L: L.randn(2, pin_memory=True)):
        assert_same_exact_error(fn, "Found no NVIDIA driver")


# ------------------------------------------------------------------ arange's two overloads
ARANGE_OK = {
    "end": lambda L: L.arange(5),
    "end=": lambda L: L.arange(end=5),
    "end= float": lambda L: L.arange(end=2.5),
    "start end": lambda L: L.arange(1, 4),
    "start end=": lambda L: L.arange(1, end=4),
    "start= end=": lambda L: L.arange(start=1, end=4),
    "start end step": lambda L: L.arange(1, 9, 3),
    "start end step=": lambda L: L.arange(1, 9, step=3),
    "all keywords": lambda L: L.arange(start=0.5, end=2, step=0.5),
    "end= dtype": lambda L: L.arange(end=3, dtype=L.float64),
}


@pytest.mark.parametrize("name", list(ARANGE_OK))
def test_arange_overloads(name):
    assert_same_tensor(ARANGE_OK[name])


@pytest.mark.parametrize("fn", [lambda L: L.arange(start=1), lambda L: L.arange(), lambda L: L.arange(end=4, step=2),
                                lambda L: L.arange(5, step=2), lambda L: L.arange(1, 2, 3, 4),
                                lambda L: L.arange(1, start=2)])
def test_arange_bad_calls_are_type_errors(fn):
    assert error_kind(raised(fn, fg)) == error_kind(raised(fn, torch)) == "TypeError"
