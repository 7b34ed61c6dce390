"""ferrograd.amp (torch.amp): GradScaler for dynamic loss scaling, and the autocast API (disabled regions only;
ferrograd has no autocast dispatch yet)."""
from . import autocast_mode, grad_scaler
from .autocast_mode import (autocast, custom_bwd, custom_fwd, get_autocast_dtype, is_autocast_available,
                            is_autocast_enabled)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]
