"""Reverse mode over the tape: ``run_backward(heads, head_grads, F, ...)`` and ``backward``.

Gradients of each recorded op come from its ``grad(F, ins, outs, out_grads, **attrs)`` (the
OpDef's gradient written as ops), run in the train mode the op was recorded in. ``F`` is the
namespace of eager ops the gradients are computed with (``mx.nd``): the caller, above this
layer, hands it down, so the tape imports nothing above ``modes``.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.nd.array([1.0, 2.0]); x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> x.grad.asnumpy().tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

from .. import modes
from ..base import MXNetError

__all__ = ["run_backward", "backward"]


def _topological(heads):
    """Tape nodes reachable from ``heads``, inputs before users."""
    order, seen = [], set()
    stack = [(h._ag.node, False) for h in heads if h._ag is not None and h._ag.node is not None]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.freed:
            raise MXNetError(f"backward: the graph through {node.op.name!r} has been freed by "
                             "an earlier backward; pass retain_graph=True to the first one to "
                             "call backward twice")
        stack.append((node, True))
        for x in node.inputs:  # an input made by a freed graph is a constant, as in MXNet
            if x._ag is not None and x._ag.node is not None and not x._ag.node.freed \
                    and id(x._ag.node) not in seen:
                stack.append((x._ag.node, False))
    return order


def _add(table, key, grad):
    table[key] = grad if table.get(key) is None else table[key] + grad


def _seed(heads, head_grads, F, node_grads, leaf_grads, leaves):
    for h, g in zip(heads, head_grads):
        if h._ag is None:
            raise MXNetError("backward: a head is not part of a recorded graph; compute it "
                             "inside autograd.record() from arrays with attach_grad()")
        g = F.ones_like(h) if g is None else g
        if h._ag.node is None:
            leaves[id(h)] = h
            _add(leaf_grads, id(h), g)
        else:
            _add(node_grads, (id(h._ag.node), h._ag.index), g)


def _op_input_grads(node, gouts, F, create_graph):
    with modes.recording(create_graph), modes.training(node.is_train):
        grads = node.op.grad(F, node.inputs, node.outputs, gouts, **node.attrs)
    if len(grads) != len(node.inputs):
        raise MXNetError(f"backward: the gradient of {node.op.name!r} returned {len(grads)} "
                         f"values for {len(node.inputs)} inputs")
    return grads


def run_backward(heads, head_grads, F, retain_graph=False, create_graph=False):
    """Propagate from ``heads`` to every reachable variable, computing with the ops of ``F``;
    returns ``(leaves, grads)``: ``{id: NDArray variable}`` and ``{id: gradient}``."""
    node_grads, leaf_grads, leaves = {}, {}, {}
    _seed(heads, head_grads, F, node_grads, leaf_grads, leaves)
    order = _topological(heads)
    for node in reversed(order):
        gouts = [node_grads.pop((id(node), k), None) for k in range(len(node.outputs))]
        if all(g is None for g in gouts):
            continue
        gouts = [F.zeros_like(o) if g is None else g for g, o in zip(gouts, node.outputs)]
        for x, g in zip(node.inputs, _op_input_grads(node, gouts, F, create_graph)):
            if g is None or x._ag is None:
                continue
            if x._ag.node is None:
                leaves[id(x)] = x
                _add(leaf_grads, id(x), g)
            elif not x._ag.node.freed:
                _add(node_grads, (id(x._ag.node), x._ag.index), g)
    if not retain_graph:
        for node in order:
            node.free()
    return leaves, leaf_grads


def backward(heads, head_grads, F, retain_graph=False):
    """Gradients of ``heads`` (with ``head_grads``, None for ones) with respect to every
    tracked variable, written into their gradient buffers: ``grad_req`` 'write' replaces,
    'add' accumulates, 'null' skips."""
    if len(head_grads) != len(heads):
        raise MXNetError(f"backward: {len(head_grads)} head_grads for {len(heads)} heads")
    leaves, grads = run_backward(heads, head_grads, F, retain_graph=retain_graph)
    for key, var in leaves.items():
        info = var._ag
        if info.grad_req == "null" or info.grad is None:
            continue
        g = grads[key]
        if info.grad_req == "add":
            info.grad[:] = info.grad + g
        else:
            info.grad[:] = g
        info.fresh = True
