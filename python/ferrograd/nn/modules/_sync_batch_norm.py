"""The synchronised batch norm of nn.SyncBatchNorm: batch statistics over every process of a group.

Each process sums its part of the batch per channel (count, Σx, Σx²); one all-reduce makes the sums
global; mean and biased variance follow, and the input is normalised with them. The all-reduce is the
only cross-process step, and it is differentiable: the global sum S = Σ_r s_r enters every rank's loss,
so ∂L/∂s_r = Σ_r' ∂L_r'/∂S, an all-reduce of the gradients (`_AllReduceSum.backward`). Everything else
is ferrograd's ordinary differentiable ops, so autograd derives the rest of the backward.
"""

from ... import _C
from ...autograd.function import Function


class _AllReduceSum(Function):
    """Sum over the processes of `group`, forward and backward."""

    @staticmethod
    def forward(ctx, tensor, group):
        from ... import distributed as dist

        ctx.group = group
        out = tensor.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ... import distributed as dist

        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


def sync_batch_norm(input, weight, bias, running_mean, running_var, eps, momentum, group):
    """Batch norm of (N, C, *) input with statistics over the whole group's batch (two all-reduces: the
    sums and counts, then the squared deviations from the global mean); updates the running statistics
    (unbiased variance over the global count) as torch's."""
    from ...autograd.grad_mode import no_grad

    c = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    x = input.float() if input.dtype in (_C.float16, _C.bfloat16) else input
    count = _C.full((1,), float(input.numel() // c), dtype=x.dtype, device=x.device)
    sums = _AllReduceSum.apply(_C.cat([x.sum(dims), count]), group)
    total = sums[c]
    n = total.item()
    if n <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    shape = [1, c] + [1] * (input.dim() - 2)
    centered = x - (sums[:c] / total).reshape(shape)
    var = _AllReduceSum.apply((centered * centered).sum(dims), group) / total
    if running_mean is not None:
        with no_grad():
            running_mean.mul_(1 - momentum).add_((sums[:c] / total).to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_((var * (n / (n - 1))).to(running_var.dtype) * momentum)
    out = centered * (var + eps).rsqrt().reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out.to(input.dtype)
