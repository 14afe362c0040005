"""``gluon.SymbolBlock`` and the export/import round trip, against files the real MXNet 1.9.1
wrote (``tests/fixtures/mxnet_exports/``, made by ``fixtures/make_mxnet_export_fixtures.py``).

Both directions: ``SymbolBlock.imports`` of MXNet's exports gives MXNet's outputs and parameter
names and re-exports MXNet's JSON; the same Gluon code run with hybridgpu exports the files
MXNet exports (JSON and ``.params``), and the real MXNet loads them (``oracle`` tests).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import warnings

import numpy as np
import pytest

import hybridgpu as mx
import hybridgpu.gluon.nn  # noqa: F401  (mx.gluon.nn for the shared builders)
from hybridgpu import gluon
from hybridgpu.base import MXNetError
from hybridgpu.gluon.symbol_block import SymbolBlock

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_exports"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"
TABLE = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))
CASES = sorted(TABLE)

_spec = importlib.util.spec_from_file_location(
    "make_mxnet_export_fixtures", HERE / "fixtures" / "make_mxnet_export_fixtures.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)
GLUON_CASES = sorted(gen.BUILDERS)
_spec = importlib.util.spec_from_file_location("fixture_files",
                                               HERE / "fixtures" / "fixture_files.py")
fixture_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fixture_files)


def _files(case, folder):
    """``(symbol file, params file)`` of ``case``; mobilenet's params (not kept, 900 KB) are
    written to ``folder`` from the generator's ``param_values`` under MXNet's names."""
    symbol_file = FIXTURES / f"{case}-symbol.json"
    if TABLE[case]["keep_params"]:
        return symbol_file, FIXTURES / f"{case}-0000.params"
    record, arrays = TABLE[case], {}
    for name, shape in record["shapes"].items():
        kind = "aux" if name in record["aux_states"] else "arg"
        arrays[f"{kind}:{name}"] = mx.nd.array(gen.param_values(name, tuple(shape)),
                                               dtype=record["dtype"])
    params_file = folder / f"{case}-0000.params"
    mx.nd.save(str(params_file), arrays)
    return symbol_file, params_file


def _imported(case, folder):
    symbol_file, params_file = _files(case, folder)
    return SymbolBlock.imports(str(symbol_file), list(TABLE[case]["inputs"]), str(params_file))


def _inputs(case):
    record = TABLE[case]
    return [mx.nd.array(ARRAYS[f"{case}/in/{n}"], dtype=record["dtype"])
            for n in record["inputs"]]


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _assert_mxnet_outputs(case, outs):
    outs = _as_list(outs)
    assert len(outs) == TABLE[case]["outputs"]
    for k, out in enumerate(outs):
        expected = ARRAYS[f"{case}/out{k}"]
        assert out.dtype == expected.dtype, f"{case} output {k}"
        np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{case} output {k}")


def _train_mode():
    """``autograd.train_mode()`` (the autograd package may not be written yet)."""
    autograd = getattr(mx, "autograd", None)
    return autograd.train_mode() if autograd else mx.modes.training(True)


def _usable(net):
    """``initialize()`` draws every SymbolBlock parameter from Uniform, moving variances too
    (as MXNet does: the graph's ``__init__`` hints are not used); give those ``One``."""
    for name, param in net.collect_params().items():
        if name.endswith("moving_var"):
            param.init = mx.init.One()
    return net


def _fc_bn_symbol():
    data = mx.sym.var("data")
    h = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn")
    return data, mx.sym.Activation(h, act_type="relu", name="act")


# -- MXNet's exports in hybridgpu -------------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_imports_gives_mxnet_outputs(case, tmp_path):
    net = _imported(case, tmp_path)
    _assert_mxnet_outputs(case, net(*_inputs(case)))
    net.hybridize()
    _assert_mxnet_outputs(case, net(*_inputs(case)))


@pytest.mark.parametrize("case", CASES)
def test_imports_lists_mxnet_parameter_names(case, tmp_path):
    record = TABLE[case]
    net = _imported(case, tmp_path)
    params = net.collect_params()
    assert list(params.keys()) == record["params"]
    assert {k: p.grad_req for k, p in params.items()} == record["grad_req"]
    assert {k: list(p.shape) for k, p in params.items()} == record["shapes"]
    graph = mx.sym.load(str(FIXTURES / f"{case}-symbol.json"))
    assert graph.list_arguments() == record["arguments"]
    assert graph.list_auxiliary_states() == record["aux_states"]
    assert net.prefix == "" and net.name.startswith("symbolblock")


def test_imports_keeps_the_files_dtype():
    net = SymbolBlock.imports(str(FIXTURES / "mlp_f64-symbol.json"), "data",
                              str(FIXTURES / "mlp_f64-0000.params"))
    assert {np.dtype(p.dtype) for p in net.collect_params().values()} == {np.dtype(np.float64)}
    _assert_mxnet_outputs("mlp_f64", net(*_inputs("mlp_f64")))


def test_imports_without_params_file_makes_float32_parameters_to_initialize():
    net = SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), ["data"])
    params = net.collect_params()
    assert list(params.keys()) == TABLE["mlp"]["params"]
    assert {np.dtype(p.dtype) for p in params.values()} == {np.dtype(np.float32)}
    with pytest.raises(MXNetError, match="'mlp_dense0_weight' has not been initialized"):
        net(*_inputs("mlp"))
    net.initialize()  # Uniform; MXNet's Xavier refuses SymbolBlock biases too (no init attr)
    assert net(*_inputs("mlp")).shape == (4, 3)
    assert params["mlp_dense0_weight"].shape == (16, 10)


def test_new_batch_size_retraces_and_ctx_places_the_parameters():
    net = SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), ["data"],
                              str(FIXTURES / "mlp-0000.params"), ctx=mx.cpu(1))
    assert all(p.list_ctx() == [mx.cpu(1)] for p in net.collect_params().values())
    net.hybridize()
    x = _inputs("mlp")[0]
    full = net(x.as_in_context(mx.cpu(1)))
    assert full.context == mx.cpu(1)
    half = net(x[:2].as_in_context(mx.cpu(1)))
    np.testing.assert_allclose(half.asnumpy(), ARRAYS["mlp/out0"][:2], rtol=1e-5, atol=1e-7)
    _assert_mxnet_outputs("mlp", full)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["convbn", "two_io", "mobilenet0.25"])
def test_imports_on_gpu_gives_mxnet_outputs(case, tmp_path, gpu_available):
    symbol_file, params_file = _files(case, tmp_path)
    net = SymbolBlock.imports(str(symbol_file), list(TABLE[case]["inputs"]), str(params_file),
                              ctx=gpu_available)
    net.hybridize()
    outs = net(*[x.as_in_context(gpu_available) for x in _inputs(case)])
    assert all(o.context == gpu_available for o in _as_list(outs))
    _assert_mxnet_outputs(case, outs)


def test_infer_shape_completes_deferred_parameters():
    data, out = _fc_bn_symbol()
    net = SymbolBlock(out, data)
    net.infer_shape(mx.nd.ones((2, 7)))
    shapes = {k: p.shape for k, p in net.collect_params().items()}
    assert shapes["fc_weight"] == (4, 7) and shapes["bn_moving_mean"] == (4,)


@pytest.mark.parametrize("case", CASES)
def test_reexport_writes_mxnets_files(case, tmp_path):
    net = _imported(case, tmp_path)
    net.hybridize()
    net(*_inputs(case))
    sym_file, params_file = net.export(str(tmp_path / "again"))
    original = (FIXTURES / f"{case}-symbol.json").read_text()
    written = pathlib.Path(sym_file).read_text()
    assert json.loads(written) == json.loads(original)
    assert written == original  # byte for byte, as MXNet writes it
    before = mx.nd.load(str(_files(case, tmp_path)[1]))
    after = mx.nd.load(params_file)
    assert sorted(after) == sorted(before)
    for key, value in before.items():
        np.testing.assert_array_equal(after[key].asnumpy(), value.asnumpy(), err_msg=key)
    again = SymbolBlock.imports(sym_file, list(TABLE[case]["inputs"]), params_file)
    _assert_mxnet_outputs(case, again(*_inputs(case)))


def test_convbn_training_mode_matches_mxnet(tmp_path):
    """Batch statistics in the output; the running statistics end where one MXNet training
    step (forward and backward: its CPU build updates them in the backward) leaves them."""
    net = _imported("convbn", tmp_path)
    net.hybridize()
    with _train_mode():
        out = net(*_inputs("convbn"))
    np.testing.assert_allclose(out.asnumpy(), ARRAYS["convbn/train_out0"], rtol=1e-5, atol=1e-6)
    checked = 0
    for name, param in net.collect_params().items():
        key = f"convbn/after_train/{name}"
        if key in ARRAYS:
            assert not np.allclose(ARRAYS[key], gen.param_values(name, param.shape)), name
            np.testing.assert_allclose(param.data().asnumpy(), ARRAYS[key], rtol=1e-5,
                                       atol=1e-7, err_msg=name)
            checked += 1
    assert checked == 4


# -- the same Gluon code in hybridgpu exports MXNet's files ---------------------------------

@pytest.mark.parametrize("case", GLUON_CASES)
def test_hybridgpu_export_writes_what_mxnet_writes(case, tmp_path):
    net = gen.BUILDERS[case](mx)
    outs = gen._export_gluon(mx, case, net, str(tmp_path))
    _assert_mxnet_outputs(case, outs)
    written = (tmp_path / f"{case}-symbol.json").read_text()
    assert written == (FIXTURES / f"{case}-symbol.json").read_text()
    mine = mx.nd.load(str(tmp_path / f"{case}-0000.params"))
    theirs = mx.nd.load(str(FIXTURES / f"{case}-0000.params"))
    assert sorted(mine) == sorted(theirs)
    for key, value in theirs.items():
        assert mine[key].dtype == value.dtype, key
        np.testing.assert_array_equal(mine[key].asnumpy(), value.asnumpy(), err_msg=key)


def test_export_writes_parameters_in_the_graphs_order(tmp_path):
    """MXNet writes them as the graph reads them, so the files are byte for byte the same."""
    gen._export_gluon(mx, "handwritten", gen.BUILDERS["handwritten"](mx), str(tmp_path))
    mine = (tmp_path / "handwritten-0000.params").read_bytes()
    assert mine == (FIXTURES / "handwritten-0000.params").read_bytes()


def test_export_before_any_forward_raises_clear_runtime_error(tmp_path):
    net = gen.BUILDERS["mlp"](mx)
    net.initialize()
    net.hybridize()
    with pytest.raises(RuntimeError, match="run forward with this block at least once"):
        net.export(str(tmp_path / "never"))
    assert not list(tmp_path.iterdir())


def test_symbol_block_exports_before_its_first_call(tmp_path):
    """MXNet writes an empty .params here; hybridgpu writes the loaded parameters."""
    net = _imported("handmade", tmp_path)
    sym_file, params_file = net.export(str(tmp_path / "early"))
    assert pathlib.Path(sym_file).read_text() == (FIXTURES / "handmade-symbol.json").read_text()
    assert sorted(mx.nd.load(params_file)) == sorted(mx.nd.load(
        str(FIXTURES / "handmade-0000.params")))


# -- building SymbolBlocks -------------------------------------------------------------------

def test_parameters_are_the_graph_variables_with_aux_states_not_trained():
    data, out = _fc_bn_symbol()
    net = SymbolBlock(out, data)
    params = net.collect_params()
    assert list(params.keys()) == ["fc_weight", "fc_bias", "bn_gamma", "bn_beta",
                                   "bn_moving_mean", "bn_moving_var"]
    assert [p.grad_req for p in params.values()] == ["write"] * 4 + ["null"] * 2
    # what the graph determines is known before any data; the rest waits for a batch
    assert params["fc_weight"].shape == (4, 0)
    _usable(net).initialize()
    out = net(mx.nd.ones((2, 3)))
    assert np.isfinite(out.asnumpy()).all()
    assert out.shape == (2, 4) and params["fc_weight"].shape == (4, 3)
    assert params["bn_moving_var"].shape == (4,)
    assert repr(net) == "SymbolBlock(\n<Symbol act> : 1 -> 1\n)"


def test_call_before_initialize_names_the_parameter():
    data, out = _fc_bn_symbol()
    with pytest.raises(MXNetError, match="Parameter 'fc_weight' has not been initialized"):
        SymbolBlock(out, data)(mx.nd.ones((2, 3)))


def test_input_dtype_types_the_parameters():
    data = mx.sym.var("data", dtype="float64")
    net = SymbolBlock(mx.sym.FullyConnected(data, num_hidden=2, name="fc"), data)
    assert [np.dtype(p.dtype) for p in net.collect_params().values()] == [np.float64] * 2


def test_symbol_call_composes_the_graph():
    data, out = _fc_bn_symbol()
    net = SymbolBlock(out, data)
    x = mx.sym.var("x")
    composed = net(mx.sym.relu(x))
    assert composed.list_arguments() == ["x", "fc_weight", "fc_bias", "bn_gamma", "bn_beta"]
    assert composed.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert out.list_arguments()[0] == "data", "the wrapped graph is left unchanged"


def test_multiple_inputs_and_outputs_compose_to_a_list():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    net = SymbolBlock([a + b, mx.sym.FullyConnected(a * b, num_hidden=2, name="fc")], [a, b])
    assert list(net.collect_params()) == ["fc_weight", "fc_bias"]
    outs = net(mx.sym.var("p"), mx.sym.var("q"))
    assert isinstance(outs, list) and len(outs) == 2
    assert outs[1].list_arguments() == ["p", "q", "fc_weight", "fc_bias"]
    net.initialize("ones")
    total, fc = net(mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, 4.0]]))
    assert total.asnumpy().tolist() == [[4.0, 6.0]]
    assert fc.asnumpy().tolist() == [[12.0, 12.0]]  # 3 + 8 + bias 1
    with pytest.raises(ValueError, match=r"expects its inputs \['a', 'b'\]"):
        net(mx.nd.array([[1.0, 2.0]]))


def test_symbol_block_inside_a_hybridized_block():
    data, out = _fc_bn_symbol()
    features = SymbolBlock(out, data)

    class Head(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.features = features
                self.out = mx.gluon.nn.Dense(2)

        def hybrid_forward(self, F, x):
            return self.out(F.relu(self.features(x)))

    net = Head(prefix="head_")
    _usable(features)
    net.initialize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (3, 5)))
    eager = net(x).asnumpy()
    assert np.isfinite(eager).all() and np.abs(eager).max() > 0
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-6)
    assert "fc_weight" in net.collect_params()


def test_shared_parameters_are_the_same_objects():
    data, out = _fc_bn_symbol()
    first = SymbolBlock(out, data)
    second = SymbolBlock(out, data, params=first.collect_params())
    for name, param in second.collect_params().items():
        assert param is first.collect_params()[name]
    first.initialize("ones")
    x = mx.nd.ones((1, 3))
    np.testing.assert_array_equal(first(x).asnumpy(), second(x).asnumpy())


def test_feature_extraction_from_internals_shares_parameters(tmp_path):
    whole = _imported("mlp", tmp_path)
    internals = mx.sym.load(str(FIXTURES / "mlp-symbol.json")).get_internals()
    hidden = internals["mlp_dense0_relu_fwd_output"]
    features = SymbolBlock(hidden, mx.sym.var("data"), params=whole.collect_params())
    assert list(features.collect_params()) == ["mlp_dense0_weight", "mlp_dense0_bias"]
    x = _inputs("mlp")[0]
    w, b = (whole.collect_params()[f"mlp_dense0_{k}"].data().asnumpy() for k in ("weight", "bias"))
    expected = np.maximum(x.asnumpy() @ w.T + b, 0)
    np.testing.assert_allclose(features(x).asnumpy(), expected, rtol=1e-5, atol=1e-7)


def test_save_and_load_parameters_round_trip(tmp_path):
    net = _imported("convbn", tmp_path)
    net.save_parameters(str(tmp_path / "short.params"))
    # MXNet's file: the names less their common prefix
    assert "conv0_weight" in mx.nd.load(str(tmp_path / "short.params"))
    data = mx.sym.var("data")
    other = SymbolBlock(mx.sym.load(str(FIXTURES / "convbn-symbol.json")), data)
    other.load_parameters(str(tmp_path / "short.params"))
    _assert_mxnet_outputs("convbn", other(*_inputs("convbn")))


def test_cast_to_float16_keeps_batchnorm_parameters_float32(tmp_path):
    net = _imported("convbn", tmp_path)
    net.cast("float16")
    dtypes = {k: np.dtype(p.dtype) for k, p in net.collect_params().items()}
    assert dtypes["convbn_conv0_weight"] == np.float16
    for name in ("batchnorm0_gamma", "batchnorm0_beta", "batchnorm1_running_mean",
                 "batchnorm1_running_var"):
        assert dtypes[f"convbn_{name}"] == np.float32, name


# -- errors ------------------------------------------------------------------------------------

def _without(tmp_path, key):
    arrays = mx.nd.load(str(FIXTURES / "mlp-0000.params"))
    del arrays[key]
    path = tmp_path / "partial.params"
    mx.nd.save(str(path), arrays)
    return str(path)


def test_params_file_missing_a_parameter_names_it(tmp_path):
    partial = _without(tmp_path, "arg:mlp_dense1_bias")
    with pytest.raises(MXNetError, match="'mlp_dense1_bias' is missing in file .*partial"
                                         r".*allow_missing=True"):
        SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), ["data"], partial)
    net = SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), ["data"], partial,
                              allow_missing=True)
    with pytest.raises(MXNetError, match="'mlp_dense1_bias' has not been initialized"):
        net(*_inputs("mlp"))
    net.collect_params()["mlp_dense1_bias"].initialize()
    assert net(*_inputs("mlp")).shape == (4, 3)


def test_params_file_with_an_extra_array_needs_ignore_extra(tmp_path):
    arrays = mx.nd.load(str(FIXTURES / "mlp-0000.params"))
    arrays["arg:stray"] = mx.nd.ones((2,))
    path = str(tmp_path / "extra.params")
    mx.nd.save(path, arrays)
    with pytest.raises(MXNetError, match="'stray' .* not present.*ignore_extra=True"):
        SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), "data", path)
    net = SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), "data", path,
                              ignore_extra=True)
    _assert_mxnet_outputs("mlp", net(*_inputs("mlp")))


def _with(tmp_path, key, value):
    arrays = mx.nd.load(str(FIXTURES / "mlp-0000.params"))
    arrays[key] = value
    path = tmp_path / "changed.params"
    mx.nd.save(str(path), arrays)
    return str(path)


def test_params_file_of_wrong_shapes_is_refused(tmp_path):
    # a shape the graph alone determines is checked when the file is loaded ...
    path = _with(tmp_path, "arg:mlp_dense0_bias", mx.nd.ones((15,)))
    with pytest.raises(MXNetError, match=r"'mlp_dense0_bias'.*\(16,\) vs saved \(15,\)"):
        SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), "data", path)
    # ... one that needs the data's shape on the first call, naming the node
    path = _with(tmp_path, "arg:mlp_dense1_weight", mx.nd.ones((8, 5)))
    net = SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), "data", path)
    with pytest.raises(MXNetError, match=r"mlp_dense1_fwd.*\(8, 5\)"):
        net(*_inputs("mlp"))


def test_input_name_not_in_the_graph_is_named():
    with pytest.raises(MXNetError, match=r"input 'x' is not a variable of the graph in "
                                         r".*mlp-symbol.json.*'data'"):
        SymbolBlock.imports(str(FIXTURES / "mlp-symbol.json"), ["x"],
                            str(FIXTURES / "mlp-0000.params"))


def test_constructor_input_errors():
    data, out = _fc_bn_symbol()
    hidden = out.get_internals()["fc_output"]
    with pytest.raises(MXNetError, match="inputs must be variables.*operator FullyConnected"):
        SymbolBlock(out, hidden)
    with pytest.raises(MXNetError, match="'data' is given twice"):
        SymbolBlock(out, [data, data])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SymbolBlock(out, [data, mx.sym.var("unused")])
    assert any("'unused' is not a variable of the graph" in str(w.message) for w in caught)


def test_call_with_a_wrong_input_shape_names_the_node(tmp_path):
    net = _imported("mlp", tmp_path)
    with pytest.raises(MXNetError, match="mlp_dense0_fwd"):
        net(mx.nd.ones((4, 11)))


# -- the real MXNet ------------------------------------------------------------------------------

def _oracle(script, *args):
    if not ORACLE.exists():
        pytest.skip(f"the real MXNet is not installed at {ORACLE}")
    done = subprocess.run([str(ORACLE), "-c", script, *map(str, args)], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.oracle
def test_generator_reproduces_fixtures(tmp_path):
    _oracle("import runpy, sys; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')",
            HERE / "fixtures" / "make_mxnet_export_fixtures.py", tmp_path)
    kept = sorted(p.name for p in FIXTURES.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == kept
    fixture_files.assert_reproduced(tmp_path, FIXTURES, kept,
                                    "tests/fixtures/make_mxnet_export_fixtures.py")


_MXNET_IMPORTS = """
import json, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
spec = json.load(open(folder + "/spec.json"))
inputs = dict(np.load(folder + "/inputs.npz"))
outputs = {}
for prefix, names in spec.items():
    net = mx.gluon.SymbolBlock.imports(f"{folder}/{prefix}-symbol.json", names,
                                       f"{folder}/{prefix}-0000.params")
    out = net(*[mx.nd.array(inputs[f"{prefix}/{n}"], dtype=inputs[f"{prefix}/{n}"].dtype)
                for n in names])
    for k, o in enumerate(out if isinstance(out, (list, tuple)) else [out]):
        outputs[f"{prefix}/{k}"] = o.asnumpy()
np.savez(folder + "/outputs.npz", **outputs)
"""


@pytest.mark.oracle
def test_real_mxnet_imports_hybridgpu_exports(tmp_path):
    spec, inputs, expected = {}, {}, {}
    for case in GLUON_CASES:  # built and exported by hybridgpu
        outs = gen._export_gluon(mx, case, gen.BUILDERS[case](mx), str(tmp_path))
        spec[case] = list(gen.CASES[case]["inputs"])
        for name, array in zip(spec[case], _inputs(case)):
            inputs[f"{case}/{name}"] = array.asnumpy()
        expected.update({f"{case}/{k}": o.asnumpy() for k, o in enumerate(_as_list(outs))})
    for case in ("handmade", "mobilenet0.25"):  # imported, then re-exported by hybridgpu
        net = _imported(case, tmp_path)
        net.hybridize()
        outs = _as_list(net(*_inputs(case)))
        net.export(str(tmp_path / f"re_{case}"))
        spec[f"re_{case}"] = list(TABLE[case]["inputs"])
        for name, array in zip(spec[f"re_{case}"], _inputs(case)):
            inputs[f"re_{case}/{name}"] = array.asnumpy()
        expected.update({f"re_{case}/{k}": o.asnumpy() for k, o in enumerate(outs)})
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    np.savez(tmp_path / "inputs.npz", **inputs)
    _oracle(_MXNET_IMPORTS, tmp_path)
    got = dict(np.load(tmp_path / "outputs.npz"))
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].dtype == value.dtype, key
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-7, err_msg=key)
