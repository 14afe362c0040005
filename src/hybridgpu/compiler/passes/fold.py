"""Constant folding: evaluate, once at compile time, what depends on no input.

Constant values are the outputs of ``creation`` ops that are not ``random`` (``zeros``,
``ones``, ``full``, ``arange``, ...) and of plain ops (not ``random``, not ``mode_dependent``,
not ``mutates_aux``) whose inputs are all constant. Each is computed with the context's array
module and the node is replaced by a **constant node**: a Node of the hidden op ``_constant``
(no inputs, ``creation``) whose ``attrs["value"]`` holds the array and whose compute returns
it. Every executor runs it like any op (the reference interpreter needs nothing special);
``constant_value(node)`` gives the array, or None for other nodes. It prints as::

    %2 = _constant() value=[1. 1. 1.] : (3,) float32

Not folded: values larger than ``max_size`` elements (their op stays, reading folded inputs),
and values some op writes in place (a ``zeros`` passed as BatchNorm's moving mean in
training must be fresh each call). An executor must copy a constant that is a graph output
(the plan marks it, see ``plan_memory``), so callers can never change it.

Returns a new Graph (the same Graph when nothing folds); the input graph is not changed.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph((x + mx.sym.ones((3,)) * 2)._outputs)
    >>> infer_shapes(g, {"x": (3,)}); infer_types(g, {"x": "float32"})
    >>> print(fold(g))
    %0 = var x : (3,) float32
    %1 = _constant() value=[2. 2. 2.] : (3,) float32
    %2 = elemwise_add(%0, %1) : (3,) float32
    return %2
"""

from __future__ import annotations

import numpy as np

from ...base import MXNetError
from ...graph import Entry, Node
from ...ops import OpDef
from .rewrite import Rewriter, mutated_keys

__all__ = ["fold", "CONSTANT", "constant_node", "constant_value"]

#: Values with more elements stay computed at run time (folding would keep them alive).
MAX_FOLD_SIZE = 1 << 20


def _constant_compute(xp, value):
    return value


CONSTANT = OpDef(
    "_constant", inputs=(), compute=_constant_compute, creation=True,
    infer_shape=lambda attrs, ins: ([], [tuple(attrs["value"].shape)]),
    infer_type=lambda attrs, ins: ([], [np.dtype(attrs["value"].dtype).name]),
    doc="A value computed at compile time (constant folding); compute returns it.")


def _describe(value):
    """Short text for the printer: the values when few, else the shape."""
    if value.size <= 6:
        host = value.get() if hasattr(value, "get") else np.asarray(value)
        return np.array2string(host.reshape(-1), separator=" ")
    return f"<{'x'.join(map(str, value.shape))} array>"


def constant_node(name, value):
    """A constant node holding ``value`` (an array of the executor's module)."""
    return Node(CONSTANT, name, {"value": value}, [], given_attrs={"value": _describe(value)})


def constant_value(node):
    """The array a constant node holds, or None for any other node."""
    return node.attrs["value"] if node.op is CONSTANT else None


def _foldable(node):
    op = node.op
    if op.random or op.mode_dependent or op.mutates_aux:
        return False
    return op.creation or bool(node.inputs)


def _evaluate(node, args, xp):
    try:
        result = node.op.compute(xp, *args, **node.attrs)
    except (MXNetError, ValueError, TypeError, IndexError, ArithmeticError):
        return None  # left for run time, where the error names the node
    return result if isinstance(result, tuple) else (result,)


def _known_size(shape):
    """Elements of ``shape`` (0 when unknown)."""
    if not shape or any(d is None for d in shape):
        return 0
    return int(np.prod(shape, dtype=object))


def fold(graph, xp=np, max_size=MAX_FOLD_SIZE):
    """``graph`` with its constant values computed (with ``xp``) and held by constant nodes."""
    rw = Rewriter(graph)
    values = {}  # key in the old graph -> computed array
    written = mutated_keys(graph)
    changed = False
    for i, node in enumerate(graph.nodes):
        keys = [graph.key(e) for e in node.inputs]
        if node.is_variable or not _foldable(node) or any(k not in values for k in keys):
            rw.keep(node)
            continue
        if node.op is CONSTANT:
            values[(i, 0)] = node.attrs["value"]
            continue
        if any(_known_size(graph.shapes.get((i, k))) > max_size
               for k in range(node.num_outputs)):
            rw.keep(node)  # too big to fold: never computed at compile time (a file's
            continue       # 8 GiB ``zeros`` must meet the model cap first)
        with np.errstate(all="ignore"):
            outs = _evaluate(node, [values[k] for k in keys], xp)
        if outs is None:
            rw.keep(node)
            continue
        values.update(((i, k), v) for k, v in enumerate(outs))
        if any(v.size > max_size or (i, k) in written for k, v in enumerate(outs)):
            rw.keep(node)
            continue
        for k, value in enumerate(outs):
            name = node.name if len(outs) == 1 else f"{node.name}_{k}"
            rw.replace(node, k, Entry(constant_node(name, value), 0))
        changed = True
    return rw.finish() if changed else graph
