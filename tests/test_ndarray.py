"""NDArray behaviour against MXNet 1.9.1 (expected values checked with the real MXNet)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

nd = mx.nd


def test_repr_is_mxnets():
    assert repr(nd.array([[1, 2]])) == "\n[[1. 2.]]\n<NDArray 1x2 @cpu(0)>"
    assert repr(nd.array([1, 2, 3], dtype="int32")) == "\n[1 2 3]\n<NDArray 3 @cpu(0)>"
    assert repr(nd.array(np.zeros((0, 3)))) == "\n[]\n<NDArray 0x3 @cpu(0)>"
    assert repr(nd.array([[1.5, 2.25]], dtype="float64")) == (
        "\n[[1.5  2.25]]\n<NDArray 1x2 @cpu(0)>")
    with mx.cpu(1):
        assert repr(nd.array([1])).endswith("<NDArray 1 @cpu(1)>")


def test_seed_example_ones_plus_one_prints_like_mxnet():
    printed = repr(nd.array(np.ones((2, 3))) + 1)
    assert printed == "\n[[2. 2. 2.]\n [2. 2. 2.]]\n<NDArray 2x3 @cpu(0)>"


def test_array_dtypes_follow_mxnet():
    assert nd.array([1, 2]).dtype is np.float32
    assert nd.array(np.arange(3)).dtype is np.float32  # numpy int64 source: still float32
    assert nd.array([1, 2], dtype="int32").dtype is np.int32
    assert nd.array(nd.array([1], dtype="float16")).dtype is np.float16  # NDArray keeps it
    assert nd.array(5).shape == ()


def test_attributes():
    x = nd.array(np.arange(6).reshape(2, 3))
    assert (x.shape, x.size, x.ndim, x.stype) == ((2, 3), 6, 2, "default")
    assert x.context == x.ctx == mx.cpu(0)
    assert x.T.shape == (3, 2) and nd.array([1, 2]).T.shape == (2,)
    np.testing.assert_array_equal(x.T.asnumpy(), np.arange(6).reshape(2, 3).T)


def test_asnumpy_is_a_copy():
    x = nd.array([1, 2, 3])
    host = x.asnumpy()
    host[0] = 9
    assert x.asnumpy()[0] == 1


def test_scalars():
    assert nd.array([5]).asscalar() == 5 and type(nd.array([5]).asscalar()) is np.float32
    assert nd.array([5], dtype="int32").item() == 5
    assert isinstance(nd.array([2.5]).item(), float)
    with pytest.raises(ValueError, match="not a scalar"):
        nd.array([1, 2]).asscalar()
    assert float(nd.array([2])) == 2.0 and int(nd.array([3])) == 3


def test_bool_len_iter():
    assert not bool(nd.array([0])) and bool(nd.array([2]))
    assert not bool(nd.array(np.zeros((0,))))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(nd.array([1, 2]))
    x = nd.array(np.arange(6).reshape(2, 3))
    assert len(x) == 2
    rows = list(x)
    assert [r.shape for r in rows] == [(3,), (3,)]
    np.testing.assert_array_equal(rows[1].asnumpy(), [3, 4, 5])
    assert [r.shape for r in nd.array([1, 2])] == [(1,), (1,)]


def test_astype_copy_copyto_as_in_context():
    x = nd.array([1.5, 2.5])
    assert x.astype("int32").dtype is np.int32
    assert x.astype("float32", copy=False) is x
    y = x.copy()
    y[0] = 9
    assert x.asnumpy()[0] == 1.5
    z = x.copyto(mx.cpu(1))
    assert z.context == mx.cpu(1) and np.array_equal(z.asnumpy(), x.asnumpy())
    dst = nd.array([0.0, 0.0])
    assert x.copyto(dst) is dst and np.array_equal(dst.asnumpy(), [1.5, 2.5])
    with pytest.raises(MXNetError, match="shape mismatch"):
        x.copyto(nd.array([0.0, 0.0, 0.0]))
    assert x.as_in_context(mx.cpu(0)) is x
    assert x.as_in_context(mx.cpu(2)).context == mx.cpu(2)


@pytest.mark.parametrize(("codes", "reverse", "expected"), [
    ((0, -1), False, (2, 12)), ((-2,), False, (2, 3, 4)), ((-3, 4), False, (6, 4)),
    ((-4, 1, 2, -2), False, (1, 2, 3, 4)), ((-4, -1, 1, 0, 0), False, (2, 1, 3, 4)),
    ((4, 0, -1), False, (4, 3, 2)), ((-1, 0), True, (6, 4)),
])
def test_reshape_special_codes_match_mxnet(codes, reverse, expected):
    x = nd.array(np.arange(24).reshape(2, 3, 4))
    y = x.reshape(codes, reverse=reverse)
    assert y.shape == expected
    np.testing.assert_array_equal(y.asnumpy().ravel(), np.arange(24))
    assert x.reshape(*codes, reverse=reverse).shape == expected


def test_reshape_is_a_view_and_bad_sizes_are_named():
    x = nd.array(np.zeros((2, 3)))
    x.reshape(6)[0] = 5
    assert x.asnumpy()[0, 0] == 5
    with pytest.raises(MXNetError, match=r"cannot reshape \(2, 3\) with shape=\(5,\)"):
        x.reshape((5,))


def test_getitem_matches_mxnet_shapes_and_views():
    x = nd.array(np.arange(6).reshape(2, 3))
    assert x[1, 1].shape == (1,) and x[1, 1].asscalar() == 4
    assert x[:, 1].asnumpy().tolist() == [1, 4]
    assert x[-1].asnumpy().tolist() == [3, 4, 5]
    assert x[1:2].shape == (1, 3)
    assert x[nd.array([1, 0])].asnumpy().tolist() == [[3, 4, 5], [0, 1, 2]]
    assert x[[1, 1]].shape == (2, 3)
    view = x[1:2]
    view[:] = 0
    assert x.asnumpy()[1].tolist() == [0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]


def test_setitem():
    x = nd.array(np.arange(6).reshape(2, 3))
    x[0] = 7
    x[1, 1:] = nd.array([8, 9])
    assert x.asnumpy().tolist() == [[7, 7, 7], [3, 8, 9]]
    x[:] = 3
    assert x.asnumpy().tolist() == [[3] * 3] * 2
    x[0] = np.array([1, 2, 3])
    assert x.asnumpy()[0].tolist() == [1, 2, 3]
    with pytest.raises(MXNetError, match="cannot assign"):
        x[0] = nd.array([1, 2])


def _pair():
    rng = np.random.RandomState(0)
    return rng.uniform(0.5, 2, (2, 3)).astype(np.float32), rng.uniform(0.5, 2, (3,)).astype(
        np.float32)


@pytest.mark.parametrize(("op", "ref"), [
    (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
    (lambda a, b: a * b, np.multiply), (lambda a, b: a / b, np.divide),
    (lambda a, b: a % b, np.mod), (lambda a, b: a ** b, np.power),
    (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal),
    (lambda a, b: a > b, np.greater), (lambda a, b: a >= b, np.greater_equal),
    (lambda a, b: a < b, np.less), (lambda a, b: a <= b, np.less_equal),
])
def test_binary_operators_broadcast_and_keep_dtype(op, ref):
    a, b = _pair()
    got = op(nd.array(a), nd.array(b))
    assert got.dtype is np.float32
    np.testing.assert_allclose(got.asnumpy(), ref(a, b).astype(np.float32), rtol=1e-5)


@pytest.mark.parametrize(("op", "ref"), [
    (lambda a: a + 2, lambda a: a + 2), (lambda a: 2 + a, lambda a: 2 + a),
    (lambda a: a - 2, lambda a: a - 2), (lambda a: 2 - a, lambda a: 2 - a),
    (lambda a: a * 3, lambda a: a * 3), (lambda a: 3 * a, lambda a: 3 * a),
    (lambda a: a / 4, lambda a: a / 4), (lambda a: 4 / a, lambda a: 4 / a),
    (lambda a: a % 0.7, lambda a: np.mod(a, np.float32(0.7))),
    (lambda a: 3 % a, lambda a: np.mod(np.float32(3), a)),
    (lambda a: a ** 2, lambda a: a ** 2), (lambda a: 2 ** a, lambda a: 2 ** a),
    (lambda a: a > 1, lambda a: (a > 1)), (lambda a: a == 1, lambda a: (a == 1)),
    (lambda a: -a, lambda a: -a), (lambda a: abs(a - 1), lambda a: abs(a - 1)),
])
def test_scalar_and_reflected_operators(op, ref):
    a, _ = _pair()
    got = op(nd.array(a))
    assert got.dtype is np.float32
    np.testing.assert_allclose(got.asnumpy(), ref(a).astype(np.float32), rtol=1e-5)


def test_int_array_with_float_scalar_stays_int_like_mxnet():
    assert (nd.array([1, 2, 3], dtype="int32") + 1.5).asnumpy().tolist() == [2, 3, 4]
    assert (nd.array([1, 2], dtype="int32") / 2).asnumpy().tolist() == [0, 1]
    assert (nd.array([1, 2], dtype="int32") > 1).dtype is np.int32


def test_inplace_operators_write_into_the_array():
    x = nd.array(np.ones((2, 3)))
    before = x.handle
    x *= 2
    x -= 1
    x /= 4
    x += nd.array([1, 2, 3])
    assert x.handle is before
    np.testing.assert_allclose(x.asnumpy(), np.full((2, 3), 0.25) + [1, 2, 3])
    with pytest.raises(MXNetError, match="out= has shape"):
        y = nd.array([1.0])
        y += nd.array([1.0, 2.0])


def test_broadcast_mismatch_is_an_mxnet_error_with_both_shapes():
    with pytest.raises(MXNetError, match=r"broadcast_add.*\(2,\).*\(3,\)"):
        nd.array([1, 2]) + nd.array([1, 2, 3])


def test_operators_refuse_unknown_types():
    with pytest.raises(TypeError):
        nd.array([1]) + "a"
    assert (nd.array([1]) == None) is False  # noqa: E711  (identity fallback, as in Python)


def test_numpy_interop_and_pickle():
    x = nd.array([[1, 2]])
    assert np.array(x).tolist() == [[1, 2]] and np.asarray(x, dtype=np.int64).dtype == np.int64
    y = pickle.loads(pickle.dumps(x))
    assert y.context == x.context and np.array_equal(y.asnumpy(), x.asnumpy())


def test_dlpack_round_trip_shares_memory():
    x = nd.array([1.0, 2.0, 3.0])
    y = nd.from_dlpack(x)
    y[0] = 7
    assert x.asnumpy()[0] == 7 and y.context == mx.cpu(0)
    z = nd.from_dlpack(np.arange(3.0))
    assert z.shape == (3,) and z.dtype is np.float64


def test_out_argument_writes_into_existing_array():
    a = nd.array([1.0, 2.0])
    out = nd.array([0.0, 0.0])
    result = nd.broadcast_add(a, a, out=out)
    assert result is out and out.asnumpy().tolist() == [2, 4]


def test_waitall_and_wait_to_read_are_callable_on_cpu():
    x = nd.array([1.0])
    x.wait_to_read()
    nd.waitall()


def test_cpu_contexts_mix_like_mxnet():
    """MXNet runs ops on cpu(0), cpu(1), cpu_pinned and cpu_shared inputs together; the
    result is on the first input's context."""
    a = nd.array([1.0], ctx=mx.cpu(1))
    assert (a + nd.array([1.0], ctx=mx.cpu_pinned(0))).context == mx.cpu(1)
    assert (nd.array([1.0]) + a).context == mx.cpu(0)


@pytest.mark.gpu
def test_inputs_on_cpu_and_gpu_are_named(gpu_available):
    a, b = nd.array([1.0]), nd.array([1.0], ctx=gpu_available)
    with pytest.raises(MXNetError, match=r"different contexts.*cpu\(0\).*gpu\(0\)"):
        a + b


def test_unknown_attribute_and_missing_input_are_named():
    with pytest.raises(MXNetError, match=r"relu: unknown attribute 'foo'"):
        nd.relu(nd.array([1.0]), foo=1)
    with pytest.raises(MXNetError, match=r"broadcast_add: input 'rhs' is missing"):
        nd.broadcast_add(nd.array([1.0]))
    with pytest.raises(TypeError, match=r"input 'data' must be an NDArray, got ndarray"):
        nd.relu(np.ones(2))
    with pytest.raises(MXNetError, match=r"attribute 'scalar': expected a number"):
        nd._plus_scalar(nd.array([1.0]), scalar="abc")


@pytest.mark.gpu
def test_gpu_round_trip(gpu_available):
    x = nd.array([[1, 2]], ctx=gpu_available)
    assert repr(x) == "\n[[1. 2.]]\n<NDArray 1x2 @gpu(0)>"
    y = (x + 1).as_in_context(mx.cpu())
    assert y.asnumpy().tolist() == [[2, 3]]
    assert x.copyto(mx.cpu()).context == mx.cpu()
    z = nd.from_dlpack(x)
    assert z.context == mx.gpu(0)
    with pytest.raises(MXNetError, match="different contexts"):
        x + nd.array([[1, 2]])
