"""The errors a Gluon user meets, with what their messages must say: NDArray-only operations in
a hybridized ``hybrid_forward`` name the block; a wrong input shape names the layer, the
expected and the given shape (imperative and hybridized); inputs on two contexts say so; a
parameter missing from a file is named; ``export`` before a hybridized forward says what to
do.

MXNet 1.9.1's messages for the same mistakes are quoted where hybridgpu says more.
"""

from __future__ import annotations

import pytest

import hybridgpu as mx
from hybridgpu import gluon, nd
from hybridgpu.base import MXNetError, NotImplementedForSymbol
from hybridgpu.gluon import nn
from hybridgpu.symbol import NotAvailableOnSymbol


@pytest.fixture(autouse=True)
def fresh_names():
    with mx.name.NameManager():
        yield


# -- NDArray-only operations while tracing ----------------------------------------------------

def _asnumpy(x):
    x.asnumpy()


def _asscalar(x):
    x.asscalar()


def _branch(x):
    if x:
        pass


def _add_in_place(x):
    x += 1


def _multiply_in_place(x):
    x *= 2


def _assign_slice(x):
    x[:] = x + 1


class Bad(gluon.HybridBlock):
    def __init__(self, action, **kwargs):
        super().__init__(**kwargs)
        self.action = action

    def hybrid_forward(self, F, x):
        self.action(x)
        return x + 1


# MXNet 1.9.1: "Function asnumpy is not implemented for Symbol and only available in NDArray."
# (no block named, no way out offered); item assignment is a bare TypeError there
@pytest.mark.parametrize("action, says", [
    (_asnumpy, "asnumpy is not available on Symbol"),
    (_asscalar, "asscalar is not available on Symbol"),
    (_branch, r"bool\(\) is not available on Symbol.*F.where"),
    (_add_in_place, r"in-place add \(__iadd__\).*x = x \+ y"),
    (_multiply_in_place, "in-place"),
    (_assign_slice, "item assignment is not available on Symbol"),
])
def test_ndarray_only_operations_name_the_hybridized_block(action, says):
    net = Bad(action)
    assert net(nd.ones((1,))).shape == (1,)  # imperatively they all work
    net.hybridize()
    with pytest.raises(NotAvailableOnSymbol, match=r"in HybridBlock 'bad0' \(Bad.hybrid_forward, "
                                                   r"while tracing\)") as info:
        net(nd.ones((1,)))
    assert info.match(says)
    assert isinstance(info.value, NotImplementedForSymbol)  # MXNet's exception class


def test_the_innermost_block_is_named():
    class Outer(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.inner = Bad(_asnumpy)

        def hybrid_forward(self, F, x):
            return self.inner(x) * 2

    net = Outer()
    net.hybridize()
    with pytest.raises(NotAvailableOnSymbol, match="^in HybridBlock 'outer0_bad0' "):
        net(nd.ones((1, 2)))


def test_a_symbol_input_gets_the_same_error():
    with pytest.raises(NotAvailableOnSymbol, match="in HybridBlock 'bad0'.*asnumpy"):
        Bad(_asnumpy)(mx.sym.var("data"))


# -- wrong input shapes -----------------------------------------------------------------------

def _mlp():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(3), nn.Dense(2))
    net.initialize()
    net(nd.ones((1, 4)))  # the weights are now (3, 4) and (2, 3)
    return net


def test_dense_wrong_input_shape_imperative():
    # MXNet 1.9.1: "Shape inconsistent, Provided = [3,4], inferred shape=(3,5)"
    with pytest.raises(MXNetError, match=r"'hybridsequential0_dense0'.*\(1, 5\).*4 input "
                                         r"features.*\(3, 4\)"):
        _mlp()(nd.ones((1, 5)))


def test_dense_wrong_input_shape_hybridized():
    # MXNet 1.9.1: "Error in operator hybridsequential0_dense0_fwd: Shape inconsistent,
    # Provided = [3,4], inferred shape=(3,5)"
    net = _mlp()
    net.hybridize()
    net(nd.ones((1, 4)))
    with pytest.raises(MXNetError, match="hybridsequential0_dense0") as info:
        net(nd.ones((1, 5)))
    assert info.match(r"\(3, 4\)") and info.match(r"\(1, 5\)")
    assert net(nd.ones((2, 4))).shape == (2, 2)  # a right shape still works afterwards


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_conv_wrong_channel_count(hybridize):
    conv = nn.Conv2D(4, 3)
    conv.initialize()
    conv(nd.ones((1, 3, 8, 8)))
    if hybridize:
        conv.hybridize()
    with pytest.raises(MXNetError, match=r"Conv2D 'conv0'.*expected input shape \(1, 3, 8, 8\)"
                                         r".*got shape \(1, 2, 8, 8\)"):
        conv(nd.ones((1, 2, 8, 8)))


class Linear(gluon.HybridBlock):
    """A user's own layer: no shape check of its own, so the core must name it."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self._units = units
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(units, 0), allow_deferred_init=True)

    def hybrid_forward(self, F, x, weight):
        return F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units)


def test_custom_layer_wrong_input_shape_imperative():
    net = Linear(3)
    net.initialize()
    net(nd.ones((1, 4)))
    with pytest.raises(MXNetError, match=r"linear0.*\(3, 4\).*\(1, 5\)"):
        net(nd.ones((1, 5)))


def test_custom_layer_wrong_input_shape_hybridized():
    net = Linear(3)
    net.initialize()
    net.hybridize()
    net(nd.ones((1, 4)))
    with pytest.raises(MXNetError, match=r"linear0.*\(3, 4\).*\(1, 5\)"):
        net(nd.ones((1, 5)))


def test_deferred_layer_fed_nothing_names_the_parameter():
    net = nn.Dense(3)
    net.initialize()
    with pytest.raises(MXNetError, match="Parameter 'dense0_weight' has not been initialized yet "
                                         "because initialization was deferred"):
        net.weight.data()


# -- contexts ---------------------------------------------------------------------------------

class Add(gluon.HybridBlock):
    def hybrid_forward(self, F, x, y):
        return x + y


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_inputs_on_two_contexts(hybridize):
    # MXNet 1.9.1 (hybridized): "Find multiple contexts in the input, After hybridized, the
    # HybridBlock only supports one input context. ... Find all contexts = {cpu(0), cpu(1)}";
    # imperatively it silently computes. hybridgpu refuses both ways.
    net = Add()
    if hybridize:
        net.hybridize()
    with pytest.raises(MXNetError, match=r"Add 'add0': inputs are on different contexts: input 0 "
                                         r"is on cpu\(0\), input 1 is on cpu\(1\)"):
        net(nd.ones((1, 4)), nd.ones((1, 4), ctx=mx.cpu(1)))


def test_nested_inputs_on_two_contexts():
    class Pair(gluon.HybridBlock):
        def hybrid_forward(self, F, x, pair):
            return x + pair[0] + pair[1]

    with pytest.raises(MXNetError, match=r"input 2 is on cpu\(1\)"):
        Pair()(nd.ones((2,)), [nd.ones((2,)), nd.ones((2,), ctx=mx.cpu(1))])


def test_mxnet_gpu_without_a_gpu_says_what_is_missing():
    if mx.context.num_gpus() > 0:
        pytest.skip("a GPU is present")
    with pytest.raises(MXNetError, match="(?i)cupy|cuda"):
        nd.ones((1,), ctx=mx.gpu(0))


# -- files ------------------------------------------------------------------------------------

def test_params_file_missing_a_parameter_names_it(tmp_path):
    path = str(tmp_path / "mlp.params")
    net = _mlp()
    net.save_parameters(path)
    partial = {k: v for k, v in nd.load(path).items() if k != "1.bias"}
    nd.save(path, partial)
    other = nn.HybridSequential()
    with other.name_scope():
        other.add(nn.Dense(3), nn.Dense(2))
    # MXNet 1.9.1 says the same: "Parameter '1.bias' is missing in file ..., which contains
    # parameters: ... Set allow_missing=True to ignore missing parameters."
    with pytest.raises(MXNetError, match=r"Parameter '1.bias' is missing in file .*mlp.params.*"
                                         r"allow_missing=True"):
        other.load_parameters(path)


def test_full_name_params_file_missing_a_parameter_names_it(tmp_path):
    path = str(tmp_path / "full.params")
    net = _mlp()
    net.collect_params().save(path, strip_prefix=net.prefix)
    nd.save(path, {k: v for k, v in nd.load(path).items() if k != "dense1_weight"})
    other = nn.HybridSequential()
    with other.name_scope():
        other.add(nn.Dense(3), nn.Dense(2))
    with pytest.raises(MXNetError, match="Parameter 'hybridsequential1_dense1_weight' is missing"):
        other.collect_params().load(path, restore_prefix=other.prefix)
    with pytest.raises(MXNetError, match="Parameter 'hybridsequential1_dense1_weight' is missing"):
        other.load_parameters(path)  # a file of full names goes the same way


def test_symbol_block_params_file_missing_a_parameter(tmp_path):
    from hybridgpu.gluon.symbol_block import SymbolBlock

    prefix = str(tmp_path / "mlp")
    net = _mlp()
    net.hybridize()
    net(nd.ones((1, 4)))
    net.export(prefix)
    arrays = nd.load(prefix + "-0000.params")
    del arrays["arg:hybridsequential0_dense1_bias"]
    nd.save(prefix + "-0000.params", arrays)
    with pytest.raises(MXNetError, match="hybridsequential0_dense1_bias"):
        SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")


@pytest.mark.parametrize("how", ["never called", "imperative only", "symbol only"])
def test_export_before_a_hybridized_forward(tmp_path, how):
    net = nn.Dense(2, in_units=4)
    net.initialize()
    if how == "imperative only":
        net(nd.ones((1, 4)))
    elif how == "symbol only":
        net.hybridize()
        net(mx.sym.var("data"))
    # the message is MXNet's, word for word
    with pytest.raises(RuntimeError, match=r"Please first call block.hybridize\(\) and then run "
                                           "forward with this block at least once before "
                                           "calling export."):
        net.export(str(tmp_path / "net"))
    assert list(tmp_path.iterdir()) == []
