"""LayerNorm and InstanceNorm3d (the 1-d and 2-d instance norms are in nn/_more_modules.py)."""

import numbers

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class LayerNorm(Module):
    """Normalise over the trailing `normalized_shape` dims; affine weight (ones) and bias (zeros)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or _C._get_default_dtype()
        if elementwise_affine:
            self.weight = Parameter(_C.empty(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_C.empty(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


def _instance_norm_base():
    from .._more_modules import _InstanceNorm

    return _InstanceNorm


class InstanceNorm3d(_instance_norm_base()):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3
