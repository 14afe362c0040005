"""Memory planning: give every value a buffer, reusing a buffer once the value in it has been
read for the last time (liveness in program order, one pass).

Rules:

* Graph inputs (variables) and constants are not planned: they arrive with the call or live
  in the constant node.
* Graph outputs are ``fresh``: allocated anew on every call, never shared, so an output handed
  to the caller is never overwritten by a later call.
* A value some op writes in place (an auxiliary state that BatchNorm updates in training,
  when it is computed in the graph) gets a buffer of its own that is never reused.
* A value is allocated before the node's inputs are released, so a node never writes into a
  buffer it reads, except **in place**: an ``elementwise`` node may take over the buffer of an
  input of its shape and dtype that dies at that node (for a fused node, only an input that
  its first member alone reads). ``plan.inplace`` lists those; a backend may ignore them.
* A free buffer is chosen best-fit (the smallest that is big enough, else the largest free one,
  grown); buffers are byte sizes, viewed as any shape and dtype.

``plan.output_copies`` lists the output positions an executor must copy before returning
(a variable, a constant, or an output repeated), so callers always get arrays of their own.

``plan_memory`` returns a ``MemoryPlan``; the graph is not changed.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph(mx.sym.sum(mx.sym.exp(mx.sym.relu(x) * 2))._outputs)
    >>> infer_shapes(g, {"x": (256,)}); infer_types(g, {"x": "float32"})
    >>> plan = plan_memory(g)
    >>> plan.naive_bytes, plan.planned_bytes, plan.storage
    (3076, 1028, {(1, 0): 0, (2, 0): 0, (3, 0): 0})
    >>> plan.inplace  # the product over relu's value, exp over the product
    {(2, 0): (1, 0), (3, 0): (2, 0)}
"""

from __future__ import annotations

from ...base import MXNetError
from .fold import constant_value
from .rewrite import mutated_keys, value_nbytes

__all__ = ["plan_memory", "MemoryPlan"]


class MemoryPlan:
    """Where each value of ``graph`` lives.

    ``buffers``: byte size of each buffer; ``storage``: value key ``(node index, output
    index)`` -> buffer index; ``fresh``: output keys allocated per call; ``inplace``: value key
    -> the dying input key whose buffer it takes; ``unplanned``: keys of unknown size (a backend
    allocates them per call); ``output_copies``: output positions to copy before returning.
    ``naive_bytes`` is one buffer per value; ``planned_bytes`` the buffers plus fresh outputs.
    """

    def __init__(self, graph):
        self.graph = graph
        self.buffers, self.storage, self.inplace = [], {}, {}
        self.fresh, self.unplanned, self.pinned = set(), set(), set()
        self.output_copies = []
        self.naive_bytes = 0
        self._fresh_bytes = 0

    @property
    def planned_bytes(self):
        """Bytes of the reused buffers plus the outputs allocated per call."""
        return sum(self.buffers) + self._fresh_bytes

    def summary(self):
        """One line: values, buffers, bytes planned against one buffer per value."""
        saved = 1 - self.planned_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"{len(self.storage)} values in {len(self.buffers)} buffers, "
                f"{len(self.inplace)} in place, {len(self.fresh)} fresh outputs: "
                f"{self.planned_bytes} bytes planned vs {self.naive_bytes} naive "
                f"({saved:.0%} saved)")

    def __repr__(self):
        return f"<MemoryPlan {self.summary()}>"

    def check(self):
        """Simulate the program; MXNetError if two live values ever share a buffer."""
        graph, live = self.graph, {}
        for i, node in enumerate(graph.nodes):
            for k in range(node.num_outputs):
                key = (i, k)
                buf = self.storage.get(key)
                if buf is None:
                    continue
                held = live.get(buf)
                if held is not None and self.inplace.get(key) != held:
                    raise MXNetError(f"memory plan: value {key} of node {node.name!r} is "
                                     f"given buffer {buf}, still holding live value {held}")
                live[buf] = key
            for key in _dying(graph, i, self._last):
                if live.get(self.storage.get(key)) == key:
                    del live[self.storage[key]]


def _last_readers(graph):
    last = {}
    for i, node in enumerate(graph.nodes):
        for e in node.inputs:
            last[graph.key(e)] = i
    return last


def _dying(graph, i, last):
    """Keys whose last reader is node ``i``, and outputs of ``i`` that nothing reads."""
    keys = [graph.key(e) for e in graph.nodes[i].inputs if last[graph.key(e)] == i]
    keys += [(i, k) for k in range(graph.nodes[i].num_outputs) if (i, k) not in last]
    return keys


def _take(plan, free, size):
    """A free buffer for ``size`` bytes (best fit, else the largest grown), or a new one."""
    fits = [b for b in free if plan.buffers[b] >= size]
    if fits:
        buf = min(fits, key=lambda b: plan.buffers[b])
    elif free:
        buf = max(free, key=lambda b: plan.buffers[b])
        plan.buffers[buf] = size
    else:
        plan.buffers.append(size)
        return len(plan.buffers) - 1
    free.remove(buf)
    return buf


def _inplace_source(plan, i, key, owner, outputs):
    """The key of an input of node ``i`` whose buffer value ``key`` may take over."""
    graph, node = plan.graph, plan.graph.nodes[i]
    if not node.op.elementwise or node.num_outputs != 1:
        return None
    members = getattr(node.op, "members", None)
    for slot, e in enumerate(node.inputs):
        src = graph.key(e)
        buf = plan.storage.get(src)
        if (buf is None or owner.get(buf) != src or plan._last[src] != i or src in outputs
                or src in plan.pinned):
            continue
        if (graph.shapes.get(src) != graph.shapes.get(key)
                or graph.dtypes.get(src) != graph.dtypes.get(key)):
            continue
        if members is not None:  # fused: only its first member may read the input
            readers = [j for j, m in enumerate(members) if ("in", slot) in m.refs]
            if readers != [0]:
                continue
        return src
    return None


def _allocate(plan, i, key, size, free, owner, outputs, inplace):
    src = _inplace_source(plan, i, key, owner, outputs) if inplace else None
    if key in plan.pinned:
        plan.buffers.append(size)
        buf = len(plan.buffers) - 1
    elif src is not None:
        buf = plan.storage[src]
        plan.inplace[key] = src
    else:
        buf = _take(plan, free, size)
    plan.storage[key] = buf
    owner[buf] = key


def plan_memory(graph, inplace=True):
    """A MemoryPlan for ``graph`` (see the module docstring)."""
    plan = MemoryPlan(graph)
    plan._last = _last_readers(graph)
    plan.pinned = mutated_keys(graph)
    outputs = [graph.key(e) for e in graph.outputs]
    out_set = set(outputs)
    free, owner = [], {}
    for i, node in enumerate(graph.nodes):
        if node.is_variable or constant_value(node) is not None:
            continue
        for k in range(node.num_outputs):
            key, size = (i, k), value_nbytes(graph, (i, k))
            plan.naive_bytes += size or 0
            if key in out_set:
                plan.fresh.add(key)
                plan._fresh_bytes += size or 0
            elif size is None:
                plan.unplanned.add(key)
            else:
                _allocate(plan, i, key, size, free, owner, out_set, inplace)
        for key in _dying(graph, i, plan._last):
            buf = plan.storage.get(key)
            if buf is not None and owner.get(buf) == key and key not in plan.pinned:
                free.append(buf)
                del owner[buf]
    seen = set()
    for pos, (e, key) in enumerate(zip(graph.outputs, outputs)):
        if e.node.is_variable or constant_value(e.node) is not None or key in seen:
            plan.output_copies.append(pos)
        seen.add(key)
    return plan
