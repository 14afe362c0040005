"""The runnable examples of the five seed articles (shared/seeds/), written with
``import hybridgpu as mx`` and asserting what the articles show MXNet doing.

Each test names its seed: 000 (``HybridBlock.forward`` walk-through), 001 (the d2l chapter on
hybrid programming), 002 (parameters arriving as keyword arguments), 003 (the Symbol API; the
full API is tested in test_symbol_api.py), 004 (the hybridize blog post). The articles' numbers
come from MXNet's random streams, which hybridgpu does not reproduce (docs/differences.md), so
values are compared between imperative and hybridized runs of the same network instead.
"""

from __future__ import annotations

import copy
import json
import time
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import gluon, nd, sym
from hybridgpu.gluon import nn
from hybridgpu.symbol import NotAvailableOnSymbol


@pytest.fixture(autouse=True)
def fresh_names():
    """Automatic block names count from 0 in every test, as in a fresh MXNet process."""
    with mx.name.NameManager():
        mx.random.seed(0)
        yield


# -- 000 / 001 / 004: a program written as text, compiled, then run -------------------------

def add_str():
    return """
def add(a, b):
    return a + b
"""


def fancy_func_str():
    return """
def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g
"""


def evoke_str():
    return add_str() + fancy_func_str() + """
print(fancy_func(1, 2, 3, 4))
"""


def test_symbolic_program_is_defined_compiled_then_run(capsys):
    prog = evoke_str()
    exec(compile(prog, "", "exec"), {})
    assert capsys.readouterr().out == "10\n"


# -- 001 / 004: HybridSequential, hybridize, benchmark, export, Symbol input ------------------

def get_net():
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"),
            nn.Dense(128, activation="relu"),
            nn.Dense(2))
    net.initialize()
    return net


def test_hybridsequential_gives_the_same_result_after_hybridize():
    x = nd.random.normal(shape=(1, 512))
    net = get_net()
    before = net(x)
    assert isinstance(before, nd.NDArray) and repr(before).endswith("<NDArray 1x2 @cpu(0)>")
    net.hybridize()
    after = net(x)
    assert isinstance(after, nd.NDArray) and after.shape == (1, 2)
    np.testing.assert_allclose(after.asnumpy(), before.asnumpy(), rtol=1e-5)


def benchmark(net, x, calls):
    start = time.time()
    for _ in range(calls):
        _ = net(x)
    nd.waitall()
    return time.time() - start


def test_benchmark_loop_runs_before_and_after_hybridizing():
    # the seed times 1000 calls; timing belongs to benchmarks/, a test checks the loop works
    x = nd.random.normal(shape=(1, 512))
    net = get_net()
    expected = net(x).asnumpy()
    assert benchmark(net, x, 20) >= 0
    net.hybridize()
    assert benchmark(net, x, 20) >= 0
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5)


def test_export_writes_symbol_json_and_params(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = nd.random.normal(shape=(1, 512))
    net = get_net()
    net.hybridize()
    net(x)
    net.export("my_mlp")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my_mlp-0000.params",
                                                          "my_mlp-symbol.json"]
    graph = json.loads((tmp_path / "my_mlp-symbol.json").read_text())
    # the node list MXNet 1.9.1 writes for this network
    assert [(n["op"], n["name"]) for n in graph["nodes"]] == [
        ("null", "data"), ("null", "dense0_weight"), ("null", "dense0_bias"),
        ("FullyConnected", "dense0_fwd"), ("Activation", "dense0_relu_fwd"),
        ("null", "dense1_weight"), ("null", "dense1_bias"),
        ("FullyConnected", "dense1_fwd"), ("Activation", "dense1_relu_fwd"),
        ("null", "dense2_weight"), ("null", "dense2_bias"), ("FullyConnected", "dense2_fwd")]
    assert graph["heads"] == [[11, 0, 0]] and graph["attrs"]["mxnet_version"] == ["int", 10901]
    assert sorted(nd.load("my_mlp-0000.params")) == [
        "arg:dense0_bias", "arg:dense0_weight", "arg:dense1_bias", "arg:dense1_weight",
        "arg:dense2_bias", "arg:dense2_weight"]


def test_exported_files_load_back_as_a_symbol_block(tmp_path, monkeypatch):
    # "they can be read by other front ends": here, back into Python
    monkeypatch.chdir(tmp_path)
    x = nd.random.normal(shape=(1, 512))
    net = get_net()
    net.hybridize()
    expected = net(x)
    net.export("my_mlp")
    loaded = gluon.SymbolBlock.imports("my_mlp-symbol.json", ["data"], "my_mlp-0000.params")
    np.testing.assert_allclose(loaded(x).asnumpy(), expected.asnumpy(), rtol=1e-5)


def test_symbol_input_returns_the_symbolic_program():
    get_net()  # the chapter builds two networks before this one: dense0..dense5
    net = get_net()
    net.hybridize()
    out = net(sym.var("data"))
    assert isinstance(out, sym.Symbol) and repr(out) == "<Symbol dense5_fwd>"
    assert out.list_arguments() == ["data", "dense3_weight", "dense3_bias", "dense4_weight",
                                    "dense4_bias", "dense5_weight", "dense5_bias"]
    assert out.list_outputs() == ["dense5_fwd_output"]


def get_scoped_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation="relu"),
                nn.Dense(128, activation="relu"),
                nn.Dense(2))
    net.initialize()
    return net


def test_blog_post_saves_the_symbol_and_the_params(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    net = get_scoped_net()
    x = nd.random.normal(shape=(1, 512))
    before = net(x)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), before.asnumpy(), rtol=1e-5)
    data = sym.var("data")
    assert str(data) == "<Symbol data>"
    assert str(net(data)) == "<Symbol hybridsequential0_dense2_fwd>"
    assert net(nd.random.normal(shape=(1, 512))).shape == (1, 2)
    net(data).save("model.json")
    with pytest.warns(UserWarning, match="save_params is deprecated"):
        net.save_params("model.params")
    assert sorted(nd.load("model.params")) == ["dense0_bias", "dense0_weight", "dense1_bias",
                                               "dense1_weight", "dense2_bias", "dense2_weight"]
    assert sym.load("model.json").list_arguments()[:3] == [
        "data", "hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias"]
    net.export("model")
    assert sorted(nd.load("model-0000.params"))[0] == "arg:hybridsequential0_dense0_bias"


# -- 001 / 004: prints inside hybrid_forward -------------------------------------------------

class HybridNet(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = nn.Dense(10)
        self.output = nn.Dense(2)

    def hybrid_forward(self, F, x):
        print("F: ", F)
        print("x: ", x)
        x = F.relu(self.hidden(x))
        print("hidden: ", x)
        return self.output(x)


def test_nn_exports_the_block_classes():
    # the seeds write `class HybridNet(nn.HybridBlock)`: MXNet's gluon.nn re-exports them
    assert (nn.Block, nn.HybridBlock) == (gluon.Block, gluon.HybridBlock)
    assert nn.SymbolBlock is gluon.SymbolBlock


def test_prints_every_imperative_call_and_only_the_first_hybridized_one(capsys):
    net = HybridNet()
    net.initialize()
    x = nd.random.normal(shape=(1, 4))
    outs = [net(x), net(x)]
    printed = capsys.readouterr().out
    imperative = (f"F:  {nd!r}\nx:  {x}\nhidden:  \n")
    assert printed.count(imperative) == 2 and printed.count("<NDArray 1x10 @cpu(0)>") == 2
    net.hybridize()
    outs.append(net(x))
    assert capsys.readouterr().out == (f"F:  {sym!r}\nx:  <Symbol data>\n"
                                       "hidden:  <Symbol hybridnet0_relu0>\n")
    outs.append(net(x))
    assert capsys.readouterr().out == ""  # the program runs without the Python code
    for out in outs:
        assert isinstance(out, nd.NDArray) and out.shape == (1, 2)
        np.testing.assert_allclose(out.asnumpy(), outs[0].asnumpy(), rtol=1e-5)


def test_unused_layer_warns_when_hybridized():
    class Net(gluon.HybridBlock):  # the blog post's Net: fc3 is never called
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.fc1 = nn.Dense(256)
                self.fc2 = nn.Dense(128)
                self.fc3 = nn.Dense(2)

        def hybrid_forward(self, F, x):
            return self.fc2(F.relu(self.fc1(x)))

    net = Net()
    net.initialize()
    x = nd.random.normal(shape=(1, 4))
    assert net(x).shape == (1, 128)
    net.hybridize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert net(x).shape == (1, 128)
    # MXNet warns once: "Parameter net0_dense2_bias, net0_dense2_weight is not used by any
    # computation. Is this intended?"; hybridgpu may say it in one warning or in one a name
    text = " ".join(str(w.message) for w in caught)
    assert "net0_dense2_weight" in text and "net0_dense2_bias" in text
    assert "is not used by any computation" in text and "net0_dense1" not in text


def _asnumpy(x):
    x.asnumpy()


def _add_in_place(x):
    x += 1


def _assign_slice(x):
    x[:] = x + 1


@pytest.mark.parametrize("line", [_asnumpy, _add_in_place, _assign_slice])
def test_asnumpy_and_in_place_ops_fail_when_hybridized(line):
    class Debug(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = nn.Dense(10)

        def hybrid_forward(self, F, x):
            line(x)  # the exercise of 001: such a line at the top of hybrid_forward
            return self.hidden(x)

    net = Debug()
    net.initialize()
    x = nd.random.normal(shape=(1, 4))
    assert net(x).shape == (1, 10)  # imperatively every NDArray operation works
    net.hybridize()
    with pytest.raises(NotAvailableOnSymbol, match="in HybridBlock 'debug0'"):
        net(x)


# -- 000: F, hybridize through the children, __setattr__ ---------------------------------

def scoped_net():
    class HybridNet(gluon.HybridBlock):  # the article's class; its name names the block
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.fc1 = nn.Dense(10)
                self.fc2 = nn.Dense(2)

        def hybrid_forward(self, F, x):
            x = F.relu(self.fc1(x))
            return self.fc2(x)

    return HybridNet()


def test_walkthrough_symbolic_hybridized_and_imperative_results():
    net = scoped_net()
    net.initialize()
    x = nd.random.normal(shape=(1, 4))
    assert str(net) == ("HybridNet(\n  (fc1): Dense(None -> 10, linear)\n"
                        "  (fc2): Dense(None -> 2, linear)\n)")
    imperative = net(x)
    symbolic = net(sym.var("data"))
    assert repr(symbolic) == "<Symbol hybridnet0_dense1_fwd>"
    assert symbolic.list_arguments() == ["data", "hybridnet0_dense0_weight",
                                         "hybridnet0_dense0_bias", "hybridnet0_dense1_weight",
                                         "hybridnet0_dense1_bias"]
    net.hybridize()
    hybridized = net(x)
    assert repr(hybridized).endswith("<NDArray 1x2 @cpu(0)>")
    np.testing.assert_allclose(hybridized.asnumpy(), imperative.asnumpy(), rtol=1e-5)
    assert str(net) == ("HybridNet(\n  (fc1): Dense(4 -> 10, linear)\n"
                        "  (fc2): Dense(10 -> 2, linear)\n)")


def test_walkthrough_children_registered_by_setattr_and_hybridized_with_the_parent():
    net = scoped_net()
    assert list(net._children) == ["fc1", "fc2"]
    assert [c is b for c, b in zip(net._children.values(), (net.fc1, net.fc2))] == [True, True]
    net.hybridize()
    assert net._active and net.fc1._active and net.fc2._active
    net.hybridize(False)
    assert not net.fc1._active
    with pytest.raises(TypeError, match="Changing attribute type for fc1 from"):
        net.fc1 = gluon.Parameter("foo", shape=(1,))


def test_walkthrough_forward_requires_ndarray_or_symbol():
    net = scoped_net()
    with pytest.raises(TypeError, match="HybridBlock requires the first argument to forward be "
                                        "either Symbol or NDArray"):
        net(np.ones((1, 4)))


def test_walkthrough_deferred_initialization_finishes_on_the_first_call():
    net = scoped_net()
    net.initialize()
    assert net.fc1.weight.shape == (10, 0)
    net.hybridize()
    net(nd.ones((3, 4)))
    assert (net.fc1.weight.shape, net.fc2.weight.shape) == ((10, 4), (2, 10))


# -- 002: registered parameters arrive as keyword arguments ----------------------------------

class Generator(gluon.HybridBlock):
    def __init__(self, alloc_size=(5, 5), **kwargs):
        super().__init__(**kwargs)
        anchors = self._generate_anchors(alloc_size)
        self._key = "anchor_1"
        self.anchors = self.params.get_constant(self._key, anchors)

    def _generate_anchors(self, alloc_size):
        return nd.random.uniform(shape=alloc_size)

    def hybrid_forward(self, F, x, anchors):
        print(anchors)


def test_constant_arrives_as_a_keyword_argument(capsys):
    generator = Generator()
    generator.initialize()
    x = nd.random.uniform(shape=(3, 3))
    assert generator(x) is None
    printed = capsys.readouterr().out
    assert printed == f"{generator.anchors.data()}\n"
    assert printed.endswith("<NDArray 5x5 @cpu(0)>\n")
    assert repr(generator._reg_params) == (
        "{'anchors': Constant generator0_anchor_1 (shape=(5, 5), "
        "dtype=<class 'numpy.float32'>)}")


def test_constant_is_copied_to_the_input_context(capsys):
    # MXNet 1.9.1 raises "Parameter 'generator0_anchor_1' was not initialized on context
    # cpu(1)" here, although the article says parameters follow the input's device;
    # hybridgpu copies them (DESIGN.md 6)
    generator = Generator()
    generator.initialize()
    generator(nd.random.uniform(shape=(3, 3), ctx=mx.cpu(1)))
    assert capsys.readouterr().out.endswith("<NDArray 5x5 @cpu(1)>\n")


class Shifted(gluon.HybridBlock):
    """002's pattern with a trainable ``params.get`` parameter next to the Constant."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.anchors = self.params.get_constant("anchor_1", nd.ones((3, 3)))
        self.scale = self.params.get("scale", shape=(3, 3), init="ones")
        self.seen = []

    def hybrid_forward(self, F, x, anchors, scale):
        if F is nd:
            self.seen.append((anchors.context, scale.context))
        return x * scale + anchors


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_parameters_are_on_the_input_context(hybridize):
    net = Shifted()
    net.initialize()
    if hybridize:
        net.hybridize()
    for ctx in (mx.cpu(0), mx.cpu(1)):
        out = net(nd.ones((3, 3), ctx=ctx))
        assert out.context == ctx and out.asnumpy().tolist() == [[2.0] * 3] * 3
        assert ctx in net.anchors.list_ctx() and ctx in net.scale.list_ctx()
    if not hybridize:
        assert net.seen == [(mx.cpu(0), mx.cpu(0)), (mx.cpu(1), mx.cpu(1))]


@pytest.mark.gpu
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_parameters_follow_the_input_to_the_gpu(gpu_available, hybridize):
    # 002: "copied to the same device as x (CPU or GPU)"
    net = Shifted()
    net.initialize()
    if hybridize:
        net.hybridize()
    out = net(nd.ones((3, 3), ctx=gpu_available))
    assert out.context == gpu_available and out.asnumpy().tolist() == [[2.0] * 3] * 3
    assert gpu_available in net.scale.list_ctx()


def test_a_missing_keyword_for_a_registered_parameter_fails():
    class Forgot(gluon.HybridBlock):  # 002: hybrid_forward must take every parameter
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.anchors = self.params.get_constant("anchor_1", nd.ones((2,)))

        def hybrid_forward(self, F, x):
            return x

    net = Forgot()
    net.initialize()
    with pytest.raises(TypeError, match="anchors"):
        net(nd.ones((2,)))


# -- 003: the Symbol class (docstring examples of the article) -------------------------------

def test_symbol_article_examples():
    a = sym.Variable("a", attr={"a1": "a2"})
    b = sym.Variable("b", attr={"b1": "b2"})
    c = a + b
    assert c.attr_dict() == {"a": {"a1": "a2"}, "b": {"b1": "b2"}}
    assert (c.list_auxiliary_states(), c.list_arguments(), c.list_outputs()) == (
        [], ["a", "b"], ["_plus0_output"])
    assert c.get_internals().list_outputs() == ["a", "b", "_plus0_output"]
    assert c.get_children().list_outputs() == ["a", "b"]
    composed = c(a=sym.var("tt"))  # __call__ copies, then composes
    assert composed.list_arguments() == ["tt", "b"] and c.list_arguments() == ["a", "b"]
    assert repr(c.get_internals()["_plus0_output"]) == "<Symbol _plus0>"
    with pytest.raises(ValueError, match="Cannot find output that matches name [\"']zzz"):
        c.get_internals()["zzz"]
    assert [repr(s) for s in sym.Group([a, b])] == ["<Symbol a>", "<Symbol b>"]
    assert copy.deepcopy(c) is not c and repr(copy.deepcopy(c)) == "<Symbol _plus0>"
    assert [repr(f) for f in (sym.pow(a, 2), sym.maximum(a, b), sym.hypot(a, b), sym.eye(3))] \
        == ["<Symbol _powerscalar0>", "<Symbol _maximum0>", "<Symbol _hypot0>", "<Symbol _eye0>"]
    assert sym.split_v2(a, 2).list_outputs() == ["_split_v20_output0", "_split_v20_output1"]


def test_hybridizing_a_net_that_uses_every_parameter_warns_nothing():
    net = get_net()
    net.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(nd.ones((1, 512)))
