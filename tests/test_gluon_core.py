"""Gluon's core (``Block``, ``HybridBlock``, ``Parameter``, ``ParameterDict``) against what
MXNet 1.9.1 does: names and name scopes, child and parameter registration, ``collect_params``,
initialization, saving and loading, hooks, ``apply``/``cast``/``zero_grad``, reprs, deferred
initialization, per-context copies, ``hybridize`` (flags, retracing, train mode, the trace cap,
threads) and ``Block.summary``.

Every expected name, repr, message and table was printed by MXNet 1.9.1 (``.oracle``) for the
same code; where hybridgpu deliberately differs the test says so. Most tests use the small
blocks below, so that the core is tested apart from ``gluon.nn``.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import gluon, modes, nd
from hybridgpu import initializer as init
from hybridgpu.base import MXNetError
from hybridgpu.gluon import hybrid_block
from hybridgpu.gluon.parameter import DeferredInitializationError


@pytest.fixture(autouse=True)
def fresh_names():
    """Automatic block names count from 0 in every test, as in a fresh MXNet process."""
    with mx.name.NameManager():
        yield


class Linear(gluon.HybridBlock):
    """A Dense layer written on the core only (deferred ``in_units`` as in ``nn.Dense``)."""

    def __init__(self, units, in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._units = units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init="zeros")

    def hybrid_forward(self, F, x, weight, bias):
        return F.FullyConnected(x, weight, bias, num_hidden=self._units)


class Inner(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = Linear(2)
            self.w = self.params.get("scale", shape=(1,))

    def hybrid_forward(self, F, x, w):
        return F.broadcast_mul(self.fc(x), w)


class Outer(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.a = Inner()
            self.b = Inner()

    def hybrid_forward(self, F, x):
        return self.a(x) + self.b(x)


class Chain(gluon.HybridBlock):
    """A minimal HybridSequential: children run one after the other."""

    def add(self, *blocks):
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, i):
        return list(self._children.values())[i]

    def hybrid_forward(self, F, x):
        for child in self._children.values():
            x = child(x)
        return x


class Counting(gluon.HybridBlock):
    """Counts how often ``hybrid_forward`` runs with ``F = sym`` (one per trace)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.traces = []

    def hybrid_forward(self, F, x):
        if F is mx.sym:
            self.traces.append(x.shape)
        return x * 2


def _shared_outer():
    class Shared(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.a = Inner()
                self.b = Inner(params=self.a.collect_params())

        def hybrid_forward(self, F, x):
            return self.a(x) + self.b(x)

    return Shared()


# -- names ------------------------------------------------------------------------------------

def test_top_level_blocks_take_class_name_and_a_global_counter():
    first, second = Linear(3), Linear(3)
    assert (first.prefix, first.name, second.prefix) == ("linear0_", "linear0", "linear1_")
    assert list(first.collect_params()) == ["linear0_weight", "linear0_bias"]


def test_nn_layers_are_named_like_mxnet():
    from hybridgpu.gluon import nn

    dense = nn.Dense(3)
    assert (dense.prefix, list(dense.collect_params())) == ("dense0_",
                                                            ["dense0_weight", "dense0_bias"])
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(4))
    assert list(net.collect_params()) == [
        "hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
        "hybridsequential0_dense1_weight", "hybridsequential0_dense1_bias"]
    plain = nn.HybridSequential()  # without name_scope children use the global counter
    plain.add(nn.Dense(3))
    assert list(plain.collect_params()) == ["dense1_weight", "dense1_bias"]


def test_nested_custom_blocks_prefix_their_children():
    net = Outer()
    assert net.prefix == "outer0_"
    assert list(net.collect_params()) == [
        "outer0_inner0_scale", "outer0_inner0_linear0_weight", "outer0_inner0_linear0_bias",
        "outer0_inner1_scale", "outer0_inner1_linear0_weight", "outer0_inner1_linear0_bias"]
    assert net.a.params.prefix == "outer0_inner0_"
    assert list(net.a.params) == ["outer0_inner0_scale"]  # own parameters only
    given = Outer(prefix="model_")
    assert list(given.collect_params())[:2] == ["model_inner0_scale", "model_inner0_linear0_weight"]


def test_params_argument_shares_parameters():
    net = _shared_outer()
    assert net.b.fc.weight is net.a.fc.weight and net.b.w is net.a.w
    assert net.b.prefix == "shared0_inner1_" and net.b.params.prefix == "shared0_inner0_"
    assert list(net.b.params) == ["shared0_inner0_scale"]
    assert list(net.collect_params()) == ["shared0_inner0_scale", "shared0_inner0_linear0_weight",
                                          "shared0_inner0_linear0_bias"]


# -- registration -----------------------------------------------------------------------------

def test_setattr_registers_children_and_parameters_in_order():
    net = Outer()
    assert list(net._children) == ["a", "b"]
    assert list(net.a._reg_params) == ["w"]
    replacement = Inner()
    net.a = replacement
    assert list(net._children) == ["a", "b"] and net._children["a"] is replacement


def test_setattr_refuses_changing_a_block_into_another_type():
    net = Inner()
    with pytest.raises(TypeError, match="Changing attribute type for fc from .*Linear.* to "
                                        ".*Parameter.*not allowed"):
        net.fc = gluon.Parameter("foo", shape=(1,))
    with pytest.raises(TypeError, match="Changing attribute type for w"):
        net.w = Linear(1)


def test_hybridblock_children_must_be_hybrid():
    class Plain(gluon.Block):
        def forward(self, x):
            return x

    with pytest.raises(ValueError, match="Children of HybridBlock must also be HybridBlock"):
        Chain().add(Plain())


def test_collect_params_select_is_a_regular_expression():
    net = Outer()
    assert list(net.collect_params(".*weight")) == ["outer0_inner0_linear0_weight",
                                                    "outer0_inner1_linear0_weight"]
    assert list(net.collect_params(".*inner1.*")) == [
        "outer0_inner1_scale", "outer0_inner1_linear0_weight", "outer0_inner1_linear0_bias"]
    assert list(net.collect_params("outer0_inner0_(scale|linear0_bias)")) == [
        "outer0_inner0_scale", "outer0_inner0_linear0_bias"]


# -- initialization ---------------------------------------------------------------------------

def test_initialize_warns_once_initialized_and_force_reinit_reinitializes():
    net = Linear(2, in_units=3)
    net.initialize(init.One())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net.initialize(init.Zero())
    assert [str(w.message) for w in caught] == [
        "Parameter 'linear0_weight' is already initialized, ignoring. Set force_reinit=True "
        "to re-initialize.",
        "Parameter 'linear0_bias' is already initialized, ignoring. Set force_reinit=True to "
        "re-initialize."]
    assert net.weight.data().asnumpy().tolist() == [[1.0] * 3] * 2
    net.initialize(init.Zero(), force_reinit=True)
    assert not net.weight.data().asnumpy().any()


def test_initialize_on_a_context_list_and_run_on_each():
    net = Linear(2, in_units=3)
    net.initialize(init.One(), ctx=[mx.cpu(0), mx.cpu(1)])
    assert net.weight.list_ctx() == [mx.cpu(0), mx.cpu(1)]
    for ctx in (mx.cpu(0), mx.cpu(1)):
        out = net(nd.ones((1, 3), ctx=ctx))
        assert out.context == ctx and out.asnumpy().tolist() == [[3.0, 3.0]]


def test_deferred_parameters_get_their_shape_on_the_first_forward():
    net = Outer()
    net.initialize()
    assert net.a.fc.weight.shape == (2, 0)
    net(nd.ones((4, 5)))
    assert net.a.fc.weight.shape == (2, 5) and net.a.fc.weight.data().shape == (2, 5)


def test_deferred_and_uninitialized_data_errors_name_the_parameter():
    deferred = Linear(3)
    deferred.initialize()
    with pytest.raises(DeferredInitializationError,
                       match="Parameter 'linear0_weight' has not been initialized yet because "
                             "initialization was deferred"):
        deferred.weight.data()
    with pytest.raises(MXNetError, match="Parameter 'linear1_weight' has not been initialized. "
                                         "Note that you should initialize parameters"):
        Linear(3).weight.data()
    with pytest.raises(MXNetError, match=r"Cannot initialize Parameter 'w' because it has "
                                         r"invalid shape: \(2, 0\)"):
        gluon.Parameter("w", shape=(2, 0)).initialize()


def test_data_on_a_new_context_is_copied_there():
    # MXNet raises "Parameter 'w' was not initialized on context cpu(2)"; hybridgpu copies
    # (DESIGN.md 6), so a block runs on whatever context its input is on.
    param = gluon.Parameter("w", shape=(2, 2))
    param.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    copy = param.data(mx.cpu(2))
    assert copy.context == mx.cpu(2)
    np.testing.assert_array_equal(copy.asnumpy(), param.data(mx.cpu(0)).asnumpy())
    assert param.list_ctx() == [mx.cpu(0), mx.cpu(1), mx.cpu(2)]
    assert not param.grad(mx.cpu(2)).asnumpy().any()


def test_parameters_follow_the_input_context_imperative_and_hybridized():
    net = Outer()
    net.initialize()
    ref = net(nd.ones((1, 5))).asnumpy()
    for hybridize in (False, True):
        if hybridize:
            net.hybridize()
        out = net(nd.ones((1, 5), ctx=mx.cpu(3)))
        assert out.context == mx.cpu(3)
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)
    assert mx.cpu(3) in net.a.fc.weight.list_ctx()


def test_deferred_parameters_first_used_on_another_context():
    net = Linear(2)
    net.initialize(init.One(), ctx=mx.cpu(0))
    out = net(nd.ones((1, 3), ctx=mx.cpu(1)))  # MXNet: "was not initialized on context cpu(1)"
    assert out.context == mx.cpu(1) and out.asnumpy().tolist() == [[3.0, 3.0]]
    assert net.weight.list_ctx() == [mx.cpu(0), mx.cpu(1)]


def test_constant_refuses_a_gradient():
    const = gluon.Constant("c", nd.ones((2,)))
    with pytest.warns(UserWarning, match="Constant parameter 'c' does not support grad_req other "
                                         "than 'null', and new value 'write' is ignored"):
        const.grad_req = "write"
    assert const.grad_req == "null"


# -- saving and loading -----------------------------------------------------------------------

def test_export_names_the_files_by_epoch(tmp_path):
    net = Linear(2, in_units=3)
    net.initialize()
    net.hybridize()
    net(nd.ones((1, 3)))
    net.export(str(tmp_path / "ep"), epoch=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep-0003.params", "ep-symbol.json"]
    assert sorted(nd.load(str(tmp_path / "ep-0003.params"))) == ["arg:linear0_bias",
                                                                "arg:linear0_weight"]


def _trained_outer():
    net = Outer()
    net.initialize(init.Normal(1.0))
    net(nd.ones((2, 5)))
    return net


def test_save_parameters_uses_structural_names_and_loads_back(tmp_path):
    net, x = _trained_outer(), nd.ones((2, 5))
    net.save_parameters(str(tmp_path / "o.params"))
    assert sorted(nd.load(str(tmp_path / "o.params"))) == [
        "a.fc.bias", "a.fc.weight", "a.w", "b.fc.bias", "b.fc.weight", "b.w"]
    other = Outer()
    other.load_parameters(str(tmp_path / "o.params"))
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-5)


def test_load_parameters_reads_files_of_full_names(tmp_path):
    net, x = _trained_outer(), nd.ones((2, 5))
    net.collect_params().save(str(tmp_path / "full.params"), strip_prefix=net.prefix)
    assert sorted(nd.load(str(tmp_path / "full.params")))[:2] == ["inner0_linear0_bias",
                                                                  "inner0_linear0_weight"]
    other = Outer()
    other.load_parameters(str(tmp_path / "full.params"))
    np.testing.assert_allclose(other(x).asnumpy(), net(x).asnumpy(), rtol=1e-5)


def test_load_parameters_missing_and_extra(tmp_path):
    saved = nd.load(_saved(tmp_path))
    partial, extra = str(tmp_path / "partial.params"), str(tmp_path / "extra.params")
    nd.save(partial, {k: v for k, v in saved.items() if k != "a.fc.bias"})
    nd.save(extra, dict(saved, **{"c.weight": nd.ones((1,))}))
    with pytest.raises(MXNetError, match="Parameter 'a.fc.bias' is missing in file .*"
                                         "partial.params.*allow_missing=True"):
        Outer().load_parameters(partial)
    net = Outer()
    net.load_parameters(partial, allow_missing=True)
    np.testing.assert_array_equal(net.a.fc.weight.data().asnumpy(), saved["a.fc.weight"].asnumpy())
    with pytest.raises(MXNetError, match="Parameter 'c.weight' loaded from file .*extra.params.* "
                                         "is not present.*ignore_extra=True"):
        Outer().load_parameters(extra)
    Outer().load_parameters(extra, ignore_extra=True)


def _saved(tmp_path):
    path = str(tmp_path / "o.params")
    _trained_outer().save_parameters(path)
    return path


def test_load_parameters_dtype_needs_cast_dtype(tmp_path):
    wide = str(tmp_path / "f64.params")
    nd.save(wide, {k: v.astype("float64") for k, v in nd.load(_saved(tmp_path)).items()})
    with pytest.raises(MXNetError, match="Failed loading Parameter 'outer1_inner0_scale' from "
                                         "saved params: dtype incompatible.*cast_dtype=True"):
        Outer().load_parameters(wide)
    kept = Outer()
    kept.load_parameters(wide, cast_dtype=True)
    assert kept.a.fc.weight.data().dtype == np.float32
    saved = Outer()
    saved.load_parameters(wide, cast_dtype=True, dtype_source="saved")
    assert saved.a.fc.weight.data().dtype == np.float64


def test_load_parameters_wrong_shape_names_the_parameter(tmp_path):
    path = str(tmp_path / "bad.params")
    nd.save(path, {"weight": nd.ones((3, 3)), "bias": nd.ones((2,))})
    with pytest.raises(MXNetError, match="Parameter 'linear0_weight'.*shape incompatible "
                                         r"expected \(2, 4\) vs saved \(3, 3\)"):
        Linear(2, in_units=4).load_parameters(path)


def test_deduplicated_files_load_like_mxnet(tmp_path):
    net = _shared_outer()
    net.initialize()
    net(nd.ones((1, 5)))
    path = str(tmp_path / "dedup.params")
    net.save_parameters(path, deduplicate=True)
    # MXNet keeps the last structural name of a shared parameter
    assert sorted(nd.load(path)) == ["b.fc.bias", "b.fc.weight", "b.w"]
    other = _shared_outer()
    other.load_parameters(path)
    assert other.a.fc.weight.data().shape == (2, 5)


# -- hooks, apply, cast, zero_grad, repr ------------------------------------------------------

def test_forward_hooks_and_their_handles():
    net = Chain()
    with net.name_scope():
        net.add(Linear(3, in_units=2), Linear(4))
    net.initialize()
    calls = []
    pre = net[0].register_forward_pre_hook(
        lambda b, inputs: calls.append(("pre", b.name, type(inputs), len(inputs))))
    post = net[0].register_forward_hook(
        lambda b, inputs, out: calls.append(("post", b.name, out.shape)))
    net(nd.ones((1, 2)))
    assert calls == [("pre", "chain0_linear0", tuple, 1), ("post", "chain0_linear0", (1, 3))]
    calls.clear()
    pre.detach()
    net(nd.ones((1, 2)))
    assert calls == [("post", "chain0_linear0", (1, 3))]
    calls.clear()
    with post:
        pass  # leaving the with block detaches the hook
    net(nd.ones((1, 2)))
    assert calls == []


def test_hooks_on_a_hybridized_net():
    # as in MXNet: a child's hook runs while tracing (with Symbols), the top block's every call
    net = Chain()
    with net.name_scope():
        net.add(Linear(3, in_units=2), Linear(4))
    net.initialize()
    net.hybridize()
    calls = []
    net.register_forward_hook(lambda b, i, o: calls.append(("net", type(o).__name__)))
    net[1].register_forward_hook(lambda b, i, o: calls.append(("child", type(o).__name__)))
    net(nd.ones((1, 2)))
    assert calls == [("child", "Symbol"), ("net", "NDArray")]
    calls.clear()
    net(nd.ones((1, 2)))
    assert calls == [("net", "NDArray")]


def test_apply_visits_children_first_and_returns_the_block():
    net = Outer()
    names = []
    assert net.apply(lambda b: names.append(b.name)) is net
    assert names == ["outer0_inner0_linear0", "outer0_inner0", "outer0_inner1_linear0",
                     "outer0_inner1", "outer0"]


def test_cast_changes_parameter_dtypes():
    net = Chain()
    net.add(Linear(3, in_units=2))
    net.initialize()
    net.cast("float16")
    assert net[0].weight.dtype == "float16" and net[0].weight.data().dtype == np.float16
    out = net(nd.ones((1, 2), dtype="float16"))
    assert out.dtype == np.float16


def test_cast_then_hybridized_forward():
    net = Linear(3, in_units=4)
    net.initialize()
    net.hybridize()
    ref = net(nd.ones((1, 4))).asnumpy()
    net.cast("float64")
    out = net(nd.ones((1, 4), dtype="float64"))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)


def test_zero_grad_on_the_block_and_on_collect_params():
    net = Linear(2, in_units=3)
    net.initialize()
    for clear in (net.zero_grad, net.collect_params().zero_grad):
        net.weight.grad()[:] = 1
        clear()
        assert not net.weight.grad().asnumpy().any()


def test_block_repr_nests_children_like_mxnet():
    assert repr(Outer()) == ("Outer(\n  (a): Inner(\n    (fc): Linear(\n    \n    )\n  )\n"
                             "  (b): Inner(\n    (fc): Linear(\n    \n    )\n  )\n)")


# -- ParameterDict ----------------------------------------------------------------------------

def test_parameter_dict_get_and_its_checks():
    pd = gluon.ParameterDict("pd_")
    a = pd.get("a", shape=(2, 3))
    assert pd.get("a") is a and a.name == "pd_a"
    with pytest.raises(MXNetError, match="Cannot retrieve Parameter 'pd_a' because desired "
                                         "attribute does not match with stored for attribute "
                                         "'shape'"):
        pd.get("a", shape=(3, 3))
    with pytest.raises(MXNetError, match="attribute 'dtype'"):
        pd.get("a", dtype="float16")
    pd.get("b", shape=(2, 0), allow_deferred_init=True)
    assert pd.get("b", shape=(2, 5)).shape == (2, 5)  # unknown dims are filled in


def test_parameter_dict_constants_repr_update_and_setattr():
    pd = gluon.ParameterDict("pd_")
    pd.get("a", shape=(2, 3))
    const = pd.get_constant("c", [1, 2, 3])
    assert pd.get_constant("c") is const and const.grad_req == "null"
    with pytest.raises(KeyError, match="No constant named 'pd_zz'"):
        pd.get_constant("zz")
    assert repr(pd) == (
        "pd_ (\n  Parameter pd_a (shape=(2, 3), dtype=<class 'numpy.float32'>)\n"
        "  Constant pd_c (shape=(3,), dtype=<class 'numpy.float32'>)\n)")
    other = gluon.ParameterDict("q_")
    other.get("x", shape=(1,))
    pd.update(other)
    assert list(pd) == ["pd_a", "pd_c", "q_x"]
    clash = gluon.ParameterDict("q_")
    clash.get("x", shape=(1,))
    with pytest.raises(MXNetError, match="different Parameters with the same name 'q_x'"):
        pd.update(clash)
    pd.setattr("lr_mult", 0.5)
    pd.setattr("grad_req", "null")
    assert {p.lr_mult for p in pd.values()} == {0.5}
    assert {p.grad_req for p in pd.values()} == {"null"}


def test_parameter_dict_save_and_load(tmp_path):
    path = str(tmp_path / "pd.params")
    pd = gluon.ParameterDict("net_")
    pd.get("w", shape=(2,))
    pd.initialize()
    pd.save(path, strip_prefix="net_")
    assert list(nd.load(path)) == ["w"]
    with pytest.raises(MXNetError, match="Prefix 'zz_' is to be striped before saving, but "
                                         "Parameter's name 'net_w' does not start"):
        pd.save(path, strip_prefix="zz_")
    back = gluon.ParameterDict("net_")
    back.get("w", shape=(2,))
    back.load(path, restore_prefix="net_")
    np.testing.assert_array_equal(back["net_w"].data().asnumpy(), pd["net_w"].data().asnumpy())
    with pytest.raises(MXNetError, match="Parameter 'w' loaded from file .* is not present"):
        gluon.ParameterDict("net_").load(path)


# -- hybridize --------------------------------------------------------------------------------

def test_hybridize_flags_known_and_unknown():
    net = Linear(2, in_units=3)
    net.initialize()
    net.hybridize(static_alloc=True, static_shape=True)
    assert net(nd.ones((1, 3))).shape == (1, 2)
    # MXNet accepts any keyword here and ignores it; hybridgpu refuses it at the call
    with pytest.raises(TypeError, match=r"hybridize\(\) got unexpected keyword arguments "
                                        r"\['foo'\]"):
        net.hybridize(foo=1)
    with pytest.raises(MXNetError, match="subgraph backends are not supported"):
        net.hybridize(backend="MKLDNN")


def test_hybridize_reaches_children():
    net = Chain()
    net.add(Counting(), Counting())
    net.hybridize()
    net(nd.ones((1, 2)))
    net[0](nd.ones((1, 2)))
    net[0](nd.ones((1, 2)))
    assert net[0].traces == [(1, 2), (1, 2)]  # traced inside the parent, then once on its own
    assert net[1].traces == [(1, 2)]


def test_a_new_input_shape_retraces_and_cached_shapes_replay():
    net = Counting()
    net.hybridize()
    for shape in [(1, 4), (2, 4), (1, 4), (2, 4)]:
        out = net(nd.ones(shape))
        assert out.shape == shape and out.asnumpy().min() == 2
    assert net.traces == [(1, 4), (2, 4)]


def test_a_new_argument_structure_retraces():
    # MXNet: "The argument structure of HybridBlock does not match the cached version"
    class Sum(gluon.HybridBlock):
        def hybrid_forward(self, F, x, rest=None):
            for item in rest or []:
                x = x + item
            return x

    net = Sum()
    net.hybridize()
    one = nd.ones((2,))
    assert net(one, [one, one]).asnumpy().tolist() == [3.0, 3.0]
    assert net(one, [one]).asnumpy().tolist() == [2.0, 2.0]
    assert net(one).asnumpy().tolist() == [1.0, 1.0]
    assert net(one, [one, one]).asnumpy().tolist() == [3.0, 3.0]


def test_train_and_predict_mode_are_traced_separately():
    class Mode(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            # real code says autograd.is_training(); MXNet freezes the first mode into the graph
            return x * 2 if modes.is_training() else x

    net = Mode()
    net.hybridize()
    x = nd.ones((1, 3))
    assert net(x).asnumpy().tolist() == [[1.0] * 3]
    with modes.training(True):
        assert net(x).asnumpy().tolist() == [[2.0] * 3]
    assert net(x).asnumpy().tolist() == [[1.0] * 3]


def test_too_many_signatures_warn_once_and_keep_working():
    net = Counting()
    net.hybridize()
    count = hybrid_block.MAX_TRACES + 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, count + 3):
            assert net(nd.ones((n,))).asnumpy().tolist() == [2.0] * n
    messages = [str(w.message) for w in caught if "input signatures" in str(w.message)]
    assert len(messages) == 1 and "counting0" in messages[0]
    net(nd.ones((1,)))  # evicted long ago: traced again
    assert len(net.traces) == count + 3


def _run_threads(targets):
    threads = [threading.Thread(target=target) for target in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_two_threads_share_one_hybridized_net():
    net = Outer()
    net.initialize()
    inputs = [nd.random.normal(shape=(n % 3 + 1, 5)) for n in range(8)]
    expected = [net(x).asnumpy() for x in inputs]
    net.hybridize()
    errors, barrier = [], threading.Barrier(2)

    def work(order):
        barrier.wait()
        for _ in range(10):
            for i in order:
                got = net(inputs[i]).asnumpy()
                if not np.allclose(got, expected[i], rtol=1e-5):
                    errors.append(i)

    _run_threads([lambda: work(range(8)), lambda: work(reversed(range(8)))])
    assert errors == []


def test_concurrent_first_calls_initialize_deferred_parameters_once():
    calls, barrier = [], threading.Barrier(2)

    class Slow(init.Initializer):
        """Holds the first thread inside initialization until a second one arrives (or 0.5 s)."""

        def _init_weight(self, name, arr):
            calls.append(name)
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=0.5)
            arr[:] = len(calls)

    net = Linear(2)
    net.initialize(Slow())
    outs = [None, None]

    def work(i):
        outs[i] = net(nd.ones((1, 3))).asnumpy()

    _run_threads([lambda: work(0), lambda: work(1)])
    assert calls == ["linear0_weight"]
    assert [o.tolist() for o in outs] == [[[3.0, 3.0]]] * 2


def test_name_scope_of_one_block_in_two_threads():
    block = Counting()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    restored = {}

    def first():
        with mx.name.NameManager() as mine:
            with block.name_scope():
                a_in.set()
                b_in.wait(5)
            restored["first"] = mx.name.current() is mine
            a_out.set()

    def second():
        with mx.name.NameManager() as mine:
            a_in.wait(5)
            with block.name_scope():
                b_in.set()
                a_out.wait(5)
            restored["second"] = mx.name.current() is mine

    _run_threads([first, second])
    assert restored == {"first": True, "second": True}


# -- summary ----------------------------------------------------------------------------------

_RULE, _DOUBLE = "-" * 80, "=" * 80


def _table(rows, total, trainable, shared):
    lines = [_RULE, "        Layer (type)                                Output Shape         "
             "Param #", _DOUBLE]
    lines += [f"{name:>20}  {shape:>42} {count:>15}" for name, shape, count in rows]
    lines += [_DOUBLE, "Parameters in forward computation graph, duplicate included",
              f"   Total params: {total}", f"   Trainable params: {trainable}",
              f"   Non-trainable params: {total - trainable}",
              f"Shared params in forward computation graph: {shared}",
              f"Unique parameters in model: {total - shared}", _RULE]
    return "\n".join(lines) + "\n"


class _WithConstant(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = Linear(2, in_units=5)
            self.w = self.params.get("scale", shape=(1,))
            self.c = self.params.get_constant("c", nd.array([[1.0, 2.0]]))

    def hybrid_forward(self, F, x, w, c):
        return F.broadcast_mul(F.broadcast_mul(self.fc(x), w), c)


class _Twice(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.a = _WithConstant()
            self.b = _WithConstant(params=self.a.collect_params())

    def hybrid_forward(self, F, x):
        return F.relu(self.a(x) + self.b(x)), x


def test_summary_counts_shared_and_constant_parameters(capsys):
    # the same network in MXNet 1.9.1 (with nn.Dense for Linear) prints this table
    net = _Twice()
    net.initialize()
    rows = [("Input", "(3, 5)", 0), ("Linear-1", "(3, 2)", 12), ("_WithConstant-2", "(3, 2)", 3),
            ("Linear-3", "(3, 2)", 12), ("_WithConstant-4", "(3, 2)", 3),
            ("_Twice-5", "(3, 2), (3, 5)", 0)]
    net.summary(nd.ones((3, 5)))
    assert capsys.readouterr().out == _table(rows, total=30, trainable=26, shared=15)
    net.a.fc.weight.grad_req = "null"
    net.summary(nd.ones((3, 5)))
    assert capsys.readouterr().out == _table(rows, total=30, trainable=6, shared=15)


def test_summary_of_a_block_with_two_inputs_and_nested_outputs(capsys):
    class Two(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.d = Linear(3, in_units=2)

        def forward(self, x, y):
            return [self.d(x), (self.d(y), x)]

    net = Two()
    net.initialize()
    net.summary(nd.ones((1, 2)), nd.ones((4, 2)))
    rows = [("Input", "(1, 2), (4, 2)", 0), ("Linear-1", "(1, 3)", 9), ("Linear-2", "(4, 3)", 9),
            ("Two-3", "(1, 3), [(4, 3), (1, 2)]", 0)]
    assert capsys.readouterr().out == _table(rows, total=18, trainable=18, shared=9)


def test_summary_of_a_deferred_hybridized_net(capsys):
    # MXNet refuses a hybridized net and shows a Symbol row for the shape-inference call of a
    # deferred layer; hybridgpu runs the net imperatively for the summary and shows real rows
    net = Chain()
    with net.name_scope():
        net.add(Linear(8), Linear(4))
    net.initialize()
    net.hybridize()
    net.summary(nd.ones((2, 5)))
    rows = [("Input", "(2, 5)", 0), ("Linear-1", "(2, 8)", 48), ("Linear-2", "(2, 4)", 36),
            ("Chain-3", "(2, 4)", 0)]
    assert capsys.readouterr().out == _table(rows, total=84, trainable=84, shared=0)
    net(nd.ones((2, 5)))  # still hybridized: hybrid_forward runs no more
    assert capsys.readouterr().out == ""


def test_summary_with_nn_layers_matches_mxnet(capsys):
    from hybridgpu.gluon import nn

    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(8, activation="relu", in_units=5), nn.Dense(4, in_units=8))
    net.initialize()
    net.summary(nd.ones((2, 5)))
    rows = [("Input", "(2, 5)", 0), ("Activation-1", "(2, 8)", 0), ("Dense-2", "(2, 8)", 48),
            ("Dense-3", "(2, 4)", 36)]  # as in MXNet, containers have no row
    assert capsys.readouterr().out == _table(rows, total=84, trainable=84, shared=0)
