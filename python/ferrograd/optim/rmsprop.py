"""RMSprop, optionally centered and with momentum (torch.optim.RMSprop)."""

from .. import _C
from .._creation import zeros_like
from .optimizer import Optimizer, _check_lr, _scalar


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, group, p):
        state = self.state[p]
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    _fuses_on_cuda = True

    def _fused_step(self, group, params):
        states = [self._init_state(group, p) for p in params]
        _C._fused_rmsprop(params, [p.grad for p in params], [s["square_avg"] for s in states],
                          [s["momentum_buffer"] for s in states] if group["momentum"] > 0 else [],
                          [s["grad_avg"] for s in states] if group["centered"] else [],
                          [s["step"] for s in states], lr=_scalar(group["lr"]), alpha=group["alpha"], eps=group["eps"],
                          weight_decay=group["weight_decay"], momentum=group["momentum"], centered=group["centered"],
                          maximize=group["maximize"])

    def _update(self, group, p, grad):
        state = self._init_state(group, p)
        alpha, eps, lr = group["alpha"], group["eps"], _scalar(group["lr"])
        state["step"].add_(1)
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        square_avg = state["square_avg"]
        square_avg.mul_(alpha).add_(grad * (1 - alpha) * grad)  # addcmul_(grad, grad, value=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg.add_(grad - grad_avg, alpha=1 - alpha)  # lerp_(grad, 1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(grad / avg)
            p.add_(buf, alpha=-lr)
        else:
            p.add_(grad * -lr / avg)  # addcdiv_(grad, avg, value=-lr)
