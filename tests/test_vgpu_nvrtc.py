"""Every representative kernel of tests/vgpu_kernels.py compiles through the real CuPy's own
RawModule compile path (CuPy's options, its arch lookup pointed at sm_90) without register
spills; the shim and NVRTC agree on what compiles (skipped without cupy-cuda13x and the CUDA 13
NVRTC wheel)."""

from __future__ import annotations

import os
import shutil

import pytest

from hybridgpu.vgpu import nvrtc_check
from vgpu_kernels import KERNELS

pytestmark = pytest.mark.skipif(not nvrtc_check.available(),
                                reason="needs cupy-cuda13x and the CUDA 13 NVRTC/runtime wheels "
                                       "(pip install -e '.[test]')")


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_compiles_for_sm90_without_spills(name):
    source, _ = KERNELS[name]
    report = nvrtc_check.compile_for_sm90(source, name=f"{name}.cu")
    assert report.cubin_bytes > 0
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


# The shim must accept and reject what NVRTC accepts and rejects, or code that runs in CI would
# fail to compile on the GPU (or pick another overload there).
SNIPPETS = {
    "min-int-float-ambiguous": "x[0] = min(i, x[0]);",
    "max-float-double": "x[0] = max(x[0], d) + abs(x[0]);",
    "fmaxf-and-rsqrtf": "x[0] = fmaxf(rsqrtf(x[0]), 1.0f) + __expf(x[0]);",
    "infinity-macro": "x[0] = INFINITY;",
    "nan-macro": "x[0] = NAN;",
    "int-as-float": "x[0] = __int_as_float(0x7f800000) + __longlong_as_double(0);",
    "half-conversions": "x[0] = __half2float(__float2half_rn(x[0]));",
}


@pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None, reason="needs g++")
@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_shim_and_nvrtc_agree_on_what_compiles(name):
    from hybridgpu.vgpu import compiler
    from hybridgpu.vgpu.errors import KernelCompileError

    source = ("#include <cuda_fp16.h>\n"
              'extern "C" __global__ void k(float* x, int i, double d) {\n'
              f"  {SNIPPETS[name]}\n}}\n")
    try:
        nvrtc_check.compile_for_sm90(source)
        nvrtc_ok = True
    except nvrtc_check.NvrtcCompileError:
        nvrtc_ok = False
    try:
        compiler.build(source)
        shim_ok = True
    except KernelCompileError:
        shim_ok = False
    assert shim_ok == nvrtc_ok, f"{name}: NVRTC {'accepts' if nvrtc_ok else 'rejects'} it, " \
                                f"the shim {'accepts' if shim_ok else 'rejects'} it"


def test_command_line_reports_each_kernel(tmp_path, capsys):
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text(KERNELS["reduction_shared_shuffle"][0])
    bad.write_text('extern "C" __global__ void k(float* x) { x[0] = NAN; }\n')
    assert nvrtc_check.main([str(good)]) == 0
    assert "row_sum: " in capsys.readouterr().out
    assert nvrtc_check.main([str(good), str(bad)]) == 1
    assert "ERROR" in capsys.readouterr().out


def test_recorded_sources_compile_and_a_bad_one_fails(tmp_path, capsys):
    import json

    good = {"code": KERNELS["reduction_shared_shuffle"][0], "options": ["-std=c++17"],
            "site": "runtime.py:1"}
    fmad = {**good, "options": ["-std=c++17", "--fmad=false"], "site": "fused.py:2"}
    (tmp_path / "cupy-sources-1.json").write_text(json.dumps([good, fmad, good]))
    assert nvrtc_check.main(["--recorded", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 recorded sources compiled through CuPy for sm_90" in out and "fused.py:2" in out
    bad = {"code": 'extern "C" __global__ void k(float* x) { x[0] = NAN; }\n',
           "options": ["-std=c++17"], "site": "broken.py:3"}
    (tmp_path / "cupy-sources-2.json").write_text(json.dumps([bad]))
    assert nvrtc_check.main(["--recorded", str(tmp_path), "--jobs", "2"]) == 1
    assert "ERROR source from broken.py:3" in capsys.readouterr().out


def test_cupys_own_options_reach_nvrtc_and_the_patches_are_undone():
    from cupy.cuda import compiler

    before = (compiler._get_arch, compiler._get_arch_for_options_for_nvrtc, compiler.function)
    report = nvrtc_check.compile_for_sm90(KERNELS["reduction_shared_shuffle"][0],
                                          options=("-std=c++17", "--fmad=false"))
    for option in ("-std=c++17", "--fmad=false", "-ftz=true", "-arch=sm_90",
                   "--device-as-default-execution-space"):
        assert option in report.options, (option, report.options)
    assert any(o.startswith("-I") and o.endswith("include") for o in report.options)
    assert (compiler._get_arch, compiler._get_arch_for_options_for_nvrtc,
            compiler.function) == before
