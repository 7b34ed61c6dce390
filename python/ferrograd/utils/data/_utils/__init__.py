"""torch.utils.data._utils: the collate machinery (`collate`, `default_collate_fn_map`), importable from the
path public code uses (`from torch.utils.data._utils.collate import collate, default_collate_fn_map`)."""
from . import collate  # noqa: F401
