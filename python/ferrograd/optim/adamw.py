"""torch.optim.adamw: AdamW at its own import path (`from torch.optim.adamw import AdamW`); the class lives
in adam.py beside Adam, of which it is the decoupled-weight-decay form."""
from .adam import AdamW

__all__ = ["AdamW"]
