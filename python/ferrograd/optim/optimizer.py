"""torch.optim.Optimizer: parameter groups, per-parameter state, zero_grad, state_dict.

Subclasses implement `_fused_step(group, params)`: one call into a fused Rust kernel
(`ferrograd._C._fused_*`, src/optim.rs) that updates every parameter of the group in one pass per
parameter, with the GIL released; and `_update(group, p, grad)`, the same update written with tensor
ops, used for parameters the kernels do not take (non-contiguous, mixed dtypes). State lives in
`self.state[p]` under torch's names, so state_dicts are interchangeable. Both paths follow torch's
single-tensor (foreach=False) algorithms op for op, so float32 results agree with torch's to rounding.

Hooks as torch: step pre/post hooks (per optimizer and global, run by a wrapper put on each optimizer
class's `step` once), state_dict and load_state_dict pre/post hooks; each registration returns a
RemovableHandle.
"""

import functools
import sys
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Callable, Optional

from .. import _C
from ..autograd.grad_mode import enable_grad, no_grad
from ..utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]

# Step hooks shared by every optimizer: pre-hooks run before an optimizer's own, post-hooks after.
_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def _add_hook(hooks, hook, prepend=False):
    """Store `hook` in the ordered dict `hooks` (first with prepend) and return its removable handle."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook):
    """Run `hook(optimizer, args, kwargs)` before every optimizer's step; it may return
    `(new_args, new_kwargs)` to replace the arguments."""
    return _add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Run `hook(optimizer, args, kwargs)` after every optimizer's step."""
    return _add_hook(_global_optimizer_post_hooks, hook)


def _compile_break(reason):
    """Inside a ferrograd.compile capture: a graph break (the optimizer's Python state must update)."""
    capture = sys.modules.get("ferrograd._dynamo.capture")
    rec = capture.current() if capture is not None else None
    if rec is not None and not rec.depth:
        rec.graph_break(reason)


def _with_step_hooks(step, mark=True):
    """Wrap an optimizer class's `step` so the registered step hooks run around it, in torch's order:
    global pre-hooks, the optimizer's pre-hooks, step, the optimizer's post-hooks, global post-hooks."""

    @functools.wraps(step)
    def hooked_step(*args, **kwargs):
        opt = args[0]
        _compile_break("optimizer.step() updates Python state (step counts, hyperparameters)")
        for hook in chain(_global_optimizer_pre_hooks.values(), opt._optimizer_step_pre_hooks.values()):
            result = hook(opt, args, kwargs)
            if result is None:
                continue
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}.")
            args, kwargs = result
        out = step(*args, **kwargs)
        for hook in chain(opt._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            hook(opt, args, kwargs)
        return out

    if mark:
        hooked_step.hooked = True
    return hooked_step


_HOOK_DICTS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
               "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
               "_optimizer_load_state_dict_post_hooks")


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class _StateDict(defaultdict):
    """optimizer.state: parameter -> dict, keyed by identity (a Tensor's `==` is elementwise)."""

    def __init__(self):
        super().__init__(dict)
        self._keys = {}

    def _k(self, key):
        if isinstance(key, _C.Tensor):
            self._keys[id(key)] = key
            return id(key)
        return key

    def __getitem__(self, key):
        return super().__getitem__(self._k(key))

    def __setitem__(self, key, value):
        super().__setitem__(self._k(key), value)

    def __contains__(self, key):
        return super().__contains__(id(key) if isinstance(key, _C.Tensor) else key)

    def get(self, key, default=None):
        return super().get(id(key) if isinstance(key, _C.Tensor) else key, default)

    def items(self):
        return [(self._keys.get(k, k), v) for k, v in super().items()]

    def keys(self):
        return [self._keys.get(k, k) for k in super().keys()]

    def __iter__(self):
        return iter(self.keys())

    # copies and pickles are keyed by the copied tensors (an id() key means nothing in a copy)
    @classmethod
    def _from_items(cls, items):
        state = cls()
        for key, value in items:
            state[key] = value
        return state

    def __reduce__(self):
        return _StateDict._from_items, (self.items(),)

    def __deepcopy__(self, memo):
        return _StateDict._from_items([(deepcopy(k, memo), deepcopy(v, memo)) for k, v in self.items()])


def _scalar(value):
    return value.item() if isinstance(value, _C.Tensor) else value


def _check_lr(lr):
    """torch refuses a tensor learning rate of more than one element before comparing it with 0."""
    if isinstance(lr, _C.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")


class Optimizer:
    """Base class of the optimizers (torch.optim.Optimizer)."""

    # the hook signatures, as torch's class attributes (for annotations)
    OptimizerPreHook = Callable[["Optimizer", tuple, dict], Optional[tuple]]
    OptimizerPostHook = Callable[["Optimizer", tuple, dict], None]

    # `@Optimizer.profile_hook_step` on a step: runs the step hooks around it. As in torch, the result is
    # not marked as hooked, so the class's step is wrapped once more and the hooks run twice; ferrograd
    # records no profiler range for it.
    profile_hook_step = staticmethod(functools.partial(_with_step_hooks, mark=False))

    def __init__(self, params, defaults):
        self.defaults = defaults
        for name in _HOOK_DICTS:
            setattr(self, name, OrderedDict())
        self._patch_step_function()
        if isinstance(params, _C.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                + params.type()
            )
        if isinstance(params, set):
            warnings.warn(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
                "sets will change between runs. Please use a list instead.",
                FutureWarning,
                stacklevel=2,
            )
        self.state = _StateDict()
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(dict(param_group))

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()
        self.defaults.setdefault("differentiable", False)

    def _patch_step_function(self):
        """Make the class's step run the step hooks (once per class, as torch does)."""
        cls = type(self)
        if not getattr(cls.step, "hooked", False):
            cls.step = _with_step_hooks(cls.step)

    # ---- hooks --------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook):
        """`hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`, run before step."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """`hook(optimizer, args, kwargs) -> None`, run after step."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """`hook(optimizer) -> None`, run before state_dict() builds its result."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """`hook(optimizer, state_dict) -> None or a state_dict that replaces it`."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """`hook(optimizer, state_dict) -> None or a state_dict to load instead`."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """`hook(optimizer) -> None`, run after load_state_dict()."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def __repr__(self):
        s = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
                "sets will change between runs. Please use a list instead."
            )
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = params
        for param in params:
            if not isinstance(param, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + type(param).__name__)
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in params]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing & set(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                raise ValueError("all optimizer param groups should be with/without names.")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        _compile_break("optimizer.zero_grad() sets .grad attributes")
        for group in self.param_groups:
            for p in group["params"]:
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

    # ---- stepping -----------------------------------------------------------------------------

    def _update(self, group, p, grad):
        raise NotImplementedError

    def step(self, closure=None):
        """One update of every parameter that has a gradient; `closure` re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                params = [p for p in group["params"] if p.grad is not None]
                if not params:
                    continue
                if self._can_fuse(params, group):
                    self._fused_step(group, params)
                else:
                    for p in params:
                        self._update(group, p, -p.grad if group.get("maximize") else p.grad)
        return loss

    _fused_step = None  # subclasses: one Rust call that updates every parameter of a group

    _fuses_on_cuda = False  # subclasses whose fused kernel also runs on CUDA parameters

    def _can_fuse(self, params, group=None):
        """The fused kernels take contiguous float32/float64 parameters and gradients of one dtype,
        all on the CPU, or (for optimizers with a device kernel) all on the GPU."""
        if self._fused_step is None:
            return False
        on_cuda = [p.is_cuda or p.grad.is_cuda for p in params]
        if any(on_cuda):
            if not (all(on_cuda) and self._fuses_on_cuda and _C._cuda_has_kernels()):
                return False
        dt = params[0].dtype
        if dt not in (_C.float32, _C.float64):
            return False
        for p in params:
            g = p.grad
            if p.dtype != dt or g.dtype != dt or not p.is_contiguous() or not g.is_contiguous() or g.shape != p.shape:
                return False
        return True

    # ---- state_dict ---------------------------------------------------------------------------

    def state_dict(self):
        """{'state': {index: per-parameter state}, 'param_groups': [options + 'params': indices]},
        parameters numbered in group order, as torch."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        mapping = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, _C.Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        state_dict = state_dict.copy()  # a pre-hook may edit it; the caller's dict stays as it was
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, _C.Tensor):  # a copy: the loaded state never aliases the given dict's
                value = value.detach().clone()
                if key == "step":  # the step counter stays where it is (on the CPU), as torch
                    return value
                # torch: state follows the parameter's device (and dtype, for float parameters)
                return value.to(param.device, param.dtype) if param.is_floating_point() else value.to(param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = _StateDict()
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved_groups
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)
