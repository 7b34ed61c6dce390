"""ferrograd.amp (torch.amp): autocast (per-op mixed precision by torch's autocast lists) and GradScaler for
dynamic loss scaling."""
from . import autocast_mode, grad_scaler
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
                            is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]
