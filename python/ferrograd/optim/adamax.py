"""Adamax: Adam with the infinity norm (torch.optim.Adamax, the single-tensor algorithm)."""

from .. import _C
from .._creation import zeros_like
from .nadam import _check_adam_args
from .optimizer import Optimizer, _scalar


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, group, p, grad):
        state = self.state[p]
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            state["exp_avg"] = zeros_like(p)
            state["exp_inf"] = zeros_like(p)
        beta1, beta2 = group["betas"]
        step = state["step"].add_(1).item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg.add_(grad - exp_avg, alpha=1 - beta1)
        exp_inf.copy_(exp_inf.mul_(beta2).maximum(grad.abs().add_(group["eps"])))
        clr = _scalar(group["lr"]) / (1 - beta1**step)
        p.add_(exp_avg * -clr / exp_inf)
