"""The tape below ndarray: one recording path (``tape.record``) that every op call, NDArray
method, hybridized block and ``autograd.Function`` goes through, and the variables and reverse
mode that ``NDArray.attach_grad``/``backward`` call down into."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, nd, tape
from hybridgpu.base import MXNetError
from hybridgpu.gluon import nn


@pytest.fixture()
def taped(monkeypatch):
    """Names of the ops ``tape.record`` is asked to tape (and did tape) during a test."""
    seen, original = [], tape.record

    def spy(op, attrs, inputs, outputs):
        node = original(op, attrs, inputs, outputs)
        if node is not None:
            seen.append(op.name)
        return node

    monkeypatch.setattr(tape, "record", spy)
    return seen


def _var(values):
    x = nd.array(values, dtype="float64")
    x.attach_grad()
    return x


def test_op_calls_and_operators_are_taped_through_record(taped):
    x = _var([1.0, 2.0])
    with autograd.record():
        y = nd.exp(x) * 2 + x
    assert taped == ["exp", "_mul_scalar", "broadcast_add"]
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.exp([1.0, 2.0]) + 1)


def test_ndarray_methods_that_record_go_through_record(taped):
    x = _var([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        y = x.reshape((4,))[1:3].copyto(mx.cpu(0)).copy().sum()
    assert taped == ["Reshape", "__getitem__", "copyto", "_copy", "sum"]
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0.0, 1.0], [1.0, 0.0]])


def test_a_hybridized_block_is_one_node_made_by_record(taped):
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    x = nd.ones((1, 3))
    net(x)  # compiled outside record
    with autograd.record():
        out = net(x)
    assert len(taped) == 1 and out._ag.node.op.name == taped[0]
    out.backward()
    np.testing.assert_array_equal(net.weight.grad().asnumpy(), np.ones((2, 3)))


def test_an_autograd_function_is_taped_through_record(taped):
    class Cube(autograd.Function):
        def forward(self, x):
            self.save_for_backward(x)
            return x * x * x

        def backward(self, dy):
            (x,) = self.saved_tensors
            return 3 * x * x * dy

    x = _var([2.0])
    with autograd.record():
        y = Cube()(x)
    assert taped == ["Cube"]  # the forward's own ops are not recorded
    y.backward()
    assert x.grad.asnumpy().tolist() == [12.0]


def test_record_tapes_only_while_recording_and_when_an_input_is_tracked():
    relu = mx.ops.get("relu")
    x, plain = _var([1.0]), nd.array([1.0])
    assert tape.record(relu, {}, [x], [nd.zeros((1,))]) is None  # not recording
    with autograd.record():
        assert tape.record(relu, {}, [plain], [nd.zeros((1,))]) is None  # nothing tracked
        out = nd.zeros((1,))
        node = tape.record(relu, {}, [x], [out])
    assert node is not None and out._ag.node is node and node.inputs == [x]
    assert node.is_train


def test_backward_from_the_tape_equals_autograd_backward():
    x = _var([0.5, -1.5])
    with autograd.record():
        y = nd.tanh(x)
    tape.backward([y], [None], nd, retain_graph=True)
    first = x.grad.asnumpy().copy()
    y.backward()
    np.testing.assert_allclose(first, 1 - np.tanh([0.5, -1.5]) ** 2)
    np.testing.assert_allclose(x.grad.asnumpy(), first)


def test_mark_variables_rejects_bad_requests_and_mismatched_lists():
    x, g = nd.zeros((2,)), nd.zeros((2,))
    with pytest.raises(MXNetError, match="grad_req must be 'write', 'add' or 'null', got 'sum'"):
        tape.mark_variables([x], [g], "sum")
    with pytest.raises(MXNetError, match="2 variables, 1 gradients and 2 grad_reqs"):
        tape.mark_variables([x, g], [g], "write")
    with pytest.raises(MXNetError, match="1 head_grads for 2 heads"):
        tape.backward([x, g], [None], nd)
