"""Dynamic loss scaling (torch.amp.GradScaler): multiply the loss by a scale, unscale the gradients before the
optimizer step, skip the step when a gradient is inf/NaN, and grow/back off the scale between iterations."""
import math
import warnings
from collections.abc import Iterable
from enum import Enum

import ferrograd as _fg

__all__ = ["GradScaler", "OptState"]


def _amp_update_scale_(current_scale, growth_tracker, found_inf, scale_growth_factor, scale_backoff_factor,
                       growth_interval):
    """torch._amp_update_scale_: back the scale off (and reset the count of clean steps) when `found_inf` is
    non-zero, else count one more clean step and grow the scale after `growth_interval` of them (never into
    inf). The products are formed in double precision and rounded once into the float32 scale, as torch's
    kernel does. Updates `current_scale` and `growth_tracker` in place and returns `current_scale`."""
    if growth_tracker.dtype != _fg.int32:
        raise RuntimeError("growth_tracker must be an int tensor.")
    if current_scale.dtype != _fg.float32:
        raise RuntimeError("current_scale must be a float tensor.")
    if found_inf.dtype != _fg.float32:
        raise RuntimeError("found_inf must be a float tensor.")
    scale = current_scale.item()
    if found_inf.item() != 0.0:
        current_scale.fill_(scale * scale_backoff_factor)
        growth_tracker.fill_(0)
        return current_scale
    clean = int(growth_tracker.item()) + 1
    if clean == growth_interval:
        grown = scale * scale_growth_factor
        if math.isfinite(float(_fg.tensor(grown, dtype=_fg.float32))):  # never grow into inf
            current_scale.fill_(grown)
        clean = 0
    growth_tracker.fill_(clean)
    return current_scale


class OptState(Enum):
    """Where one optimizer is within the current iteration."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state():
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Scale losses so that small float16 gradients survive, and unscale before stepping.

    `enabled=False` makes every method a pass-through: `scale` returns its argument, `step` calls
    `optimizer.step()`, the others do nothing. Asking for device "cuda" without CUDA warns and disables.
    """

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not _fg.cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            # torch asserts these; AssertionError is what it raises
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = init_scale
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._init_growth_tracker = 0
        # the scale (float32, 0-d) and the count of consecutive clean steps, created by the first scale()
        self._scale = None
        self._growth_tracker = None
        self._per_optimizer_states = {}

    # ---- scaling ---------------------------------------------------------------------------------------

    def _opt_state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    def _require_scale(self, what):
        if self._scale is None:
            raise AssertionError(f"Attempted {what} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def scale(self, outputs):
        """`outputs` times the current scale: a tensor, or (nested) lists/tuples/iterables of tensors."""
        if not self._enabled:
            return outputs

        def apply(value):
            if isinstance(value, _fg.Tensor):
                if self._scale is None:
                    self._scale = _fg.full((), float(self._init_scale), dtype=_fg.float32, device=value.device)
                    self._growth_tracker = _fg.full((), int(self._init_growth_tracker), dtype=_fg.int32,
                                                    device=value.device)
                return value * self._scale.to(value.device)
            if isinstance(value, Iterable):
                mapped = map(apply, value)
                return type(value)(mapped) if isinstance(value, (list, tuple)) else mapped
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_and_check(self, optimizer, inv_scale):
        """Multiply every gradient of `optimizer` by `inv_scale` in place; return a float32 0-d tensor, non-zero
        when some gradient holds an inf or NaN (None when the optimizer has no gradient at all). One fused
        native call per device over all the gradients (torch._amp_foreach_non_finite_check_and_unscale_)."""
        per_device = {}
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if grad.dtype == _fg.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                per_device.setdefault(str(grad.device), []).append(grad)
        if not per_device:
            return None
        found = None
        with _fg.no_grad():
            for device, grads in per_device.items():
                found_here = _fg.zeros((), dtype=_fg.float32, device=device)
                _fg._C._amp_foreach_non_finite_check_and_unscale_(grads, found_here, inv_scale.to(device))
                found_here = found_here.to(self._scale.device)
                found = found_here if found is None else found + found_here
        return found

    def unscale_(self, optimizer):
        """Divide `optimizer`'s gradients by the scale (once per optimizer per iteration) and record inf/NaN."""
        if not self._enabled:
            return
        self._require_scale("unscale_")
        state = self._opt_state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in double, rounded once to float32, as torch does
        inv_scale = self._scale.double().reciprocal().float()
        state["found_inf"] = self._unscale_and_check(optimizer, inv_scale)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless `unscale_` ran), then `optimizer.step(*args, **kwargs)` unless a gradient is inf/NaN.
        Returns what the optimizer's step returned, or None when the step was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._require_scale("step")
        state = self._opt_state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if state["found_inf"].item() == 0.0:
            result = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None):
        """Back off the scale if any step of this iteration saw inf/NaN, else grow it after `growth_interval`
        clean iterations; or set it to `new_scale` (a float or a one-element tensor)."""
        if not self._enabled:
            return
        self._require_scale("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if (not isinstance(new_scale, _fg.Tensor) or new_scale.device.type != self._device
                        or new_scale.numel() != 1 or new_scale.requires_grad):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found = [s["found_inf"] for s in self._per_optimizer_states.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found[0]
            for more in found[1:]:
                combined = combined + more
            _amp_update_scale_(self._scale, self._growth_tracker, combined, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = {}

    # ---- accessors and state -------------------------------------------------------------------------------

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale) if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker; {} when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._scale is not None:
            self._scale.fill_(float(state_dict["scale"]))
            self._growth_tracker.fill_(int(state_dict["_growth_tracker"]))

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer_states:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
