"""torch.nn.Parameter: a tensor that a Module registers as one of its parameters.

Note [Parameter is a marked Tensor]
`ferrograd.Tensor` is a native class with no Python constructor, so an instance of a Python
subclass cannot be created (`Tensor.__new__` refuses, and `__class__` assignment is refused because
the deallocators differ). A Parameter is therefore an ordinary `ferrograd.Tensor` — a detached
alias of the data, a leaf, with requires_grad set — that is *marked* as a parameter in a weak
registry. `isinstance(t, Parameter)` consults the registry (through the metaclass), so Module
registration, `isinstance` checks and `issubclass(Parameter, Tensor)` behave as in torch. What
differs: `type(p)` is `ferrograd.Tensor`, and `repr(p)` is the tensor's repr without torch's
"Parameter containing:" line. A native `Tensor._make_subclass(cls, data, requires_grad)` would
remove the difference.
"""

import weakref

from .. import _C

# id(tensor) -> tensor, for every live Parameter. Entries vanish when the tensor dies, so an id
# reused by a later object never reads as a parameter.
_marked = weakref.WeakValueDictionary()


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return _marked.get(id(obj)) is obj or super().__instancecheck__(obj)


class Parameter(_C.Tensor, metaclass=_ParameterMeta):
    """Parameter(data=None, requires_grad=True): `data` aliased (storage shared, as torch), a leaf
    that requires grad. See Note [Parameter is a marked Tensor]."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        t = data.detach()
        t.requires_grad_(requires_grad)
        _marked[id(t)] = t
        return t
