"""Trace key vs compile key (issue 13, docs/gluon.md "When hybrid_forward runs"): the Python of
a hybridized ``hybrid_forward`` runs again only when something it read changed (an input's
shape or dtype, train mode); any other new signature re-infers the traced graph and compiles
it, as MXNet does. hybridgpu's own layers and losses read nothing, so models never retrace
for a new batch size."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, nd
from hybridgpu.gluon import loss, nn


class Counting(mx.gluon.HybridBlock):
    """Counts the runs of its Python; ``read`` picks what it reads while tracing."""

    def __init__(self, read=None, **kwargs):
        super().__init__(**kwargs)
        self.read, self.runs = read, 0

    def hybrid_forward(self, F, x):
        self.runs += 1
        if self.read == "shape":
            return x.reshape((x.shape[0], -1)) * 2
        if self.read == "dtype":
            return x * (2 if np.dtype(x.dtype) == np.float32 else 3)
        if self.read == "training":
            return x * 2 if autograd.is_training() else x
        if self.read == "ndim":
            return x * x.ndim
        if self.read == "infer_shape":
            x.infer_shape()
            return x * 2
        return x * 2


def _block(read=None):
    with mx.name.NameManager():
        net = Counting(read)
    net.hybridize()
    return net


def test_new_batch_size_reuses_the_trace_and_gives_right_values():
    net = _block()
    for batch in (1, 4, 7, 4, 1):
        x = nd.array(np.arange(batch * 3, dtype=np.float32).reshape(batch, 3))
        assert net(x).asnumpy().tolist() == (x.asnumpy() * 2).tolist()
    assert net.runs == 1
    assert len(net._programs) == 1 and len(net._traces) == 3  # one executable per shape


def test_reading_a_shape_guards_the_trace_on_shapes():
    net = _block("shape")
    for batch in (1, 2, 1, 3):
        assert net(nd.ones((batch, 2, 2))).shape == (batch, 4)
    assert net.runs == 3
    assert [sorted(p.reads) for p in net._programs] == [["shape"]] * 3


def test_ndim_is_a_shape_read():
    net = _block("ndim")
    assert net(nd.ones((2,))).asnumpy().tolist() == [1.0, 1.0]
    assert net(nd.ones((1, 2))).asnumpy().tolist() == [[2.0, 2.0]]
    assert net.runs == 2 and net._programs[0].reads == {"shape"}


def test_infer_shape_on_a_symbol_counts_as_a_shape_read():
    net = _block("infer_shape")
    net(nd.ones((1, 2)))
    net(nd.ones((2, 2)))
    assert net.runs == 2


def test_reading_a_dtype_guards_on_dtypes_only():
    net = _block("dtype")
    net(nd.ones((1, 2)))
    net(nd.ones((5, 2)))  # new shape, same dtype: not run again
    assert net.runs == 1
    out = net(nd.ones((1, 2), dtype="float64"))
    assert net.runs == 2 and out.asnumpy().tolist() == [[3.0, 3.0]]


def test_train_mode_splits_only_traces_that_read_it():
    plain, reader = _block(), _block("training")
    for net in (plain, reader):
        net(nd.ones((1,)))
        with autograd.train_mode():
            out = net(nd.ones((1,)))
        assert out.asnumpy().tolist() == [2.0]
        net(nd.ones((3,)))
    assert plain.runs == 1
    assert reader.runs == 2  # predict and train; batch 3 in predict mode reuses the first
    with autograd.train_mode():
        assert reader(nd.ones((2,))).asnumpy().tolist() == [2.0, 2.0]
    assert reader.runs == 2


def test_reads_of_nested_blocks_count_for_the_outer_trace():
    with mx.name.NameManager():
        outer = nn.HybridSequential()
        inner = Counting("shape")
        outer.add(nn.Dense(2, in_units=4), inner)
    outer.initialize()
    outer.hybridize()
    outer(nd.ones((1, 4)))
    outer(nd.ones((2, 4)))
    assert inner.runs == 2
    assert outer._programs[0].reads == {"shape"}


def test_hybridize_again_clears_both_caches():
    net = _block()
    net(nd.ones((1,)))
    net.hybridize()
    net(nd.ones((2,)))
    assert net.runs == 2


def test_autograd_and_export_work_on_a_reused_trace(tmp_path):
    with mx.name.NameManager():
        net = nn.HybridSequential()
        net.add(nn.Dense(3, activation="relu"), nn.Dense(1))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(nd.ones((1, 5)))
    x = nd.array(np.random.RandomState(0).rand(4, 5).astype(np.float32))
    x.attach_grad()
    with autograd.record():
        y = net(x)
    y.backward()
    assert x.grad.shape == (4, 5) and len(net._programs) == 1
    reference = x.grad.asnumpy().copy()
    net.hybridize(False)
    x2 = x.copy()
    x2.attach_grad()
    with autograd.record():
        y2 = net(x2)
    y2.backward()
    np.testing.assert_allclose(reference, x2.grad.asnumpy(), rtol=1e-5, atol=1e-6)
    net.hybridize()
    net(x)
    sym_file, _ = net.export(str(tmp_path / "net"))
    with open(sym_file) as f:
        data_node = f.read().split('"data"')[1].split("}")[0]
    assert "__shape__" not in data_node  # exported inputs carry no shape, as MXNet's


def test_a_new_shape_that_does_not_fit_runs_the_python_for_its_message():
    with mx.name.NameManager():
        conv = nn.Conv2D(4, 3, in_channels=3)
    conv.initialize()
    conv.hybridize()
    conv(nd.ones((1, 3, 5, 5)))
    with pytest.raises(mx.base.MXNetError, match=r"expected input shape \(2, 3, 5, 5\)"):
        conv(nd.ones((2, 2, 5, 5)))


@pytest.mark.parametrize("name, size", [("resnet18_v1", 32), ("mobilenet0.25", 32),
                                        ("vgg11_bn", 32), ("mobilenetv2_0.25", 32)])
def test_model_zoo_models_read_no_shape(name, size):
    from hybridgpu.gluon.model_zoo import vision

    net = vision.get_model(name)
    net.initialize()
    net.hybridize()
    net(nd.ones((1, 3, size, size)))
    assert [p.reads for p in net._programs] == [frozenset()]


def _layer_inputs():
    four_d = nd.ones((2, 4, 6, 6))
    return [
        (nn.Dense(3), nd.ones((2, 5))), (nn.Conv1D(2, 3), nd.ones((2, 4, 6))),
        (nn.Conv2D(2, 3), four_d), (nn.Conv2DTranspose(2, 3), four_d),
        (nn.MaxPool2D(), four_d), (nn.AvgPool1D(), nd.ones((2, 4, 6))),
        (nn.GlobalAvgPool2D(), four_d), (nn.BatchNorm(), four_d), (nn.LayerNorm(), four_d),
        (nn.InstanceNorm(), four_d), (nn.GroupNorm(), four_d),
        (nn.Embedding(10, 3), nd.ones((2, 3))), (nn.Flatten(), four_d),
        (nn.Dropout(0.5), four_d), (nn.PReLU(), four_d), (nn.ELU(), four_d),
        (nn.ReflectionPad2D(1), four_d),
    ]


def test_layers_read_no_shape():
    for layer, x in _layer_inputs():
        layer.initialize()
        layer.hybridize()
        layer(x)
        assert [p.reads for p in layer._programs] == [frozenset()], type(layer).__name__


@pytest.mark.parametrize("make, args", [
    (loss.SoftmaxCrossEntropyLoss, ((2, 3), (2,))), (loss.L2Loss, ((2, 3), (2, 3))),
    (loss.L1Loss, ((2, 3), (2, 3))), (loss.SigmoidBinaryCrossEntropyLoss, ((2, 3), (2, 3))),
    (loss.KLDivLoss, ((2, 3), (2, 3))), (loss.HuberLoss, ((2, 3), (2, 3))),
    (loss.HingeLoss, ((2, 3), (2, 3))), (loss.LogisticLoss, ((2, 3), (2, 3))),
    (loss.TripletLoss, ((2, 3), (2, 3), (2, 3))),
])
def test_losses_read_no_shape_and_serve_new_batch_sizes(make, args):
    block = make()
    block.hybridize()
    first = block(*[nd.ones(s) for s in args])
    second = block(*[nd.ones((5, *s[1:])) for s in args])
    assert [p.reads for p in block._programs] == [frozenset()]
    assert first.shape == (2,) and second.shape == (5,)
