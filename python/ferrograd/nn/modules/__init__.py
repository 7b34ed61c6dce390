"""torch.nn.modules: the Module base class, containers, layers and losses."""

from .activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, Sequential
from .conv import AdaptiveAvgPool2d, AvgPool2d, Conv1d, Conv2d, MaxPool2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module
from .normalization import LayerNorm
from .sparse import Embedding

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Embedding", "LayerNorm",
    "BatchNorm1d", "BatchNorm2d", "Dropout", "Flatten", "Unflatten", "ReLU", "LeakyReLU", "GELU", "SiLU",
    "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "L1Loss", "MSELoss", "SmoothL1Loss", "KLDivLoss", "NLLLoss",
    "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "Conv1d", "Conv2d", "MaxPool2d", "AvgPool2d",
    "AdaptiveAvgPool2d",
]
