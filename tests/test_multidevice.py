"""Training on several devices of one machine, as MXNet 1.x does it (``split_and_load``, one
copy of each parameter per context, ``Trainer(kvstore='device')`` summing gradients): checked
against MXNet 1.9.1 on ``cpu(0), cpu(1)`` (``fixtures/make_mxnet_multidevice_fixtures.py``).
BatchNorm keeps statistics per device; without BatchNorm two devices equal one."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import hybridgpu as mx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
import make_mxnet_multidevice_fixtures as gen  # noqa: E402

ARRAYS = np.load(os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_multidevice",
                              "arrays.npz"))


def _init(kind):
    prefix = f"{kind}/init/"
    return {k[len(prefix):]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix)}


@pytest.mark.parametrize("kind", sorted(gen.NETS))
def test_two_cpu_contexts_train_as_mxnet(kind):
    with mx.name.NameManager():
        net, losses = gen.train(mx, kind, [mx.cpu(0), mx.cpu(1)], _init(kind))
    np.testing.assert_allclose(losses, ARRAYS[f"{kind}/losses"], rtol=1e-5)
    for name, param in net.collect_params().items():
        for ctx in (mx.cpu(0), mx.cpu(1)):
            np.testing.assert_allclose(param.data(ctx).asnumpy(),
                                       ARRAYS[f"{kind}/{ctx}/{name}"], rtol=1e-5, atol=1e-6,
                                       err_msg=f"{name} on {ctx}")


def test_batchnorm_statistics_stay_per_device():
    with mx.name.NameManager():
        net, _ = gen.train(mx, "bn", [mx.cpu(0), mx.cpu(1)], _init("bn"))
    mean = net.collect_params()["bn_batchnorm0_running_mean"]
    a, b = (mean.data(ctx).asnumpy() for ctx in (mx.cpu(0), mx.cpu(1)))
    assert np.abs(a - b).max() > 1e-3  # each device saw its own half of the batch
    weight = net.collect_params()["bn_dense0_weight"]
    np.testing.assert_array_equal(weight.data(mx.cpu(0)).asnumpy(),
                                  weight.data(mx.cpu(1)).asnumpy())


def test_without_batchnorm_two_devices_equal_one():
    with mx.name.NameManager():
        two, two_losses = gen.train(mx, "mlp", [mx.cpu(0), mx.cpu(1)], _init("mlp"))
    with mx.name.NameManager():
        one, one_losses = gen.train(mx, "mlp", [mx.cpu(0)], _init("mlp"))
    np.testing.assert_allclose(two_losses, one_losses, rtol=1e-6)
    for name, param in one.collect_params().items():
        np.testing.assert_allclose(two.collect_params()[name].data(mx.cpu(1)).asnumpy(),
                                   param.data().asnumpy(), rtol=1e-6, atol=1e-7)
