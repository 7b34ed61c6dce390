"""NestedIOFunction: the legacy instance-style custom Function whose inputs and outputs may be nested
tuples/lists of tensors (`forward_extended(*nested)` / `backward_extended(*nested_grads)`), kept by torch
for backward compatibility. torch 2.15's class fails when called (its base lost `_do_forward`);
ferrograd's runs: the nested structure is flattened into one recorded custom Function and rebuilt on both
sides."""

from .. import _C
from .function import Function

__all__ = ["NestedIOFunction"]


def _flatten(obj):
    """The tensors of a nested structure, in order."""
    if isinstance(obj, _C.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o)


def _flatten_grads(obj):
    """Like _flatten, with None kept as a gradient slot."""
    if obj is None or isinstance(obj, _C.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten_grads(o)


def _rebuild(flat, like):
    """`like`'s structure with its tensors replaced, in order, by the items of the iterator `flat`."""
    if isinstance(like, _C.Tensor):
        return next(flat)
    if isinstance(like, (list, tuple)):
        return type(like)(_rebuild(flat, o) for o in like)
    return like


class NestedIOFunction(Function):
    """Subclass and define `forward_extended(self, *inputs)` and `backward_extended(self, *grad_outputs)`;
    call an instance: `MyFn()(x, (y, z))`. Inside, use `self.save_for_backward(...)` (nested too),
    `self.saved_tensors`, `self.mark_dirty`, `self.mark_non_differentiable`, `self.needs_input_grad`."""

    def __call__(self, *inputs):
        owner = self
        flat_inputs = tuple(_flatten(inputs))

        class _Flat(Function):
            @staticmethod
            def forward(ctx, *flat):
                owner._ctx = ctx
                owner.needs_input_grad = ctx.needs_input_grad
                result = owner.forward_extended(*_rebuild(iter(flat), inputs))
                owner._nested_output = result
                if getattr(owner, "to_save", None) is not None:
                    ctx.save_for_backward(*owner.to_save)
                if getattr(owner, "dirty_tensors", None):
                    ctx.mark_dirty(*owner.dirty_tensors)
                if getattr(owner, "non_differentiable", None):
                    ctx.mark_non_differentiable(*owner.non_differentiable)
                return tuple(_flatten(result))

            @staticmethod
            def backward(ctx, *grads):
                nested = _rebuild(iter(grads), owner._nested_output)
                result = owner.backward_extended(*nested)
                if not isinstance(result, tuple):
                    result = (result,)
                return tuple(_flatten_grads(result))

        _Flat.__name__ = _Flat.__qualname__ = type(self).__name__
        flat_out = _Flat.apply(*flat_inputs)
        if isinstance(flat_out, _C.Tensor):
            flat_out = (flat_out,)
        return _rebuild(iter(flat_out), self._nested_output)

    def save_for_backward(self, *args):
        self.to_save = tuple(_flatten(args))
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        return _rebuild(iter(self._ctx.saved_tensors), self._to_save_nested)

    def mark_dirty(self, *args, **kwargs):
        self.dirty_tensors = tuple(_flatten((args, tuple(kwargs.values()))))

    def mark_non_differentiable(self, *args, **kwargs):
        self.non_differentiable = tuple(_flatten((args, tuple(kwargs.values()))))

    def forward_extended(self, *input):
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        raise NotImplementedError
