"""nn.functional's resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), upsample, upsample_nearest, upsample_bilinear, pixel_shuffle and pixel_unshuffle; re-exported by
functional.py.

Bicubic (mode='bicubic'): along one dim, each output is a 4-tap cubic-convolution (Keys, A = -0.75) of the
input samples floor(src)-1 .. floor(src)+2, indices clamped to the edge, as torch's upsample_bicubic2d.
Separable, so interpolate applies it to H, then W."""

import math

from .. import _C
from .._creation import tensor as _tensor
from .._autocast_ops import FP32, NONE, autocast_op

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


def _nearest_indices(in_size, out_size, scale):
    s = in_size / out_size if scale is None else 1.0 / scale
    return [min(int(math.floor(i * s)), in_size - 1) for i in range(out_size)]


def _linear_weights(in_size, out_size, scale, align_corners):
    """(i0, i1, lambda) per output position of a 1-d linear resampling, as torch's upsample kernels."""
    out = []
    for i in range(out_size):
        if align_corners:
            src = i * (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            s = in_size / out_size if scale is None else 1.0 / scale
            src = max((i + 0.5) * s - 0.5, 0.0)
        i0 = min(int(math.floor(src)), in_size - 1)
        i1 = min(i0 + 1, in_size - 1)
        out.append((i0, i1, src - i0))
    return out


_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


@autocast_op(cpu=NONE, cuda=FP32)
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: nearest "
            f"| linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {sizes}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        scales = [None] * nd
    else:
        scales = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * nd
        if len(scales) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {scales}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, "
                             "s2, ...,sK) format.")
        sizes = [int(math.floor(input.shape[2 + i] * scales[i])) for i in range(nd)]
        if recompute_scale_factor:
            scales = [None] * nd
    want = {"linear": 1, "bilinear": 2, "trilinear": 3, "bicubic": 2}.get(mode)
    if want is not None and nd != want:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {want + 2}D input")
    if mode not in ("nearest", "linear", "bilinear", "bicubic"):
        raise NotImplementedError(f"interpolate: mode '{mode}' is not supported yet")
    # an impossible output is the allocator's RuntimeError up front (not a Python loop over its indices)
    _C.empty(tuple(input.shape[:2]) + tuple(sizes), dtype=input.dtype, device=input.device)
    out = input
    for i in range(nd):
        d = 2 + i
        n_in = input.shape[d]
        if mode == "bicubic":  # nn/_functional_interpolate.py

            out = bicubic_along(out, d, sizes[i], scales[i], align_corners)
        elif mode == "nearest":
            idx = _tensor(_nearest_indices(n_in, sizes[i], scales[i]), device=input.device)
            out = out.index_select(d, idx)
        else:
            w = _linear_weights(n_in, sizes[i], scales[i], align_corners)
            i0 = _tensor([a for a, _, _ in w], device=input.device)
            i1 = _tensor([b for _, b, _ in w], device=input.device)
            lam = _tensor([lam for _, _, lam in w], dtype=input.dtype, device=input.device)
            lam = lam.reshape((-1,) + (1,) * (input.dim() - d - 1))
            out = out.index_select(d, i0) * (1 - lam) + out.index_select(d, i1) * lam
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape((*batch, c // (r * r), r, r, h, w))
    x = x.permute((*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return x.reshape((*batch, c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)="
                           f"{h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)="
                           f"{w} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape((*batch, c, h // r, r, w // r, r))
    x = x.permute((*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return x.reshape((*batch, c * r * r, h // r, w // r))
