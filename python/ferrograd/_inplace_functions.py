"""The top-level in-place functions torch exports outside the op table (torch.zero_(x),
torch.fill_(x, v), torch.dropout_(x, p, train), ...), and the few out-of-place top-level names that
torch keeps beside them (torch.dropout, torch.celu, torch.selu, torch.rrelu, torch.threshold,
torch.fill).

Each is the Tensor method or the nn.functional function ferrograd already has, called with the input
checked as torch's argument parser checks it; nothing here computes anything of its own.
"""
from . import _C
from ._argcheck import check_arg

Tensor = _C.Tensor

# torch.<name>(input, *args) -> input.<name>(*args); the op table's in-place functions (torch.exp_ ...)
# are generated with its function forms (_function_forms.py)
_METHOD_FORMS = """
addmv_ clamp_ clamp_max_ clamp_min_ clip_ deg2rad_ detach_ exp2_ fill_ frac_ index_put_ log10_ logit_ nan_to_num_
rad2deg_ resize_as_ sinc_ xlogy_ zero_
""".split()


def _method_form(name):
    def fn(input, *args, **kwargs):
        input = check_arg("Tensor", input, name, "input", 1)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}(input, ...): the in-place method input.{name}(...)."
    return fn


def _F():
    from .nn import functional
    return functional


def _need(fname, args, names):
    """torch's parser message for missing positional arguments."""
    if len(args) < len(names):
        missing = names[len(args):]
        quoted = ", ".join(f'"{m}"' for m in missing)
        raise TypeError(f"{fname}() missing {len(missing)} required positional arguments: {quoted}")


def dropout(input, *args, **kwargs):
    """torch.dropout(input, p, train): nn.functional.dropout with the training flag required."""
    return _dropout("dropout", False, input, *args, **kwargs)


def dropout_(input, *args, **kwargs):
    """torch.dropout_(input, p, train): dropout in place."""
    return _dropout("dropout_", True, input, *args, **kwargs)


def _dropout(fname, inplace, input, *args, **kwargs):
    input = check_arg("Tensor", input, fname, "input", 1)
    args = list(args)
    for name in ("p", "train"):
        if name in kwargs:
            args.append(kwargs.pop(name))
    if kwargs:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _need(fname, args, ["p", "train"])
    if len(args) > 2:
        raise TypeError(f"{fname}() takes 3 positional arguments but {len(args) + 1} were given")
    p, train = args
    if isinstance(p, (int, float)) and not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _F().dropout(input, p, train, inplace=inplace)


def celu(input, alpha=1.0):
    return _F().celu(check_arg("Tensor", input, "celu", "input", 1), alpha)


def celu_(input, alpha=1.0):
    return _F().celu(check_arg("Tensor", input, "celu_", "input", 1), alpha, inplace=True)


def selu(input):
    return _F().selu(check_arg("Tensor", input, "selu", "input", 1))


def selu_(input):
    return _F().selu(check_arg("Tensor", input, "selu_", "input", 1), inplace=True)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    input = check_arg("Tensor", input, "rrelu", "input", 1)
    if generator is not None:
        raise NotImplementedError("rrelu: a generator argument is not supported yet")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    input = check_arg("Tensor", input, "rrelu_", "input", 1)
    if generator is not None:
        raise NotImplementedError("rrelu_: a generator argument is not supported yet")
    return _F().rrelu(input, lower, upper, training, inplace=True)


def threshold(input, threshold, value, *, out=None):
    from ._out import out_call
    input = check_arg("Tensor", input, "threshold", "input", 1)
    return out_call("threshold", lambda: _F().threshold(input, threshold, value), out, (input,), dtype="cast")


def threshold_(input, threshold, value):
    input = check_arg("Tensor", input, "threshold_", "input", 1)
    return _F().threshold(input, threshold, value, inplace=True)


def fill(input, value):
    """torch.fill(input, value): a new tensor like input, filled with value (differentiable in value)."""
    input = check_arg("Tensor", input, "fill", "input", 1)
    return input.clone().fill_(value) if not isinstance(value, Tensor) else _fill_tensor(input, value)


def _fill_tensor(input, value):
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                           "dimensions.")
    return value.to(input.dtype).expand(tuple(input.shape)).clone()


def conj_physical_(input):
    """For real tensors (the only ones ferrograd has), conj_physical_ leaves the input as it is."""
    return check_arg("Tensor", input, "conj_physical_", "input", 1)


def _tensor_conj_physical_(self):
    return self


_g = globals()
for _n in _METHOD_FORMS:
    _g[_n] = _method_form(_n)
del _g, _n

__all__ = list(_METHOD_FORMS) + """
dropout dropout_ celu celu_ selu selu_ rrelu rrelu_ threshold threshold_ fill conj_physical_
""".split()

Tensor.conj_physical_ = _tensor_conj_physical_
