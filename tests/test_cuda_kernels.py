"""Every CUDA kernel ferrograd generates compiles with NVRTC.

NVRTC needs no GPU, only its library, which torch's CUDA packages install (ferrograd finds it
under site-packages/nvidia/*/lib). So on CI machines without a GPU a kernel that does not compile
still fails the suite. Skipped where the build has no CUDA support or NVRTC is absent.
"""

import pytest

import ferrograd

_C = ferrograd._C


def _nvrtc():
    return hasattr(_C, "_cuda_nvrtc_present") and _C._cuda_nvrtc_present()


@pytest.mark.skipif(not _nvrtc(), reason="built without CUDA support, or no NVRTC library here")
@pytest.mark.parametrize("arch", ["compute_75", "compute_90"])
def test_every_kernel_compiles(arch):
    n = _C._cuda_compile_all(arch)
    # One kernel per op and dtype: a few hundred. A much smaller number means the generator
    # dropped a family of kernels.
    assert n > 200


@pytest.mark.skipif(not _nvrtc(), reason="built without CUDA support, or no NVRTC library here")
def test_a_broken_kernel_is_reported():
    # The compile check itself must be able to fail: NVRTC's log comes back as a RuntimeError.
    with pytest.raises(RuntimeError, match="NVRTC"):
        _C._cuda_compile_source('extern "C" __global__ void k() { undefined_name(); }', "compute_75")


def test_no_gpu_means_not_available_and_torch_error():
    if ferrograd.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert ferrograd.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="NVIDIA driver|not compiled with CUDA"):
        ferrograd.ones(2).cuda()
    with pytest.raises(RuntimeError, match="NVIDIA driver|not compiled with CUDA"):
        ferrograd.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="NVIDIA driver|not compiled with CUDA"):
        ferrograd.cuda.precompile_kernels()
