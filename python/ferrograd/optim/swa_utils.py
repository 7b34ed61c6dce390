"""torch.optim.swa_utils: weight averaging (SWA and EMA) of a model, the SWA learning-rate
schedule, and recomputing batch-norm statistics for the averaged weights.

AveragedModel keeps a deep copy of the model and folds the model's parameters into it on each
update_parameters(): by default the running mean (SWA), or any `avg_fn(avg, current, n)` (one tensor
at a time) or `multi_avg_fn(avg_list, current_list, n)` (all tensors of one device and dtype at once).
"""

import itertools
import math
import warnings
from copy import deepcopy

from .. import _C
from .._creation import tensor as _tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """avg ← lerp(avg, current, 1 - decay) for every tensor of the lists (the exponential moving average)."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _num_averaged):
        with no_grad():
            if ema_param_list[0].is_floating_point():
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.lerp_(p_model, 1 - decay)
            else:
                for p_ema, p_model in zip(ema_param_list, current_param_list):
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """avg ← avg + (current - avg) / (n + 1) for every tensor of the lists (the running mean)."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            if averaged_param_list[0].is_floating_point():
                weight = 1 / (num_averaged + 1)
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    p_avg.lerp_(p_model, weight)
            else:
                for p_avg, p_model in zip(averaged_param_list, current_param_list):
                    diff = p_model - p_avg
                    if isinstance(num_averaged, _C.Tensor):
                        p_avg.addcdiv_(diff, num_averaged + 1)
                    else:
                        p_avg.add_(diff, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """decay · avg + (1 - decay) · current, one tensor at a time."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """avg + (current - avg) / (n + 1), one tensor at a time."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and, with use_buffers=True, buffers) are averaged over the
    calls to update_parameters(model); `n_averaged` counts them. Calling it runs the copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", _tensor(0, dtype=_C.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return itertools.chain(model.parameters(), model.buffers())
        return model.parameters()

    def update_parameters(self, model):
        mine = list(self.module.parameters()) + list(self.module.buffers()) if self.use_buffers \
            else list(self.parameters())
        pairs = [(a.detach(), m.detach().to(a.device)) for a, m in zip(mine, self._tensors(model))]
        with no_grad():
            if int(self.n_averaged.item()) == 0:  # the first model is copied as it is
                for a, m in pairs:
                    a.copy_(m)
            else:
                self._fold_in(pairs)
            if not self.use_buffers:  # buffers (e.g. batch-norm statistics) follow the model
                for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                    b_avg.detach().copy_(b_model.detach().to(b_avg.device))
            self.n_averaged += 1

    def _fold_in(self, pairs):
        if self.avg_fn is not None:
            for a, m in pairs:
                a.copy_(self.avg_fn(a, m, self.n_averaged.to(a.device)))
            return
        # the list-wise function gets the tensors of one (device, dtype) at a time, as torch
        groups = {}
        for a, m in pairs:
            groups.setdefault((str(a.device), a.dtype), []).append((a, m))
        for members in groups.values():
            avgs = [a for a, _ in members]
            models = [m for _, m in members]
            n = self.n_averaged.to(avgs[0].device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(avgs, models, n)
            elif avgs[0].is_cuda:  # torch lerps on devices with foreach kernels
                get_swa_multi_avg_fn()(avgs, models, n)
            else:
                swa = get_swa_avg_fn()
                for a, m in members:
                    a.copy_(swa(a, m, n))


def update_bn(loader, model, device=None):
    """Recompute the running statistics of every batch-norm layer of `model` with one pass over
    `loader` (a cumulative average: momentum None), in training mode; the mode is restored after."""
    with no_grad():
        momenta = {}
        for module in model.modules():
            if isinstance(module, _BatchNorm):
                module.reset_running_stats()
                momenta[module] = module.momentum
        if not momenta:
            return
        was_training = model.training
        model.train()
        for module in momenta:
            module.momentum = None
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
        for module, momentum in momenta.items():
            module.momentum = momentum
        model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to `swa_lr` over `anneal_epochs` steps (cosine or linear), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the schedule started from, given the current lr = alpha·swa_lr + (1-alpha)·start."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def _progress(self, step):
        return max(0, min(1, step / max(1, self.anneal_epochs)))

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(self._progress(step - 1))
        alpha = self.anneal_func(self._progress(step))
        lrs = []
        for group in self.optimizer.param_groups:
            start = self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
            lrs.append(group["swa_lr"] * alpha + start * (1 - alpha))
        return lrs

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
