"""Decorators of torch.utils.data.datapipes._decorator: functional_datapipe (register a DataPipe class
as a functional form), non_deterministic and guaranteed_datapipes_determinism (refuse nondeterministic
DataPipes while determinism is required), argument_validation (check DataPipe-typed arguments) and
runtime_validation / runtime_validation_disabled (check each item an `__iter__` yields against the
DataPipe's declared item type, `class P(IterDataPipe[int])`). torch 2.15 has switched its DataPipe typing
off (its runtime_validation fails with AttributeError 'type' when the pipe is iterated); ferrograd's
checks the items as documented."""
import functools
import inspect
import typing

from .datapipe import IterDataPipe, MapDataPipe

__all__ = ["argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic",
           "runtime_validation", "runtime_validation_disabled"]

_determinism = False
_runtime_validation_enabled = True


class functional_datapipe:
    """`@functional_datapipe("name")` on a DataPipe class makes `dp.name(...)` build it from `dp`."""

    name: str

    def __init__(self, name, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else cls
        family = MapDataPipe if isinstance(target, type) and issubclass(target, MapDataPipe) else IterDataPipe
        family.register_datapipe_as_function(self.name, cls, enable_df_api_tracing=self.enable_df_api_tracing)
        return cls


class guaranteed_datapipes_determinism:
    """A context in which constructing a nondeterministic DataPipe raises TypeError."""

    prev: bool

    def __init__(self):
        global _determinism
        self.prev = _determinism
        _determinism = True

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        global _determinism
        _determinism = self.prev


class non_deterministic:
    """Marks a DataPipe class as nondeterministic, always (`@non_deterministic`) or when a function of the
    constructor's arguments says so (`@non_deterministic(lambda *args: ...)`)."""

    cls = None
    deterministic_fn = None

    def __init__(self, arg):
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError(f"Only `IterDataPipe` can be decorated with `non_deterministic`, but {arg.__name__} "
                                "is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set 'guaranteed_datapipes_"
                                "determinism'. You can turn off determinism for this DataPipe if that is acceptable "
                                "for your application")
            return self.cls(*args, **kwargs)
        # decorating a class with a deterministic_fn
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is found")
        self.cls = args[0]
        return self._checked

    def _checked(self, *args, **kwargs):
        result = self.deterministic_fn(*args, **kwargs)
        if not isinstance(result, bool):
            raise TypeError(f"deterministic_fn of `non_deterministic` decorator is required to return a boolean "
                            f"value, but {type(result)} is found")
        if _determinism and result:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism for this DataPipe if "
                            "that is acceptable for your application")
        return self.cls(*args, **kwargs)


def _datapipe_family(hint):
    """(DataPipe class, item type or None) of an annotation like IterDataPipe[int]; (None, None) otherwise."""
    origin = typing.get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, (IterDataPipe, MapDataPipe)):
        args = typing.get_args(hint)
        return origin, (args[0] if args else None)
    return None, None


def _declared_item_type(dp):
    for base in getattr(type(dp), "__orig_bases__", ()):
        family, item = _datapipe_family(base)
        if family is not None and item is not None and not isinstance(item, typing.TypeVar):
            return item
    return None


def _is_instance(value, hint):
    if hint is typing.Any or hint is None:
        return True
    origin = typing.get_origin(hint)
    if origin is typing.Union:
        return any(_is_instance(value, h) for h in typing.get_args(hint))
    if origin is not None:
        if not isinstance(value, origin):
            return False
        args = typing.get_args(hint)
        if origin in (list, set, frozenset) and args:
            return all(_is_instance(v, args[0]) for v in value)
        if origin is tuple and args:
            if len(args) == 2 and args[1] is Ellipsis:
                return all(_is_instance(v, args[0]) for v in value)
            return len(args) == len(value) and all(_is_instance(v, h) for v, h in zip(value, args))
        if origin is dict and args:
            return all(_is_instance(k, args[0]) and _is_instance(v, args[1]) for k, v in value.items())
        return True
    if isinstance(hint, typing.TypeVar):
        return True
    return isinstance(value, hint)


def argument_validation(f):
    """Check the arguments annotated with a DataPipe class (`dp: IterDataPipe`): TypeError when one is not
    an instance of it. Subscripted hints (`IterDataPipe[int]`) are not checked: torch 2.15 has DataPipe
    typing switched off, so its argument_validation accepts any value there, and so does ferrograd."""
    signature = inspect.signature(f)
    hints = typing.get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = hints.get(name)
            if isinstance(hint, type) and issubclass(hint, (IterDataPipe, MapDataPipe)) and not isinstance(value, hint):
                raise TypeError(f"Expected argument '{name}' as a {hint.__name__}, but found {type(value)}")
        return f(*args, **kwargs)

    return wrapper


class runtime_validation_disabled:
    """A context in which runtime_validation does not check items."""

    prev: bool

    def __init__(self):
        global _runtime_validation_enabled
        self.prev = _runtime_validation_enabled
        _runtime_validation_enabled = False

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def runtime_validation(f):
    """Decorate a DataPipe's `__iter__`: each yielded item must be an instance of the declared item type
    (RuntimeError otherwise)."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        item_type = _declared_item_type(self)
        for item in f(self):
            if _runtime_validation_enabled and item_type is not None and not _is_instance(item, item_type):
                raise RuntimeError(f"Expected an instance as subtype of {item_type}, but found {item}({type(item)})")
            yield item

    return wrapper
