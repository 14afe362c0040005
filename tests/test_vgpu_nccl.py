"""The virtual GPU's ``cupy.cuda.nccl`` (``xp.cuda.nccl``): ``initAll`` communicators reduce
the devices' memory, grouped calls run at ``groupEnd``, and what hangs or faults with real NCCL
raises; arrays move between virtual devices as CuPy moves them."""

from __future__ import annotations

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu.errors import CaptureError, MemoryFaultError


@pytest.fixture(scope="module")
def xp():
    return vgpu.module(2)


@pytest.fixture
def nccl(xp):
    return xp.cuda.nccl


def _on(xp, device, values, dtype=np.float32):
    with xp.cuda.Device(device):
        return xp.asarray(np.asarray(values, dtype=dtype))


def _get(xp, x):
    with xp.cuda.Device(x.device.id):
        return xp.asnumpy(x).tolist()


def _all_reduce(xp, nccl, comms, sends, recvs, op=None, datatype=None):
    nccl.groupStart()
    try:
        for comm, s, r in zip(comms, sends, recvs):
            comm.allReduce(s.data.ptr, r.data.ptr, s.size,
                           nccl.NCCL_FLOAT32 if datatype is None else datatype,
                           nccl.NCCL_SUM if op is None else op, xp.cuda.get_current_stream().ptr)
    finally:
        nccl.groupEnd()


def test_init_all_gives_one_rank_per_device(nccl):
    comms = nccl.NcclCommunicator.initAll(2)
    assert [(c.rank_id(), c.device_id(), c.size()) for c in comms] == [(0, 0, 2), (1, 1, 2)]
    swapped = nccl.NcclCommunicator.initAll([1, 0])
    assert [c.device_id() for c in swapped] == [1, 0]
    with pytest.raises(nccl.NcclError, match="once"):
        nccl.NcclCommunicator.initAll([0, 0])
    with pytest.raises(ValueError, match="invalid device ordinal 2"):
        nccl.NcclCommunicator.initAll([0, 2])
    with pytest.raises(nccl.NcclError, match="initAll"):
        nccl.NcclCommunicator(2, b"id", 0)  # the multi-process constructor


@pytest.mark.parametrize("op, expected", [("NCCL_SUM", [11.0, -18.0]),
                                          ("NCCL_MAX", [10.0, -2.0]),
                                          ("NCCL_MIN", [1.0, -16.0]),
                                          ("NCCL_PROD", [10.0, 32.0]),
                                          ("NCCL_AVG", [5.5, -9.0])])
def test_all_reduce_out_of_place_leaves_the_inputs(xp, nccl, op, expected):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    sends = [_on(xp, 0, [1, -2]), _on(xp, 1, [10, -16])]
    recvs = [_on(xp, 0, [0, 0]), _on(xp, 1, [0, 0])]
    _all_reduce(xp, nccl, comms, sends, recvs, op=getattr(nccl, op))
    assert _get(xp, recvs[0]) == _get(xp, recvs[1]) == expected
    assert _get(xp, sends[0]) == [1.0, -2.0] and _get(xp, sends[1]) == [10.0, -16.0]


def test_all_reduce_in_place_and_other_dtypes(xp, nccl):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    ints = [_on(xp, 0, [1, 2, 3], np.int64), _on(xp, 1, [4, 5, 6], np.int64)]
    _all_reduce(xp, nccl, comms, ints, ints, datatype=nccl.NCCL_INT64)
    assert _get(xp, ints[0]) == _get(xp, ints[1]) == [5, 7, 9]
    halves = [_on(xp, 0, [0.5], np.float16), _on(xp, 1, [0.25], np.float16)]
    _all_reduce(xp, nccl, comms, halves, halves, datatype=nccl.NCCL_FLOAT16)
    assert _get(xp, halves[1]) == [0.75]


def test_a_count_reduces_that_many_elements(xp, nccl):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    a, b = _on(xp, 0, [1, 1, 1]), _on(xp, 1, [2, 2, 2])
    nccl.groupStart()
    for comm, x in zip(comms, (a, b)):
        comm.allReduce(x.data.ptr, x.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
    nccl.groupEnd()
    assert _get(xp, a) == [3.0, 3.0, 1.0] and _get(xp, b) == [3.0, 3.0, 2.0]


def test_several_ranks_outside_a_group_would_deadlock(xp, nccl):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    x = _on(xp, 0, [1.0])
    with pytest.raises(nccl.NcclError, match="outside groupStart"):
        comms[0].allReduce(x.data.ptr, x.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)


def test_one_rank_needs_no_group(xp, nccl):
    (comm,) = nccl.NcclCommunicator.initAll([1])
    x, out = _on(xp, 1, [4.0, 5.0]), _on(xp, 1, [0.0, 0.0])
    comm.allReduce(x.data.ptr, out.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
    assert _get(xp, out) == [4.0, 5.0]


def test_ranks_that_post_different_collectives_hang_so_they_raise(xp, nccl):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    a, b = _on(xp, 0, [1.0, 2.0]), _on(xp, 1, [1.0, 2.0])
    with pytest.raises(nccl.NcclError, match="every rank must post"):
        _all_reduce(xp, nccl, comms[:1], [a], [a])  # rank 1 never posts
    with pytest.raises(nccl.NcclError, match="disagree"):
        nccl.groupStart()
        try:
            comms[0].allReduce(a.data.ptr, a.data.ptr, 2, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
            comms[1].allReduce(b.data.ptr, b.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)
        finally:
            nccl.groupEnd()
    with pytest.raises(nccl.NcclError, match="groupEnd"):
        nccl.groupEnd()


def test_buffers_must_be_on_the_communicators_device_and_in_bounds(xp, nccl):
    comms = nccl.NcclCommunicator.initAll([0, 1])
    on_zero = _on(xp, 0, [1.0, 2.0])
    with pytest.raises(MemoryFaultError, match="on device 0, but the communicator drives "
                                               "device 1"):
        nccl.groupStart()
        try:
            comms[1].allReduce(on_zero.data.ptr, on_zero.data.ptr, 2, nccl.NCCL_FLOAT32,
                               nccl.NCCL_SUM, 0)
        finally:
            nccl.groupEnd()
    with pytest.raises(MemoryFaultError, match="not inside one live allocation"):
        nccl.groupStart()
        try:
            comms[0].allReduce(on_zero.data.ptr, on_zero.data.ptr, 1000, nccl.NCCL_FLOAT32,
                               nccl.NCCL_SUM, 0)
        finally:
            nccl.groupEnd()


def test_a_capturing_stream_is_refused(xp, nccl):
    (comm,) = nccl.NcclCommunicator.initAll([0])
    x = _on(xp, 0, [1.0])
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(CaptureError, match="does not capture NCCL"):
                comm.allReduce(x.data.ptr, x.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                               stream.ptr)
        finally:
            stream.end_capture()


def test_a_destroyed_communicator_refuses_work(xp, nccl):
    (comm,) = nccl.NcclCommunicator.initAll([0])
    comm.destroy()
    x = _on(xp, 0, [1.0])
    with pytest.raises(nccl.NcclError, match="destroyed"):
        comm.allReduce(x.data.ptr, x.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, 0)


def test_arrays_move_between_devices_as_cupy_moves_them(xp):
    x = _on(xp, 0, [1.0, 2.0])
    with xp.cuda.Device(1):
        for moved in (xp.asarray(x), xp.array(x), x.copy()):
            assert moved.device.id == 1 and xp.asnumpy(moved).tolist() == [1.0, 2.0]
        assert xp.array(x, dtype=xp.float64).dtype == np.float64
        with pytest.raises(ValueError, match="Array device must be same"):
            x + 1  # an operator still needs the array's own device
    with xp.cuda.Device(0):
        assert xp.asarray(x) is x  # already on the current device: no copy


def test_a_stream_of_another_device_is_refused(xp, nccl):
    (comm,) = nccl.NcclCommunicator.initAll([1])
    x = _on(xp, 1, [1.0])
    with xp.cuda.Device(0):
        stream = xp.cuda.Stream(non_blocking=True)
    with pytest.raises(nccl.NcclError, match="of device 0, but the communicator drives device 1"):
        comm.allReduce(x.data.ptr, x.data.ptr, 1, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
