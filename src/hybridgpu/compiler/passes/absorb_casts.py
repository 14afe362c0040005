"""Absorb casts (gpu): a ``Cast`` between float16 and float32 that only feeds one fused group,
or that alone reads a fused group's one output, becomes a member of that group.

``fuse_elementwise`` keeps every group in one dtype, so float16 code that computes in float32
on the way (BatchNorm with float32 statistics after ``net.cast('float16')``, decomposed) is
Cast, group, Cast: three kernels with float32 temporaries in memory. On the gpu a group
computes in ``float`` whether its values are float16 or float32, so the casts can run inside
the group's kernel: the float16 input is loaded into float (exactly what the Cast to float32
computes), and the Cast to float16 rounds in the kernel (``Cast``'s CUDA expression for
float16 rounds to half precision and back), so results are the graph's bit for bit. The group's
compute (members run in order) is unchanged, so the interpreter runs it as before.

Only the gpu backend runs this pass (``compiler.pipeline.PASSES``): the cpu program runs
groups as NumPy calls of one dtype. A group keeps at most ``MAX_GROUP_MEMBERS`` members.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> from hybridgpu.compiler.passes import fuse_elementwise
    >>> x = mx.sym.var("x")
    >>> y = mx.sym.Cast(mx.sym.exp(mx.sym.Cast(x, dtype="float32") * 2) + 1, dtype="float16")
    >>> g = Graph(y._outputs)
    >>> infer_shapes(g, {"x": (4,)}); infer_types(g, {"x": "float16"})
    >>> print(absorb_casts(fuse_elementwise(g)))
    %0 = var x : (4,) float16
    %1 = _fused(%0) members=[t0 = Cast(in0, dtype=float32); t1 = _mul_scalar(t0, scalar=2); t2 = exp(t1); t3 = _plus_scalar(t2, scalar=1); t4 = Cast(t3, dtype=float16)] : (4,) float16
    return %1
"""  # noqa: E501

from __future__ import annotations

import numpy as np

from ...graph import Entry, Node
from .fuse_elementwise import MAX_GROUP_MEMBERS, FusedOp, Member
from .rewrite import Rewriter, readers

__all__ = ["absorb_casts"]

_FLOAT_PAIR = {"float16", "float32"}


def _float_cast(graph, j):
    """True when node ``j`` is a Cast between float16 and float32 (either way)."""
    node = graph.nodes[j]
    if node.is_variable or node.op.name != "Cast" or len(node.inputs) != 1:
        return False
    src, dst = _dtype(graph, graph.key(node.inputs[0])), _dtype(graph, (j, 0))
    return {src, dst} == _FLOAT_PAIR


def _dtype(graph, key):
    """The dtype name of a value (None when unknown)."""
    dtype = graph.dtypes.get(key)
    return None if dtype is None else np.dtype(dtype).name


def _in_casts(graph, i, value_readers, absorbed):
    """Input slots of fused node ``i`` fed by a float Cast that only ``i`` reads and that no
    earlier group took as its output cast (``absorbed``)."""
    slots = []
    for k, e in enumerate(graph.nodes[i].inputs):
        j = graph.index[id(e.node)]
        if (_float_cast(graph, j) and id(e.node) not in absorbed
                and set(value_readers.get((j, 0), ())) == {i}):
            slots.append(k)
    return slots


def _out_cast(graph, i, value_readers):
    """The float Cast that alone reads fused node ``i``'s one output, or None."""
    node = graph.nodes[i]
    users = value_readers.get((i, 0), ())
    if node.num_outputs != 1 or len(users) != 1 or users[0] is None:
        return None
    return users[0] if _float_cast(graph, users[0]) else None


def _members(node, casts, slots):
    """The group's members with the absorbed input casts first: ``(members, inputs)``
    where ``inputs`` are the old Entries the new node reads, in slot order."""
    op, inputs, slot_of = node.op, [], {}

    def slot(entry):
        key = (id(entry.node), entry.index)
        if key not in slot_of:
            slot_of[key] = len(inputs)
            inputs.append(entry)
        return slot_of[key]

    members, cast_at = [], {}
    for k in slots:
        cast = casts[k]
        cast_at[k] = len(members)
        members.append(Member(cast.op, cast.attrs, (("in", slot(cast.inputs[0])),), cast.name,
                              cast.given_attrs))
    shift = len(members)
    for m in op.members:
        refs = tuple(("t", cast_at[k]) if kind == "in" and k in cast_at
                     else ("in", slot(node.inputs[k])) if kind == "in" else ("t", k + shift)
                     for kind, k in m.refs)
        members.append(m._replace(refs=refs))
    return members, inputs, shift


def _absorb(graph, i, value_readers, rw, absorbed):
    """Rebuild fused node ``i`` with its absorbable casts; returns the absorbed nodes."""
    node = graph.nodes[i]
    slots = _in_casts(graph, i, value_readers, absorbed)
    out = _out_cast(graph, i, value_readers)
    extra = len(slots) + (out is not None)
    if not extra or len(node.op.members) + extra > MAX_GROUP_MEMBERS:
        return []
    casts = {k: graph.nodes[graph.index[id(node.inputs[k].node)]] for k in slots}
    members, inputs, shift = _members(node, casts, slots)
    outputs = [j + shift for j in node.op.outputs]
    if out is not None:
        cast = graph.nodes[out]
        members.append(Member(cast.op, cast.attrs, (("t", outputs[0]),), cast.name,
                              cast.given_attrs))
        outputs = [len(members) - 1]
    op = FusedOp(members, outputs)
    fused = Node(op, node.name, {}, [rw.entry(e) for e in inputs], given_attrs=op.describe())
    if out is not None:
        rw.replace(graph.nodes[out], 0, Entry(fused, 0))
    else:
        for k in range(node.num_outputs):
            rw.replace(node, k, Entry(fused, k))
    return [*casts.values(), *([graph.nodes[out]] if out is not None else [])]


def absorb_casts(graph):
    """``graph`` with float16/float32 Casts moved into the fused groups they touch (see the
    module docstring); the same Graph when there are none."""
    value_readers = readers(graph)
    rw, absorbed = Rewriter(graph), set()
    for i, node in enumerate(graph.nodes):
        if node.is_variable or id(node) in absorbed:
            continue
        if isinstance(node.op, FusedOp) and _dtype(graph, (i, 0)) in _FLOAT_PAIR:
            taken = _absorb(graph, i, value_readers, rw, absorbed)
            if taken:
                absorbed.update(id(n) for n in taken)
                continue
        rw.keep(node)
    return rw.finish() if absorbed else graph
