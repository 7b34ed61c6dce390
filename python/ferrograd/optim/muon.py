"""Muon (torch.optim.Muon): momentum SGD for 2-d parameters whose update is orthogonalised by a quintic
Newton-Schulz iteration run in bfloat16, with decoupled weight decay and a shape-dependent learning-rate
adjustment (`adjust_lr_fn`). The single-tensor algorithm of torch, op for op; the bfloat16 matrix products
round as ferrograd's bfloat16 matmul does, so parameters agree with torch's to bfloat16 precision of the
update, not bit for bit."""

import math

from .. import _C
from .._creation import zeros_like
from .optimizer import Optimizer, _check_lr, _scalar

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5

_ADJUSTMENTS = ("original", "match_rms_adamw", "spectral_unclamped")


def _orthogonalize(grad, coefficients, steps, eps):
    """Approximately U V^T of grad = U S V^T (singular values pushed towards ~[0.5, 1.5]), in bfloat16."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = grad.size(0) > grad.size(1)
    x = grad.to(_C.bfloat16).clone()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    # Each product is accumulated in float32 and rounded to bfloat16 once, as torch's bfloat16 matmul and
    # addmm do (rounding the product before the scaled sum would differ by bfloat16 ulps of the product).
    for _ in range(steps):
        xf = x.float()
        gram = (xf @ xf.T).to(_C.bfloat16).float()
        poly = (b * gram + c * (gram @ gram)).to(_C.bfloat16).float()
        x = (a * xf + poly @ xf).to(_C.bfloat16)
    return x.T if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    elif adjust_lr_fn == "spectral_unclamped":
        ratio = math.sqrt(rows / cols)
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        _check_lr(lr)
        if not 0.0 <= _scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUSTMENTS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update(self, group, p, grad):
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        if grad.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_like(grad)
        buf = state["momentum_buffer"]
        momentum, lr = group["momentum"], _scalar(group["lr"])
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
