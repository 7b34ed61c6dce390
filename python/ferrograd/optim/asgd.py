"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD, the single-tensor algorithm)."""

from .. import _C
from .._creation import zeros_like
from .optimizer import Optimizer, _scalar


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lambd:
            raise ValueError(f"Invalid lambd value: {lambd}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, group, p, grad):
        state = self.state[p]
        lr = _scalar(group["lr"])
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            state["eta"] = _C.full((), lr, dtype=_C.float32)
            state["mu"] = _C.ones((), dtype=_C.float32)
            state["ax"] = zeros_like(p)
        step = state["step"].add_(1).item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        eta = state["eta"].item()
        p.mul_(1 - group["lambd"] * eta)
        p.add_(grad, alpha=-eta)
        mu, ax = state["mu"].item(), state["ax"]
        if mu != 1:
            ax.add_((p - ax).mul_(mu))
        else:
            ax.copy_(p)
        state["eta"].fill_(lr / ((1 + group["lambd"] * lr * step) ** group["alpha"]))
        state["mu"].fill_(1 / max(1, step - group["t0"]))
