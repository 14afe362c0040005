"""The tape: what ``record()`` keeps of each op so ``backward()`` can run its gradient.

Every NDArray has an ``_ag`` slot: None for arrays autograd does not track, an ``AGInfo`` for
variables (``attach_grad``: a gradient buffer and ``grad_req``) and for outputs of recorded
ops (the ``TapeNode`` that made them). An op is recorded only when one of its inputs is tracked.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.nd.array([1.0, 2.0])
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = x * 2
    >>> y._ag.node.op.name, y._ag.index
    ('_mul_scalar', 0)
"""

from __future__ import annotations

from .. import modes
from ..ndarray import imperative

__all__ = ["AGInfo", "TapeNode", "record_op", "install"]


class AGInfo:
    """Autograd's record of one NDArray: a variable (``grad``, ``grad_req``) or an output
    (``node``, ``index``). ``fresh`` tells the Trainer a gradient was written since it last
    looked."""

    __slots__ = ("node", "index", "grad", "grad_req", "fresh")

    def __init__(self, node=None, index=0, grad=None, grad_req="write"):
        self.node, self.index = node, index
        self.grad, self.grad_req = grad, grad_req
        self.fresh = False

    @property
    def is_variable(self):
        return self.node is None


class TapeNode:
    """One recorded op: the OpDef (or anything with ``name`` and ``grad``), its attributes,
    its input and output NDArrays, and the train mode it ran in."""

    __slots__ = ("op", "attrs", "inputs", "outputs", "is_train", "freed")

    def __init__(self, op, attrs, inputs, outputs, is_train):
        self.op, self.attrs = op, attrs
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.is_train = is_train
        self.freed = False

    def free(self):
        """Drop the saved arrays (after a backward without ``retain_graph``)."""
        self.inputs = self.outputs = None
        self.freed = True


def record_op(op, attrs, inputs, outputs):
    """The recorder ``imperative.invoke`` calls while recording: tape ``op`` when an input is
    tracked."""
    if not any(x._ag is not None for x in inputs):
        return
    node = TapeNode(op, attrs, inputs, outputs, modes.is_training())
    for k, out in enumerate(outputs):
        out._ag = AGInfo(node=node, index=k)


def install():
    """Make ``imperative.invoke`` record ops (idempotent)."""
    imperative.set_recorder(record_op)
