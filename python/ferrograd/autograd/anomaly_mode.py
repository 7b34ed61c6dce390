"""Anomaly detection: nodes remember the Python stack of their forward call, an error in
backward shows it, and a NaN produced by a backward function raises torch's error."""

from .. import _C


class detect_anomaly:
    """Context manager (and decorator) enabling anomaly detection inside it."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly:
    """Set anomaly detection on or off now; also usable as a context manager."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(bool(mode), check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self.prev)
        return False


def is_anomaly_enabled():
    return _C.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return _C.is_anomaly_check_nan_enabled()
