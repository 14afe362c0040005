"""``mx.mod.Module``, ``mx.model`` checkpoints and ``mx.callback`` against MXNet 1.9.1
(fixtures written by ``tests/fixtures/make_mxnet_module_fixtures.py``): ``fit`` for two
epochs (parameters, log lines, ``predict``, ``score``), one manual step with input gradients,
checkpoint files both ways. ``oracle`` tests (skipped without ``.oracle/``) load checkpoints
written here in the real MXNet.

Run: ``PYTHONPATH=src python -m pytest -q tests/test_module.py``
"""

from __future__ import annotations

import json
import logging
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_module"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"
sys.path.insert(0, str(HERE / "fixtures"))

import make_mxnet_module_fixtures as gen  # noqa: E402

DOC = json.loads((FIXTURES / "module.json").read_text())
with np.load(FIXTURES / "arrays.npz", allow_pickle=False) as _npz:
    ARRAYS = {key: _npz[key] for key in _npz.files}
needs_oracle = pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the oracle at {ORACLE}")
RTOL, ATOL = 1e-5, 1e-6


def _close(actual, expected, what):
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


def _fit(name, tmp_path, **kwargs):
    symbol = gen.MODELS[name](mx)
    arg_params, aux_params = gen.initial_params(mx, symbol)
    train, val = gen._iters(mx)
    mod = mx.mod.Module(symbol, context=mx.cpu())
    handler = gen.capture_logs()
    prefix = str(tmp_path / name)
    try:
        mod.fit(train, eval_data=val, eval_metric="acc", optimizer=gen.FIT_OPTIMIZER[0],
                optimizer_params=gen.FIT_OPTIMIZER[1], arg_params=arg_params,
                aux_params=aux_params, num_epoch=gen.NUM_EPOCH,
                batch_end_callback=mx.callback.Speedometer(gen.BATCH_SIZE, frequent=2),
                epoch_end_callback=mx.callback.do_checkpoint(prefix), **kwargs)
    finally:
        logging.getLogger().removeHandler(handler)
    log = [gen.mask_log(line).replace(str(tmp_path), "<dir>") for line in handler.lines]
    return mod, val, log, prefix


@pytest.mark.parametrize("name", sorted(gen.MODELS))
def test_fit_matches_mxnet(name, tmp_path):
    mod, val, log, _ = _fit(name, tmp_path)
    assert log == DOC[name]["log"]
    args, auxs = mod.get_params()
    assert sorted(args) == DOC[name]["arg_names"] and sorted(auxs) == DOC[name]["aux_names"]
    for key, value in {**args, **auxs}.items():
        _close(value.asnumpy(), ARRAYS[f"{name}/fit/{key}"], key)
    _close(mod.predict(val).asnumpy(), ARRAYS[f"{name}/predict"], "predict")
    assert [[n, pytest.approx(v)] for n, v in mod.score(val, "acc")] == DOC[name]["score"]
    assert mod.output_names == DOC[name]["output_names"]
    assert mod.data_names == DOC[name]["data_names"]
    assert mod.label_names == DOC[name]["label_names"]


def test_speedometer_line_format(caplog):
    speed = mx.callback.Speedometer(batch_size=10, frequent=2, auto_reset=False)
    metric = mx.metric.Accuracy()
    metric.update([mx.nd.array([1, 0])], [mx.nd.array([[0.1, 0.9], [0.2, 0.8]])])
    with caplog.at_level(logging.INFO):
        for nbatch in range(5):
            speed(mx.model.BatchEndParam(3, nbatch, metric, None))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert gen.mask_log(lines[0]) == "Epoch[3] Batch [0-2]\tSpeed: # samples/sec\taccuracy=0.500000"
    assert gen.mask_log(lines[1]).startswith("Epoch[3] Batch [0-4]")
    caplog.clear()
    with caplog.at_level(logging.INFO):
        bare = mx.callback.Speedometer(batch_size=1, frequent=1)
        bare(mx.model.BatchEndParam(0, 0, None, None))
        bare(mx.model.BatchEndParam(0, 1, None, None))
    assert gen.mask_log(caplog.records[0].getMessage()) == "Iter[0] Batch [1]\tSpeed: # samples/sec"


@pytest.mark.parametrize("name", sorted(gen.MODELS))
def test_manual_step_matches_mxnet(name):
    symbol = gen.MODELS[name](mx)
    arg_params, aux_params = gen.initial_params(mx, symbol)
    train, _ = gen._iters(mx)
    mod = mx.mod.Module(symbol, context=mx.cpu())
    mod.bind(train.provide_data, train.provide_label, inputs_need_grad=True)
    mod.init_params(arg_params=arg_params, aux_params=aux_params)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.5})
    mod.forward(next(iter(train)), is_train=True)
    _close(mod.get_outputs()[0].asnumpy(), ARRAYS[f"{name}/step/output"], "output")
    mod.backward()
    _close(mod.get_input_grads()[0].asnumpy(), ARRAYS[f"{name}/step/input_grad"], "input grad")
    mod.update()
    args, auxs = mod.get_params()
    for key, value in {**args, **auxs}.items():
        _close(value.asnumpy(), ARRAYS[f"{name}/step/{key}"], key)


@pytest.mark.parametrize("name", sorted(gen.MODELS))
def test_mxnet_checkpoint_loads_here(name, tmp_path):
    for suffix in ("-symbol.json", "-0002.params"):
        shutil.copy(FIXTURES / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
    symbol, args, auxs = mx.model.load_checkpoint(str(tmp_path / name), 2)
    assert symbol.list_arguments() == gen.MODELS[name](mx).list_arguments()
    for key, value in {**args, **auxs}.items():
        _close(value.asnumpy(), ARRAYS[f"{name}/fit/{key}"], key)
    mod = mx.mod.Module.load(str(tmp_path / name), 2)
    _, val = gen._iters(mx)
    mod.bind(val.provide_data, val.provide_label, for_training=False)
    _close(mod.predict(val).asnumpy(), ARRAYS[f"{name}/predict"], "predict")


def test_checkpoint_round_trip_and_keys(tmp_path):
    mod, val, _, prefix = _fit("bn", tmp_path)
    saved = mx.nd.load(f"{prefix}-0002.params")
    assert sorted(saved) == sorted(
        [f"arg:{n}" for n in DOC["bn"]["arg_names"]] + [f"aux:{n}" for n in DOC["bn"]["aux_names"]])
    mod.save_checkpoint(str(tmp_path / "again"), 7)
    symbol, args, auxs = mx.model.load_checkpoint(str(tmp_path / "again"), 7)
    assert symbol.tojson() == mod.symbol.tojson()
    for key, value in {**args, **auxs}.items():
        _close(value.asnumpy(), ARRAYS[f"bn/fit/{key}"], key)


def test_checkpoint_with_foreign_keys_raises(tmp_path):
    mx.nd.save(str(tmp_path / "x-0001.params"), {"fc_weight": mx.nd.ones(1)})
    with pytest.raises(mx.MXNetError, match="not 'arg:<name>' or 'aux:<name>'"):
        mx.model.load_params(str(tmp_path / "x"), 1)


ORACLE_SCRIPT = """
import sys, numpy as np, mxnet as mx
prefix, data_file, out_file = sys.argv[1:4]
sym, args, auxs = mx.model.load_checkpoint(prefix, 2)
x = np.load(data_file)
mod = mx.mod.Module(sym, context=mx.cpu())
mod.bind([("data", x.shape)], for_training=False)
mod.set_params(args, auxs)
np.save(out_file, mod.predict(mx.io.NDArrayIter(x, batch_size=len(x))).asnumpy())
"""


@needs_oracle
@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(gen.MODELS))
def test_checkpoint_written_here_loads_in_mxnet(name, tmp_path):
    mod, val, _, prefix = _fit(name, tmp_path)
    x = gen.fit_data()[2][:6]
    np.save(tmp_path / "x.npy", x)
    subprocess.run([str(ORACLE), "-c", ORACLE_SCRIPT, prefix, str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], check=True, capture_output=True)
    ours = mod.predict(mx.io.NDArrayIter(x, batch_size=len(x))).asnumpy()
    _close(ours, np.load(tmp_path / "y.npy"), "mxnet output")


# -- the API's smaller parts ---------------------------------------------------------------

def _mlp_module(**kwargs):
    mod = mx.mod.Module(gen.build_mlp(mx), **kwargs)
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    return mod


def test_steps_out_of_order_raise_naming_the_step():
    mod = mx.mod.Module(gen.build_mlp(mx))
    with pytest.raises(RuntimeError, match="call bind"):
        mod.init_params()
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    with pytest.raises(RuntimeError, match="call init_params"):
        mod.forward(mx.io.DataBatch([mx.nd.ones((4, 5))]))
    mod.init_params()
    with pytest.raises(RuntimeError, match="call init_optimizer"):
        mod.update()
    with pytest.raises(RuntimeError, match="inputs_need_grad"):
        mod.get_input_grads()


def test_bad_names_and_contexts_raise():
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(gen.build_mlp(mx), data_names=["x"])
    with pytest.raises(NotImplementedError, match="one context per Module"):
        mx.mod.Module(gen.build_mlp(mx), context=[mx.cpu(0), mx.cpu(1)])
    mod = mx.mod.Module(gen.build_mlp(mx))
    with pytest.raises(ValueError, match="data_names are"):
        mod.bind([("x", (4, 5))])


def test_init_params_missing_names_and_set_get_params():
    mod = _mlp_module()
    with pytest.raises(RuntimeError, match="fc1_bias is not presented"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.ones((8, 5))})
    mod.init_params(mx.init.Zero(), arg_params={"fc1_weight": mx.nd.ones((8, 5))},
                    allow_missing=True)
    args, _ = mod.get_params()
    assert args["fc1_weight"].asnumpy().min() == 1 and args["fc2_weight"].asnumpy().max() == 0
    new = {k: mx.nd.full(v.shape, 0.5) for k, v in args.items()}
    mod.set_params(new, {}, allow_extra=True)
    assert mod.get_params()[0]["fc2_bias"].asnumpy().tolist() == [0.5] * 3
    with pytest.warns(UserWarning, match="init_params call ignored"):
        mod.init_params()


def test_fixed_params_are_not_updated():
    mod = _mlp_module(fixed_param_names=["fc1_weight"])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.array([0, 1, 2, 0])])
    mod.forward_backward(batch)
    mod.update()
    args, _ = mod.get_params()
    assert np.allclose(args["fc1_weight"].asnumpy(), 0.1)
    assert not np.allclose(args["fc2_weight"].asnumpy(), 0.1)


def test_forward_with_a_new_batch_size_rebinds():
    mod = _mlp_module()
    mod.init_params(mx.init.Constant(0.1))
    mod.forward(mx.io.DataBatch([mx.nd.ones((7, 5))], [mx.nd.zeros(7)]), is_train=False)
    assert mod.get_outputs()[0].shape == (7, 3)
    assert mod.data_shapes[0].shape == (7, 5)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), 1 / 3, rtol=1e-6)


def test_predict_numpy_and_unmerged_batches():
    mod = _mlp_module()
    mod.init_params(mx.init.Constant(0.1))
    assert mod.predict(np.ones((4, 5), np.float32)).shape == (4, 3)
    it = mx.io.NDArrayIter(np.ones((6, 5)), np.zeros(6), batch_size=4)
    per_batch = mod.predict(it, merge_batches=False)
    assert [[o.shape for o in outs] for outs in per_batch] == [[(4, 3)], [(2, 3)]]
    assert mod.predict(it, always_output_list=True)[0].shape == (6, 3)


def test_fit_through_a_kvstore_object_matches_local_updates(tmp_path):
    local, *_ = _fit("mlp", tmp_path)
    through_kv, *_ = _fit("mlp", tmp_path, kvstore=mx.kv.create("device"))
    for key, value in through_kv.get_params()[0].items():
        _close(value.asnumpy(), local.get_params()[0][key].asnumpy(), key)


def test_optimizer_states_round_trip(tmp_path):
    mod = _mlp_module()
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    batch = mx.io.DataBatch([mx.nd.ones((4, 5))], [mx.nd.array([0, 1, 2, 0])])
    mod.forward_backward(batch)
    mod.update()
    mod.save_checkpoint(str(tmp_path / "m"), 1, save_optimizer_states=True)
    again = mx.mod.Module.load(str(tmp_path / "m"), 1, load_optimizer_states=True)
    again.bind([("data", (4, 5))], [("softmax_label", (4,))])
    again.init_optimizer(optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for module in (mod, again):
        module.forward_backward(batch)
        module.update()
    for key, value in again.get_params()[0].items():
        _close(value.asnumpy(), mod.get_params()[0][key].asnumpy(), key)


def test_score_and_metric_callbacks(caplog):
    mod = _mlp_module()
    mod.init_params(mx.init.Constant(0.1))
    it = mx.io.NDArrayIter(np.ones((8, 5)), np.zeros(8), batch_size=4)
    ends = []
    with caplog.at_level(logging.INFO):
        mod.score(it, "acc", batch_end_callback=mx.callback.log_train_metric(1),
                  score_end_callback=ends.append)
    assert ends[0].nbatch == 2
    assert "Iter[0] Batch[1] Train-accuracy=" in caplog.text


@needs_oracle
@pytest.mark.oracle
def test_generator_reproduces_the_committed_fixtures(tmp_path):
    subprocess.run([str(ORACLE), str(HERE / "fixtures" / "make_mxnet_module_fixtures.py"),
                    "--out", str(tmp_path)], check=True, capture_output=True)
    for path in sorted(FIXTURES.iterdir()):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_other_callbacks(tmp_path, caplog):
    mod = _mlp_module()
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer()
    save = mx.callback.module_checkpoint(mod, str(tmp_path / "m"), period=2,
                                         save_optimizer_states=True)
    save(0)
    save(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-0002.params", "m-0002.states",
                                                          "m-symbol.json"]
    metric = mx.metric.create("acc")
    metric.update([mx.nd.array([1])], [mx.nd.array([[0.0, 1.0]])])
    caplog.clear()
    with caplog.at_level(logging.INFO):
        mx.callback.ProgressBar(total=4, length=8)(mx.model.BatchEndParam(0, 2, None, None))
        mx.callback.LogValidationMetricsCallback()(mx.model.BatchEndParam(5, 0, metric, None))
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["[====----] 50%\r", "Epoch[5] Validation-accuracy=1.000000"]
