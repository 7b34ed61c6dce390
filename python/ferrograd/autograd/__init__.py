"""torch.autograd: backward, grad, grad modes, graph inspection."""

from .. import _C
from .grad_mode import enable_grad, no_grad, set_grad_enabled, inference_mode  # noqa: F401
from . import graph  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa: F401


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate gradients of `tensors` into the leaves' `.grad` (torch.autograd.backward)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    _C._backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` with respect to `inputs`, returned rather than accumulated."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported yet")
    return _C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)


from . import functional  # noqa: F401,E402
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401,E402
