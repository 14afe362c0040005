"""Shape inference as a pass: fill ``graph.shapes`` with every value's shape (the rules live in
``graph.infer``; this file is the pipeline's step).

Works in place: returns the same Graph, its ``shapes`` filled. A graph whose values all have
known shapes (a traced graph) is returned as it is. A conflict raises InferenceError naming the
node. One rewrite follows inference: an op that makes an array from its ``shape`` attribute
alone (``_zeros``, ``_ones``, ``_full``) whose attribute has unknown (0) dimensions, as MXNet
writes the zero states of an RNN called symbolically, gets the inferred shape instead (MXNet
fills it the same way), so it computes the array the graph needs.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x", shape=(2, 3))
    >>> g = infer_shape(Graph(mx.sym.sum(x, axis=1)._outputs))
    >>> g.shapes[(1, 0)]
    (2,)
"""

from __future__ import annotations

from ...graph import Entry, Node, infer_shapes
from ...ops.rules import known
from .rewrite import Rewriter

__all__ = ["infer_shape"]


def infer_shape(graph, given=None):
    """``graph`` with ``graph.shapes`` filled from ``given`` (variable name -> shape), the
    variables' ``__shape__`` and the ops' rules (the same Graph)."""
    done = all(known(graph.shapes.get((i, k)))
               for i, n in enumerate(graph.nodes) for k in range(n.num_outputs))
    if not done or given:
        infer_shapes(graph, dict(given or {}))
    return _complete_creation_shapes(graph)


def _incomplete(graph, i, node):
    if node.is_variable or not node.op.creation or node.num_outputs != 1:
        return False
    shape = node.attrs.get("shape")
    return (isinstance(shape, tuple) and 0 in shape and known(graph.shapes.get((i, 0)))
            and len(shape) == len(graph.shapes[(i, 0)]))


def _complete_creation_shapes(graph):
    todo = [i for i, node in enumerate(graph.nodes) if _incomplete(graph, i, node)]
    if not todo:
        return graph
    rw = Rewriter(graph)
    for i, node in enumerate(graph.nodes):
        if i in todo:
            shape = graph.shapes[(i, 0)]
            new = Node(node.op, node.name, {**node.attrs, "shape": shape}, [],
                       given_attrs={**node.given_attrs, "shape": str(shape)}, extra=node.extra)
            rw.origin[id(new)] = node
            rw.replace(node, 0, Entry(new, 0))
        else:
            rw.keep(node)
    return rw.finish()
