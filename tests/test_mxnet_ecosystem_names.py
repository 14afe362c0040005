"""The MXNet names GluonCV, GluonNLP and d2lzh need beyond the ops (issue 21), each against
MXNet 1.9.1's behaviour: mx.registry, contrib.text, contrib.amp, gluon.contrib.nn.SyncBatchNorm,
gluon.contrib.rnn (LSTMPCell, VariationalDropoutCell), the worker-pool data iterator,
model_store, and the small helpers of base, gluon.block, gluon.loss and gluon.utils.
"""

from __future__ import annotations

import collections
import hashlib
import multiprocessing.pool
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import registry
from hybridgpu.contrib import amp, text
from hybridgpu.gluon.contrib.nn import SyncBatchNorm
from hybridgpu.gluon.contrib.rnn import LSTMPCell, VariationalDropoutCell
from hybridgpu.gluon.data.dataloader import _MultiWorkerIter, default_mp_batchify_fn
from hybridgpu.gluon.model_zoo import model_store

# -- mx.registry ------------------------------------------------------------------------------


class _Base:
    def __init__(self, size=1):
        self.size = size


def test_registry_registers_creates_and_aliases():
    register = registry.get_register_func(_Base, "thing")
    create = registry.get_create_func(_Base, "thing")

    @register
    class Square(_Base):
        pass

    registry.get_alias_func(_Base, "thing")("box", "cube")(Square)
    assert {"square", "box", "cube"} <= set(registry.get_registry(_Base))
    assert create("SQUARE", size=3).size == 3
    assert create('["box", {"size": 4}]').size == 4
    assert create('{"thing": "cube", "size": 5}').size == 5
    assert create({"thing": "square"}).size == 1
    instance = Square(7)
    assert create(instance) is instance
    with pytest.raises(ValueError, match="already an instance"):
        create(instance, size=2)
    with pytest.raises(mx.MXNetError, match="'circle' is not a registered thing"):
        create("circle")
    with pytest.raises(TypeError, match="subclasses of _Base"):
        register(int)
    with pytest.warns(UserWarning, match="overrides"):
        register(type("Other", (_Base,), {}), "square")


# -- contrib.text -----------------------------------------------------------------------------

def test_vocabulary_orders_as_mxnet():
    """Unknown token, reserved tokens, then by falling count, ties in token order; cut by
    most_freq_count and min_freq (values checked in MXNet 1.9.1)."""
    counter = collections.Counter("abbcccdd")
    vocab = text.vocab.Vocabulary(counter, most_freq_count=2, min_freq=2)
    assert vocab.idx_to_token == ["<unk>", "c", "b"]
    vocab = text.vocab.Vocabulary(counter, reserved_tokens=["<pad>"])
    assert vocab.idx_to_token == ["<unk>", "<pad>", "c", "b", "d", "a"]
    assert vocab.to_indices(["d", "zz"]) == [4, 0] and vocab.to_tokens([2, 5]) == ["c", "a"]
    with pytest.raises(ValueError, match="index 6 is invalid"):
        vocab.to_tokens(6)
    with pytest.raises(ValueError, match="unknown token"):
        text.vocab.Vocabulary(counter, reserved_tokens=["<unk>"])
    counted = text.utils.count_tokens_from_str("A b\nb  c", to_lower=True)
    assert counted == collections.Counter({"a": 1, "b": 2, "c": 1})


# -- contrib.amp ------------------------------------------------------------------------------

def _dense():
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5))
    return net


def test_amp_scale_loss_gives_the_unscaled_update():
    x = mx.nd.array(np.arange(6).reshape(2, 3))
    plain, scaled = _dense(), _dense()
    plain_trainer = mx.gluon.Trainer(plain.collect_params(), "sgd", {"learning_rate": 0.1})
    amp_trainer = mx.gluon.Trainer(scaled.collect_params(), "sgd", {"learning_rate": 0.1})
    amp.init()
    amp.init_trainer(amp_trainer)
    with mx.autograd.record():
        loss = plain(x).sum()
    loss.backward()
    plain_trainer.step(2)
    with mx.autograd.record():
        loss = scaled(x).sum()
        with amp.scale_loss(loss, amp_trainer) as big:
            assert big.asscalar() == pytest.approx(loss.asscalar() * 2 ** 16)
    big.backward()
    amp_trainer.step(2)
    np.testing.assert_allclose(scaled.weight.data().asnumpy(), plain.weight.data().asnumpy(),
                               rtol=1e-6)


def test_loss_scaler_halves_on_overflow_and_grows_after_clean_steps():
    scaler = amp.LossScaler()
    scaler._scale_seq_len = 3
    assert scaler.update(True) and scaler.loss_scale == 2.0 ** 16
    scaler.update(False)
    assert scaler.loss_scale == 2.0 ** 15
    for _ in range(3):
        scaler.update(False)
    scaler.update(False)
    assert scaler.loss_scale == 2.0 ** 16
    net = _dense()
    with mx.autograd.record():
        net(mx.nd.ones((1, 3))).sum().backward()
    assert not scaler.has_overflow(net.collect_params().values())
    net.weight.grad()[:] = np.inf
    assert scaler.has_overflow(net.collect_params().values())


# -- gluon.contrib.nn.SyncBatchNorm -----------------------------------------------------------

@pytest.mark.parametrize("train", [False, True])
def test_sync_batch_norm_is_batch_norm_on_one_device(train, tmp_path):
    x = mx.nd.array(np.random.RandomState(0).randn(4, 3, 2, 2))
    sync = SyncBatchNorm(in_channels=3, num_devices=1)
    plain = mx.gluon.nn.BatchNorm(in_channels=3)
    for net in (sync, plain):
        net.initialize()
        net.gamma.set_data(mx.nd.array([0.5, 1.0, 2.0]))
    with mx.autograd.record(train_mode=train):
        got, want = sync(x), plain(x)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sync.running_mean.data().asnumpy(),
                               plain.running_mean.data().asnumpy(), rtol=1e-6)
    sync.hybridize()
    np.testing.assert_allclose(sync(x).asnumpy(), plain(x).asnumpy(), rtol=1e-6, atol=1e-6)
    sync.export(str(tmp_path / "bn"))
    assert '"op": "_contrib_SyncBatchNorm"' in (tmp_path / "bn-symbol.json").read_text()


def test_sync_batch_norm_without_num_devices_warns():
    with pytest.warns(UserWarning, match="num_devices"):
        SyncBatchNorm(in_channels=2)


# -- gluon.contrib.rnn ------------------------------------------------------------------------

def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_lstmp_cell_computes_the_projected_lstm():
    cell = LSTMPCell(5, 2, input_size=3)
    cell.initialize(mx.init.Uniform(0.5))
    x = np.random.RandomState(1).randn(4, 3).astype("f4")
    r0, c0 = np.zeros((4, 2), "f4"), np.full((4, 5), 0.3, "f4")
    out, (r, c) = cell(mx.nd.array(x), [mx.nd.array(r0), mx.nd.array(c0)])
    p = {k.split("_", 1)[1]: v.data().asnumpy() for k, v in cell.collect_params().items()}
    gates = x @ p["i2h_weight"].T + p["i2h_bias"] + r0 @ p["h2h_weight"].T + p["h2h_bias"]
    i, f, g, o = np.split(gates, 4, axis=1)
    c_want = _sigmoid(f) * c0 + _sigmoid(i) * np.tanh(g)
    r_want = (_sigmoid(o) * np.tanh(c_want)) @ p["h2r_weight"].T
    np.testing.assert_allclose(c.asnumpy(), c_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.asnumpy(), r_want, rtol=1e-5, atol=1e-6)
    assert r is out or np.array_equal(r.asnumpy(), out.asnumpy())
    assert [s["shape"] for s in cell.state_info(4)] == [(4, 2), (4, 5)]


def test_variational_dropout_keeps_one_mask_per_sequence():
    base = mx.gluon.rnn.RNNCell(6, input_size=6, activation="relu")
    plain = mx.gluon.rnn.RNNCell(6, input_size=6, activation="relu")
    cell = VariationalDropoutCell(base, drop_inputs=0.5)
    cell.initialize(mx.init.One())
    plain.initialize(mx.init.One())
    x = mx.nd.ones((3, 4, 6))
    outputs, _ = cell.unroll(4, x, layout="NTC", merge_outputs=True)
    predicted = plain.unroll(4, x, layout="NTC", merge_outputs=True)[0]
    np.testing.assert_allclose(outputs.asnumpy(), predicted.asnumpy())  # predict mode: no-op
    cell.reset()
    with mx.autograd.record():
        cell.unroll(4, x, layout="NTC", merge_outputs=True)
    mask = cell.drop_inputs_mask.asnumpy()
    assert set(np.unique(mask)) <= {0.0, 2.0} and (mask == 0).any()


# -- the worker-pool iterator, model_store, small helpers -------------------------------------

def _work(indices, batchify_fn, dataset):
    return batchify_fn([dataset[i] for i in indices])


def test_multi_worker_iter_returns_batches_in_order():
    data = [float(i) for i in range(7)]
    sampler = [[0, 1, 2], [3, 4, 5], [6]]
    with multiprocessing.pool.ThreadPool(3) as pool:
        it = _MultiWorkerIter(pool, default_mp_batchify_fn, sampler, worker_fn=_work,
                              prefetch=3, dataset=data)
        assert len(it) == 3
        batches = [b.asnumpy().tolist() for b in it]
    assert batches == [[0, 1, 2], [3, 4, 5], [6]]


def test_model_store_finds_checked_files_and_never_downloads(tmp_path):
    blob = b"weights"
    model_store._model_sha1["tiny_test"] = hashlib.sha1(blob).hexdigest()
    with pytest.raises(FileNotFoundError, match="never downloads"):
        model_store.get_model_file("tiny_test", root=str(tmp_path))
    path = tmp_path / f"tiny_test-{model_store.short_hash('tiny_test')}.params"
    path.write_bytes(blob)
    assert model_store.get_model_file("tiny_test", root=str(tmp_path)) == str(path)
    path.write_bytes(b"other")
    with pytest.raises(ValueError, match="SHA-1"):
        model_store.get_model_file("tiny_test", root=str(tmp_path))
    with pytest.raises(ValueError, match="not available"):
        model_store.short_hash("no_such_model")


def test_small_helpers(monkeypatch):
    from hybridgpu.gluon import block, loss, utils

    assert block.HybridBlock is mx.gluon.HybridBlock and block.SymbolBlock is mx.gluon.SymbolBlock
    assert isinstance(np.float32(1), mx.base.numeric_types)
    assert isinstance(np.int64(1), mx.base.integer_types) and mx.base.py_str(b"x") == "x"
    weighted = loss._apply_weighting(mx.nd, mx.nd.array([[1.0, 2.0]]), 3.0, mx.nd.array([[2.0]]))
    assert weighted.asnumpy().tolist() == [[6.0, 12.0]]
    with pytest.raises(TypeError, match="weight must be a number"):
        loss._apply_weighting(mx.nd, mx.nd.ones((1,)), "2")
    assert loss._reshape_like(mx.nd, mx.nd.ones((4,)), mx.nd.ones((2, 2))).shape == (2, 2)
    monkeypatch.setenv("MXNET_GLUON_REPO", "https://mirror.example/repo")
    assert utils._get_repo_file_url("gluon/models", "a.zip") == \
        "https://mirror.example/repo/gluon/models/a.zip"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = mx.nd.zeros((2, 3))
        y[0, 1] = mx.nd.array([5.0])        # one element into one slot, as MXNet
    assert y.asnumpy()[0, 1] == 5.0


# -- gluon.data.vision.transforms: resize, crop, flip -------------------------------------------

def test_resize_and_center_crop_follow_mxnet_sizes():
    from hybridgpu.gluon.data.vision import transforms as tf

    img = mx.nd.array(np.random.RandomState(0).randint(0, 256, (37, 53, 3)), dtype="uint8")
    assert tf.Resize(24)(img).shape == (24, 24, 3)
    assert tf.Resize(24, keep_ratio=True)(img).shape == (24, 34, 3)   # int(53 * 24 / 37)
    assert tf.Resize((40, 20))(img).shape == (20, 40, 3)
    assert tf.Resize(16)(mx.nd.stack(img, img)).shape == (2, 16, 16, 3)
    assert tf.Resize(24)(img).dtype == np.uint8
    crop = tf.CenterCrop((30, 10))(img)     # fits: a plain centre crop, no resampling
    np.testing.assert_array_equal(crop.asnumpy(), img.asnumpy()[13:23, 11:41])
    with pytest.raises(mx.MXNetError, match="size must be"):
        tf.Resize(0)


def test_random_resized_crop_and_flips():
    import random

    from hybridgpu.gluon.data.vision import transforms as tf

    img = mx.nd.array(np.arange(20 * 30 * 3).reshape(20, 30, 3) % 256, dtype="uint8")
    random.seed(3)
    first = tf.RandomResizedCrop(8)(img).asnumpy()
    random.seed(3)
    assert first.shape == (8, 8, 3) and np.array_equal(tf.RandomResizedCrop(8)(img).asnumpy(),
                                                       first)
    mx.random.seed(0)
    flipper = tf.RandomFlipLeftRight()
    seen = {flipper(img).asnumpy().tobytes() for _ in range(20)}
    assert seen == {img.asnumpy().tobytes(), img.asnumpy()[:, ::-1].tobytes()}
    tb = {tf.RandomFlipTopBottom()(img).asnumpy().tobytes() for _ in range(20)}
    assert img.asnumpy()[::-1].tobytes() in tb


# -- nd.contrib control flow ----------------------------------------------------------------------

def test_foreach_while_loop_and_cond_run_as_mxnet():
    contrib = mx.nd.contrib

    data = [mx.nd.arange(6).reshape((3, 2)), mx.nd.ones((3, 1))]

    def body(items, states):
        x, y = items
        return [x * 2, [x + y]], [states[0] + x.sum()]

    (doubled, (added,)), (total,) = contrib.foreach(body, data, [mx.nd.zeros(1)])
    assert doubled.shape == (3, 2) and added.shape == (3, 2)
    np.testing.assert_array_equal(doubled.asnumpy(), np.arange(6).reshape(3, 2) * 2)
    assert total.asscalar() == 15
    outs, (i, acc) = contrib.while_loop(lambda i, a: i < 2, lambda i, a: ([i, a], [i + 1, a * 2]),
                                        [mx.nd.zeros(1), mx.nd.ones(1)], max_iterations=4)
    assert [o.shape for o in outs] == [(4, 1), (4, 1)]
    assert outs[1].asnumpy().ravel().tolist()[:2] == [1.0, 2.0] and acc.asscalar() == 4
    with pytest.raises(ValueError, match="max_iterations"):
        contrib.while_loop(lambda i: i < 1, lambda i: (i, [i]), [mx.nd.zeros(1)])
    assert contrib.cond(mx.nd.array([1]), lambda: "then", lambda: "else") == "then"


def test_colour_transforms():
    from hybridgpu.gluon.data.vision import transforms as tf

    img = mx.nd.array(np.random.RandomState(1).randint(0, 256, (6, 7, 3)), dtype="uint8")
    np.testing.assert_array_equal(tf.RandomBrightness(0.0)(img).asnumpy(), img.asnumpy())
    lit = tf.RandomLighting(0.5)(img).asnumpy().astype(int) - img.asnumpy().astype(int)
    inside = (img.asnumpy() > 60) & (img.asnumpy() < 190)      # away from the clamping
    for c in range(3):
        assert len(set(lit[..., c][inside[..., c]].tolist())) <= 2   # one shift per channel
    mx.random.seed(2)
    jittered = tf.RandomColorJitter(0.4, 0.4, 0.4)(img)
    assert jittered.dtype == np.uint8 and jittered.shape == img.shape
    assert not np.array_equal(jittered.asnumpy(), img.asnumpy())
    with pytest.raises(mx.MXNetError, match="hue"):
        tf.RandomColorJitter(hue=0.1)
    with pytest.raises(mx.MXNetError, match="3 channels"):
        mx.nd.image.random_brightness(mx.nd.ones((2, 2, 2)), 1.0, 1.0)


def test_box_ops_have_mxnets_zero_gradient():
    """box_iou, box_encode and box_decode: MXNet's gradient is zero (they feed targets)."""
    rng = np.random.RandomState(3)
    lo = rng.uniform(0, 4, (1, 4, 2))
    boxes = mx.nd.array(np.concatenate([lo, lo + 2], axis=-1))
    offsets = mx.nd.array(rng.uniform(-1, 1, (1, 4, 4)))
    for array in (boxes, offsets):
        array.attach_grad()
    with mx.autograd.record():
        total = (mx.nd.contrib.box_iou(boxes[0], boxes[0]).sum()
                 + mx.nd.contrib.box_decode(offsets, boxes).sum()
                 + mx.nd.contrib.box_encode(mx.nd.ones((1, 4)), mx.nd.zeros((1, 4)), boxes,
                                            boxes, mx.nd.zeros(4), mx.nd.ones(4))[0].sum())
    total.backward()
    assert not boxes.grad.asnumpy().any() and not offsets.grad.asnumpy().any()


def test_reset_ctx_on_an_uninitialized_parameter_is_a_value_error():
    """MXNet raises ValueError, which GluonCV's R-CNN builders catch and skip."""
    with pytest.raises(ValueError, match="has not been initialized"):
        mx.gluon.Parameter("w", shape=(2,)).reset_ctx(mx.cpu())
