"""InstanceNorm1d, InstanceNorm2d and InstanceNorm3d: per-sample, per-channel normalisation (running
statistics only with track_running_stats=True), on the batch norms' `_NormBase`, as torch's."""

from .. import functional as F
from .batchnorm import _NormBase


class _InstanceNorm(_NormBase):
    _dims = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        batched_dim = self._dims + 2
        if input.dim() not in (batched_dim - 1, batched_dim):
            raise ValueError(f"expected {batched_dim - 1}D or {batched_dim}D input (got {input.dim()}D input)")
        unbatched = input.dim() == batched_dim - 1
        if unbatched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{input.shape[1]}.")
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation over (N, C, L) or (C, L) input."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation over (N, C, H, W) or (C, H, W) input."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation over (N, C, D, H, W) or (C, D, H, W) input."""

    _dims = 3
