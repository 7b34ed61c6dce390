"""nn.functional's less common losses: huber_loss, margin_ranking_loss, cosine_embedding_loss,
hinge_embedding_loss, triplet_margin_loss, poisson_nll_loss, gaussian_nll_loss, soft_margin_loss,
multilabel_soft_margin_loss, multi_margin_loss and linear_cross_entropy (the common ones are in
functional.py).
Compositions of differentiable engine ops; re-exported by functional.py."""

import math

from .. import _C
from ..overrides import overridable
from . import functional as _F
from ._functional_distance import pairwise_distance
from .._autocast_ops import FP32, autocast_op


def _red(reduction, size_average=None, reduce=None):
    return _F._get_reduction(reduction, size_average, reduce)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = _red(reduction)
    d = input - target
    a = d.abs()
    loss = _C.where(a < delta, d * d * 0.5, (a - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _F._reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, target: "
                           f"{tuple(target.shape)} ")
    return _F._reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos * 0
    pos = _C.where(target == 1, 1 - cos, zeros)
    neg = _C.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _F._reduce(pos + neg, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    zeros = input * 0
    margin_part = _C.where(target != 1, (margin - input).clamp_min(0), zeros)
    self_part = _C.where(target != -1, input, zeros)
    return _F._reduce(margin_part + self_part, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    a, pz, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pz == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pz}D, and negative {n}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _F._reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        safe = _C.where(target > 1, target, 2.0)  # Note [safe where]
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + _C.where(target > 1, stirling, 0.0)
    return _F._reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, (int, float)):
        var = _C.full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()  # clamped without touching the gradient, as torch
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _F._reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
@overridable  # (an engine call refusing a tensor-like hands the call over: overrides.py)
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    return _F._reduce((-target * input).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    loss = -(target * _F.logsigmoid(input) + (1 - target) * _F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _F._reduce(loss, reduction)


@autocast_op(cpu=FP32, cuda=FP32)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = _red(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    c = x.shape[1]
    if t.shape[0] != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got {list(target.shape)}")
    xy = x.gather(1, t.unsqueeze(1))
    z = (x - xy + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    is_target = _C.arange(c, device=x.device).reshape(1, c) == t.unsqueeze(1)
    loss = z.masked_fill(is_target, 0).sum(1) / c
    if input.dim() != 2:
        loss = loss.reshape(tuple(target.shape)) if reduction == "none" else loss
    return _F._reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, W, b), target): W of shape (C, *out_features, in_features) gives logits
    (*batch, C, *out_features). ignore_index None is cross_entropy's default (-100).
    `options` (LinearCrossEntropyOptions) choose torch's tiling of the batch; the result is this one."""
    from .modules.linear_cross_entropy_options import LinearCrossEntropyOptions

    if options is not None and not isinstance(options, LinearCrossEntropyOptions):
        raise TypeError(f"options must be a LinearCrossEntropyOptions or None, got {type(options).__name__}")
    classes, *out_features, in_features = linear_weight.shape
    logits = _F.linear(input, linear_weight.reshape(-1, in_features),
                       None if linear_bias is None else linear_bias.reshape(-1))
    logits = logits.reshape(*input.shape[:-1], classes, *out_features)
    if ignore_index is None:  # cross_entropy's default, as torch's reference path
        ignore_index = -100
    return _F.cross_entropy(logits, target, weight=weight, ignore_index=ignore_index, reduction=reduction,
                            label_smoothing=label_smoothing)
