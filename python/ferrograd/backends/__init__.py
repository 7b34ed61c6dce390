"""torch.backends: the switches that choose how the backends compute (TF32 in matmuls, cuDNN's
autotuner, scaled-dot-product-attention kernels, ...) and what each backend reports about itself.

The flags live in one place, `_flags.FLAGS` (a Python dict, torch's defaults), which the submodules'
attributes read and write. The CUDA matmul honours `torch.backends.cuda.matmul.allow_tf32` /
`torch.set_float32_matmul_precision` (TF32 in cuBLAS, told to the native module by
`_flags.set_matmul_precision`); the other flags are kept so that scripts that set them run (ferrograd has
no cuDNN: its convolutions are matmuls, which follow the matmul flag).
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
