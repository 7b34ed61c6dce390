"""torch.nn.Module: the base class of layers — registration of parameters, buffers and submodules,
traversal, train/eval, state_dict, forward and full backward hooks, dtype conversion, torch's repr."""

import copy
import warnings
from collections import OrderedDict, namedtuple

from ... import _C
from ...autograd.grad_mode import no_grad
from ...utils.hooks import RemovableHandle
from ..parameter import Parameter
from ._functions import BackwardHook


def _typename(obj):
    if isinstance(obj, _C.Tensor):
        return obj.type()
    t = type(obj)
    return t.__qualname__ if t.__module__ in ("builtins", "") else f"{t.__module__}.{t.__qualname__}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join((num_spaces * " ") + line if line.strip() else "" for line in lines[1:])


def _quoted(keys):
    return ", ".join(f'"{k}"' for k in keys)


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules (torch.nn.Module)."""

    training: bool
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if not self.call_super_init and kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        if not self.call_super_init and args:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given"
            )
        setattr_ = super().__setattr__
        setattr_("training", True)
        setattr_("_parameters", {})
        setattr_("_buffers", {})
        setattr_("_non_persistent_buffers_set", set())
        setattr_("_forward_hooks", OrderedDict())
        setattr_("_forward_hooks_with_kwargs", OrderedDict())
        setattr_("_forward_hooks_always_called", OrderedDict())
        setattr_("_forward_pre_hooks", OrderedDict())
        setattr_("_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_("_backward_hooks", OrderedDict())
        setattr_("_backward_pre_hooks", OrderedDict())
        setattr_("_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward = _forward_unimplemented

    # ---- registration -------------------------------------------------------------------------

    def _check_name(self, kind, name, own):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in own:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(
                f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter or None required)"
            )
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. "
                f"To express '{name}' as a function of another Tensor, compute the value in the forward() method."
            )
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name("module", name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{_typename(value)}' as parameter '{name}' (torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        elif getattr(value, "_is_buffer", False) and isinstance(value, _C.Tensor):  # nn.Buffer
            if self.__dict__.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            remove_from(self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, value.persistent)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{_typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, _C.Tensor):
                        raise TypeError(
                            f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)"
                        )
                    buffers[name] = value
                else:
                    super().__setattr__(name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self):
        keys = [*dir(self.__class__), *self.__dict__, *self._parameters, *self._modules, *self._buffers]
        return sorted(k for k in keys if not k[0].isdigit())

    # ---- traversal ----------------------------------------------------------------------------
    # Memo sets hold ids: a Tensor's `==` is elementwise, so tensors cannot be set members.

    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self, remove_duplicate=True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes and gradients ------------------------------------------------------------------

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- conversion ---------------------------------------------------------------------------

    def _apply(self, fn, recurse=True):
        """Apply `fn` to every parameter (in place, through `.data`, keeping the Parameter object as
        torch does by default), its gradient, and every buffer."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            grad = param.grad
            with no_grad():
                applied = fn(param)
                grad_applied = fn(grad) if grad is not None else None
            if grad is not None:
                param.grad = None
            param.data = applied
            if grad_applied is not None:
                param.grad = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(device, dtype) / to(tensor): floating parameters and buffers
        take the dtype; integer buffers keep theirs."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, _C.Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, _C.device)):
                device = a
            elif isinstance(a, bool):  # non_blocking
                pass
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
            )

        def convert(t):
            if device is not None:
                t = t.to(device)
            if dtype is not None and t.is_floating_point():
                t = t.to(dtype)
            return t

        return self._apply(convert)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.to(dst_type))

    # ---- calling ------------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) -> None or new args; with_kwargs: hook(module, args, kwargs) -> None or (args, kwargs)."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) -> None or new output; with_kwargs: hook(module, args, kwargs, output)."""
        handle = RemovableHandle(
            self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called]
        )
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or a new grad_output, called when the gradient with respect to
        the module's outputs is computed, before it flows into the module."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, called once the gradients with
        respect to the module's positional tensor inputs are computed (see nn/modules/_functions.py)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        result = None
        called = set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    out = hook(self, args, kwargs)
                    if out is not None:
                        if not (isinstance(out, tuple) and len(out) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {out}.")
                        args, kwargs = out
                else:
                    out = hook(self, args)
                    if out is not None:
                        args = out if isinstance(out, tuple) else (out,)
            bw_hook = None
            if self._backward_hooks or self._backward_pre_hooks:
                bw_hook = BackwardHook(self, list(self._backward_hooks.values()),
                                       list(self._backward_pre_hooks.values()))
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            if bw_hook:
                bw_hook.check_inputs()
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    out = hook(self, args, kwargs, result)
                else:
                    out = hook(self, args, result)
                if out is not None:
                    result = out
            if bw_hook:
                if not isinstance(result, (_C.Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                                  f"Tensors but received {type(result)}", stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in self._forward_hooks.items():
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            out = hook(self, args, kwargs, result)
                        else:
                            out = hook(self, args, result)
                        if out is not None:
                            result = out
                    except Exception:
                        continue
            raise

    _compiled_call_impl = None  # set by compile()

    def _wrapped_call_impl(self, *args, **kwargs):
        compiled = self._compiled_call_impl
        if compiled is not None:
            if compiled._owner is not self:  # a deepcopy of a compiled module: compile the copy's own call
                self.compile(*self._compile_args[0], **self._compile_args[1])
                compiled = self._compiled_call_impl
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    __call__ = _wrapped_call_impl

    def compile(self, *args, **kwargs):
        """Compile this module's forward in place (torch's Module.compile): later calls of the module
        go through `ferrograd.compile(self._call_impl, *args, **kwargs)`; parameters, state_dict keys
        and the module's type do not change."""
        from ...compiler import compile as _compile

        compiled = _compile(self._call_impl, *args, **kwargs)
        if getattr(compiled, "_ferrograd_frame", None) is not None:  # (disable=True gives the call back)
            compiled._owner = self
            self._compile_args = (args, kwargs)
            self._compiled_call_impl = compiled

    # ---- state_dict ---------------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer, this module's first, then each
        child's under `name.`, in registration order (detached unless keep_vars)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = dict(version=self._version)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in [*self._parameters.items(), *persistent.items()] if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, _C.Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like object from '
                    f"checkpoint but received {type(input_param)}"
                )
                continue
            if len(param.shape) == 0 and len(input_param.shape) == 1 and input_param.shape[0] == 1:
                input_param = input_param[0]
            if input_param.shape != param.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} from checkpoint, "
                    f"the shape in current model is {param.shape}."
                )
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter) and not isinstance(input_param, Parameter):
                            input_param = Parameter(input_param, requires_grad=param.requires_grad)
                        setattr(self, name, input_param)
                    else:
                        param.copy_(input_param)
            except Exception as ex:
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model are {param.shape} '
                    f"and whose dimensions in the checkpoint are {input_param.shape}, "
                    f"an exception occurred : {ex.args}."
                )
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from `state_dict` (in place, under no_grad). strict: raise on
        missing or unexpected keys. Shape mismatches always raise. Returns (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(
                local_state_dict, prefix, local_metadata, True, missing_keys, unexpected_keys, error_msgs
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}, child_prefix)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, f"Unexpected key(s) in state_dict: {_quoted(unexpected_keys)}. ")
            if missing_keys:
                error_msgs.insert(0, f"Missing key(s) in state_dict: {_quoted(missing_keys)}. ")
        if error_msgs:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(self.__class__.__name__, "\n\t".join(error_msgs))
            )
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ---- copying ------------------------------------------------------------------------------

    def __deepcopy__(self, memo):
        """copy.deepcopy: parameters and buffers are cloned here (ferrograd tensors do not pickle);
        Parameters stay Parameters (without their .grad, as torch), shared tensors stay shared."""
        for module in self.modules():
            for t in (*module._parameters.values(), *module._buffers.values()):
                if t is None or id(t) in memo:
                    continue
                c = t.detach().clone()
                if isinstance(t, Parameter):
                    c = Parameter(c, t.requires_grad)
                else:
                    c.requires_grad_(t.requires_grad)
                    if t.grad is not None:
                        c.grad = t.grad.detach().clone()
                memo[id(t)] = c
        new = self.__class__.__new__(self.__class__)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        return new

    # ---- repr ---------------------------------------------------------------------------------

    def _get_name(self):
        return self.__class__.__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_repr = self.extra_repr()
        extra_lines = extra_repr.split("\n") if extra_repr else []
        child_lines = ["(" + key + "): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"
