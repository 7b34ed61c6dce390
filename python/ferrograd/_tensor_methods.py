"""The Tensor class, assembled: every Tensor method and property written in Python is installed here,
once, in the order of `_TOPICS`, by `assemble()` (called from ferrograd/__init__.py). No other module
patches Tensor when it is imported; each topic module declares what it adds:

- `TENSOR_METHODS`: names of its torch functions that are also Tensor methods (a list, or a dict
  name -> function where the method's name is not the function's); each is installed through
  `_as_method`, which gives fn(input, ...) the signature fn(self, ...);
- `TENSOR_ATTRIBUTES`: name -> object installed as it is (methods that take `self` already,
  operators such as `__lshift__`);
- `_tensor_properties.TENSOR_PROPERTIES`: name -> getter, installed as properties.

Then the in-place forms of `_inplace_methods._INPLACE` (Note [in-place through copy_]) are made for
the names the native class lacks, from the out-of-place methods installed by then.

A name installed twice is a bug (one of the two is dead code, and which one wins would depend on the
order): `assemble` raises RuntimeError. A Python attribute that replaces a native one is recorded in
`NATIVE_REPLACED` (tests check that list against the ones meant: Tensor.type).
"""

from . import _C
from . import (
    _bitwise,
    _comparison,
    _creation,
    _histograms,
    _indexing,
    _inplace_methods,
    _linalg_legacy,
    _linalg_lu,
    _linalg_products,
    _pointwise,
    _random_ops,
    _reductions,
    _shape_ops,
    _sorting,
    _tensor_properties,
    _tensor_types,
    _torch_forms,
    linalg,
)
from ._op_utils import _as_method

Tensor = _C.Tensor

# The modules whose TENSOR_METHODS / TENSOR_ATTRIBUTES make up the Python part of Tensor, in order.
_TOPICS = (
    _creation,
    _indexing,
    _sorting,
    _shape_ops,
    _linalg_products,
    _pointwise,
    _comparison,
    _reductions,
    _histograms,
    linalg,
    _linalg_lu,
    _linalg_legacy,
    _random_ops,
    _inplace_methods,
    _tensor_properties,
    _torch_forms,
    _bitwise,
    _tensor_types,
)

# name -> the module that installed it (filled by assemble)
INSTALLED = {}
# native attributes that a Python one replaces (filled by assemble)
NATIVE_REPLACED = []


def _methods_of(module):
    methods = module.TENSOR_METHODS
    if isinstance(methods, dict):
        return list(methods.items())
    return [(name, getattr(module, name)) for name in methods]


def _install(name, value, source, native):
    if name in INSTALLED:
        raise RuntimeError(f"Tensor.{name} is installed by both {INSTALLED[name]} and {source}")
    if name in native:
        NATIVE_REPLACED.append(name)
    INSTALLED[name] = source
    setattr(Tensor, name, value)


def assemble():
    """Install every Python-defined Tensor method and property (once; a second call does nothing)."""
    if INSTALLED:
        return
    native = frozenset(dir(Tensor))
    for module in _TOPICS:
        source = module.__name__
        for name, fn in _methods_of(module):
            _install(name, _as_method(fn), source, native)
        for name, value in module.TENSOR_ATTRIBUTES.items():
            _install(name, value, source, native)
    # in-place forms through copy_, for the listed names the native class lacks
    source = _inplace_methods.__name__ + "._INPLACE"
    for name, cast in _inplace_methods._INPLACE.items():
        if name not in native and hasattr(Tensor, name[:-1]):
            _install(name, _inplace_methods._inplace(name, getattr(Tensor, name[:-1]), cast), source, native)
    source = _tensor_properties.__name__ + ".TENSOR_PROPERTIES"
    for name, getter in _tensor_properties.TENSOR_PROPERTIES.items():
        _install(name, property(getter), source, native)
