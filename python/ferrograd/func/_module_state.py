"""torch.func's module helpers: functional_call (run a module with other tensors in place of its
parameters and buffers), stack_module_state (the parameters of many copies of a model, stacked for
vmap) and replace_all_batch_norm_modules_ (batch norm without running statistics, for vmap).

functional_call swaps the entries of the modules' `_parameters` / `_buffers` dicts for the call and
puts the originals back after it, so the replacements may be anything a transform hands over (a
batched tensor under vmap, a tensor with a graph under grad), not only Parameters.
"""

from .. import _C

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_"]


def _merge(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    if isinstance(parameter_and_buffer_dicts, (tuple, list)):
        merged = {}
        seen = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(f"Expected all elements of parameter_and_buffer_dicts to be dictionaries, got "
                                 f"{type(d)}")
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        dup = [k for k, n in seen.items() if n > 1]
        if dup:
            raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        for d in parameter_and_buffer_dicts:
            merged.update(d)
        return merged
    raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                     f"{type(parameter_and_buffer_dicts)}")


def _tied_groups(module):
    """name -> every name (parameters and buffers) that holds the same tensor."""
    by_id = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        if t is not None:
            by_id.setdefault(id(t), []).append(name)
    groups = {}
    for names in by_id.values():
        if len(names) > 1:
            for n in names:
                groups[n] = names
    return groups


def _locate(module, name):
    owner = module
    *path, attr = name.split(".")
    for p in path:
        owner = getattr(owner, p)
    return owner, attr


_MISSING = object()


def _swap(owner, attr, value):
    """Put `value` in owner's slot `attr`; returns how to undo it."""
    d = owner.__dict__
    for store in ("_parameters", "_buffers"):
        slot = d.get(store)
        if slot is not None and attr in slot:
            old = slot[attr]
            slot[attr] = value
            return (slot, attr, old)
    old = d.get(attr, _MISSING)
    d[attr] = value
    return (d, attr, old)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """torch.func.functional_call: module(*args, **kwargs) with the given tensors in place of the
    parameters and buffers they name."""
    values = _merge(parameter_and_buffer_dicts)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs
    if tie_weights:
        groups = _tied_groups(module)
        for name in list(values):
            for other in groups.get(name, ()):
                if other != name and other in values and values[other] is not values[name]:
                    tied = sorted(n for n in groups[name] if n in values)
                    raise ValueError(f"functional_call got multiple values for keys {tied}, which are tied. Consider "
                                     "using tie_weights=False")
        for name in list(values):
            for other in groups.get(name, ()):
                values.setdefault(other, values[name])
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
                {n for n, _ in module.named_buffers(remove_duplicate=False)}
        unexpected = sorted(k for k in values if k not in known)
        missing = sorted(k for k in known if k not in values)
        if unexpected or missing:
            lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                lines.append("\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                lines.append("\tMissing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError("\n".join(lines))
    undo = []
    try:
        for name, value in values.items():
            try:
                owner, attr = _locate(module, name)
            except AttributeError:
                continue  # (non-strict: a key that names nothing of the module is left out)
            undo.append(_swap(owner, attr, value))
        return module(*args, **kwargs)
    finally:
        for d, attr, old in reversed(undo):
            if old is _MISSING:
                del d[attr]
            else:
                d[attr] = old


def stack_module_state(models):
    """torch.func.stack_module_state: (params, buffers), each name's tensors of every model stacked
    along a new dim 0 (parameters as new leaves that require grad, as the models' did)."""
    from .. import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {}
    for name, _ in models[0].named_parameters():
        tensors = [dict(m.named_parameters())[name] for m in models]
        grads = {t.requires_grad for t in tensors}
        if len(grads) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        s = stack([t.detach() for t in tensors])
        params[name] = s.requires_grad_() if grads.pop() else s
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """torch.func.replace_all_batch_norm_modules_: every batch norm of root stops tracking running
    statistics (each call normalises with its own batch's), in place; returns root."""
    from ..nn.modules import batchnorm

    for m in root.modules():
        if isinstance(m, batchnorm._BatchNorm):
            m.running_mean = None
            m.running_var = None
            if "num_batches_tracked" in m._buffers:
                m.num_batches_tracked = None
            m.track_running_stats = False
    return root


_ = _C
