"""``kvstore.agreement``: the descriptor every ``dist_sync`` rank all-gathers before a
collective, and the message naming what differs (no MPI needed; the multi-rank cases are in
``tests/test_dist_kvstore.py``)."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.kvstore import agreement
from hybridgpu.kvstore.agreement import describe, disagreement


def _table(*rows):
    return np.stack(rows)


def test_errors_are_mxnet_errors():
    assert issubclass(mx.kv.DistributedError, mx.MXNetError)
    assert issubclass(mx.kv.DistTimeoutError, mx.kv.DistributedError)


def test_identical_calls_agree_whatever_the_key_text():
    a = describe(4, "broadcast", 0, np.zeros((3, 2), np.float16), text="0 ('dense0_weight')")
    b = describe(4, "broadcast", 0, np.zeros((3, 2), np.float16), text="0 ('dense1_weight')")
    assert a.size == agreement.DESCRIPTOR_BYTES
    assert disagreement(_table(a, b, a)) is None  # names differ, the keys (indices) do not


@pytest.mark.parametrize("other, field", [
    (describe(9, "push", "w", np.zeros(4, np.float32)), "sequence number"),
    (describe(8, "init", "w", np.zeros(4, np.float32)), "operation"),
    (describe(8, "push", "v", np.zeros(4, np.float32)), "key"),
    (describe(8, "push", 1, np.zeros(4, np.float32)), "key"),
    (describe(8, "push", "w", np.zeros(4, np.int32)), "dtype"),
    (describe(8, "push", "w", np.zeros((4, 1), np.float32)), "shape"),
    (describe(8, "barrier"), "operation, key, dtype, shape"),
])
def test_each_field_that_differs_is_named_with_the_ranks(other, field):
    mine = describe(8, "push", "w", np.zeros(4, np.float32))
    message = disagreement(_table(mine, mine, other))
    assert message.startswith("rank 0 calls push of key 'w' (float32, shape (4,)), rank 2 "
                              "calls "), message
    assert message.split(": they differ in ")[1].startswith(field), message
    if field == "sequence number":
        assert "rank 0 is at collective 8, rank 2 at 9" in message


def test_long_shapes_and_keys_are_compared_in_full():
    shape = (1,) * 9 + (2,)
    a = describe(0, "push", "k" * 100, np.zeros(shape))
    b = describe(0, "push", "k" * 100, np.zeros((1,) * 9 + (3,)))  # differs past dim 8
    assert "they differ in shape" in disagreement(_table(a, b))
    assert "a 10-d shape" in disagreement(_table(a, b))
    c = describe(0, "push", "k" * 99 + "j", np.zeros(shape))  # differs past the text kept
    assert "they differ in key" in disagreement(_table(a, c))


def test_a_peer_with_another_layout_is_named():
    a = describe(0, "barrier")
    b = a.copy()
    b[0] ^= 1  # the version field
    assert "another hybridgpu version" in disagreement(_table(a, b))
    assert "differ in version" in disagreement(_table(a, b))
