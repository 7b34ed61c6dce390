"""torch.nn.Parameter: a tensor that a Module registers as one of its parameters.

A real subclass of ferrograd.Tensor: `Tensor.__new__(cls, data)` makes an instance sharing
`data`'s storage, as torch's `_make_subclass`. Ops on parameters return plain Tensors.
"""



from .. import _C


class Parameter(_C.Tensor):
    """Parameter(data=None, requires_grad=True): `data` aliased (storage shared, as torch), a leaf
    that requires grad."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.empty(0)
        if not isinstance(data, _C.Tensor):
            data = data.detach()  # torch's path for other types (their AttributeError)
            if not isinstance(data, _C.Tensor):
                raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        t = _C.Tensor.__new__(cls, data.detach())
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.clone()
        memo[id(self)] = result
        return result

    def __reduce__(self):
        return (_rebuild_parameter, (self.detach().clone(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (lazy modules): holds no data until `materialize`, which
    gives it storage and turns it into a plain Parameter (same object)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = Parameter.__new__(cls, _C.empty(0, dtype=dtype or _C.float32, device=device), requires_grad)
        t._lazy_device, t._lazy_dtype = device, dtype or _C.float32
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        """Allocate `shape` (uninitialised values) in place and become a Parameter."""
        device = device if device is not None else self._lazy_device
        dtype = dtype if dtype is not None else self._lazy_dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = _C.empty(shape, dtype=dtype, device=device)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self._lazy_device, self._lazy_dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(_C.Tensor):
    """A buffer whose shape is not known yet (lazy modules); the module replaces it on first call."""

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        t = _C.Tensor.__new__(cls, _C.empty(0, dtype=dtype or _C.float32, device=device))
        t._lazy_device, t._lazy_dtype = device, dtype or _C.float32
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass

    def __repr__(self):
        return "<UninitializedBuffer>"


class Buffer(_C.Tensor):
    """Buffer(data=None, *, persistent=True): a tensor that, assigned to a Module attribute, is registered
    as a buffer (in the state_dict unless persistent=False). Shares `data`'s storage."""

    _is_buffer = True

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.empty(0)
        t = _C.Tensor.__new__(cls, data.detach())
        t.requires_grad_(data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass
