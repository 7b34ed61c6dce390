"""torch.backends.cpu: the vector instruction set the CPU kernels use."""

from .. import _C

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The SIMD level ferrograd's CPU kernels use, in torch's words: "AVX512", "AVX2", or "DEFAULT"
    (ferrograd's FERROGRAD_SIMD cap applies; on ARM "DEFAULT")."""
    level = _C._build_info()["simd_level"]
    return {2: "AVX512", 1: "AVX2"}.get(level, "DEFAULT")
