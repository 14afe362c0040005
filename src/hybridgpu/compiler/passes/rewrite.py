"""What every pass shares: a ``Rewriter`` that builds a new Graph from an old one without
touching the old one's nodes, shape/dtype carry-over for the new Graph, and small IR helpers.

A pass walks the old graph's nodes and tells the Rewriter, for each output it changes, which
new Entry stands for it (``replace``). Every other node is kept: the same Node object when
none of its inputs changed, else a copy with the new inputs (``keep``). ``finish()`` builds the
new Graph from the outputs (so nodes nothing reads any more drop out) and fills its shapes and
dtypes: nodes the old graph had keep its facts, new nodes get them from their op's rules.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes
    >>> x = mx.sym.var("x")
    >>> g = Graph(mx.sym.relu(mx.sym.identity(x))._outputs)
    >>> infer_shapes(g, {"x": (2,)})
    >>> rw = Rewriter(g)
    >>> rw.replace(g.nodes[1], 0, rw.entry(g.nodes[1].inputs[0]))  # skip the identity
    >>> _ = rw.keep(g.nodes[2])
    >>> print(rw.finish())
    %0 = var x : (2,)
    %1 = relu(%0) : (2,)
    return %1
"""

from __future__ import annotations

from ... import ops
from ...base import MXNetError
from ...graph import Entry, Graph, Node

__all__ = ["Rewriter", "carry_types", "mutated_keys", "make_node", "value_nbytes", "readers"]


class Rewriter:
    """Maps the old graph's values to new Entries; see the module docstring."""

    def __init__(self, graph):
        self.graph = graph
        self._map = {}     # (id(old node), output index) -> new Entry
        self.origin = {}   # id(new node) -> the old node it copies (for carried types)

    def entry(self, old):
        """The new Entry standing for the old Entry ``old`` (itself when untouched)."""
        return self._map.get((id(old.node), old.index), old)

    def replace(self, node, index, new):
        """Output ``index`` of the old ``node`` is now the Entry ``new``."""
        self._map[(id(node), index)] = new

    def replaced(self, node, index=0):
        """True when a pass gave output ``index`` of ``node`` a new Entry."""
        return (id(node), index) in self._map

    def keep(self, node):
        """``node`` with its inputs mapped: the same Node when none changed, else a copy."""
        inputs = [self.entry(e) for e in node.inputs]
        if all(a.node is b.node and a.index == b.index for a, b in zip(inputs, node.inputs)):
            return node
        new = Node(node.op, node.name, node.attrs, inputs, given_attrs=node.given_attrs,
                   extra=node.extra)
        self.origin[id(new)] = self.origin.get(id(node), node)
        for k in range(node.num_outputs):
            if not self.replaced(node, k):
                self.replace(node, k, Entry(new, k))
        return new

    def finish(self):
        """The new Graph (outputs mapped), with shapes and dtypes carried over."""
        graph = Graph([self.entry(e) for e in self.graph.outputs])
        carry_types(graph, self.graph, self.origin)
        return graph


def _forward(graph, node):
    """(out shapes, out dtypes) from the node's op rules, None where unknown."""
    keys = [graph.key(e) for e in node.inputs]
    shapes = [graph.shapes.get(k) for k in keys]
    dtypes = [graph.dtypes.get(k) for k in keys]
    try:
        out_shapes = node.op.infer_shape(node.attrs, shapes)[1]
    except MXNetError:
        out_shapes = None
    try:
        out_types = node.op.infer_type(node.attrs, dtypes)[1]
    except MXNetError:
        out_types = None
    return out_shapes, out_types


def carry_types(graph, old, origin=None):
    """Fill ``graph.shapes``/``graph.dtypes``: a node of ``old`` (the same object, or the old
    node a copy was made from, per ``origin``) keeps what ``old`` knew about it, unless its
    op's rules now say more; variables are looked up by name."""
    origin = origin or {}
    old_vars = {n.name: i for i, n in enumerate(old.nodes) if n.is_variable}
    for i, node in enumerate(graph.nodes):
        src = old.index.get(id(origin.get(id(node), node)))
        if node.is_variable and src is None:
            src = old_vars.get(node.name)
        same = src is not None and old.nodes[src] is node
        shapes, dtypes = (None, None) if same or node.is_variable else _forward(graph, node)
        for k in range(node.num_outputs):
            shape = shapes[k] if shapes and k < len(shapes) else None
            dtype = dtypes[k] if dtypes and k < len(dtypes) else None
            if src is not None:
                shape = shape if shape is not None else old.shapes.get((src, k))
                dtype = dtype if dtype is not None else old.dtypes.get((src, k))
            if shape is not None:
                graph.shapes[(i, k)] = tuple(shape)
            if dtype is not None:
                graph.dtypes[(i, k)] = dtype


def mutated_keys(graph):
    """Keys of the values some op writes in place (the auxiliary-state inputs of
    ``mutates_aux`` ops, such as BatchNorm's moving statistics in training)."""
    keys = set()
    for node in graph.nodes:
        if node.is_variable or not node.op.mutates_aux:
            continue
        for name, e in zip(node.input_names(), node.inputs):
            if name in node.op.aux:
                keys.add(graph.key(e))
    return keys


def make_node(op_name, name, inputs, **given):
    """A new Node of the registered op ``op_name`` on ``inputs`` (Entries)."""
    op = ops.get(op_name)
    return Node(op, name, op.parse_attrs(given, len(inputs)), inputs,
                given_attrs=op.format_attrs(given))


def value_nbytes(graph, key):
    """Bytes of the value ``key`` when its shape and dtype are known, else None."""
    import numpy as np

    from ...ops.rules import known

    shape, dtype = graph.shapes.get(key), graph.dtypes.get(key)
    if dtype is None or not known(shape):
        return None
    size = 1
    for d in shape:
        size *= d
    return size * np.dtype(dtype).itemsize


def readers(graph):
    """``{value key: [indices of the nodes reading it]}``; a graph output also counts a
    ``None`` reader (the caller)."""
    found = {}
    for i, node in enumerate(graph.nodes):
        for e in node.inputs:
            found.setdefault(graph.key(e), []).append(i)
    for e in graph.outputs:
        found.setdefault(graph.key(e), []).append(None)
    return found
