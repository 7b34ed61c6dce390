"""swap_in_optimizer_params_and_state (torch.optim.swap_in_optimizer_params_and_state): run an optimizer
for the length of a `with` block on other parameter tensors and an `optimizer.state_dict()`-shaped state,
then restore the live parameters, hyperparameters and state. In-place updates of the swapped-in tensors
(parameters and state tensors) are what the block leaves behind; new entries the optimizer adds to the
state are dropped on exit."""

import contextlib

from .. import _C
from .optimizer import _StateDict

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _fail(message):
    raise RuntimeError(f"{_NAME} requires {message}")


def _checked_state(state):
    if not isinstance(state, dict):
        _fail("swapin_optim_state['state'] to be a dict mapping packed parameter ids to per-param state dicts, "
              f"got {type(state).__name__}.")
    if any(isinstance(k, _C.Tensor) for k in state):
        _fail("optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        _fail("per-parameter optimizer state entries to be dictionaries.")
    return state


def _checked_groups(optimizer, groups):
    if not isinstance(groups, list):
        _fail(f"swapin_optim_state['param_groups'] to be a list of param-group dicts, got {type(groups).__name__}.")
    if len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    for i, (live, given) in enumerate(zip(optimizer.param_groups, groups)):
        if not isinstance(given, dict):
            _fail("each optimizer param group to be a dictionary.")
        ids = given.get("params")
        if not isinstance(ids, list) or not all(isinstance(j, int) for j in ids):
            _fail("optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed parameter ids.")
        if len(ids) != len(live["params"]):
            raise RuntimeError(f"swapin_optim_state param group {i} has a different number of params than the live "
                               "optimizer param group.")
        only_given = [k for k in given if k not in live]
        only_live = [k for k in live if k not in given]
        if only_given or only_live:
            _fail(f"optimizer.state_dict()-style param group keys to exactly match the live optimizer group keys "
                  f"for group {i}. Keys only in swap-in: {only_given}. Keys only in live: {only_live}.")
    return groups


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Within the block, `optimizer` steps `swapin_parameters` (a dict, in the optimizer's parameter order)
    with the state and hyperparameters of `swapin_optim_state`; everything is restored on exit."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(swapin_optim_state.get("state"))
    groups = _checked_groups(optimizer, swapin_optim_state.get("param_groups"))
    tensors = list(swapin_parameters.values())
    plan, used, offset = [], set(), 0
    for live, given in zip(optimizer.param_groups, groups):
        ids = given["params"]
        if offset + len(ids) > len(tensors):
            _fail("the explicit parameter state to match optimizer.param_groups ordering.")
        plan.append((live, given, tensors[offset:offset + len(ids)]))
        used.update(ids)
        offset += len(ids)
    extra = [k for k in state if k not in used]
    if extra:
        _fail(f"swapin_optim_state['state'] to be keyed only by packed parameter ids from "
              f"param_groups[*]['params']; got extra keys {extra!r}.")

    saved_state = optimizer.state
    saved_groups = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = _StateDict()
        for live, given, params in plan:
            live["params"] = params
            live.update({k: v for k, v in given.items() if k != "params"})
            for p, pid in zip(params, given["params"]):
                swapped[p] = dict(state.get(pid, {}))  # a shallow copy: tensors are shared, new keys are not
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, saved_groups):
            group.clear()
            group.update(snapshot)
        optimizer.state = saved_state
