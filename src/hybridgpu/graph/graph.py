"""A ``Graph``: the nodes reachable from some output entries, in topological order, with each
value's shape and dtype when known. This is the flat IR that the printer, verifier, reference
interpreter and compiler passes work on.

Example:
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph.node import Node
    >>> x = Node.variable("x")
    >>> y = Node(ops.get("relu"), "relu0", {}, [Entry(x, 0)])
    >>> g = Graph([Entry(y, 0)])
    >>> [n.name for n in g.nodes], [n.name for n in g.variables]
    (['x', 'relu0'], ['x'])
"""

from __future__ import annotations

from ..base import MXNetError
from .node import Entry

__all__ = ["Graph", "topological_order"]


def topological_order(outputs):
    """Nodes reachable from ``outputs`` (Entries), inputs before users; MXNetError on a
    cycle. Order among independent nodes follows MXNet's depth-first post-order."""
    order, state = [], {}
    for head in outputs:
        stack = [(head.node, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                mark = state.get(id(node))
                if mark == "done":
                    continue
                if mark == "open":
                    raise MXNetError(f"the graph has a cycle through node {node.name!r}")
                state[id(node)] = "open"
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i].node
                if state.get(id(child)) == "open":
                    raise MXNetError(f"the graph has a cycle through node {child.name!r}")
                if state.get(id(child)) != "done":
                    stack.append((child, 0))
            else:
                state[id(node)] = "done"
                order.append(node)
    return order


class Graph:
    """Nodes in topological order plus the output entries; ``shapes``/``dtypes`` map an
    ``(node index, output index)`` pair to what inference found (``None`` when unknown)."""

    def __init__(self, outputs):
        self.outputs = [Entry(*e) for e in outputs]
        self.nodes = topological_order(self.outputs)
        self.index = {id(n): i for i, n in enumerate(self.nodes)}
        self.shapes: dict = {}
        self.dtypes: dict = {}

    @property
    def variables(self):
        """Variable nodes in topological order."""
        return [n for n in self.nodes if n.is_variable]

    def key(self, entry):
        """``(node index, output index)`` of an Entry."""
        return (self.index[id(entry.node)], entry.index)

    def release_plan(self):
        """``{node index: [value keys whose last reader is that node]}``: what an executor
        can free after running the node (graph outputs are never freed). Cached."""
        plan = self.__dict__.get("_release_plan")
        if plan is None:
            last = {}
            for i, node in enumerate(self.nodes):
                for e in node.inputs:
                    last[self.key(e)] = i
            keep = {self.key(e) for e in self.outputs}
            plan = {}
            for key, i in last.items():
                if key not in keep:
                    plan.setdefault(i, []).append(key)
            self._release_plan = plan
        return plan

    def users(self):
        """``{node index: [indices of nodes that read it]}``."""
        users = {i: [] for i in range(len(self.nodes))}
        for i, node in enumerate(self.nodes):
            for e in node.inputs:
                users[self.index[id(e.node)]].append(i)
        return users

    def __len__(self):
        return len(self.nodes)

    def __str__(self):
        from .printer import format_graph

        return format_graph(self)
