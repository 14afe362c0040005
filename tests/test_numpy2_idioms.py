"""MXNet 1.x idioms that meet NumPy 2 (docs/differences.md, "NumPy 2").

MXNet users ran NumPy 1.x. These tests pin what hybridgpu does with their code on any
supported NumPy: the d2l book's ``'loss %f' % l.mean().asnumpy()`` (NumPy 2.4 refuses to turn
a shape-(1,) array into a float), and NumPy 2's scalar promotion (NEP 50), which must not
change an NDArray's dtype.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.numpy_interop import OneElementArray


def test_loss_printing_idiom_of_the_d2l_book():
    """``mean()`` keeps MXNet's shape (1,); its ``asnumpy()`` formats with ``%f`` and
    converts with ``float``/``int`` as under NumPy 1.x."""
    loss = mx.nd.array([0.5, 1.0, 2.0])
    mean = loss.mean()
    assert mean.shape == (1,)
    host = mean.asnumpy()
    assert "loss %f" % host == "loss 1.166667"  # noqa: UP031 (the idiom under test)
    assert "epoch %d, loss %.3f" % (1, host) == "epoch 1, loss 1.167"  # noqa: UP031
    assert float(host) == pytest.approx(7 / 6) and int(host) == 1
    assert complex(host) == pytest.approx(7 / 6)
    assert int(mx.nd.array([7], dtype="int32").asnumpy()) == 7


def test_one_element_host_array_is_otherwise_numpys():
    """Only the conversion differs: it is an ndarray that prints, compares, pickles and
    computes like one, and what it computes is a plain ndarray."""
    host = mx.nd.array([[3.0]]).asnumpy()
    assert isinstance(host, np.ndarray) and isinstance(host, OneElementArray)
    assert repr(host) == "array([[3.]], dtype=float32)" and str(host) == "[[3.]]"
    assert host.dtype == np.float32 and host.shape == (1, 1)
    for result in (host + 1, host * host, np.exp(host), host.reshape(1) - 1):
        assert type(result) in (np.ndarray, OneElementArray)
    assert type(host + 1) is np.ndarray and type(np.exp(host)) is np.ndarray
    assert type(host.sum()) is np.float32 and float(host.sum()) == 3.0
    copy = pickle.loads(pickle.dumps(host))
    np.testing.assert_array_equal(copy, host)
    assert float(copy) == 3.0


def test_larger_and_scalar_arrays_are_plain_numpy():
    """Arrays of several elements (and 0-d ones, which NumPy converts itself) are plain
    ndarrays; float() of several elements is NumPy's TypeError on every NumPy."""
    many = mx.nd.array([1.0, 2.0]).asnumpy()
    assert type(many) is np.ndarray
    with pytest.raises(TypeError):
        float(many)
    assert type(np.asarray(mx.nd.array([1.0]))) is np.ndarray
    assert type(mx.nd.array([]).asnumpy()) is np.ndarray


@pytest.mark.parametrize("scalar", [np.float64(2), 2.0, np.float32(2), np.int64(2), 2],
                         ids=["np.float64", "float", "np.float32", "np.int64", "int"])
def test_numpy_scalars_keep_the_ndarray_dtype(scalar):
    """NEP 50 (NumPy 2) promotes ``float32 array * np.float64`` to float64 in NumPy; an
    NDArray keeps MXNet's rule: the array's dtype, on both sides, on any NumPy."""
    x = mx.nd.ones((2,))
    for result in (x * scalar, scalar * x, x + scalar, x - scalar, x / scalar):
        assert result.dtype == np.float32
    half = mx.nd.ones((2,), dtype="float16")
    assert (half * scalar).dtype == np.float16 and (scalar * half).dtype == np.float16


def test_numpy_array_copy_keyword():
    """``np.array(x, copy=False)`` and ``np.asarray(x)`` take an NDArray on NumPy 1 and 2
    (NumPy 2 passes ``copy=`` to ``__array__``)."""
    x = mx.nd.array([1.0, 2.0])
    np.testing.assert_array_equal(np.array(x, copy=False), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(x, dtype=np.float64), [1.0, 2.0])
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
