"""autograd: recording scopes, backward/grad, gradient requests, higher order, Function, and
Gluon parameters imperative vs hybridized (behaviour checked with the real MXNet 1.9.1)."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, nd
from hybridgpu.base import MXNetError
from hybridgpu.gluon import nn


def _var(values, dtype="float64"):
    x = nd.array(values, dtype=dtype)
    x.attach_grad()
    return x


def test_scopes_set_recording_and_training():
    assert not autograd.is_recording() and not autograd.is_training()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
        with autograd.predict_mode():
            assert autograd.is_recording() and not autograd.is_training()
    with autograd.record(train_mode=False):
        assert autograd.is_recording() and not autograd.is_training()
    with autograd.train_mode():
        assert autograd.is_training() and not autograd.is_recording()
    assert not autograd.is_recording() and not autograd.is_training()


def test_backward_of_a_composite_matches_the_formula():
    x = _var([0.5, -1.0, 2.0])
    with autograd.record():
        y = nd.tanh(x) * nd.exp(x) + x * x
    y.backward()  # head gradient: ones
    v = x.asnumpy()
    expected = (1 - np.tanh(v) ** 2) * np.exp(v) + np.tanh(v) * np.exp(v) + 2 * v
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-12)


def test_head_gradient_and_shared_inputs():
    x = _var([1.0, 2.0])
    with autograd.record():
        y = x * x + x  # x used three times
    y.backward(nd.array([2.0, 3.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.asnumpy(), [2 * (2 * 1 + 1), 3 * (2 * 2 + 1)])


def test_grad_req_add_accumulates_and_null_skips():
    x = nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = x * 2
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0, 6.0])
    z = nd.array([1.0])
    z.attach_grad(grad_req="null")
    with autograd.record():
        w = z * 5
    w.backward()
    assert z.grad.asnumpy().tolist() == [0.0]


def test_backward_twice_needs_retain_graph():
    x = _var([1.0])
    with autograd.record():
        y = x * 3
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(MXNetError, match="freed.*retain_graph=True"):
        y.backward()


def test_second_order_gradient():
    x = _var([2.0, -1.0])
    with autograd.record():
        y = x ** 3
        (dy,) = autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), 3 * x.asnumpy() ** 2)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy())


def test_grad_returns_without_writing_buffers():
    x = _var([1.0, 3.0])
    with autograd.record():
        y = nd.sum(x * x)
    (g,) = autograd.grad(y, [x])
    np.testing.assert_allclose(g.asnumpy(), [2.0, 6.0])
    assert x.grad.asnumpy().tolist() == [0.0, 0.0]


def test_detach_and_pause_stop_gradients():
    x = _var([1.0, 2.0])
    with autograd.record():
        y = x * x.detach()
        with autograd.pause():
            z = x * 100
        w = y + z
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), x.asnumpy())  # only d(x * c)/dx = c


def test_inplace_ops_on_recorded_arrays_are_refused():
    x = _var([1.0])
    with autograd.record():
        y = x * 2
        with pytest.raises(MXNetError, match="Inplace operations"):
            y += 1
        with pytest.raises(MXNetError, match="Inplace operations"):
            y[:] = 0


def test_views_indexing_copies_and_device_moves_are_recorded():
    x = _var(np.arange(6.0).reshape(2, 3))
    with autograd.record():
        y = ((x.reshape((3, 2)) * 2).sum() + (x[1] * 3).sum() + x[:, [0, 0]].sum()
             + x.copy().sum() + x.as_in_context(mx.cpu(1)).sum().as_in_context(mx.cpu()))
    y.backward()
    expected = np.full((2, 3), 2.0 + 1 + 1)  # reshape*2, copy, device round trip
    expected[1] += 3          # x[1] * 3
    expected[:, 0] += 2       # column 0 picked twice
    np.testing.assert_allclose(x.grad.asnumpy(), expected)


def test_mixed_dtypes_are_refused_as_in_mxnet():
    with pytest.raises(MXNetError, match="different dtypes float64 and float32"):
        nd.array([1.0], dtype="float64") * nd.array([1.0], dtype="float32")


def test_backward_of_an_untracked_array_is_an_error():
    with pytest.raises(MXNetError, match="not part of a recorded graph"):
        nd.array([1.0]).backward()


def test_function_with_custom_backward():
    class ScaledSigmoid(autograd.Function):
        def forward(self, x):
            y = nd.sigmoid(x)
            self.save_for_backward(y)
            return y * 2

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * 2 * y * (1 - y)

    x = _var([0.0, 1.0])
    with autograd.record():
        z = ScaledSigmoid()(x)
    z.backward()
    s = 1 / (1 + np.exp(-x.asnumpy()))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-12)


def _directional(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("expr", [
    lambda x, w: nd.sum(nd.tanh(nd.dot(w, x))),
    lambda x, w: nd.sum(nd.softmax(nd.dot(w, x), axis=0) * nd.arange(3, dtype="float64")),
    lambda x, w: nd.norm(nd.broadcast_mul(w, nd.reshape(x, (1, -1)))),
], ids=["tanh-dot", "softmax", "norm-broadcast"])
def test_gradients_match_finite_differences(expr):
    rng = np.random.RandomState(0)
    xv, wv = rng.randn(4), rng.randn(3, 4)
    x, w = _var(xv), _var(wv)
    with autograd.record():
        y = expr(x, w)
    y.backward()
    vx, vw = rng.randn(4), rng.randn(3, 4)
    analytic = (x.grad.asnumpy() * vx).sum() + (w.grad.asnumpy() * vw).sum()

    def value(t):
        return expr(nd.array(xv + t * vx, dtype="float64"),
                    nd.array(wv + t * vw, dtype="float64")).asnumpy().sum()

    numeric = (value(1e-6) - value(-1e-6)) / 2e-6
    assert abs(analytic - numeric) < 1e-6 * max(1.0, abs(numeric))


def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Dropout(0.0), nn.Dense(3))
    return net


def _grads(hybridize):
    mx.random.seed(0)
    with mx.name.NameManager():
        net = _net()
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    x = nd.array(np.random.RandomState(1).randn(2, 3, 6, 6))
    x.attach_grad()
    with autograd.record():
        loss = (net(x) ** 2).mean()
    loss.backward()
    params = net.collect_params()
    return {k: p.grad().asnumpy() for k, p in params.items() if p.grad_req != "null"} | {
        "x": x.grad.asnumpy(), "running_mean": params[
            [k for k in params if k.endswith("running_mean")][0]].data().asnumpy()}


def test_hybridized_gradients_equal_imperative():
    imperative, hybridized = _grads(False), _grads(True)
    assert imperative.keys() == hybridized.keys()
    for key in imperative:
        np.testing.assert_allclose(hybridized[key], imperative[key], rtol=1e-5, atol=1e-6,
                                   err_msg=key)


def test_parameter_copies_on_two_contexts_get_their_own_gradients():
    net = nn.Dense(2, in_units=3)
    net.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    for ctx, scale in ((mx.cpu(0), 1.0), (mx.cpu(1), 2.0)):
        x = nd.ones((1, 3), ctx=ctx) * scale
        with autograd.record():
            y = net(x).sum()
        y.backward()
    np.testing.assert_allclose(net.weight.grad(mx.cpu(0)).asnumpy(), np.ones((2, 3)))
    np.testing.assert_allclose(net.weight.grad(mx.cpu(1)).asnumpy(), 2 * np.ones((2, 3)))


def test_train_mode_is_recorded_per_op():
    net = nn.Dropout(0.5)
    x = nd.ones((1000,))
    x.attach_grad()
    mx.random.seed(3)
    with autograd.record():
        y = net(x)
    y.backward()
    kept = y.asnumpy() != 0
    np.testing.assert_allclose(x.grad.asnumpy(), kept * 2.0)
    with autograd.record(train_mode=False):
        z = net(x)
    assert (z.asnumpy() == 1).all()


# -- MXNet's recorded op gradients, replayed through autograd -----------------------------------

from test_mxnet_op_fixtures import (  # noqa: E402
    ARRAYS,
    CASES,
    GRAD_TOL,
    as_list,
    assert_same,
    case_attrs,
    case_inputs,
    case_params,
    head_like,
)
from test_mxnet_op_fixtures import nd_function as fixture_function  # noqa: E402


@pytest.mark.parametrize("case", case_params([c for c in CASES if c.get("grads")], grad=True))
def test_autograd_backward_matches_mxnet(case):
    """``backward()`` through the tape gives MXNet's gradients (fixtures written by MXNet's
    own autograd with the same head gradients)."""
    fn = fixture_function(case)
    inputs = [nd.array(a, dtype=a.dtype) for a in case_inputs(case)]
    for entry in case["grads"]:
        inputs[entry["input"]].attach_grad()
    with autograd.record(train_mode=bool(case.get("train"))):
        outs = as_list(fn(*inputs, **case_attrs(case)))
    heads = [nd.array(head_like(o.shape, o.dtype), dtype=o.dtype) for o in outs]
    autograd.backward(outs, heads)
    for k, entry in enumerate(case["grads"]):
        got = inputs[entry["input"]].grad
        assert_same(f"{case['id']} autograd gradient of input {entry['input']}", got,
                    ARRAYS[f"{case['id']}/grad{k}"], case, GRAD_TOL)
