"""torch.nn.utils: gradient clipping (`clip_grad`), parameters to/from one vector (`convert_parameters`),
packed/padded variable-length sequences (`rnn`), parametrizations (`parametrize`, `parametrizations`),
the hook forms of weight/spectral normalisation (`weight_norm`, `spectral_norm`), `stateless.functional_call`,
conv/linear + batch-norm folding (`fusion`) and `skip_init`."""

from . import parametrizations, parametrize, rnn, stateless  # noqa: F401
from .clip_grad import (  # noqa: F401
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights  # noqa: F401
from .init import skip_init  # noqa: F401
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format  # noqa: F401
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401
