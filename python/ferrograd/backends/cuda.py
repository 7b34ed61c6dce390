"""torch.backends.cuda: TF32 and reduced-precision switches of the matmuls (`matmul`), the
scaled-dot-product-attention kernel choice, and whether CUDA support is compiled in."""

import contextlib
import enum

from .. import _C
from ._flags import FLAGS, check_bool, set_matmul_precision

__all__ = ["is_built", "matmul", "cufft_plan_cache", "preferred_linalg_library", "preferred_blas_library",
           "SDPBackend", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "fp16_bf16_reduction_math_sdp_allowed", "allow_fp16_bf16_reduction_math_sdp",
           "is_flash_attention_available", "can_use_flash_attention", "can_use_efficient_attention",
           "can_use_cudnn_attention", "sdp_kernel"]


def is_built():
    """Whether this ferrograd was compiled with CUDA support (not whether a GPU is there: see
    torch.cuda.is_available)."""
    return "cuda" in _C._build_info()["features"]


class cuBLASModule:
    """torch.backends.cuda.matmul: the cuBLAS switches. allow_tf32 is tied to
    torch.set_float32_matmul_precision ("highest" means no TF32)."""

    _FLAGS = {
        "allow_fp16_reduced_precision_reduction": "matmul.allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction": "matmul.allow_bf16_reduced_precision_reduction",
        "allow_fp16_accumulation": "matmul.allow_fp16_accumulation",
    }

    def __getattr__(self, name):
        if name == "allow_tf32":
            return FLAGS["float32_matmul_precision"] != "highest"
        if name in self._FLAGS:
            return FLAGS[self._FLAGS[name]]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            check_bool("set_allow_tf32_cublas", value)
            set_matmul_precision("high" if value else "highest")
        elif name in self._FLAGS:
            check_bool(f"set_{name}", value)
            FLAGS[self._FLAGS[name]] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")

    def __dir__(self):
        return ["allow_tf32", *self._FLAGS]


matmul = cuBLASModule()


class _PlanCache:
    """torch.backends.cuda.cufft_plan_cache: ferrograd has no FFT plans to cache; the knobs are kept."""

    def __init__(self):
        self.max_size = 4096
        self.size = 0

    def clear(self):
        pass

    def __getitem__(self, device):
        return self


cufft_plan_cache = _PlanCache()


def preferred_linalg_library(backend=None):
    """ferrograd computes its linear algebra itself; the choice is recorded and reported."""
    if backend is not None:
        FLAGS["linalg_library"] = str(backend)
    return FLAGS.get("linalg_library", "default")


def preferred_blas_library(backend=None):
    if backend is not None:
        FLAGS["blas_library"] = str(backend)
    return FLAGS.get("blas_library", "cublas")


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention kernels torch can choose between."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


def _sdp_switch(key, setter):
    def enabled():
        return FLAGS[key]

    def enable(enabled):
        FLAGS[key] = check_bool(setter, enabled)

    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_switch("sdp.flash", "set_sdp_use_flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_switch("sdp.mem_efficient", "set_sdp_use_mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_switch("sdp.math", "set_sdp_use_math")
cudnn_sdp_enabled, enable_cudnn_sdp = _sdp_switch("sdp.cudnn", "set_sdp_use_cudnn")
fp16_bf16_reduction_math_sdp_allowed, allow_fp16_bf16_reduction_math_sdp = _sdp_switch(
    "sdp.fp16_bf16_reduction_math", "set_math_sdp_allow_fp16_bf16_reduction")
for _f, _doc in ((flash_sdp_enabled, "Whether the flash attention kernel may be chosen."),
                 (enable_flash_sdp, "Allow or forbid the flash attention kernel."),
                 (mem_efficient_sdp_enabled, "Whether the memory-efficient attention kernel may be chosen."),
                 (enable_mem_efficient_sdp, "Allow or forbid the memory-efficient attention kernel."),
                 (math_sdp_enabled, "Whether the math (composite) attention may be chosen."),
                 (enable_math_sdp, "Allow or forbid the math (composite) attention."),
                 (cudnn_sdp_enabled, "Whether the cuDNN attention kernel may be chosen."),
                 (enable_cudnn_sdp, "Allow or forbid the cuDNN attention kernel.")):
    _f.__doc__ = _doc
for _name in ("flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
              "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
              "fp16_bf16_reduction_math_sdp_allowed", "allow_fp16_bf16_reduction_math_sdp"):
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name
del _f, _doc, _name


def is_flash_attention_available():
    """ferrograd has no fused attention kernels: scaled_dot_product_attention is the math composite."""
    return False


def can_use_flash_attention(params=None, debug=False):
    return False


def can_use_efficient_attention(params=None, debug=False):
    return False


def can_use_cudnn_attention(params=None, debug=False):
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Within the block, allow only the given attention kernels (deprecated in torch in favour of
    torch.nn.attention.sdpa_kernel; the switches are the same)."""
    keys = ("sdp.flash", "sdp.math", "sdp.mem_efficient", "sdp.cudnn")
    saved = [FLAGS[k] for k in keys]
    try:
        for k, v in zip(keys, (enable_flash, enable_math, enable_mem_efficient, enable_cudnn)):
            FLAGS[k] = bool(v)
        yield
    finally:
        for k, v in zip(keys, saved):
            FLAGS[k] = v
