"""Recurrent layers: RNN, LSTM (with projections), GRU and their single-step cells.

Parameter names, shapes, registration order and initial distributions follow torch, so a torch
state_dict loads as is. A layer takes a padded batch (T, N, *) / (N, T, *), one unbatched sequence
(T, *), or a PackedSequence (nn.utils.rnn); each step is a composition of engine ops.

Note [packed recurrences]: a PackedSequence's sequences are sorted by decreasing length, so at step t
the running sequences are the first batch_sizes[t] rows. The forward direction drops the rows that
ended (keeping their state as their final state); the reverse direction starts at the last step with
the longest sequences and adds each shorter sequence's initial state when its last step comes up.
"""

import math
import numbers
import warnings

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _step(mode, gi, h, c, w_hh, b_hh, w_hr=None):
    """One step from the input's projection gi = x·W_ihᵀ + b_ih: returns (h', c') (c' is None except for LSTM).
    Gate orders as torch: LSTM i,f,g,o; GRU r,z,n. w_hr projects an LSTM's output (proj_size)."""
    gh = F.linear(h, w_hh, b_hh)
    if mode == "LSTM":
        i, f, g, o = (gi + gh).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        ir, iz, in_ = gi.chunk(3, -1)
        hr, hz, hn = gh.chunk(3, -1)
        r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
        n = (in_ + r * hn).tanh()
        return (1 - z) * n + z * h, None
    pre = gi + gh
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _rnn_cell(mode, x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step of a cell from its input x."""
    return _step(mode, F.linear(x, w_ih, b_ih), h, c, w_hh, b_hh)


def _run_direction(mode, gis, h0, c0, w_hh, b_hh, w_hr, batch_sizes, reverse):
    """Run one layer in one direction over the per-step input projections `gis`; returns (per-step outputs,
    final h, final c). With batch_sizes (packed input), step t runs the first batch_sizes[t] rows
    (Note [packed recurrences])."""
    lstm = mode == "LSTM"
    steps = len(gis)
    ys = [None] * steps
    if not reverse:
        h, c = h0, c0
        ended_h, ended_c = [], []
        for t in range(steps):
            rows = gis[t].shape[0]
            if batch_sizes is not None and rows < h.shape[0]:
                ended_h.append(h[rows:])
                h = h[:rows]
                if lstm:
                    ended_c.append(c[rows:])
                    c = c[:rows]
            h, c = _step(mode, gis[t], h, c, w_hh, b_hh, w_hr)
            ys[t] = h
        if ended_h:
            h = _C.cat([h, *reversed(ended_h)])
            c = _C.cat([c, *reversed(ended_c)]) if lstm else None
        return ys, h, c
    if batch_sizes is None:
        h, c = h0, c0
    else:
        last = gis[-1].shape[0] if steps else h0.shape[0]
        h, c = h0[:last], (c0[:last] if lstm else None)
    for t in range(steps - 1, -1, -1):
        rows = gis[t].shape[0]
        if rows > h.shape[0]:
            h = _C.cat([h, h0[h.shape[0]:rows]])
            if lstm:
                c = _C.cat([c, c0[c.shape[0]:rows]])
        h, c = _step(mode, gis[t], h, c, w_hh, b_hh, w_hr)
        ys[t] = h
    return ys, h, c


class RNNBase(Module):
    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=3)
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        dirs = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dtype = dtype or _C._get_default_dtype()
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for d in range(dirs):
                in_size = input_size if layer == 0 else real_hidden * dirs
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                shapes = [("weight_ih", (gate, in_size)), ("weight_hh", (gate, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                names = []
                for name, shape in shapes:
                    setattr(self, name + sfx, Parameter(_C.empty(shape, dtype=dtype, device=device)))
                    names.append(name + sfx)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self):
        """torch packs the weights into one buffer for cuDNN; ferrograd keeps them apart (a no-op)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def _weights(self, layer, d):
        sfx = f"_l{layer}" + ("_reverse" if d else "")
        get = lambda n: getattr(self, n + sfx, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _check_input(self, input, packed):
        weight = self.weight_ih_l0
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if packed else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")

    def _check_states(self, states, batch):
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        expected = [(self.num_layers * dirs, batch, real_hidden), (self.num_layers * dirs, batch, self.hidden_size)]
        for i, s in enumerate(states):
            if tuple(s.shape) != expected[i]:
                what = f"hidden[{i}]" if self.mode == "LSTM" else "hidden"
                raise RuntimeError(f"Expected {what} size {expected[i]}, got {list(s.shape)}")

    def _batched_states(self, hx, batched):
        """hx as a tuple of 3-D states (None stays None), checking its dims against the input's."""
        if hx is None:
            return None
        is_lstm = self.mode == "LSTM"
        states = tuple(hx) if is_lstm else (hx,)
        want = 3 if batched else 2
        if any(s.dim() != want for s in states):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            if is_lstm:
                dims = ", ".join(f"{s.dim()}-D" for s in states)
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got ({dims}) tensors")
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {states[0].dim()}-D tensor")
        return states if batched else tuple(s.unsqueeze(1) for s in states)

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            x, batch_sizes_t, sorted_indices, unsorted_indices = input
            batch_sizes = batch_sizes_t.tolist()
            batched = True
            self._check_input(x, packed=True)
            batch = batch_sizes[0]
            states = self._batched_states(hx, True)
            if states is not None and sorted_indices is not None:
                states = tuple(s.index_select(1, sorted_indices) for s in states)
        else:
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            batched = input.dim() == 3
            batch_sizes = sorted_indices = unsorted_indices = None
            states = self._batched_states(hx, batched)
            x = input if batched else input.unsqueeze(1)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
            self._check_input(x, packed=False)
            if x.shape[0] == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            batch = x.shape[1]
        dirs = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if states is None:
            h0 = _C.zeros((self.num_layers * dirs, batch, real_hidden), dtype=x.dtype, device=x.device)
            c0 = _C.zeros((self.num_layers * dirs, batch, self.hidden_size), dtype=x.dtype, device=x.device)
            states = (h0, c0) if is_lstm else (h0,)
        else:
            self._check_states(states, batch)
        h_n, c_n = [], []
        layer_in = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, d)
                # the input projections of every step in one product
                gi = F.linear(layer_in, w_ih, b_ih)
                gis = gi.split(batch_sizes, 0) if packed else gi.unbind(0)
                ys, h, c = _run_direction(self.mode, gis, states[0][k], states[1][k] if is_lstm else None, w_hh,
                                          b_hh, w_hr, batch_sizes, reverse=bool(d))
                outs.append(_C.cat(ys, 0) if packed else _C.stack(ys, 0))
                h_n.append(h)
                c_n.append(c)
            layer_in = outs[0] if dirs == 1 else _C.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, training=True)
        out = layer_in
        h_n = _C.stack(h_n, 0)
        c_n = _C.stack(c_n, 0) if is_lstm else None
        if packed:
            out = PackedSequence(out, batch_sizes_t, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = c_n.index_select(1, unsorted_indices) if is_lstm else None
        elif not batched:
            out, h_n = out.squeeze(1), h_n.squeeze(1)
            c_n = c_n.squeeze(1) if is_lstm else None
        elif self.batch_first:
            out = out.transpose(0, 1)
        return (out, (h_n, c_n)) if is_lstm else (out, h_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class LSTM(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class RNNCellBase(Module):
    def __init__(self, mode, input_size, hidden_size, bias, device=None, dtype=None):
        super().__init__()
        self.mode, self.input_size, self.hidden_size, self.bias = mode, input_size, hidden_size, bias
        gate = _GATES[mode] * hidden_size
        dtype = dtype or _C._get_default_dtype()
        self.weight_ih = Parameter(_C.empty((gate, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(_C.empty((gate, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(_C.empty(gate, dtype=dtype, device=device))
            self.bias_hh = Parameter(_C.empty(gate, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        is_lstm = self.mode == "LSTM"
        if hx is None:
            z = _C.zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)
            hx = (z, z) if is_lstm else z
        elif not batched:
            hx = tuple(s.unsqueeze(0) for s in hx) if is_lstm else hx.unsqueeze(0)
        h, c = (hx if is_lstm else (hx, None))
        h, c = _rnn_cell(self.mode, x, h, c, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if is_lstm else None
        return (h, c) if is_lstm else h


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias,
                         device, dtype)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)


__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
