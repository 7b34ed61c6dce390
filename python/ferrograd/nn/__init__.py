"""torch.nn: for now the functional forms the foundation needs (see nn.functional)."""

from . import functional  # noqa: F401
