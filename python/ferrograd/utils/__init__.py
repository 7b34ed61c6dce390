"""torch.utils: data loading (`utils.data`) and hook handles (`utils.hooks`)."""

from . import data, hooks  # noqa: F401
from . import checkpoint  # noqa: F401,E402
