"""The virtual GPU runs CUDA C kernels through its shim header (g++) with the launch's grid,
block and arguments: results equal NumPy's; CuPy's argument rules, CUDA's launch limits,
memory faults and misaligned vector loads are reported naming the kernel."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import compiler
from hybridgpu.vgpu.errors import KernelCompileError, LaunchError, MemoryFaultError
from vgpu_kernels import KERNELS

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="the virtual GPU compiles kernels with g++")

COPY = r"""
extern "C" __global__ void copy_n(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}
"""


@pytest.fixture(scope="module")
def xp():
    return vgpu.module(2)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_numpy(xp, name):
    _, launch = KERNELS[name]
    got, want = launch(xp, np.random.default_rng(7))
    assert got.dtype == want.dtype or got.dtype.kind == want.dtype.kind == "f"
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def test_signatures_are_parsed_from_the_source():
    assert compiler.kernel_signatures(COPY) == {
        "copy_n": [("float*", "x"), ("float*", "y"), ("long long", "n")]}


def _copy(xp):
    return xp.RawModule(code=COPY, options=("-std=c++17",)).get_function("copy_n")


def test_python_int_is_int64_and_float_is_double(xp):
    k = _copy(xp)
    x, y = xp.arange(8, dtype=xp.float32), xp.zeros(8, xp.float32)
    k((1,), (8,), (x, y, 8))  # a Python int is passed as long long: accepted
    assert xp.asnumpy(y).tolist() == list(range(8))
    with pytest.raises(TypeError, match=r"kernel copy_n: argument 2 \(long long n\) got a "
                                        r"NumPy int32"):
        k((1,), (8,), (x, y, np.int32(8)))
    with pytest.raises(TypeError, match="argument 2 .* Python float"):
        k((1,), (8,), (x, y, 8.0))
    with pytest.raises(TypeError, match=r"argument 1 \(float\* y\) got a int32 array"):
        k((1,), (8,), (x, xp.zeros(8, xp.int32), 8))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        k((1,), (8,), (x, y))


def test_launch_limits(xp):
    k = _copy(xp)
    x, y = xp.zeros(8, xp.float32), xp.zeros(8, xp.float32)
    for grid, block in [((1,), (1025,)), ((1,), (1, 1, 65)), ((1, 65536), (1,)),
                        ((1,), (64, 32))]:  # a 0 runs as 1 (CuPy launches max(1, d))
        with pytest.raises(LaunchError, match="kernel copy_n: launch over CUDA's limits"):
            k(grid, block, (x, y, 8))
    with pytest.raises(LaunchError, match="dynamic shared memory"):
        k((1,), (8,), (x, y, 8), shared_mem=64 * 1024)


def test_out_of_bounds_access_names_the_kernel_and_the_allocation(xp):
    k = _copy(xp)
    x, y = xp.zeros(1000, xp.float32), xp.zeros(1000, xp.float32)
    with pytest.raises(MemoryFaultError, match=r"kernel copy_n: segmentation fault .* past the "
                                               r"end of <virtual allocation"):
        k((8,), (256,), (x, y, 2048))  # reads and writes 1048 elements too many


def test_fault_inside_a_kernel_with_barriers_is_reported(xp):
    src = r"""
    extern "C" __global__ void shifted(const float* x, float* y, int shift) {
      __shared__ float tile[128];
      tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x + shift];
      __syncthreads();
      y[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
    }
    """
    k = xp.RawModule(code=src).get_function("shifted")
    x, y = xp.arange(4096, dtype=xp.float32), xp.zeros(4096, xp.float32)
    k((32,), (128,), (x, y, np.int32(0)))
    assert xp.asnumpy(y)[:3].tolist() == [127.0, 126.0, 125.0]
    with pytest.raises(MemoryFaultError, match=r"kernel shifted: segmentation fault .*0 bytes "
                                               r"past the end.*block \(24, 0, 0\)"):
        k((32,), (128,), (x, y, np.int32(1024)))
    k((32,), (128,), (x, y, np.int32(0)))  # the next launch runs normally
    assert xp.asnumpy(y)[-1] == 3968.0


def test_warp_votes_and_launch_bounds_before_global(xp):
    src = r"""
    extern "C" __launch_bounds__(64) __global__ void votes(const float* x, unsigned* out) {
      float v = x[threadIdx.x];
      unsigned b = __ballot_sync(0xffffffffu, v > 0.0f);
      int any = __any_sync(0xffffffffu, v > 10.0f), all = __all_sync(0xffffffffu, v > -1.0f);
      if (threadIdx.x % 32 == 0) {
        out[threadIdx.x / 32 * 3] = b;
        out[threadIdx.x / 32 * 3 + 1] = any;
        out[threadIdx.x / 32 * 3 + 2] = all;
      }
    }
    """
    host = np.where(np.arange(64) % 3 == 0, 1.0, -0.5).astype(np.float32)
    host[40] = 11.0
    out = xp.zeros(6, xp.uint32)
    xp.RawModule(code=src).get_function("votes")((1,), (64,), (xp.asarray(host), out))
    bits = [int(sum(1 << i for i in range(32) if host[w * 32 + i] > 0)) for w in (0, 1)]
    assert xp.asnumpy(out).tolist() == [bits[0], 0, 1, bits[1], 1, 1]


def test_division_by_zero_and_trap_end_the_launch_with_an_error(xp):
    src = r"""
    extern "C" __global__ void divide(const int* x, int* y, int d) {
      y[threadIdx.x] = x[threadIdx.x] / d;
    }
    extern "C" __global__ void trap(int* y) { if (threadIdx.x == 3) __trap(); y[threadIdx.x] = 1; }
    """
    module = xp.RawModule(code=src)
    x, y = xp.arange(4, dtype=xp.int32), xp.zeros(4, xp.int32)
    with pytest.raises(MemoryFaultError, match="kernel divide: integer division by zero"):
        module.get_function("divide")((1,), (4,), (x, y, np.int32(0)))
    with pytest.raises(MemoryFaultError, match=r"kernel trap: __trap\(\) .*thread \(3, 0, 0\)"):
        module.get_function("trap")((1,), (4,), (y,))


def test_fiber_stack_overflow_is_reported(xp):
    src = r"""
    extern "C" __global__ void big_locals(float* y, int n) {
      volatile float local[65536];  // 256 KiB in one thread
      for (int i = 0; i < n; ++i) local[i] = i;
      __syncthreads();
      y[threadIdx.x] = local[n - 1];
    }
    """
    y = xp.zeros(2, xp.float32)
    with pytest.raises(MemoryFaultError, match="kernel big_locals: stack overflow"):
        xp.RawModule(code=src).get_function("big_locals")((1,), (2,), (y, np.int32(65536)))


def test_misaligned_vector_load_is_caught(xp):
    k = xp.RawModule(code=KERNELS["elementwise_float4"][0]).get_function("axpy_relu4")
    x, y = xp.zeros(64, xp.float32), xp.zeros(64, xp.float32)
    with pytest.raises(MemoryFaultError, match="kernel axpy_relu4: misaligned float4 load"):
        k((1,), (32,), (x[1:], y, np.float32(1), 15))  # x + 1 float: not 16-byte aligned
    vec = 'extern "C" __global__ void v(const float4* x, float* y) { y[0] = x[0].x; }'
    with pytest.raises(MemoryFaultError, match=r"argument 0 \(float4\* x\).*not 16-byte"):
        xp.RawModule(code=vec).get_function("v")((1,), (1,), (x[2:], y))


def test_array_of_another_device_is_refused(xp):
    k = _copy(xp)
    x = xp.zeros(8, xp.float32)
    with xp.cuda.Device(1):
        y = xp.zeros(8, xp.float32)
    with pytest.raises(ValueError, match=r"argument 1 \(float\* y\): the array is on device 1"):
        k((1,), (8,), (x, y, 8))


def test_compile_error_shows_the_numbered_source_and_nvrtc_rejections_fail_here_too(xp):
    bad = 'extern "C" __global__ void k(float* x) {\n  x[0] = INFINITY;\n}\n'
    with pytest.raises(KernelCompileError, match=r"(?s)INFINITY.*   2    x\[0\] = INFINITY;"):
        xp.RawModule(code=bad).get_function("k")
    ambiguous = 'extern "C" __global__ void k(float* x, int i) { x[0] = min(i, x[0]); }'
    with pytest.raises(KernelCompileError, match="ambiguous"):
        xp.RawModule(code=ambiguous).get_function("k")  # NVRTC rejects min(int, float) too
    with pytest.raises(AttributeError, match="no kernel 'nope'"):
        xp.RawModule(code=COPY).get_function("nope")


def test_macro_options_reach_the_compiler(xp):
    src = 'extern "C" __global__ void fill(float* y) { y[threadIdx.x] = VALUE; }'
    y = xp.zeros(2, xp.float32)
    for value in ("1.5f", "2.5f"):
        module = xp.RawModule(code=src, options=("-std=c++17", f"-DVALUE={value}"))
        module.get_function("fill")((1,), (2,), (y,))
        assert xp.asnumpy(y).tolist() == [float(value[:-1])] * 2


def test_compiled_kernels_are_cached_on_disk(xp, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path))
    source = COPY + "// cache test\n"
    compiler.build(source)
    libraries = list((tmp_path / "vgpu").glob("k-*.so"))
    assert len(libraries) == 1
    compiler._loaded.clear()
    stamp = libraries[0].stat().st_mtime_ns
    compiler.build(source)  # a new process would load the same file
    assert libraries[0].stat().st_mtime_ns == stamp
