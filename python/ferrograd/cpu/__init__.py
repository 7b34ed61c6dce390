"""torch.cpu: the CPU device namespace (always available) and its deprecated `amp` spellings."""
from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "synchronize"]


def is_available():
    return True


def device_count():
    return 1


def current_device():
    return "cpu"


def synchronize(device=None):
    """CPU work is synchronous: nothing to wait for."""
