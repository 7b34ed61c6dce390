"""nn.functional.ctc_loss: the connectionist temporal classification loss, as torch computes it, by the
forward (alpha) recursion in log space over the blank-extended target, one vectorised step per time frame.

Unreachable states hold a large finite negative number instead of -inf, so that the log-sum-exp steps
keep finite gradients; a loss at that scale is reported as inf (or 0 with zero_infinity), as torch's.
"""

import numpy as np

from .. import _C
from .._autocast_ops import FP32, NONE, autocast_op

_NEG = -1e30


def _lse3(a, b, c):
    m = a.maximum(b).maximum(c).detach()
    return m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).log()


def _as_list(x):
    if isinstance(x, _C.Tensor):
        return [int(v) for v in x.reshape(-1).tolist()]
    return [int(v) for v in x]


@autocast_op(cpu=FP32, cuda=NONE)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """CTC loss of log_probs (T, N, C) (or (T, C)) against targets (N, S) padded or 1-d concatenated."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        if targets.dim() == 1 and isinstance(target_lengths, _C.Tensor) and target_lengths.dim() == 0:
            targets = targets.unsqueeze(0)
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    in_lens, tg_lens = _as_list(input_lengths), _as_list(target_lengths)
    if len(in_lens) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size ({n}), but got {len(in_lens)}")
    if len(tg_lens) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size ({n}), but got {len(tg_lens)}")
    if any(v > t_max for v in in_lens):
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {max(in_lens)}")
    tg = np.asarray(targets.tolist(), dtype=np.int64)
    s_max = max(tg_lens) if tg_lens else 0
    padded = np.zeros((n, max(s_max, 1)), dtype=np.int64)
    if tg.ndim == 1:  # concatenated
        pos = 0
        for i, ln in enumerate(tg_lens):
            padded[i, :ln] = tg[pos:pos + ln]
            pos += ln
    else:
        for i, ln in enumerate(tg_lens):
            padded[i, :ln] = tg[i, :ln]
    width = 2 * s_max + 1
    ext = np.full((n, width), blank, dtype=np.int64)
    ext[:, 1::2] = padded[:, :s_max]
    skip = np.zeros((n, width), dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    dev, dt = log_probs.device, log_probs.dtype
    ext_t = _C.from_numpy(ext).to(dev)
    lp = log_probs.gather(2, ext_t.unsqueeze(0).expand(t_max, n, width))  # (T, N, L)
    neg = _C.full((n, width), _NEG, dtype=dt, device=dev)
    neg1 = _C.full((n, 1), _NEG, dtype=dt, device=dev)
    neg2 = _C.full((n, 2), _NEG, dtype=dt, device=dev)
    start = np.zeros((n, width), dtype=bool)
    start[:, 0] = True
    start[:, 1] = np.asarray(tg_lens) > 0 if width > 1 else False
    alpha = _C.where(_C.from_numpy(start).to(dev), lp[0], neg)
    skip_t = _C.from_numpy(skip).to(dev)
    lens_np = np.asarray(in_lens)
    for t in range(1, t_max):
        a1 = _C.cat([neg1, alpha[:, :-1]], 1)
        a2 = _C.where(skip_t, _C.cat([neg2, alpha[:, :-2]], 1), neg) if width > 2 else neg
        new = _lse3(alpha, a1, a2) + lp[t]
        active = _C.from_numpy(lens_np > t).to(dev).unsqueeze(1)
        alpha = _C.where(active, new, alpha)
    last = np.asarray([2 * ln for ln in tg_lens], dtype=np.int64)
    idx_last = _C.from_numpy(last).to(dev).unsqueeze(1)
    idx_prev = _C.from_numpy(np.maximum(last - 1, 0)).to(dev).unsqueeze(1)
    end_a = alpha.gather(1, idx_last).squeeze(1)
    end_b = _C.where(_C.from_numpy(last > 0).to(dev), alpha.gather(1, idx_prev).squeeze(1), neg[:, 0])
    loss = -_lse3(end_a, end_b, neg[:, 0])
    infeasible = (loss > -_NEG / 10) | _C.from_numpy(lens_np == 0).to(dev)
    if zero_infinity:
        loss = _C.where(infeasible, loss.new_zeros(loss.shape), loss)
    else:
        loss = _C.where(infeasible, _C.full((n,), float("inf"), dtype=dt, device=dev), loss)
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    denom = _C.from_numpy(np.maximum(np.asarray(tg_lens, dtype=np.float64), 1.0)).to(dt).to(dev)
    return (loss / denom).mean()
