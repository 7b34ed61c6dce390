"""torch.optim: optimizers (in-place updates under no_grad, following torch's single-tensor
algorithms) and `lr_scheduler`. Fused native update kernels are not here yet."""

from . import lr_scheduler  # noqa: F401
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
