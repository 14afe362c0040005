"""``mx.kv`` (and ``gluon.Trainer`` over a KVStore) and ``mx.test_utils`` against MXNet 1.9.1
(fixtures written by ``tests/fixtures/make_mxnet_module_fixtures.py``).

Run: ``PYTHONPATH=src python -m pytest -q tests/test_kvstore.py``
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, gluon

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_module"
sys.path.insert(0, str(HERE / "fixtures"))

import make_mxnet_module_fixtures as gen  # noqa: E402

KV = json.loads((FIXTURES / "kvstore.json").read_text())
TEST_UTILS = json.loads((FIXTURES / "test_utils.json").read_text())


def test_kvstore_script_matches_mxnet():
    kv = mx.kv.create("local")
    results = gen.run_kv_script(mx, kv)
    assert len(results) == len(KV["script"])
    for ours, theirs in zip(results, KV["script"]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert (kv.type, kv.rank, kv.num_workers) == (KV["type"], KV["rank"], KV["num_workers"])


def test_str_keys_and_device_type_match_mxnet():
    kv = mx.kvstore.create("device")
    kv.init("w", mx.nd.ones((2,)))
    kv.push("w", [mx.nd.ones((2,)) * 3, mx.nd.ones((2,))])
    out = mx.nd.zeros((2,))
    kv.pull("w", out=out)
    assert out.asnumpy().tolist() == KV["str_key_sum"] and kv.type == KV["device_type"]


def test_lists_of_keys_and_several_outputs():
    kv = mx.kv.create()
    kv.init([1, 2], [mx.nd.zeros(2), mx.nd.zeros(3)])
    kv.push([1, 2], [[mx.nd.ones(2)] * 3, mx.nd.ones(3)])
    outs = [mx.nd.zeros(2), mx.nd.zeros(2)]
    other = mx.nd.zeros(3)
    kv.pull([1, 2], out=[outs, other])
    assert [o.asnumpy().tolist() for o in outs] == [[3.0, 3.0]] * 2
    assert other.asnumpy().tolist() == [1.0] * 3
    value = mx.nd.ones(2) * 7
    kv.pushpull(1, value)            # no out: the result lands in value
    assert value.asnumpy().tolist() == [7.0, 7.0]


def test_values_on_other_contexts_are_summed_on_the_store():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.zeros(2, ctx=mx.cpu(0)))
    grads = [mx.nd.ones(2, ctx=mx.cpu(1)), mx.nd.ones(2, ctx=mx.cpu(2)) * 2]
    kv.pushpull(0, grads, out=grads)
    assert [g.asnumpy().tolist() for g in grads] == [[3.0, 3.0]] * 2
    assert [g.context for g in grads] == [mx.cpu(1), mx.cpu(2)]


@pytest.mark.parametrize("call, error, message", [
    (lambda kv: kv.init(0, mx.nd.ones(2)), mx.MXNetError, "duplicate init of key 0"),
    (lambda kv: kv.pull(9, out=mx.nd.zeros(2)), mx.MXNetError, "key 9 has not been inited"),
    (lambda kv: kv.push(0, mx.nd.ones(3)), mx.MXNetError, "holds shape \\(2,\\)"),
    (lambda kv: kv.pull(0, out=mx.nd.zeros(4)), mx.MXNetError, "output has shape"),
    (lambda kv: kv.init("a", mx.nd.ones(1)), mx.MXNetError, "Mixed key types"),
    (lambda kv: kv.init(1.5, mx.nd.ones(1)), TypeError, "keys must be int or str"),
    (lambda kv: kv.push(0, np.ones(2)), TypeError, "must be NDArrays"),
    (lambda kv: kv.pull(0), mx.MXNetError, "out must be given"),
    (lambda kv: kv.set_gradient_compression({"type": "2bit"}), NotImplementedError, "in process"),
    (lambda kv: kv.save_optimizer_states("x"), mx.MXNetError, "call set_optimizer"),
])
def test_bad_calls_raise(call, error, message):
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros(2))
    with pytest.raises(error, match=message):
        call(kv)


@pytest.mark.parametrize("name, message", [
    ("dist_async", "distributed training is not supported"),
    ("horovod", "distributed training is not supported"),
    ("bogus", "Unknown kvstore type"),
])
def test_create_refuses_other_kinds(name, message):
    with pytest.raises(mx.MXNetError, match=message):
        mx.kv.create(name)


def test_optimizer_states_round_trip(tmp_path):
    kv = mx.kv.create()
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    kv.init(0, mx.nd.ones(2))
    kv.push(0, mx.nd.ones(2))
    kv.save_optimizer_states(str(tmp_path / "s"))
    other = mx.kv.create()
    other.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    other.init(0, mx.nd.ones(2) * 0.9)
    other.load_optimizer_states(str(tmp_path / "s"))
    for store in (kv, other):
        store.push(0, mx.nd.ones(2))
    a, b = mx.nd.zeros(2), mx.nd.zeros(2)
    kv.pull(0, out=a)
    other.pull(0, out=b)
    np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6)   # momentum carried over


def _train(kvstore, contexts):
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.1), ctx=contexts)
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": 0.1, "momentum": 0.9}, kvstore=kvstore)
    x = np.arange(16, dtype=np.float32).reshape(4, 4) / 10
    for _ in range(3):
        with autograd.record():
            losses = [(net(mx.nd.array(part, ctx=ctx)) ** 2).sum()
                      for part, ctx in zip(np.split(x, len(contexts)), contexts)]
        for loss in losses:
            loss.backward()
        trainer.step(4)
    return [net.weight.data(ctx).asnumpy() for ctx in contexts]


@pytest.mark.parametrize("contexts", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]],
                         ids=["one_context", "two_contexts"])
def test_trainer_over_a_kvstore_matches_the_default(contexts):
    kv = mx.kv.create("device")
    through_kv = _train(kv, contexts)
    default = _train("device", contexts)
    for ours, reference in zip(through_kv, default):
        np.testing.assert_allclose(ours, reference, rtol=1e-6)
    assert 0 in kv and 1 in kv      # one key per Parameter (weight, bias)


def test_trainer_refuses_other_kvstore_objects():
    param = gluon.Parameter("w", shape=(1,))
    param.initialize()
    with pytest.raises(TypeError, match="a KVStore or None"):
        gluon.Trainer([param], "sgd", kvstore=object())


# -- mx.test_utils ---------------------------------------------------------------------------

def test_random_helpers_draw_what_mxnet_draws():
    tu = mx.test_utils
    np.random.seed(11)
    assert list(tu.rand_shape_nd(4, dim=6)) == TEST_UTILS["rand_shape_nd"]
    assert list(tu.rand_shape_2d(5, 7)) == TEST_UTILS["rand_shape_2d"]
    arr = tu.rand_ndarray((2, 3))
    assert np.dtype(arr.dtype).name == TEST_UTILS["rand_ndarray_dtype"]
    np.testing.assert_array_equal(arr.asnumpy(), np.float32(TEST_UTILS["rand_ndarray"]))
    assert arr.context == tu.default_context()


def test_assert_almost_equal_tolerances_follow_dtypes():
    tu = mx.test_utils
    a32 = mx.nd.array([1.0, 100.0])
    tu.assert_almost_equal(a32, np.array([1.0005, 100.009], np.float32))  # within 1e-4/1e-3
    with pytest.raises(AssertionError, match="Location of maximum error: \\(1,\\)"):
        tu.assert_almost_equal(a32, np.array([1.0, 100.5], np.float32), names=("ours", "ref"))
    with pytest.raises(AssertionError, match="exceeds tolerance rtol=1.000000e-05"):
        tu.assert_almost_equal(np.array([1.0]), np.array([1.0001]))
    tu.assert_almost_equal(np.array([1.0]), np.array([1.5]), rtol=0.5)
    with pytest.raises(AssertionError, match="shape"):
        tu.assert_almost_equal(np.ones(2), np.ones((1, 2)), use_broadcast=False)
    assert tu.almost_equal(np.ones(2), np.ones(2) + 1e-6)
    assert not tu.same(np.ones(2), np.ones(3))


def test_set_default_context_lasts_until_the_scope_ends():
    tu = mx.test_utils
    with mx.cpu(3):
        tu.set_default_context(mx.cpu(2))
        assert tu.default_context() == mx.cpu(2) and mx.nd.zeros(1).context == mx.cpu(2)
    assert tu.default_context() == mx.cpu(0)
