"""The tape: what ``record()`` keeps of each op so ``backward()`` can run its gradient.

Every NDArray has an ``_ag`` slot: None for arrays autograd does not track, an ``AGInfo`` for
variables (``mark_variables``/``attach_grad``: a gradient buffer and ``grad_req``) and for
outputs of recorded ops (the ``TapeNode`` that made them). ``record`` is the one place a tape
node is made: every op call, NDArray method, hybridized block and ``autograd.Function`` calls
it, and it tapes the op only while recording and when one of its inputs is tracked.

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
from ..base import MXNetError

__all__ = ["AGInfo", "TapeNode", "record", "tracked", "mark_variables"]

_GRAD_REQS = ("write", "add", "null")


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


def tracked(array):
    """True when ``array`` is tracked and ops on it are being recorded."""
    return array._ag is not None and modes.is_recording()


def record(op, attrs, inputs, outputs):
    """Tape ``op`` (anything with ``name`` and ``grad(F, ins, outs, gouts, **attrs)``) run on
    ``inputs`` giving ``outputs``, when recording and an input is tracked; marks each output
    as made by the new node. Returns the node, or None when nothing was taped."""
    if not modes.is_recording() or not any(x._ag is not None for x in inputs):
        return None
    node = TapeNode(op, attrs, inputs, outputs, modes.is_training())
    for k, out in enumerate(outputs):
        out._ag = AGInfo(node=node, index=k)
    return node


def mark_variables(variables, gradients, grad_reqs="write"):
    """Track ``variables``; their gradients go into ``gradients`` (arrays of the same shape)
    as ``grad_reqs`` says ('write' replaces, 'add' accumulates, 'null' keeps none)."""
    variables = variables if isinstance(variables, (list, tuple)) else [variables]
    gradients = gradients if isinstance(gradients, (list, tuple)) else [gradients]
    reqs = grad_reqs if isinstance(grad_reqs, (list, tuple)) else [grad_reqs] * len(variables)
    if not len(variables) == len(gradients) == len(reqs):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} "
                         f"gradients and {len(reqs)} grad_reqs must match")
    for var, g, req in zip(variables, gradients, reqs):
        if req not in _GRAD_REQS:
            raise MXNetError(f"mark_variables: grad_req must be 'write', 'add' or 'null', got "
                             f"{req!r}")
        var._ag = AGInfo(grad=g, grad_req=req)
