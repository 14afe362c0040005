"""The virtual GPU orders like a GPU: each ``HYBRIDGPU_VGPU_ORDER`` mode (vgpu/ordering.py)
makes a deliberately wrong program written here give wrong results or an error, where running
everything in issue order (the default) hides the bug; the launch checks refuse what the real
CuPy 14.2 refuses (checked in its installed package where no driver is needed)."""

from __future__ import annotations

import gc
import os
import shutil
import weakref

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import ordering
from hybridgpu.vgpu.errors import BarrierError, CaptureError, KernelCompileError, LaunchError

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="the virtual GPU compiles kernels with g++")

ADD_ONE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
"""


@pytest.fixture(scope="module")
def xp():
    return vgpu.module(2)


@pytest.fixture(autouse=True)
def mode():
    """Each test starts in issue order (whatever ``HYBRIDGPU_VGPU_ORDER`` says); ``mode("async")``
    turns modes on; the environment's come back after."""
    ordering.configure("", seed=0)
    yield lambda text: ordering.configure(text, seed=0)
    ordering.configure()


def _run(xp, src, name, grid, block, args):
    xp.RawModule(code=src).get_function(name)(grid, block, args)


# -- asynchronous streams ------------------------------------------------------------------------

def _producer_consumer(xp, wait):
    """Stream a writes y = x + 1; stream b computes z = y + 1, waiting for a's event or not."""
    k = xp.RawModule(code=ADD_ONE).get_function("add_one")
    x = xp.zeros(64, xp.float32)
    y, z = xp.zeros_like(x), xp.zeros_like(x)
    a, b = xp.cuda.Stream(non_blocking=True), xp.cuda.Stream(non_blocking=True)
    with a:
        k((1,), (64,), (x, y, np.int32(64)))
        written = a.record()
    with b:
        if wait:
            b.wait_event(written)
        k((1,), (64,), (y, z, np.int32(64)))
    b.synchronize()
    a.synchronize()
    return xp.asnumpy(z)


def test_missing_event_wait_gives_wrong_results_under_async(xp, mode):
    assert _producer_consumer(xp, wait=False).tolist() == [2.0] * 64  # hidden in issue order
    mode("async")
    assert _producer_consumer(xp, wait=False).tolist() == [1.0] * 64  # b read y before a wrote
    assert _producer_consumer(xp, wait=True).tolist() == [2.0] * 64


def test_host_read_of_an_unsynchronized_stream_is_stale_under_async(xp, mode):
    mode("async")
    k = xp.RawModule(code=ADD_ONE).get_function("add_one")
    x, y = xp.zeros(8, xp.float32), xp.zeros(8, xp.float32)
    side = xp.cuda.Stream(non_blocking=True)
    with side:
        k((1,), (8,), (x, y, np.int32(8)))
    assert xp.asnumpy(y).tolist() == [0.0] * 8  # the legacy stream does not wait for `side`
    side.synchronize()
    assert xp.asnumpy(y).tolist() == [1.0] * 8


def test_async_keeps_cudas_orders(xp, mode):
    """Work on one stream runs in order; the legacy stream waits for blocking streams; an
    event and a device synchronize wait for what came before them."""
    mode("async")
    k = xp.RawModule(code=ADD_ONE).get_function("add_one")
    x = xp.zeros(8, xp.float32)
    blocking = xp.cuda.Stream()
    with blocking:
        k((1,), (8,), (x, x, np.int32(8)))
        k((1,), (8,), (x, x, np.int32(8)))
    assert xp.asnumpy(x).tolist() == [2.0] * 8  # legacy stream after a blocking one
    side = xp.cuda.Stream(non_blocking=True)
    with side:
        k((1,), (8,), (x, x, np.int32(8)))
        done = side.record()
    done.synchronize()
    assert float(x[0]) == 3.0
    with side:
        k((1,), (8,), (x, x, np.int32(8)))
    xp.cuda.Device().synchronize()
    assert float(x[0]) == 4.0


def test_queued_work_keeps_freed_arrays_mapped(xp, mode):
    mode("async")
    k = xp.RawModule(code=ADD_ONE).get_function("add_one")
    side = xp.cuda.Stream(non_blocking=True)
    x, y = xp.ones(1 << 12, xp.float32), xp.zeros(1 << 12, xp.float32)
    with side:
        k((16,), (256,), (x, y, np.int32(1 << 12)))
    used = xp.get_default_memory_pool().used_bytes()
    del x, y
    gc.collect()
    assert xp.get_default_memory_pool().used_bytes() <= used - 2 * (1 << 14)  # back in "pool"
    side.synchronize()  # the queued kernel still ran on mapped pages (no fault)


# -- thread and block order, shared memory --------------------------------------------------------

NEIGHBOUR = r"""
extern "C" __global__ void neighbour(const float* x, float* y) {
  __shared__ float tile[64];
  int t = threadIdx.x;
  tile[t] = x[blockIdx.x * 64 + t];
  %s
  y[blockIdx.x * 64 + t] = t > 0 ? tile[t - 1] : 0.0f;
}
"""


def _neighbour(xp, sync):
    x = xp.arange(128, dtype=xp.float32) + 1
    y = xp.zeros(128, xp.float32)
    _run(xp, NEIGHBOUR % ("__syncthreads();" if sync else ""), "neighbour", (2,), (64,), (x, y))
    want = np.concatenate([[0], np.arange(1, 64), [0], np.arange(65, 128)]).astype(np.float32)
    return np.array_equal(xp.asnumpy(y), want)


def test_missing_syncthreads_shows_under_reversed_threads(xp, mode):
    assert _neighbour(xp, sync=False)  # in order, the lower neighbour wrote first
    mode("reverse")
    assert not _neighbour(xp, sync=False)
    assert _neighbour(xp, sync=True)
    mode("shuffle")
    assert not _neighbour(xp, sync=False)
    assert _neighbour(xp, sync=True)


BROADCAST = r"""
extern "C" __global__ void first_block_value(const float* x, float* y) {
  __shared__ float value;
  if (blockIdx.x == 0 && threadIdx.x == 0) value = x[0];
  __syncthreads();
  y[blockIdx.x * blockDim.x + threadIdx.x] = value;
}
"""


def test_shared_memory_assumed_to_survive_blocks_shows_when_poisoned(xp, mode):
    x, y = xp.full(1, 5.0, xp.float32), xp.zeros(4 * 32, xp.float32)
    _run(xp, BROADCAST, "first_block_value", (4,), (32,), (x, y))
    assert (xp.asnumpy(y) == 5.0).all()  # block 0 ran first and its value stayed
    mode("poison")
    _run(xp, BROADCAST, "first_block_value", (4,), (32,), (x, y))
    got = xp.asnumpy(y).reshape(4, 32)
    assert (got[0] == 5.0).all() and np.isnan(got[1:]).all()


WARP_PUBLISH = r"""
extern "C" __global__ void mirror(const float* x, float* y) {
  __shared__ float tile[64];
  int t = threadIdx.x;
  tile[t] = x[t];
  %s
  y[t] = tile[63 - t];
}
"""


def test_syncwarp_orders_nothing_between_warps(xp, mode):
    mode("poison")
    x, y = xp.arange(64, dtype=xp.float32), xp.zeros(64, xp.float32)
    want = np.arange(64, dtype=np.float32)[::-1]
    _run(xp, WARP_PUBLISH % "__syncthreads();", "mirror", (1,), (64,), (x, y))
    assert np.array_equal(xp.asnumpy(y), want)
    _run(xp, WARP_PUBLISH % "__syncwarp();", "mirror", (1,), (64,), (x, y))
    assert np.isnan(xp.asnumpy(y)[:32]).all()  # warp 0 read warp 1's half before it wrote


def test_shuffles_stay_inside_their_warp(xp):
    src = r"""
    extern "C" __global__ void rotate(const int* x, int* y, int width) {
      int t = threadIdx.x;
      y[t] = __shfl_sync(0xffffffffu, x[t], (t + 1) % width, width);
    }
    """
    x, y = xp.arange(64, dtype=xp.int32), xp.zeros(64, xp.int32)
    _run(xp, src, "rotate", (1,), (64,), (x, y, np.int32(32)))
    lanes = np.arange(64)
    assert xp.asnumpy(y).tolist() == (lanes // 32 * 32 + (lanes + 1) % 32).tolist()
    with pytest.raises(BarrierError, match="width other than 1, 2, 4, 8, 16 or 32"):
        _run(xp, src, "rotate", (1,), (64,), (x, y, np.int32(64)))


def test_threads_at_different_syncthreads_fail_the_launch(xp):
    src = r"""
    extern "C" __global__ void split(float* y) {
      if (threadIdx.x < 16) {
        y[threadIdx.x] = 1.0f;
        __syncthreads();
      } else {
        __syncthreads();
        y[threadIdx.x] = 2.0f;
      }
    }
    """
    y = xp.zeros(32, xp.float32)
    with pytest.raises(BarrierError, match=r"kernel split: .*__syncthreads #1 \(line 7\), "
                                           r"another at #1 \(line 5\)"):
        _run(xp, src, "split", (1,), (32,), (y,))
    early_exit = r"""
    extern "C" __global__ void tail(float* y, int n) {
      if (threadIdx.x >= n) return;
      y[threadIdx.x] = 1.0f;
      __syncthreads();
      y[32 + threadIdx.x] = y[threadIdx.x] + y[n - 1 - threadIdx.x];
    }
    """
    y = xp.zeros(64, xp.float32)
    _run(xp, early_exit, "tail", (1,), (32,), (y, np.int32(8)))  # exited threads do not block
    assert xp.asnumpy(y)[32:40].tolist() == [2.0] * 8


# -- launch checks -----------------------------------------------------------------------------

def test_launch_bounds_and_shared_memory_limits(xp):
    src = r"""
    #define TILE 128
    extern "C" __global__ void __launch_bounds__(TILE) tiled(float* y) {
      __shared__ float tile[TILE];
      tile[threadIdx.x] = 1.0f;
      y[threadIdx.x] = tile[threadIdx.x];
    }
    """
    k = xp.RawModule(code=src).get_function("tiled")
    y = xp.zeros(256, xp.float32)
    k((1,), (128,), (y,))
    with pytest.raises(LaunchError, match=r"256 threads a block, over its "
                                          r"__launch_bounds__\(128\).*LaunchOutOfResources"):
        k((1,), (256,), (y,))
    big = src.replace("#define TILE 128", "#define TILE 12289")  # 49156 bytes
    with pytest.raises(KernelCompileError, match=r"tiled uses too much shared data \(49156 "):
        xp.RawModule(code=big).get_function("tiled")
    dynamic = r"""
    extern "C" __global__ void dyn(float* y) {
      extern __shared__ float buf[];
      __shared__ float fixed[1024];
      buf[threadIdx.x] = fixed[0]; y[threadIdx.x] = buf[threadIdx.x];
    }
    """
    k = xp.RawModule(code=dynamic).get_function("dyn")
    assert k.max_dynamic_shared_size_bytes == 48 * 1024 - 4096  # static arrays count
    with pytest.raises(LaunchError, match="dynamic shared memory"):
        k((1,), (32,), (y,), shared_mem=48 * 1024 - 4095)
    k.max_dynamic_shared_size_bytes = 100 * 1024  # the opt-in attribute
    k((1,), (32,), (y,), shared_mem=100 * 1024)
    with pytest.raises(LaunchError, match="cudaErrorInvalidValue"):
        k.max_dynamic_shared_size_bytes = 227 * 1024


def test_python_argument_types_are_cupys(xp):
    """As CuPy 14.2's Cython: grid and block are typed ``tuple`` (a list or an int raises
    TypeError), each entry a C integer launched as ``max(1, d)``; ``args`` is iterated (a
    tuple or a list); ``shared_mem`` is keyword-only; RawModule takes keywords only;
    RawModule/RawKernel options a tuple."""
    k = xp.RawModule(code=ADD_ONE).get_function("add_one")
    x, y = xp.zeros(4, xp.float32), xp.zeros(4, xp.float32)
    for grid, block in [([1], (4,)), (1, (4,)), ((1,), [4]), ((1,), 4)]:
        with pytest.raises(TypeError, match="incorrect type \\(expected tuple"):
            k(grid, block, (x, y, np.int32(4)))
    with pytest.raises(TypeError, match="holds a float"):
        k((1.0,), (4,), (x, y, np.int32(4)))
    with pytest.raises(TypeError):
        k((1,), (4,), (x, y, np.int32(4)), 0)  # shared_mem positionally
    k((0,), (4,), [x, y, np.int32(4)])  # one block, as CuPy's max(1, 0); a list of args
    assert xp.asnumpy(y).tolist() == [1.0] * 4
    for make in (lambda: xp.RawModule(code=ADD_ONE, options=["-DX=1"]),
                 lambda: xp.RawKernel(ADD_ONE, "add_one", options=["-DX=1"])):
        with pytest.raises(TypeError, match="'options' has incorrect type \\(expected tuple, "
                                            "got list\\)"):
            make()
    with pytest.raises(TypeError, match="positional"):
        xp.RawModule(ADD_ONE)  # every argument is keyword-only


def test_argument_types_match_the_installed_cupy():
    """The claims above, against the real package where no driver is needed."""
    import sys

    standin = {k: sys.modules.pop(k) for k in list(sys.modules) if k.split(".")[0] == "cupyx"}
    try:  # the virtual GPU plays cupyx in sys.modules; the real cupy imports its own
        cupy = pytest.importorskip("cupy")
    finally:
        for k in [k for k in sys.modules if k.split(".")[0] == "cupyx"]:
            del sys.modules[k]
        sys.modules.update(standin)
    for make in (lambda: cupy.RawModule(code=ADD_ONE, options=["-DX=1"]),
                 lambda: cupy.RawKernel(ADD_ONE, "add_one", options=["-DX=1"])):
        with pytest.raises(TypeError, match="'options' has incorrect type \\(expected tuple, "
                                            "got list\\)"):
            make()
    doc = cupy.RawKernel.__call__.__doc__
    assert "grid (tuple)" in doc and "block (tuple)" in doc and "*, shared_mem=0" in doc
    with pytest.raises(TypeError, match="3 positional arguments"):
        cupy.RawKernel(ADD_ONE, "add_one")((1,), (1,), (), 0)
    with pytest.raises(TypeError, match="positional"):
        cupy.RawModule(ADD_ONE)


# -- capture checks ----------------------------------------------------------------------------

class _Cyclic:
    """Garbage in a reference cycle whose finalizer synchronises the device (as a cuBLAS
    handle's destroy does): freed by the cyclic collector, at any allocation."""

    def __init__(self, xp):
        self.me = self
        weakref.finalize(self, xp.cuda.runtime.deviceSynchronize)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the finalizer's
def test_gc_mode_runs_finalizers_inside_every_capture(xp, mode):
    stream = xp.cuda.Stream(non_blocking=True)
    gc.collect()
    _Cyclic(xp)
    with stream:  # without the mode the collector may or may not run during the capture
        stream.begin_capture()
        stream.end_capture()
    gc.collect()
    mode("gc")
    _Cyclic(xp)
    with stream:
        stream.begin_capture()
        with pytest.raises(CaptureError, match=r"invalidated by cudaDeviceSynchronize"):
            stream.end_capture()


def test_synchronizing_calls_fail_the_capture(xp):
    stream = xp.cuda.Stream(non_blocking=True)
    event = xp.cuda.Event()
    for sync in (lambda: xp.cuda.Device().synchronize(), stream.synchronize,
                 event.synchronize, xp.cuda.runtime.deviceSynchronize):
        with stream:
            stream.begin_capture()
            with pytest.raises(CaptureError, match="while a stream is capturing"):
                sync()
            with pytest.raises(CaptureError, match="invalidated"):
                stream.end_capture()


def test_modes_are_parsed_strictly():
    with pytest.raises(ValueError, match="unknown virtual GPU mode 'revers'"):
        ordering.configure("async,revers")
    with pytest.raises(ValueError, match="choose one"):
        ordering.configure("reverse,shuffle")
    ordering.configure("strict")
    assert ordering.active() == {"async", "reverse", "poison", "gc"}
    ordering.configure()


@pytest.mark.gpu
def test_async_catches_a_runtime_that_forgets_its_event_waits(gpu_available, mode, monkeypatch):
    """The gpu executor orders its replay stream after the caller's and back with events; under
    ``async``, dropping every ``wait_event`` changes a hybridized network's outputs."""
    import hybridgpu as mx
    from hybridgpu.gluon import nn
    from hybridgpu.vgpu import streams

    if not getattr(gpu_available.xp, "is_virtual", False):
        pytest.skip("patches the virtual GPU's streams")

    def outputs():
        mx.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(16, activation="relu"), nn.Dense(4))
        net.initialize(mx.init.Xavier(), ctx=gpu_available)
        net.hybridize()
        x = mx.nd.array(np.random.RandomState(0).randn(32, 8), ctx=gpu_available)
        return [net(x).asnumpy(), net(x * 2).asnumpy()]

    mode("async")
    right = outputs()
    np.testing.assert_array_equal(outputs()[1], right[1])  # deterministic with the waits
    monkeypatch.setattr(streams.Stream, "wait_event", lambda self, event: None)
    wrong = outputs()
    assert not any(np.array_equal(w, r) for w, r in zip(wrong, right))
    mode("")
    hidden = outputs()  # in issue order the missing waits go unseen
    assert all(np.array_equal(h, r) for h, r in zip(hidden, right))


def test_work_that_ran_holds_no_arrays(xp, mode):
    """A step keeps what it computes on (a cuBLAS call, its matrices) only until it ran, even
    when a long-lived event still names the step after it."""
    import ctypes

    mode("async")
    lib = xp.virtual_cublas_library()
    handle = ctypes.c_void_p()
    lib.cublasCreate_v2(ctypes.addressof(handle))
    side = xp.cuda.Stream()  # blocking: the legacy stream's next work waits for it
    lib.cublasSetStream_v2(handle.value, side.ptr)
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    done = xp.cuda.Event()
    pool = xp.get_default_memory_pool()
    gc.collect()
    before = pool.used_bytes()
    for _ in range(5):
        a, c = xp.ones((64, 64), xp.float32), xp.zeros((64, 64), xp.float32)
        lib.cublasSgemm_v2(handle.value, 0, 0, 64, 64, 64, ctypes.addressof(one), a.data.ptr,
                           64, a.data.ptr, 64, ctypes.addressof(zero), c.data.ptr, 64)
        done.record(xp.cuda.Stream.null)  # after the GEMM, by the legacy stream's rule
        assert float(c[0, 0]) == 64.0
        del a, c
    gc.collect()
    assert pool.used_bytes() == before
    lib.cublasDestroy_v2(handle.value)
