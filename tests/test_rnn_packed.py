"""nn.utils.rnn against torch: PackedSequence, pack_padded_sequence / pad_packed_sequence / pad_sequence /
pack_sequence / unpad_sequence / unpack_sequence (values, batch sizes, permutations, gradients, errors);
RNN/LSTM/GRU on packed input (multi-layer, bidirectional, unsorted batches, given states) and LSTM's
proj_size, with torch's weights copied in: outputs, final states and every gradient."""
import warnings

import numpy as np
import pytest
import torch

from conftest import AGAINST_TORCH, fg
from parity import In, assert_tensor_close, check_op, same
from test_nn import _error


def R(L):
    return L.nn.utils.rnn


def V(a, grad=None):
    return In(value=np.asarray(a, dtype=np.float64), grad=grad)


# ---------------------------------------------------------------- packing and padding functions

PACKING = [
    ("pack_sorted", lambda L, x: R(L).pack_padded_sequence(x, [4, 3, 1]).data, [(4, 3, 2)]),
    ("pack_lengths_tensor_unsorted", lambda L, x: R(L).pack_padded_sequence(
        x, L.tensor([2, 4, 1]), enforce_sorted=False).data, [(4, 3, 2)]),
    ("pack_batch_first_ties", lambda L, x: R(L).pack_padded_sequence(
        x, (2, 3, 3, 1, 3), batch_first=True, enforce_sorted=False).data, [(5, 3, 2)]),
    ("pack_no_trailing_dims", lambda L, x: R(L).pack_padded_sequence(x, [3, 3, 2]).data, [(3, 3)]),
    ("pack_shorter_than_padding", lambda L, x: R(L).pack_padded_sequence(x, [2, 1], enforce_sorted=False).data,
     [(5, 2, 3)]),
    ("pack_noncontiguous", lambda L, x: R(L).pack_padded_sequence(x, [3, 2, 2, 1], batch_first=True).data,
     [In((4, 3, 2), layout="T")]),
    ("roundtrip", lambda L, x: R(L).pad_packed_sequence(R(L).pack_padded_sequence(x, [2, 4, 3], enforce_sorted=False)),
     [(4, 3, 2)]),
    ("roundtrip_batch_first_total_length_padding_value", lambda L, x: R(L).pad_packed_sequence(
        R(L).pack_padded_sequence(x, [1, 3], batch_first=True, enforce_sorted=False), batch_first=True,
        padding_value=-2.5, total_length=6), [(2, 3, 2)]),
    ("pad_sequence", lambda L, a, b, c: (R(L).pad_sequence([a, b, c]), R(L).pad_sequence((a, b, c), batch_first=True,
                                                                                       padding_value=1.5)),
     [(2, 3), (4, 3), (1, 3)]),
    ("pad_sequence_left", lambda L, a, b: (R(L).pad_sequence([a, b], padding_side="left"),
                                           R(L).pad_sequence([a, b], batch_first=True, padding_side="left",
                                                             padding_value=-1.0)), [(2, 2, 2), (3, 2, 2)]),
    ("pad_sequence_1d_and_tensor_input", lambda L, a, m: (R(L).pad_sequence([a, a[:2]]), R(L).pad_sequence(m)),
     [(3,), (2, 3)]),
    ("pack_sequence", lambda L, a, b, c: (R(L).pack_sequence([a, b, c]).data,
                                          R(L).pack_sequence([c, a, b], enforce_sorted=False).data),
     [(4, 2), (3, 2), (1, 2)]),
    ("unpack_sequence", lambda L, a, b, c: R(L).unpack_sequence(R(L).pack_sequence([b, c, a], enforce_sorted=False)),
     [(4, 2), (2, 2), (3, 2)]),
    # (torch's unpad_sequence transposes a time-major input in place: it is given a non-leaf here)
    ("unpad_sequence", lambda L, x: (R(L).unpad_sequence(x * 1, L.tensor([3, 1, 2])),
                                     R(L).unpad_sequence(x, L.tensor([2, 3, 3]), batch_first=True)), [(3, 3, 2)]),
]


@pytest.mark.parametrize("fn,specs", [pytest.param(f, s, id=i) for i, f, s in PACKING])
def test_packing_parity(fn, specs):
    check_op(fn, *specs)


def _packed_fields(p):
    return (p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices)


@pytest.mark.parametrize("fn", [
    lambda L, x: _packed_fields(R(L).pack_padded_sequence(x, [3, 3, 1])),
    lambda L, x: _packed_fields(R(L).pack_padded_sequence(x, L.tensor([1.0, 3.0, 2.0]), enforce_sorted=False)),
    lambda L, x: _packed_fields(R(L).pack_sequence([x[0], x[1, :2], x[2, :1]])),
    lambda L, x: R(L).pad_packed_sequence(R(L).pack_padded_sequence(x, [1, 3, 2], enforce_sorted=False))[1],
    lambda L, x: R(L).invert_permutation(L.tensor([2, 0, 3, 1])),
])
def test_packed_sequence_fields(fn):
    """batch_sizes, the permutations and the returned lengths: int64 tensors with torch's values."""
    check_op(fn, V(np.arange(18.0).reshape(3, 3, 2), grad=False))


def test_packed_sequence_class():
    def run(L):
        x = L.tensor(np.arange(12.0).reshape(3, 2, 2), dtype=L.float32)
        p = R(L).pack_padded_sequence(x, [1, 3], enforce_sorted=False)
        legacy = R(L).PackedSequence((p.data, p.batch_sizes))
        given = R(L).PackedSequence(p.data, p.batch_sizes, L.tensor([1, 0]))
        d = p.double()
        return [type(p).__name__, isinstance(p, tuple), len(p), p._fields, p.is_cuda, p.to("cpu") is p,
                p.to(L.float32) is p, str(d.data.dtype).split(".")[-1], str(d.float().data.dtype).split(".")[-1],
                str(p.long().data.dtype).split(".")[-1], str(p.int().data.dtype).split(".")[-1],
                d.sorted_indices.tolist(), d.batch_sizes.tolist(), d.data.tolist(), p.cpu() is p,
                legacy.batch_sizes.tolist(), legacy.sorted_indices, given.unsorted_indices.tolist(),
                R(L).invert_permutation(None), p._replace(sorted_indices=None).sorted_indices,
                type(p._replace(sorted_indices=None)).__name__]
    same(run)


def test_pad_sequence_mixed_dtypes_take_the_first():
    same(lambda L: [str(R(L).pad_sequence([L.ones(2, dtype=L.float64), L.ones(3)]).dtype).split(".")[-1],
                    R(L).pad_sequence([L.tensor([1, 2]), L.tensor([3])], padding_value=7).tolist()])


PACK_ERRORS = [
    lambda L: R(L).pack_padded_sequence(L.zeros(4, 3, 2), [4, 2, 3]),
    lambda L: R(L).pack_padded_sequence(L.zeros(4, 3, 2), [4, 3]),
    lambda L: R(L).pack_padded_sequence(L.zeros(4, 3, 2), [4, 3, 0]),
    lambda L: R(L).pack_padded_sequence(L.zeros(4, 3, 2), L.tensor([[4, 3, 1]])),
    lambda L: R(L).pack_padded_sequence(L.zeros(0, 3, 2), [1, 1, 1]),
    lambda L: R(L).pad_packed_sequence(R(L).pack_padded_sequence(L.zeros(4, 2), [3, 2]), total_length=2),
    lambda L: R(L).pad_sequence([]),
    lambda L: R(L).pad_sequence([L.ones(2), L.ones(3)], padding_side="middle"),
    lambda L: R(L).pad_sequence(5),
    lambda L: R(L).pad_sequence([L.ones(2, 3), L.ones(3, 2)]),
    lambda L: R(L).pack_sequence([L.ones(2), L.ones(3)]),
    lambda L: R(L).unpad_sequence(L.ones(3, 2, requires_grad=True), L.tensor([3, 1])),
    lambda L: R(L).unpad_sequence(L.ones(2, 3), L.tensor([1, 2, 1]), batch_first=True),
]


@pytest.mark.parametrize("fn", PACK_ERRORS)
def test_packing_errors_as_torch(fn):
    expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got[0] == expected[0], (got, expected)
    if got[0] != "RuntimeError" or "size of tensor" not in expected[1]:
        assert got[1] == expected[1], (got, expected)


@pytest.mark.skipif(AGAINST_TORCH, reason="torch reads past the input instead")
def test_pack_length_beyond_the_padding_is_an_error():
    """torch reads past the input here (undefined values); ferrograd refuses."""
    with pytest.raises(RuntimeError, match="larger than"):
        fg.nn.utils.rnn.pack_padded_sequence(fg.zeros(4, 3, 2), [5, 3, 1])


# ---------------------------------------------------------------- recurrent layers on packed input


def _copy(tm, fm):
    fm.load_state_dict({k: fg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _compare_params(tm, fm, rtol=1e-7, atol=1e-9):
    t_params, f_params = dict(tm.named_parameters()), dict(fm.named_parameters())
    assert list(t_params) == list(f_params)
    for name, tp in t_params.items():
        assert_tensor_close(tp.grad, f_params[name].grad, rtol, atol, f"grad of {name}", check_grad_flag=False)


def _run_packed(L, module, x, lengths, hx, batch_first, enforce_sorted):
    packed = R(L).pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
    out, state = module(packed, hx)
    states = state if isinstance(state, tuple) else (state,)
    padded, out_lengths = R(L).pad_packed_sequence(out, batch_first=batch_first, padding_value=0.5)
    return out, padded, out_lengths, states


PACKED_RNNS = [
    # (name, make, input (T, N, in), lengths, with initial state, batch_first, enforce_sorted)
    ("rnn_tanh", lambda L: L.nn.RNN(3, 4), (5, 3, 3), [5, 3, 2], False, False, True),
    ("rnn_relu_2layer_bi_unsorted_h0", lambda L: L.nn.RNN(3, 4, 2, nonlinearity="relu", bidirectional=True),
     (4, 4, 3), [2, 4, 1, 4], True, False, False),
    ("gru_batch_first_unsorted", lambda L: L.nn.GRU(2, 3, batch_first=True), (5, 3, 2), [3, 5, 1], False, True, False),
    ("gru_3layer_bi_nobias_h0", lambda L: L.nn.GRU(2, 3, 3, bias=False, bidirectional=True), (4, 3, 2), [4, 4, 2],
     True, False, True),
    ("lstm", lambda L: L.nn.LSTM(3, 4), (6, 3, 3), [6, 4, 1], False, False, True),
    ("lstm_2layer_bi_unsorted_state", lambda L: L.nn.LSTM(3, 4, 2, bidirectional=True), (5, 4, 3), [3, 5, 2, 5],
     True, False, False),
    ("lstm_proj_2layer_bi_batch_first_state", lambda L: L.nn.LSTM(3, 5, 2, batch_first=True, bidirectional=True,
                                                                  proj_size=2), (5, 4, 3), [2, 5, 5, 1], True, True,
     False),
    ("lstm_equal_lengths", lambda L: L.nn.LSTM(2, 3, bidirectional=True), (3, 2, 2), [3, 3], False, False, True),
]


@pytest.mark.parametrize("make,shape,lengths,with_state,batch_first,enforce_sorted",
                         [pytest.param(*c[1:], id=c[0]) for c in PACKED_RNNS])
def test_rnn_on_packed_input(make, shape, lengths, with_state, batch_first, enforce_sorted):
    """Packed output (data, batch_sizes, permutations), padded output, final states of each sequence at its
    own last step, and the gradients of the input, the initial states and every weight."""
    torch.manual_seed(0)
    tm, fm = make(torch).double(), make(fg).double()
    _copy(tm, fm)
    rng = np.random.default_rng(0)
    steps, batch, _ = shape
    x = rng.standard_normal((batch, steps, shape[2]) if batch_first else shape)
    t_x, f_x = torch.tensor(x, requires_grad=True), fg.tensor(x, requires_grad=True)
    t_hx = f_hx = None
    if with_state:
        dirs = 2 if tm.bidirectional else 1
        h_size = tm.proj_size or tm.hidden_size
        arrays = [rng.standard_normal((tm.num_layers * dirs, batch, h_size))]
        if isinstance(tm, torch.nn.LSTM):
            arrays.append(rng.standard_normal((tm.num_layers * dirs, batch, tm.hidden_size)))
        t_states = [torch.tensor(a, requires_grad=True) for a in arrays]
        f_states = [fg.tensor(a, requires_grad=True) for a in arrays]
        t_hx, f_hx = (tuple(t_states), tuple(f_states)) if len(arrays) == 2 else (t_states[0], f_states[0])
    t_res = _run_packed(torch, tm, t_x, lengths, t_hx, batch_first, enforce_sorted)
    f_res = _run_packed(fg, fm, f_x, lengths, f_hx, batch_first, enforce_sorted)
    assert type(f_res[0]).__name__ == "PackedSequence"
    for what, t, f in zip(("data", "batch_sizes", "sorted_indices", "unsorted_indices"), t_res[0], f_res[0]):
        if t is None:
            assert f is None, what
        else:
            assert_tensor_close(t, f, what=what)
    assert_tensor_close(t_res[1], f_res[1], what="padded output")
    assert_tensor_close(t_res[2], f_res[2], what="lengths")
    for i, (t, f) in enumerate(zip(t_res[3], f_res[3])):
        assert_tensor_close(t, f, what=f"final state {i}")
    # one backward through the padded output and the final states
    w = [rng.standard_normal(tuple(t.shape)) for t in (t_res[1], *t_res[3])]
    sum((t * torch.tensor(a)).sum() for t, a in zip((t_res[1], *t_res[3]), w)).backward()
    sum((f * fg.tensor(a)).sum() for f, a in zip((f_res[1], *f_res[3]), w)).backward()
    assert_tensor_close(t_x.grad, f_x.grad, what="grad of input", check_grad_flag=False)
    if with_state:
        for i, (t, f) in enumerate(zip(t_states, f_states)):
            assert_tensor_close(t.grad, f.grad, what=f"grad of initial state {i}", check_grad_flag=False)
    _compare_params(tm, fm)


def test_packed_matches_per_sequence_runs():
    """Each sequence's packed result equals running it alone (its true length, no padding)."""
    torch.manual_seed(0)
    m = fg.nn.GRU(2, 3, bidirectional=True).double()
    seqs = [fg.tensor(np.random.default_rng(i).standard_normal((n, 2))) for i, n in enumerate((2, 5, 3))]
    out, h = m(R(fg).pack_sequence(seqs, enforce_sorted=False))
    for b, (seq, piece) in enumerate(zip(seqs, R(fg).unpack_sequence(out))):
        alone, h_alone = m(seq)
        np.testing.assert_allclose(piece.detach().numpy(), alone.detach().numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(h[:, b].detach().numpy(), h_alone.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_packed_sequence_double_through_lstm():
    """A float32 PackedSequence made float64 with .double() runs through a float64 LSTM, as torch."""
    torch.manual_seed(0)
    tm, fm = torch.nn.LSTM(2, 3), fg.nn.LSTM(2, 3)
    _copy(tm, fm)

    def run(L, m):
        p = R(L).pack_sequence([L.ones(3, 2), L.ones(2, 2) * 0.5]).double()
        out, (h, c) = m.double()(p)
        return [out.data.detach(), h.detach(), c.detach()]
    same(lambda L: run(L, tm if L is torch else fm))


# ---------------------------------------------------------------- LSTM proj_size on padded input


def _lstm_all(L, module):
    class Wrap(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = module

        def forward(self, x, *hc):
            out, (h, c) = self.m(x, tuple(hc) if hc else None)
            return L.cat([out.reshape(-1), h.reshape(-1), c.reshape(-1)])
    return Wrap()


@pytest.mark.parametrize("make,inputs", [
    pytest.param(lambda L: _lstm_all(L, L.nn.LSTM(3, 4, proj_size=2).double()), [(5, 2, 3)], id="proj"),
    pytest.param(lambda L: _lstm_all(L, L.nn.LSTM(3, 6, 2, proj_size=3, bidirectional=True, batch_first=True).double()),
                 [(2, 4, 3), (4, 2, 3), (4, 2, 6)], id="proj_2layer_bi_batch_first_state"),
    pytest.param(lambda L: _lstm_all(L, L.nn.LSTM(3, 4, 2, bias=False, proj_size=1).double()), [(4, 3)],
                 id="proj_unbatched_nobias"),
])
def test_lstm_proj_size(make, inputs):
    from test_nn import check_module
    check_module(make, *inputs)


def test_lstm_proj_size_parameters_and_repr():
    same(lambda L: ([(k, tuple(v.shape)) for k, v in L.nn.LSTM(3, 5, 2, bidirectional=True, proj_size=2,
                                                                bias=False).state_dict().items()],
                    repr(L.nn.LSTM(3, 5, proj_size=2)), len(L.nn.LSTM(3, 5, 2, proj_size=2).all_weights),
                    [len(ws) for ws in L.nn.LSTM(3, 5, 2, proj_size=2).all_weights]))


RNN_ERRORS = [
    lambda L: L.nn.GRU(3, 4, proj_size=2),
    lambda L: L.nn.RNN(3, 4, proj_size=2),
    lambda L: L.nn.LSTM(3, 4, proj_size=4),
    lambda L: L.nn.LSTM(3, 4, proj_size=-1),
    lambda L: L.nn.LSTM(3, 4, proj_size=2)(L.zeros(5, 2, 3), (L.zeros(1, 2, 4), L.zeros(1, 2, 4))),
    lambda L: L.nn.LSTM(3, 4, proj_size=2)(L.zeros(5, 2, 3), (L.zeros(1, 2, 2), L.zeros(1, 2, 2))),
    lambda L: L.nn.LSTM(3, 4)(L.zeros(5, 2, 3), (L.zeros(2, 4), L.zeros(1, 2, 4))),
    lambda L: L.nn.GRU(3, 4)(L.zeros(5, 2, 3), L.zeros(1, 4)),
    lambda L: L.nn.GRU(3, 4)(L.zeros(3), L.zeros(1, 1, 4)),
    lambda L: L.nn.LSTM(3, 4)(L.zeros(0, 2, 3)),
    lambda L: L.nn.LSTM(3, 4)(L.zeros(5, 2, 3, dtype=L.float64)),
    lambda L: L.nn.GRU(3, 4)(R(L).pack_sequence([L.zeros(3, 3), L.zeros(2, 3)]), L.zeros(1, 3, 4)),
]


@pytest.mark.parametrize("fn", RNN_ERRORS)
def test_rnn_errors_as_torch(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected is not None and got is not None
    assert got == expected


def test_packed_input_size_mismatch_is_a_runtime_error():
    """(torch's message comes from its matrix product; ferrograd names the input size)"""
    fn = lambda L: L.nn.LSTM(3, 4)(R(L).pack_sequence([L.zeros(3, 2), L.zeros(2, 2)]))  # noqa: E731
    expected, got = _error(lambda: fn(torch)), _error(lambda: fn(fg))
    assert expected[0] == got[0] == "RuntimeError"


def test_dropout_warning_with_one_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        fg.nn.LSTM(3, 4, dropout=0.5)
