"""Dtype inference as a pass: fill ``graph.dtypes`` with every value's dtype (the rules live in
``graph.infer``; this file is the pipeline's step).

Works in place: returns the same Graph, its ``dtypes`` filled. A graph whose values all have
dtypes (a traced graph) is returned as it is.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x", dtype="float64")
    >>> g = infer_type(Graph(mx.sym.relu(x)._outputs))
    >>> g.dtypes[(1, 0)]
    'float64'
"""

from __future__ import annotations

from ...graph import infer_types

__all__ = ["infer_type"]


def infer_type(graph, given=None):
    """``graph`` with ``graph.dtypes`` filled from ``given`` (variable name -> dtype name), the
    variables' ``__dtype__`` and the ops' rules (the same Graph)."""
    done = all(graph.dtypes.get((i, k)) is not None
               for i, n in enumerate(graph.nodes) for k in range(n.num_outputs))
    if not done or given:
        infer_types(graph, dict(given or {}))
    return graph
