"""``mx.operator.CustomOp``: ops written in Python, run through ``nd.Custom`` and ``F.Custom``
(hybridized: the compiled program calls back into Python), with autograd through them checked
against finite differences, the prop's inference hooks, and MXNet's JSON for a Custom node
(fixture written by ``tests/fixtures/make_mxnet_misc_fixtures.py`` with MXNet 1.9.1)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_misc_fixtures as gen  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "mxnet_misc" /
                      "symbols.json").read_text())
gen.register_scaled_product(mx)


class _Tanh(mx.operator.CustomOp):
    """tanh through NumPy, counting its calls."""

    calls = 0

    def forward(self, is_train, req, in_data, out_data, aux):
        _Tanh.calls += 1
        self.assign(out_data[0], req[0], mx.nd.array(np.tanh(in_data[0].asnumpy()),
                                                       dtype=in_data[0].dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0].asnumpy()
        self.assign(in_grad[0], req[0], out_grad[0] * mx.nd.array(1 - y * y, dtype=y.dtype))


@mx.operator.register("test_tanh")
class _TanhProp(mx.operator.CustomOpProp):
    def create_operator(self, ctx, shapes, dtypes):
        return _Tanh()


class _RowSum(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0].sum(axis=1))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        grad = out_grad[0].reshape((-1, 1)).broadcast_to(in_data[0].shape)
        self.assign(in_grad[0], req[0], grad)


@mx.operator.register("test_rowsum")
class _RowSumProp(mx.operator.CustomOpProp):
    def list_outputs(self):
        return ["total"]

    def infer_shape(self, in_shape):
        return in_shape, [(in_shape[0][0],)], []

    def infer_type(self, in_type):
        return in_type, [np.float64], []

    def create_operator(self, ctx, shapes, dtypes):
        return _RowSum()


def _finite_difference(f, x, eps=1e-6):
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[i] += eps
        minus[i] -= eps
        grad[i] = (f(plus) - f(minus)) / (2 * eps)
    return grad


def _weighted_sum_of_outputs(a, b, weights):
    outs = mx.nd.Custom(mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64"),
                        op_type="scaled_product", scale=3)
    return sum(float((o.asnumpy() * w).sum()) for o, w in zip(outs, weights))


def test_forward_values_and_names():
    a, b = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[3.0, -1.0]])
    prod, inc = mx.nd.Custom(a, b, op_type="scaled_product", scale=2)
    np.testing.assert_allclose(prod.asnumpy(), [[6.0, -4.0]])
    np.testing.assert_allclose(inc.asnumpy(), [[2.0, 3.0]])
    by_name = mx.nd.Custom(b=b, a=a, op_type="scaled_product", scale=2)
    np.testing.assert_allclose(by_name[0].asnumpy(), prod.asnumpy())


def test_gradients_match_finite_differences_in_float64():
    rng = np.random.RandomState(0)
    a, b = rng.randn(2, 3), rng.randn(2, 3)
    weights = [rng.randn(2, 3), rng.randn(2, 3)]
    xa, xb = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    xa.attach_grad()
    xb.attach_grad()
    with mx.autograd.record():
        prod, inc = mx.nd.Custom(xa, xb, op_type="scaled_product", scale=3)
        loss = (prod * mx.nd.array(weights[0], dtype="float64")).sum() + \
            (inc * mx.nd.array(weights[1], dtype="float64")).sum()
    loss.backward()
    num_a = _finite_difference(lambda v: _weighted_sum_of_outputs(v, b, weights), a)
    num_b = _finite_difference(lambda v: _weighted_sum_of_outputs(a, v, weights), b)
    np.testing.assert_allclose(xa.grad.asnumpy(), num_a, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(xb.grad.asnumpy(), num_b, rtol=1e-6, atol=1e-8)


class _Net(mx.gluon.HybridBlock):
    def __init__(self):
        super().__init__()
        with self.name_scope():
            self.dense = mx.gluon.nn.Dense(4)

    def hybrid_forward(self, F, x):
        h = F.Custom(self.dense(x), op_type="test_tanh")
        return F.Custom(h, op_type="test_rowsum") * 2


def _forward_backward(net, x):
    with mx.autograd.record():
        y = net(x)
    y.backward()
    return y.asnumpy(), net.dense.weight.grad().asnumpy().copy()


def test_hybridized_block_calls_back_into_python_with_gradients():
    net = _Net()
    net.initialize(mx.init.Xavier())
    x = mx.nd.random.uniform(-1, 1, shape=(3, 5))
    eager = _forward_backward(net, x)
    net.hybridize()
    compiled = _forward_backward(net, x)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-5)
    np.testing.assert_allclose(compiled[1], eager[1], rtol=1e-5, atol=1e-7)
    before = _Tanh.calls
    net(x)
    net(x)
    assert _Tanh.calls == before + 2  # every call of the compiled program runs the Python
    assert compiled[0].dtype == np.float64  # the prop's infer_type


def test_symbol_inference_uses_the_prop():
    x = mx.sym.var("x")
    s = mx.sym.Custom(x, op_type="test_rowsum", name="rs")
    assert s.list_outputs() == ["rs_total"]
    assert s.infer_shape(x=(3, 7))[1] == [(3,)]
    assert s.infer_type(x="float32")[1] == [np.float64]
    made = mx.sym.Custom(op_type="scaled_product", name="c")
    assert made.list_arguments() == ["c_a", "c_b"]


def test_json_matches_mxnet_and_round_trips():
    ours = json.loads(gen.build(mx, "custom").tojson())
    theirs = json.loads(FIXTURE["custom"]["json"])
    assert ours == theirs
    loaded = mx.sym.load_json(FIXTURE["custom"]["json"])
    a, b = np.array([[1.0, 2.0]], "float32"), np.array([[0.5, 4.0]], "float32")
    out = loaded.eval(a=mx.nd.array(a), b=mx.nd.array(b), custom0_b=mx.nd.array(b * 3))
    np.testing.assert_allclose(out[0].asnumpy(), a * b * 2 + 1)
    np.testing.assert_allclose(out[1].asnumpy(), a + 1)
    np.testing.assert_allclose(out[2].asnumpy(), a * b * 3)
    assert loaded.debug_str() == FIXTURE["custom"]["debug_str"]


def test_assign_modes():
    op = mx.operator.CustomOp()
    dst = mx.nd.ones((2,))
    op.assign(dst, "add", mx.nd.array([1.0, 2.0]))
    np.testing.assert_allclose(dst.asnumpy(), [2.0, 3.0])
    op.assign(dst, "null", mx.nd.zeros((2,)))
    np.testing.assert_allclose(dst.asnumpy(), [2.0, 3.0])
    op.assign(dst, "inplace", mx.nd.zeros((2,)))
    np.testing.assert_allclose(dst.asnumpy(), [0.0, 0.0])
    with pytest.raises(MXNetError, match="unknown req 'sum'"):
        op.assign(dst, "sum", mx.nd.zeros((2,)))
    with pytest.raises(MXNetError, match="shape"):
        op.assign(dst, "write", mx.nd.zeros((3,)))


def test_need_top_grad_false_loss_layer():
    class SquaredLoss(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0], 2 * (in_data[0] - in_data[1]))

    @mx.operator.register("test_squared_loss")
    class SquaredLossProp(mx.operator.CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def create_operator(self, ctx, shapes, dtypes):
            return SquaredLoss()

    prop = SquaredLossProp()
    assert prop.declare_backward_dependency([1], [2, 3], [4]) == [2, 3, 4]
    x, label = mx.nd.array([1.0, 3.0]), mx.nd.array([0.0, 1.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, label, op_type="test_squared_loss")
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])


def test_errors_name_the_problem():
    with pytest.raises(MXNetError, match="Cannot find custom operator 'no_such_op'"):
        mx.nd.Custom(mx.nd.ones((2,)), op_type="no_such_op")
    with pytest.raises(MXNetError, match="'op_type' is missing"):
        mx.nd.Custom(mx.nd.ones((2,)))
    with pytest.raises(TypeError, match="CustomOpProp subclass"):
        mx.operator.register("bad")(object)
    with pytest.raises(MXNetError, match="no input named 'z'"):
        mx.nd.Custom(z=mx.nd.ones((2,)), op_type="test_tanh")
    assert "test_tanh" in mx.operator.get_all_registered_operators()
