"""``gluon.model_zoo.vision`` against MXNet 1.9.1's model zoo.

The fixtures (``tests/fixtures/mxnet_model_zoo/``, written by
``tests/fixtures/make_mxnet_model_zoo_fixtures.py`` under the oracle) hold, for eleven models,
what MXNet builds (parameter names, structural names, shapes before and after initialization,
grad_req, block tree, symbolic graph) and what it computes (logits) with every parameter set to
``param_value(index, name, shape)``; for the other family members, a digest of the structure.
The tests build the same models here, set the same values and compare, imperative and
hybridized (and on a GPU when there is one). ``oracle`` tests (skipped without ``.oracle/``)
hand parameter files both ways between hybridgpu and the real MXNet, run hybridgpu's exported
models in MXNet, and re-run the generator.

Run: ``PYTHONPATH=src python3 -m pytest -q tests/test_model_zoo.py -p no:cacheprovider``;
``-m "not model_zoo_big"`` leaves out the three largest models' output tests (densenet121,
squeezenet1.0, inceptionv3).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.gluon.model_zoo import vision

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_model_zoo"
GENERATOR = HERE / "fixtures" / "make_mxnet_model_zoo_fixtures.py"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"
sys.path.insert(0, str(GENERATOR.parent))

import make_mxnet_model_zoo_fixtures as gen  # noqa: E402
from fixture_files import assert_reproduced  # noqa: E402

DOC = json.loads((FIXTURES / "models.json").read_text(encoding="utf-8"))
with np.load(FIXTURES / "arrays.npz", allow_pickle=False) as _npz:
    ARRAYS = {key: _npz[key] for key in _npz.files}

#: The largest inputs (MXNet's minimum sizes); deselect with -m "not model_zoo_big".
BIG = {"densenet121", "squeezenet1.0", "inceptionv3"}
needs_oracle = pytest.mark.skipif(not ORACLE.exists(),
                                  reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")


def _model_params(names):
    return [pytest.param(n, marks=pytest.mark.model_zoo_big) if n in BIG else n for n in names]


MODEL_NAMES = _model_params(gen.MODELS)

#: ``get_model`` names in MXNet 1.9.1 (its "Available options").
MXNET_NAMES = [
    "alexnet", "densenet121", "densenet161", "densenet169", "densenet201", "inceptionv3",
    "mobilenet0.25", "mobilenet0.5", "mobilenet0.75", "mobilenet1.0", "mobilenetv2_0.25",
    "mobilenetv2_0.5", "mobilenetv2_0.75", "mobilenetv2_1.0", "resnet101_v1", "resnet101_v2",
    "resnet152_v1", "resnet152_v2", "resnet18_v1", "resnet18_v2", "resnet34_v1", "resnet34_v2",
    "resnet50_v1", "resnet50_v2", "squeezenet1.0", "squeezenet1.1", "vgg11", "vgg11_bn", "vgg13",
    "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


def _fresh(name, **kwargs):
    """``get_model(name)`` with fresh name counters (as in a new process, like the fixture)."""
    with mx.name.NameManager():
        return vision.get_model(name, **kwargs)


def _rows(name):
    """MXNet's ``(name, structural name, shape before init, shape, grad_req)`` per
    parameter."""
    return [gen.parse_param_row(row) for row in ARRAYS[f"{name}/params"].tolist()]


def _input(name):
    return mx.nd.array(gen.input_value(tuple(DOC["models"][name]["input_shape"])))


def _close(got, want, what):
    """float32 through a deep net: rtol 1e-4, atol 1e-4 of the largest magnitude."""
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()),
                               err_msg=what)


class _Built:
    """Models with the fixture's parameter values, built once per module (VGG and AlexNet
    hold 20M+ values) and shared by the output, round-trip and oracle tests."""

    def __init__(self):
        self._nets = {}
        self.logits = {}

    def __call__(self, name):
        if name not in self._nets:
            net = _fresh(name)
            net.initialize()  # parameters of unknown shape wait; set_data completes them
            for index, ((key, param), row) in enumerate(zip(net.collect_params().items(),
                                                            _rows(name))):
                param.set_data(mx.nd.array(gen.param_value(index, key, row[3])))
            self._nets[name] = net
        return self._nets[name]


@pytest.fixture(scope="module")
def built():
    return _Built()


# -- names, errors, pretrained -------------------------------------------------------------

def test_list_models_is_mxnets():
    assert vision.list_models() == MXNET_NAMES


def test_get_model_accepts_function_spellings_and_any_case():
    for spelling, cls in [("mobilenet1_0", "MobileNet"), ("MobileNetV2_0.5", "MobileNetV2"),
                          ("mobilenet_v2_0_25", "MobileNetV2"), ("squeezenet1_1", "SqueezeNet"),
                          ("ResNet18_V2", "ResNetV2"), ("VGG16_bn", "VGG")]:
        assert type(_fresh(spelling)).__name__ == cls, spelling
    assert _fresh("resnet18_v1", classes=7).output.weight.shape == (7, 512)


def test_unknown_model_lists_the_options():
    with pytest.raises(ValueError) as info:
        vision.get_model("resnet19_v1")
    message = str(info.value)
    assert message.startswith("Model resnet19_v1 is not supported.")
    assert "Did you mean resnet18_v1" in message
    assert all(f"\n\t{n}" in message for n in MXNET_NAMES)


def test_bad_depths_are_refused_with_the_options():
    with pytest.raises(MXNetError, match=r"Invalid number of layers: 20\. Options are \[18, "):
        vision.get_resnet(1, 20)
    with pytest.raises(MXNetError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(MXNetError, match=r"Options are \[11, 13, 16, 19\]"):
        vision.get_vgg(12)
    with pytest.raises(MXNetError, match=r"Options are \[121, 161, 169, 201\]"):
        vision.get_densenet(100)
    with pytest.raises(MXNetError, match="Unsupported SqueezeNet version 2.0"):
        vision.SqueezeNet("2.0")


def test_pretrained_raises_and_says_how_to_load_a_local_file(tmp_path):
    with pytest.raises(MXNetError) as info:
        vision.get_model("mobilenet1_0", pretrained=True, root=str(tmp_path))
    message = str(info.value)
    assert "mobilenet1.0(pretrained=True): hybridgpu does not download" in message
    assert "net.load_parameters('/path/to/mobilenet1.0-<hash>.params')" in message
    assert str(tmp_path) in message
    cached = tmp_path / "resnet18_v1-a0666292.params"
    cached.write_bytes(b"")
    with pytest.raises(MXNetError, match=r"Found '.*resnet18_v1-a0666292\.params'") as info:
        vision.resnet18_v1(pretrained=True, root=str(tmp_path))
    assert f"net.load_parameters({str(cached)!r})" in str(info.value)
    for build in (lambda: vision.vgg11_bn(pretrained=True, root=str(tmp_path)),
                  lambda: vision.squeezenet1_1(pretrained=True, root=str(tmp_path)),
                  lambda: vision.mobilenet_v2_0_5(pretrained=True, root=str(tmp_path))):
        with pytest.raises(MXNetError, match=r"(vgg11_bn|squeezenet1\.1|mobilenetv2_0\.5)\("):
            build()


def test_thumbnail_resnet_and_classes():
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    assert type(net.features[0]).__name__ == "Conv2D" and len(net.features) == 6
    net.initialize()
    assert net(mx.nd.ones((2, 3, 16, 16))).shape == (2, 10)
    net2 = vision.resnet18_v2(classes=5, thumbnail=True)
    net2.initialize()
    assert net2(mx.nd.ones((1, 3, 8, 8))).shape == (1, 5)


# -- structure against the fixtures ---------------------------------------------------------

@pytest.mark.parametrize("name", gen.MODELS)
def test_structure_matches_mxnet(name):
    """Parameter names, structural names, shapes before initialization (0 = deferred),
    grad_req, the block tree and every node of the symbolic graph, as MXNet builds them."""
    net = _fresh(name)
    got = [row[:3] + row[4:] for row in map(gen.parse_param_row, gen.param_rows(net, None))]
    want = [row[:3] + row[4:] for row in _rows(name)]
    assert len(got) == len(want), f"{name}: {len(got)} parameters, MXNet has {len(want)}"
    for mine, theirs in zip(got, want):
        assert mine == theirs, f"{name}: first differing parameter"
    assert gen.block_rows(net) == ARRAYS[f"{name}/blocks"].tolist()
    assert gen.graph_rows(net, mx) == ARRAYS[f"{name}/graph"].tolist()


@pytest.mark.parametrize("name", sorted(DOC["family"]))
def test_family_member_structure_matches_mxnet(name):
    net = _fresh(name)
    entry = DOC["family"][name]
    assert len(list(net.collect_params())) == entry["num_params"]
    assert gen.structure_digest(net) == entry["structure_digest"], (
        f"{name}: block tree or parameters differ from MXNet's; print gen.block_rows(net) "
        "and the parameters here and under the oracle to compare")


# -- numbers against the fixtures ------------------------------------------------------------

@pytest.mark.parametrize("name", MODEL_NAMES)
def test_outputs_match_mxnet(name, built):
    """Same parameters, same input: MXNet's logits (and the features' channel means),
    imperative, hybridized (traced) and, but for the two biggest, hybridized again (replayed)."""
    net, x = built(name), _input(name)
    want = ARRAYS[f"{name}/logits"]
    seen = []
    with net.features.register_forward_hook(lambda block, args, out: seen.append(out)):
        got = net(x).asnumpy()
    assert got.shape == tuple(DOC["models"][name]["output_shape"])
    _close(gen.features_head(seen[0].asnumpy()), ARRAYS[f"{name}/features_head"],
           f"{name} features")
    _close(got, want, f"{name} imperative")
    built.logits[name] = got
    net.hybridize()
    try:
        _close(net(x).asnumpy(), want, f"{name} hybridized (traced)")
        if name not in BIG:
            _close(net(x).asnumpy(), want, f"{name} hybridized (replayed)")
    finally:
        net.hybridize(False)


@pytest.mark.parametrize("name", ["resnet18_v1", "resnet18_v2", "mobilenet0.25",
                                  "mobilenetv2_1.0", "squeezenet1.0"])
def test_deferred_initialization_infers_mxnets_shapes(name):
    """``initialize()`` then one forward completes every deferred shape as MXNet does."""
    net = _fresh(name)
    net.initialize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(_input(name))
    shapes = [p.shape for p in net.collect_params().values()]
    assert shapes == [row[3] for row in _rows(name)]


# -- files ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MODEL_NAMES)
def test_save_and_load_parameters_round_trip(name, built, tmp_path):
    net = built(name)
    path = tmp_path / f"{name}.params"
    net.save_parameters(str(path))
    loaded = mx.nd.load(str(path))
    assert list(loaded) == list(net._collect_params_with_prefix())
    fresh = _fresh(name)
    fresh.load_parameters(str(path))
    for (key, want), got in zip(net.collect_params().items(), fresh.collect_params().values()):
        np.testing.assert_array_equal(got.data().asnumpy(), want.data().asnumpy(), err_msg=key)


def test_loaded_model_computes_mxnets_logits(built, tmp_path):
    """A model that got its weights only from a file (no initialize) runs and matches."""
    path = tmp_path / "mobilenetv2.params"
    built("mobilenetv2_1.0").save_parameters(str(path))
    net = _fresh("mobilenetv2_1.0")
    net.load_parameters(str(path))
    net.hybridize()
    _close(net(_input("mobilenetv2_1.0")).asnumpy(), ARRAYS["mobilenetv2_1.0/logits"],
           "mobilenetv2_1.0 loaded from a file")


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["resnet18_v1", "mobilenetv2_1.0"])
def test_outputs_match_mxnet_on_gpu(name, built, tmp_path, gpu_available):
    """Weights loaded onto the GPU, input on the GPU: MXNet's logits, imperative and
    hybridized."""
    path = tmp_path / f"{name}.params"
    built(name).save_parameters(str(path))
    net = _fresh(name)
    net.load_parameters(str(path), ctx=gpu_available)
    x = _input(name).as_in_context(gpu_available)
    want = ARRAYS[f"{name}/logits"]
    out = net(x)
    assert out.context == gpu_available
    _close(out.asnumpy(), want, f"{name} on {gpu_available}")
    net.hybridize()
    _close(net(x).asnumpy(), want, f"{name} hybridized on {gpu_available}")


def test_fixtures_stay_small():
    total = sum(f.stat().st_size for f in FIXTURES.iterdir())
    assert total < 300 * 1024, f"{FIXTURES} holds {total} bytes; keep it under 300 KiB"
    assert set(DOC["models"]) == set(gen.MODELS) and set(DOC["family"]) == set(gen.FAMILY)


# -- against the real MXNet (skipped without .oracle/) ----------------------------------------

_MXNET_LOADS = """
import json, sys, warnings
warnings.simplefilter("ignore")
import mxnet as mx
import numpy as np
import make_mxnet_model_zoo_fixtures as gen
jobs, out = json.loads(sys.argv[1]), sys.argv[2]
result = {}
for name, path in jobs:
    with mx.name.NameManager():
        net = mx.gluon.model_zoo.vision.get_model(name)
    net.load_parameters(path)
    side = gen.MODELS[name]
    x = mx.nd.array(gen.input_value((1, 3, side, side)))
    result[name] = net(x).asnumpy()
np.savez(out, **result)
"""

_MXNET_SAVES = """
import json, sys, warnings
warnings.simplefilter("ignore")
import mxnet as mx
import make_mxnet_model_zoo_fixtures as gen
folder = sys.argv[1]
for name in json.loads(sys.argv[2]):
    with mx.name.NameManager():
        net = mx.gluon.model_zoo.vision.get_model(name)
    side = gen.MODELS[name]
    net.initialize()
    net(mx.nd.array(gen.input_value((1, 3, side, side))))
    gen.set_parameters(net, mx)
    net.save_parameters(f"{folder}/{name}.params")
    if name in json.loads(sys.argv[3]):
        net.save_params(f"{folder}/{name}-legacy.params")
        net.collect_params().save(f"{folder}/{name}-fullnames.params")
"""


def _oracle(script, *args):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(ORACLE), "-c", script, *args], capture_output=True, text=True,
                          timeout=600, env=env, cwd=GENERATOR.parent)
    assert proc.returncode == 0, f"oracle failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"


@pytest.mark.oracle
@needs_oracle
def test_mxnet_loads_parameters_saved_by_hybridgpu(built, tmp_path):
    """MXNet's ``load_parameters`` takes hybridgpu's files; its logits equal hybridgpu's."""
    jobs = []
    for name in gen.MODELS:
        path = tmp_path / f"{name}.params"
        built(name).save_parameters(str(path))
        jobs.append([name, str(path)])
    _oracle(_MXNET_LOADS, json.dumps(jobs), str(tmp_path / "out.npz"))
    with np.load(tmp_path / "out.npz") as theirs:
        for name in gen.MODELS:
            mine = built.logits.get(name)
            if mine is None:
                mine = built(name)(_input(name)).asnumpy()
            _close(theirs[name], mine, f"{name}: MXNet with hybridgpu's file")


@pytest.mark.oracle
@needs_oracle
def test_hybridgpu_loads_parameters_saved_by_mxnet(tmp_path):
    """Files from MXNet's ``save_parameters`` (every model), ``save_params`` (names without
    the model's prefix) and ``collect_params().save`` (full names; both on four models) load
    here with the exact values."""
    legacy = ["resnet18_v1", "mobilenetv2_1.0", "squeezenet1.0", "densenet121"]
    _oracle(_MXNET_SAVES, str(tmp_path), json.dumps(list(gen.MODELS)), json.dumps(legacy))
    for name in gen.MODELS:
        want = [gen.param_value(i, row[0], row[3]) for i, row in enumerate(_rows(name))]
        for suffix in ("", "-legacy", "-fullnames") if name in legacy else ("",):
            net, path = _fresh(name), str(tmp_path / f"{name}{suffix}.params")
            if suffix == "-fullnames":
                net.collect_params().load(path)
            else:
                net.load_parameters(path)
            for value, (key, param) in zip(want, net.collect_params().items()):
                np.testing.assert_array_equal(param.data().asnumpy(), value,
                                              err_msg=f"{name}{suffix}: {key}")
    net = _fresh("resnet18_v1")
    net.load_parameters(str(tmp_path / "resnet18_v1.params"))
    _close(net(_input("resnet18_v1")).asnumpy(), ARRAYS["resnet18_v1/logits"],
           "resnet18_v1 with MXNet's file")


_MXNET_IMPORTS = """
import json, sys, warnings
warnings.simplefilter("ignore")
import mxnet as mx
import numpy as np
import make_mxnet_model_zoo_fixtures as gen
jobs, out = json.loads(sys.argv[1]), sys.argv[2]
result = {}
for name, sym_file, params_file in jobs:
    net = mx.gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    side = gen.MODELS[name]
    result[name] = net(mx.nd.array(gen.input_value((1, 3, side, side)))).asnumpy()
np.savez(out, **result)
"""


@pytest.mark.oracle
@needs_oracle
def test_mxnet_runs_models_exported_by_hybridgpu(built, tmp_path):
    """``export`` of a hybridized model-zoo network gives files MXNet's
    ``SymbolBlock.imports`` runs to MXNet's own logits."""
    jobs = []
    for name in ["resnet18_v1", "resnet50_v1", "mobilenetv2_1.0", "squeezenet1.0"]:
        net = built(name)
        net.hybridize()
        try:
            net(_input(name))
            jobs.append([name, *net.export(str(tmp_path / name))])
        finally:
            net.hybridize(False)
    _oracle(_MXNET_IMPORTS, json.dumps(jobs), str(tmp_path / "out.npz"))
    with np.load(tmp_path / "out.npz") as theirs:
        for name, _, _ in jobs:
            _close(theirs[name], ARRAYS[f"{name}/logits"], f"{name}: exported, run by MXNet")


@pytest.mark.oracle
@needs_oracle
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle reproduces the committed fixtures."""
    proc = subprocess.run([str(ORACLE), str(GENERATOR), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=900, cwd=HERE.parent)
    assert proc.returncode == 0, f"generator failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    fresh = (tmp_path / "models.json").read_text(encoding="utf-8")
    assert fresh == (FIXTURES / "models.json").read_text(encoding="utf-8"), (
        "models.json is out of date: run `.oracle/bin/python "
        "tests/fixtures/make_mxnet_model_zoo_fixtures.py` and commit the result")
    assert_reproduced(tmp_path, FIXTURES, ["arrays.npz"],
                      "tests/fixtures/make_mxnet_model_zoo_fixtures.py")
