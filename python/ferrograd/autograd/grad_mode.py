"""Grad-mode switches, usable as context managers and as decorators (as torch's)."""

import functools

from .. import _C


class _GradModeBase:
    _mode = True

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError("grad-mode decorators cannot decorate a class")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._clone(self):
                return fn(*args, **kwargs)

        return wrapper

    def _clone(self):
        return self.__class__()

    def clone(self):
        """A fresh switch of the same mode (what a decorated function enters on each call)."""
        return self._clone()

    def __enter__(self):
        self._prev = _C._set_grad_enabled(self._mode)
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class no_grad(_GradModeBase):
    """Disable gradient recording inside the block or decorated function."""

    _mode = False

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return self(orig_func)
        return self


class enable_grad(_GradModeBase):
    """Enable gradient recording inside the block or decorated function."""

    _mode = True

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return self(orig_func)
        return self


class inference_mode(_GradModeBase):
    """Like no_grad (ferrograd has no separate inference tensors); is_inference_mode_enabled() says
    whether the innermost inference_mode block of this thread is on."""

    def __init__(self, mode=True):
        self._mode = not mode

    def _clone(self):
        return inference_mode(not self._mode)

    def __enter__(self):
        _inference_stack().append(not self._mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _inference_stack().pop()
        return super().__exit__(*exc)


_inference = __import__("threading").local()


def _inference_stack():
    if not hasattr(_inference, "stack"):
        _inference.stack = []
    return _inference.stack


def is_inference_mode_enabled():
    """Whether this thread is inside an inference_mode() block that is on (torch.is_inference_mode_enabled)."""
    stack = _inference_stack()
    return bool(stack) and stack[-1]


class set_grad_enabled(_GradModeBase):
    """Set grad mode now (as a function call), or for a block / decorated function."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self._mode = mode
        self._prev = _C._set_grad_enabled(mode)

    def __call__(self, fn):
        # used as a decorator: the mode applies only inside calls
        _C._set_grad_enabled(self._prev)
        return super().__call__(fn)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def _clone(self):
        return _Switch(self._mode)


class _Switch(_GradModeBase):
    def __init__(self, mode):
        self._mode = mode
