"""torch.nn.functional: the functional forms built on engine ops."""

from .. import _C


def _dim_for(input, dim):
    if dim is None:
        # torch's legacy implicit-dim rule
        return 0 if input.dim() in (0, 1, 3) else 1
    return dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.softmax(_dim_for(input, dim), dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return input.log_softmax(_dim_for(input, dim), dtype=dtype)


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()
