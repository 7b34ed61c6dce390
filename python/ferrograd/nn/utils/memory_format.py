"""torch.nn.utils.convert_conv2d/3d_weight_memory_format. ferrograd tensors have one (contiguous) memory
layout, so the conversion only makes each convolution weight contiguous; the module is returned as torch does."""

from ...autograd.grad_mode import no_grad

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    names = {c.__name__ for c in type(module).__mro__}
    if names & kinds:
        with no_grad():
            module.weight.data = module.weight.detach().contiguous()
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weights of every Conv2d / ConvTranspose2d in `module` (in place); returns `module`."""
    return _convert(module, memory_format, {"Conv2d", "ConvTranspose2d"})


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weights of every Conv3d / ConvTranspose3d in `module` (in place); returns `module`."""
    return _convert(module, memory_format, {"Conv3d", "ConvTranspose3d"})
