"""Worker information (torch.utils.data.get_worker_info) for ferrograd's in-process loading.

ferrograd's DataLoader loads in the calling process. With `num_workers = n > 0` it plays torch's n
worker processes one after another (see dataloader.py): while worker i loads, `get_worker_info()` gives
WorkerInfo(id=i, num_workers=n, seed=base_seed + i, dataset), and `worker_init_fn(i)` runs when worker i
starts (each epoch, or once with persistent_workers). With num_workers=0, get_worker_info() is None, as
torch in the main process.
"""

import contextlib

__all__ = ["WorkerInfo", "get_worker_info"]

_CURRENT = None


class WorkerInfo:
    """Who is loading: id, num_workers, seed and dataset (read-only once made)."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_keys", tuple(kwargs))

    def __setattr__(self, key, val):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)}' for k in self._keys)})"


def get_worker_info():
    """The current worker's WorkerInfo while a DataLoader with num_workers > 0 loads; else None."""
    return _CURRENT


@contextlib.contextmanager
def as_worker(info):
    """Make `info` the current worker's for the block (None: the main process)."""
    global _CURRENT
    saved, _CURRENT = _CURRENT, info
    try:
        yield
    finally:
        _CURRENT = saved
