"""Print a Graph, one line per node, e.g.::

    %0 = var data : (2, 5) float32
    %3 = FullyConnected(%0, %1, %2) num_hidden=10 : (2, 10) float32
    return %3

Example:
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph.node import Node, Entry
    >>> from hybridgpu.graph.graph import Graph
    >>> x = Node.variable("x")
    >>> y = Node(ops.get("_plus_scalar"), "p", {"scalar": 1, "is_int": True}, [Entry(x, 0)],
    ...          given_attrs={"scalar": 1})
    >>> print(format_graph(Graph([Entry(y, 0)])))
    %0 = var x
    %1 = _plus_scalar(%0) scalar=1
    return %1
"""

from __future__ import annotations

from ..safe_text import display

__all__ = ["format_graph", "format_node"]


def _ref(graph, entry):
    i = graph.index[id(entry.node)]
    return f"%{i}" if entry.node.num_outputs == 1 else f"%{i}.{entry.index}"


def _type(graph, i, num_outputs):
    parts = []
    for k in range(num_outputs):
        shape, dtype = graph.shapes.get((i, k)), graph.dtypes.get((i, k))
        if shape is None and dtype is None:
            continue
        parts.append(" ".join(str(x) for x in (shape, dtype) if x is not None))
    return f" : {', '.join(parts)}" if parts else ""


def format_node(graph, i):
    """The line of node ``i`` (names and string attributes escaped when not printable)."""
    node = graph.nodes[i]
    typ = _type(graph, i, node.num_outputs)
    if node.is_variable:
        return f"%{i} = var {display(node.name)}{typ}"
    args = ", ".join(_ref(graph, e) for e in node.inputs)
    attrs = " ".join(f"{k}={display(v) if isinstance(v, str) else v}"
                     for k, v in node.given_attrs.items())
    return f"%{i} = {node.op.name}({args}){' ' + attrs if attrs else ''}{typ}"


def format_graph(graph):
    """Every node, then the outputs."""
    lines = [format_node(graph, i) for i in range(len(graph.nodes))]
    lines.append("return " + ", ".join(_ref(graph, e) for e in graph.outputs))
    return "\n".join(lines)
