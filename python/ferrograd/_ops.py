"""torch.ops: the operator namespaces (`torch.ops.aten.add.Tensor`, `torch.ops.aten.relu.default`),
as fx passes, profilers and decompositions name ops.

ferrograd has no dispatcher: each aten operator here is a callable that runs the ferrograd function
of the same meaning (`ferrograd.add`, `Tensor.relu_`, `nn.functional.linear`, ...), with an adapter
where aten's signature differs from the public one (`aten.view(self, size)`, `aten._softmax(self,
dim, half_to_float)`, `aten.slice.Tensor(self, dim, start, end, step)`, ...). Overload objects are
made once, so `node.target is torch.ops.aten.add.Tensor` comparisons hold. Operators of other
namespaces, and loading C++ operator libraries, are not supported (torch's AttributeError /
a NotImplementedError).
"""

import os

# The tensor overloads of the common aten operators (torch's names; the Python-scalar overloads
# such as add.int are left out). An operator not listed here has the one overload "default", if
# ferrograd has a function or Tensor method of its name.
_OVERLOADS = {
    "add": ("Tensor", "Scalar", "out", "default"), "add_": ("Tensor", "Scalar"),
    "sub": ("Tensor", "Scalar", "out", "default"), "sub_": ("Tensor", "Scalar"),
    "mul": ("Tensor", "Scalar", "out", "default"), "mul_": ("Tensor", "Scalar"),
    "div": ("Tensor", "Scalar", "Tensor_mode", "Scalar_mode", "out", "default"), "div_": ("Tensor", "Scalar"),
    "rsub": ("Tensor", "Scalar"),
    "pow": ("Tensor_Tensor", "Tensor_Scalar", "Scalar"), "pow_": ("Tensor", "Scalar"),
    "sum": ("dim_IntList", "default", "out"), "mean": ("default", "dim", "out"),
    "prod": ("default", "dim_int"), "amax": ("default",), "amin": ("default",),
    "max": ("other", "default", "dim"), "min": ("other", "default", "dim"),
    "var": ("default", "dim", "correction"), "std": ("default", "dim", "correction"),
    "argmax": ("default",), "argmin": ("default",),
    "squeeze": ("default", "dim", "dims"), "unsqueeze": ("default",), "transpose": ("int",),
    "softmax": ("int",), "log_softmax": ("int",), "_softmax": ("default", "out"), "_log_softmax": ("default", "out"),
    "slice": ("Tensor",), "select": ("int",), "split": ("Tensor", "sizes"), "split_with_sizes": ("default",),
    "eq": ("Tensor", "Scalar"), "ne": ("Tensor", "Scalar"), "lt": ("Tensor", "Scalar"), "le": ("Tensor", "Scalar"),
    "gt": ("Tensor", "Scalar"), "ge": ("Tensor", "Scalar"),
    "where": ("self", "ScalarOther", "ScalarSelf", "Scalar"), "clamp": ("default", "Tensor"),
    "arange": ("default", "start", "start_step"), "full": ("default",), "zeros": ("default",),
    "ones": ("default",), "empty": ("memory_format",), "fill": ("Scalar", "Tensor"), "fill_": ("Scalar", "Tensor"),
    "masked_fill": ("Scalar", "Tensor"), "masked_fill_": ("Scalar", "Tensor"), "index": ("Tensor",),
    "gather": ("default",), "scatter": ("src", "value"), "scatter_add": ("default",),
    "bitwise_and": ("Tensor", "Scalar"), "bitwise_or": ("Tensor", "Scalar"), "remainder": ("Tensor", "Scalar"),
    "floor_divide": ("default", "Scalar"), "maximum": ("default",), "minimum": ("default",),
    "topk": ("default",), "sort": ("default", "stable"), "cumsum": ("default",), "flip": ("default",),
    "roll": ("default",), "repeat": ("default",), "chunk": ("default",), "unbind": ("int",),
    "norm": ("Scalar", "ScalarOpt_dim"), "dropout": ("default",), "leaky_relu": ("default",),
    "hardtanh": ("default",), "gelu": ("default",), "silu": ("default",), "threshold_backward": ("default",),
}

_ALIASES = {"lift_fresh_copy": "clone", "_unsafe_view": "view", "alias": "view_as_self", "fill": "full_like_value"}


def _slice(self, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * self.dim()
    index[dim] = slice(start, end, step)
    return self[tuple(index)]


def _native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(output, mean, rstd): the statistics over the last len(normalized_shape) dims, kept."""
    from .nn import functional as F

    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    return F.layer_norm(input, normalized_shape, weight, bias, eps), mean, rstd


def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, *extra):
    from .nn import functional as F

    nd = weight.dim() - 2
    if transposed:
        fn = getattr(F, f"conv_transpose{nd}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


def _to_copy(self, *, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    return self.to(dtype=dtype if dtype is not None else self.dtype, device=device, copy=True)


def _scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None):
    from . import _settings, tensor

    return tensor(s, dtype=dtype if dtype is not None else _settings.get_default_dtype(), device=device)


def _threshold_backward(grad_output, self, threshold):
    from . import where, zeros_like

    return where(self <= threshold, zeros_like(grad_output), grad_output)


def _embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    from .nn import functional as F

    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _as_list(name):
    """aten's split-like ops return a list of tensors (the public functions a tuple)."""
    def op(*args, **kwargs):
        import ferrograd

        return list(getattr(ferrograd, name)(*args, **kwargs))
    return op


def _adapters():
    from . import Tensor

    return {
        **{name: _as_list(name) for name in ("split", "split_with_sizes", "unbind", "chunk", "tensor_split")},
        "view": lambda self, size: self.view(size),
        "view_as_self": lambda self: self.view(self.shape),
        "expand": lambda self, size, *, implicit=False: self.expand(size),
        "slice": _slice,
        "select": lambda self, dim, index: self.select(dim, index),
        "_softmax": lambda self, dim, half_to_float=False: self.softmax(dim),
        "_log_softmax": lambda self, dim, half_to_float=False: self.log_softmax(dim),
        "native_layer_norm": _native_layer_norm,
        "convolution": _convolution,
        "_to_copy": _to_copy,
        "scalar_tensor": _scalar_tensor,
        "threshold_backward": _threshold_backward,
        "embedding": _embedding,
        "sym_size": lambda self, dim=None: self.size() if dim is None else self.size(dim),
        "sym_numel": Tensor.numel,
        "full_like_value": lambda self, value: self.new_full(self.shape, value),
        "copy": lambda self, src, non_blocking=False: src.to(dtype=self.dtype, device=self.device).expand(self.shape).clone(),
    }


_ADAPTERS = None


def _resolve(name):
    """The ferrograd callable of aten operator `name`, or None."""
    global _ADAPTERS
    if _ADAPTERS is None:
        _ADAPTERS = _adapters()
    name = _ALIASES.get(name, name)
    if name in _ADAPTERS:
        return _ADAPTERS[name]
    import ferrograd

    if not name.startswith("_") and name in dir(ferrograd):
        fn = getattr(ferrograd, name)
        if callable(fn) and not isinstance(fn, type):
            return fn
    from .nn import functional as F

    fn = getattr(F, name, None)
    if callable(fn) and not name.startswith("_"):
        return fn
    method = getattr(ferrograd.Tensor, name, None)
    if callable(method):
        return method
    return None


class OpOverload:
    """One overload of an operator (`torch.ops.aten.add.Tensor`): callable, named as torch names it."""

    def __init__(self, packet, overload_name):
        self.overloadpacket = packet
        self._overloadname = overload_name
        self._opname = packet.__name__
        self.namespace = packet._namespace
        self.__name__ = f"{self._opname}.{overload_name}"
        self.__qualname__ = self._name = f"{self.namespace}::{self._opname}.{overload_name}"
        self.__module__ = f"ferrograd._ops.{self.namespace}"
        self._fn = packet._fn

    def name(self):
        return self._name

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverload(op='{self.namespace}.{self._opname}', overload='{self._overloadname}')>"

    def __str__(self):
        return f"{self.namespace}.{self._opname}.{self._overloadname}"


class OpOverloadPacket:
    """An operator with its overloads (`torch.ops.aten.add`): callable (the arguments choose the
    overload), and each overload an attribute."""

    def __init__(self, namespace, name, fn, overload_names):
        self._namespace = namespace
        self.__name__ = name
        self.__qualname__ = name
        self._qualified_op_name = f"{namespace}::{name}"
        self._fn = fn
        self._overload_names = list(overload_names)
        self._dir = []

    def overloads(self):
        return list(self._overload_names)

    def __getattr__(self, key):
        if key.startswith("__"):
            raise AttributeError(key)
        if key not in self._overload_names:
            raise AttributeError(f"The underlying op of '{self._namespace}.{self.__name__}' has no overload name '{key}'")
        overload = OpOverload(self, key)
        setattr(self, key, overload)
        self._dir.append(key)
        return overload

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._namespace}.{self.__name__}')>"

    def __str__(self):
        return f"{self._namespace}.{self.__name__}"

    def __iter__(self):
        return iter(self._dir)


class _OpNamespace:
    """`torch.ops.<namespace>`: its operators as attributes (only aten has any in ferrograd)."""

    def __init__(self, name):
        self.name = name
        self.__name__ = f"ferrograd.ops.{name}"

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        fn = _resolve(op_name) if self.name == "aten" else None
        if fn is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        packet = OpOverloadPacket(self.name, op_name, fn, _OVERLOADS.get(op_name, ("default",)))
        setattr(self, op_name, packet)
        return packet

    def __repr__(self):
        return f"<module 'ferrograd.ops.{self.name}'>"


class _Ops:
    """`torch.ops`: operator namespaces by attribute (torch.ops.aten, torch.ops.prims, ...)."""

    __name__ = "ferrograd.ops"

    def __init__(self):
        self._namespaces = {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        ns = self._namespaces.get(name)
        if ns is None:
            ns = self._namespaces[name] = _OpNamespace(name)
        return ns

    def load_library(self, path):
        """Loading a C++ operator library (torch.ops.load_library) needs torch's dispatcher, which
        ferrograd does not have: OSError for a path that is not there (as torch), NotImplementedError
        otherwise."""
        if not os.path.exists(os.path.realpath(path)):
            raise OSError(f"Could not load this library: {path}")
        raise NotImplementedError(f"ferrograd cannot load C++ operator libraries (torch.ops.load_library({path!r})): "
                                  "custom torch operators need PyTorch's dispatcher")

    def __repr__(self):
        return "<module 'ferrograd.ops'>"


ops = _Ops()
