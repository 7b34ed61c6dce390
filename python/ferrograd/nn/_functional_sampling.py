"""nn.functional's sampling: affine_grid, grid_sample (2-d; bilinear / nearest; zeros / border / reflection
padding; align_corners) and gumbel_softmax.

grid_sample maps each normalised grid coordinate in [-1, 1] to a pixel coordinate, applies the padding
rule to the coordinate (border: clip; reflection: reflect, then clip), and gathers the 4 neighbours
(bilinear) or the nearest pixel, out-of-range neighbours contributing zero. The interpolation weights are
differentiable in the coordinates, so autograd gives the gradient with respect to the grid too.
"""

import warnings

from .. import _C
from .._autocast_ops import FP32, PROMOTE, autocast_op


def _warn_align_corners(name):
    warnings.warn(
        "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
        "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
        "details.",
        stacklevel=3,
    )


def _base_coords(n, align_corners, dtype, device):
    if n <= 1:
        return _C.zeros(n, dtype=dtype, device=device)
    r = _C.linspace(-1.0, 1.0, n, dtype=dtype, device=device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps `theta` (N, 2, 3) / (N, 3, 4)."""
    if align_corners is None:
        _warn_align_corners("affine_grid")
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {list(theta.shape)}.")
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {list(theta.shape)}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, spatial = size[0], size[2:]
    dt, dev = theta.dtype, theta.device
    nd = len(spatial)
    coords = []  # x (along W) first, then y (H), then z (D)
    for i in reversed(range(nd)):
        view = [1] * nd
        view[i] = spatial[i]
        coords.append(_base_coords(spatial[i], align_corners, dt, dev).reshape(view).expand(tuple(spatial)))
    base = _C.stack(coords + [_C.ones(tuple(spatial), dtype=dt, device=dev)], -1)  # (*spatial, nd+1)
    flat = base.reshape(-1, len(spatial) + 1)
    out = flat.matmul(theta.transpose(1, 2))  # (N, prod, nd)
    return out.reshape(n, *spatial, len(spatial))


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (coord - low).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    return _C.where(flips.remainder(2) == 0, extra + low, span - extra + low)


def _source_coord(coord, size, padding_mode, align_corners):
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = c.clamp(0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = c.clamp(0, size - 1)
    return c


def _gather(flat, ix, iy, h, w):
    """flat (N, C, H·W); integer ix, iy (N, P): the pixels, zero where (ix, iy) lies outside."""
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    idx = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).unsqueeze(1).expand(-1, flat.shape[1], -1)
    vals = flat.gather(2, idx)
    return vals * inside.unsqueeze(1).to(flat.dtype)


@autocast_op(cpu=FP32, cuda=PROMOTE)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, H, W) at the normalised locations `grid` (N, Ho, Wo, 2), or a volume
    (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warn_align_corners("grid_sample")
        align_corners = False
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and input.dim() == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported yet")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    if input.dim() == 5:
        return _grid_sample_3d(input, grid, mode, padding_mode, align_corners)
    n, c, h, w = input.shape
    ho, wo = grid.shape[1], grid.shape[2]
    gx = _source_coord(grid[..., 0], w, padding_mode, align_corners).reshape(n, -1)
    gy = _source_coord(grid[..., 1], h, padding_mode, align_corners).reshape(n, -1)
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        ix, iy = gx.round().to(_C.int64), gy.round().to(_C.int64)  # round half to even, as torch's nearbyint
        out = _gather(flat, ix, iy, h, w)
        if grid.requires_grad:  # torch's grid gradient for nearest is zeros (not None): keep grid in the graph
            out = out + ((gx - gx.detach()) + (gy - gy.detach())).unsqueeze(1) * 0
    else:
        x0f, y0f = gx.floor(), gy.floor()
        tx, ty = (gx - x0f).unsqueeze(1), (gy - y0f).unsqueeze(1)
        x0, y0 = x0f.to(_C.int64), y0f.to(_C.int64)
        x1, y1 = x0 + 1, y0 + 1
        out = (_gather(flat, x0, y0, h, w) * ((1 - tx) * (1 - ty)) + _gather(flat, x1, y0, h, w) * (tx * (1 - ty))
               + _gather(flat, x0, y1, h, w) * ((1 - tx) * ty) + _gather(flat, x1, y1, h, w) * (tx * ty))
    return out.reshape(n, c, ho, wo)


def _gather3(flat, ix, iy, iz, d, h, w):
    """flat (N, C, D·H·W); integer ix, iy, iz (N, P): the voxels, zero where the point lies outside."""
    inside = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h) & (iz >= 0) & (iz < d)
    idx = (iz.clamp(0, d - 1) * (h * w) + iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1))
    vals = flat.gather(2, idx.unsqueeze(1).expand(-1, flat.shape[1], -1))
    return vals * inside.unsqueeze(1).to(flat.dtype)


def _grid_sample_3d(input, grid, mode, padding_mode, align_corners):
    """Volumetric grid_sample: input (N, C, D, H, W) at grid (N, Do, Ho, Wo, 3) = (x, y, z), trilinear
    (the 8 corners weighted by the products of the fractional parts) or nearest."""
    n, c, d, h, w = input.shape
    out_shape = tuple(grid.shape[1:4])
    gx = _source_coord(grid[..., 0], w, padding_mode, align_corners).reshape(n, -1)
    gy = _source_coord(grid[..., 1], h, padding_mode, align_corners).reshape(n, -1)
    gz = _source_coord(grid[..., 2], d, padding_mode, align_corners).reshape(n, -1)
    flat = input.reshape(n, c, d * h * w)
    if mode == "nearest":
        out = _gather3(flat, gx.round().to(_C.int64), gy.round().to(_C.int64), gz.round().to(_C.int64), d, h, w)
        if grid.requires_grad:  # torch's grid gradient for nearest is zeros: keep grid in the graph
            out = out + ((gx - gx.detach()) + (gy - gy.detach()) + (gz - gz.detach())).unsqueeze(1) * 0
        return out.reshape(n, c, *out_shape)
    x0f, y0f, z0f = gx.floor(), gy.floor(), gz.floor()
    tx, ty, tz = (gx - x0f).unsqueeze(1), (gy - y0f).unsqueeze(1), (gz - z0f).unsqueeze(1)
    x0, y0, z0 = x0f.to(_C.int64), y0f.to(_C.int64), z0f.to(_C.int64)
    out = None
    for dz, wz in ((0, 1 - tz), (1, tz)):
        for dy, wy in ((0, 1 - ty), (1, ty)):
            for dx, wx in ((0, 1 - tx), (1, tx)):
                term = _gather3(flat, x0 + dx, y0 + dy, z0 + dz, d, h, w) * (wx * wy * wz)
                out = term if out is None else out + term
    return out.reshape(n, c, *out_shape)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); `hard`: the one-hot argmax in the forward, the soft
    sample's gradient in the backward (straight-through)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    u = _C.rand(tuple(logits.shape), dtype=logits.dtype, device=logits.device)
    gumbels = -(-(u.clamp_min(1e-45 if logits.dtype == _C.float32 else 1e-300)).log()).log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _C.zeros(tuple(logits.shape), dtype=logits.dtype, device=logits.device).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
