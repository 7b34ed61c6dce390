"""torch.autograd.functional: vjp, jvp, jacobian, hessian, hvp, vhp.

Compositions of `autograd.grad` with torch's signatures, argument checks and error messages; no
gradient math here. jvp and hvp use the double-backward trick, as torch's: g(u) = J^T u is linear in u,
hence the vjp of g with v gives J v. `vectorize=True` (torch's vmap path) gives the same values,
computed row by row. `jacobian(strategy="forward-mode")` and `hessian(outer_jacobian_strategy=
"forward-mode")` use forward-mode AD (func.jacfwd's columns; forward-over-reverse for the Hessian).
"""

from .. import _C
from .._creation import zeros_like
from .._transform_levels import TransformWrapper as _Wrapper
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_Tensor = _C.Tensor


def _as_tuple(inp, arg_name, fn_name):
    is_tuple = isinstance(inp, tuple)
    items = inp if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, (_Tensor, _Wrapper)):  # (a dual tensor: forward-over-reverse hessian)
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                f"{where} has type {type(el)}."
            )
    return is_tuple, items


def _unpack(res, to_unpack):
    """Undo the tuple wrapping of inputs/outputs that were given as single tensors."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _preprocess(inputs, create_graph, need_graph):
    # With create_graph the result must stay connected to the caller's inputs: a view keeps the edge.
    return tuple(
        inp.view_as(inp) if create_graph and inp.requires_grad else inp.detach().requires_grad_(need_graph)
        for inp in inputs
    )


def _postprocess(res, create_graph):
    if res and isinstance(res[0], (_Tensor, _Wrapper)):
        return res if create_graph else tuple(r.detach() for r in res)
    return tuple(_postprocess(r, create_graph) for r in res)


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}.")


_NOT_DIFF = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be "
    "computed in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
    "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
    "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is twice differentiable and that the jacobian depends on the inputs (this would be violated by a "
    "linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
    "This is not allowed in strict mode. You should ensure that your function is thrice differentiable and that "
    "the hessian depends on the inputs.",
}


def _check_requires_grad(inputs, input_type, strict):
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is not allowed in strict mode."
            )
        if not inp.requires_grad:
            raise RuntimeError(_NOT_DIFF[input_type].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that require grad; None for inputs they do not reach."""
    from . import grad  # the package's, defined before this module is imported

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return tuple(grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True,
                      create_graph=create_graph, retain_graph=retain_graph))


_ZERO_MSG = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
    "using the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
    "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
    "grad_jacobian. This is not allowed in strict mode as it prevents from using the double backward trick to "
    "replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MSG[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is not allowed in "
                "strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _prepare(fn_name, func, inputs, v, create_graph, strict, v_like_inputs):
    """Shared front half: tuple-ize, detach/view the inputs, call func, check v."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _preprocess(inputs, create_graph, need_graph=True)
    if v_like_inputs:
        v = _check_v(fn_name, v, inputs, is_inputs_tuple, create_graph, "the input to the user-provided function is")
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    return is_inputs_tuple, inputs, is_outputs_tuple, outputs, v


def _check_v(fn_name, v, refs, is_refs_tuple, create_graph, what):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _preprocess(v, create_graph, need_graph=False)
        _validate_v(v, refs, is_refs_tuple)
    elif len(refs) != 1 or refs[0].nelement() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a single element.")
    return v


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """v^T J of `func` at `inputs`; returns (func_output, vjp)."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, _ = _prepare("vjp", func, inputs, None, create_graph, strict, False)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _preprocess(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].nelement() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
            )
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _fill_in_zeros(_grad(outputs, inputs, v, create_graph=create_graph), inputs, strict, create_graph, "back")
    return (_unpack(_postprocess(outputs, create_graph), is_outputs_tuple),
            _unpack(_postprocess(res, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """J v of `func` at `inputs` (double-backward trick); returns (func_output, jvp)."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v = _prepare("jvp", func, inputs, v, create_graph, strict, True)
        # u -> J^T u, differentiable in u (u is a dummy of zeros)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        res = _fill_in_zeros(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_postprocess(outputs, create_graph), is_outputs_tuple),
            _unpack(_postprocess(res, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: J[i][j] has shape outputs[i].shape + inputs[j].shape."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function has more '
            'outputs than inputs, "forward-mode" tends to be more performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                'torch.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-mode"` are not '
                'supported together (yet). Please either set `create_graph=False` or `strategy="reverse-mode"`.'
            )
        if strict:
            raise RuntimeError(
                'torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not supported '
                'together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.'
            )
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                "only implemented for `vectorize=True`."
            )
        return _forward_jacobian(func, inputs)
    elif vectorize and strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported together. "
            "Please either set `strict=False` or `vectorize=False`."
        )
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, _ = _prepare("jacobian", func, inputs, None, create_graph, strict, False)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.nelement()):
                vj = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (row, g, inp) in enumerate(zip(rows, vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                f"The jacobian of the user-provided function is independent of input {i}. This is "
                                "not allowed in strict mode when create_graph=True."
                            )
                        row.append(g)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of input {j}. This is not "
                                "allowed in strict mode."
                            )
                        row.append(zeros_like(inp))
            jac.append(tuple(
                _C.stack(row, 0).view(tuple(out.size()) + tuple(inp.size()))
                for row, inp in zip(rows, inputs)
            ))
        return _unpack(_postprocess(tuple(jac), create_graph), (is_outputs_tuple, is_inputs_tuple))


def _forward_jacobian(func, inputs):
    """jacobian(strategy="forward-mode"): a column per input element, by forward-mode AD."""
    from ..func._forward_transforms import jacfwd

    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = tuple(inp.detach() for inp in inputs)
    seen = {}

    def as_tuple_output(*xs):
        seen["tuple"], outs = _as_tuple(func(*xs), "outputs of the user-provided function", "jacobian")
        return outs

    jac = jacfwd(as_tuple_output, argnums=tuple(range(len(inputs))))(*inputs)
    return _unpack(jac, (seen["tuple"], is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar `func` at `inputs`: H[i][j] has shape inputs[i].shape + inputs[j].shape."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple or not isinstance(out, (_Tensor, _Wrapper)):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":  # (dual tensors here; their primals get a graph)
            inp = tuple(t.requires_grad_(True) for t in inp)
        jac = jacobian(single_output, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(fn_name, is_outputs_tuple, outputs):
    if is_outputs_tuple or not isinstance(outputs[0], _Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """v^T H of a scalar `func` at `inputs`; returns (func_output, vhp)."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v = _prepare("vhp", func, inputs, v, create_graph, strict, True)
        _scalar_output("vhp", is_outputs_tuple, outputs)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _fill_in_zeros(_grad(jac, inputs, v, create_graph=create_graph), inputs, strict, create_graph, "double_back")
    return (_unpack(_postprocess(outputs, create_graph), is_outputs_tuple),
            _unpack(_postprocess(res, create_graph), is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """H v of a scalar `func` at `inputs` (double-backward trick); returns (func_output, hvp)."""
    with enable_grad():
        is_inputs_tuple, inputs, is_outputs_tuple, outputs, v = _prepare("hvp", func, inputs, v, create_graph, strict, True)
        _scalar_output("hvp", is_outputs_tuple, outputs)
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(True if create_graph else _C.is_grad_enabled()):
        res = _grad(double_back, grad_jac, v, create_graph=create_graph)
        res = _fill_in_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_postprocess(outputs, create_graph), is_outputs_tuple),
            _unpack(_postprocess(res, create_graph), is_inputs_tuple))
