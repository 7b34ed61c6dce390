"""`ferrograd.random`: the global generator's seeding and state (torch.random)."""

from ._C import get_rng_state, initial_seed, manual_seed, set_rng_state  # noqa: F401


def seed():
    """Seed the global generator non-deterministically and return the seed."""
    import os

    s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
    manual_seed(s)
    return s


def fork_rng(devices=None, enabled=True):
    """Restore the global generator's state on exit (torch.random.fork_rng)."""
    import contextlib

    @contextlib.contextmanager
    def _fork():
        if not enabled:
            yield
            return
        state = get_rng_state()
        try:
            yield
        finally:
            set_rng_state(state)

    return _fork()


def thread_safe_generator():
    """The generator of the DataLoader thread worker this runs in, or None (the global generator). ferrograd's
    DataLoader workers are processes, each with its own global generator, so None."""
    return None
