"""Loss-head ops: their gradients follow MXNet 1.9.1's rules (checked with the real MXNet), and
a symbol ending in one needs no head gradient in ``backward()``."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops

X = np.arange(6, dtype=np.float64).reshape(2, 3) / 3 - 0.5
LABEL = np.full((2, 3), 0.2)


def _grad(name, inputs, **attrs):
    op = ops.get(name)
    parsed = op.parse_attrs(attrs)
    arrays = [mx.nd.array(a, dtype="float64") for a in inputs]
    outs = [mx.nd.invoke(op, arrays, parsed)]
    head = mx.nd.array(np.full(outs[0].shape, 5.0), dtype="float64")  # must be ignored
    return op.grad(mx.nd, arrays, outs, [head], **parsed), outs[0].asnumpy()


@pytest.mark.parametrize(("name", "rule"), [
    ("LinearRegressionOutput", lambda out: (out - LABEL) * 2 / 3),
    ("LogisticRegressionOutput", lambda out: (out - LABEL) * 2 / 3),
    ("MAERegressionOutput", lambda out: np.sign(out - LABEL) * 2 / 3),
])
def test_regression_outputs_scale_by_grad_scale_over_row_size(name, rule):
    (g_data, g_label), out = _grad(name, [X, LABEL], grad_scale=2.0)
    assert g_label is None
    np.testing.assert_allclose(g_data.asnumpy(), rule(out), rtol=1e-12)


@pytest.mark.parametrize(("normalization", "scale"), [
    ("null", 3.0), ("batch", 3.0 / 2), ("valid", 3.0 / 4)])  # 4 elements of X exceed 0.1
def test_make_loss_gradient_is_grad_scale_normalized(normalization, scale):
    (g,), _ = _grad("MakeLoss", [X], grad_scale=3.0, normalization=normalization,
                    valid_thresh=0.1)
    np.testing.assert_allclose(g.asnumpy(), np.full(X.shape, scale))


def test_make_loss_gradient_is_ones():
    (g,), _ = _grad("make_loss", [X])
    np.testing.assert_array_equal(g.asnumpy(), np.ones(X.shape))


def test_symbol_ending_in_a_loss_needs_no_head_gradient():
    data, label = mx.sym.var("data"), mx.sym.var("label")
    net = mx.sym.LinearRegressionOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                                        label, name="lro")
    ex = net.simple_bind(mx.cpu(), data=(2, 4), label=(2, 3))
    rng = np.random.RandomState(0)
    for arr in ex.arg_dict.values():
        arr[:] = rng.uniform(-1, 1, arr.shape)
    ex.forward(is_train=True)
    ex.backward()
    out = ex.outputs[0].asnumpy()
    expected_w = ((out - ex.arg_dict["label"].asnumpy()) / 3).T @ ex.arg_dict["data"].asnumpy()
    np.testing.assert_allclose(ex.grad_dict["fc_weight"].asnumpy(), expected_w, rtol=1e-5)
