"""Custom differentiable operations written in Python (torch.autograd.Function).

`forward` runs under no_grad; the Rust engine records one node named `<Class>Backward` whose
backward is a callback into `backward(ctx, *grads)`, taking the GIL for that call only.
"""

import functools

from .. import _C
from .grad_mode import no_grad
from .._transform_levels import TransformWrapper as _TransformWrapper
from ..overrides import handle_torch_function

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call .backward() "
    "or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time "
    "or if you need to access saved tensors after calling backward."
)


class FunctionCtx:
    """The `ctx` of a custom Function: saved tensors and flags for backward; any other
    attribute can be set freely."""

    materialize_grads = True
    # Read by the engine after forward; class-level defaults make the lookups of the unset ones
    # plain attribute reads instead of caught AttributeErrors (most of a call's cost in a chain of
    # custom Functions).
    to_save = None
    dirty_tensors = None
    non_differentiable = None

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_backward can only save variables, but argument is not a Tensor")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        unpacked = self.__dict__.get("_saved_unpacked")
        if unpacked is not None:
            return unpacked
        if self.__dict__.get("_saved_released"):
            raise RuntimeError(_FREED)
        return tuple(self.__dict__.get("to_save") or ())

    def save_for_forward(self, *tensors):
        """Keep tensors for `jvp` (forward-mode AD), where `saved_tensors` gives them."""
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError("save_for_forward expects all arguments to be tensors; you should save non-tensors "
                                "as attributes on ctx.")
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)


class Function(metaclass=_FunctionMeta):
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or
    `forward(*args)` plus `setup_context(ctx, inputs, output)`), then call `Cls.apply(*args)`."""

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        for a in args:
            if isinstance(a, _TransformWrapper):
                # a dual tensor (forward AD) or another transform's wrapper takes the call: Note
                # [torch_function dispatch] in ferrograd/overrides.py; it runs `_apply_with` on what it unwraps
                return handle_torch_function(cls.apply, (args, kwargs), *args, **kwargs)
        return _apply_with(cls, FunctionCtx(), args, kwargs)


def _apply_with(cls, ctx, args, kwargs):
    """Function.apply's work, with the ctx given (forward AD calls `jvp` with it afterwards)."""
    ctx.needs_input_grad = tuple([isinstance(a, _Tensor) and a.requires_grad for a in args])
    # forward runs without recording (no_grad, written out: this is on every call's path)
    prev = _C._set_grad_enabled(False)
    try:
        if cls.setup_context is not _BASE_SETUP_CONTEXT:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    finally:
        _C._set_grad_enabled(prev)
    is_tuple = isinstance(output, tuple)
    if not is_tuple and not isinstance(output, _Tensor) and any(ctx.needs_input_grad):
        return output
    new = _C._function_record(ctx, cls, args, output if is_tuple else (output,))
    return tuple(new) if is_tuple else new[0]


_Tensor = _C.Tensor
_BASE_SETUP_CONTEXT = Function.setup_context


_TWICE = "trying to differentiate twice a function that was marked with @once_differentiable"


class _OnceDifferentiableError(Function):
    """Stands between a @once_differentiable backward's results and a graph being built over them
    (create_graph=True): the values pass through, differentiating them raises torch's error."""

    @staticmethod
    def forward(ctx, *values):
        return tuple(v.clone() for v in values)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)


def once_differentiable(fn):
    """Run a backward without recording. When a graph of the gradient is being built (grad mode on,
    a gradient that requires grad), its results get a node that raises if they are differentiated,
    as torch's."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not _C.is_grad_enabled() or not any(isinstance(a, _C.Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        values = (outputs,) if single else outputs
        marked = [i for i, v in enumerate(values) if isinstance(v, _C.Tensor)]
        passed = _OnceDifferentiableError.apply(*(values[i].detach().requires_grad_() for i in marked))
        if not isinstance(passed, tuple):
            passed = (passed,)
        out = list(values)
        for i, v in zip(marked, passed):
            out[i] = v
        return out[0] if single else tuple(out)

    return wrapper


class InplaceFunction(Function):
    def __init__(self, inplace=False):
        self.inplace = inplace
