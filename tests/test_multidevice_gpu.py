"""Training on several GPUs of one machine: the gradients of gpu(0) and gpu(1) are summed by
an NCCL all-reduce (``kvstore/device_reduce.py``; on the virtual GPU its ``cupy.cuda.nccl``
stand-in), and the result equals MXNet 1.9.1's training on cpu(0), cpu(1)
(``fixtures/make_mxnet_multidevice_fixtures.py``) and, without BatchNorm, one device on the
whole batch. Run on the virtual GPU with ``HYBRIDGPU_VIRTUAL_GPU=2 pytest -m gpu``; on a real
machine with one GPU only the 1-rank communicator tests run."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.kvstore import device_reduce

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
import make_mxnet_multidevice_fixtures as gen  # noqa: E402

pytestmark = pytest.mark.gpu

ARRAYS = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_multidevice",
                              "arrays.npz"))


def _init(kind):
    prefix = f"{kind}/init/"
    return {k[len(prefix):]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix)}


@pytest.fixture
def two_gpus():
    if mx.context.num_gpus() < 2:
        pytest.skip("needs two GPUs (HYBRIDGPU_VIRTUAL_GPU=2 gives two virtual ones)")
    return [mx.gpu(0), mx.gpu(1)]


@pytest.fixture
def nccl_calls(monkeypatch):
    """The NCCL groups posted: for each, the number of devices of each all-reduce in it."""
    calls = []
    real = device_reduce.nccl_all_reduce_many

    def counting(pairs):
        real(pairs)
        calls.append([len(sends) for sends, _ in pairs])

    monkeypatch.setattr(device_reduce, "nccl_all_reduce_many", counting)
    return calls


def _train(kind, contexts, kvstore="device"):
    with mx.name.NameManager():
        return gen.train(mx, kind, contexts, _init(kind), kvstore=kvstore)


@pytest.mark.parametrize("kvstore", ["device", "local"])
@pytest.mark.parametrize("kind", sorted(gen.NETS))
def test_two_gpus_train_as_mxnet_on_two_cpus(kind, kvstore, two_gpus, nccl_calls):
    net, losses = _train(kind, two_gpus, kvstore)
    trained = [p for p in net.collect_params().values() if p.grad_req != "null"]
    # one NCCL group a step, holding one all-reduce over the 2 gpus per trained parameter
    assert nccl_calls == [[2] * len(trained)] * gen.STEPS, nccl_calls
    np.testing.assert_allclose(losses, ARRAYS[f"{kind}/losses"], rtol=1e-5)
    for name, param in net.collect_params().items():
        for i, ctx in enumerate(two_gpus):
            np.testing.assert_allclose(param.data(ctx).asnumpy(),
                                       ARRAYS[f"{kind}/cpu({i})/{name}"], rtol=1e-5,
                                       atol=1e-6, err_msg=f"{name} on {ctx}")


@pytest.mark.parametrize("kind", sorted(gen.NETS))
def test_two_gpus_equal_two_cpus(kind, two_gpus):
    gpus, gpu_losses = _train(kind, two_gpus)
    cpus, cpu_losses = _train(kind, [mx.cpu(0), mx.cpu(1)])
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-6)
    for name, param in cpus.collect_params().items():
        for gpu, cpu in zip(two_gpus, (mx.cpu(0), mx.cpu(1))):
            np.testing.assert_allclose(gpus.collect_params()[name].data(gpu).asnumpy(),
                                       param.data(cpu).asnumpy(), rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name} on {gpu}")


def test_without_batchnorm_two_gpus_equal_one(two_gpus):
    two, two_losses = _train("mlp", two_gpus)
    one, one_losses = _train("mlp", [mx.gpu(0)])
    np.testing.assert_allclose(two_losses, one_losses, rtol=1e-6)
    np.testing.assert_allclose(two_losses, ARRAYS["mlp/single_losses"], rtol=1e-5)
    for name, param in one.collect_params().items():
        copies = [two.collect_params()[name].data(ctx).asnumpy() for ctx in two_gpus]
        np.testing.assert_array_equal(copies[0], copies[1])
        np.testing.assert_allclose(copies[1], param.data().asnumpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(copies[1], ARRAYS[f"mlp/single/{name}"], rtol=1e-5,
                                   atol=1e-6)


def test_batchnorm_statistics_stay_per_gpu(two_gpus):
    net, _ = _train("bn", two_gpus)
    mean = net.collect_params()["bn_batchnorm0_running_mean"]
    a, b = (mean.data(ctx).asnumpy() for ctx in two_gpus)
    assert np.abs(a - b).max() > 1e-3  # each device saw its own half of the batch


def test_without_nccl_the_copying_sum_trains_alike_and_warns_once(two_gpus, monkeypatch):
    with_nccl, nccl_losses = _train("mlp", two_gpus)
    monkeypatch.setenv("HYBRIDGPU_NCCL", "0")
    monkeypatch.setattr(device_reduce, "_warned", [False])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        without, copy_losses = _train("mlp", two_gpus)
    said = [w for w in caught if "without NCCL" in str(w.message)]
    assert len(said) == 1 and "HYBRIDGPU_NCCL=0" in str(said[0].message)
    np.testing.assert_allclose(copy_losses, nccl_losses, rtol=1e-6)
    for name, param in with_nccl.collect_params().items():
        np.testing.assert_allclose(without.collect_params()[name].data(mx.gpu(1)).asnumpy(),
                                   param.data(mx.gpu(1)).asnumpy(), rtol=1e-6, atol=1e-7)


def test_kvstore_push_of_two_gpus_sums_with_nccl_and_leaves_the_values(two_gpus, nccl_calls):
    kv = mx.kv.create("device")
    values = [mx.nd.array([1.0, 2.0, 3.0], ctx=two_gpus[0]),
              mx.nd.array([10.0, 20.0, 30.0], ctx=two_gpus[1])]
    kv.init("w", mx.nd.zeros(3, ctx=two_gpus[1]))
    kv.push("w", values)
    assert nccl_calls == [[2]]
    outs = [mx.nd.zeros(3, ctx=ctx) for ctx in two_gpus]
    kv.pull("w", out=outs)
    for out in outs:
        assert out.asnumpy().tolist() == [11.0, 22.0, 33.0]
    assert values[0].asnumpy().tolist() == [1.0, 2.0, 3.0]  # push does not change its input
    assert values[1].asnumpy().tolist() == [10.0, 20.0, 30.0]


def test_trainer_with_a_kvstore_object_trains_as_with_a_name(two_gpus, nccl_calls):
    by_name, name_losses = _train("mlp", two_gpus, "device")
    nccl_calls.clear()
    by_object, object_losses = _train("mlp", two_gpus, mx.kv.create("device"))
    assert nccl_calls == [[2]] * (4 * gen.STEPS)  # a push per parameter and step
    np.testing.assert_allclose(object_losses, name_losses, rtol=1e-6)
    for name, param in by_name.collect_params().items():
        np.testing.assert_allclose(by_object.collect_params()[name].data(mx.gpu(1)).asnumpy(),
                                   param.data(mx.gpu(1)).asnumpy(), rtol=1e-6, atol=1e-7)


def test_one_rank_communicator_reduces_to_itself(gpu_available):
    """What a machine with one GPU can check of NCCL: a 1-rank communicator, made once."""
    try:
        device_reduce.nccl_module(gpu_available.xp)
    except device_reduce.NcclUnavailableError as why:  # a real GPU without the library
        pytest.skip(f"no NCCL here: {why}")
    x = mx.nd.array(np.arange(5, dtype=np.float32), ctx=gpu_available)
    out = mx.nd.zeros(5, ctx=gpu_available)
    device_reduce.nccl_all_reduce([x], [out])
    assert out.asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    device_reduce.nccl_all_reduce([x])  # in place
    assert x.asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    xp = gpu_available.xp
    first = device_reduce.communicators(xp, [0])
    assert device_reduce.communicators(xp, [0]) is first and len(first) == 1
    assert first[0].size() == 1 and first[0].rank_id() == 0 and first[0].device_id() == 0


def test_one_gpu_trains_without_a_reduction(gpu_available, nccl_calls):
    net, losses = _train("mlp", [gpu_available])
    assert nccl_calls == []  # nothing to sum over one device
    np.testing.assert_allclose(losses, ARRAYS["mlp/single_losses"], rtol=1e-5)


def test_values_nccl_cannot_reduce_take_the_copying_sum(gpu_available, nccl_calls):
    ints = [mx.nd.array([1, 2], ctx=gpu_available, dtype="int32"),
            mx.nd.array([3, 4], ctx=mx.cpu(), dtype="int32")]
    device_reduce.sum_into_every(ints)  # a cpu value: no NCCL, no warning needed
    assert nccl_calls == [] and ints[0].asnumpy().tolist() == [4, 6]
    with pytest.raises(device_reduce.NcclUnavailableError, match="own GPU"):
        device_reduce.nccl_all_reduce([ints[0], ints[0]])


def test_a_dtype_nccl_lacks_takes_the_copying_sum_quietly(two_gpus, nccl_calls):
    values = [mx.nd.array([1, 2], ctx=ctx, dtype="int16") for ctx in two_gpus]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NCCL is there: no "without NCCL" warning
        device_reduce.sum_into_every(values)
    assert nccl_calls == []
    assert [v.asnumpy().tolist() for v in values] == [[2, 4], [2, 4]]
    assert all(v.dtype == np.int16 for v in values)


def test_a_communicator_that_cannot_be_made_is_tried_once(two_gpus, monkeypatch):
    nccl = device_reduce.nccl_module(two_gpus[0].xp)
    tries = []

    def failing_init_all(devices):
        tries.append(list(devices))
        raise nccl.NcclError(3)  # cupy.cuda.nccl.NcclError takes the status only

    monkeypatch.setattr(nccl.NcclCommunicator, "initAll", staticmethod(failing_init_all))
    monkeypatch.setattr(device_reduce, "_communicators", {})
    monkeypatch.setattr(device_reduce, "_warned", [False])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            values = [mx.nd.array([1.0, step], ctx=ctx) for ctx in two_gpus]
            device_reduce.sum_into_every(values)
            assert [v.asnumpy().tolist() for v in values] == [[2.0, 2 * step]] * 2
    assert tries == [[0, 1]]
    said = [str(w.message) for w in caught if "without NCCL" in str(w.message)]
    assert len(said) == 1 and "initAll([0, 1]) failed" in said[0] and "ncclInternalError" in said[0]
