"""One training step of model-zoo networks against the real MXNet 1.9.1.

The fixtures (``tests/fixtures/mxnet_model_zoo_training/``, written by
``tests/fixtures/make_mxnet_model_zoo_training_fixtures.py`` under the oracle) hold, for
``resnet18_v1`` and ``mobilenet0.25`` (``classes=10``, a 2x3x64x64 batch) with every parameter
set to the model-zoo fixtures' ``param_value(index, name, shape)``: the per-sample
``SoftmaxCrossEntropyLoss``, every gradient's L2 norm, sum and L1 norm (``collect_params()``
order, names included), the full gradients of four parameters (first conv weight, first
BatchNorm gamma, output dense weight and bias), their values after one SGD ``Trainer.step``
(lr 0.1, momentum 0.9, wd 1e-4), and the first BatchNorm layer's moving statistics. The same
generator code runs here with ``hybridgpu``, imperatively and hybridized.

Tolerances: full gradients rtol 1e-4 with atol ``GRAD_ATOL`` of the gradient's largest magnitude
(1e-4; 5e-4 for mobilenet0.25, whose float32 gradients are that far from float64 ones: MXNet's
first BatchNorm gamma gradient is 4e-4 of its scale off, hybridgpu's 1.5e-4); updated weights
rtol 1e-5 with the gradient's atol times lr / batch size (what the update carries over); gradient
sums rtol 1e-4 with atol 1e-4 of the L1 norm (a sum that
cancels to near zero is as exact as its terms, not more). Two are wider because MXNet's float32
result is itself that far from a float64 computation of the same step (hybridgpu's float64
run): losses get atol 5e-5 (mobilenet0.25: MXNet 1.3e-5 relative off, hybridgpu 8e-7), and
gradient L2/L1 norms rtol 2e-4 (mobilenet0.25's batchnorm0 beta and batchnorm2 gamma: MXNet
1.2e-4 to 1.8e-4 off, hybridgpu nearer).
BatchNorm's moving statistics are compared after forward and backward: hybridgpu updates them
in the forward, MXNet in the backward (docs/training.md).

Run: ``PYTHONPATH=src python3 -m pytest -q tests/test_model_zoo_training.py
-p no:cacheprovider``.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_model_zoo_training"
GENERATOR = HERE / "fixtures" / "make_mxnet_model_zoo_training_fixtures.py"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"

sys.path.insert(0, str(GENERATOR.parent))
import make_mxnet_model_zoo_training_fixtures as gen  # noqa: E402
from make_mxnet_model_zoo_fixtures import param_value  # noqa: E402

DOC = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
with np.load(FIXTURES / "arrays.npz", allow_pickle=False) as _npz:
    ARRAYS = {key: _npz[key] for key in _npz.files}


#: atol of full gradients, as a fraction of the gradient's largest magnitude (module docstring).
GRAD_ATOL = {"resnet18_v1": 1e-4, "mobilenet0.25": 5e-4}


def _want(model):
    prefix = f"{model}/"
    return {k[len(prefix):]: v for k, v in ARRAYS.items() if k.startswith(prefix)}


def _max_rel(got, want, scale):
    """Largest |got - want| / max(|want|, scale): the figure the tolerances bound."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float((np.abs(got - want) / np.maximum(np.abs(want), scale)).max())


def compare(record, model, slack=1.0):
    """Assert ``record`` (from ``gen.run_step``) matches MXNet's; returns the largest relative
    difference per kind (loss, grad_stats, grad, updated, running). ``slack`` widens the
    tolerances of the gradient statistics (see the gpu test)."""
    want = _want(model)
    assert sorted(record) == sorted(want)
    worst = {}

    def check(kind, key, got, ref, rtol, scale):
        rtol = rtol * slack if kind == "grad_stats" else rtol
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{model} {key}")
        worst[kind] = max(worst.get(kind, 0.0), _max_rel(got, ref, max(scale, 1e-30)))

    np.testing.assert_array_equal(record["labels"], want["labels"])
    np.testing.assert_allclose(record["loss"], want["loss"], rtol=1e-5, atol=5e-5,
                               err_msg=f"{model} loss")
    worst["loss"] = _max_rel(record["loss"], want["loss"], 1e-30)
    names = [row[0] for row in DOC["models"][model]["params"]]
    got_stats, want_stats = record["grad_stats"], want["grad_stats"]
    assert got_stats.shape == want_stats.shape == (len(names), 3)
    for i, name in enumerate(names):
        l2, total, l1 = want_stats[i]
        check("grad_stats", f"l2 of {name}", got_stats[i, 0], l2, 2e-4, 0.0)
        check("grad_stats", f"sum of {name}", got_stats[i, 1], total, 1e-4, l1)
        check("grad_stats", f"l1 of {name}", got_stats[i, 2], l1, 2e-4, 0.0)
    step = gen.OPTIMIZER[1]["learning_rate"] / gen.BATCH_SHAPE[0]
    for key, ref in want.items():
        kind, _, name = key.partition("/")
        if kind == "grad":
            np.testing.assert_allclose(record[key], ref, rtol=1e-4,
                                       atol=GRAD_ATOL[model] * float(np.abs(ref).max()),
                                       err_msg=f"{model} {key}")
            worst["grad"] = max(worst.get("grad", 0.0),
                                _max_rel(record[key], ref, float(np.abs(ref).max())))
        elif kind == "updated":
            atol = step * GRAD_ATOL[model] * float(np.abs(want[f"grad/{name}"]).max())
            np.testing.assert_allclose(record[key], ref, rtol=1e-5, atol=atol,
                                       err_msg=f"{model} {key}")
            worst["updated"] = max(worst.get("updated", 0.0),
                                   _max_rel(record[key], ref, float(np.abs(ref).max())))
        elif kind.startswith("running_"):
            check("running", key, record[key], ref, 1e-5, 1e-2 * float(np.abs(ref).max()))
    return worst


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("model", gen.MODELS)
def test_training_step_matches_mxnet(model, hybridize):
    record, info = gen.run_step(mx, model, hybridize)
    assert info == DOC["models"][model]
    worst = compare(record, model)
    print(model, "hybridized" if hybridize else "imperative",
          {k: f"{v:.2e}" for k, v in worst.items()})


@pytest.mark.parametrize("model", gen.MODELS)
def test_every_parameter_gets_a_nonzero_gradient(model):
    """The fixture exercises every parameter: no gradient of MXNet's is zero, so the sums and
    norms compared above test each of them."""
    stats = ARRAYS[f"{model}/grad_stats"]
    assert (stats[:, 0] > 0).all()
    tracked = DOC["models"][model]["tracked"]
    assert len(tracked) == 4 and tracked[1].endswith("gamma")
    for name in tracked:
        assert np.abs(ARRAYS[f"{model}/grad/{name}"]).max() > 0, name


def test_batch_and_sgd_update_formula():
    """The labels are MXNet's; the first SGD step from zero momentum is
    ``w - lr * (grad / batch + wd * w)``, checked on the fixture's own numbers."""
    x, y = gen.batch()
    assert x.shape == gen.BATCH_SHAPE and set(y.tolist()) <= set(range(gen.CLASSES))
    lr, wd = gen.OPTIMIZER[1]["learning_rate"], gen.OPTIMIZER[1]["wd"]
    for model in gen.MODELS:
        np.testing.assert_array_equal(y, ARRAYS[f"{model}/labels"])
        names = [row[0] for row in DOC["models"][model]["params"]]
        with mx.name.NameManager():
            net = mx.gluon.model_zoo.vision.get_model(model, classes=gen.CLASSES)
        every = list(net.collect_params().keys())
        for name in DOC["models"][model]["tracked"]:
            index = every.index(name)
            shape = ARRAYS[f"{model}/grad/{name}"].shape
            w = param_value(index, name, shape).astype(np.float64)
            g = ARRAYS[f"{model}/grad/{name}"].astype(np.float64)
            np.testing.assert_allclose(ARRAYS[f"{model}/updated/{name}"],
                                       w - lr * (g / x.shape[0] + wd * w), rtol=1e-5,
                                       atol=1e-6, err_msg=name)
        assert names == [n for n in every if not n.endswith(("running_mean", "running_var"))]


@pytest.mark.gpu
@pytest.mark.parametrize("model", gen.MODELS)
def test_training_step_on_gpu_matches_mxnet(model, gpu_available):
    with gpu_available:
        record, _ = gen.run_step(mx, model, hybridize=True)
    # The compiled GPU program sums in other orders than NumPy (GEMMs, reductions, BatchNorm
    # statistics in double): the signed sum of a gradient, where terms cancel, moves by about
    # as much as the cpu path's own distance to MXNet (which already uses most of the bound).
    compare(record, model, slack=2.0)


@pytest.mark.oracle
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the real MXNet reproduces the committed fixtures
    (exactly on the machine that wrote them; within 1e-6 elsewhere, where oneDNN may pick other
    kernels)."""
    if not ORACLE.exists():
        pytest.skip(f"needs the real MXNet at {ORACLE}")
    run = subprocess.run([str(ORACLE), str(GENERATOR), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=HERE.parent)
    assert run.returncode == 0, f"generator failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    doc = json.loads((tmp_path / "cases.json").read_text(encoding="utf-8"))
    assert doc == DOC, (
        "cases.json is out of date: run `.oracle/bin/python "
        "tests/fixtures/make_mxnet_model_zoo_training_fixtures.py` and commit the result")
    with np.load(tmp_path / "arrays.npz", allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(ARRAYS)
        for key in npz.files:
            np.testing.assert_allclose(npz[key], ARRAYS[key], rtol=1e-6,
                                       atol=1e-6 * float(np.abs(ARRAYS[key]).max()),
                                       err_msg=key)
