"""Common-subexpression elimination: nodes with the same op, attributes and inputs compute the
same values, so all but the first are dropped and their readers read the first.

Never merged: ``random`` ops (two draws differ), ``mode_dependent`` ops (kept apart like
random ones: Dropout is both), ``mutates_aux`` ops (each update counts), and values some op
writes in place. Constant nodes merge when they hold equal small arrays. Merging cascades:
readers of merged nodes become equal and merge too, in one walk.

Returns a new Graph (the input graph is not changed).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x")
    >>> g = Graph((mx.sym.exp(mx.sym.relu(x)) + mx.sym.exp(mx.sym.relu(x)))._outputs)
    >>> print(cse(g))
    %0 = var x
    %1 = relu(%0)
    %2 = exp(%1)
    %3 = elemwise_add(%2, %2)
    return %3
"""

from __future__ import annotations

import numpy as np

from ...graph import Entry
from .fold import constant_value
from .rewrite import Rewriter, mutated_keys

__all__ = ["cse"]

_SMALL_CONSTANT = 4096  # elements: larger constants are compared by identity only


def _freeze(value):
    """A hashable stand-in for an attribute value (arrays by content when small)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *map(_freeze, value))
    if isinstance(value, dict):
        return ("dict", *sorted((k, _freeze(v)) for k, v in value.items()))
    if hasattr(value, "__array_interface__") or hasattr(value, "__cuda_array_interface__"):
        if value.size > _SMALL_CONSTANT:
            return ("array-id", id(value))
        host = value.get() if hasattr(value, "get") else np.asarray(value)
        return ("array", host.dtype.str, host.shape, host.tobytes())
    try:
        hash(value)
    except TypeError:
        return ("unhashable", id(value))
    return (type(value).__name__, value)


def _mergeable(node):
    op = node.op
    return not (op.random or op.mode_dependent or op.mutates_aux)


def cse(graph):
    """``graph`` with duplicate computations merged (a new Graph)."""
    rw = Rewriter(graph)
    seen = {}
    written = mutated_keys(graph)
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            continue
        new = rw.keep(node)
        if not _mergeable(node) or any((i, k) in written for k in range(node.num_outputs)):
            continue
        attrs = node.attrs if constant_value(node) is None else {"value": node.attrs["value"]}
        key = (id(node.op), _freeze(attrs),
               tuple((id(e.node), e.index) for e in new.inputs))
        first = seen.setdefault(key, new)
        if first is not new:
            for k in range(node.num_outputs):
                rw.replace(node, k, Entry(first, k))
    return rw.finish()
