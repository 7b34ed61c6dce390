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
    _function_forms,
    _histograms,
    _indexing,
    _inplace_methods,
    _linalg_householder,
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
    _function_forms,
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
    _linalg_householder,
    _random_ops,
    _inplace_methods,
    _tensor_properties,
    _torch_forms,
    _bitwise,
    _tensor_types,
)

# name -> the module that installed it, and the native attributes a Python one replaced (filled by assemble)
INSTALLED = {}
NATIVE_REPLACED = []


def _methods_of(module):
    methods = module.TENSOR_METHODS
    if isinstance(methods, dict):
        return list(methods.items())
    return [(name, getattr(module, name)) for name in methods]


def install(cls, topics, inplace=None, properties=None):
    """Install into `cls` the methods and attributes the `topics` declare, then the in-place forms of
    `inplace` (name -> cast check) that cls lacks, then `properties` (name -> getter). Returns
    (name -> installer, [native names replaced]); a name installed twice raises RuntimeError."""
    native = frozenset(dir(cls))
    installed, replaced = {}, []

    def put(name, value, source):
        if name in installed:
            raise RuntimeError(f"Tensor.{name} is installed by both {installed[name]} and {source}")
        if name in native:
            replaced.append(name)
        installed[name] = source
        setattr(cls, name, value)

    for module in topics:
        for name, fn in _methods_of(module):
            put(name, _as_method(fn), module.__name__)
        for name, value in module.TENSOR_ATTRIBUTES.items():
            put(name, value, module.__name__)
    # in-place forms through copy_, for the listed names the native class lacks
    for name, cast in (inplace or {}).items():
        if name not in native and hasattr(cls, name[:-1]):
            put(name, _inplace_methods._inplace(name, getattr(cls, name[:-1]), cast), "_inplace_methods._INPLACE")
    for name, getter in (properties or {}).items():
        put(name, property(getter), "_tensor_properties.TENSOR_PROPERTIES")
    return installed, replaced


def assemble():
    """Install every Python-defined Tensor method and property (once; a second call does nothing)."""
    if INSTALLED:
        return
    installed, replaced = install(Tensor, _TOPICS, _inplace_methods._INPLACE, _tensor_properties.TENSOR_PROPERTIES)
    INSTALLED.update(installed)
    NATIVE_REPLACED.extend(replaced)
