"""``gluon.Trainer``: steps against MXNet 1.9.1 (fixtures), gradient summing over contexts,
stale gradients, states files and errors.

Gradients are set by hand here, with the freshness flag autograd's ``backward`` sets
(``data._ag.fresh``); one test runs real ``autograd.backward`` end to end.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import pickle

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, gluon, lr_scheduler, nd
from hybridgpu import optimizer as opt_mod
from hybridgpu.base import MXNetError
from hybridgpu.gluon.trainer import StaleGradientError, Trainer

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mxnet_optimizers"
_spec = importlib.util.spec_from_file_location(
    "make_mxnet_optimizer_fixtures",
    ROOT / "tests" / "fixtures" / "make_mxnet_optimizer_fixtures.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

DOC = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))
CTXS = [mx.cpu(0), mx.cpu(1)]


def make_params(ctxs=None, grad_req="write"):
    """The generator's three parameters (with their lr/wd multipliers), on ``ctxs`` (default:
    cpu(0))."""
    ctxs = [mx.cpu(0)] if ctxs is None else ctxs
    params = []
    for k, (name, shape, lr_mult, wd_mult) in enumerate(gen.PARAMS):
        p = gluon.Parameter(name, shape=shape, lr_mult=lr_mult, wd_mult=wd_mult,
                            grad_req=grad_req)
        p.initialize(ctx=list(ctxs))
        p.set_data(nd.array(gen.initial_weight(k, shape)))
        params.append(p)
    return params


def set_grad(param, ctx, value):
    """Write a gradient as backward would: the values and the freshness flag."""
    param.grad(ctx)[:] = value
    param.data(ctx)._ag.fresh = True


def set_step_grads(params, step, ctxs):
    for k, p in enumerate(params):
        for c, ctx in enumerate(ctxs):
            set_grad(p, ctx, nd.array(gen.gradient(k, step, p.shape) * (c + 1), ctx=ctx))


# -- against MXNet ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(gen.TRAINERS))
def test_two_context_steps_match_mxnet(name):
    spec = gen.TRAINERS[name]
    params = make_params(CTXS)
    trainer = Trainer(params, spec["optimizer"], dict(spec["kwargs"]))
    for step in range(gen.STEPS):
        set_step_grads(params, step, CTXS)
        trainer.step(spec["batch_size"])
        for k, p in enumerate(params):
            for c, ctx in enumerate(CTXS):
                np.testing.assert_allclose(
                    p.data(ctx).asnumpy(), ARRAYS[f"trainer:{name}/{step}/{k}/{c}"],
                    rtol=1e-5, atol=1e-6, err_msg=f"{name}: {p.name} on {ctx}, step {step}")
    result = DOC["trainers"][name]
    assert trainer.learning_rate == pytest.approx(result["learning_rate"])
    assert trainer.optimizer.num_update == result["num_update"]


# -- steps -----------------------------------------------------------------------------------

def test_step_rescales_by_batch_size_and_uses_lr_mult():
    w = gluon.Parameter("w", shape=(2,), init="ones", lr_mult=0.5)
    w.initialize()
    trainer = Trainer([w], "sgd", {"learning_rate": 0.2})
    set_grad(w, mx.cpu(0), nd.array([4.0, -8.0]))
    trainer.step(batch_size=4)
    np.testing.assert_allclose(w.data().asnumpy(), [1 - 0.1 * 1.0, 1 + 0.1 * 2.0], rtol=1e-6)
    assert trainer.optimizer.rescale_grad == 0.25


def test_allreduce_sums_gradients_into_every_copy():
    w = gluon.Parameter("w", shape=(3,), init="zeros")
    w.initialize(ctx=CTXS)
    trainer = Trainer([w], "sgd")
    set_grad(w, CTXS[0], nd.array([1.0, 2.0, 3.0]))
    set_grad(w, CTXS[1], nd.array([10.0, 20.0, 30.0], ctx=CTXS[1]))
    trainer.allreduce_grads()
    for g in w.list_grad():
        assert g.asnumpy().tolist() == [11.0, 22.0, 33.0]


def test_allreduce_then_update_equals_step():
    a, b = make_params(CTXS), make_params(CTXS)
    ta = Trainer(a, "adam", {"learning_rate": 0.01})
    tb = Trainer(b, "adam", {"learning_rate": 0.01})
    for step in range(3):
        set_step_grads(a, step, CTXS)
        set_step_grads(b, step, CTXS)
        ta.step(2)
        tb.allreduce_grads()
        tb.update(2)
    for pa, pb in zip(a, b):
        for ctx in CTXS:
            np.testing.assert_array_equal(pa.data(ctx).asnumpy(), pb.data(ctx).asnumpy())


def test_dict_params_are_taken_in_sorted_order():
    pd = gluon.ParameterDict()
    for name in ("zeta", "alpha", "mid"):
        pd.get(name, shape=(1,), init="zeros").initialize()
    trainer = Trainer(pd, "sgd")
    assert [p.name for p in trainer._params] == ["alpha", "mid", "zeta"]
    assert trainer.optimizer.param_dict[0].name == "alpha"


def test_grad_req_null_parameters_are_skipped():
    w = gluon.Parameter("w", shape=(2,), init="ones")
    frozen = gluon.Parameter("frozen", shape=(2,), init="ones", grad_req="null")
    for p in (w, frozen):
        p.initialize()
    trainer = Trainer([w, frozen], "sgd", {"learning_rate": 1.0})
    set_grad(w, mx.cpu(0), nd.ones(2))
    trainer.step(1)
    assert w.data().asnumpy().tolist() == [0.0, 0.0]
    assert frozen.data().asnumpy().tolist() == [1.0, 1.0]


def test_copy_made_after_trainer_gets_the_same_state():
    w = gluon.Parameter("w", shape=(2,), init="ones")
    w.initialize(ctx=mx.cpu(0))
    trainer = Trainer([w], "sgd", {"learning_rate": 0.1, "momentum": 0.9})
    for _ in range(2):
        set_grad(w, mx.cpu(0), nd.ones(2))
        trainer.step(1)
    w.data(mx.cpu(1))  # hybridgpu copies the parameter to a new context on first use
    for ctx in CTXS:
        set_grad(w, ctx, nd.array([0.5, 0.5], ctx=ctx))
    trainer.step(1)
    np.testing.assert_array_equal(w.data(mx.cpu(0)).asnumpy(), w.data(mx.cpu(1)).asnumpy())
    # momentum continued: 1 - 0.1 - 0.19 (two steps), then -0.1 * 1.0 - 0.9 * 0.19
    np.testing.assert_allclose(w.data(mx.cpu(1)).asnumpy(), 0.71 - 0.271, rtol=1e-6)


def test_with_autograd_backward_end_to_end():
    w = gluon.Parameter("w", shape=(3,), init="ones")
    w.initialize(ctx=CTXS)
    trainer = Trainer([w], "sgd", {"learning_rate": 0.1})
    for i, ctx in enumerate(CTXS):
        x = nd.array([1.0, 2.0, 3.0], ctx=ctx) * (i + 1)
        with autograd.record():
            loss = (w.data(ctx) * x).sum()
        loss.backward()
    trainer.step(1)
    for ctx in CTXS:
        np.testing.assert_allclose(w.data(ctx).asnumpy(), [0.7, 0.4, 0.1], rtol=1e-6)
    with pytest.raises(StaleGradientError):
        trainer.step(1)


# -- stale gradients ---------------------------------------------------------------------------

def test_stale_gradient_names_parameter_and_context():
    params = make_params(CTXS)
    trainer = Trainer(params, "sgd")
    set_step_grads(params, 0, CTXS)
    params[1].data(CTXS[1])._ag.fresh = False
    before = [p.data(CTXS[0]).asnumpy() for p in params]
    with pytest.raises(UserWarning, match=r"Parameter `fc_bias` on context cpu\(1\) has not "
                                          "been updated by backward"):
        trainer.step(1)
    for p, old in zip(params, before):  # nothing was updated
        np.testing.assert_array_equal(p.data(CTXS[0]).asnumpy(), old)


def test_ignore_stale_grad_skips_stale_copies():
    w, v = gluon.Parameter("w", shape=(2,), init="ones"), gluon.Parameter("v", shape=(2,),
                                                                           init="ones")
    for p in (w, v):
        p.initialize()
    trainer = Trainer([w, v], "sgd", {"learning_rate": 1.0})
    set_grad(w, mx.cpu(0), nd.ones(2))
    v.grad()[:] = 5.0  # written, but not by backward: stale
    trainer.step(1, ignore_stale_grad=True)
    assert w.data().asnumpy().tolist() == [0.0, 0.0]
    assert v.data().asnumpy().tolist() == [1.0, 1.0]
    assert w.data()._ag.fresh is False
    with pytest.raises(StaleGradientError, match="`w`"):
        trainer.step(1)


# -- learning rate ---------------------------------------------------------------------------

def test_learning_rate_and_scheduler():
    w = gluon.Parameter("w", shape=(1,), init="zeros")
    w.initialize()
    trainer = Trainer([w], "sgd", {"learning_rate": 0.5})
    trainer.set_learning_rate(0.25)
    assert trainer.learning_rate == 0.25
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    trainer = Trainer([w], "sgd", {"lr_scheduler": sched})
    for _ in range(3):
        set_grad(w, mx.cpu(0), nd.ones(1))
        trainer.step(1)
    assert trainer.learning_rate == 0.25
    with pytest.raises(UserWarning, match="LRScheduler"):
        trainer.set_learning_rate(0.1)


# -- states files ------------------------------------------------------------------------------

def _train(params, trainer, steps, start=0, ctxs=CTXS):
    for step in range(start, start + steps):
        set_step_grads(params, step, ctxs)
        trainer.step(2)


@pytest.mark.parametrize("name,kwargs", [
    ("adam", {"learning_rate": 0.01}), ("sgd", {"momentum": 0.9, "learning_rate": 0.1}),
    ("rmsprop", {"centered": True})])
def test_save_load_states_round_trip(tmp_path, name, kwargs):
    params = make_params(CTXS)
    trainer = Trainer(params, name, dict(kwargs))
    _train(params, trainer, 2)
    path = tmp_path / "trainer.states"
    trainer.save_states(str(path))
    assert not path.read_bytes().startswith(b"\x80")  # not a pickle
    assert os.listdir(tmp_path) == ["trainer.states"]  # atomic: no temporary left behind

    clone_params = make_params(CTXS)
    for p, q in zip(params, clone_params):
        q.set_data(p.data(CTXS[0]))
    clone = Trainer(clone_params, name)
    clone.load_states(path)
    assert clone.learning_rate == trainer.learning_rate
    assert clone.optimizer.num_update == trainer.optimizer.num_update == 2
    _train(params, trainer, 2, start=2)
    _train(clone_params, clone, 2, start=2)
    for p, q in zip(params, clone_params):
        for ctx in CTXS:
            np.testing.assert_array_equal(p.data(ctx).asnumpy(), q.data(ctx).asnumpy())


def test_load_states_before_any_step_and_into_one_context(tmp_path):
    params = make_params(CTXS)
    trainer = Trainer(params, "adam")
    _train(params, trainer, 1)
    trainer.save_states(tmp_path / "s")
    single = make_params([mx.cpu(0)])
    other = Trainer(single, "adam")
    other.load_states(tmp_path / "s")
    assert sorted(other._updaters[0].states) == [0, 1, 2]
    _train(single, other, 1, start=1, ctxs=[mx.cpu(0)])  # states move to the weight's context


def test_load_states_rejects_mismatched_files(tmp_path):
    params = make_params()
    trainer = Trainer(params, "adam")
    _train(params, trainer, 1, ctxs=[mx.cpu(0)])
    path = tmp_path / "adam.states"
    trainer.save_states(path)

    with pytest.raises(MXNetError, match="saved by optimizer 'Adam'.*uses 'SGD'"):
        Trainer(make_params(), "sgd").load_states(path)
    w = gluon.Parameter("w", shape=(5,), init="zeros")
    w.initialize()
    with pytest.raises(MXNetError, match="parameter index 1.*has 1 parameters"):
        Trainer([w], "adam").load_states(path)
    others = [gluon.Parameter(f"p{k}", shape=(k + 2,), init="zeros") for k in range(3)]
    for p in others:
        p.initialize()
    with pytest.raises(MXNetError, match="Parameter 'p0'.*shape \\(2, 3\\).*shape \\(2,\\)"):
        Trainer(others, "adam").load_states(path)

    pickled = tmp_path / "mxnet.states"
    pickled.write_bytes(pickle.dumps({0: None}))
    with pytest.raises(MXNetError, match="never unpickles"):
        trainer.load_states(pickled)
    garbage = tmp_path / "garbage.states"
    garbage.write_bytes(b"\x12\x01" + b"\x00" * 30)
    with pytest.raises(MXNetError):
        trainer.load_states(garbage)


# -- construction errors -------------------------------------------------------------------------

def test_construction_errors():
    w = gluon.Parameter("w", shape=(1,), init="zeros")
    with pytest.raises(MXNetError, match="has not been initialized"):
        Trainer([w], "sgd")
    w.initialize()
    with pytest.raises(ValueError, match="list or dict of Parameters"):
        Trainer(w, "sgd")
    with pytest.raises(ValueError, match="got list of"):
        Trainer([w, nd.ones(1)], "sgd")
    with pytest.raises(ValueError, match="Cannot find optimizer 'adamm'.*adam"):
        Trainer([w], "adamm")
    with pytest.raises(ValueError, match="optimizer_params must be None"):
        Trainer([w], opt_mod.SGD(), {"learning_rate": 0.1})
    with pytest.raises(MXNetError, match="distributed training is not supported"):
        Trainer([w], "sgd", kvstore="dist_sync")
    with pytest.raises(MXNetError, match="Unknown kvstore type 'foo'"):
        Trainer([w], "sgd", kvstore="foo")
    for kv in ("device", "local", None):
        assert Trainer([w], "sgd", kvstore=kv, update_on_kvstore=False).optimizer is not None


def test_optimizer_instance_gets_param_dict():
    w = gluon.Parameter("w", shape=(1,), init="zeros", lr_mult=3.0)
    w.initialize()
    sgd = opt_mod.SGD(learning_rate=0.1)
    trainer = Trainer([w], sgd)
    assert trainer.optimizer is sgd and sgd._get_lr(0) == pytest.approx(0.3)


# -- gpu -------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_and_cpu_copies_train_identically(gpu_available):
    # Update counts are kept per device id, as in MXNet: cpu(0) and gpu(0) would share them
    # (and count every step twice), so the cpu copy lives on cpu(1).
    ctxs = [mx.cpu(1), gpu_available]
    params = make_params(ctxs)
    reference = make_params([mx.cpu(0)])
    trainer = Trainer(params, "adam", {"learning_rate": 0.01, "wd": 0.01})
    ref_trainer = Trainer(reference, "adam", {"learning_rate": 0.01, "wd": 0.01})
    for step in range(3):
        set_step_grads(params, step, ctxs)
        for k, p in enumerate(reference):  # the summed gradient: g * 1 + g * 2
            set_grad(p, mx.cpu(0), nd.array(gen.gradient(k, step, p.shape) * 3))
        trainer.step(2)
        ref_trainer.step(2)
    for p, r in zip(params, reference):
        for ctx in ctxs:
            np.testing.assert_allclose(p.data(ctx).asnumpy(), r.data().asnumpy(), rtol=1e-5,
                                       atol=1e-6)
