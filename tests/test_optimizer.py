"""``mx.optimizer`` and ``mx.lr_scheduler`` against MXNet 1.9.1.

The fixtures in ``tests/fixtures/mxnet_optimizers/`` were written by
``make_mxnet_optimizer_fixtures.py`` under the oracle: every optimizer case updates three
parameters (with lr/wd multipliers, weight decay, ``rescale_grad`` and ``clip_gradient``) for
several steps through an updater, and every scheduler is called over a range of updates. The
tests rebuild the same inputs with the generator's NumPy functions and compare step by step.
"""

from __future__ import annotations

import filecmp
import importlib.util
import json
import pathlib
import subprocess
import types
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import lr_scheduler, nd
from hybridgpu import optimizer as opt_mod
from hybridgpu.base import MXNetError

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mxnet_optimizers"
ORACLE = ROOT / ".oracle" / "bin" / "python"

_spec = importlib.util.spec_from_file_location(
    "make_mxnet_optimizer_fixtures",
    ROOT / "tests" / "fixtures" / "make_mxnet_optimizer_fixtures.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

DOC = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))

#: (rtol, atol) per case dtype. float16 without multi_precision: MXNet's kernels compute each
#: expression in float32 and round once, NumPy rounds every operation to float16.
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-5, 1e-7), "float16": (2e-3, 1e-3)}
TOL_FP16_NO_MP = (1e-2, 4e-3)


def build_optimizer(case):
    """The hybridgpu optimizer for a fixture case (as the generator built MXNet's)."""
    kwargs = dict(case["kwargs"])
    if "lr_scheduler" in kwargs:
        klass, skw = kwargs.pop("lr_scheduler")
        kwargs["lr_scheduler"] = getattr(lr_scheduler, klass)(**skw)
    if case["mults"] == "param_dict":
        kwargs["param_dict"] = {k: types.SimpleNamespace(lr_mult=lm, wd_mult=wm)
                                for k, (_, _, lm, wm) in enumerate(gen.PARAMS)}
    elif case["mults"] == "idx2name":
        kwargs["param_idx2name"] = {k: p[0] for k, p in enumerate(gen.PARAMS)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt = opt_mod.create(case["optimizer"], **kwargs)
    if case["mults"] == "idx2name":
        opt.set_lr_mult({"fc_bias": 3.0})
        opt.set_wd_mult({"emb": 2.0})
    return opt


def initial_weights(dtype):
    return [nd.array(gen.initial_weight(k, p[1], dtype), dtype=dtype)
            for k, p in enumerate(gen.PARAMS)]


def step_grads(step, dtype):
    return [nd.array(gen.gradient(k, step, p[1], dtype), dtype=dtype)
            for k, p in enumerate(gen.PARAMS)]


def _tolerance(case):
    if case["dtype"] == "float16" and not case["kwargs"].get("multi_precision"):
        return TOL_FP16_NO_MP
    return TOL[case["dtype"]]


@pytest.mark.parametrize("name", sorted(gen.CASES))
def test_updates_match_mxnet(name):
    case = DOC["cases"][name]
    opt = build_optimizer(case)
    updater = opt_mod.get_updater(opt)
    weights = initial_weights(case["dtype"])
    rtol, atol = _tolerance(case)
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(DOC["steps"]):
            updater(list(range(len(weights))), step_grads(step, case["dtype"]), weights)
            lrs.append(opt.learning_rate)
            for k, w in enumerate(weights):
                want = ARRAYS[f"{name}/{step}/{k}"]
                assert w.dtype == want.dtype
                np.testing.assert_allclose(w.asnumpy(), want, rtol=rtol, atol=atol,
                                           err_msg=f"{name}: parameter {k} after step {step}")
    assert lrs == pytest.approx(case["result"]["learning_rates"], rel=1e-12)
    assert opt.num_update == case["result"]["num_update"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["sgd_momentum", "sgd_momentum_fp16_mp", "nag", "signum",
                                  "adam", "adamw", "rmsprop_centered", "adagrad", "adadelta",
                                  "ftml"])
def test_updates_on_gpu_match_mxnet(name, gpu_available):
    case = DOC["cases"][name]
    opt = build_optimizer(case)
    updater = opt_mod.get_updater(opt)
    weights = [w.as_in_context(gpu_available) for w in initial_weights(case["dtype"])]
    rtol, atol = _tolerance(case)
    for step in range(DOC["steps"]):
        grads = [g.as_in_context(gpu_available) for g in step_grads(step, case["dtype"])]
        updater(list(range(len(weights))), grads, weights)
        for k, w in enumerate(weights):
            assert w.context == gpu_available
            np.testing.assert_allclose(w.asnumpy(), ARRAYS[f"{name}/{step}/{k}"], rtol=rtol,
                                       atol=atol, err_msg=f"{name} on gpu: {k}, step {step}")
    assert all(isinstance(s, nd.NDArray) and s.context == gpu_available
               for s in _state_arrays(updater.states))


_GUARD_CASES = [("sgd", {"momentum": 0.9}), ("sgd", {}), ("nag", {"momentum": 0.9}),
                ("signum", {"wd_lh": 0.01}), ("signum", {"momentum": 0.0}), ("adam", {}),
                ("adamw", {}), ("rmsprop", {"clip_weights": 0.5}),
                ("rmsprop", {"centered": True}), ("adagrad", {}), ("adadelta", {}), ("ftml", {})]


@pytest.mark.parametrize("name,kwargs", _GUARD_CASES, ids=lambda v: str(v))
def test_rules_run_on_the_cupy_guard(name, kwargs):
    """Every rule on a stand-in for CuPy (tests/test_cupy_compat.py): only CuPy functions, no
    NumPy calls on device arrays, no host syncs; same values as the NumPy run."""
    from test_cupy_compat import DEVICE, DeviceArray, device_session

    opt = opt_mod.create(name, learning_rate=0.05, wd=0.01, rescale_grad=0.5,
                         clip_gradient=1.2, **kwargs)
    weight = gen.initial_weight(0, (2, 3))
    state = opt.create_state(0, nd.array(weight))
    host_state = opt_mod.optimizer.raw_state(state)
    device_state = opt_mod.optimizer.raw_state(opt.create_state(0, nd.array(weight)))

    def as_device(a):
        return None if a is None else np.ndarray.view(a, DeviceArray)

    device_state = (tuple(as_device(a) for a in device_state)
                    if isinstance(device_state, tuple) else as_device(device_state))
    host_w, device_w = weight.copy(), as_device(weight.copy())
    for t in (1, 2, 3):
        grad = gen.gradient(0, t, (2, 3))
        opt._step(np, host_w, grad, host_state, 0.05, 0.01, t)
        with device_session(f"optimizer {name}") as session:
            opt._step(DEVICE, device_w, as_device(grad.copy()), device_state, 0.05, 0.01, t)
        assert not session.misuses and not session.syncs
    np.testing.assert_array_equal(np.ndarray.view(device_w, np.ndarray), host_w)


def _state_arrays(states):
    for state in states.values():
        yield from (state if isinstance(state, tuple) else [state])


@pytest.mark.parametrize("name", sorted(gen.SCHEDULERS))
def test_scheduler_values_match_mxnet(name):
    klass, kwargs, updates = gen.SCHEDULERS[name]
    sched = getattr(lr_scheduler, klass)(**kwargs)
    got = [sched(n) for n in updates]
    assert got == pytest.approx(DOC["schedulers"][name], rel=1e-12, abs=1e-15)


# -- the Optimizer base --------------------------------------------------------------------------

def test_create_is_case_insensitive_and_registry_lists_builtins():
    assert type(opt_mod.create("SGD")) is opt_mod.SGD
    assert type(opt_mod.create("AdaDelta")) is opt_mod.AdaDelta
    for name in ("sgd", "nag", "signum", "adam", "adamw", "rmsprop", "adagrad", "adadelta",
                 "ftml"):
        assert name in opt_mod.Optimizer.opt_registry


def test_unknown_optimizer_lists_available_ones():
    with pytest.raises(ValueError, match="Cannot find optimizer 'nosuch'") as info:
        opt_mod.create("nosuch")
    assert "adam" in str(info.value) and "sgd" in str(info.value)


def test_defaults_match_mxnet():
    sgd = opt_mod.SGD()
    assert (sgd.lr, sgd.wd, sgd.rescale_grad, sgd.clip_gradient, sgd.momentum) == (
        0.01, 0.0, 1.0, None, 0.0)
    adam = opt_mod.Adam()
    assert (adam.lr, adam.beta1, adam.beta2, adam.epsilon) == (0.001, 0.9, 0.999, 1e-8)
    rms = opt_mod.RMSProp()
    assert (rms.lr, rms.gamma1, rms.gamma2, rms.epsilon, rms.centered) == (
        0.001, 0.9, 0.9, 1e-8, False)
    assert opt_mod.Signum().lr == 0.01 and opt_mod.Signum().momentum == 0.9
    assert opt_mod.AdaGrad().float_stable_eps == 1e-7
    assert opt_mod.AdamW().epsilon == 1e-6


def test_register_custom_optimizer_and_update_through_updater():
    @opt_mod.register
    class HalfStep(opt_mod.Optimizer):
        def update(self, index, weight, grad, state):
            self._update_count(index)
            weight[:] = weight - self._get_lr(index) * grad * 0.5

    try:
        opt = opt_mod.create("halfstep", learning_rate=1.0)
        updater = opt_mod.get_updater(opt)
        w = nd.ones(3)
        updater([0], [nd.ones(3)], [w])
        np.testing.assert_allclose(w.asnumpy(), 0.5)
        assert updater.states == {0: None} and opt.num_update == 1
    finally:
        del opt_mod.Optimizer.opt_registry["halfstep"]


def test_base_update_is_abstract():
    with pytest.raises(NotImplementedError):
        opt_mod.Optimizer().update(0, nd.ones(1), nd.ones(1), None)


def test_learning_rate_scheduler_and_set_learning_rate():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    with pytest.warns(UserWarning, match="overwritten"):
        opt = opt_mod.SGD(learning_rate=0.8, lr_scheduler=sched)
    assert sched.base_lr == 0.8 and opt.learning_rate == 0.8
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer"):
        opt.set_learning_rate(0.1)
    plain = opt_mod.SGD(learning_rate=0.3)
    plain.set_learning_rate(0.1)
    assert plain.learning_rate == 0.1


def test_mults_come_from_param_dict_before_names():
    params = {0: types.SimpleNamespace(lr_mult=3.0, wd_mult=0.0)}
    opt = opt_mod.SGD(learning_rate=0.1, wd=0.2, param_dict=params,
                      param_idx2name={0: "a_bias", 1: "b_bias", 2: "c_weight"})
    opt.set_lr_mult({1: 4.0})
    assert opt._get_lrs([0, 1, 2]) == pytest.approx([0.3, 0.4, 0.1])
    assert opt._get_wds([0, 1, 2]) == pytest.approx([0.0, 0.0, 0.2])


def test_num_update_counts_per_index_from_begin_num_update():
    opt = opt_mod.SGD(begin_num_update=10)
    w, g = nd.ones(2), nd.ones(2)
    opt.update(0, w, g, None)
    opt.update(0, w, g, None)
    opt.update(1, w, g, None)
    assert opt._index_update_count == {0: 12, 1: 11} and opt.num_update == 12


def test_list_update_equals_one_at_a_time():
    one = opt_mod.Adam(learning_rate=0.1, wd=0.01)
    many = opt_mod.Adam(learning_rate=0.1, wd=0.01)
    ws1, ws2 = initial_weights("float32"), initial_weights("float32")
    st1 = [one.create_state(k, w) for k, w in enumerate(ws1)]
    st2 = [many.create_state(k, w) for k, w in enumerate(ws2)]
    for step in range(3):
        grads = step_grads(step, "float32")
        for k in range(3):
            one.update(k, ws1[k], grads[k], st1[k])
        many.update([0, 1, 2], ws2, grads, st2)
    for a, b in zip(ws1, ws2):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_update_leaves_gradient_untouched():
    for name in ("sgd", "adadelta", "adam", "adagrad"):
        opt = opt_mod.create(name, rescale_grad=0.5, clip_gradient=0.1, momentum=0.9) \
            if name == "sgd" else opt_mod.create(name, rescale_grad=0.5, clip_gradient=0.1)
        w, g = nd.ones(3), nd.array([1.0, -2.0, 3.0])
        opt.update(0, w, g, opt.create_state(0, w))
        assert g.asnumpy().tolist() == [1.0, -2.0, 3.0], name


def test_multi_precision_states_and_fp16_warning():
    w = nd.ones(2, dtype="float16")
    sgd = opt_mod.SGD(momentum=0.9, multi_precision=True)
    mom, master = sgd.create_state_multi_precision(0, w)
    assert master.dtype == np.float32 and mom.dtype == np.float32
    adam = opt_mod.Adam(multi_precision=True)
    master, (mean, var) = adam.create_state_multi_precision(0, w)
    assert master.dtype == np.float32 and mean.dtype == np.float32
    with pytest.warns(UserWarning, match="multi_precision=True"):
        opt_mod.Adam().create_state_multi_precision(0, w)


def test_update_rejects_mismatched_lists_and_non_ndarrays():
    opt = opt_mod.SGD()
    with pytest.raises(ValueError, match="2 indices, 1 weights"):
        opt.update([0, 1], [nd.ones(1)], [nd.ones(1)], [None])
    with pytest.raises(TypeError, match="expects NDArrays"):
        opt.update(0, np.ones(1), nd.ones(1), None)


def test_deprecated_set_lr_scale():
    with pytest.raises(DeprecationWarning):
        opt_mod.SGD().set_lr_scale({})


# -- Updater states --------------------------------------------------------------------------

def _trained_updater(name, **kwargs):
    opt = opt_mod.create(name, **kwargs)
    updater = opt_mod.get_updater(opt)
    weights = initial_weights("float32")
    for step in range(2):
        updater([0, 1, 2], step_grads(step, "float32"), weights)
    return updater, weights


@pytest.mark.parametrize("name,kwargs", [
    ("sgd", {"momentum": 0.9}), ("sgd", {}), ("adam", {}), ("rmsprop", {"centered": True}),
    ("ftml", {}), ("sgd", {"momentum": 0.9, "multi_precision": True})])
def test_states_round_trip_continues_identically(name, kwargs):
    updater, weights = _trained_updater(name, learning_rate=0.05, **kwargs)
    blob = updater.get_states(dump_optimizer=True)
    assert isinstance(blob, bytes) and not blob.startswith(b"\x80")
    clone = opt_mod.get_updater(opt_mod.create(name))
    clone.set_states(blob)
    assert clone.optimizer.lr == 0.05 and clone.optimizer.num_update == 2
    assert clone.optimizer._index_update_count == {0: 2, 1: 2, 2: 2}
    clone_weights = [w.copy() for w in weights]
    grads = step_grads(2, "float32")
    updater([0, 1, 2], grads, weights)
    clone([0, 1, 2], grads, clone_weights)
    for a, b in zip(weights, clone_weights):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_states_file_is_readable_by_nd_load():
    updater, _ = _trained_updater("adam")
    loaded = nd.load_frombuffer(updater.get_states())
    assert opt_mod.states_io.META_NAME in loaded
    assert sorted(k for k in loaded if k.startswith("state:")) == [
        f"state:{k}" for k in range(6)]


def test_states_restore_scheduler_progress():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = opt_mod.SGD(lr_scheduler=sched)
    updater = opt_mod.get_updater(opt)
    for _ in range(3):
        updater(0, nd.ones(1), nd.ones(1))
    clone = opt_mod.get_updater(opt_mod.SGD(
        lr_scheduler=lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)))
    clone.set_states(updater.get_states(dump_optimizer=True))
    assert clone.optimizer.lr_scheduler.base_lr == sched.base_lr == 0.25
    assert clone.optimizer.learning_rate == opt.learning_rate


def test_set_states_refuses_pickles_and_foreign_files():
    updater = opt_mod.get_updater(opt_mod.SGD())
    import pickle

    with pytest.raises(MXNetError, match="never unpickles"):
        updater.set_states(pickle.dumps({0: None}))
    plain = mx.serialization.ndarray_file.dumps([np.zeros(2, np.float32)], names=["w"])
    with pytest.raises(MXNetError, match="not a hybridgpu optimizer-states file"):
        updater.set_states(plain)
    with pytest.raises(MXNetError):
        updater.set_states(b"garbage bytes")


def _crafted(meta, arrays=()):
    """A states blob with metadata ``meta`` (JSON-able, or raw bytes) and state ``arrays``."""
    raw = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    records = list(arrays) + [np.frombuffer(raw, dtype=np.uint8)]
    names = [f"state:{k}" for k in range(len(arrays))] + [opt_mod.states_io.META_NAME]
    return mx.serialization.ndarray_file.dumps(records, names)


_HEAD = {"format": opt_mod.states_io.FORMAT, "version": 1}


@pytest.mark.parametrize("blob,message", [
    (_crafted({"format": "other", "version": 1, "states": []}), "wrong format tag"),
    (_crafted({**_HEAD, "version": 7, "states": []}), "version 7 is not supported"),
    (_crafted(b"\xff\xfe not json"), "unreadable metadata"),
    (_crafted({**_HEAD, "states": [[0, {"array": 3}]]}, [np.zeros(2, np.float32)]),
     "array reference 3"),
    (_crafted({**_HEAD, "states": [[0, {"pickle": "x"}]]}), "unexpected JSON value"),
    (_crafted({**_HEAD, "states": {"0": 1}}), "must hold a JSON list"),
    (_crafted({**_HEAD, "states": [[0, None]]}, [np.zeros(1, np.float32)]), None),
    (_crafted({**_HEAD, "states": [[{"list": [1]}, None]]}), "invalid dict key"),
    (_crafted(b"[" * 100000 + b"]" * 100000), "nested too deeply|unreadable"),
    (_crafted({**_HEAD, "states": [], "optimizer": {
        "class": "SGD", "attrs": {"update": 1}, "current_device": 0, "lr_scheduler": None}}),
     "'update' cannot be restored"),
    (_crafted({**_HEAD, "states": [], "optimizer": [1]}), "must be a JSON object"),
])
def test_set_states_validates_crafted_files(blob, message):
    updater = opt_mod.get_updater(opt_mod.SGD())
    if message is None:  # well formed: an unused array is allowed
        updater.set_states(blob)
        assert updater.states == {0: None}
        return
    with pytest.raises(MXNetError, match=message):
        updater.set_states(blob)


def test_states_of_an_optimizer_with_fusion_turned_off_load():
    """``fused_updates = False`` is an instance's plain-data attribute over the class's
    default: saved and restored like the others (a class method's name is still refused)."""
    opt = opt_mod.create("adam", learning_rate=0.1)
    opt.fused_updates = False
    updater = opt_mod.get_updater(opt)
    updater(0, nd.ones(2), nd.ones(2))
    fresh = opt_mod.create("adam")
    restored = opt_mod.get_updater(fresh)
    restored.set_states(updater.get_states(dump_optimizer=True))
    assert fresh.fused_updates is False and fresh.lr == 0.1 and fresh.num_update == 1


def test_set_states_refuses_other_optimizer_class():
    updater, _ = _trained_updater("adam")
    other = opt_mod.get_updater(opt_mod.SGD())
    with pytest.raises(MXNetError, match="saved by optimizer 'Adam'.*'SGD'"):
        other.set_states(updater.get_states(dump_optimizer=True))


# -- schedulers ---------------------------------------------------------------------------------

def test_scheduler_argument_errors():
    with pytest.raises(ValueError, match="higher than warmup_begin_lr"):
        lr_scheduler.LRScheduler(base_lr=0.1, warmup_begin_lr=0.2)
    with pytest.raises(ValueError, match="linear and constant"):
        lr_scheduler.LRScheduler(warmup_mode="cubic")
    with pytest.raises(ValueError, match="greater or equal than 1"):
        lr_scheduler.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="no more than 1"):
        lr_scheduler.FactorScheduler(step=2, factor=1.5)
    with pytest.raises(ValueError, match="increasing"):
        lr_scheduler.MultiFactorScheduler(step=[3, 3])
    with pytest.raises(ValueError, match="strictly positive"):
        lr_scheduler.CosineScheduler(max_update=0)
    with pytest.raises(NotImplementedError):
        lr_scheduler.LRScheduler()(1)


# -- the generator -------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle writes the committed fixtures byte for
    byte."""
    subprocess.run([str(ORACLE), str(FIXTURES.parent / "make_mxnet_optimizer_fixtures.py"),
                    "--out", str(tmp_path)], check=True, capture_output=True, cwd=ROOT)
    for name in ("cases.json", "arrays.npz"):
        assert filecmp.cmp(tmp_path / name, FIXTURES / name, shallow=False), (
            f"{name} is out of date: run `.oracle/bin/python "
            "tests/fixtures/make_mxnet_optimizer_fixtures.py`")
