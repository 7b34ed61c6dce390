"""Adam and AdamW, with amsgrad (torch.optim.Adam / AdamW: the single-tensor algorithm)."""

from .. import _C
from .._creation import zeros_like
from .optimizer import Optimizer, _check_lr, _scalar


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, _C.Tensor) for b in betas[:2])):
            raise ValueError("betas must be either both floats or both Tensors")
        for i in (0, 1):
            if isinstance(betas[i], _C.Tensor) and betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
        defaults = dict(lr=lr, betas=(_scalar(betas[0]), _scalar(betas[1])), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _init_state(self, group, p):
        state = self.state[p]
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    _fuses_on_cuda = True

    def _fused_step(self, group, params):
        states = [self._init_state(group, p) for p in params]
        beta1, beta2 = group["betas"]
        _C._fused_adam(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                       [s["exp_avg_sq"] for s in states],
                       [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [],
                       [s["step"] for s in states], lr=_scalar(group["lr"]), beta1=_scalar(beta1),
                       beta2=_scalar(beta2), eps=group["eps"], weight_decay=group["weight_decay"],
                       decoupled=group["decoupled_weight_decay"], amsgrad=group["amsgrad"], maximize=group["maximize"])

    def _update(self, group, p, grad):
        state = self._init_state(group, p)
        beta1, beta2 = group["betas"]
        lr, wd, eps = _scalar(group["lr"]), group["weight_decay"], group["eps"]
        step = state["step"].add_(1).item()
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                grad = grad.add(p, alpha=wd)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg.add_(grad - exp_avg, alpha=1 - beta1)  # lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).add_(grad * (1 - beta2) * grad)  # addcmul_(grad, grad, value=1 - beta2)
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            max_sq = state["max_exp_avg_sq"]
            max_sq.copy_(max_sq.maximum(exp_avg_sq))
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        p.add_(exp_avg * -step_size / denom)  # addcdiv_(exp_avg, denom, value=-step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p ← p·(1 - lr·weight_decay) before the Adam step."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
