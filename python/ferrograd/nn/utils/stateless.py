"""torch.nn.utils.stateless.functional_call: run a module with some of its parameters and buffers
replaced by the given tensors (for that call only), e.g. to differentiate with respect to them."""

import warnings

from ... import _C

__all__ = ["functional_call"]


def _tied_names(module):
    """Map each parameter/buffer name to every name sharing the same tensor object (tied weights)."""
    groups = {}
    for kind in (module.named_parameters, module.named_buffers):
        for name, t in kind(remove_duplicate=False):
            groups.setdefault(id(t), []).append(name)
    return {name: names for names in groups.values() for name in names}


def _split(module, name):
    path, _, leaf = name.rpartition(".")
    return module.get_submodule(path), leaf


def _swap(module, name, value):
    """Put `value` in place of `module.<name>`; return a function restoring the previous state."""
    owner, leaf = _split(module, name)
    for store in ("_parameters", "_buffers"):
        d = owner.__dict__[store]
        if leaf in d:
            old = d[leaf]
            d[leaf] = value

            def restore(d=d, old=old):
                d[leaf] = old

            return restore
    if leaf in owner.__dict__:
        old = owner.__dict__[leaf]
        owner.__dict__[leaf] = value

        def restore_attr():
            owner.__dict__[leaf] = old

        return restore_attr
    owner.__dict__[leaf] = value

    def remove():
        owner.__dict__.pop(leaf, None)

    return remove


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call `module(*args, **kwargs)` with the given tensors standing in for its parameters/buffers
    (deprecated in torch in favour of torch.func.functional_call; warns as torch)."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
        "replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """The body shared with a `func.functional_call`: also takes a tuple of dicts (keys must not repeat)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (list, tuple, set)):
        values = {}
        for d in parameter_and_buffer_dicts:
            for k, v in d.items():
                if k in values:
                    raise ValueError(
                        f"{k} appeared in multiple dictionaries; behavior of functional call is ambiguous"
                    )
                values[k] = v
    else:
        raise ValueError(
            f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
            f"{type(parameter_and_buffer_dicts)}"
        )
    known = _tied_names(module)
    if strict:
        missing = [k for k in known if k not in values]
        unexpected = [k for k in values if k not in known]
        if missing or unexpected:
            msg = ""
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + "."
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:{msg}")
    if tie_weights:
        for name, value in list(values.items()):
            for other in known.get(name, ()):
                if other == name:
                    continue
                if other in values and values[other] is not value:
                    raise ValueError(
                        f"functional_call got multiple values for keys ['{name}', '{other}'], which are tied. "
                        "Consider using tie_weights=False"
                    )
                values.setdefault(other, value)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if kwargs is None:
        kwargs = {}
    restores = []
    try:
        for name, value in values.items():
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"functional_call expects tensors, got {type(value).__name__} for '{name}'")
            restores.append(_swap(module, name, value))
        return module(*args, **kwargs)
    finally:
        for restore in reversed(restores):
            restore()
