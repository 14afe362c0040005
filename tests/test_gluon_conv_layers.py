"""``gluon.nn`` convolution, pooling and padding layers against fixtures written by MXNet 1.9.1
(``tests/fixtures/make_mxnet_gluon_conv_fixtures.py``): signatures, parameter names and shapes
before and after deferred initialization, ``repr``, outputs (rtol 1e-5), exported symbol JSON and
``.params``; imperative versus hybridized runs; and the errors for bad arguments, unsupported
layouts and inputs of the wrong rank or channel count.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx
import hybridgpu.gluon  # noqa: F401  (makes mx.gluon available)
from hybridgpu.base import MXNetError
from hybridgpu.gluon import DeferredInitializationError, nn

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_gluon_conv"
GENERATOR = HERE / "fixtures" / "make_mxnet_gluon_conv_fixtures.py"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"

sys.path.insert(0, str(GENERATOR.parent))
import make_mxnet_gluon_conv_fixtures as gen  # noqa: E402

DOC = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
TABLE = DOC["cases"]
with np.load(FIXTURES / "arrays.npz") as _npz:
    ARRAYS = {key: _npz[key] for key in _npz.files}
CASES = sorted(TABLE)
TOL = {"rtol": 1e-5, "atol": 1e-6}


def _build(case):
    with mx.name.NameManager():
        return gen.CASES[case]["build"](mx)


def _input(case):
    return mx.nd.array(ARRAYS[f"{case}/in"])


def _param_table(block):
    return [[name, list(p.shape)] for name, p in block.collect_params().items()]


def _ready(case, hybridize):
    """Case ``case`` built, initialized, run once (finishing deferred init), given the
    fixture's weights: ``(block, input)``."""
    block, x = _build(case), _input(case)
    block.initialize()
    block.hybridize(hybridize)
    block(x)
    gen.set_weights(mx, block)
    return block, x


# -- against MXNet --------------------------------------------------------------------------

def test_fixtures_cover_every_layer():
    assert sorted(DOC["signatures"]) == sorted(gen.LAYERS)
    assert set(gen.LAYERS) <= set(nn.__all__)
    reprs = "".join(TABLE[c]["repr_after"] for c in CASES)
    missing = [cls for cls in gen.LAYERS if f"{cls}(" not in reprs]
    assert not missing, f"layers without a fixture case: {missing}"


@pytest.mark.parametrize("cls", gen.LAYERS)
def test_signature_is_mxnets(cls):
    assert str(inspect.signature(getattr(nn, cls))) == DOC["signatures"][cls]


@pytest.mark.parametrize("case", CASES)
def test_names_shapes_and_repr_match_mxnet(case):
    want = TABLE[case]
    block = _build(case)
    assert repr(block) == want["repr_before"]
    assert _param_table(block) == want["params_before"]
    block.initialize()
    block(_input(case))  # imperative: completes deferred initialization
    assert repr(block) == want["repr_after"]
    assert _param_table(block) == want["params_after"]


@pytest.mark.parametrize("case", CASES)
def test_hybridized_output_and_export_match_mxnet(case, tmp_path):
    want = TABLE[case]
    block, x = _ready(case, hybridize=True)
    out = block(x)
    assert out.shape == tuple(want["output_shape"])
    np.testing.assert_allclose(out.asnumpy(), ARRAYS[f"{case}/out"], **TOL)
    sym_file, params_file = block.export(str(tmp_path / case))
    assert json.loads(pathlib.Path(sym_file).read_text(encoding="utf-8")) == want["symbol"]
    saved = mx.nd.load(params_file) or {}
    assert sorted(saved) == want["exported_params"]
    for k, (name, param) in enumerate(block.collect_params().items()):
        np.testing.assert_array_equal(saved[f"arg:{name}"].asnumpy(),
                                      gen.weights(k, param.shape))


@pytest.mark.parametrize("case", CASES)
def test_imperative_matches_mxnet_and_hybridized(case):
    block, x = _ready(case, hybridize=False)
    imperative = block(x).asnumpy()
    np.testing.assert_allclose(imperative, ARRAYS[f"{case}/out"], **TOL)
    block.hybridize()
    np.testing.assert_allclose(block(x).asnumpy(), imperative, **TOL)


@pytest.mark.parametrize("case", ["conv1d_deferred", "conv2d_transpose_full", "maxpool2d_full",
                                  "avgpool1d_exclude", "global_avgpool3d", "reflectionpad2d"])
def test_new_input_shape_retraces_like_imperative(case):
    """A hybridized layer given another spatial size (and batch) gives what it gives
    imperatively."""
    block, _ = _ready(case, hybridize=True)
    shape = list(TABLE[case]["input_shape"])
    shape[0] += 1
    shape[-1] += 3
    x = mx.nd.array(gen.make_input(case + "/bigger", tuple(shape)))
    hybrid = block(x).asnumpy()
    block.hybridize(False)
    np.testing.assert_allclose(hybrid, block(x).asnumpy(), **TOL)


@pytest.mark.oracle
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the real MXNet reproduces the committed fixtures."""
    if not ORACLE.exists():
        pytest.skip(f"needs the real MXNet at {ORACLE}")
    run = subprocess.run([str(ORACLE), str(GENERATOR), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=HERE.parent)
    assert run.returncode == 0, f"generator failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    committed = (FIXTURES / "cases.json").read_text(encoding="utf-8")
    assert (tmp_path / "cases.json").read_text(encoding="utf-8") == committed, (
        "cases.json is out of date: run `.oracle/bin/python "
        "tests/fixtures/make_mxnet_gluon_conv_fixtures.py` and commit the result")
    with np.load(tmp_path / "arrays.npz") as npz:
        assert sorted(npz.files) == sorted(ARRAYS)
        for key in npz.files:
            np.testing.assert_array_equal(npz[key], ARRAYS[key], err_msg=key)


# -- deferred initialization ----------------------------------------------------------------

@pytest.mark.parametrize("hybridize", [False, True])
def test_deferred_init_takes_channels_from_first_input(hybridize):
    with mx.name.NameManager():
        conv = nn.Conv2D(4, 3, padding=1)
    conv.initialize()
    assert conv.weight.shape == (4, 0, 3, 3)
    with pytest.raises(DeferredInitializationError, match="conv0_weight"):
        conv.weight.data()
    conv.hybridize(hybridize)
    assert conv(mx.nd.ones((2, 5, 6, 6))).shape == (2, 4, 6, 6)
    assert conv.weight.shape == conv.weight.data().shape == (4, 5, 3, 3)
    assert conv.bias.data().asnumpy().tolist() == [0.0] * 4  # bias_initializer='zeros'
    assert repr(conv).startswith("Conv2D(5 -> 4, ")


def test_deferred_transpose_with_groups():
    """MXNet 1.9 cannot even build Conv2DTranspose(groups=2) without in_channels (its
    construction-time shape inference divides 0 channels by the groups); hybridgpu defers."""
    with mx.name.NameManager():
        up = nn.Conv2DTranspose(6, 2, strides=2, groups=2)
    assert up.weight.shape == (0, 3, 2, 2)
    up.initialize()
    assert up(mx.nd.ones((1, 4, 3, 3))).shape == (1, 6, 6, 6)
    assert up.weight.shape == (4, 3, 2, 2)


def test_weight_initializer_is_used():
    with mx.name.NameManager():
        conv = nn.Conv1D(2, 2, weight_initializer="ones", bias_initializer=mx.init.Constant(3))
    conv.initialize()
    out = conv(mx.nd.ones((1, 3, 4)))
    assert out.asnumpy().tolist() == [[[9.0] * 3] * 2]  # 3 channels * 2 taps * 1 + 3


# -- errors ---------------------------------------------------------------------------------

def _conv2d():
    return nn.Conv2D(4, 3)


def _conv2d_known():
    return nn.Conv2D(4, 3, in_channels=3)


def _conv1d_groups():
    return nn.Conv1D(4, 1, groups=2)


def _conv3d_transpose():
    return nn.Conv3DTranspose(2, 2)


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("make, good, bad", [
    (_conv2d, (1, 3, 5, 5), (2, 2, 5, 5)),
    (_conv2d_known, None, (1, 2, 5, 5)),
    (_conv1d_groups, (1, 4, 5), (1, 6, 5)),
    (_conv3d_transpose, (1, 3, 2, 2, 2), (1, 1, 2, 2, 2)),
], ids=["conv2d", "conv2d_in_channels", "conv1d_groups", "conv3d_transpose"])
def test_wrong_channel_count_names_layer_and_shapes(make, good, bad, hybridize):
    with mx.name.NameManager():
        layer = make()
    layer.initialize()
    layer.hybridize(hybridize)
    channels = 3 if good is None else good[1]
    if good is not None:
        layer(mx.nd.ones(good))
    with pytest.raises(MXNetError) as err:
        layer(mx.nd.ones(bad))
    message = str(err.value)
    expected = (bad[0], channels, *bad[2:])
    assert f"{type(layer).__name__} 'conv0'" in message
    assert f"expected input shape {expected}" in message
    assert f"got shape {bad}" in message
    assert "conv0_weight" in message


@pytest.mark.parametrize("hybridize", [False, True])
@pytest.mark.parametrize("make, shape, want", [
    (lambda: nn.Conv2D(2, 3), (1, 3, 5), "Conv2D 'conv0': expected a 4-D input of layout NCHW"),
    (lambda: nn.MaxPool3D(), (1, 2, 4, 4), "MaxPool3D 'pool0': expected a 5-D input of layout "
                                           "NCDHW (N, C, D, H, W)"),
    (lambda: nn.GlobalAvgPool1D(), (1, 2, 3, 4), "GlobalAvgPool1D 'pool0': expected a 3-D"),
    (lambda: nn.ReflectionPad2D(1), (1, 1, 3, 3, 3), "ReflectionPad2D 'reflectionpad2d0': "
                                                     "expected a 4-D input"),
], ids=["conv2d", "maxpool3d", "globalavgpool1d", "reflectionpad2d"])
def test_input_of_wrong_rank_names_layer(make, shape, want, hybridize):
    with mx.name.NameManager():
        layer = make()
    layer.initialize()
    layer.hybridize(hybridize)
    with pytest.raises(MXNetError) as err:
        layer(mx.nd.ones(shape))
    assert want in str(err.value)
    assert str(shape) in str(err.value)


@pytest.mark.parametrize("make, layout", [
    (lambda: nn.Conv2D(2, 3, layout="NHWC"), "NHWC"),
    (lambda: nn.Conv3DTranspose(2, 3, layout="NDHWC"), "NDHWC"),
    (lambda: nn.Conv1D(2, 3, layout="NCHW"), "NCHW"),
    (lambda: nn.MaxPool1D(layout="NWC"), "NWC"),
    (lambda: nn.AvgPool2D(layout="NHWC"), "NHWC"),
    (lambda: nn.GlobalMaxPool3D(layout="NDHWC"), "NDHWC"),
])
def test_only_channels_first_layouts(make, layout):
    with pytest.raises(MXNetError, match=f"layout '{layout}' is not supported.*channels-first"):
        make()


@pytest.mark.parametrize("make, match", [
    (lambda: nn.Conv2D(5, 3, groups=2), r"Conv2D: channels=5 and in_channels=0 must both be "
                                        r"divisible by groups=2"),
    (lambda: nn.Conv1D(4, 3, groups=2, in_channels=3), r"in_channels=3 .* groups=2"),
    (lambda: nn.Conv2D(2, (3, 3, 3)), r"Conv2D: kernel_size must be an int or a tuple of 2"),
    (lambda: nn.Conv3D(2, 3, strides=0), r"Conv3D: strides must be at least 1"),
    (lambda: nn.Conv2DTranspose(2, 3, strides=2, output_padding=2),
     r"Conv2DTranspose: output_padding \(2, 2\) must be .* smaller than strides \(2, 2\)"),
    (lambda: nn.MaxPool2D(pool_size=(2, 2, 2)), r"MaxPool2D: pool_size must be an int or a "
                                                r"tuple of 2"),
    (lambda: nn.AvgPool1D(2, padding=-1), r"AvgPool1D: .*padding \(-1,\) non-negative"),
    (lambda: nn.ReflectionPad2D((1, 1, 1, 1)), r"ReflectionPad2D: padding must be an int or a "
                                               r"tuple of 8"),
    (lambda: nn.ReflectionPad2D((1, 1, 0, 0, 1, 1, 1, 1)), r"zero for N and C"),
])
def test_bad_arguments_are_refused_at_construction(make, match):
    with pytest.raises(MXNetError, match=match):
        make()


def test_pool_strides_default_to_pool_size_and_ints_expand():
    pool = nn.AvgPool3D(pool_size=(3, 2, 1), padding=1)
    assert pool._kwargs["stride"] == (3, 2, 1) and pool._kwargs["pad"] == (1, 1, 1)
    assert nn.MaxPool1D(4, strides=1)._kwargs["stride"] == (1,)
    assert "count_include_pad" not in nn.MaxPool2D()._kwargs


def test_symbol_input_builds_mxnets_graph():
    """Called on a Symbol (no shape known), the layers compose the graph MXNet builds."""
    with mx.name.NameManager():
        pad, conv, pool = nn.ReflectionPad2D(1), nn.Conv2D(4, 3, activation="relu"), nn.MaxPool2D()
    out = pool(conv(pad(mx.sym.var("data"))))
    assert out.name == "pool0_fwd"
    assert out.list_arguments() == ["data", "conv0_weight", "conv0_bias"]
    assert out.get_internals().list_outputs() == [
        "data", "reflectionpad2d0_pad0_output", "conv0_weight", "conv0_bias",
        "conv0_fwd_output", "conv0_relu_fwd_output", "pool0_fwd_output"]
