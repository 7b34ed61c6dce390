"""nn.functional's distances: normalize, cosine_similarity and pairwise_distance. Compositions of
differentiable engine ops; re-exported by functional.py."""

from .._out import supports_out
from . import functional as _F
from .._autocast_ops import FP32, NONE, autocast_op


@supports_out(grad="div", dtype="cast")  # (torch: torch.div(input, denom, out=out))
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)


@autocast_op(cpu=NONE, cuda=FP32)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    # torch clamps each norm at eps without letting the clamp reach the gradient
    shape = _F._broadcast_shape(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1, n2 = x1.norm(2, dim, keepdim=True), x2.norm(2, dim, keepdim=True)
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    dim = max(x1.dim(), x2.dim(), 1) - 1
    return (x1 - x2 + eps).norm(p, dim, keepdim=keepdim)
