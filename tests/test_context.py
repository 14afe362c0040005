"""Contexts: names, equality, scoping, and the clear errors of gpu contexts without a GPU."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError


def test_repr_equality_hash():
    assert repr(mx.cpu()) == "cpu(0)" and str(mx.gpu(2)) == "gpu(2)"
    assert mx.cpu(0) == mx.Context("cpu", 0) == mx.Context(mx.cpu(0))
    assert mx.cpu(0) != mx.cpu(1) and mx.cpu(0) != mx.gpu(0) and mx.cpu(0) != "cpu(0)"
    assert len({mx.cpu(0), mx.Context("cpu"), mx.gpu(0), mx.gpu(0)}) == 2
    assert mx.gpu(1).device_type == "gpu" and mx.gpu(1).device_id == 1
    assert mx.cpu_pinned(0).device_type == "cpu_pinned"


def test_contexts_pickle_and_copy_to_the_same_device():
    assert pickle.loads(pickle.dumps(mx.gpu(3))) == mx.gpu(3)


def test_bad_device_type_and_id_are_named():
    with pytest.raises(MXNetError, match="unknown device type 'tpu'"):
        mx.Context("tpu", 0)
    with pytest.raises(MXNetError, match="device id must be a non-negative int"):
        mx.cpu(-1)


def test_with_scope_sets_the_default_and_nests():
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(1):
        assert mx.context.current_context() == mx.cpu(1)
        assert mx.nd.array([1]).context == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
        with mx.cpu(1):  # re-entering the same context object
            assert mx.current_context() == mx.cpu(1)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


def test_scope_is_per_thread():
    seen = []
    with mx.cpu(3):
        thread = threading.Thread(target=lambda: seen.append(mx.current_context()))
        thread.start()
        thread.join()
    assert seen == [mx.cpu(0)]


def test_cpu_maps_to_numpy():
    assert mx.cpu().xp is np
    assert isinstance(mx.nd.array([1.0]).handle, np.ndarray)


def test_num_gpus_is_a_count():
    assert isinstance(mx.context.num_gpus(), int) and mx.context.num_gpus() >= 0


@pytest.mark.skipif(mx.context.num_gpus() > 0, reason="checks the no-GPU error path")
def test_gpu_without_cupy_or_device_says_what_is_missing():
    ctx = mx.gpu(0)  # making the context is fine, as in MXNet
    with pytest.raises(MXNetError) as info:
        mx.nd.array([1, 2], ctx=ctx)
    message = str(info.value)
    assert ("CuPy" in message and "pip install" in message) or "CUDA device" in message


@pytest.mark.gpu
def test_gpu_maps_to_cupy(gpu_available):
    cupy = gpu_available.xp  # real CuPy, or the virtual GPU's stand-in module
    if not getattr(cupy, "is_virtual", False):
        import cupy as real

        assert cupy is real
    x = mx.nd.array([1, 2], ctx=gpu_available)
    assert isinstance(x.handle, cupy.ndarray) and x.context == mx.gpu(0)
    with pytest.raises(MXNetError, match="not available"):
        mx.nd.array([1], ctx=mx.gpu(mx.context.num_gpus()))
