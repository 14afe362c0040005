"""Dead-code elimination: drop what no output needs.

A Graph holds only the nodes its outputs reach, so after any rewrite, rebuilding from the
outputs drops nodes nothing reads any more. What is left to find is work that does nothing:
an identity node (an ``elementwise`` op whose C expression is ``in0`` or ``(T)in0`` and whose
output has its input's shape and dtype: ``identity``, ``BlockGrad`` in a forward graph, ``Cast``
to the same dtype) is skipped, its readers reading its input. An identity that is a graph
output stays (the caller gets a fresh array, not an input), and so does one next to a value an
op writes in place (BatchNorm's moving statistics in training), whose readers must see the
value before the write.

Ops that update auxiliary states (``mutates_aux``) are never dropped while their node is in
the graph: their updates matter in training even where no output reads them. (The IR has no
"effect" roots: a BatchNorm whose output nothing reads is not in the traced Graph at all, as
in MXNet.)

Returns a new Graph; the input graph and its nodes are not changed.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x")
    >>> g = Graph(mx.sym.relu(mx.sym.BlockGrad(mx.sym.identity(x)))._outputs)
    >>> print(dce(g))
    %0 = var x
    %1 = relu(%0)
    return %1
"""

from __future__ import annotations

from .rewrite import Rewriter, mutated_keys

__all__ = ["dce", "is_identity"]

_IDENTITY_EXPRESSIONS = ("in0", "(T)in0")


def is_identity(graph, i):
    """True when node ``i`` returns its only input unchanged."""
    node = graph.nodes[i]
    if node.is_variable or len(node.inputs) != 1 or node.num_outputs != 1:
        return False
    op = node.op
    if not op.elementwise or op.random or op.mode_dependent or op.mutates_aux:
        return False
    if op.cuda_for(node.attrs) not in _IDENTITY_EXPRESSIONS:
        return False
    src = graph.key(node.inputs[0])
    dtype = graph.dtypes.get((i, 0))
    if node.op.cuda_for(node.attrs) == "(T)in0" and (dtype is None or
                                                     dtype != graph.dtypes.get(src)):
        return False
    shape = graph.shapes.get((i, 0))
    return shape is None or graph.shapes.get(src) in (None, shape)


def dce(graph, is_train=False):
    """``graph`` without identity nodes and what only they kept alive (a new Graph).
    ``is_train`` is accepted for the pipeline's uniform call; nodes that update auxiliary
    states are kept in both modes."""
    rw = Rewriter(graph)
    outputs = {graph.key(e) for e in graph.outputs}
    written = mutated_keys(graph)
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            continue
        src = graph.key(node.inputs[0]) if node.inputs else None
        if (is_identity(graph, i) and (i, 0) not in outputs and (i, 0) not in written
                and src not in written):
            rw.replace(node, 0, rw.entry(node.inputs[0]))
        else:
            rw.keep(node)
    return rw.finish()
