"""DLPack under MXNet's names: ``nd.to_dlpack_for_read``/``to_dlpack_for_write`` make capsules
that share memory, ``nd.from_dlpack`` takes capsules (legacy and versioned) and producers."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx


def test_write_capsule_shares_memory_both_ways():
    a = mx.nd.arange(4)
    b = mx.nd.from_dlpack(mx.nd.to_dlpack_for_write(a))
    b[1] = 10.0
    a[2] = 20.0
    np.testing.assert_array_equal(a.asnumpy(), [0, 10, 20, 3])
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())


def test_read_capsule_and_method_forms():
    a = mx.nd.array([[1.0, 2.0], [3.0, 4.0]], dtype="float64")
    r = mx.nd.from_dlpack(a.to_dlpack_for_read())
    assert r.shape == (2, 2) and r.dtype == np.float64 and r.context == mx.cpu()
    a[0, 0] = 5.0
    assert r.asnumpy()[0, 0] == 5.0  # shared, not copied


def test_a_capsule_is_consumed_once():
    capsule = mx.nd.to_dlpack_for_read(mx.nd.ones((2,)))
    mx.nd.from_dlpack(capsule)
    with pytest.raises(mx.MXNetError, match="consumed only once"):
        mx.nd.from_dlpack(capsule)


def test_producers_and_foreign_capsules():
    np.testing.assert_array_equal(mx.nd.from_dlpack(np.arange(3.0)).asnumpy(), [0, 1, 2])
    torch = pytest.importorskip("torch")
    t = torch.arange(4.0)
    x = mx.nd.from_dlpack(torch.utils.dlpack.to_dlpack(t))
    t[1] = 9.0
    np.testing.assert_array_equal(x.asnumpy(), [0, 9, 2, 3])
