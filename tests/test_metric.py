"""``mx.metric`` against fixtures written by MXNet 1.9.1
(``tests/fixtures/make_mxnet_metric_fixtures.py``): every case feeds a metric the same seeded
batches and compares ``get``, ``get_global``, the name/value lists and the instance counts after
every update, ``reset_local`` and ``reset`` (rtol 1e-6, names exactly); configs, errors,
signatures and registry names. Then the differences from MXNet kept on purpose, inputs on other
devices, and the extension points (``register``, ``create`` from configs).
"""

from __future__ import annotations

import inspect
import json
import math
import pathlib
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

import hybridgpu as mx
import hybridgpu.metric  # noqa: F401  (makes mx.metric available)
from hybridgpu.base import MXNetError
from hybridgpu.metric import core

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_metrics"
GENERATOR = HERE / "fixtures" / "make_mxnet_metric_fixtures.py"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"

sys.path.insert(0, str(GENERATOR.parent))
import make_mxnet_metric_fixtures as gen  # noqa: E402
from fixture_files import assert_reproduced  # noqa: E402

DOC = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
TABLE = DOC["cases"]
RTOL = 1e-6

#: (case, field) pairs where hybridgpu differs from MXNet on purpose (tested below instead).
DIFFERENCES = {("pearson_micro_get", "global"), ("pearson_micro_get", "gnv")}


def _same_value(got, want):
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(
            _same_value(g, w) for g, w in zip(got, want))
    if isinstance(want, str):
        return got == want
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-12)


def _names_of(state):
    """The names in a (name, value) result: compared exactly."""
    return state[0]


# -- the fixture cases ------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(TABLE))
def test_case_replays_mxnet(case):
    want = TABLE[case]
    metric, states = gen.run_case(mx, case, gen.CASES[case])
    assert metric.name == want["name"]
    assert len(states) == len(want["states"])
    for step, (got, exp) in enumerate(zip(states, want["states"])):
        assert got["op"] == exp["op"]
        for field in ("get", "global", "nv", "gnv", "num_inst"):
            if (case, field) in DIFFERENCES or field not in exp:
                continue
            where = f"{case} step {step} ({exp['op']}) {field}"
            if field in ("get", "global"):
                assert _names_of(got[field]) == _names_of(exp[field]), where
            assert _same_value(got[field], exp[field]), f"{where}: {got[field]} != {exp[field]}"


@pytest.mark.parametrize("case", sorted(TABLE))
def test_config_matches_mxnet(case):
    metric = gen.CASES[case]["build"](mx)
    want = TABLE[case]["config"]
    if "error" in want:
        with pytest.raises(NotImplementedError, match=want["error"]):
            metric.get_config()
    else:
        assert gen.jsonable(metric.get_config()) == want
        assert list(metric.get_config()) == list(want)  # key order too


@pytest.mark.parametrize("name", sorted(DOC["errors"]))
def test_errors_match_mxnet(name):
    call, exact = gen.ERRORS[name]
    want_type, want_message = DOC["errors"][name]
    got = gen.error_of(mx, call)
    assert got is not None, f"{name}: no error raised"
    assert got[0] == want_type
    if exact:
        assert got[1] == want_message


def test_signatures_match_mxnet():
    for name, want in DOC["signatures"].items():
        assert str(inspect.signature(getattr(mx.metric, name))) == want, name


def test_registry_names_match_mxnet():
    assert {k: v.__name__ for k, v in sorted(core._REGISTRY.items())} == DOC["registry"]


def test_mxnet_1d_pred_error_names_the_axis():
    with pytest.raises(MXNetError, match="axis 1"):
        mx.metric.Accuracy().update([mx.nd.array([0, 1])], [mx.nd.array([0, 1, 1])])


# -- documented behaviour -----------------------------------------------------------------------

def _cls_batch():
    return [mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])]


def test_str_and_name_value_lists():
    acc = mx.metric.Accuracy()
    acc.update(*_cls_batch())
    assert str(acc) == "EvalMetric: {'accuracy': 0.6666666666666666}"  # oracle: same text
    both = mx.metric.create(["acc", "f1"])
    both.update(*_cls_batch())
    assert both.get() == (["accuracy", "f1"], [0.6666666666666666, 0.8])
    assert both.get_name_value() == [("accuracy", 0.6666666666666666), ("f1", 0.8)]
    assert str(both) == "EvalMetric: {'accuracy': 0.6666666666666666, 'f1': 0.8}"


def test_create_returns_instances_and_wraps_functions():
    acc = mx.metric.Accuracy()
    assert mx.metric.create(acc) is acc
    composite = mx.metric.create([acc, "mse"])
    assert composite.get_metric(0) is acc
    assert isinstance(composite.get_metric(1), mx.metric.MSE)

    def hits(label, pred):
        return float((label == pred.argmax(axis=1)).sum()), label.size

    custom = mx.metric.create(hits, name="hits")
    custom.update(*_cls_batch())
    assert custom.get() == ("hits", 2 / 3)


def test_recreating_from_config_gives_the_same_numbers():
    # (as in MXNet, F1's and MCC's `average` is not part of their config: keep the default)
    original = mx.metric.create(["acc", mx.metric.F1(name="f"), "ce", "mcc"])
    copy = mx.metric.create(original.get_config())
    for step in range(3):
        labels, preds = gen.make_batch("binary", "config", step)
        labels, preds = gen.to_library(mx, labels), gen.to_library(mx, preds)
        original.update(labels, preds)
        copy.update(labels, preds)
    assert copy.get() == original.get()
    assert copy.get_global() == original.get_global()


def test_register_and_alias_a_new_metric():
    @mx.metric.register
    @mx.metric.alias("max_pred")
    class MaxPrediction(mx.metric.EvalMetric):
        def __init__(self, name="max-pred", **kwargs):
            super().__init__(name, has_global_stats=True, **kwargs)

        def update(self, labels, preds):
            for pred in preds:
                self._add(float(pred.asnumpy().max()), 1)

    try:
        metric = mx.metric.create("MAX_PRED")
        assert isinstance(metric, MaxPrediction)
        metric.update(None, [mx.nd.array([1, 5]), mx.nd.array([3])])
        assert metric.get() == ("max-pred", 4.0)
        with pytest.warns(UserWarning, match="overriding existing metric"):
            mx.metric.alias("max_pred")(mx.metric.MAE)
    finally:
        core._REGISTRY.pop("maxprediction", None)
        core._REGISTRY.pop("max_pred", None)


def test_update_dict_picks_arrays_by_name():
    labels = OrderedDict([("y", mx.nd.array([0, 1])), ("z", mx.nd.array([1, 1]))])
    preds = OrderedDict([("a", mx.nd.array([[1, 0], [1, 0]])),
                         ("b", mx.nd.array([[0, 1], [0, 1]]))])
    picked = mx.metric.Accuracy(output_names=["b"], label_names=["z"])
    picked.update_dict(labels, preds)
    assert picked.get() == ("accuracy", 1.0)
    with pytest.raises(KeyError):
        mx.metric.Accuracy(output_names=["c"]).update_dict(labels, preds)


def test_loss_ignores_labels_and_counts_elements():
    loss = mx.metric.Loss()
    loss.update(None, mx.nd.array([[1, 2], [3, 4]]))
    loss.update([mx.nd.array([0])], [mx.nd.array([10])])
    assert loss.get() == ("loss", 4.0)
    assert (loss.num_inst, loss.global_num_inst) == (5, 5)


def test_numpy_arrays_are_accepted_too():
    acc = mx.metric.Accuracy()
    acc.update(np.array([0, 1, 1]), np.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]]))
    assert acc.get() == ("accuracy", 2 / 3)


def test_custom_metric_sums_accumulate_as_python_numbers():
    metric = mx.metric.np(lambda label, pred: np.float32(0.1))
    for _ in range(3):
        metric.update(*_cls_batch())
    assert type(metric.sum_metric) is float
    assert metric.get()[1] == pytest.approx(0.1, rel=1e-7)


# -- differences from MXNet kept on purpose ---------------------------------------------------

def test_pearson_micro_get_global_is_the_correlation_since_reset():
    # MXNet 1.9 returns 0.0 here (its micro mode never fills the global sum).
    metric = mx.metric.PearsonCorrelation(average="micro")
    label = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    pred = np.array([1.5, 1.0, 3.5, 4.0, 6.0])
    metric.update([mx.nd.array(label[:2])], [mx.nd.array(pred[:2])])
    metric.update([mx.nd.array(label[2:])], [mx.nd.array(pred[2:])])
    want = np.corrcoef(label, pred)[0, 1]
    assert metric.get()[1] == pytest.approx(want, rel=1e-6)
    assert metric.get_global()[1] == pytest.approx(want, rel=1e-6)


def test_composite_get_metric_out_of_range_raises():
    # MXNet 1.9 *returns* the ValueError instead of raising it.
    with pytest.raises(ValueError, match="Metric index 2 is out of range 0 and 1"):
        mx.metric.create(["acc"]).get_metric(2)


def test_binary_metrics_accept_column_labels():
    # MXNet 1.9 broadcasts (N, 1) labels against (N,) predictions and counts N * N pairs.
    flat, column = mx.metric.F1(), mx.metric.F1()
    pred = mx.nd.array([[0.3, 0.7], [0.8, 0.2], [0.4, 0.6], [0.1, 0.9]])
    flat.update([mx.nd.array([1, 0, 0, 1])], [pred])
    column.update([mx.nd.array([[1], [0], [0], [1]])], [pred])
    assert column.get() == flat.get() == ("f1", 0.8)


def test_perplexity_picks_along_any_axis_of_3d_predictions():
    # MXNet 1.9 fails in `pick` for predictions of more than 2 dims.
    rng = np.random.RandomState(0)
    prob = rng.dirichlet(np.ones(4), size=(2, 3)).astype(np.float32)  # (2, 3, 4)
    label = rng.randint(0, 4, size=(2, 3)).astype(np.float32)
    metric = mx.metric.Perplexity(ignore_label=None)
    metric.update([mx.nd.array(label)], [mx.nd.array(prob)])
    picked = np.take_along_axis(prob, label.astype(int)[..., None], axis=2)
    assert metric.get()[1] == pytest.approx(math.exp(-np.log(picked).mean()), rel=1e-6)
    moved = mx.metric.Perplexity(ignore_label=None, axis=1)
    moved.update([mx.nd.array(label)], [mx.nd.array(prob.transpose(0, 2, 1))])
    assert moved.get()[1] == pytest.approx(metric.get()[1], rel=1e-6)


# -- devices ----------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("case", ["accuracy", "topk2", "f1_micro", "perplexity_ignore", "mse",
                                  "ce", "pearson_micro_get", "loss", "pcc", "composite"])
def test_gpu_inputs_give_the_same_numbers(case, gpu_available):
    def on_gpu(value):
        if value is None:
            return None
        if isinstance(value, np.ndarray):
            return mx.nd.array(value, ctx=gpu_available, dtype=value.dtype)
        return [on_gpu(v) for v in value]

    spec = gen.CASES[case]
    cpu_metric, gpu_metric = spec["build"](mx), spec["build"](mx)
    for step in range(3):
        labels, preds = gen.make_batch(spec["kind"], case, step)
        cpu_metric.update(gen.to_library(mx, labels), gen.to_library(mx, preds))
        gpu_metric.update(on_gpu(labels), on_gpu(preds))
    assert _same_value(gen.jsonable(gpu_metric.get()), gen.jsonable(cpu_metric.get()))


# -- the fixtures themselves --------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the real MXNet reproduces the committed fixtures (byte for
    byte on the machine that wrote them; ``fixture_files.assert_reproduced`` elsewhere)."""
    run = subprocess.run([str(ORACLE), str(GENERATOR), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=HERE.parent)
    assert run.returncode == 0, f"generator failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    assert_reproduced(tmp_path, FIXTURES, ["cases.json"],
                      "tests/fixtures/make_mxnet_metric_fixtures.py")
