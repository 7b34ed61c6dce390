"""torch.overrides: the `__torch_function__` protocol, by which an object that is not a tensor (an
fx Proxy, a user's tensor-like) takes over a call of one of ferrograd's public functions.

Note [torch_function dispatch]
torch checks every call's tensor arguments for `__torch_function__`. ferrograd's functions check
nothing on the normal path: only where an argument has already failed to be a tensor (the branch
that would raise TypeError) do they ask whether it overrides the call, and then hand the call to
`handle_torch_function` with the *public* function as `func`. So a call on tensors costs what it
did, and `F.leaky_relu(proxy)` records a call_function node instead of raising.
"""

import functools

from . import _C, _transform_levels

__all__ = ["has_torch_function", "handle_torch_function", "is_tensor_like"]


def _overrides(value):
    t = type(value)
    return t is not _C.Tensor and getattr(t, "__torch_function__", None) is not None


def _relevant(values):
    """The arguments among `values` (and in their tuples, lists and dict values) that override."""
    found = []
    stack = list(values)
    while stack:
        a = stack.pop(0)
        if isinstance(a, (tuple, list)):
            stack[:0] = a
        elif isinstance(a, dict):
            stack[:0] = a.values()
        elif _overrides(a) and all(a is not f for f in found):  # (`in` would call a Proxy's __eq__)
            found.append(a)
    return found


def has_torch_function(relevant_args):
    """Whether any of `relevant_args` (not a plain Tensor) defines `__torch_function__`."""
    return bool(_relevant(relevant_args))


def is_tensor_like(inp):
    return isinstance(inp, _C.Tensor) or hasattr(type(inp), "__torch_function__")


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call the first `__torch_function__(public_api, types, args, kwargs)` among the overriding
    arguments (subclasses before their bases, as torch) that does not return NotImplemented."""
    overloaded = _relevant(relevant_args)
    overloaded.sort(key=_transform_levels.precedence, reverse=True)
    types = tuple(dict.fromkeys(type(a) for a in overloaded))
    for a in overloaded:
        result = type(a).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = getattr(public_api, "__name__", repr(public_api))
    raise TypeError(f"no implementation found for 'torch.{name}' on types that implement __torch_function__: "
                    f"{[t for t in types]}")


def dispatch_if_overridden(public_api, args, kwargs):
    """The result of the call taken over by an argument's `__torch_function__`, or NotImplemented
    when no argument overrides (the caller then raises its own error). Note [torch_function dispatch]."""
    if not _relevant((args, kwargs)):
        return NotImplemented
    return handle_torch_function(public_api, (args, kwargs), *args, **kwargs)


def overridable(fn):
    """`fn`, handing its call to an argument's `__torch_function__` when the call fails with TypeError
    and some argument overrides (a Python function whose body calls an engine function that refuses a
    tensor-like non-tensor): Note [torch_function dispatch]."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError:
            result = dispatch_if_overridden(call, args, kwargs)
            if result is NotImplemented:
                raise
            return result
    return call
