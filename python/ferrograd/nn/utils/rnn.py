"""torch.nn.utils.rnn: batches of variable-length sequences, packed (PackedSequence) or padded.

A PackedSequence holds a batch sorted by decreasing length and interleaved by time step: `data` is
step 0 of every sequence, then step 1 of those that have one, and so on; `batch_sizes[t]` (an int64
CPU tensor) is how many sequences have a step t. `sorted_indices[j]` is the caller's batch index of the
j-th packed sequence (None when the caller's batch was already sorted) and `unsorted_indices` is its
inverse permutation.

Packing, unpacking and padding are each one `index_select` over the flattened input (for padding, over
the data with one padding row appended), so gradients flow through the engine's own rules.
"""

from collections.abc import Iterable
from typing import NamedTuple

from ... import _C
from ..._creation import tensor as _tensor
from ..._lazy import numpy as np


def _index(values, device):
    """An int64 index tensor from a numpy array (or list) of positions."""
    return _C.from_numpy(np.ascontiguousarray(values, dtype=np.int64)).to(device)


def invert_permutation(permutation):
    """The inverse of a permutation given as an index tensor (None stays None)."""
    if permutation is None:
        return None
    perm = permutation.tolist()
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _tensor(inverse, dtype=permutation.dtype, device=permutation.device)


class PackedSequence_(NamedTuple):
    data: _C.Tensor
    batch_sizes: _C.Tensor
    sorted_indices: _C.Tensor | None
    unsorted_indices: _C.Tensor | None


class PackedSequence(PackedSequence_):
    """The packed form of a batch of variable-length sequences; an RNN/LSTM/GRU accepts it as input and
    returns its output packed the same way. Build it with pack_padded_sequence or pack_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # the legacy form PackedSequence((data, batch_sizes))
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence: expected (data, batch_sizes) when batch_sizes is not given")
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never be created manually. "
                "They should be instantiated by functions like pack_sequence and pack_padded_sequences in "
                "nn.utils.rnn. https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        """This sequence with `data` replaced; the permutations follow data's device (batch_sizes stays on CPU)."""
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args, **kwargs):
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args, **kwargs):
        return self._with_data(self.data.cpu(*args, **kwargs))

    def pin_memory(self):
        return self._with_data(self.data.pin_memory())

    def is_pinned(self):
        return self.data.is_pinned()

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):
        return self.to(dtype=_C.int32)

    def short(self):
        return self.to(dtype=_C.int16)

    def char(self):
        return self.to(dtype=_C.int8)

    def byte(self):
        return self.to(dtype=_C.uint8)


def _lengths_list(lengths):
    """`lengths` (a sequence of ints or a tensor) as a list of ints, with torch's checks."""
    if not isinstance(lengths, _C.Tensor):
        lengths = _tensor(list(lengths), dtype=_C.int64)
    else:
        lengths = lengths.to(dtype=_C.int64)
    if lengths.dim() != 1 or lengths.device.type != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                           f"{lengths.device} Long tensor")
    return lengths.tolist()


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with batch_first) whose sequence b has lengths[b] steps."""
    lens = _lengths_list(lengths)
    if input.dim() < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.dim(), 1)}, "
                         f"{max(input.dim(), 1) - 1}], but got 1)")
    batch = input.shape[0 if batch_first else 1]
    steps = input.shape[1 if batch_first else 0]
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    if enforce_sorted:
        order = None
        sorted_lens = lens
    else:
        order = sorted(range(batch), key=lambda b: -lens[b])  # stable, as torch's sort of lengths
        sorted_lens = [lens[b] for b in order]
    if sorted_lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if any(a < b for a, b in zip(sorted_lens, sorted_lens[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
            "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
            "do not need ONNX exportability.")
    if sorted_lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a sequence length ({sorted_lens[0]}) is larger than the padded "
                           f"input's number of steps ({steps})")
    lens_np = np.asarray(sorted_lens, dtype=np.int64)
    alive = np.arange(sorted_lens[0])[:, None] < lens_np[None, :]  # (step, packed sequence)
    batch_sizes = alive.sum(1)
    t, j = np.nonzero(alive)  # step-major, as the packed data
    rows = np.asarray(order if order is not None else range(batch), dtype=np.int64)[j]
    # the flat (steps * batch) position of step t of the j-th packed sequence
    flat = rows * steps + t if batch_first else t * batch + rows
    trailing = tuple(input.shape[2:])
    data = input.reshape(steps * batch, *trailing).index_select(0, _index(flat, input.device))
    sorted_indices = None if order is None else _index(order, input.device)
    return PackedSequence(data, _C.from_numpy(batch_sizes.astype(np.int64)), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths as an int64 CPU tensor),
    in the caller's original batch order."""
    data, batch_sizes, _, unsorted_indices = sequence
    sizes = batch_sizes.tolist()
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    sizes = np.asarray(sizes, dtype=np.int64)
    batch = int(sizes[0]) if len(sizes) else 0
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    lens_sorted = (sizes[None, :] > np.arange(batch)[:, None]).sum(1)  # per packed sequence
    where = np.asarray(unsorted_indices.tolist() if unsorted_indices is not None else range(batch), dtype=np.int64)
    t = np.arange(steps)[:, None]  # (step, caller's batch index)
    j = where[None, :]
    inside = t < lens_sorted[j]
    src = np.where(inside, offsets[np.minimum(t, len(sizes) - 1)] + j, data.shape[0])  # data.shape[0]: the pad row
    flat = src.T.reshape(-1) if batch_first else src.reshape(-1)
    trailing = tuple(data.shape[1:])
    pad = _C.full((1, *trailing), padding_value, dtype=data.dtype, device=data.device)
    out = _C.cat([data, pad]).index_select(0, _index(flat, data.device))
    out = out.reshape(*((batch, steps) if batch_first else (steps, batch)), *trailing)
    lengths = _C.from_numpy(lens_sorted[where].astype(np.int64))
    return out, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padding with padding_value on
    the right (or on the left)."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("pad_sequence: expected each sequence to have at least one dimension, got a 0-d tensor")
    trailing = tuple(first.shape[1:])
    lens = np.asarray([s.shape[0] for s in sequences], dtype=np.int64)
    longest = int(lens.max())
    parts = [s.to(dtype=first.dtype).expand(int(n), *trailing) for s, n in zip(sequences, lens)]
    parts.append(_C.full((1, *trailing), padding_value, dtype=first.dtype, device=first.device))
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    start = np.zeros_like(lens) if padding_side == "right" else longest - lens
    t = np.arange(longest)[:, None]  # (step, sequence)
    inside = (t >= start[None, :]) & (t < (start + lens)[None, :])
    src = np.where(inside, offsets[None, :] + t - start[None, :], int(lens.sum()))  # lens.sum(): the pad row
    flat = src.T.reshape(-1) if batch_first else src.reshape(-1)
    out = _C.cat(parts).index_select(0, _index(flat, first.device))
    shape = (len(sequences), longest) if batch_first else (longest, len(sequences))
    return out.reshape(*shape, *trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences of a padded batch, each cut to its length (the inverse of pad_sequence).
    As torch, a time-major (batch_first=False) input is transposed in place to batch-major (except a
    non-leaf that requires grad, which ferrograd leaves as is)."""
    if not batch_first:
        if padded_sequences.requires_grad and not padded_sequences.is_leaf and _C.is_grad_enabled():
            # ferrograd cannot restride a tensor inside the graph in place: the caller's tensor stays as is
            padded_sequences = padded_sequences.transpose(0, 1)
        else:
            padded_sequences.transpose_(0, 1)
    out = []
    for seq, length in zip(padded_sequences, lengths, strict=True):
        out.append(seq.index_select(0, _C.arange(int(length), device=seq.device)))
    return out


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) (sorted by decreasing length unless enforce_sorted=False)."""
    lengths = _tensor([s.shape[0] for s in sequences], dtype=_C.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences of a PackedSequence, in the original order (the inverse of pack_sequence)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
    "unpad_sequence", "pack_sequence", "unpack_sequence",
]
