"""The virtual GPU's arrays and runtime: what CuPy refuses is refused, memory is tracked by
address, streams capture graphs under CUDA's rules, the fake cuBLAS computes GEMMs, devices
are kept apart, and ``HYBRIDGPU_VIRTUAL_GPU`` drives ``mx.gpu``."""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import memory
from hybridgpu.vgpu.errors import CaptureError, FreedMemoryError, MemoryFaultError

needs_gxx = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                               reason="the virtual GPU compiles kernels with g++")


@pytest.fixture(scope="module")
def xp():
    return vgpu.module(2)


# -- the array refuses what CuPy refuses ---------------------------------------------------------

def test_numpy_functions_and_implicit_conversion_are_refused(xp):
    x = xp.arange(4, dtype=xp.float32)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.exp(x)
    with pytest.raises(TypeError, match="np.where was called on a .*CuPy array.*xp.where"):
        np.where(x > 1, x, 0)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type .*numpy.ndarray"):
        x + np.ones(4, np.float32)
    with pytest.raises(TypeError, match="Unsupported type .*host NumPy array"):
        xp.maximum(x, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="iterating over a"):
        list(x)


def test_operators_methods_and_functions_give_device_arrays(xp):
    x = xp.asarray(np.array([[1.0, -2.0], [3.0, 4.0]], np.float32))
    y = np.float32(2) * x + 1  # a NumPy scalar on the left hands over to the array
    assert isinstance(y, xp.ndarray) and y.dtype == np.float32
    assert xp.asnumpy(y).tolist() == [[3.0, -3.0], [7.0, 9.0]]
    total = x.sum()
    assert isinstance(total, xp.ndarray) and total.shape == () and float(total) == 6.0
    view = x.T
    view[0, 1] = 10.0  # a view writes through to x's memory
    assert float(x[1, 0]) == 10.0 and view.data.mem is x.data.mem
    assert xp.asnumpy(xp.where(x > 0, x, 0)).tolist() == [[1, 0], [10, 4]]
    assert xp.asnumpy(xp.argsort(xp.asarray([3, 1, 2]))).tolist() == [1, 2, 0]
    with pytest.raises(TypeError, match="stably only"):
        xp.sort(x, kind="quicksort")
    out = xp.zeros(3)
    import cupyx  # the stand-in's, installed while the virtual GPU is on

    cupyx.scatter_add(out, xp.asarray([0, 0, 2]), xp.ones(3))
    assert xp.asnumpy(out).tolist() == [2.0, 0.0, 1.0]
    from cupyx.scipy import special

    assert abs(float(special.erf(xp.asarray([0.5]))[0]) - 0.5204998778) < 1e-9
    rng = xp.random.RandomState(3)
    draw = rng.uniform(size=3)
    assert isinstance(draw, xp.ndarray)
    assert xp.asnumpy(draw).tolist() == np.random.RandomState(3).uniform(size=3).tolist()


def test_empty_is_poisoned_so_reading_it_shows(xp):
    assert np.isnan(xp.asnumpy(xp.empty(4, xp.float32))).all()
    assert (xp.asnumpy(xp.empty(2, xp.int32)) == -1).all()


# -- memory --------------------------------------------------------------------------------------

def test_allocations_are_tracked_by_address_and_freed(xp):
    x = xp.zeros(100, xp.float32)
    ptr, serial = x.data.ptr, x.data.mem.serial
    assert ptr % 256 == 0
    assert memory.describe(ptr + 40).startswith("40 bytes into <virtual allocation")
    view = xp.ndarray((10,), xp.float32, memptr=x.data + 40)
    view[...] = 1.0
    assert float(x[10]) == 1.0 and float(x[9]) == 0.0
    free, total = xp.cuda.runtime.memGetInfo()
    assert 0 < free < total
    del x, view
    gc.collect()
    assert not memory.is_live((serial, ptr))


def test_views_outside_the_allocation_are_refused(xp):
    x = xp.zeros(4, xp.float32)
    with pytest.raises(ValueError, match="does not fit in <virtual allocation"):
        xp.ndarray((8,), xp.float32, memptr=x.data + 8)


def test_device_to_device_memcpy_checks_ranges(xp):
    a, b = xp.arange(6, dtype=xp.float64), xp.zeros(6, xp.float64)
    rt = xp.cuda.runtime
    rt.memcpyAsync(b.data.ptr, a.data.ptr, 48, rt.memcpyDeviceToDevice, 0)
    assert xp.asnumpy(b).tolist() == list(range(6))
    with pytest.raises(MemoryFaultError, match="not inside one live allocation"):
        rt.memcpyAsync(b.data.ptr, a.data.ptr, 4096, rt.memcpyDeviceToDevice, 0)


# -- devices -------------------------------------------------------------------------------------

def test_arrays_belong_to_their_device(xp):
    with xp.cuda.Device(1) as device:
        x = xp.ones(3)
        assert device.id == 1 and x.device.id == 1
        assert float((x * 2).sum()) == 6.0
    assert x.device.id == 1 and xp.cuda.Device().id == 0
    with pytest.raises(ValueError, match="Array device must be same as the current device"):
        x + 1
    with pytest.raises(ValueError, match="invalid device ordinal 2"):
        xp.cuda.Device(2)


# -- streams, capture and graph replay -----------------------------------------------------------

COPY_ADD = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
"""


@needs_gxx
def test_capture_records_and_replays_launches(xp):
    k = xp.RawModule(code=COPY_ADD).get_function("add_one")
    x, y = xp.zeros(8, xp.float32), xp.zeros(8, xp.float32)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        assert stream.is_capturing()
        k((1,), (32,), (x, y, np.int32(8)))
        xp.cuda.runtime.memcpyAsync(x.data.ptr, y.data.ptr, 32, 3, stream.ptr)
        graph = stream.end_capture()
    assert xp.asnumpy(y).tolist() == [0.0] * 8  # recorded, not run
    graph.upload(stream=stream)
    for _ in range(3):
        graph.launch(stream=stream)
    stream.synchronize()  # a non-blocking stream: the host waits for it before reading
    assert xp.asnumpy(y).tolist() == [3.0] * 8 and xp.asnumpy(x).tolist() == [3.0] * 8


@pytest.mark.parametrize("step", ["allocation", "asnumpy", "float", "synchronize",
                                  "host-to-device", "default-stream"])
def test_capture_refuses_what_cuda_refuses(xp, step):
    x = xp.ones(4, xp.float32)
    actions = {
        "allocation": lambda: xp.zeros(4),
        "asnumpy": lambda: xp.asnumpy(x),
        "float": lambda: float(x[0]),
        "synchronize": lambda: xp.cuda.get_current_stream().synchronize(),
        "host-to-device": lambda: xp.asarray(np.ones(2)),
        "default-stream": lambda: xp.cuda.runtime.memcpyAsync(x.data.ptr, x.data.ptr, 4, 3, 0),
    }
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(CaptureError, match="while a stream is capturing"):
                actions[step]()
        finally:  # as in CUDA, the forbidden call invalidated the capture
            with pytest.raises(CaptureError, match="invalidated by"):
                stream.end_capture()


def test_other_threads_go_on_while_one_captures(xp):
    import threading

    stream = xp.cuda.Stream(non_blocking=True)
    results = []

    def eager_work():
        try:
            results.append(float((xp.ones(3) * 2).sum()))  # allocates and reads the host
        except Exception as err:  # noqa: BLE001  (reported below)
            results.append(err)

    with stream:
        stream.begin_capture()
        try:
            worker = threading.Thread(target=eager_work)
            worker.start()
            worker.join()
            with pytest.raises(CaptureError):
                xp.zeros(2)  # the capturing thread may not allocate
        finally:  # which invalidated the capture, as in CUDA
            with pytest.raises(CaptureError, match="invalidated by"):
                stream.end_capture()
    assert results == [6.0]


@needs_gxx
def test_replay_over_freed_memory_names_the_step(xp):
    k = xp.RawModule(code=COPY_ADD).get_function("add_one")
    x, y = xp.zeros(8, xp.float32), xp.zeros(8, xp.float32)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        k((1,), (32,), (x, y, np.int32(8)))
        graph = stream.end_capture()
    del y
    gc.collect()
    with pytest.raises(FreedMemoryError, match=r"graph step 0 \(kernel add_one .*freed"):
        graph.launch(stream=stream)


# -- cuBLAS --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("ta", "tb"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cublas_gemm_is_column_major(xp, dtype, ta, tb):
    lib = xp.virtual_cublas_library()
    handle = ctypes.c_void_p()
    assert lib.cublasCreate_v2(ctypes.addressof(handle)) == 0
    rng = np.random.default_rng(0)
    m, n, k = 3, 4, 5
    # column-major op(A) is m x k: stored as the row-major transpose of what cuBLAS reads
    a_cm = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b_cm = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    c0 = rng.standard_normal((m, n)).astype(dtype)
    A, B, C = (xp.asarray(np.asfortranarray(v).T.copy()) for v in (a_cm, b_cm, c0))
    scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    alpha, beta = scalar(2.0), scalar(0.5)
    gemm = lib.cublasSgemm_v2 if dtype == np.float32 else lib.cublasDgemm_v2
    assert gemm(handle.value, ta, tb, m, n, k, ctypes.addressof(alpha), A.data.ptr,
                a_cm.shape[0], B.data.ptr, b_cm.shape[0], ctypes.addressof(beta), C.data.ptr,
                m) == 0
    want = 2.0 * ((a_cm.T if ta else a_cm) @ (b_cm.T if tb else b_cm)) + 0.5 * c0
    np.testing.assert_allclose(xp.asnumpy(C).T, want, rtol=1e-5)
    assert lib.cublasDestroy_v2(handle.value) == 0


def test_cublas_strided_batched_is_recorded_under_capture(xp):
    lib = xp.virtual_cublas_library()
    handle = ctypes.c_void_p()
    lib.cublasCreate_v2(ctypes.addressof(handle))
    a = xp.asarray(np.arange(2 * 4, dtype=np.float32).reshape(2, 2, 2))
    c = xp.zeros((2, 2, 2), xp.float32)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    stream = xp.cuda.Stream(non_blocking=True)
    lib.cublasSetStream_v2(handle.value, stream.ptr)
    with stream:
        stream.begin_capture()
        lib.cublasSgemmStridedBatched(handle.value, 0, 0, 2, 2, 2, ctypes.addressof(one),
                                      a.data.ptr, 2, 4, a.data.ptr, 2, 4,
                                      ctypes.addressof(zero), c.data.ptr, 2, 4, 2)
        graph = stream.end_capture()
    assert float(c.sum()) == 0.0
    graph.launch(stream=stream)
    stream.synchronize()
    host = xp.asnumpy(a)
    want = np.stack([(m.T @ m.T).T for m in host])  # column-major A A
    np.testing.assert_allclose(xp.asnumpy(c), want)


def test_cublas_gemm_ex_sums_float16_in_float32_and_refuses_other_types(xp):
    """``cublasGemmEx`` with float16 operands and result and CUBLAS_COMPUTE_32F: the products
    summed in float32, rounded once; any other type combination is refused by name."""
    lib = xp.virtual_cublas_library()
    handle = ctypes.c_void_p()
    lib.cublasCreate_v2(ctypes.addressof(handle))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 3)).astype(np.float16)  # column-major 3 x 64 (m x k)
    b = rng.standard_normal((2, 64)).astype(np.float16)  # column-major 64 x 2 (k x n)
    A, B, C = xp.asarray(a), xp.asarray(b), xp.zeros((2, 3), xp.float16)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    args = (handle.value, 0, 0, 3, 2, 64, ctypes.addressof(one), A.data.ptr, 2, 3, B.data.ptr,
            2, 64, ctypes.addressof(zero), C.data.ptr, 2, 3)
    assert lib.cublasGemmEx(*args, 68, -1) == 0
    want = (a.astype(np.float32).T @ b.astype(np.float32).T).T.astype(np.float16)
    np.testing.assert_array_equal(xp.asnumpy(C), want)
    with pytest.raises(ValueError, match="only float16 operands"):
        lib.cublasGemmEx(*args[:8], 0, *args[9:], 68, -1)  # A as float32
    with pytest.raises(ValueError, match="only float16 operands"):
        lib.cublasGemmEx(*args, 64, -1)  # CUBLAS_COMPUTE_16F


# -- hybridgpu on the virtual GPU ----------------------------------------------------------------

def test_environment_variable_makes_mx_gpu_virtual():
    code = ("import hybridgpu as mx; x = mx.nd.ones((2, 3), ctx=mx.gpu(1)); "
            "print(mx.context.num_gpus(), type(x.handle).__module__, "
            "(x * 2).sum().asscalar(), mx.context.gpu_memory_info(1)[1] > 0)")
    env = {**os.environ, "HYBRIDGPU_VIRTUAL_GPU": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [_src(), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["2", "hybridgpu.vgpu.array", "12.0", "True"]
    env["HYBRIDGPU_VIRTUAL_GPU"] = "two"
    bad = subprocess.run([sys.executable, "-c", "import hybridgpu as mx; mx.context.num_gpus()"],
                         env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "HYBRIDGPU_VIRTUAL_GPU must be" in bad.stderr


def test_num_gpus_follows_the_environment_variable(monkeypatch):
    import hybridgpu as mx

    monkeypatch.setenv("HYBRIDGPU_VIRTUAL_GPU", "3")
    assert mx.context.num_gpus() == 3
    monkeypatch.setenv("HYBRIDGPU_VIRTUAL_GPU", "-1")
    with pytest.raises(mx.base.MXNetError, match="HYBRIDGPU_VIRTUAL_GPU must be"):
        mx.context.num_gpus()


def _src():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def test_host_special_functions_without_scipy():
    import math

    from hybridgpu.vgpu.special import HOST

    x = np.array([-2.5, -0.3, 0.2, 1.0, 3.7, 12.0])
    np.testing.assert_allclose(HOST["erfinv"](HOST["erf"](x / 13)), x / 13, rtol=1e-12)
    np.testing.assert_allclose(HOST["digamma"](x + 1), HOST["digamma"](x) + 1 / x, rtol=1e-11)
    np.testing.assert_allclose(HOST["digamma"](np.array([1.0])), [-0.5772156649015329])
    np.testing.assert_allclose(HOST["gammaln"](x[x > 0]), [math.lgamma(v) for v in x[x > 0]])
    poles = HOST["gamma"](np.array([-2.0, 0.0, -np.inf, np.nan]))
    assert poles[0] == poles[1] == np.inf and np.isnan(poles[2:]).all()
