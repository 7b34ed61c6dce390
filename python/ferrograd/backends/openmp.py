"""torch.backends.openmp: ferrograd's CPU parallelism is rayon's thread pool, not OpenMP."""

__all__ = ["is_available"]


def is_available():
    return False
