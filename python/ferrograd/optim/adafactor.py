"""Adafactor (torch.optim.Adafactor, Shazeer and Stern 2018, as torch states it): a second-moment estimate
factored into row and column statistics for matrices (and batches of matrices: the last two dimensions),
a relative step size rho_t = min(lr, 1/sqrt(t)) scaled by the parameter's RMS, and update clipping by d.
The single-tensor algorithm of torch, op for op."""

import math

import ferrograd as _fg

from .. import _C
from .._creation import zeros_like
from .optimizer import Optimizer, _check_lr, _scalar


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        _check_lr(lr)
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _init_state(self, p, grad):
        state = self.state[p]
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            if grad.dim() > 1:
                row_shape = list(grad.shape)
                row_shape[-1] = 1
                col_shape = list(grad.shape)
                col_shape[-2] = 1
                state["row_var"] = _C.zeros(tuple(row_shape), dtype=grad.dtype, device=grad.device)
                state["col_var"] = _C.zeros(tuple(col_shape), dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = zeros_like(grad)
        return state

    def _update(self, group, p, grad):
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        state = self._init_state(p, grad)
        lr, wd, d = _scalar(group["lr"]), group["weight_decay"], group["d"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = _fg.finfo(p.dtype).eps
        step = state["step"].add_(1).item()
        beta2_weight = step ** group["beta2_decay"]  # 1 - beta2_t
        rho = min(lr, 1 / step**0.5)
        alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
        if wd != 0:
            p.mul_(1 - lr * wd)
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_mean = _fg.linalg.vector_norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
            row_var.lerp_(row_mean, beta2_weight)
            col_mean = _fg.linalg.vector_norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
            col_var.lerp_(col_mean, beta2_weight)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance = state["variance"]
            variance.lerp_(grad * grad, beta2_weight)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * d))
        p.add_(update, alpha=-alpha / denom)
