"""torch.nn.utils.parametrizations: weight normalisation and spectral normalisation as parametrizations
(see `parametrize`), the successors of `nn.utils.weight_norm` / `nn.utils.spectral_norm`."""

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from ._norm_except_dim import norm_except_dim, weight_norm_compose

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


def _is_conv_transpose(module):
    return type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") or any(
        c.__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") for c in type(module).__mro__
    )


def _householder_product(a, tau):
    """Q = H_1 ⋯ H_k [:, :k], H_i = I − τ_i v_i v_iᵀ, v_i = (0, …, 0, 1, a[i+1:, i]) (LAPACK's orgqr), composed
    so that autograd differentiates it."""
    n, k = a.shape[-2], a.shape[-1]
    eye = _C.eye(n, dtype=a.dtype, device=a.device)
    below = a.tril(-1) + _C.eye(n, k, dtype=a.dtype, device=a.device)  # columns v_i
    q = eye.expand(*a.shape[:-2], n, n)
    for i in range(k):
        v = below[..., :, i:i + 1]  # (..., n, 1)
        q = q - (q.matmul(v) * tau[..., i:i + 1].unsqueeze(-1)).matmul(v.transpose(-2, -1))
    return q[..., :, :k]


def _qr_positive(a):
    """The Q factor of a = QR with diag(R) ≥ 0 (a tall, or a batch of tall matrices)."""
    from ...linalg import qr

    q, r = qr(a)
    sign = r.diagonal(dim1=-2, dim2=-1).sign()
    sign = _C.where(sign == 0, sign.new_ones(sign.shape), sign)
    return q * sign.unsqueeze(-2)


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    eps = 10.0 * n * (2.220446049250313e-16 if q.dtype == _C.float64 else 1.1920928955078125e-07)
    gram = q.transpose(-2, -1).matmul(q)
    return bool(((gram - _C.eye(k, dtype=q.dtype, device=q.device)).abs() <= eps).all().item())


class _Orthogonal(Module):
    """An orthogonal (semi-orthogonal) matrix from an unconstrained one: matrix_exp / cayley of a skew-symmetric
    matrix, or a product of Householder reflections. With `use_trivialization` the result multiplies a
    buffer `base` (set by right_inverse), so the original starts at the map's origin (-Id)."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in ("matrix_exp", "cayley"):
            X = X.tril()
            if n != k:
                X = _C.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], n, n - k)], -1)
            A = X - X.transpose(-2, -1)  # skew-symmetric
            if self.orthogonal_map == "matrix_exp":
                Q = A.matrix_exp()
            else:  # Cayley: (I − A/2)⁻¹ (I + A/2)
                from ...linalg import solve

                eye = _C.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(eye - A * 0.5, eye + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = _householder_product(A, tau)
            # the diagonal of X holds ±1 (not differentiated): the sign of each column
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().to(_C.int64).to(Q.dtype).unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base.matmul(Q)
        if transposed:
            Q = Q.transpose(-2, -1)
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {list(self.shape)}. "
                                 f"Got a tensor of shape {list(Q.shape)}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.transpose(-2, -1)
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in ("matrix_exp", "cayley"):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley parametrizations when "
                        "use_trivialization=False."
                    )
                raise NotImplementedError(
                    "orthogonal: assigning to a householder parametrization with use_trivialization=False needs "
                    "geqrf, which ferrograd does not have yet"
                )
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _qr_positive(Q)
            else:
                extra = _C.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                Q = _qr_positive(_C.cat([Q, extra], -1))
            self.base = Q
            rows, cols = Q_init.shape[-2], Q_init.shape[-1]
            eye = _C.eye(rows, cols, dtype=Q_init.dtype, device=Q_init.device)
            return -eye.expand(*Q_init.shape).clone()


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Parametrize `module.<name>` (a matrix or batch of matrices) to stay orthogonal (semi-orthogonal)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in ("matrix_exp", "cayley", "householder"):
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


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
