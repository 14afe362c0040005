"""Check a Graph's structure (and its inferred types, when present); a failure shows the bad
node and its neighbourhood, printed one line per node.

Example:
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph.node import Node, Entry
    >>> from hybridgpu.graph.graph import Graph
    >>> x = Node.variable("x")
    >>> verify(Graph([Entry(Node(ops.get("relu"), "r", {}, [Entry(x, 0)]), 0)]))
"""

from __future__ import annotations

from ..base import MXNetError
from .printer import format_node

__all__ = ["verify"]


def _fail(graph, i, why):
    node = graph.nodes[i]
    context = [graph.index[id(e.node)] for e in node.inputs if id(e.node) in graph.index]
    lines = [f"    {format_node(graph, k)}" for k in sorted(set(context))]
    lines.append(f"  > {format_node(graph, i)}")
    raise MXNetError(f"invalid graph at node %{i} {node.name!r}: {why}\n" + "\n".join(lines))


def _check_node(graph, i, node):
    for e in node.inputs:
        j = graph.index.get(id(e.node))
        if j is None or j >= i:
            _fail(graph, i, f"input {e.node.name!r} does not come before its user")
        if not 0 <= e.index < e.node.num_outputs:
            _fail(graph, i, f"reads output {e.index} of {e.node.name!r}, which has "
                            f"{e.node.num_outputs}")
    if node.is_variable:
        if node.inputs:
            _fail(graph, i, "a variable has inputs")
        return
    missing = [k for k in node.op.attrs if k not in node.attrs]
    if missing:
        _fail(graph, i, f"attributes {missing} are not set")
    expected = node.op.input_names(node.attrs)
    if len(expected) != len(node.inputs):
        _fail(graph, i, f"{node.op.name} takes {len(expected)} inputs {list(expected)} but has "
                        f"{len(node.inputs)}")


def _check_types(graph, i, node):
    in_shapes = [graph.shapes.get(graph.key(e)) for e in node.inputs]
    if any(s is None for s in in_shapes):
        return
    _, outs = node.op.infer_shape(node.attrs, in_shapes)
    for k, shape in enumerate(outs):
        have = graph.shapes.get((i, k))
        if shape is not None and have is not None and tuple(have) != tuple(shape):
            _fail(graph, i, f"output {k} is recorded as {have} but its inputs give {shape}")


def verify(graph):
    """Raise MXNetError at the first structural problem; ``None`` when the graph is sound."""
    names = {}
    for i, node in enumerate(graph.nodes):
        _check_node(graph, i, node)
        if node.is_variable:
            if node.name in names:
                _fail(graph, i, f"two variables are named {node.name!r} "
                                f"(%{names[node.name]} and %{i})")
            names[node.name] = i
        elif graph.shapes:
            _check_types(graph, i, node)
