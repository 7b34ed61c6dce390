"""The norm over every dimension but one, kept for broadcasting (torch.norm_except_dim): the helper of
weight normalisation, old (`weight_norm`) and new (`parametrizations.weight_norm`)."""


def norm_except_dim(v, pow=2, dim=0):
    """`dim == -1` is torch's "whole tensor" (a 0-d norm); otherwise reduce every other dim, keepdim."""
    if dim == -1:
        return v.norm(pow)
    if dim < 0:
        dim += v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    if not others:
        return v.abs() if pow == 1 else (v.abs() ** pow) ** (1.0 / pow)
    return v.norm(pow, dim=others, keepdim=True)


def weight_norm_compose(v, g, dim=0):
    """torch._weight_norm: v · g / ‖v‖ (the norm over every dim but `dim`)."""
    return v * (g / norm_except_dim(v, 2, dim))
