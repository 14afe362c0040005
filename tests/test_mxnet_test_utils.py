"""mx.test_utils, mx.util and the small MXNet names the MXNet 1.x test suites import: each
helper does what MXNet documents (and catches what it is meant to catch)."""

from __future__ import annotations

import math
import os
import threading

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import test_utils as tu
from hybridgpu import util

# -- environment, stderr, retry ---------------------------------------------------------------

VAR = "HYBRIDGPU_TEST_UTILS_VAR"


def test_environment_sets_and_restores_a_variable(monkeypatch):
    monkeypatch.setenv(VAR, "before")
    with tu.environment(VAR, "inside"):
        assert os.environ[VAR] == "inside"
    assert os.environ[VAR] == "before"


def test_environment_takes_a_dict_and_none_unsets(monkeypatch):
    monkeypatch.setenv(VAR, "before")
    monkeypatch.delenv(VAR + "_2", raising=False)
    with tu.environment({VAR: None, VAR + "_2": "new"}):
        assert VAR not in os.environ and os.environ[VAR + "_2"] == "new"
    assert os.environ[VAR] == "before" and VAR + "_2" not in os.environ


def test_environment_restores_when_the_body_raises(monkeypatch):
    monkeypatch.delenv(VAR, raising=False)
    with pytest.raises(KeyError), tu.environment(VAR, "x"):
        raise KeyError("boom")
    assert VAR not in os.environ


@pytest.mark.parametrize("args", [(), ("A",), ("A", 1), ({"A": 1},)])
def test_environment_refuses_bad_arguments(args):
    with pytest.raises(TypeError, match="environment"), tu.environment(*args):
        pass


def test_discard_stderr_hides_file_descriptor_2(capfd):
    with tu.discard_stderr():
        os.write(2, b"hidden\n")
    os.write(2, b"shown\n")
    err = capfd.readouterr().err
    assert "shown" in err and "hidden" not in err


def test_retry_passes_once_an_attempt_passes_and_fails_after_n():
    calls = []

    @tu.retry(3)
    def third_time_lucky():
        calls.append(1)
        assert len(calls) == 3

    third_time_lucky()
    assert len(calls) == 3

    @tu.retry(2)
    def never():
        calls.append(1)
        raise AssertionError("still wrong")

    calls.clear()
    with pytest.raises(AssertionError, match="still wrong"):
        never()
    assert len(calls) == 2


def test_retry_does_not_retry_other_errors_and_checks_n():
    calls = []

    @tu.retry(5)
    def broken():
        calls.append(1)
        raise KeyError("no")

    with pytest.raises(KeyError):
        broken()
    assert len(calls) == 1
    with pytest.raises(ValueError, match="positive"):
        tu.retry(0)


# -- small numeric helpers ----------------------------------------------------------------------

def test_np_reduce_matches_numpy_with_keepdims():
    x = np.random.rand(2, 3, 4, 5)
    for axis in (None, 1, (0, 2), [3, 1], -1):
        for keep in (True, False):
            got = tu.np_reduce(x, axis, keep, np.sum)
            want = np.sum(x, axis=tuple(axis) if isinstance(axis, list) else axis,
                          keepdims=keep)
            np.testing.assert_allclose(got, want)


def test_collapse_sum_like_sums_broadcast_axes():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(tu.collapse_sum_like(a, (3, 1)), a.sum(axis=(0, 2))[:, None])
    np.testing.assert_allclose(tu.collapse_sum_like(a, (1, 1, 4)), a.sum(axis=(0, 1))[None, None])
    assert tu.collapse_sum_like(a, (0, 4)).shape == (0, 4)
    with pytest.raises(ValueError, match="broadcast"):
        tu.collapse_sum_like(a, (2, 4))


def test_random_sample_is_a_seeded_subset():
    np.random.seed(7)
    first = tu.random_sample(list(range(10)), 4)
    np.random.seed(7)
    assert tu.random_sample(list(range(10)), 4) == first
    assert len(set(first)) == 4 and set(first) <= set(range(10))
    with pytest.raises(ValueError, match="between 0"):
        tu.random_sample([1, 2], 3)


def test_same_array_tells_views_from_copies():
    x = mx.nd.arange(6).reshape((2, 3))
    assert tu.same_array(x, x)
    assert not tu.same_array(x, x.copy())
    assert x.asnumpy().tolist() == [[0, 1, 2], [3, 4, 5]]  # left as it was


def test_effective_dtype_is_the_dtype_on_cpu(monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_ALLOW_TF32", "1")  # TF32 only matters for gpu GEMMs
    assert tu.effective_dtype(mx.nd.ones(2)) == np.float32
    assert tu.effective_dtype(np.ones(2, dtype=np.float16)) == np.float16


def test_assert_almost_equal_ignore_nan_skips_nan_positions():
    a = np.array([1.0, np.nan, 3.0])
    tu.assert_almost_equal_ignore_nan(a, np.array([1.0, 7.0, 3.0]))
    with pytest.raises(AssertionError):
        tu.assert_almost_equal_ignore_nan(a, np.array([1.0, np.nan, 4.0]))


def test_star_import_hands_out_what_mxnet_s_does():
    names = {}
    exec("from hybridgpu.test_utils import *", names)  # noqa: S102
    assert names["np"] is np and names["mx"] is mx and names["os"] is os
    assert names["rnd"] is np.random and names["array"] is mx.nd.array
    assert callable(names["check_symbolic_forward"]) and callable(names["environment"])


# -- symbolic checks ----------------------------------------------------------------------------

def _square_op(name, factor):
    """A CustomOp x**2 whose backward multiplies by ``factor`` (2 is right, 3 is wrong)."""

    class Square(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] ** 2)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], factor * in_data[0] * out_grad[0])

    @mx.operator.register(name)
    class SquareProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=True)

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Square()

    return mx.sym.Custom(mx.sym.var("x"), op_type=name)


def test_check_numeric_gradient_accepts_right_and_catches_wrong_gradients():
    np.random.seed(1)
    x = np.random.rand(3, 4) + 0.5
    tu.check_numeric_gradient(_square_op("tu_square_ok", 2.0), [x])
    with pytest.raises(AssertionError, match="NUMERICAL_x"):
        tu.check_numeric_gradient(_square_op("tu_square_bad", 3.0), [x])


def test_check_numeric_gradient_grad_reqs_and_aux_states():
    np.random.seed(2)
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    loc = {"x": np.random.rand(2, 4), "fc_weight": np.random.rand(3, 4),
           "fc_bias": np.random.rand(3)}
    tu.check_numeric_gradient(fc, loc, grad_nodes={"x": "write", "fc_weight": "add",
                                                   "fc_bias": "null"})
    bn = mx.sym.BatchNorm(x, name="bn", fix_gamma=False)
    tu.check_numeric_gradient(bn, [np.random.rand(4, 3), np.random.rand(3) + 0.5,
                                   np.random.rand(3)],
                              aux_states=[np.zeros(3), np.ones(3)], numeric_eps=1e-3,
                              rtol=0.05, atol=1e-3)
    with pytest.raises(ValueError, match="do not match"):
        tu.check_numeric_gradient(fc, {"x": loc["x"]})


def test_check_symbolic_forward_compares_every_output():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    x, y = np.array([[1.0, 2.0]]), np.array([[3.0, 5.0]])
    outs = tu.check_symbolic_forward(mx.sym.Group([a * b, a + b]), [x, y], [x * y, x + y])
    assert outs[0].asnumpy().tolist() == [[3.0, 10.0]]
    with mx.name.NameManager():  # automatic names count from 0 in a fresh manager
        diff = a - b
    tu.check_symbolic_forward(diff, {"a": x, "b": y}, {"_minus0_output": x - y})
    with pytest.raises(AssertionError, match="FORWARD_"):
        tu.check_symbolic_forward(mx.sym.Group([a * b, a + b]), [x, y], [x * y, x * y])


def test_check_symbolic_backward_write_add_null():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    x, y = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    ograd = np.array([1.0, 10.0])
    grads = tu.check_symbolic_backward(a * b, [x, y], [ograd], [y * ograd, x * ograd])
    assert grads["a"].asnumpy().tolist() == [3.0, 50.0]
    tu.check_symbolic_backward(a * b, [x, y], [ograd], [y * ograd, x * ograd], grad_req="add")
    # 'null': b's buffer keeps the random values it started with (expected is not read)
    grads = tu.check_symbolic_backward(a * b, [x, y], [ograd], {"a": y * ograd, "b": x},
                                       grad_req={"a": "write", "b": "null"})
    assert not np.allclose(grads["b"].asnumpy(), x * ograd)
    with pytest.raises(AssertionError, match="BACKWARD_b"):
        tu.check_symbolic_backward(a * b, [x, y], [ograd], [y * ograd, y * ograd])


def test_check_consistency_across_dtypes_and_a_wrong_symbol():
    np.random.seed(3)
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    specs = [{"ctx": mx.cpu(0), "x": (2, 4), "type_dict": {"x": np.float64}},
             {"ctx": mx.cpu(0), "x": (2, 4), "type_dict": {"x": np.float32}}]
    gt = tu.check_consistency(fc, specs)
    assert set(gt) >= {"fc_output", "fc_weight", "x"}
    other = mx.sym.FullyConnected(x * 1.5, num_hidden=3, name="fc")
    with pytest.raises(AssertionError, match="ctx 1 vs ctx 0"):
        tu.check_consistency([fc, other], specs)


def test_simple_forward_returns_numpy():
    x = mx.sym.var("x")
    out = tu.simple_forward(mx.sym.Group([x * 2, x + 1]), x=np.array([1.0, 2.0]))
    assert [o.tolist() for o in out] == [[2.0, 4.0], [2.0, 3.0]]


# -- generators and optimizers ------------------------------------------------------------------

def test_chi2_sf_closed_forms():
    for x in (0.1, 1.0, 3.0, 10.0, 40.0):
        assert tu.chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-12)
        assert tu.chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-10)
    assert tu.chi2_sf(0.0, 3) == 1.0
    with pytest.raises(ValueError, match="degrees"):
        tu.chi2_sf(1.0, 0)


def test_verify_generator_passes_a_fair_sampler_and_fails_a_biased_one():
    np.random.seed(5)
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q, 5)
    pvals = tu.verify_generator(lambda n: np.random.uniform(size=n), buckets, probs,
                                nsamples=20000)
    assert len(pvals) == 5
    with pytest.raises(AssertionError, match="generator test failed"):
        tu.verify_generator(lambda n: np.random.uniform(size=n) ** 1.2, buckets, probs,
                            nsamples=20000)
    discrete = tu.verify_generator(lambda n: np.random.randint(0, 3, size=n), [0, 1, 2],
                                   [1 / 3] * 3, nsamples=6000)
    assert min(discrete) >= 0


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_chi_square_counts_match_searchsorted_buckets(dtype):
    # samples on, between and outside the edges; a gap between the 2nd and 3rd bucket
    samples = np.arange(-3, 14).astype(dtype)
    buckets = [(0, 2), (2, 5), (7, 9)]
    _, observed, expected = tu.chi_square_check(lambda n: samples, buckets, [0.3, 0.3, 0.4],
                                                nsamples=samples.size)
    flat = np.array([e for b in buckets for e in b], dtype=np.float32)
    ids = np.searchsorted(flat, samples, side="right") // 2
    assert observed.tolist() == [int(np.sum(ids == i)) for i in range(3)]
    assert expected.tolist() == [5, 5, 6]


def test_mean_and_var_checks():
    np.random.seed(6)
    assert tu.mean_check(lambda n: np.random.normal(2.0, 3.0, size=n), 2.0, 3.0, 100000)
    assert not tu.mean_check(lambda n: np.random.normal(2.5, 3.0, size=n), 2.0, 3.0, 100000)
    assert tu.var_check(lambda n: np.random.normal(0, 3.0, size=n), 3.0, 100000)
    assert not tu.var_check(lambda n: np.random.normal(0, 3.3, size=n), 3.0, 100000)


def test_compare_optimizer_same_and_different_updates():
    mx.random.seed(0)
    sgd = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    tu.compare_optimizer(sgd, mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4),
                         np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32)
    with pytest.raises(ValueError, match="storage type"):
        tu.compare_optimizer(sgd, sgd, (3, 4), np.float32, w_stype="dense")


# -- mx.util, Context.default_ctx, mx.base -----------------------------------------------------

def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_np_shape_is_per_thread_unless_set_for_all():
    try:
        assert util.set_np_shape(True) is False and util.is_np_shape()
        assert _in_thread(util.is_np_shape) is False
        util.set_np_shape(2)
        assert _in_thread(util.is_np_shape) is True
        assert util.set_np_shape(0) is True
        assert not util.is_np_shape() and _in_thread(util.is_np_shape) is False
    finally:
        util.set_np_shape(0)
    with pytest.raises(TypeError, match="bool or an int"):
        util.set_np_shape("yes")


def test_np_shape_scopes_and_decorators_restore_the_flag():
    with util.np_shape(True):
        assert util.is_np_shape()
        with util.np_shape(False):
            assert not util.is_np_shape()
        assert util.is_np_shape()
    assert not util.is_np_shape()

    @util.use_np_shape
    class Probe:
        def method(self):
            return util.is_np_shape()

        @property
        def prop(self):
            return util.is_np_shape()

    assert Probe().method() and Probe().prop and not util.is_np_shape()
    with pytest.raises(TypeError, match="use_np_shape"):
        util.use_np_shape(3)


def test_np_array_is_per_thread_and_blocks_turning_shape_off():
    with util.np_array(True):
        assert util.is_np_array() and _in_thread(util.is_np_array) is False
        with pytest.raises(ValueError, match="np_array"):
            util.set_np_shape(False)
    assert not util.is_np_array()
    assert util.use_np(lambda: (util.is_np_shape(), util.is_np_array()))() == (True, True)
    assert (util.is_np_shape(), util.is_np_array()) == (False, False)


def test_context_default_ctx_reads_and_sets_this_threads_default():
    assert mx.Context.default_ctx == mx.current_context() == mx.cpu(0)
    with mx.cpu(2):
        mx.Context.default_ctx = mx.cpu(5)
        assert mx.current_context() == mx.cpu(5)
        assert _in_thread(lambda: mx.Context.default_ctx) == mx.cpu(0)
        tu.set_default_context(mx.cpu(6))
        assert tu.default_context() == mx.cpu(6)
    assert mx.current_context() == mx.cpu(0)


def test_base_data_dir_and_as_list(monkeypatch):
    monkeypatch.setenv("MXNET_HOME", "/somewhere/mx")
    assert mx.base.data_dir() == "/somewhere/mx"
    monkeypatch.delenv("MXNET_HOME")
    assert mx.base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")
    assert mx.base._as_list((1, 2)) == (1, 2) and mx.base._as_list("a") == ["a"]
    assert util.getenv(VAR) is None
    util.setenv(VAR, "v")
    assert util.getenv(VAR) == "v"
    util.setenv(VAR, None)
    assert VAR not in os.environ


def test_symbol_json_marks_numpy_shape_semantics():
    import json

    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=4)
    with util.np_shape(True):
        marked = json.loads(net.tojson())["attrs"]
    assert marked == {"is_np_shape": ["int", 1], "mxnet_version": ["int", 10901]}
    assert "is_np_shape" not in json.loads(net.tojson())["attrs"]
    assert mx.sym.fromjson(json.dumps({**json.loads(net.tojson()), "attrs": marked})) \
        .list_arguments() == net.list_arguments()


def test_attrscope_and_namemanager_current_are_per_thread():
    from hybridgpu.name import NameManager

    try:
        mx.AttrScope.current = mx.AttrScope(group="main")
        assert mx.sym.var("v").attr("group") == "main"
        assert _in_thread(lambda: mx.AttrScope.current.get(None)) == {}
        manager = NameManager()
        NameManager.current = manager
        assert NameManager.current is manager
        assert _in_thread(lambda: NameManager.current) is not manager
        with pytest.raises(TypeError, match="AttrScope.current"):
            mx.AttrScope.current = {"group": "x"}
    finally:
        mx.AttrScope.current = mx.AttrScope()
        NameManager.current = NameManager()


def test_symbol_pickles_as_its_json():
    import pickle

    with mx.AttrScope(__group__="4"):
        net = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.var("data"), act_type="relu"),
                                    num_hidden=10, name="fc")
    back = pickle.loads(pickle.dumps([net, net.get_internals()]))
    assert back[0].tojson() == net.tojson()
    assert back[1].list_outputs() == net.get_internals().list_outputs()
    assert back[0].attr_dict()["fc"]["__group__"] == "4"


def test_module_forward_takes_any_batch_with_data():
    from collections import namedtuple

    batch = namedtuple("Batch", ["data"])  # no .label, as MXNet allows
    mod = mx.mod.Module(symbol=mx.sym.var("data") * 2, label_names=None)
    mod.bind(data_shapes=[("data", (1, 10))])
    mod.init_params()
    mod.forward(batch([mx.nd.ones((3, 5))]))
    assert mod.get_outputs()[0].asnumpy().tolist() == [[2.0] * 5] * 3


def test_runtime_features_say_what_hybridgpu_offers():
    import importlib.util

    from hybridgpu import runtime

    features = runtime.Features()
    assert list(features) == list(runtime.FEATURE_NAMES)
    assert features.is_enabled("cuda") == (importlib.util.find_spec("cupy") is not None)
    assert features.is_enabled("PROFILER") and not features.is_enabled("CUDNN")
    assert not features.is_enabled("INT64_TENSOR_SIZE")
    with pytest.raises(RuntimeError, match="unknown"):
        features.is_enabled("WARP_DRIVE")
    assert repr(features["PROFILER"]) == "✔ PROFILER"


def test_ndarray_reshape_like_takes_rhs_by_keyword():
    x = mx.nd.arange(6).reshape((2, 3))
    assert x.reshape_like(rhs=mx.nd.ones((3, 2))).shape == (3, 2)
    assert x.reshape_like(mx.nd.ones((6,))).shape == (6,)
    with pytest.raises(TypeError, match="once"):
        x.reshape_like()


def test_ndarray_reshape_to_another_size_is_a_value_error():
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3, 5\) with shape=\(2, 3\)"):
        mx.nd.ones((2, 3, 5)).reshape((2, 3))
    with pytest.raises(mx.base.MXNetError):  # still hybridgpu's error too
        mx.nd.ones((2, 3, 5)).reshape(7)
    assert mx.nd.ones((2, 3, 5)).reshape((5, 6)).shape == (5, 6)


def test_constant_initializer_dumps_an_array_value_as_a_list():
    import json

    init = mx.init.Constant(mx.nd.ones((2, 1)))
    assert init.dumps() == '["constant", {"value": [[1.0], [1.0]]}]'
    assert init.dumps() == json.dumps(["constant", init._kwargs])
    w = mx.nd.zeros((2, 1))
    init(mx.init.InitDesc("w_weight"), w)
    assert w.asnumpy().tolist() == [[1.0], [1.0]]


def test_storage_type_flags_match_mxnet():
    from hybridgpu.ndarray import ndarray as nd_module

    assert nd_module._STORAGE_TYPE_STR_TO_ID == {"undefined": -1, "default": 0,
                                                 "row_sparse": 1, "csr": 2}
    assert nd_module._STORAGE_TYPE_ID_TO_STR[2] == "csr"
    assert nd_module.py_slice is slice
