"""The helpers torch.nn.functional exports for writing functional code: the BroadcastingList1/2/3 type
annotations (a TorchScript hint, `BroadcastingList2[int]` is an int or a pair of ints; subscripting gives
None, as torch's), `boolean_dispatch` (one public function that calls one of two by a boolean argument,
as max_pool2d does with return_indices), `assert_int_or_pair`, and the `__torch_function__` checks
re-exported from `ferrograd.overrides`."""

from ..overrides import (  # noqa: F401
    handle_torch_function, has_torch_function, has_torch_function_unary, has_torch_function_variadic,
)


class _BroadcastingList:
    """An annotation only: `BroadcastingList2[int]` means an int or a list of two ints."""

    def __getitem__(self, types):
        return None


BroadcastingList1 = _BroadcastingList()
BroadcastingList2 = _BroadcastingList()
BroadcastingList3 = _BroadcastingList()

# the functions made by boolean_dispatch -> how they dispatch (torch keeps this table for TorchScript)
boolean_dispatched = {}


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function that calls if_true(*args, **kwargs) when its argument `arg_name` (keyword, or
    positional at `arg_index`; `default` when not passed) is true, else if_false(*args, **kwargs).
    It takes the docstring of whichever of the two has one (both having one is a RuntimeError)."""

    def dispatch(*args, **kwargs):
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    if docs:
        if_true.__doc__ = if_false.__doc__ = docs[0]
    dispatch.__doc__ = docs[0] if docs else None
    if module_name is not None:
        dispatch.__module__ = module_name
    if func_name is not None:
        dispatch.__name__ = func_name
    boolean_dispatched[dispatch] = {"if_true": if_true, "if_false": if_false, "index": arg_index,
                                    "default": default, "arg_name": arg_name}
    return dispatch


def assert_int_or_pair(arg, arg_name, message):
    """AssertionError(message.format(arg_name)) unless arg is an int or has two elements."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
