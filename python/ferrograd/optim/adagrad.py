"""Adagrad with learning-rate decay (torch.optim.Adagrad)."""

from .. import _C
from .._creation import full_like
from .optimizer import Optimizer, _check_lr, _scalar


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        # torch creates Adagrad's state for every parameter up front
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _C.zeros((), dtype=_C.float32)
                state["sum"] = full_like(p, group["initial_accumulator_value"])

    _fuses_on_cuda = True

    def _fused_step(self, group, params):
        states = [self.state[p] for p in params]
        _C._fused_adagrad(params, [p.grad for p in params], [s["sum"] for s in states], [s["step"] for s in states],
                          lr=_scalar(group["lr"]), lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                          eps=group["eps"], maximize=group["maximize"])

    def _update(self, group, p, grad):
        state = self.state[p]
        step = state["step"].add_(1).item()
        if group["weight_decay"] != 0:
            grad = grad.add(p, alpha=group["weight_decay"])
        clr = _scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
        state["sum"].add_(grad * grad)  # addcmul_(grad, grad, value=1)
        std = state["sum"].sqrt().add_(group["eps"])
        p.add_(grad * -clr / std)  # addcdiv_(grad, std, value=-clr)
