"""Shape inference as a pass: fill ``graph.shapes`` with every value's shape (the rules live in
``graph.infer``; this file is the pipeline's step).

Works in place: returns the same Graph, its ``shapes`` filled. A graph whose values all have
known shapes (a traced graph) is returned as it is. A conflict raises InferenceError naming the
node.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x", shape=(2, 3))
    >>> g = infer_shape(Graph(mx.sym.sum(x, axis=1)._outputs))
    >>> g.shapes[(1, 0)]
    (2,)
"""

from __future__ import annotations

from ...graph import infer_shapes
from ...ops.rules import known

__all__ = ["infer_shape"]


def infer_shape(graph, given=None):
    """``graph`` with ``graph.shapes`` filled from ``given`` (variable name -> shape), the
    variables' ``__shape__`` and the ops' rules (the same Graph)."""
    done = all(known(graph.shapes.get((i, k)))
               for i, n in enumerate(graph.nodes) for k in range(n.num_outputs))
    if not done or given:
        infer_shapes(graph, dict(given or {}))
    return graph
