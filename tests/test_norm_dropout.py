"""Behaviour of the normalization ops, Dropout and SoftmaxOutput beyond the case tables.

The formulas below are written in NumPy from MXNet 1.9.1's observed behaviour (checked with the
oracle, see the op modules' docstrings): BatchNorm's moving statistics follow
``moving = moving * momentum + batch_stat * (1 - momentum)`` with the *biased* batch variance;
its ``var`` output is the inverse std; SoftmaxOutput's gradient is the cross-entropy shortcut.
"""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import modes, ops
from hybridgpu.base import MXNetError

from op_harness import OpCase, run_all_outputs

RNG = np.random.RandomState(7)


def _nd(a, dtype="float64"):
    return mx.nd.array(a, dtype=dtype)


def _op_grads(name, arrays, attrs, heads, is_train=False, dtype="float64"):
    """The op's gradient (its ``grad`` ops) for head gradients ``heads`` of every output."""
    op = ops.get(name)
    case = OpCase(name, attrs=attrs, is_train=is_train)
    parsed, inputs, outs = run_all_outputs(case, [np.asarray(a, dtype) for a in arrays])
    with modes.training(is_train):
        grads = op.grad(mx.nd, inputs, outs, [_nd(h, dtype) for h in heads], **parsed)
    return [None if g is None else g.asnumpy() for g in grads], [o.asnumpy() for o in outs]


# -- BatchNorm ------------------------------------------------------------------------------

def _bn_arrays(shape, axis=1, dtype="float32"):
    channels = shape[axis]
    return [_nd(RNG.uniform(-2, 2, shape), dtype), _nd(RNG.uniform(0.5, 1.5, channels), dtype),
            _nd(RNG.uniform(-1, 1, channels), dtype), _nd(RNG.uniform(-1, 1, channels), dtype),
            _nd(RNG.uniform(0.5, 1.5, channels), dtype)]


@pytest.mark.parametrize(("shape", "axis", "momentum"),
                         [((4, 3, 2, 2), 1, 0.9), ((5, 2, 3), -1, 0.7), ((6, 4), 1, 0.5)])
def test_batchnorm_training_updates_moving_stats_in_place(shape, axis, momentum):
    x, gamma, beta, moving_mean, moving_var = _bn_arrays(shape, axis)
    mean_id, var_id = id(moving_mean._data), id(moving_var._data)
    want_mean, want_var = moving_mean.asnumpy(), moving_var.asnumpy()
    red = tuple(i for i in range(len(shape)) if i != axis % len(shape))
    for step in range(3):
        data = x * (step + 1)
        with modes.training(True):
            mx.nd.BatchNorm(data, gamma, beta, moving_mean, moving_var, axis=axis,
                            momentum=momentum, fix_gamma=False)
        batch = data.asnumpy().astype(np.float64)
        want_mean = want_mean * momentum + batch.mean(axis=red) * (1 - momentum)
        want_var = want_var * momentum + batch.var(axis=red) * (1 - momentum)  # biased
        np.testing.assert_allclose(moving_mean.asnumpy(), want_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(moving_var.asnumpy(), want_var, rtol=1e-5, atol=1e-6)
    assert (id(moving_mean._data), id(moving_var._data)) == (mean_id, var_id)


@pytest.mark.parametrize(("train", "global_stats"), [(False, False), (True, True)])
def test_batchnorm_moving_stats_unchanged_without_batch_stats(train, global_stats):
    x, gamma, beta, moving_mean, moving_var = _bn_arrays((4, 3, 2))
    before = moving_mean.asnumpy(), moving_var.asnumpy()
    with modes.training(train):
        out, mean, invstd = mx.nd.BatchNorm(x, gamma, beta, moving_mean, moving_var,
                                            fix_gamma=False, use_global_stats=global_stats,
                                            output_mean_var=True)
    np.testing.assert_array_equal(moving_mean.asnumpy(), before[0])
    np.testing.assert_array_equal(moving_var.asnumpy(), before[1])
    np.testing.assert_allclose(mean.asnumpy(), before[0])
    np.testing.assert_allclose(invstd.asnumpy(), 1 / np.sqrt(before[1] + 1e-3), rtol=1e-6)
    want = ((x.asnumpy() - before[0][:, None]) / np.sqrt(before[1][:, None] + 1e-3)
            * gamma.asnumpy()[:, None] + beta.asnumpy()[:, None])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_batchnorm_output_mean_var_is_batch_mean_and_inverse_std():
    x, gamma, beta, moving_mean, moving_var = _bn_arrays((8, 3, 5))
    with modes.training(True):
        out = mx.nd.BatchNorm(x, gamma, beta, moving_mean, moving_var, output_mean_var=True,
                              eps=1e-4)
    assert len(out) == 3
    data = x.asnumpy().astype(np.float64)
    np.testing.assert_allclose(out[1].asnumpy(), data.mean(axis=(0, 2)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[2].asnumpy(), 1 / np.sqrt(data.var(axis=(0, 2)) + 1e-4),
                               rtol=1e-5)
    single = mx.nd.BatchNorm(x, gamma, beta, moving_mean, moving_var)
    assert isinstance(single, mx.nd.NDArray)  # one visible output by default


def _bn_numpy_grads(x, gamma, head, train, fix_gamma, moving=None, eps=1e-3):
    red = (0, 2)
    if train:
        mean, var = x.mean(axis=red), x.var(axis=red)
    else:
        mean, var = moving
    invstd = 1 / np.sqrt(var + eps)
    xhat = (x - mean[:, None]) * invstd[:, None]
    scale = (invstd if fix_gamma else gamma * invstd)[:, None]
    if train:
        dx = scale * (head - head.mean(axis=red)[:, None]
                      - xhat * (head * xhat).mean(axis=red)[:, None])
    else:
        dx = scale * head
    dgamma = np.zeros_like(gamma) if fix_gamma else (head * xhat).sum(axis=red)
    return dx, dgamma, head.sum(axis=red)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_batchnorm_gradient_matches_mxnet_formula(train, fix_gamma):
    arrays = [a.asnumpy().astype(np.float64) for a in _bn_arrays((5, 3, 4))]
    head = RNG.standard_normal((5, 3, 4))
    heads = [head, RNG.standard_normal(3), RNG.standard_normal(3)]  # mean/var heads: ignored
    grads, _ = _op_grads("BatchNorm", arrays, {"fix_gamma": fix_gamma, "output_mean_var": True},
                         heads, is_train=train)
    want = _bn_numpy_grads(arrays[0], arrays[1], head, train, fix_gamma, arrays[3:])
    for got, ref in zip(grads[:3], want):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    assert grads[3] is None and grads[4] is None  # moving statistics get no gradient


def test_batchnorm_float16_data_keeps_float32_parameters():
    op = ops.get("BatchNorm")
    ins, outs = op.infer_type(op.parse_attrs({}), ["float16", None, None, None, None])
    assert ins == ["float16"] + ["float32"] * 4 and outs == ["float16", "float32", "float32"]
    x = mx.nd.array(RNG.uniform(-1, 1, (4, 2, 3)), dtype="float16")
    params = [mx.nd.ones((2,)), mx.nd.zeros((2,)), mx.nd.zeros((2,)), mx.nd.ones((2,))]
    with modes.training(True):
        out = mx.nd.BatchNorm(x, *params, output_mean_var=True)
    assert [np.dtype(o.dtype).name for o in out] == ["float16", "float32", "float32"]
    with pytest.raises(MXNetError, match="BatchNorm: gamma has dtype float64, expected float32"):
        op.infer_type(op.parse_attrs({}), ["float32", "float64", None, None, None])


def test_batchnorm_bad_parameter_shape_names_op_and_argument():
    x = mx.nd.ones((2, 3, 4))
    with pytest.raises(MXNetError, match=r"BatchNorm: moving_var must have shape \(3,\), got"):
        mx.nd.BatchNorm(x, mx.nd.ones(3), mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.ones(4))
    op = ops.get("BatchNorm")
    with pytest.raises(MXNetError, match="gamma"):
        op.infer_shape(op.parse_attrs({}), [(2, 3, 4), (4,), None, None, None])
    with pytest.raises(MXNetError, match="axis 3 is out of range"):
        op.infer_shape(op.parse_attrs({"axis": 3}), [(2, 3, 4), None, None, None, None])


# -- GroupNorm, LayerNorm, InstanceNorm -----------------------------------------------------

def test_groupnorm_parameters_are_per_group():
    op = ops.get("GroupNorm")
    ins, outs = op.infer_shape(op.parse_attrs({"num_groups": 2, "output_mean_var": True}),
                               [(4, 6, 5), None, None])
    assert ins[1:] == [(2,), (2,)] and outs == [(4, 6, 5), (4, 2), (4, 2)]
    with pytest.raises(MXNetError, match="num_groups=4 must divide the 6 channels"):
        mx.nd.GroupNorm(mx.nd.ones((2, 6, 3)), mx.nd.ones(4), mx.nd.zeros(4), num_groups=4)
    with pytest.raises(MXNetError, match="at least 3 dims"):
        mx.nd.GroupNorm(mx.nd.ones((2, 6)), mx.nd.ones(1), mx.nd.zeros(1))


def test_layernorm_mean_std_outputs_and_shapes():
    op = ops.get("LayerNorm")
    ins, outs = op.infer_shape(op.parse_attrs({"axis": 1, "output_mean_var": True}),
                               [(3, 4, 5), None, None])
    assert ins[1:] == [(4,), (4,)] and outs == [(3, 4, 5), (3, 1, 5), (3, 1, 5)]
    x = RNG.standard_normal((3, 4, 5))
    out, mean, std = mx.nd.LayerNorm(_nd(x), _nd(np.ones(5)), _nd(np.zeros(5)),
                                     output_mean_var=True)
    np.testing.assert_allclose(mean.asnumpy(), x.mean(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(std.asnumpy(), np.sqrt(x.var(-1, keepdims=True) + 1e-5))


def test_instancenorm_needs_three_dims():
    with pytest.raises(MXNetError, match="InstanceNorm: data must have at least 3 dims"):
        mx.nd.InstanceNorm(mx.nd.ones((2, 3)), mx.nd.ones(3), mx.nd.zeros(3))


# -- Dropout --------------------------------------------------------------------------------

def _dropout(x, train=True, **attrs):
    with modes.training(train):
        return mx.nd.Dropout(x, **attrs)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keeps_one_minus_p_and_rescales(p):
    mx.random.seed(3)
    x = mx.nd.array(RNG.uniform(1, 2, (400, 500)))
    out = _dropout(x, p=p).asnumpy()
    kept = out != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_allclose(out[kept], x.asnumpy()[kept] / (1 - p), rtol=1e-6)


def test_dropout_is_identity_in_predict_mode():
    x = mx.nd.array(RNG.standard_normal((30, 40)))
    np.testing.assert_array_equal(_dropout(x, train=False, p=0.7).asnumpy(), x.asnumpy())


def test_dropout_mode_always_drops_in_predict_mode():
    mx.random.seed(4)
    out = _dropout(mx.nd.ones((100, 100)), train=False, p=0.5, mode="always").asnumpy()
    assert 0.4 < (out == 0).mean() < 0.6
    assert set(np.unique(out)) == {0.0, 2.0}


def test_dropout_is_repeatable_under_seed():
    x = mx.nd.ones((50, 60))
    mx.random.seed(11)
    first = _dropout(x, p=0.5).asnumpy()
    second = _dropout(x, p=0.5).asnumpy()
    mx.random.seed(11)
    again = _dropout(x, p=0.5).asnumpy()
    np.testing.assert_array_equal(first, again)
    assert (first != second).any()


@pytest.mark.parametrize("axes", [(1,), (0, 2), (-1,)])
def test_dropout_axes_share_the_mask(axes):
    mx.random.seed(5)
    out = _dropout(mx.nd.ones((6, 7, 8)), p=0.5, axes=axes).asnumpy()
    for axis in axes:
        first = np.take(out, [0], axis=axis)
        assert (out == first).all(), f"mask varies along shared axis {axis}"
    assert 0 < (out == 0).mean() < 1


def test_dropout_mask_output_and_gradient():
    mx.random.seed(6)
    x = RNG.standard_normal((5, 6))
    head = RNG.standard_normal((5, 6))
    (grad,), (out, mask) = _op_grads("Dropout", [x], {"p": 0.4}, [head, np.zeros((5, 6))],
                                     is_train=True)
    assert set(np.unique(mask)) <= {0.0, 1 / 0.6}
    np.testing.assert_allclose(out, x * mask)
    np.testing.assert_allclose(grad, head * mask)


def test_dropout_rejects_p_out_of_range():
    with pytest.raises(MXNetError, match=r"Dropout: p must be in \[0, 1\], got 1.5"):
        _dropout(mx.nd.ones((2, 2)), p=1.5)


# -- SoftmaxOutput gradient (MXNet's cross-entropy shortcut) ---------------------------------

def _np_softmax(z, axis):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _one_hot(label, classes, axis):
    """One-hot along ``axis``; labels out of range give all zeros (as in MXNet)."""
    eye = (np.arange(classes) == label[..., None]).astype(np.float64)
    return np.moveaxis(eye, -1, axis)


def _so_grad(x, label, heads=None, **attrs):
    (grad, _), _ = _op_grads("SoftmaxOutput", [x, label], attrs,
                             heads if heads is not None else [np.zeros(x.shape)])
    return grad


def test_softmax_output_gradient_ignores_head_gradient():
    x, label = RNG.standard_normal((4, 5)), np.array([1, 0, 3, 4.0])
    want = _np_softmax(x, 1) - _one_hot(label, 5, 1)
    np.testing.assert_allclose(_so_grad(x, label), want, rtol=1e-10)
    heads = [RNG.standard_normal((4, 5)) * 3]
    np.testing.assert_allclose(_so_grad(x, label, heads), want, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x, label, heads, out_grad=True), want * heads[0],
                               rtol=1e-10)


def test_softmax_output_gradient_scale_and_normalization():
    x, label = RNG.standard_normal((4, 5)), np.array([1, -1, 3, -1.0])
    base = _np_softmax(x, 1) - _one_hot(label, 5, 1)  # label -1: no one-hot term
    keep = (label != -1)[:, None]
    np.testing.assert_allclose(_so_grad(x, label), base, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x, label, grad_scale=2.5, normalization="batch"),
                               base * 2.5 / 4, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x, label, use_ignore=True, normalization="valid"),
                               base * keep / 2, rtol=1e-10)
    # 'valid' counts labels other than ignore_label even without use_ignore
    np.testing.assert_allclose(_so_grad(x, label, normalization="valid"), base / 2, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x, -np.ones(4), use_ignore=True, normalization="valid"),
                               np.zeros((4, 5)), atol=1e-15)


def test_softmax_output_gradient_label_smoothing():
    x, label = RNG.standard_normal((3, 5)), np.array([4, 0, 2.0])
    hot = _one_hot(label, 5, 1)
    target = hot * (1 - 0.1) + (1 - hot) * 0.1 / 4
    np.testing.assert_allclose(_so_grad(x, label, smooth_alpha=0.1),
                               _np_softmax(x, 1) - target, rtol=1e-10)


def test_softmax_output_gradient_multi_output():
    x = RNG.standard_normal((2, 3, 4))
    label = RNG.randint(0, 3, (2, 4)).astype(np.float64)
    label[0, 1] = label[1, 3] = -1
    base = _np_softmax(x, 1) - _one_hot(label, 3, 1)
    keep = (label != -1)[:, None, :]
    grad = _so_grad(x, label, multi_output=True)
    np.testing.assert_allclose(grad, base / 4, rtol=1e-10)  # 'null' divides by positions
    grad = _so_grad(x, label, multi_output=True, normalization="batch", grad_scale=3.0)
    np.testing.assert_allclose(grad, base * 3 / 8, rtol=1e-10)
    grad = _so_grad(x, label, multi_output=True, use_ignore=True, normalization="valid")
    np.testing.assert_allclose(grad, base * keep / 6, rtol=1e-10)
    grad = _so_grad(x, label, multi_output=True, smooth_alpha=0.1)  # MXNet: no smoothing
    np.testing.assert_allclose(grad, base / 4, rtol=1e-10)
    x4 = RNG.standard_normal((2, 3, 2, 2))
    label4 = RNG.randint(0, 3, (2, 2, 2)).astype(np.float64)
    want = (_np_softmax(x4, 1) - _one_hot(label4, 3, 1)) / 4
    np.testing.assert_allclose(_so_grad(x4, label4, multi_output=True), want, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x4, label4.reshape(2, 4), multi_output=True), want,
                               rtol=1e-10)


def test_softmax_output_gradient_preserve_shape():
    x = RNG.standard_normal((2, 3, 4))
    label = RNG.randint(0, 4, (2, 3)).astype(np.float64)
    label[1, 1] = -1
    base = _np_softmax(x, -1) - _one_hot(label, 4, -1)
    keep = (label != -1)[..., None]
    np.testing.assert_allclose(_so_grad(x, label, preserve_shape=True), base, rtol=1e-10)
    np.testing.assert_allclose(_so_grad(x, label, preserve_shape=True, normalization="batch"),
                               base / 6, rtol=1e-10)
    grad = _so_grad(x, label, preserve_shape=True, use_ignore=True, normalization="valid")
    np.testing.assert_allclose(grad, base * keep / 5, rtol=1e-10)


def test_softmax_output_label_shape_is_checked():
    op = ops.get("SoftmaxOutput")
    assert op.infer_shape(op.parse_attrs({}), [(4, 5), None])[0][1] == (4,)
    attrs = op.parse_attrs({"multi_output": True})
    assert op.infer_shape(attrs, [(2, 3, 4, 5), None])[0][1] == (2, 20)
    with pytest.raises(MXNetError, match=r"label must have shape \(4,\)"):
        mx.nd.SoftmaxOutput(mx.nd.ones((4, 5)), mx.nd.ones((4, 5)))


# -- misc bad input -------------------------------------------------------------------------

def test_softmax_length_must_be_integer():
    with pytest.raises(MXNetError, match="softmax: length must be an integer array"):
        mx.nd.softmax(mx.nd.ones((2, 3)), mx.nd.array([1, 2]), use_length=True)
    with pytest.raises(MXNetError, match="log_softmax: use_length=True is not supported"):
        mx.nd.log_softmax(mx.nd.ones((2, 3)), use_length=True)


def test_embedding_checks_weight_shape():
    with pytest.raises(MXNetError, match=r"Embedding: weight must have shape .* \(4, 5\)"):
        mx.nd.Embedding(mx.nd.array([1, 2]), mx.nd.ones((4, 6)), input_dim=4, output_dim=5)


def test_sequence_mask_checks_axis_and_lengths():
    x = mx.nd.ones((3, 2, 4))
    with pytest.raises(MXNetError, match="SequenceMask: axis must be 0 or 1"):
        mx.nd.SequenceMask(x, mx.nd.array([1, 2]), use_sequence_length=True, axis=2)
    with pytest.raises(MXNetError, match=r"sequence_length must have shape \(2,\)"):
        mx.nd.SequenceMask(x, mx.nd.array([1, 2, 3]), use_sequence_length=True)
