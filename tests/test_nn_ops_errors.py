"""The layer ops (FullyConnected, Activation, LeakyReLU, Convolution, Deconvolution, Pooling):
shape inference that completes parameter shapes from the data shape alone (Gluon's deferred
init), and the error messages for bad input, which name the op, the argument and what was
expected versus given."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd, ops
from hybridgpu.base import MXNetError


def infer(name, in_shapes, **attrs):
    """``(in_shapes, out_shapes)`` of op ``name`` with ``attrs``."""
    op = ops.get(name)
    return op.infer_shape(op.parse_attrs(attrs), in_shapes)


# -- shape inference fills parameters ---------------------------------------------------------

@pytest.mark.parametrize(("data", "flatten", "weight", "out"), [
    ((2, 5), True, (4, 5), (2, 4)),
    ((2, 3, 5), True, (4, 15), (2, 4)),
    ((2, 3, 5), False, (4, 5), (2, 3, 4)),
    ((5,), False, (4, 5), (4,)),
])
def test_fully_connected_fills_weight_and_bias(data, flatten, weight, out):
    ins, outs = infer("FullyConnected", [data, None, None], num_hidden=4, flatten=flatten)
    assert ins == [data, weight, (4,)]
    assert outs == [out]


def test_fully_connected_completes_partly_known_weight():
    ins, outs = infer("FullyConnected", [(2, 3, 5), (0, 0), None], num_hidden=4)
    assert ins[1:] == [(4, 15), (4,)]
    ins, outs = infer("FullyConnected", [(0, 15), (4, 0), None], num_hidden=4)
    assert ins == [(0, 15), (4, 15), (4,)] and outs == [(0, 4)]


def test_fully_connected_fills_data_features_from_weight():
    ins, _ = infer("FullyConnected", [(2, 0), (4, 7), None], num_hidden=4)
    assert ins[0] == (2, 7)


def test_fully_connected_no_bias_has_two_inputs():
    ins, outs = infer("FullyConnected", [(2, 5), None], num_hidden=3, no_bias=True)
    assert ins == [(2, 5), (3, 5)] and outs == [(2, 3)]


@pytest.mark.parametrize(("data", "attrs", "weight", "out"), [
    ((2, 3, 8, 8), {"kernel": (3, 3), "num_filter": 4}, (4, 3, 3, 3), (2, 4, 6, 6)),
    ((2, 6, 8, 8), {"kernel": (3, 3), "num_filter": 4, "num_group": 2}, (4, 3, 3, 3),
     (2, 4, 6, 6)),
    ((2, 3, 9), {"kernel": (3,), "num_filter": 5, "stride": (2,), "pad": (1,)}, (5, 3, 3),
     (2, 5, 5)),
    ((1, 2, 5, 6, 7), {"kernel": (3, 3, 3), "num_filter": 2, "dilate": (2, 1, 1)},
     (2, 2, 3, 3, 3), (1, 2, 1, 4, 5)),
])
def test_convolution_fills_weight_and_bias(data, attrs, weight, out):
    ins, outs = infer("Convolution", [data, None, None], **attrs)
    assert ins == [data, weight, (attrs["num_filter"],)]
    assert outs == [out]


def test_convolution_partly_known_data_and_weight():
    ins, outs = infer("Convolution", [(2, 0, 8, 8), (4, 3, 3, 3), None], kernel=(3, 3),
                      num_filter=4)
    assert ins[0] == (2, 3, 8, 8) and outs == [(2, 4, 6, 6)]
    ins, outs = infer("Convolution", [(0, 3, 8, 0), None, None], kernel=(3, 3), num_filter=4)
    assert ins[1] == (4, 3, 3, 3) and outs == [(0, 4, 6, 0)]
    ins, outs = infer("Convolution", [None, None, None], kernel=(3, 3), num_filter=4)
    assert ins[1] == (4, 0, 3, 3) and outs == [None]


@pytest.mark.parametrize(("attrs", "weight", "out"), [
    ({"kernel": (3, 3), "num_filter": 4, "num_group": 2}, (6, 2, 3, 3), (2, 4, 10, 10)),
    ({"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "adj": (1, 1)}, (6, 2, 3, 3),
     (2, 2, 18, 18)),
    ({"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "pad": (1, 1), "adj": (1, 1)},
     (6, 2, 3, 3), (2, 2, 16, 16)),
    ({"kernel": (3, 3), "num_filter": 2, "stride": (2, 2), "target_shape": (15, 16)},
     (6, 2, 3, 3), (2, 2, 15, 16)),
])
def test_deconvolution_fills_weight(attrs, weight, out):
    ins, outs = infer("Deconvolution", [(2, 6, 8, 8), None], **attrs)
    assert ins == [(2, 6, 8, 8), weight] and outs == [out]
    ins, _ = infer("Deconvolution", [(2, 6, 8, 8), None, None], no_bias=False, **attrs)
    assert ins[2] == (attrs["num_filter"],)


@pytest.mark.parametrize(("data", "gamma"), [((2, 3, 4, 4), (3,)), ((4, 5), (5,)),
                                             ((6,), (6,))])
def test_prelu_fills_gamma(data, gamma):
    ins, outs = infer("LeakyReLU", [data, None], act_type="prelu")
    assert ins == [data, gamma] and outs == [data]


def test_prelu_keeps_a_shared_gamma():
    assert infer("LeakyReLU", [(2, 3, 4), (1,)], act_type="prelu")[0] == [(2, 3, 4), (1,)]


def test_pooling_output_shapes():
    assert infer("Pooling", [(1, 1, 8, 8)], kernel=(3, 3), stride=(2, 2))[1] == [(1, 1, 3, 3)]
    assert infer("Pooling", [(1, 1, 8, 8)], kernel=(3, 3), stride=(2, 2),
                 pooling_convention="full")[1] == [(1, 1, 4, 4)]
    assert infer("Pooling", [(1, 1, 8, 8)], kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                 pooling_convention="full")[1] == [(1, 1, 5, 5)]
    assert infer("Pooling", [(1, 2, 7, 5, 3)], global_pool=True)[1] == [(1, 2, 1, 1, 1)]


def test_positional_arguments_bind_like_mxnet():
    x, w, b = nd.ones((2, 5)), nd.ones((3, 5)), nd.zeros(3)
    y = nd.FullyConnected(x, w, b, 3)
    np.testing.assert_allclose(y.asnumpy(), np.full((2, 3), 5.0))


# -- error messages ---------------------------------------------------------------------------

def _raises(fn, *fragments):
    with pytest.raises(MXNetError) as info:
        fn()
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    return text


def test_fc_weight_mismatch_names_both_shapes():
    _raises(lambda: nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 6)), nd.zeros(4),
                                      num_hidden=4),
            "FullyConnected", "weight", "(4, 6)", "(2, 5)", "expected (4, 5)")
    _raises(lambda: infer("FullyConnected", [(2, 5), (4, 6), None], num_hidden=4),
            "FullyConnected", "weight", "(4, 6)", "(2, 5)")


def test_fc_bias_mismatch():
    _raises(lambda: nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), nd.zeros(3),
                                      num_hidden=4),
            "FullyConnected", "bias", "(3,)", "(4,)")


def test_fc_missing_bias_input_and_unused_bias():
    _raises(lambda: nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), num_hidden=4),
            "FullyConnected", "bias", "missing")
    _raises(lambda: nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), nd.ones(4),
                                      num_hidden=4, no_bias=True),
            "FullyConnected", "bias")


def test_fc_num_hidden_is_required():
    _raises(lambda: nd.FullyConnected(nd.ones((2, 5)), nd.ones((4, 5)), nd.zeros(4)),
            "FullyConnected", "num_hidden")


def test_conv_weight_channels_disagree_with_data():
    _raises(lambda: nd.Convolution(nd.ones((1, 3, 6, 6)), nd.ones((4, 2, 3, 3)), nd.zeros(4),
                                   kernel=(3, 3), num_filter=4),
            "Convolution", "weight", "(4, 2, 3, 3)", "(1, 3, 6, 6)", "expected (4, 3, 3, 3)")
    _raises(lambda: infer("Convolution", [(1, 3, 6, 6), (4, 2, 3, 3), None], kernel=(3, 3),
                          num_filter=4),
            "Convolution", "weight", "(4, 2, 3, 3)", "(4, 3, 3, 3)")


def test_conv_data_rank_must_match_kernel():
    _raises(lambda: nd.Convolution(nd.ones((1, 3, 6)), nd.ones((4, 3, 3, 3)), nd.zeros(4),
                                   kernel=(3, 3), num_filter=4),
            "Convolution", "data", "4 dims", "(1, 3, 6)")


def test_conv_layout_other_than_channels_first():
    _raises(lambda: infer("Convolution", [(1, 6, 6, 3), None, None], kernel=(3, 3),
                          num_filter=4, layout="NHWC"),
            "Convolution", "layout", "NHWC", "NCHW")


def test_conv_groups_must_divide_channels_and_filters():
    _raises(lambda: infer("Convolution", [(1, 3, 6, 6), None, None], kernel=(3, 3),
                          num_filter=4, num_group=2),
            "Convolution", "3 channels", "num_group=2")
    _raises(lambda: infer("Convolution", [(1, 4, 6, 6), None, None], kernel=(3, 3),
                          num_filter=3, num_group=2),
            "Convolution", "num_filter=3", "num_group=2")


def test_conv_kernel_larger_than_input():
    _raises(lambda: infer("Convolution", [(1, 3, 2, 6), None, None], kernel=(3, 3),
                          num_filter=4),
            "Convolution", "kernel", "larger")


def test_conv_stride_rank_mismatch():
    _raises(lambda: infer("Convolution", [(1, 3, 6, 6), None, None], kernel=(3, 3),
                          stride=(1, 1, 1), num_filter=4),
            "Convolution", "stride", "(1, 1, 1)")


def test_conv_integer_data():
    _raises(lambda: nd.Convolution(nd.ones((1, 1, 3, 3), dtype="int32"),
                                   nd.ones((1, 1, 2, 2), dtype="int32"), kernel=(2, 2),
                                   num_filter=1, no_bias=True),
            "Convolution", "floating point", "int32")


def test_conv_unknown_attribute_suggests_the_right_one():
    _raises(lambda: nd.Convolution(nd.ones((1, 1, 3, 3)), nd.ones((1, 1, 2, 2)),
                                   kernel=(2, 2), num_filter=1, no_bias=True, strides=(1, 1)),
            "Convolution", "strides", "stride")


def test_deconv_weight_mismatch():
    _raises(lambda: nd.Deconvolution(nd.ones((1, 3, 4, 4)), nd.ones((2, 3, 3, 3)),
                                     kernel=(3, 3), num_filter=3),
            "Deconvolution", "weight", "(2, 3, 3, 3)", "(1, 3, 4, 4)", "expected (3, 3, 3, 3)")


def test_deconv_adj_must_be_below_stride():
    _raises(lambda: infer("Deconvolution", [(1, 1, 5, 5), None], kernel=(3, 3),
                          stride=(2, 2), adj=(2, 2), num_filter=1),
            "Deconvolution", "adj", "stride")


def test_deconv_target_shape_too_big_or_unreachable():
    _raises(lambda: infer("Deconvolution", [(1, 1, 5, 5), None], kernel=(3, 3),
                          stride=(2, 2), target_shape=(12, 12), num_filter=1),
            "Deconvolution", "target_shape", "too big", "11")
    _raises(lambda: infer("Deconvolution", [(1, 1, 5, 5), None], kernel=(3, 3),
                          target_shape=(6, 6), num_filter=1),
            "Deconvolution", "target_shape", "stride")


@pytest.mark.parametrize(("attrs", "fragments"), [
    ({}, ("kernel", "required", "global_pool")),
    ({"kernel": (2, 2), "pooling_convention": "same"}, ("'same'", "not supported")),
    ({"kernel": (2, 2), "pool_type": "lp"}, ("lp", "p_value")),
    ({"kernel": (2, 2), "layout": "NHWC"}, ("layout", "NHWC", "NCHW")),
    ({"kernel": (5, 5)}, ("kernel (5, 5)", "larger", "(4, 4)")),
    ({"kernel": (2,)}, ("data", "3 dims", "4 dims")),
    ({"kernel": (2, 2), "stride": (1,)}, ("stride (1,)",)),
])
def test_pooling_errors(attrs, fragments):
    _raises(lambda: nd.Pooling(nd.ones((1, 1, 4, 4)), **attrs), "Pooling", *fragments)
    _raises(lambda: infer("Pooling", [(1, 1, 4, 4)], **attrs), "Pooling", *fragments)


def test_pooling_bad_enum_value():
    _raises(lambda: nd.Pooling(nd.ones((1, 1, 4, 4)), kernel=(2, 2), pool_type="median"),
            "Pooling", "pool_type", "median", "'max'")


def test_activation_bad_act_type():
    _raises(lambda: nd.Activation(nd.ones(3), act_type="gelu"),
            "Activation", "act_type", "gelu", "softsign")


def test_leaky_rrelu_is_refused_in_training_only():
    x = nd.array([-2.0, 2.0])
    with mx.modes.training(True):
        _raises(lambda: nd.LeakyReLU(x, act_type="rrelu"),
                "LeakyReLU", "rrelu", "training", "leaky")
    y = nd.LeakyReLU(x, act_type="rrelu", lower_bound=0.1, upper_bound=0.3)
    np.testing.assert_allclose(y.asnumpy(), [-0.4, 2.0], rtol=1e-6)


def test_prelu_gamma_size_mismatch():
    _raises(lambda: nd.LeakyReLU(nd.ones((2, 4)), nd.ones(3), act_type="prelu"),
            "LeakyReLU", "gamma", "(3,)", "(2, 4)", "(4,)")
    _raises(lambda: infer("LeakyReLU", [(2, 4), (3,)], act_type="prelu"),
            "LeakyReLU", "gamma", "(3,)")


def test_prelu_needs_gamma_and_leaky_refuses_it():
    _raises(lambda: nd.LeakyReLU(nd.ones((2, 4)), act_type="prelu"), "LeakyReLU", "gamma",
            "missing")
    _raises(lambda: nd.LeakyReLU(nd.ones((2, 4)), nd.ones(4), act_type="leaky"),
            "LeakyReLU", "gamma")


def test_backward_pooling_shape_mismatch():
    x = nd.ones((1, 1, 4, 4))
    _raises(lambda: nd._internal._backward_Pooling(x, nd.ones((1, 1, 3, 3)),
                                                   nd.ones((1, 1, 3, 3)), kernel=(2, 2),
                                                   stride=(2, 2)),
            "_backward_Pooling", "(1, 1, 3, 3)", "(1, 1, 2, 2)")

