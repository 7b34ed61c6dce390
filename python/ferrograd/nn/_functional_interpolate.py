"""Bicubic resampling for nn.functional.interpolate(mode='bicubic'): along one dim, each output is a
4-tap cubic-convolution (Keys, A = -0.75) of the input samples floor(src)-1 .. floor(src)+2, indices clamped
to the edge, as torch's upsample_bicubic2d. Separable, so interpolate applies it to H, then W."""

import math

_A = -0.75


def _cubic_weights(t):
    """The 4 tap weights for fractional offset t (Keys' cubic convolution)."""
    def far(x):  # 1 < |x| < 2
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    def near(x):  # |x| <= 1
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def bicubic_along(x, d, out_size, scale, align_corners):
    """Resample dim `d` of x to out_size by cubic convolution."""
    from .._creation import tensor as _tensor

    in_size = x.shape[d]
    if align_corners:
        step = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else in_size / out_size
    taps = [[], [], [], []]
    weights = [[], [], [], []]
    for i in range(out_size):
        src = i * step if align_corners else (i + 0.5) * step - 0.5
        i0 = math.floor(src)
        for k, w in enumerate(_cubic_weights(src - i0)):
            taps[k].append(min(max(i0 - 1 + k, 0), in_size - 1))
            weights[k].append(w)
    shape = (-1,) + (1,) * (x.dim() - d - 1)
    out = None
    for k in range(4):
        idx = _tensor(taps[k], device=x.device)
        w = _tensor(weights[k], dtype=x.dtype, device=x.device).reshape(shape)
        term = x.index_select(d, idx) * w
        out = term if out is None else out + term
    return out


__all__ = ["bicubic_along"]
