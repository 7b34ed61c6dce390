"""torch.autograd: backward, grad, grad modes, graph inspection."""

import operator

from .. import _C
from .grad_mode import enable_grad, no_grad, set_grad_enabled, inference_mode  # noqa: F401
from . import graph  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .anomaly_mode import detect_anomaly, set_detect_anomaly, is_anomaly_enabled  # noqa: F401
from .variable import Variable  # noqa: F401
from .engine_modes import enforce_grad_layout_policy, set_multithreading_enabled  # noqa: F401
from .nested_io_function import NestedIOFunction  # noqa: F401


# torch's argument handling of backward() and grad(), in its order (the errors a misuse gets depend on it)

def _as_tuple(tensors):
    """A tensor as a 1-tuple, a dict as its values, any other iterable as a tuple."""
    if isinstance(tensors, _C.Tensor):
        return (tensors,)
    if type(tensors) is dict:
        return tuple(tensors.values())
    return tuple(tensors)


def _make_grads(outputs, grads):
    """Each (output, gradient) pair checked; extra gradients are dropped (zip), missing ones are the
    engine's count error."""
    new = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, _C.Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if isinstance(g, _C.Tensor):
            if tuple(g.shape) != tuple(out.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                                   f"has a shape of {out.shape}.")
        elif g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        new.append(g)
    return new


def _engine_checks(tensors, grads, inputs):
    if len(tensors) != len(grads):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
    for t in inputs:
        if not isinstance(t, _C.Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")


def _flag(v):
    """retain_graph / create_graph: any integer-like value (torch's C parser), None left as it is."""
    return v if v is None else operator.index(v) != 0


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate gradients of `tensors` into the leaves' `.grad` (torch.autograd.backward)."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    inputs_tuple = () if inputs is None else _as_tuple(inputs)
    if inputs is not None and not inputs_tuple:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _as_tuple(tensors)
    grads = (None,) * len(tensors) if grad_tensors is None else _as_tuple(grad_tensors)
    grads = _make_grads(tensors, grads)
    _engine_checks(tensors, grads, inputs_tuple)
    _C._backward(tensors, grads, _flag(retain_graph), _flag(create_graph), inputs_tuple or None)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` with respect to `inputs`, returned rather than accumulated."""
    if not isinstance(outputs, _C.Tensor) or not isinstance(inputs, _C.Tensor):
        # a dual tensor (forward AD: the gradient's own tangent) takes the call, as torch's
        # has_torch_function check; Note [torch_function dispatch] in ferrograd/overrides.py
        from ..overrides import dispatch_if_overridden

        result = dispatch_if_overridden(grad, (outputs, inputs, grad_outputs), dict(
            retain_graph=retain_graph, create_graph=create_graph, only_inputs=only_inputs, allow_unused=allow_unused,
            is_grads_batched=is_grads_batched, materialize_grads=materialize_grads))
        if result is not NotImplemented:
            return result
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)
    grads = (None,) * len(outputs) if grad_outputs is None else _as_tuple(grad_outputs)
    grads = _make_grads(outputs, grads)
    _engine_checks(outputs, grads, inputs)
    return _C._grad(outputs, inputs, grads, _flag(retain_graph), _flag(create_graph), allow_unused, materialize_grads)


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
from . import forward_ad  # noqa: F401,E402
from . import profiler  # noqa: F401,E402
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401,E402
