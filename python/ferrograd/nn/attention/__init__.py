"""torch.nn.attention: which scaled-dot-product-attention backends F.scaled_dot_product_attention may use.

ferrograd has one implementation (a composition of engine ops, numerically torch's math backend) and
runs it whenever a backend that torch could use on that device is enabled: MATH or FLASH_ATTENTION on
the CPU, and MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION or CUDNN_ATTENTION on CUDA. With none of those
enabled, scaled_dot_product_attention raises torch's "No viable backend" RuntimeError.
"""

import contextlib
import enum


class SDPBackend(enum.Enum):
    """The scaled-dot-product-attention backends, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value


# the order torch lists enabled backends in, and its default priority order
_LISTED = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
           SDPBackend.OVERRIDEABLE)
_DEFAULT_PRIORITY = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
                     SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)
# (enabled backends, priority order): process-wide, as torch's flags
_state = [frozenset(_LISTED), _DEFAULT_PRIORITY]

# torch warns with the reasons when a fused kernel cannot be used; ferrograd has no fused kernels
WARN_FOR_UNFUSED_KERNELS = False

_VIABLE = {
    "cpu": {SDPBackend.MATH, SDPBackend.FLASH_ATTENTION},
    "cuda": {SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
             SDPBackend.CUDNN_ATTENTION},
}


def _cur_sdpa_kernel_backends(with_priority=False):
    """The enabled backends, in torch's listing order or (with_priority) in priority order."""
    enabled, priority = _state
    return [b for b in (priority if with_priority else _LISTED) if b in enabled]


def _check_backend(device):
    """Raise torch's error when no enabled backend could run attention on `device`."""
    viable = _VIABLE.get(device.type, {SDPBackend.MATH})
    if not viable & _state[0]:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Within the block, scaled_dot_product_attention may use only `backends` (one SDPBackend or a list);
    with set_priority=True the list is also their priority order. The previous set is restored on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    chosen = [backends] if isinstance(backends, SDPBackend) else list(dict.fromkeys(backends))
    previous = list(_state)
    if set_priority:
        _state[1] = tuple(b for b in chosen if b in _LISTED) + tuple(b for b in _state[1] if b not in chosen)
    _state[0] = frozenset(b for b in chosen if b in _LISTED)
    try:
        yield {}
    finally:
        _state[:] = previous


__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]
