"""SGD with momentum, dampening, Nesterov momentum and weight decay (torch.optim.SGD)."""

from .. import _C
from .optimizer import Optimizer, _check_lr, _scalar


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _fuses_on_cuda = True

    def _fused_step(self, group, params):
        bufs, first = [], []
        momentum = group["momentum"]
        for p in params:
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                first.append(buf is None)
                if buf is None:
                    buf = state["momentum_buffer"] = _C.empty(tuple(p.shape), dtype=p.dtype, device=p.device)
                bufs.append(buf)
            else:
                first.append(False)
        _C._fused_sgd(params, [p.grad for p in params], bufs, first, lr=_scalar(group["lr"]), momentum=momentum,
                      dampening=group["dampening"], weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                      maximize=group["maximize"])

    def _update(self, group, p, grad):
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(grad, alpha=-_scalar(group["lr"]))
