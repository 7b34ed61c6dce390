"""Engine switches of torch.autograd that ferrograd accepts with torch's API (context manager, decorator,
plain call) and records, but whose effect does not arise in ferrograd's engine:

- set_multithreading_enabled(mode): torch runs backward on per-device worker threads unless disabled.
  ferrograd's backward runs independent nodes on rayon's pool and sums incoming gradients in a fixed
  order (by edge), so its results do not depend on the threads either way; the mode is recorded only.
- enforce_grad_layout_policy(enable): torch may make an accumulated `.grad` follow its parameter's strides.
  ferrograd accumulates gradients contiguous, whatever the flag; the flag is recorded only.

Both flags are per thread, as torch's; `_is_multithreading_enabled()` / `_is_grad_layout_enforcement_enabled()`
read them."""

import functools
import threading

__all__ = ["enforce_grad_layout_policy", "set_multithreading_enabled"]

_flags = threading.local()


def _get(name):
    return getattr(_flags, name, True)


def _is_multithreading_enabled():
    return _get("multithreading")


def _is_grad_layout_enforcement_enabled():
    return _get("grad_layout")


class _FlagSwitch:
    """Sets the flag when made (so a plain call takes effect), restores it on leaving a `with` block; as a
    decorator, the flag is set only inside the calls."""

    _flag = None
    _restores_on_decorate = True

    def __init__(self, value):
        self.prev = _get(self._flag)
        setattr(_flags, self._flag, value)
        self.mode = value

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        setattr(_flags, self._flag, self.prev)
        return False

    def __call__(self, fn):
        if self._restores_on_decorate:
            setattr(_flags, self._flag, self.prev)
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)(self.mode)


class set_multithreading_enabled(_FlagSwitch):
    """Enable or disable multithreaded backward (recorded; see the module note)."""

    _flag = "multithreading"
    # (torch 2.15: decorating leaves the mode set, unlike the other switches; kept for parity)
    _restores_on_decorate = False

    def __init__(self, mode):
        super().__init__(mode)


class enforce_grad_layout_policy(_FlagSwitch):
    """Enforce (True) or relax (False) the gradient layout contract (recorded; see the module note)."""

    _flag = "grad_layout"

    def __init__(self, enable=True):
        super().__init__(enable)
