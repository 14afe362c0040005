"""Defects of the GPU runtime that only show on a real GPU, pinned on the virtual GPU (issue 19):

- an executable and its device state made a reference cycle, so a dropped executable was freed
  by the cyclic garbage collector at some later allocation, possibly inside another program's
  capture, where its finalizer's ``cublasDestroy`` synchronized the device and broke the capture;
- each executable created (and destroyed) its own cuBLAS handle; now one per device for the
  process, never destroyed under capture, every status (``cublasDestroy``'s too) checked;
- the cuBLAS workspace was 4 MiB on every device; Hopper wants 32 MiB.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import weakref

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.compiler import compile_graph
from hybridgpu.executor.gpu import Gemm
from hybridgpu.executor.gpu import cublas as cublas_binding
from hybridgpu.executor.gpu.runtime import GpuExecutable
from hybridgpu.graph import Graph, infer_shapes, infer_types

pytestmark = pytest.mark.gpu


def _virtual_xp():
    xp = mx.gpu(0).xp
    if not getattr(xp, "is_virtual", False):
        pytest.skip("spies on the virtual GPU's cuBLAS (HYBRIDGPU_VIRTUAL_GPU=N)")
    return xp


def _gemm_program(ctx, m=16, k=32, n=24):
    """A compiled ``dot(a, b) * 2`` (a cuBLAS Gemm step and a kernel) and its inputs."""
    a, b = mx.sym.var("a"), mx.sym.var("b")
    g = Graph((mx.sym.dot(a, b) * 2)._outputs)
    infer_types(g, {"a": "float32", "b": "float32"})
    infer_shapes(g, {"a": (m, k), "b": (k, n)})
    exe = compile_graph(g, ctx, False, {"data_inputs": ("a", "b")})
    assert isinstance(exe, GpuExecutable)
    assert any(isinstance(s, Gemm) for s in exe.program.steps)
    rng = np.random.default_rng(m * k * n)
    host = [rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n))]
    with ctx.scope():
        inputs = {"a": ctx.xp.asarray(host[0]), "b": ctx.xp.asarray(host[1])}
    return exe, inputs, (host[0] @ host[1]) * 2


@contextlib.contextmanager
def _collector_off():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _unraisable():
    """Collects the exceptions raised where nobody can catch them (finalizers, __del__)."""
    seen, saved = [], sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = saved


def _spy(monkeypatch, lib, name, result=None):
    """Record every call of ``lib.<name>`` (with whether a stream was capturing); call the
    real one, or return ``result`` instead."""
    from hybridgpu.vgpu import devices

    calls, real = [], getattr(lib, name)

    def spy(*args):
        calls.append((args, bool(devices.capturing_streams())))
        return real(*args) if result is None else result

    monkeypatch.setattr(lib, name, spy)
    return calls


def test_a_dropped_executable_is_freed_at_once_not_by_the_cyclic_collector():
    exe, inputs, want = _gemm_program(mx.gpu(0))
    for _ in range(2):  # run eagerly, then capture
        got = exe(inputs)[0]
    np.testing.assert_allclose(mx.gpu(0).xp.asnumpy(got), want, rtol=1e-5, atol=1e-5)
    with _collector_off():
        alive = weakref.ref(exe)
        state = weakref.ref(exe._state)
        del exe
        assert alive() is None and state() is None, "the executable waits for the cyclic GC"


def test_collecting_garbage_inside_a_capture_destroys_no_cublas_handle(monkeypatch):
    """A dropped executable pending collection while another program captures, and the
    collector run inside that capture (as any allocation may run it): no ``cublasDestroy``
    (it synchronizes the device: CUDA fails the capture), nothing raised in a finalizer."""
    xp = _virtual_xp()
    from hybridgpu.vgpu import streams

    destroyed = _spy(monkeypatch, xp.virtual_cublas_library(), "cublasDestroy_v2")
    begin = streams.Stream.begin_capture

    def begin_and_collect(self, *args, **kwargs):
        begin(self, *args, **kwargs)
        gc.collect()

    with _collector_off(), _unraisable() as unraisable:
        first, inputs, _ = _gemm_program(mx.gpu(0), 8, 16, 40)
        first(inputs)
        first(inputs)
        del first
        monkeypatch.setattr(streams.Stream, "begin_capture", begin_and_collect)
        second, inputs, want = _gemm_program(mx.gpu(0), 12, 20, 36)
        outs = [second(inputs)[0] for _ in range(3)]
    assert not [c for c in destroyed if c[1]], "cublasDestroy ran under capture"
    assert not unraisable, [str(u.exc_value) for u in unraisable]
    assert second.captures == 1
    for out in outs:
        np.testing.assert_allclose(xp.asnumpy(out), want, rtol=1e-5, atol=1e-5)


def test_programs_share_one_cublas_handle_per_device(monkeypatch):
    xp = _virtual_xp()
    created = _spy(monkeypatch, xp.virtual_cublas_library(), "cublasCreate_v2")
    destroyed = _spy(monkeypatch, xp.virtual_cublas_library(), "cublasDestroy_v2")
    programs = [_gemm_program(mx.gpu(0), 8 + i, 16, 24) for i in range(3)]
    for exe, inputs, want in programs:
        for _ in range(2):
            np.testing.assert_allclose(xp.asnumpy(exe(inputs)[0]), want, rtol=1e-5, atol=1e-5)
    assert len(created) <= 1, "each program made its own cuBLAS handle"
    del programs, exe
    gc.collect()
    assert destroyed == [], "dropping programs destroyed the shared handle"
    handle = cublas_binding.device_handle(xp, 0)
    assert handle is cublas_binding.device_handle(xp, 0) and handle.handle
    if mx.context.num_gpus() > 1:
        other = cublas_binding.device_handle(xp, 1)
        assert other is not handle and other.handle != handle.handle


def test_every_cublas_status_is_checked_destroy_included(monkeypatch):
    xp = _virtual_xp()
    lib = xp.virtual_cublas_library()
    handle = cublas_binding.Cublas(xp, 0)
    _spy(monkeypatch, lib, "cublasDestroy_v2", result=14)
    with pytest.raises(MXNetError, match="cublasDestroy_v2 failed on device 0 with "
                                         "CUBLAS_STATUS_INTERNAL_ERROR"):
        handle.close()
    monkeypatch.undo()
    handle.close()  # the failed destroy left the handle live: it can still be destroyed
    assert handle.handle == 0
    with pytest.raises(MXNetError, match="destroyed"):
        handle.gemm(None, 0, 0, 0, 0)


def test_the_virtual_cublas_refuses_create_and_destroy_under_capture():
    import ctypes

    xp = _virtual_xp()
    from hybridgpu.vgpu.errors import CaptureError

    lib = xp.virtual_cublas_library()
    holder = ctypes.c_void_p()
    assert lib.cublasCreate_v2(ctypes.addressof(holder)) == 0
    stream = xp.cuda.Stream(non_blocking=True)
    stream.begin_capture()
    try:
        with pytest.raises(CaptureError, match="cublasDestroy_v2.*synchronizes the device"):
            lib.cublasDestroy_v2(holder.value)
        with pytest.raises(CaptureError, match="cublasCreate_v2"):
            lib.cublasCreate_v2(ctypes.addressof(ctypes.c_void_p()))
    finally:
        with contextlib.suppress(CaptureError):  # CUDA invalidates the capture too
            stream.end_capture()
    assert lib.cublasDestroy_v2(holder.value) == 0


@pytest.mark.parametrize("cc, mib", [("90", 32), ("9.0", 32), ((9, 0), 32), ("100", 32),
                                     ("120", 32), ("89", 4), ("8.6", 4), ((7, 5), 4),
                                     ("80", 4)])
def test_workspace_size_follows_the_compute_capability(cc, mib):
    assert cublas_binding.workspace_bytes(cc) == mib << 20


def test_a_bad_compute_capability_is_refused():
    with pytest.raises(MXNetError, match="compute capability 'sm_90'"):
        cublas_binding.workspace_bytes("sm_90")


@pytest.mark.parametrize("cc, mib", [("90", 32), ("80", 4)])
def test_the_program_gives_cublas_the_workspace_of_its_device(monkeypatch, cc, mib):
    xp = _virtual_xp()
    from hybridgpu.vgpu import devices

    monkeypatch.setattr(devices.Device, "compute_capability", cc)
    bound = _spy(monkeypatch, xp.virtual_cublas_library(), "cublasSetWorkspace_v2")
    exe, inputs, want = _gemm_program(mx.gpu(0), 10, 12, 14 + mib)  # a shape of its own
    np.testing.assert_allclose(xp.asnumpy(exe(inputs)[0]), want, rtol=1e-5, atol=1e-5)
    assert exe.workspace_bytes == mib << 20
    program = exe.program
    assert program.workspace + (mib << 20) <= program.arena_bytes
    arena = exe._state.arena.data.ptr
    assert (arena + program.workspace, mib << 20) in [(c[0][1], c[0][2]) for c in bound]
