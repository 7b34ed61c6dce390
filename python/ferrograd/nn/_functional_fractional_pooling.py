"""nn.functional's fractional max pools (fractional_max_pool2d/3d and their *_with_indices forms).

A fractional max pool (Graham, 2014) takes the maximum over kernel_size windows whose starts advance by a
non-integer stride α = (input - kernel) / (output - 1): with one random u ∈ [0, 1) per plane and dim, the
start of window i is ⌊(i + u)·α⌋ - ⌊u·α⌋, and the last window ends at the input's end. The arithmetic is
done in the input's dtype, as torch's kernel, so the same samples give the same windows. The maximum of
each window (the first in window order, the last NaN) comes from the shared window gather of
`_functional_pooling._window_max`; the gradient goes to the chosen cells alone.

The samples, when not given (`_random_samples`, shape (N, C, 2 or 3), one per plane), are drawn with
`torch.rand` from ferrograd's generator: the windows are random as torch's, but not torch's numbers.
"""

import math

import numpy as np

from .. import _C


def _scalar_name(dtype):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(str(dtype).split(".")[-1], str(dtype))


def _starts(u, n, out, k, np_dtype):
    """The window starts over a length n, one row per plane (torch's generate_intervals, vectorised, in
    the input's dtype): u is the planes' samples for this dim."""
    starts = np.zeros((u.shape[0], out), dtype=np.int64)
    if out > 1:
        u = u.astype(np_dtype)[:, None]
        alpha = np_dtype(n - k) / np_dtype(out - 1)
        i = np.arange(out - 1).astype(np_dtype)[None, :]
        starts[:, :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out > 0:
        starts[:, -1] = n - k
    return starts


def _tuple(v, nd, name):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(v) * nd
        if len(v) != nd:
            raise RuntimeError(f"{name} must either be a single int, or a tuple of {nd} ints")
        return tuple(v)
    return (v,) * nd


def _fractional(input, kernel_size, output_size, output_ratio, samples, nd, name):
    from .._creation import rand
    from ._functional_pooling import _window_max

    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    input.size(-nd - 1)  # torch reads the channels first: its IndexError below nd + 1 dims
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    k = _tuple(kernel_size, nd, "kernel_size")
    spatial = tuple(input.shape[-nd:])
    if output_size is None:
        ratio = _tuple(output_ratio, nd, "output_ratio")
        output_size = [int(spatial[i] * ratio[i]) for i in range(nd)]
    out = _tuple(output_size, nd, "output_size")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{name}(): kernel size should be greater than zero, but got {'x'.join(map(str, k))}")
    dim_names = ("time", "height", "width")[3 - nd:]
    for i in range(nd):
        # torch's 2-d check lets the last window end at the input's end, its 3-d check does not
        if out[i] + k[i] - 1 > spatial[i] - (nd == 3):
            raise RuntimeError(f"{name}{'_out' if nd == 3 else ''}(): pool {dim_names[i]} {k[i]} too large relative to input "
                               f"{dim_names[i]} {spatial[i]}")
    batch = 1 if input.dim() == nd + 1 else input.shape[0]
    channels = input.shape[-nd - 1]
    if samples is None:
        if not input.is_floating_point():
            raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{_scalar_name(input.dtype)}'")
        samples = rand(batch, channels, nd, dtype=input.dtype, device=input.device)
    elif samples.dim() != 3 or samples.shape[0] < batch or samples.shape[1] < channels or samples.shape[2] < nd:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    lead = tuple(input.shape[:-nd])
    if 0 in out or input.numel() == 0:
        empty = input.reshape(-1, math.prod(spatial))[:, :0].reshape(lead + (0,) * nd)
        return (_C.zeros(lead + out, dtype=input.dtype, device=input.device) + empty.sum(),
                _C.zeros(lead + out, dtype=_C.int64, device=input.device))
    np_dtype = np.float64 if input.dtype == _C.float64 else np.float32
    u = samples[:batch, :channels, :nd].detach().cpu().to(_C.float64).numpy().reshape(batch * channels, nd)
    # torch's sample order: the 2-d pool's [0] is the width, [1] the height; the 3-d pool's is (T, H, W)
    sample_dim = (1, 0) if nd == 2 else (0, 1, 2)
    planes = batch * channels
    # flat positions [P, outputs..., window cells...]: per dim start + offset, times the dim's stride
    flat = np.zeros((planes,) + (1,) * (2 * nd), dtype=np.int64)
    step = 1
    for d in range(nd - 1, -1, -1):
        cells = _starts(u[:, sample_dim[d]], spatial[d], out[d], k[d], np_dtype)[:, :, None] + np.arange(k[d])
        shape = [planes] + [1] * (2 * nd)
        shape[1 + d], shape[1 + nd + d] = out[d], k[d]
        flat = flat + cells.reshape(shape) * step
        step *= spatial[d]
    positions = np.ascontiguousarray(flat.reshape(planes, math.prod(out), math.prod(k)))
    values, indices = _window_max(input.reshape(-1, math.prod(spatial)), positions)
    return values.reshape(lead + out), indices.reshape(lead + out)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (H, W): (values, flat h·W + w indices of the maxima)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2, "fractional_max_pool2d")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (H, W) (values, and indices when return_indices)."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, True, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (T, H, W): (values, flat indices of the maxima in each volume)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3, "fractional_max_pool3d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (T, H, W) (values, and indices when return_indices)."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, True, _random_samples)
    return out if return_indices else out[0]
