"""``mx.npx`` and Gluon in NumPy mode: the switches, ``npx.reshape``'s codes, save/load,
train-mode ops, the ``F`` that ``hybrid_forward`` gets, mx.np arrays through blocks, losses,
Trainer and hybridize (values against MXNet 1.9.1 are in ``test_numpy_mode.py``'s fixtures)."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as onp
import pytest

import hybridgpu as mx
from hybridgpu import autograd, gluon, np, npx
from hybridgpu.gluon import nn


@pytest.fixture
def numpy_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_switches():
    assert not npx.is_np_array()
    npx.set_np()
    try:
        assert npx.is_np_array() and npx.is_np_shape()
    finally:
        npx.reset_np()
    assert not npx.is_np_array() and not mx.is_np_shape()


@pytest.mark.parametrize(("shape", "codes", "want"), [
    ((2, 3, 4), (-2, -1), (2, 12)),
    ((2, 3, 4), (-4,), (2, 3, 4)),
    ((2, 3, 4), (-5, -2), (6, 4)),
    ((2, 3, 4), (-6, 1, 2, -4), (1, 2, 3, 4)),
    ((2, 3, 4), (-6, -1, 1, -5), (2, 1, 12)),
    ((1, 3), (-3, -2), (3,)),
    ((2, 3, 4), (4, -1), (4, 6)),
])
def test_reshape_codes(shape, codes, want):
    assert npx.reshape(np.zeros(shape), codes).shape == want


def test_reshape_reverse_and_errors():
    assert npx.reshape(np.zeros((10, 5, 4)), (-1, -2), reverse=True).shape == (50, 4)
    with pytest.raises(mx.MXNetError, match="npx.reshape.*-3 drops a dimension of size 1"):
        npx.reshape(np.zeros((2, 3)), (-3, -2))
    with pytest.raises(mx.MXNetError, match="npx.reshape.*sizes differ"):
        npx.reshape(np.zeros((2, 3)), (4, 2))


def test_save_load_round_trip(tmp_path):
    path = str(tmp_path / "arrays")
    npx.save(path, {"a": np.arange(3), "b": np.ones((2, 2), dtype="int32")})
    loaded = npx.load(path)
    assert isinstance(loaded["a"], np.ndarray) and loaded["b"].dtype == onp.int32
    onp.testing.assert_array_equal(loaded["a"].asnumpy(), [0, 1, 2])
    npx.save(path, np.arange(2))
    assert [x.shape for x in npx.load(path)] == [(2,)]


def test_dropout_in_train_mode_masks_and_scales():
    x = np.ones((100, 100))
    with autograd.train_mode():
        y = npx.dropout(x, p=0.5).asnumpy()
    kept = y != 0
    assert 0.4 < kept.mean() < 0.6 and onp.allclose(y[kept], 2.0)
    onp.testing.assert_array_equal(npx.dropout(x, p=0.5).asnumpy(), x.asnumpy())


def test_batch_norm_training_updates_moving_statistics():
    x = np.array([[1.0, 2.0], [3.0, 6.0]])
    mean, var = np.zeros(2), np.ones(2)
    with autograd.train_mode():
        out = npx.batch_norm(x, np.ones(2), np.zeros(2), mean, var, momentum=0.5,
                             fix_gamma=False)
    onp.testing.assert_allclose(mean.asnumpy(), [1.0, 2.0])
    onp.testing.assert_allclose(out.asnumpy().mean(axis=0), [0.0, 0.0], atol=1e-6)


def test_missing_input_names_the_function():
    with pytest.raises(mx.MXNetError, match="npx.fully_connected: input 'weight' is missing"):
        npx.fully_connected(np.ones((2, 3)), num_hidden=4)


def test_devices_and_helpers():
    assert npx.cpu() == mx.cpu() and npx.num_gpus() == mx.context.num_gpus()
    assert npx.current_device() == mx.current_context()
    npx.waitall()
    onp.testing.assert_array_equal(npx.nonzero(np.array([[0, 1], [2, 0]])).asnumpy(),
                                   [[0, 1], [1, 0]])


def _mlp():
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation="relu"), nn.Dropout(0.5), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    return net


def test_gluon_gives_np_arrays_and_trains(numpy_mode):
    mx.random.seed(3)
    net = _mlp()
    x, y = np.random.normal(0, 1, (16, 5)), np.random.randint(0, 3, (16,))
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    losses = []
    for _ in range(5):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(16)
        losses.append(float(loss.mean()))
    assert isinstance(loss, np.ndarray) and loss.shape == (16,)
    assert isinstance(net[0].weight.data(), np.ndarray)
    assert isinstance(net[0].weight.grad(), np.ndarray)
    assert losses[-1] < losses[0]


def test_hybridized_equals_imperative_in_numpy_mode(numpy_mode):
    net = _mlp()
    x = np.random.uniform(size=(4, 5))
    with autograd.record(train_mode=False):  # Dropout off: the same numbers both ways
        want = net(x)
    want.backward()
    grad = net[0].weight.grad().asnumpy().copy()
    net.hybridize()
    with autograd.record(train_mode=False):
        got = net(x)
    got.backward()
    assert isinstance(got, np.ndarray)
    onp.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(net[0].weight.grad().asnumpy(), grad, rtol=1e-5, atol=1e-6)


class _Seen(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        self.seen = F
        return F.np.sum(F.npx.relu(x), axis=1)


def test_f_has_np_and_npx_for_nd_and_sym(numpy_mode):
    block = _Seen()
    x = np.array([[-1.0, 2.0], [3.0, -4.0]])
    onp.testing.assert_array_equal(block(x).asnumpy(), [2.0, 3.0])
    assert block.seen.np is np and block.seen.relu.__wrapped__ is mx.nd.relu
    assert isinstance(block.seen.relu(mx.nd.ones(1)), np.ndarray)  # F's ops give mx.np arrays
    block.hybridize()
    out = block(x)
    assert isinstance(out, np.ndarray) and block.seen.Variable.__wrapped__ is mx.sym.Variable
    onp.testing.assert_array_equal(out.asnumpy(), [2.0, 3.0])


def test_np_inputs_without_set_np_turn_numpy_mode_on_for_the_call():
    block = _Seen()
    out = block(np.array([[1.0, 2.0]]))
    assert isinstance(out, np.ndarray) and out.shape == (1,)
    assert not npx.is_np_array() and isinstance(block.seen.np.ndarray, type)


def test_outside_numpy_mode_f_is_nd():
    block = nn.Dense(2, in_units=2)
    block.initialize()
    assert type(block(mx.nd.ones((1, 2)))) is mx.nd.NDArray


def test_dataloader_gives_np_batches_in_numpy_mode(numpy_mode):
    x, y = np.arange(12).reshape(6, 2), np.array([0, 1, 0, 1, 1, 0])
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)
    batches = list(loader)
    assert all(isinstance(a, np.ndarray) for batch in batches for a in batch)
    assert [b[0].shape for b in batches] == [(4, 2), (2, 2)] and batches[0][1].shape == (4,)
    host = gluon.data.DataLoader(gluon.data.ArrayDataset(onp.ones((3, 2))), batch_size=3)
    assert isinstance(next(iter(host)), np.ndarray)


def test_state_from_a_freed_graph_is_a_constant(numpy_mode):
    """d2l's RNN loop feeds the state of the last step into the next recorded step: as in
    MXNet, the gradient stops there (the head's own graph still refuses a second backward)."""
    w = np.array([2.0])
    w.attach_grad()
    with autograd.record():
        state = w * 3
        loss = state.sum()
    loss.backward()
    with autograd.record():
        loss = (state * w).sum()
    loss.backward()
    onp.testing.assert_allclose(w.grad.asnumpy(), [6.0])  # d/dw (state * w), state constant
    with pytest.raises(mx.MXNetError, match="freed.*retain_graph=True"):
        loss.backward()


class _Indexing(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        parts = [x[1], x[:, ::2], x[None, 1:], x[..., 0], x[-1, 1:3], x.T, x.reshape(-1, 2),
                 x.sum(axis=0), x.mean(), x.astype("int32"), x.max(axis=1, keepdims=True)]
        return [p.reshape(-1) if p.ndim else p.reshape(1) for p in parts]


def test_traced_values_index_and_reshape_like_numpy(numpy_mode):
    block = _Indexing()
    x = np.arange(12).reshape(3, 4)
    want = block(x)
    block.hybridize()
    got = block(x)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray) and g.dtype == w.dtype
        onp.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


def test_traced_value_refuses_array_index_with_a_hint(numpy_mode):
    class Bad(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x[x > 1]

    block = Bad()
    block.hybridize()
    with pytest.raises(mx.MXNetError, match="F.np.take"):
        block(np.ones((2, 2)))


def test_save_in_numpy_mode_writes_v3_records(tmp_path, numpy_mode):
    """MXNet in NumPy mode reads only V3 records (and writes them, 0-d arrays included);
    outside it nd.save keeps writing V2 (V1 for 0-d)."""
    path = tmp_path / "a.params"
    npx.save(str(path), {"s": np.array(2.5), "v": np.arange(3)})
    raw = path.read_bytes()
    assert raw.count((0xF993FACA).to_bytes(4, "little")) == 2
    loaded = npx.load(str(path))
    assert loaded["s"].shape == () and float(loaded["s"]) == 2.5
    npx.reset_np()
    mx.nd.save(str(path), [mx.nd.ones(2)])
    assert (0xF993FAC9).to_bytes(4, "little") in path.read_bytes()


# -- d2l 0.17.6 against MXNet 1.9.1 --------------------------------------------------------------

D2L_FIXTURE = pathlib.Path(__file__).resolve().parent / "fixtures" / "mxnet_d2l" / "results.json"
D2L_NEEDS = ("d2l", "pandas", "IPython", "matplotlib_inline", "matplotlib", "requests")


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in D2L_NEEDS),
                    reason=f"needs d2l==0.17.6 and its dependencies ({', '.join(D2L_NEEDS)})")
def test_d2l_helpers_match_mxnet(tmp_path):
    """The d2l book's helpers (linear regression, train_epoch_ch3, Residual, resnet18
    hybridized, RNN/GRU/LSTM train_epoch_ch8, attention, transformer encoder, seq2seq loss),
    unchanged, through ``python -m hybridgpu.mxnet_alias``, on fixed weights and data: MXNet
    1.9.1's numbers (fixtures/make_mxnet_d2l_fixtures.py)."""
    _check_d2l(tmp_path, [])


_ON_GPU = """
import runpy, sys
import mxnet as mx
mx.context.Context.default_ctx = mx.gpu(0)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.gpu
@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in D2L_NEEDS),
                    reason=f"needs d2l==0.17.6 and its dependencies ({', '.join(D2L_NEEDS)})")
def test_d2l_helpers_match_mxnet_on_gpu(tmp_path, gpu_available):
    """The same with gpu(0) as the default context (CuPy, or the virtual GPU)."""
    wrapper = tmp_path / "on_gpu.py"
    wrapper.write_text(_ON_GPU)
    _check_d2l(tmp_path, [str(wrapper)])


def _check_d2l(tmp_path, prefix):
    script = D2L_FIXTURE.parent.parent / "make_mxnet_d2l_fixtures.py"
    subprocess.run([sys.executable, "-m", "hybridgpu.mxnet_alias", *prefix, str(script),
                    "--out", str(tmp_path)], check=True, capture_output=True,
                   env={**os.environ, "MPLBACKEND": "Agg"}, timeout=600)
    want = json.loads(D2L_FIXTURE.read_text())["results"]
    got = json.loads((tmp_path / "results.json").read_text())["results"]
    assert sorted(got) == sorted(want)
    for name, values in want.items():
        assert not isinstance(got[name], dict), f"{name}: {got[name]}"
        for i, (g, w) in enumerate(zip(got[name], values)):
            onp.testing.assert_allclose(onp.asarray(g, dtype=float), onp.asarray(w, dtype=float),
                                        rtol=1e-4, atol=1e-5, err_msg=f"{name}[{i}]")
