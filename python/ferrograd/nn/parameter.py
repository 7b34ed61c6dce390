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
    pass



