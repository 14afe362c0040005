"""``mx.onnx.export_model`` of recurrent models: gluon.rnn's LSTM, GRU and RNN layers (1 and 2
layers, one direction and both, 'TNC' and 'NTC', with and without initial states), an
Embedding -> LSTM -> Dense model, sequence lengths, the files MXNet 1.9.1 wrote; the exported
files run in onnxruntime and give hybridgpu's (or MXNet's) outputs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.gluon import nn, rnn

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "mxnet_rnn")
SYMBOLIC = os.path.join(HERE, "fixtures", "mxnet_onnx_rnn")  # make_mxnet_onnx_rnn_fixtures.py
ORACLE = os.path.join(HERE, "..", ".oracle", "bin", "python")
RTOL, ATOL = 1e-5, 1e-6

LAYERS = {"lstm": lambda **kw: rnn.LSTM(5, **kw), "gru": lambda **kw: rnn.GRU(5, **kw),
          "rnn_tanh": lambda **kw: rnn.RNN(5, activation="tanh", **kw),
          "rnn_relu": lambda **kw: rnn.RNN(5, activation="relu", **kw)}
GEOMETRIES = [(1, False, "TNC"), (1, True, "NTC"), (2, False, "NTC"), (2, True, "TNC")]


def _run_onnx(path, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: feeds[n] for n in names}), names


def _randomize(block, seed=0):
    """Every parameter (biases included) drawn from U(-0.5, 0.5)."""
    rng = np.random.RandomState(seed)
    for param in block.collect_params().values():
        param.set_data(mx.nd.array(rng.uniform(-0.5, 0.5, param.shape)))


def _export(block, inputs, tmp_path, name="net"):
    """Export the hybridized ``block`` (already run on ``inputs``) to ONNX; its path."""
    prefix = str(tmp_path / name)
    block.export(prefix)
    return mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params",
                                [x.shape for x in inputs], np.float32, f"{prefix}.onnx")


def _flat(outputs):
    if isinstance(outputs, (list, tuple)):
        return [y for x in outputs for y in _flat(x)]
    return [outputs.asnumpy()]


def _check(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("with_states", [False, True], ids=["zero_states", "given_states"])
@pytest.mark.parametrize("geometry", GEOMETRIES,
                         ids=lambda g: f"{g[0]}l_{'bi' if g[1] else 'uni'}_{g[2]}")
@pytest.mark.parametrize("mode", sorted(LAYERS))
def test_layer(mode, geometry, with_states, tmp_path):
    layers, bidirectional, layout = geometry
    layer = LAYERS[mode](num_layers=layers, bidirectional=bidirectional, layout=layout,
                         dropout=0.3 if layers > 1 else 0, input_size=3)
    layer.initialize()
    _randomize(layer)
    layer.hybridize()
    rng = np.random.RandomState(1)
    x = mx.nd.array(rng.uniform(-1, 1, (4, 6, 3) if layout == "TNC" else (6, 4, 3)))
    inputs = [x]
    if with_states:
        inputs.append([mx.nd.array(rng.uniform(-1, 1, s.shape))
                       for s in layer.begin_state(batch_size=6)])
        expected = _flat(layer(x, inputs[1]))
        inputs = [x, *inputs[1]]
    else:  # the zero states a hybridized layer makes are inputs, as in MXNet
        expected = _flat(layer(x))
        inputs += layer.begin_state(batch_size=6)
    path = _export(layer, inputs, tmp_path)
    got, _ = _run_onnx(path, {f"data{i}": a.asnumpy() for i, a in enumerate(inputs)})
    _check(got, expected)
    ops = [n.op_type for n in onnx.load(path).graph.node]
    onnx_op = {"lstm": "LSTM", "gru": "GRU"}.get(mode, "RNN")
    assert ops.count(onnx_op) == layers and "Concat" not in ops[:ops.index(onnx_op)]
    assert "Dropout" not in ops


def test_gate_layout_of_onnx_tensors(tmp_path):
    """W, R, B are initializers in ONNX's gate order: LSTM i, o, f, c from MXNet's i, f, g, o;
    GRU z, r, h from MXNet's r, z, n, with linear_before_reset."""
    for mode, order in (("lstm", [0, 3, 1, 2]), ("gru", [1, 0, 2])):
        layer = LAYERS[mode](input_size=3)
        layer.initialize()
        _randomize(layer)
        layer.hybridize()
        x = mx.nd.ones((2, 1, 3))
        layer(x)
        model = onnx.load(_export(layer, [x, *layer.begin_state(batch_size=1)], tmp_path, mode))
        inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
        w = next(v for k, v in inits.items() if k.endswith("_l0_W"))
        mx_w = layer.l0_i2h_weight.data().asnumpy().reshape(len(order), 5, 3)
        np.testing.assert_array_equal(w[0], mx_w[order].reshape(-1, 3))
        node = next(n for n in model.graph.node if n.op_type in ("LSTM", "GRU"))
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        assert attrs["hidden_size"] == 5 and attrs.get("linear_before_reset", 0) == (
            mode == "gru")
        assert not any(k.startswith("lstm0_l0") or k.startswith("gru0_l0") for k in inits)


class _Tagger(mx.gluon.HybridBlock):
    """Embedding -> 2-layer bidirectional LSTM -> Dense over every step."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.embed = nn.Embedding(20, 6)
            self.lstm = rnn.LSTM(8, num_layers=2, bidirectional=True, layout="NTC")
            self.out = nn.Dense(4, flatten=False)

    def hybrid_forward(self, F, tokens):
        return self.out(self.lstm(self.embed(tokens)))


def test_embedding_lstm_dense_model(tmp_path):
    net = _Tagger()
    net.initialize()
    tokens = mx.nd.array(np.random.RandomState(2).randint(0, 20, (3, 7)))
    net(tokens)
    _randomize(net)
    net.hybridize()
    expected = net(tokens).asnumpy()
    path = _export(net, [tokens], tmp_path, "tagger")
    got, names = _run_onnx(path, {"data": tokens.asnumpy()})
    assert names == ["data"]  # the zero states are constants
    _check(got, [expected])


def test_sequential_lstm_classifier(tmp_path):
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Embedding(10, 4), rnn.GRU(6, layout="NTC"), nn.Dense(3))
    net.initialize()
    tokens = mx.nd.array(np.random.RandomState(3).randint(0, 10, (2, 5)))
    net(tokens)
    _randomize(net, seed=4)
    net.hybridize()
    expected = net(tokens).asnumpy()
    got, _ = _run_onnx(_export(net, [tokens], tmp_path), {"data": tokens.asnumpy()})
    _check(got, [expected])


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_sequence_length(mode, tmp_path):
    layer = LAYERS[mode](bidirectional=True, use_sequence_length=True, input_size=3)
    layer.initialize()
    _randomize(layer)
    layer.hybridize()
    rng = np.random.RandomState(5)
    x = mx.nd.array(rng.uniform(-1, 1, (6, 3, 3)))
    states = layer.begin_state(batch_size=3)
    lengths = mx.nd.array([6, 2, 4])
    expected = _flat(layer(x, states, lengths))
    path = _export(layer, [x, *states, lengths], tmp_path)
    feeds = {f"data{i}": a.asnumpy() for i, a in enumerate([x, *states, lengths])}
    got, _ = _run_onnx(path, feeds)
    _check(got, expected)
    assert not got[0][4:, 1].any()  # steps past a sequence's length are zeros


def test_parameters_as_graph_input(tmp_path):
    """A flat parameters vector that is an input (not an initializer) is gathered in the
    graph into W, R and B."""
    data, params, state = mx.sym.var("data"), mx.sym.var("flat"), mx.sym.var("h0")
    out = mx.sym.RNN(data, params, state, state_size=4, num_layers=2, mode="gru",
                     bidirectional=True, state_outputs=True, name="gru")
    rng = np.random.RandomState(6)
    size = mx.ops.rnn.param_size("gru", 2, 3, 4, bidirectional=True)
    feeds = {"data": rng.uniform(-1, 1, (5, 2, 3)).astype(np.float32),
             "flat": rng.uniform(-0.5, 0.5, (size,)).astype(np.float32),
             "h0": rng.uniform(-1, 1, (4, 2, 4)).astype(np.float32)}
    expected = [y.asnumpy() for y in out.eval(**{k: mx.nd.array(v) for k, v in feeds.items()})]
    path = mx.onnx.export_model(out, {}, [v.shape for v in feeds.values()], np.float32,
                                str(tmp_path / "flat.onnx"))
    got, names = _run_onnx(path, feeds)
    assert names == ["data", "flat", "h0"]
    _check(got, expected[:2])
    assert "Gather" in [n.op_type for n in onnx.load(path).graph.node]
    # the same vector given as a parameter: W, R and B become initializers, no Gather
    flat = {"flat": mx.nd.array(feeds.pop("flat"))}
    path = mx.onnx.export_model(out, flat, [v.shape for v in feeds.values()], np.float32,
                                str(tmp_path / "folded.onnx"))
    got, names = _run_onnx(path, feeds)
    assert names == ["data", "h0"]
    _check(got, expected[:2])
    model = onnx.load(path)
    assert "Gather" not in [n.op_type for n in model.graph.node]
    assert "flat" not in [t.name for t in model.graph.initializer]


def _mxnet_exports():
    with open(os.path.join(FIXTURES, "cases.json")) as f:
        return json.load(f)["exports"]


@pytest.mark.parametrize("name", sorted(_mxnet_exports()))
def test_files_mxnet_wrote(name, tmp_path):
    """The -symbol.json/-0000.params MXNet 1.9.1 exported (``RNN`` fed by
    ``_rnn_param_concat``) convert and give MXNet's outputs."""
    entry, arrays = _mxnet_exports()[name], np.load(os.path.join(FIXTURES, "arrays.npz"))
    inputs = [arrays[f"export/{name}/in{i}"].astype(np.float32)
              for i in range(len(entry["input_names"]))]
    prefix = os.path.join(FIXTURES, name)
    path = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params",
                                [x.shape for x in inputs], np.float32,
                                str(tmp_path / f"{name}.onnx"))
    got, names = _run_onnx(path, dict(zip(entry["input_names"], inputs)))
    assert names == entry["input_names"]
    np.testing.assert_allclose(got[0], arrays[f"export/{name}/out"], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", ["lstm_tagger", "gru_tagger"])
def test_symbolic_models_mxnet_wrote(name, tmp_path):
    """Embedding -> LSTM/GRU -> Dense as MXNet writes it from a symbolic call: the zero states
    are ``_zeros`` of batch 0 (unknown), completed by shape inference and exported as
    constants; the file gives MXNet's outputs."""
    arrays = np.load(os.path.join(SYMBOLIC, "arrays.npz"))
    tokens = arrays[f"{name}/in"]
    prefix = os.path.join(SYMBOLIC, name)
    path = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params",
                                [tokens.shape], np.float32, str(tmp_path / f"{name}.onnx"))
    got, names = _run_onnx(path, {"data": tokens})
    assert names == ["data"]
    np.testing.assert_allclose(got[0], arrays[f"{name}/out"], rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", ["lstm_tagger", "gru_tagger"])
@pytest.mark.parametrize("hybridize", [False, True])
def test_symbolic_rnn_files_mxnet_wrote_import_and_run(name, hybridize):
    """The same files through SymbolBlock.imports: their ``_zeros`` states of batch 0 take the
    inferred batch, as MXNet fills them."""
    arrays = np.load(os.path.join(SYMBOLIC, "arrays.npz"))
    prefix = os.path.join(SYMBOLIC, name)
    block = mx.gluon.SymbolBlock.imports(f"{prefix}-symbol.json", ["data"],
                                         f"{prefix}-0000.params")
    if hybridize:
        block.hybridize()
    got = block(mx.nd.array(arrays[f"{name}/in"]))
    np.testing.assert_allclose(got.asnumpy(), arrays[f"{name}/out"], rtol=RTOL, atol=ATOL)


@pytest.mark.oracle
def test_generator_reproduces_fixtures(tmp_path):
    import subprocess

    if not os.path.exists(ORACLE):
        pytest.skip(f"the real MXNet is not installed at {ORACLE}")
    script = os.path.join(HERE, "fixtures", "make_mxnet_onnx_rnn_fixtures.py")
    done = subprocess.run([ORACLE, script, "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in sorted(os.listdir(SYMBOLIC)):
        with open(os.path.join(SYMBOLIC, name), "rb") as kept:
            assert (tmp_path / name).read_bytes() == kept.read(), name


def test_hostile_names(tmp_path):
    hostile = 'x"; import os #\n<b>'
    layer = rnn.LSTM(3, num_layers=2, input_size=2, prefix=hostile)
    layer.initialize()
    _randomize(layer)
    out = layer(mx.sym.var(hostile))
    params = {p.name: p.data() for p in layer.collect_params().values()}
    x = np.random.RandomState(7).uniform(-1, 1, (3, 2, 2)).astype(np.float32)
    path = mx.onnx.export_model(out, params, [x.shape], np.float32, str(tmp_path / "h.onnx"))
    got, names = _run_onnx(path, {hostile: x})
    assert names == [hostile]
    _check(got, [layer(mx.nd.array(x)).asnumpy()])
    outputs = [o for n in onnx.load(path).graph.node for o in n.output]
    assert len(outputs) == len(set(outputs))


def test_state_clip_is_refused(tmp_path):
    out = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("p"), mx.sym.var("h"), mx.sym.var("c"),
                     state_size=2, num_layers=1, mode="lstm", lstm_state_clip_min=-1.0,
                     lstm_state_clip_max=1.0, name="clipped")
    size = mx.ops.rnn.param_size("lstm", 1, 3, 2)
    with pytest.raises(MXNetError, match="RNN 'clipped'.*lstm_state_clip"):
        mx.onnx.export_model(out, {"p": mx.nd.zeros((size,))}, [(2, 1, 3), (1, 1, 2),
                                                               (1, 1, 2)], np.float32,
                             str(tmp_path / "clip.onnx"))
