"""torch.nn.utils.parametrizations: weight normalisation and spectral normalisation as parametrizations
(see `parametrize`), the successors of `nn.utils.weight_norm` / `nn.utils.spectral_norm`."""

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._norm_except_dim import norm_except_dim, weight_norm_compose

__all__ = ["weight_norm", "spectral_norm"]


def _is_conv_transpose(module):
    return type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") or any(
        c.__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") for c in type(module).__mro__
    )


class _WeightNorm(Module):
    """weight = g · v / ‖v‖; originals (g, v) = right_inverse(weight) = (‖weight‖, weight)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_compose(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Parametrize `module.<name>` as g · v / ‖v‖ (originals `original0` = g, `original1` = v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _load_old_keys(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    register = getattr(module, "_register_load_state_dict_pre_hook", None)
    if register is not None:
        register(_load_old_keys)
    return module


class _SpectralNorm(Module):
    """weight / σ(weight), σ estimated by power iteration on the buffers `_u`, `_v` (updated in training)."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(_C.randn(h, dtype=weight.dtype), dim=0, eps=self.eps)
            v = F.normalize(_C.randn(w, dtype=weight.dtype), dim=0, eps=self.eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        # u ← Wv/‖Wv‖, v ← Wᵀu/‖Wᵀu‖, written into the buffers in place (as torch's out=)
        with no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Parametrize `module.<name>` as weight / σ(weight) (largest singular value, by power iteration)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
