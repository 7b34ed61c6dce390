"""nn.functional's channel-wise and alpha dropouts: dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout.

Channel-wise ("feature") dropout draws one Bernoulli(1-p) per (sample, channel) and broadcasts it over
the spatial dims. Alpha dropout keeps SELU's self-normalisation: a dropped unit becomes the saturation
value -α' (α' = SELU's scale·alpha), and y = a·(x·mask + (1-mask)·(-α')) + b with
a = 1/√((α'²p + 1)(1-p)), b = a·α'·p, so mean and variance are preserved.
"""

import math
import warnings

from .. import _C
from ..overrides import overridable

_SELU_SATURATION = 1.7580993408473766  # -(SELU scale · alpha)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply(input, noise, bias, inplace):
    if inplace:
        input.mul_(noise)
        return input if bias is None else input.add_(bias)
    out = input * noise
    return out if bias is None else out + bias


def _dropout_impl(input, p, training, inplace, feature, alpha):
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 1.0:
        return _apply(input, _C.zeros((), dtype=input.dtype, device=input.device), None, inplace)
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if feature else tuple(input.shape)
    keep = (_C.rand(shape, dtype=input.dtype, device=input.device) >= p).to(input.dtype)
    if not alpha:
        return _apply(input, keep / (1.0 - p), None, inplace)
    a = 1.0 / math.sqrt((_SELU_SATURATION**2 * p + 1) * (1 - p))
    bias = (keep - 1.0) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return _apply(input, keep * a, bias, inplace)


def _feature_dropout_batched(input, p, training, inplace, batched):
    if batched:
        return _dropout_impl(input, p, training, inplace, True, False)
    out = _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False)
    return input if inplace else out.squeeze(0)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, L) or (C, L) input with probability p; scale the rest by 1/(1-p)."""
    _check_p(p)
    d = input.dim()
    if d not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {d}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout_batched(input, p, training, inplace, d == 3)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, H, W) input with probability p; scale the rest by 1/(1-p)."""
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and will result in an error in "
            "a future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            "that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if d == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability p."""
    _check_p(p)
    d = input.dim()
    if d not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and will result in an error in "
            "a future release. To retain the behavior and silence this warning, please use dropout instead. Note "
            "that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a channel "
            "dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_dropout_batched(input, p, training, inplace, d == 5)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout (for SELU networks): keeps zero mean and unit variance of the input."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, False, True)


@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels."""
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, True)
