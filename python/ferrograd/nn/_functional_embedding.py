"""nn.functional.embedding_bag: sums, means or maxima of bags of embedding rows, without building the
intermediate per-index embeddings per bag in Python.

The bags are contiguous segments of the flat index list (`offsets` give their starts). The rows are
gathered once, laid out as a padded (bags, longest bag, dim) block by one index gather, masked (padding
slots, `padding_idx` entries) and reduced over the bag axis; autograd differentiates the gather.
"""

import numpy as np

from .. import _C


def _bag_layout(offsets, n, include_last_offset):
    """(positions (B, L) into the flat input, valid (B, L) bool) for bags given by their start offsets."""
    starts = [int(o) for o in offsets]
    if include_last_offset:
        ends = starts[1:]
        starts = starts[:-1]
    else:
        ends = starts[1:] + [n]
    if any(s > e for s, e in zip(starts, ends)) or (starts and (starts[0] < 0 or max(ends) > n)):
        raise RuntimeError(
            "offsets must be in non-decreasing order and within the input (got offsets "
            f"{[int(o) for o in offsets]} for an input of {n} indices)"
        )
    if n == 0 or not starts:
        return None, None, len(starts)
    lengths = [e - s for s, e in zip(starts, ends)]
    width = max(max(lengths), 1)
    pos = np.zeros((len(starts), width), dtype=np.int64)
    valid = np.zeros((len(starts), width), dtype=bool)
    for b, (s, ln) in enumerate(zip(starts, lengths)):
        pos[b, :ln] = np.arange(s, s + ln)
        valid[b, :ln] = True
    return pos, valid, len(starts)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Per bag: the sum / mean / max of the `weight` rows its indices select (torch.nn.functional.embedding_bag)."""
    from .functional import embedding

    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, then it must "
            f"have the same shape as the input ({tuple(input.shape)})"
        )
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                f"sequences. However, found offsets of type {type(offsets).__name__}"
            )
        offsets = list(range(0, input.numel(), input.shape[1])) if input.shape[1] else [0] * input.shape[0]
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offsets = offsets.tolist()
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None and max_norm == 0:
        max_norm = None
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub."
        )
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("padding_idx must be within the number of embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("padding_idx must be within the number of embeddings")
            padding_idx = weight.size(0) + padding_idx
    pos, valid, bags = _bag_layout(offsets, input.numel(), include_last_offset)
    dim = weight.shape[1]
    if pos is None:
        return _C.zeros((bags, dim), dtype=weight.dtype, device=weight.device)
    rows = embedding(input, weight, None, max_norm, norm_type, scale_grad_by_freq)  # (n, dim)
    pos_t = _C.from_numpy(pos).to(input.device)
    keep = _C.from_numpy(valid).to(input.device)
    if padding_idx is not None:
        keep = keep & (input[pos_t] != padding_idx)
    block = rows[pos_t]  # (bags, L, dim)
    keep3 = keep.unsqueeze(-1)
    if mode == "max":
        filled = block.masked_fill(~keep3, float("-inf"))
        out = filled.amax(1)
        empty = ~keep.any(1, keepdim=True)
        return out.masked_fill(empty, 0.0)
    weights = keep.to(weight.dtype)
    if per_sample_weights is not None:
        weights = weights * per_sample_weights[pos_t]
    out = (block * weights.unsqueeze(-1)).sum(1)
    if mode == "mean":
        out = out / keep.sum(1, keepdim=True).clamp_min(1).to(weight.dtype)
    return out
