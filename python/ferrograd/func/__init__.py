"""torch.func: composable function transforms: grad, grad_and_value, vjp, jacrev, vmap,
functional_call, stack_module_state, replace_all_batch_norm_modules_ (and the forward-mode ones,
jvp, jacfwd, linearize, hessian, where they are built).

The reverse-mode transforms run ferrograd's own autograd (func/_reverse_transforms.py); vmap runs
each op once on the whole batch by its batching rule (func/_vmap.py, func/_batching_rules.py).
"""

from ._module_state import functional_call, replace_all_batch_norm_modules_, stack_module_state
from ._reverse_transforms import grad, grad_and_value, jacrev, vjp
from ._vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "vmap", "functional_call", "stack_module_state",
           "replace_all_batch_norm_modules_"]

try:
    from ._forward_transforms import hessian, jacfwd, jvp, linearize  # noqa: F401

    __all__ += ["jvp", "jacfwd", "linearize", "hessian"]
except ImportError:
    pass
