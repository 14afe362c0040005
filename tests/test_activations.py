"""One formula per function: ``Activation``/``LeakyReLU`` dispatch to the definitions of
``ops/activations.py``, so they equal the plain ops to the bit (imperative and hybridized),
and the formulas stay finite without overflow warnings for large |x|."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd, ops
from hybridgpu.compiler.codegen import build_cpu_executable
from hybridgpu.graph import Graph, infer_shapes, infer_types

LARGE = [-1e4, -100.0, -20.0, -1.0, -0.0, 0.0, 1e-3, 1.0, 20.0, 100.0, 1e4]


def _values(dtype):
    return np.array(LARGE, dtype=dtype)


def _no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            return fn()


def _compiled(symbol, x):
    """``symbol`` of variable ``x`` as a generated cpu program, run on ``x``."""
    graph = Graph(symbol._outputs)
    infer_types(graph, {"x": x.dtype.name})
    infer_shapes(graph, {"x": x.shape})
    exe = build_cpu_executable(graph, None, mx.cpu(), is_train=False)
    return exe, exe({"x": x})[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softsign"])
def test_activation_is_the_plain_op_bitwise(act, dtype):
    x = nd.array(np.random.RandomState(0).uniform(-30, 30, (4, 7)), dtype=dtype)
    plain = getattr(nd, act)(x).asnumpy()
    np.testing.assert_array_equal(nd.Activation(x, act_type=act).asnumpy(), plain)
    raw = x.asnumpy()
    _, lowered = _compiled(mx.sym.Activation(mx.sym.var("x"), act_type=act), raw)
    _, lowered_plain = _compiled(getattr(mx.sym, act)(mx.sym.var("x")), raw)
    np.testing.assert_array_equal(lowered, plain)
    np.testing.assert_array_equal(lowered_plain, plain)


def test_activation_and_plain_op_share_cuda_and_gradient():
    act = ops.get("Activation")
    for name in ("relu", "sigmoid", "tanh", "softsign"):
        assert act.cuda[name] == ops.get(name).cuda
        x = nd.array([-3.0, -0.5, 0.25, 4.0], dtype="float64")
        grads = []
        for fn in (lambda v, n=name: nd.Activation(v, act_type=n), getattr(nd, name)):
            x.attach_grad()
            with mx.autograd.record():
                y = fn(x)
            y.backward()
            grads.append(x.grad.asnumpy())
        np.testing.assert_array_equal(grads[0], grads[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("call", [
    lambda x: nd.sigmoid(x),
    lambda x: nd.Activation(x, act_type="sigmoid"),
    lambda x: nd.Activation(x, act_type="softrelu"),
    lambda x: nd.Activation(x, act_type="softsign"),
    lambda x: nd.Activation(x, act_type="tanh"),
    lambda x: nd.LeakyReLU(x, act_type="elu", slope=1.0),
    lambda x: nd.LeakyReLU(x, act_type="selu"),
    lambda x: nd.softmax(x.reshape((1, -1))),
    lambda x: nd.log_softmax(x.reshape((1, -1))),
    lambda x: nd.softmin(x.reshape((1, -1))),
], ids=["sigmoid", "act-sigmoid", "softrelu", "softsign", "tanh", "elu", "selu", "softmax",
        "log_softmax", "softmin"])
def test_large_inputs_are_finite_without_warnings(call, dtype):
    x = nd.array(_values(dtype), dtype=dtype)
    out = _no_warnings(lambda: call(x).asnumpy())
    assert np.isfinite(out).all(), out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stable_values_at_large_inputs(dtype):
    x = _values(dtype)
    big = np.array(LARGE, dtype=np.float64)
    sig = _no_warnings(lambda: nd.sigmoid(nd.array(x, dtype=dtype)).asnumpy())
    want = np.array([math.exp(v) / (1 + math.exp(v)) if v < 0 else 1 / (1 + math.exp(-v))
                     for v in big])
    tiny = np.finfo(dtype).tiny  # below it float32 keeps few digits (denormals)
    np.testing.assert_allclose(sig, want, rtol=1e-6 if dtype == "float32" else 1e-13,
                               atol=tiny)
    soft = _no_warnings(lambda: nd.Activation(nd.array(x, dtype=dtype),
                                              act_type="softrelu").asnumpy())
    np.testing.assert_allclose(soft, np.logaddexp(big, 0), rtol=1e-6, atol=tiny)
    logp = _no_warnings(lambda: nd.log_softmax(nd.array(x[None], dtype=dtype)).asnumpy())
    assert logp.max() == 0 and logp.min() == -2e4


@pytest.mark.parametrize("act", ["sigmoid", "softrelu"])
def test_hybridized_large_inputs_are_finite_without_warnings(act):
    x = _values("float32")
    exe, out = _no_warnings(lambda: _compiled(
        mx.sym.Activation(mx.sym.var("x"), act_type=act), x))
    assert exe.program.fallback == [] and np.isfinite(out).all()
    np.testing.assert_array_equal(out, nd.Activation(nd.array(x), act_type=act).asnumpy())


def test_sigmoid_gradient_is_finite_at_large_inputs():
    x = nd.array(_values("float64"), dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = nd.Activation(x, act_type="softrelu")
    _no_warnings(lambda: y.backward())
    grad = x.grad.asnumpy()
    assert np.isfinite(grad).all() and grad[0] == 0.0 and grad[-1] == 1.0


def test_leaky_relu_dispatches_to_the_function_definitions():
    from hybridgpu.ops.activations import FUNCTIONS

    x = np.random.RandomState(1).uniform(-3, 3, (3, 4))
    for act in ("leaky", "elu", "selu", "gelu"):
        got = nd.LeakyReLU(nd.array(x, dtype="float64"), act_type=act, slope=0.3).asnumpy()
        np.testing.assert_array_equal(got, FUNCTIONS[act].compute(np, x, slope=0.3))
        assert ops.get("LeakyReLU").cuda[act] == FUNCTIONS[act].cuda


def test_sigmoid_inside_a_fused_group_uses_a_scratch_buffer():
    from hybridgpu.compiler.passes import fuse_elementwise
    from hybridgpu.graph import evaluate

    x = mx.sym.var("x")
    y = mx.sym.Activation(x * 3 - 1, act_type="sigmoid") * 2 + mx.sym.sigmoid(x)
    graph = Graph(y._outputs)
    infer_types(graph, {"x": "float32"})
    infer_shapes(graph, {"x": (4, 5)})
    fused = fuse_elementwise(graph)
    exe = build_cpu_executable(fused, None, mx.cpu(), is_train=False)
    assert exe.program.lowered == [fused.nodes[-1].name] and exe.program.fallback == []
    assert exe.source.count("np.exp(") == 4  # two per sigmoid, into the output and a scratch
    values = {"x": np.random.RandomState(2).uniform(-200, 200, (4, 5)).astype(np.float32)}
    got = _no_warnings(lambda: exe(dict(values))[0])
    np.testing.assert_array_equal(got, evaluate(fused, dict(values), np)[0])
