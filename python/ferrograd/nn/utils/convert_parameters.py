"""torch.nn.utils.convert_parameters: all parameters as one flat vector, and back."""

from ... import _C


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Point each parameter's data at its slice of `vec` (as torch: the slices share vec's storage)."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n

