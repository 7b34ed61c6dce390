"""torch.backends.mkl: Intel MKL, which ferrograd does not use (its GEMM is its own)."""

__all__ = ["is_available"]


def is_available():
    return False
