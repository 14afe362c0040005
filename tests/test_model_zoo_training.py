"""One training step of model-zoo networks against the real MXNet 1.9.1.

The fixtures (``tests/fixtures/mxnet_model_zoo_training/``, written by
``tests/fixtures/make_mxnet_model_zoo_training_fixtures.py`` under the oracle) hold, for
``resnet18_v1`` and ``mobilenet0.25`` (``classes=10``, a 2x3x64x64 batch) with every parameter
set to the model-zoo fixtures' ``param_value(index, name, shape)``: the per-sample
``SoftmaxCrossEntropyLoss``, every gradient's L2 norm, sum and L1 norm (``collect_params()``
order, names included), the full gradients of four parameters (first conv weight, first
BatchNorm gamma, output dense weight and bias), their values after one SGD ``Trainer.step``
(lr 0.1, momentum 0.9, wd 1e-4), and the first BatchNorm layer's moving statistics; once with
MXNet's float32 step and once with the same step in float64. The same generator code runs
here with ``hybridgpu``, imperatively and hybridized.

How results are compared. A float32 training step through BatchNorm is ill-conditioned: MXNet's
own float32 gradient of mobilenet0.25's first BatchNorm gamma is 4e-4 of its scale away from
the float64 step, and which float32 sums NumPy and the BLAS pick (pairwise or SIMD blocks, by
NumPy version and CPU) moves hybridgpu's float32 result by as much. Comparing two float32
results with each other therefore tests rounding luck. So:

* **The math, in float64.** hybridgpu's float64 step must equal MXNet's float64 step. Each
  quantity's condition is measured, not guessed: ``kappa = max(e32 / eps32, KAPPA_MIN)``, where
  ``e32`` is MXNet's own float32 error on it (its distance from MXNet's float64 step, relative
  to the quantity's scale). Two float64 implementations of a computation of condition ``kappa``
  each stay within ``ERROR_FACTOR * kappa * eps64`` of the exact result, so they differ by at
  most twice that.
* **The float32 step.** hybridgpu's float32 step must be as accurate as MXNet's: within
  ``ERROR_FACTOR * kappa * eps32`` of the float64 step (which is exact to 1e-12 here), on every
  NumPy, BLAS and CPU.

Scales: the loss and a tensor use their largest magnitude; a gradient's L2 norm and L1 norm
their own value; a gradient's sum its L1 norm (a sum that cancels to near zero is as exact as
its terms, not more). BatchNorm's moving statistics are compared after forward and backward:
hybridgpu updates them in the forward, MXNet in the backward (docs/training.md).

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

EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
#: How far one implementation's rounding may take it from the exact result, in units of the
#: computation's measured condition times the machine epsilon: rounding errors of one
#: algorithm summed in another order are of one size, not equal, so a factor of 4 covers the
#: spread between orders (hybridgpu's float32 error is 0.3x to 1.5x MXNet's on these models).
ERROR_FACTOR = 4.0
#: The smallest condition assumed: a quantity that MXNet happened to round almost exactly
#: (a 2-sample loss, a 10-element bias) still went through several roundings.
KAPPA_MIN = 8.0


def _want(model, dtype="float32"):
    prefix = f"{model}/" if dtype == "float32" else f"{gen.FLOAT64}/{model}/"
    return {k[len(prefix):]: v for k, v in ARRAYS.items() if k.startswith(prefix)}


def _scaled_errors(got, exact, key):
    """``|got - exact| / scale`` of one recorded quantity, elementwise, in float64 (the scales
    of the module docstring)."""
    got, exact = np.asarray(got, np.float64), np.asarray(exact, np.float64)
    if key == "grad_stats":  # columns: L2 norm, sum, L1 norm of each parameter's gradient
        l2, l1 = exact[:, 0:1], exact[:, 2:3]
        scale = np.concatenate([l2, l1, l1], axis=1)
    else:
        scale = np.full(exact.shape, max(float(np.abs(exact).max()), 1e-300))
    return np.abs(got - exact) / np.maximum(scale, 1e-300)


def condition(model, key):
    """The measured condition of quantity ``key`` of ``model``'s step (per column for the
    gradient statistics): MXNet's float32 error over eps32, at least ``KAPPA_MIN``."""
    error = _scaled_errors(_want(model)[key], _want(model, "float64")[key], key)
    worst = error.max(axis=0) if key == "grad_stats" else error.max()
    return np.maximum(worst / EPS["float32"], KAPPA_MIN)


def compare(record, model, dtype):
    """Assert ``record`` (``gen.run_step`` in ``dtype``) is within the module docstring's
    bounds of MXNet's float64 step; returns each quantity's error as a fraction of its bound."""
    exact = _want(model, "float64")
    assert sorted(record) == sorted(exact)
    np.testing.assert_array_equal(record["labels"], exact["labels"])
    implementations = 1 if dtype == "float32" else 2  # float64: two implementations' errors
    used = {}
    for key in sorted(exact):
        if key == "labels":
            continue
        kappa = condition(model, key)
        bound = implementations * ERROR_FACTOR * kappa * EPS[dtype]
        error = _scaled_errors(record[key], exact[key], key)
        worst = error.max(axis=0) if key == "grad_stats" else error.max()
        used[key] = float(np.max(worst / bound))
        assert used[key] <= 1.0, (
            f"{model} {dtype} {key}: error {np.array2string(np.asarray(worst), precision=3)} "
            f"(of scale) exceeds {np.array2string(np.asarray(bound), precision=3)} = "
            f"{implementations} x {ERROR_FACTOR} x condition "
            f"{np.array2string(np.asarray(kappa), precision=1)} x eps {EPS[dtype]:.2e}")
    return used


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("model", gen.MODELS)
def test_training_step_matches_mxnet(model, hybridize, dtype):
    record, info = gen.run_step(mx, model, hybridize, dtype)
    assert info == DOC["models"][model]
    used = compare(record, model, dtype)
    print(model, dtype, "hybridized" if hybridize else "imperative",
          {k: f"{v:.2f}" for k, v in used.items()})


def test_comparison_catches_a_wrong_step():
    """The bounds see a wrong step: MXNet's float32 step passes the float32 bound; the same
    step with the output bias's gradient off by 1e-4 of its scale does not (a well-conditioned
    quantity gets a bound near eps32), nor, in float64, moving statistics off by 1e-7."""
    for model in gen.MODELS:
        compare(_want(model), model, "float32")
        bias = DOC["models"][model]["tracked"][3]
        wrong = dict(_want(model))
        grad = wrong[f"grad/{bias}"].astype(np.float64)
        wrong[f"grad/{bias}"] = grad + 1e-4 * np.abs(grad).max()
        with pytest.raises(AssertionError, match=f"grad/{bias}"):
            compare(wrong, model, "float32")
    mean = next(k for k in _want("resnet18_v1") if k.startswith("running_mean/"))
    wrong = dict(_want("resnet18_v1", "float64"))
    wrong[mean] = wrong[mean] * (1 + 1e-7)
    with pytest.raises(AssertionError, match="running_mean"):
        compare(wrong, "resnet18_v1", "float64")


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
    """The compiled GPU program sums in other orders than NumPy (GEMMs, reductions, BatchNorm
    statistics in double) and contracts FMAs: its float32 step is held to the same bound."""
    with gpu_available:
        record, _ = gen.run_step(mx, model, hybridize=True)
    compare(record, model, "float32")


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
