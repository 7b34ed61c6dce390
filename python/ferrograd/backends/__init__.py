"""torch.backends: the switches that choose how the backends compute (TF32 in matmuls, cuDNN's
autotuner, scaled-dot-product-attention kernels, ...) and what each backend reports about itself.

The flags live in one place, `_flags.FLAGS` (a Python dict, torch's defaults), which the submodules'
attributes read and write. ferrograd's CUDA backend does not read them yet: its float32 products are
IEEE float32 whatever `allow_tf32` says, and it has no cuDNN; the flags are kept so that scripts
that set them run, and so that the backend can honour them later by reading `_flags.FLAGS`.
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
