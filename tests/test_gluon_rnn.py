"""``gluon.rnn`` against the real MXNet 1.9.1: layers and cells give MXNet's outputs, final
states and gradients (input, initial states, every parameter) from fixed weights, imperative and
hybridized; parameter names, ``save_parameters`` keys and ``repr`` are MXNet's; models MXNet
exported (``RNN`` + ``_rnn_param_concat``) load with ``SymbolBlock.imports`` and weights it saved
load with ``load_parameters``. Fixtures: ``tests/fixtures/make_mxnet_rnn_fixtures.py``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.gluon import rnn

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures", "mxnet_rnn")
sys.path.insert(0, os.path.join(HERE, "fixtures"))

import make_mxnet_rnn_fixtures as gen  # noqa: E402

with open(os.path.join(FIXTURES, "cases.json"), encoding="utf-8") as _f:
    FIX = json.load(_f)
ARRAYS = dict(np.load(os.path.join(FIXTURES, "arrays.npz")))
RTOL, ATOL = 1e-5, 1e-6


def close(got, want, what):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MXNet {want.shape}"
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)


# -- layers and cells vs MXNet ------------------------------------------------------------------

def _run_case(name, hybridize):
    spec, entry = gen.CASES[name], FIX["cases"][name]
    with mx.name.NameManager():
        block = gen.build(mx, name)
    assert repr(block) == entry["repr_before"]
    assert gen.param_table(block) == entry["params_before"]
    if hybridize:
        block.hybridize()
    gen.complete(mx, block, spec, ARRAYS[f"{name}/in"])
    states = None
    if spec["states"]:
        count = len(entry["state_shapes"])
        states = [mx.nd.array(ARRAYS[f"{name}/state{i}"]) for i in range(count)]
        for s in states:
            s.attach_grad()
    x = mx.nd.array(ARRAYS[f"{name}/in"])
    x.attach_grad()
    with mx.autograd.record(train_mode=False):
        out, new = gen.run(mx, block, spec, x, states)
        loss = (out * mx.nd.array(ARRAYS[f"{name}/head"])).sum()
        for i, s in enumerate(new):
            loss = loss + (s * mx.nd.array(ARRAYS[f"{name}/head_state{i}"])).sum()
    loss.backward()
    return block, x, states, out, new


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("name", sorted(gen.CASES))
def test_case_matches_mxnet(name, hybridize):
    entry = FIX["cases"][name]
    block, x, states, out, new = _run_case(name, hybridize)
    close(out, ARRAYS[f"{name}/out"], f"{name} output")
    assert [list(s.shape) for s in new] == entry["state_shapes"]
    for i, s in enumerate(new):
        close(s, ARRAYS[f"{name}/out_state{i}"], f"{name} final state {i}")
    close(x.grad, ARRAYS[f"{name}/grad/in"], f"{name} input gradient")
    for i, s in enumerate(states or []):
        close(s.grad, ARRAYS[f"{name}/grad/state{i}"], f"{name} initial state {i} gradient")
    for key, param in block._collect_params_with_prefix().items():
        close(param.grad(), ARRAYS[f"{name}/grad/{key}"], f"{name} gradient of {key}")
    assert repr(block) == entry["repr_after"]
    assert gen.param_table(block) == entry["params_after"]


# -- files MXNet wrote --------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(FIX["exports"]))
def test_symbolblock_imports_mxnet_export(name):
    entry = FIX["exports"][name]
    prefix = os.path.join(FIXTURES, name)
    net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", entry["input_names"],
                                       prefix + "-0000.params")
    inputs = [mx.nd.array(ARRAYS[f"export/{name}/in{i}"])
              for i in range(len(entry["input_names"]))]
    close(net(*inputs), ARRAYS[f"export/{name}/out"], f"{name} imported")
    net.hybridize()
    close(net(*inputs), ARRAYS[f"export/{name}/out"], f"{name} imported, hybridized")


@pytest.mark.parametrize("name", sorted(FIX["exports"]))
def test_export_writes_mxnet_graph(name, tmp_path):
    entry = FIX["exports"][name]
    spec = gen.CASES[entry["case"]]
    x = ARRAYS[f"export/{name}/in0"]
    with mx.name.NameManager():
        block = gen.build(mx, entry["case"])
    gen.complete(mx, block, spec, x)
    block.hybridize()
    block(mx.nd.array(x))
    block.export(str(tmp_path / name))
    graph = json.loads((tmp_path / f"{name}-symbol.json").read_text())
    assert [n["op"] for n in graph["nodes"] if n["op"] != "null"] == entry["ops"]
    args = [graph["nodes"][i]["name"] for i in graph["arg_nodes"]]
    assert [a for a in args if a.startswith("data")] == entry["input_names"]
    mine = mx.gluon.SymbolBlock.imports(str(tmp_path / f"{name}-symbol.json"),
                                        entry["input_names"],
                                        str(tmp_path / f"{name}-0000.params"))
    inputs = [mx.nd.array(ARRAYS[f"export/{name}/in{i}"])
              for i in range(len(entry["input_names"]))]
    np.testing.assert_allclose(mine(*inputs).asnumpy(), block(inputs[0]).asnumpy(), rtol=RTOL)


def test_load_parameters_saved_by_mxnet(tmp_path):
    entry = FIX["exports"]["lstm"]
    with mx.name.NameManager():
        block = gen.build(mx, entry["case"])
    block.load_parameters(os.path.join(FIXTURES, "lstm_saved.params"))
    close(block(mx.nd.array(ARRAYS["export/lstm/in0"])), ARRAYS["export/lstm/out"],
          "LSTM with MXNet's saved parameters")
    block.save_parameters(str(tmp_path / "mine.params"))
    assert sorted(mx.nd.load(str(tmp_path / "mine.params"))) == entry["saved_keys"]


def test_save_keys_of_one_direction():
    layer = rnn.GRU(3, num_layers=2, input_size=2)
    assert sorted(layer._collect_params_with_prefix()) == sorted(
        f"_unfused.{i}.{k}" for i in range(2)
        for k in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"))


# -- behaviour ----------------------------------------------------------------------------------

def _lstm(**kwargs):
    layer = rnn.LSTM(3, input_size=2, **kwargs)
    layer.initialize(mx.init.Uniform(0.5))
    return layer


def test_states_returned_only_when_given_and_traces_kept_apart():
    layer = _lstm(num_layers=2)
    layer.hybridize()
    x = mx.nd.random.uniform(shape=(4, 2, 2))
    plain = layer(x)
    out, states = layer(x, layer.begin_state(batch_size=2))
    assert isinstance(plain, mx.nd.NDArray) and len(states) == 2
    np.testing.assert_allclose(out.asnumpy(), plain.asnumpy(), rtol=RTOL)
    assert isinstance(layer(x), mx.nd.NDArray)  # the first trace again, not the second


def test_layouts_agree():
    layer = _lstm(bidirectional=True)
    x = mx.nd.random.uniform(shape=(5, 3, 2))
    tnc = layer(x).asnumpy()
    layer._layout = "NTC"
    ntc = layer(x.swapaxes(0, 1)).asnumpy()
    np.testing.assert_allclose(ntc.swapaxes(0, 1), tnc, rtol=RTOL)


def test_dropout_only_in_training():
    layer = _lstm(num_layers=3, dropout=0.5)
    reference = _lstm(num_layers=3)
    for (_, p), (_, q) in zip(layer.collect_params().items(),
                              reference.collect_params().items()):
        q.set_data(p.data())
    x = mx.nd.random.uniform(shape=(6, 4, 2))
    np.testing.assert_allclose(layer(x).asnumpy(), reference(x).asnumpy(), rtol=RTOL)
    mx.random.seed(3)
    with mx.autograd.record():
        trained = layer(x)
    assert not np.allclose(trained.asnumpy(), reference(x).asnumpy())


def test_dropout_gradient_uses_the_forward_masks():
    layer = rnn.GRU(3, num_layers=2, dropout=0.5, input_size=2, dtype="float64")
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.uniform(shape=(3, 2, 2), dtype="float64")
    x.attach_grad()
    mx.random.seed(7)
    with mx.autograd.record():
        out = layer(x)
    out.backward()
    # the same seed draws the same masks: finite differences along a random direction
    direction = np.random.RandomState(0).standard_normal(x.shape)

    def loss(shift):
        mx.random.seed(7)
        with mx.autograd.record():
            return float(layer(x + mx.nd.array(shift * direction, dtype="float64"))
                         .sum().asscalar())

    numeric = (loss(1e-6) - loss(-1e-6)) / 2e-6
    analytic = float((x.grad.asnumpy() * direction).sum())
    assert abs(numeric - analytic) <= 1e-6 + 1e-5 * abs(numeric)


def test_symbol_api_matches_ndarray():
    layer = rnn.GRU(4, layout="NTC", num_layers=2, bidirectional=True)
    layer.initialize()
    x = mx.nd.random.uniform(shape=(2, 5, 3))
    want = layer(x).asnumpy()
    out = layer(mx.sym.var("x"))
    params = {k: v.data() for k, v in layer.collect_params().items()}
    np.testing.assert_allclose(out.eval(x=x, **params)[0].asnumpy(), want, rtol=RTOL)


def test_cell_unroll_list_and_merged_agree():
    cell = rnn.LSTMCell(3, input_size=2)
    cell.initialize()
    x = mx.nd.random.uniform(shape=(4, 5, 2))
    merged, states = cell.unroll(5, x, layout="NTC", merge_outputs=True)
    steps, states2 = cell.unroll(5, [x[:, t] for t in range(5)], merge_outputs=False)
    assert isinstance(steps, list) and len(steps) == 5
    np.testing.assert_allclose(mx.nd.stack(*steps, axis=1).asnumpy(), merged.asnumpy(),
                               rtol=RTOL)
    for a, b in zip(states, states2):
        np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=RTOL)


def test_fused_layer_equals_unrolled_cells():
    layer = rnn.GRU(3, input_size=2)
    layer.initialize(mx.init.Uniform(0.5))
    cell = rnn.GRUCell(3, input_size=2)
    cell.initialize()
    for kind in ("i2h_weight", "h2h_weight", "i2h_bias", "h2h_bias"):
        getattr(cell, kind).set_data(getattr(layer, f"l0_{kind}").data())
    x = mx.nd.random.uniform(shape=(5, 2, 2))
    outs, _ = cell.unroll(5, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(outs.asnumpy(), layer(x).asnumpy(), rtol=RTOL, atol=ATOL)


def test_zoneout_and_dropout_cells_only_act_in_training():
    base = rnn.RNNCell(3, input_size=3)
    cell = rnn.ZoneoutCell(base, zoneout_outputs=0.5, zoneout_states=0.5)
    cell.initialize()
    x = mx.nd.random.uniform(shape=(2, 4, 3))
    predicted, _ = cell.unroll(4, x, merge_outputs=True)
    base._modified = False
    plain, _ = base.unroll(4, x, merge_outputs=True)
    np.testing.assert_allclose(predicted.asnumpy(), plain.asnumpy(), rtol=RTOL)
    drop = rnn.DropoutCell(0.5)
    with mx.autograd.train_mode():
        dropped, _ = drop.unroll(4, mx.nd.ones((2, 4, 3)), merge_outputs=True)
    assert set(np.unique(dropped.asnumpy())) <= {0.0, 2.0}


def test_state_clip_bounds_the_cell_state():
    layer = _lstm(state_clip_min=-0.05, state_clip_max=0.05)
    _, (h, c) = layer(mx.nd.ones((6, 2, 2)) * 3, layer.begin_state(batch_size=2))
    assert np.abs(c.asnumpy()).max() <= 0.05 + 1e-7
    assert np.abs(c.asnumpy()).max() > 0.04


# -- errors -------------------------------------------------------------------------------------

def test_errors_name_what_is_wrong():
    with pytest.raises(MXNetError, match="layout"):
        rnn.LSTM(3, layout="CTN")
    layer = _lstm()
    with pytest.raises(MXNetError, match=r"state shape: expected \(1, 2, 3\)"):
        layer(mx.nd.ones((4, 2, 2)), [mx.nd.zeros((1, 5, 3)), mx.nd.zeros((1, 5, 3))])
    with pytest.raises(MXNetError, match="parameters"):
        layer(mx.nd.ones((4, 2, 7)))
    with pytest.raises(MXNetError, match="expected 2 state"):
        layer(mx.nd.ones((4, 2, 2)), [mx.nd.zeros((1, 2, 3))])
    with pytest.raises(MXNetError, match="projection_size"):
        rnn.LSTM(3, projection_size=2)
    with pytest.raises(NotImplementedError, match="unroll"):
        rnn.BidirectionalCell(rnn.GRUCell(2), rnn.GRUCell(2))(mx.nd.ones((1, 2)), [])
    cell = rnn.GRUCell(2)
    rnn.ResidualCell(cell)
    with pytest.raises(MXNetError, match="already modified"):
        rnn.ZoneoutCell(cell)
    with pytest.raises(MXNetError, match="modifier"):
        cell.begin_state(batch_size=1)


def test_training_step_changes_the_loss():
    net = mx.gluon.nn.HybridSequential()
    net.add(rnn.LSTM(4, layout="NTC"), mx.gluon.nn.Dense(1, flatten=True))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    trainer = mx.gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.05})
    x, y = mx.nd.random.uniform(shape=(8, 5, 3)), mx.nd.random.uniform(shape=(8, 1))
    losses = []
    for _ in range(5):
        with mx.autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(8)
        losses.append(float(loss.asscalar()))
    assert losses[-1] < losses[0]


# -- variable lengths (use_sequence_length) -----------------------------------------------------

@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_sequence_length_equals_each_sequence_alone(hybridize):
    layer = rnn.LSTM(3, num_layers=2, bidirectional=True, input_size=2,
                     use_sequence_length=True)
    layer.initialize(mx.init.Uniform(0.5))
    if hybridize:
        layer.hybridize()
    x = mx.nd.random.uniform(-1, 1, shape=(5, 3, 2))
    lengths = [5, 2, 3]
    states = [mx.nd.random.uniform(shape=(4, 3, 3)) for _ in range(2)]
    out, (h, c) = layer(x, states, mx.nd.array(lengths))
    alone = rnn.LSTM(3, num_layers=2, bidirectional=True, input_size=2)
    alone.initialize()
    for (_, p), (_, q) in zip(layer.collect_params().items(), alone.collect_params().items()):
        q.set_data(p.data())
    for n, length in enumerate(lengths):
        want, (wh, wc) = alone(x[:length, n:n + 1],
                               [states[0][:, n:n + 1], states[1][:, n:n + 1]])
        close(out[:length, n:n + 1], want.asnumpy(), f"sequence {n} output")
        assert not out[length:, n].asnumpy().any(), f"sequence {n}: padding is not zero"
        close(h[:, n:n + 1], wh.asnumpy(), f"sequence {n} final h")
        close(c[:, n:n + 1], wc.asnumpy(), f"sequence {n} final c")


@pytest.mark.parametrize("case", __import__("op_cases.rnn", fromlist=["LENGTH_CASES"])
                         .LENGTH_CASES, ids=lambda c: c.name)
def test_sequence_length_op_cases(case):
    from op_harness import check_grad, check_infer_shape, run_all_outputs

    arrays = case.make_inputs(np.float64)
    _, _, outs = run_all_outputs(case, arrays)
    names = case.opdef.input_names(case.opdef.parse_attrs(case.attrs))
    given = dict(zip(names, arrays))
    want = case.ref(given["data"], given["parameters"], given["state"], None,
                    given["sequence_length"], **case.attrs)
    for got, ref in zip(outs, want):
        np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-10, atol=1e-12)
    check_infer_shape(case)
    check_grad(case)


def test_sequence_length_must_match_the_layer():
    layer = rnn.GRU(2, input_size=2)
    layer.initialize()
    with pytest.raises(MXNetError, match="use_sequence_length"):
        layer(mx.nd.ones((3, 2, 2)), layer.begin_state(batch_size=2), mx.nd.array([1, 2]))


def test_hybridized_dropout_matches_imperative_with_the_same_seed():
    layer = rnn.LSTM(4, num_layers=3, dropout=0.5, input_size=2)
    layer.initialize(mx.init.Uniform(1.0))
    x = mx.nd.random.uniform(shape=(6, 4, 2))
    results = []
    for hybrid in (False, True):
        layer.hybridize(hybrid)
        mx.random.seed(5)
        with mx.autograd.record():
            out = layer(x)
        out.backward()
        results.append((out.asnumpy(), layer.l0_i2h_weight.grad().asnumpy().copy()))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=RTOL)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=RTOL, atol=ATOL)


def test_zoneout_keeps_previous_values_in_training():
    cell = rnn.ZoneoutCell(rnn.GRUCell(3, input_size=2), zoneout_outputs=1.0,
                           zoneout_states=1.0)
    cell.initialize(mx.init.Uniform(1.0))
    begin = [mx.nd.ones((2, 3))]
    with mx.autograd.train_mode():
        outs, states = cell.unroll(4, mx.nd.ones((2, 4, 2)), begin_state=begin,
                                   merge_outputs=True)
    assert not outs.asnumpy().any()  # every output zoned out: the first "previous" is zeros
    np.testing.assert_array_equal(states[0].asnumpy(), begin[0].asnumpy())


# -- the real MXNet, when installed (.oracle/) ----------------------------------------------------

ORACLE = os.path.join(os.path.dirname(HERE), ".oracle", "bin", "python")

_MXNET_RUNS_EXPORT = """
import sys
import numpy as np
import mxnet as mx
folder, names = sys.argv[1], sys.argv[2:]
inputs = dict(np.load(folder + "/inputs.npz"))
net = mx.gluon.SymbolBlock.imports(folder + "/net-symbol.json", names,
                                   folder + "/net-0000.params")
np.save(folder + "/out.npy", net(*[mx.nd.array(inputs[n]) for n in names]).asnumpy())
"""


def _nested_lstm():
    """A hybridized parent tracing an LSTM with Symbols: zero states made in the graph."""
    net = mx.gluon.nn.HybridSequential()
    net.add(rnn.LSTM(4, layout="NTC", num_layers=2), mx.gluon.nn.Dense(2, flatten=False))
    return net


def _oracle(*args):
    import subprocess

    if not os.path.exists(ORACLE):
        pytest.skip(f"the real MXNet is not installed at {ORACLE}")
    done = subprocess.run([ORACLE, *map(str, args)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.oracle
@pytest.mark.parametrize("build", ["rnn.LSTM(4, num_layers=2, bidirectional=True)",
                                   "rnn.GRU(3, layout='NTC', num_layers=2)",
                                   "rnn.RNN(3, activation='tanh', bidirectional=True)",
                                   "_nested_lstm()"])
def test_real_mxnet_runs_hybridgpu_exports(build, tmp_path):
    block = eval(build)  # noqa: S307
    block.initialize(mx.init.Uniform(0.5))
    block.hybridize()
    x = mx.nd.random.uniform(-1, 1, shape=(4, 3, 2))
    want = block(x).asnumpy()
    block.export(str(tmp_path / "net"))
    graph = json.loads((tmp_path / "net-symbol.json").read_text())
    names = [graph["nodes"][i]["name"] for i in graph["arg_nodes"]]
    names = [n for n in names if n.startswith("data")]
    layer = block if hasattr(block, "begin_state") else block[0]
    states = layer.begin_state(batch_size=x.shape[layer._layout.find("N")])
    arrays = dict(zip(names, [x] + (states if len(names) > 1 else [])))
    np.savez(tmp_path / "inputs.npz", **{n: a.asnumpy() for n, a in arrays.items()})
    _oracle("-c", _MXNET_RUNS_EXPORT, tmp_path, *names)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=RTOL, atol=ATOL)


@pytest.mark.oracle
def test_generator_reproduces_fixtures(tmp_path):
    _oracle(os.path.join(HERE, "fixtures", "make_mxnet_rnn_fixtures.py"), "--out", tmp_path)
    for name in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, name), "rb") as kept:
            assert (tmp_path / name).read_bytes() == kept.read(), name


def test_infer_shape_completes_the_input_size():
    layer = rnn.GRU(3, bidirectional=True)
    layer.initialize()
    layer.infer_shape(mx.nd.ones((2, 4, 5)), [mx.nd.zeros((2, 4, 3))])
    assert layer.l0_i2h_weight.shape == (9, 5) and layer.r0_i2h_weight.shape == (9, 5)
    assert layer.l0_i2h_weight.data().shape == (9, 5)


def test_mxnet_module_paths_hold_the_same_names():
    """Code written against MXNet imports cells and helpers from ``gluon.rnn.rnn_cell``."""
    from hybridgpu.gluon.rnn import rnn_cell, rnn_layer

    for name in ("RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell",
                 "SequentialRNNCell", "HybridSequentialRNNCell", "DropoutCell", "ModifierCell",
                 "ZoneoutCell", "ResidualCell", "BidirectionalCell"):
        assert getattr(rnn_cell, name) is getattr(rnn, name)
    for name in ("RNN", "LSTM", "GRU"):
        assert getattr(rnn_layer, name) is getattr(rnn, name)
    steps, axis, F, batch = rnn_cell._format_sequence(4, mx.nd.ones((2, 4, 3)), "NTC", False)
    assert (len(steps), axis, F, batch) == (4, 1, mx.nd, 2)
