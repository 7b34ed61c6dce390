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
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)
    return _C._grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """is_grads_batched: each grad_output has a leading batch dimension; one vector-Jacobian product
    per batch entry (torch vectorises with vmap; the results are the same), stacked along dim 0."""
    single = isinstance(outputs, _C.Tensor)
    outs = (outputs,) if single else tuple(outputs)
    if grad_outputs is None:
        raise RuntimeError("If `is_grads_batched=True`, grad_outputs must be provided")
    gos = (grad_outputs,) if isinstance(grad_outputs, _C.Tensor) else tuple(grad_outputs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs: got {len(gos)} grad_outputs "
                           f"for {len(outs)} outputs")
    sizes = {g.shape[0] for g in gos if g is not None}
    if len(sizes) != 1:
        raise RuntimeError("If `is_grads_batched=True`, every grad_output must have the same batch size (dim 0)")
    n = sizes.pop()
    rows = []
    for b in range(n):
        go = [None if g is None else g[b] for g in gos]
        keep = True if b + 1 < n else retain_graph
        rows.append(_C._grad(outs, inputs, go, keep, create_graph, allow_unused, materialize_grads))
    from .. import stack

    return tuple(None if rows[0][k] is None else stack([r[k] for r in rows]) for k in range(len(rows[0])))


from . import functional  # noqa: F401,E402
from . import profiler  # noqa: F401,E402
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401,E402
