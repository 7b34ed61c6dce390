"""Rprop: resilient backpropagation (torch.optim.Rprop, the single-tensor algorithm)."""

from .. import _C
from .._creation import full_like, zeros_like
from .optimizer import Optimizer, _scalar


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, group, p, grad):
        state = self.state[p]
        if not state:
            state["step"] = _C.zeros((), dtype=_C.float32)
            state["prev"] = zeros_like(p)
            state["step_size"] = full_like(grad, _scalar(group["lr"]))
        etaminus, etaplus = group["etas"]
        lo, hi = group["step_sizes"]
        state["step"].add_(1)
        prev, step_size = state["prev"], state["step_size"]
        s = (grad * prev).sign()
        # sign > 0 -> etaplus, < 0 -> etaminus, == 0 -> 1
        factor = _C.where(s > 0, etaplus, _C.where(s < 0, etaminus, 1.0)).to(step_size.dtype)
        step_size.mul_(factor).clamp_(lo, hi)
        grad = grad.masked_fill(s < 0, 0)  # a sign change: no step this time, and no memory of it
        p.add_(grad.sign() * step_size, alpha=-1)
        prev.copy_(grad)
