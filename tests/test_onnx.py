"""``mx.onnx.export_model``: exported files run in onnxruntime and give hybridgpu's outputs
(an MLP, a network of the converters' other ops, resnet18_v1 and mobilenet0.25 from the model
zoo); names are data; unsupported ops and bad arguments raise clear errors."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run_onnx(path, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return session.run(None, {n: feeds[n] for n in names}), names


def _random_params(symbol, shapes, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    params = {}
    for name, shape in zip(symbol.list_arguments(), arg_shapes):
        if name not in shapes:
            params[name] = mx.nd.array(rng.uniform(-0.5, 0.5, shape))
    for name, shape in zip(symbol.list_auxiliary_states(), aux_shapes):
        params[name] = mx.nd.array(rng.uniform(0.5, 1.5, shape))
    return params


def _check_symbol(symbol, shapes, tmp_path, rtol=1e-5, atol=1e-6):
    params = _random_params(symbol, shapes)
    rng = np.random.RandomState(1)
    feeds = {k: rng.uniform(-1, 1, v).astype(np.float32) for k, v in shapes.items()}
    expected = symbol.eval(**{k: mx.nd.array(v) for k, v in feeds.items()}, **params)
    path = mx.onnx.export_model(symbol, params, list(shapes.values()), np.float32,
                                str(tmp_path / "model.onnx"))
    got, names = _run_onnx(path, feeds)
    assert names == list(shapes)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e.asnumpy(), rtol=rtol, atol=atol)
    return path


def test_mlp(tmp_path):
    x = mx.sym.var("data")
    h = mx.sym.FullyConnected(x, num_hidden=16, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.Dropout(h, p=0.5, name="drop")
    h = mx.sym.FullyConnected(h, num_hidden=4, name="fc2")
    out = mx.sym.SoftmaxOutput(h, name="softmax")
    path = _check_symbol(out, {"data": (5, 8)}, tmp_path)
    model = onnx.load(path)
    assert [i.name for i in model.graph.input] == ["data"]  # no softmax_label input
    assert {"fc1_weight", "fc2_bias"} <= {t.name for t in model.graph.initializer}


def test_other_converters(tmp_path):
    x, y = mx.sym.var("x"), mx.sym.var("y")
    conv = mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, stride=(2, 2), pad=(1, 1),
                              num_group=2, name="conv")
    bn = mx.sym.BatchNorm(conv, fix_gamma=True, eps=1e-4, name="bn")
    pool = mx.sym.Pooling(bn, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                          pooling_convention="full", count_include_pad=False, name="pool")
    act = mx.sym.LeakyReLU(pool, act_type="leaky", slope=0.2, name="lrelu")
    gmax = mx.sym.Flatten(mx.sym.Pooling(act, kernel=(1, 1), global_pool=True, name="gp"))
    both = mx.sym.Concat(gmax, mx.sym.clip(y, -0.5, 0.5), dim=1, name="cat")
    scaled = (1 - both * 2 + 3) / 4
    shaped = mx.sym.transpose(mx.sym.Reshape(scaled, shape=(0, 2, -1)), axes=(0, 2, 1))
    reduced = mx.sym.mean(mx.sym.exp(shaped), axis=1, keepdims=True)
    soft = mx.sym.softmax(mx.sym.FullyConnected(shaped, num_hidden=3, flatten=False,
                                                name="fc"), axis=-1)
    out = mx.sym.Group([mx.sym.broadcast_mul(reduced, mx.sym.sum(soft, axis=2,
                                                                 keepdims=True)), soft])
    _check_symbol(out, {"x": (2, 4, 9, 9), "y": (2, 6)}, tmp_path)


@pytest.mark.parametrize("name", ["resnet18_v1", "mobilenet0.25"])
def test_model_zoo(name, tmp_path):
    from hybridgpu.gluon.model_zoo import vision

    net = vision.get_model(name)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = mx.nd.random.uniform(shape=(1, 3, 224, 224))
    net(x)
    for param in net.collect_params().values():  # non-trivial BatchNorm statistics
        if param.name.endswith("running_var"):
            param.set_data(mx.nd.random.uniform(0.5, 2.0, shape=param.shape))
        elif param.name.endswith(("running_mean", "beta")):
            param.set_data(mx.nd.random.normal(0, 0.1, shape=param.shape))
    expected = net(x).asnumpy()
    prefix = str(tmp_path / name)
    net.export(prefix)
    path = mx.onnx.export_model(f"{prefix}-symbol.json", f"{prefix}-0000.params",
                                [(1, 3, 224, 224)], np.float32, f"{prefix}.onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.asnumpy()})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_names_are_data(tmp_path):
    hostile = 'x"; import os #\n<b>'
    x = mx.sym.var(hostile)
    out = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=2, name=hostile), name=hostile)
    params = {f"{hostile}_weight": mx.nd.ones((2, 3)), f"{hostile}_bias": mx.nd.zeros((2,))}
    path = mx.onnx.export_model(out, [params, {}], [(1, 3)], np.float32,
                                str(tmp_path / "names.onnx"))
    got, names = _run_onnx(path, {hostile: np.ones((1, 3), np.float32)})
    assert names == [hostile]
    np.testing.assert_allclose(got[0], [[3.0, 3.0]])
    tensor_names = [o for n in onnx.load(path).graph.node for o in n.output]
    assert len(tensor_names) == len(set(tensor_names))  # one name, three tensors: made unique


def test_errors(tmp_path):
    x = mx.sym.var("data")
    with pytest.raises(MXNetError, match="op 'arccos'.*no ONNX converter"):
        mx.onnx.export_model(mx.sym.arccos(x), {}, [(2,)], np.float32,
                             str(tmp_path / "a.onnx"))
    with pytest.raises(MXNetError, match="2 input shapes given"):
        mx.onnx.export_model(mx.sym.relu(x), {}, [(2,), (3,)], np.float32,
                             str(tmp_path / "b.onnx"))
    with pytest.raises(TypeError, match="params must be"):
        mx.onnx.export_model(mx.sym.relu(x), 3, [(2,)], np.float32, str(tmp_path / "c.onnx"))
    with pytest.raises(MXNetError, match="in_shapes"):
        mx.onnx.export_model(mx.sym.relu(x), {}, onnx_file_path=str(tmp_path / "d.onnx"))


def test_shape_and_layer_converters(tmp_path):
    ids, x = mx.sym.var("ids"), mx.sym.var("x")
    emb = mx.sym.Embedding(ids, input_dim=10, output_dim=4, name="emb")  # (2, 3, 4)
    halves = mx.sym.split(emb, num_outputs=2, axis=2, name="halves")
    rows = mx.sym.split(emb, num_outputs=3, axis=1, squeeze_axis=True, name="rows")
    mixed = mx.sym.batch_dot(halves[0], halves[1], transpose_b=True)  # (2, 3, 3)
    picked = mx.sym.slice_axis(mixed, axis=2, begin=1, end=None)
    flat = mx.sym.dot(mx.sym.Reshape(picked, shape=(2, 6)), mx.sym.var("w"), transpose_b=True,
                      name="proj")
    image = mx.sym.InstanceNorm(mx.sym.expand_dims(x, axis=1), name="inorm")
    up = mx.sym.Deconvolution(image, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                              num_filter=2, no_bias=False, name="deconv")
    out = mx.sym.Group([flat, rows[2], mx.sym.Cast(up, dtype="float64")])
    rng = np.random.RandomState(3)
    params = {"emb_weight": mx.nd.array(rng.randn(10, 4)), "w": mx.nd.array(rng.randn(5, 6)),
              "inorm_gamma": mx.nd.array(rng.rand(1) + 0.5), "inorm_beta": mx.nd.array([0.1]),
              "deconv_weight": mx.nd.array(rng.randn(1, 2, 3, 3)),
              "deconv_bias": mx.nd.array(rng.randn(2))}
    feeds = {"ids": rng.randint(0, 10, (2, 3)).astype(np.float32),
             "x": rng.randn(2, 4, 4).astype(np.float32)}
    expected = out.eval(**{k: mx.nd.array(v) for k, v in feeds.items()}, **params)
    path = mx.onnx.export_model(out, params, [(2, 3), (2, 4, 4)], np.float32,
                                str(tmp_path / "mix.onnx"))
    got, names = _run_onnx(path, feeds)
    assert names == ["ids", "x"]
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e.asnumpy(), rtol=1e-5, atol=1e-5)
