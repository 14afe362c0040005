"""Every representative kernel of tests/vgpu_kernels.py compiles with NVRTC for compute_90 and
sm_90 without register spills (skipped when cuda-bindings/nvidia-cuda-nvrtc are missing)."""

from __future__ import annotations

import pytest

from hybridgpu.vgpu import nvrtc_check
from vgpu_kernels import KERNELS

pytestmark = pytest.mark.skipif(not nvrtc_check.available(),
                                reason="needs pip cuda-bindings and nvidia-cuda-nvrtc (CUDA 13)")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_for_sm90_without_spills(name):
    source, _ = KERNELS[name]
    report = nvrtc_check.compile_for_sm90(source, name=f"{name}.cu")
    assert report.ptx_bytes > 0 and report.cubin_bytes > 0
    assert report.kernels, f"{name}: ptxas reported no kernel:\n{report.log}"
    for kernel in report.kernels.values():
        assert kernel.registers > 0, kernel
        assert kernel.spill_bytes == 0, f"{name}: {kernel} spills"


def test_reduction_reports_its_shared_memory():
    report = nvrtc_check.compile_for_sm90(KERNELS["reduction_shared_shuffle"][0])
    assert report.kernels["row_sum"].shared_bytes == 32 * 8


def test_compile_error_raises_with_the_numbered_source():
    source = 'extern "C" __global__ void k(float* x) {\n  x[0] = INFINITY;\n}\n'
    with pytest.raises(nvrtc_check.NvrtcCompileError) as info:
        nvrtc_check.compile_for_sm90(source)
    message = str(info.value)
    assert "INFINITY" in message and "   2    x[0] = INFINITY;" in message
