"""SparseAdam (torch.optim.SparseAdam): the constructor and its checks as torch's. The algorithm updates
only the entries a sparse gradient touches; ferrograd has no sparse tensors (nn.Embedding(sparse=True)
raises NotImplementedError), so every gradient it can produce is dense, and step() refuses it with
torch's RuntimeError, as torch does for a dense gradient. Use Adam instead."""

from .optimizer import Optimizer, _check_lr, _scalar


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_lr(lr)
        if not 0.0 < _scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse = [i for group in self.param_groups for i, p in enumerate(group["params"])
                  if getattr(p, "is_sparse", False)]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")

    def _update(self, group, p, grad):
        raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
