"""``gluon.nn`` basic layers and activations against the real MXNet 1.9.1.

The fixtures in ``tests/fixtures/mxnet_gluon_layers/`` were written by
``make_mxnet_gluon_layer_fixtures.py`` under the oracle. Each case is rebuilt here with
hybridgpu by the same ``build`` function, given the same weights (a formula of the parameter's
position and name) and input, and must give MXNet's parameter names (full and structural),
shapes, grad_req, ``repr``, outputs (imperative and hybridized), exported symbol JSON and, for
BatchNorm nets, train-mode outputs and running statistics. Then: constructor signatures,
deferred initialization, errors that name the layer, containers, Dropout in training.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import hybridgpu
import hybridgpu.gluon
import hybridgpu.gluon.nn
from hybridgpu import initializer, modes, nd, sym
from hybridgpu.base import MXNetError
from hybridgpu.gluon import DeferredInitializationError, nn

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_gluon_layer_fixtures as gen  # noqa: E402
from fixture_files import assert_reproduced  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mxnet_gluon_layers"
ORACLE = ROOT / ".oracle" / "bin" / "python"
DOC = json.loads((FIXTURES / "cases.json").read_text())
TABLE = DOC["cases"]
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))
CASES = sorted(TABLE)
HYBRID = [c for c in CASES if TABLE[c]["hybrid"]]
TRAIN = [c for c in CASES if TABLE[c]["train"]]

#: hybridgpu seen through the names the generator uses (``mx.gluon.nn``, ``mx.init``, ...).
HG = types.SimpleNamespace(nd=nd, name=hybridgpu.name, gluon=hybridgpu.gluon, init=initializer)


def build(case):
    with hybridgpu.name.NameManager():
        return gen.CASES[case]["build"](HG)


def _input(case):
    x = ARRAYS[f"{case}/in"]
    return nd.array(x, dtype=x.dtype)


def _close(got, want, what):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != MXNet's {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != MXNet's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)


def ready(case, hybridize):
    """The case's block, initialized (deferred init completed by one call) and given the
    formula weights, imperative or hybridized."""
    block = build(case)
    block.initialize()
    if hybridize:
        block.hybridize()
    block(_input(case))
    gen.set_weights(HG, block)
    return block


def _exported(block, tmp_path, name="net"):
    sym_file, params_file = block.export(str(tmp_path / name))
    return json.loads(pathlib.Path(sym_file).read_text()), nd.load(params_file) or {}


# -- against MXNet ---------------------------------------------------------------------------

@pytest.mark.parametrize("cls", sorted(DOC["signatures"]))
def test_constructor_signature_matches_mxnet(cls):
    got = gen.signature_table(HG)[cls]
    assert got == DOC["signatures"][cls]


@pytest.mark.parametrize("case", CASES)
def test_names_shapes_and_repr_match_mxnet(case):
    want = TABLE[case]
    block = build(case)
    assert repr(block) == want["repr_before"]
    assert gen.param_table(block) == want["params_before"]
    block.initialize()
    block(_input(case))
    assert repr(block) == want["repr_after"]
    assert gen.param_table(block) == want["params_after"]


@pytest.mark.parametrize("case", CASES)
def test_imperative_output_matches_mxnet(case):
    block = ready(case, hybridize=False)
    _close(block(_input(case)), ARRAYS[f"{case}/out"], f"{case} imperative")


@pytest.mark.parametrize("case", HYBRID)
def test_hybridized_output_matches_mxnet_and_imperative(case):
    block = ready(case, hybridize=False)
    imperative = block(_input(case)).asnumpy()
    block.hybridize()
    _close(block(_input(case)), ARRAYS[f"{case}/out"], f"{case} hybridized")
    _close(block(_input(case)), imperative, f"{case} hybridized (replay) vs imperative")


@pytest.mark.parametrize("hybridize_first", [True, False], ids=["hybrid_first", "imperative_first"])
@pytest.mark.parametrize("case", HYBRID)
def test_exported_json_and_params_match_mxnet(case, hybridize_first, tmp_path):
    block = ready(case, hybridize=hybridize_first)
    if not hybridize_first:
        block.hybridize()
    block(_input(case))
    graph, params = _exported(block, tmp_path)
    assert graph == TABLE[case]["symbol"]
    assert sorted(params) == TABLE[case]["exported_params"]
    weights = {p.name: p for p in block.collect_params().values()}
    for key, value in params.items():
        _close(value, weights[key.split(":", 1)[1]].data().asnumpy(), key)


#: MXNet's BatchNorm op with ``fix_gamma=True`` (a layer built with ``scale=False``) writes 1s
#: into gamma on every forward; hybridgpu's op leaves gamma as it was set (it is not used then).
GAMMA_OVERWRITTEN_BY_MXNET = {("batchnorm_axis_global", "gamma")}


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", TRAIN)
def test_train_mode_output_and_running_stats_match_mxnet(case, hybridize):
    block = ready(case, hybridize=hybridize)
    with modes.training(True):
        _close(block(_input(case)), ARRAYS[f"{case}/train_out"], f"{case} train output")
    order = {id(p): k for k, p in enumerate(block.collect_params().values())}
    for key, param in block._collect_params_with_prefix().items():
        want = ARRAYS[f"{case}/train/{key}"]
        if (case, key) in GAMMA_OVERWRITTEN_BY_MXNET:
            assert (want == 1).all()
            want = gen.weights(order[id(param)], param.name, param.shape, "float32")
        _close(param.data(), want, f"{case} {key} after train step")
    # back in inference mode the updated running statistics are used, in both modes alike
    inference = block(_input(case)).asnumpy()
    block.hybridize(not hybridize)
    _close(block(_input(case)), inference, f"{case} inference after train step")


# -- deferred initialization and symbols -----------------------------------------------------

def test_deferred_initialization_completes_on_first_forward():
    with hybridgpu.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation="relu"), nn.BatchNorm(), nn.Dense(2))
    net.initialize()
    assert net[0].weight.shape == (4, 0) and net[1].gamma.shape == (0,)
    with pytest.raises(DeferredInitializationError, match="hybridsequential0_dense0_weight"):
        net[0].weight.data()
    net(nd.ones((3, 7)))
    assert [p.shape for p in net.collect_params().values()] == [
        (4, 7), (4,), (4,), (4,), (4,), (4,), (2, 4), (2,)]
    assert net[1].running_var.data().asnumpy().tolist() == [1.0] * 4
    assert net[1].beta.grad_req == "write" and net[1].running_mean.grad_req == "null"


def test_deferred_initialization_through_hybridized_call():
    layer = nn.Dense(3, bias_initializer="ones")
    layer.initialize()
    layer.hybridize()
    assert layer(nd.ones((2, 4))).shape == (2, 3)
    assert layer.weight.shape == (3, 4)
    assert layer.bias.data().asnumpy().tolist() == [1.0, 1.0, 1.0]


def test_layers_compose_on_symbols():
    with hybridgpu.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation="tanh"), nn.BatchNorm(), nn.PReLU())
    out = net(sym.var("data"))
    assert isinstance(out, sym.Symbol)
    assert out.list_arguments() == [
        "data", "hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
        "hybridsequential0_batchnorm0_gamma", "hybridsequential0_batchnorm0_beta",
        "hybridsequential0_prelu0_alpha"]
    assert out.list_auxiliary_states() == ["hybridsequential0_batchnorm0_running_mean",
                                           "hybridsequential0_batchnorm0_running_var"]
    assert out.name == "hybridsequential0_prelu0_fwd"


def test_batchnorm_keeps_float32_statistics_when_cast_to_float16():
    bn = nn.BatchNorm(in_channels=2)
    bn.cast("float16")
    assert np.dtype(bn.gamma.dtype) == np.float32
    dense = nn.Dense(2, in_units=2)
    dense.cast("float16")
    assert np.dtype(dense.weight.dtype) == np.float16


# -- errors name the layer -------------------------------------------------------------------

@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_dense_wrong_input_names_layer_and_shapes(hybridize):
    layer = nn.Dense(4, in_units=5, prefix="fc_")
    layer.initialize()
    layer.hybridize(hybridize)
    with pytest.raises(MXNetError) as info:
        layer(nd.ones((2, 6)))
    message = str(info.value)
    assert "Dense 'fc'" in message and "(2, 6)" in message
    assert "expects 5 input features" in message and "(4, 5)" in message


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("make, shape, expect", [
    (lambda: nn.BatchNorm(in_channels=3, prefix="bn_"), (2, 4, 2), "3 channels on axis 1"),
    (lambda: nn.LayerNorm(in_channels=3, prefix="bn_"), (2, 4), "3 channels on axis -1"),
    (lambda: nn.InstanceNorm(axis=2, in_channels=3, prefix="bn_"), (2, 2, 4),
     "3 channels on axis 2"),
    (lambda: nn.GroupNorm(num_groups=3, prefix="bn_"), (2, 4, 2), "multiple of 3 channels"),
], ids=["batchnorm", "layernorm", "instancenorm", "groupnorm"])
def test_norm_wrong_channels_names_layer(make, shape, expect, hybridize):
    layer = make()
    layer.initialize()
    layer.hybridize(hybridize)
    with pytest.raises(MXNetError) as info:
        layer(nd.ones(shape))
    message = str(info.value)
    assert f"{type(layer).__name__} 'bn'" in message and str(shape) in message
    assert expect in message


def test_error_after_deferred_init_names_layer_in_container():
    with hybridgpu.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3))
    net.initialize()
    net(nd.ones((1, 5)))
    net.hybridize()
    with pytest.raises(MXNetError, match=r"Dense 'hybridsequential0_dense0'.*\(1, 7\)"):
        net(nd.ones((1, 7)))


@pytest.mark.parametrize("make, error, match", [
    (lambda: nn.Lambda("no_such_op"), ValueError, "'no_such_op' is not found in ndarray"),
    (lambda: nn.HybridLambda("no_such_op"), ValueError, "not found in symbol/ndarray"),
    (lambda: nn.Lambda(3), ValueError, "Unrecognized function in lambda: 3"),
    (lambda: nn.HybridLambda(None), ValueError, "Unrecognized function in lambda: None"),
    (lambda: nn.LeakyReLU(-0.1), ValueError, "must be no less than 0"),
    (lambda: nn.Dropout(1.5), ValueError, r"rate must be in \[0, 1\], got 1.5"),
    (lambda: nn.HybridSequential().add(nn.Lambda("tanh")), ValueError,
     "Children of HybridBlock must also be HybridBlock"),
])
def test_bad_arguments_raise_clear_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


# -- containers -------------------------------------------------------------------------------

def test_sequential_indexing_len_and_slices():
    with hybridgpu.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(3), nn.Activation("relu"), nn.Dense(2))
    assert len(net) == 3 and isinstance(net[1], nn.Activation) and net[-1] is net[2]
    head = net[:2]
    assert type(head) is nn.HybridSequential and head.prefix == "hybridsequential0_"
    assert list(head._children.values()) == [net[0], net[1]]
    assert repr(head) == ("HybridSequential(\n  (0): Dense(None -> 3, linear)\n"
                          "  (1): Activation(relu)\n)")
    net.initialize()
    x = nd.ones((2, 4))
    np.testing.assert_allclose(net(x).asnumpy(), net[2](head(x)).asnumpy(), rtol=1e-6)


def test_sequential_passes_tuple_outputs_on_as_extra_arguments():
    class Split(hybridgpu.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + 1, x * 10

    class Add(hybridgpu.gluon.HybridBlock):
        def hybrid_forward(self, F, x, y):
            return x + y

    for container in (nn.Sequential, nn.HybridSequential):
        net = container()
        net.add(Split(), Add())
        assert net(nd.array([1.0])).asnumpy().tolist() == [12.0]
        tail = container()
        tail.add(Split())
        out = tail(nd.array([1.0]))
        assert isinstance(out, tuple) and [o.asscalar() for o in out] == [2.0, 10.0]


def test_sequential_of_hybrid_blocks_warns_on_hybridize():
    net = nn.Sequential(prefix="seq_")
    net.add(nn.Dense(2))
    with pytest.warns(UserWarning, match="'seq_' are HybridBlocks. Consider using "
                                         "HybridSequential"):
        net.hybridize()
    mixed = nn.Sequential()
    mixed.add(nn.Dense(2), nn.Lambda("tanh"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mixed.hybridize()


def test_concatenate_names_of_mxnet_2():
    with hybridgpu.name.NameManager():
        net = nn.HybridConcatenate(axis=0)
        plain = nn.Concatenate()
    assert net.prefix == "hybridconcatenate0_" and plain.prefix == "concatenate0_"
    net.add(nn.Identity(), nn.HybridLambda("negative"))
    net.hybridize()
    assert net(nd.array([1.0, 2.0])).asnumpy().tolist() == [1.0, 2.0, -1.0, -2.0]
    assert issubclass(nn.HybridConcurrent, nn.HybridConcatenate)
    assert issubclass(nn.Concurrent, nn.Concatenate)


# -- Dropout in training ---------------------------------------------------------------------

@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_dropout_in_training_zeroes_and_rescales(hybridize):
    layer = nn.Dropout(0.5, axes=(1,))
    layer.hybridize(hybridize)
    x = nd.array(np.arange(1, 1 + 40 * 6, dtype=np.float32).reshape(40, 6))
    with modes.training(True):
        out = layer(x).asnumpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], x.asnumpy()[kept] * 2, rtol=1e-6)
    assert (kept == kept[:, :1]).all(), "axes=(1,) shares one mask along axis 1"
    assert 0 < kept[:, 0].sum() < 40
    np.testing.assert_array_equal(layer(x).asnumpy(), x.asnumpy())  # not training: identity


# -- on a GPU --------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_gpu_output_matches_mxnet(case, gpu_available):
    ctx = gpu_available
    x = ARRAYS[f"{case}/in"]
    x = nd.array(x, ctx=ctx, dtype=x.dtype)
    block = build(case)
    block.initialize(ctx=ctx)
    block(x)  # deferred initialization, imperative
    for k, (name, param) in enumerate(block.collect_params().items()):
        dtype = np.dtype(param.dtype).name
        param.set_data(nd.array(gen.weights(k, name, param.shape, dtype), ctx=ctx, dtype=dtype))
    out = block(x)
    assert out.context == ctx
    _close(out, ARRAYS[f"{case}/out"], f"{case} on {ctx}, imperative")
    if TABLE[case]["hybrid"]:
        block.hybridize()
        _close(block(x), ARRAYS[f"{case}/out"], f"{case} on {ctx}, hybridized")


# -- the generator ---------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle reproduces the committed fixtures (byte for
    byte on the machine that wrote them; ``fixture_files.assert_reproduced`` elsewhere)."""
    subprocess.run([str(ORACLE), str(FIXTURES.parent / "make_mxnet_gluon_layer_fixtures.py"),
                    "--out", str(tmp_path)], check=True, capture_output=True, cwd=ROOT)
    assert_reproduced(tmp_path, FIXTURES, ["cases.json", "arrays.npz"],
                      "tests/fixtures/make_mxnet_gluon_layer_fixtures.py")
