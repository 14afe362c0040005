"""Memory planning: where every value of a program lives, for the backend that runs it.

The backend says how each node stores its outputs (a ``policy``, see ``MemoryPolicy``):

* ``"out"``: the node writes into buffers the plan provides (a lowered op, a GPU kernel);
  output 0 may take over the buffer of an input that dies at the node (``inplace`` lists
  which inputs allow it), and the node may ask for ``scratch`` buffers (used during the node
  only) and ``private`` ones (zero-filled, its own for the program's life);
* ``"view"``: its outputs may be views of its inputs (``Reshape`` lowered as a reshape): no
  buffer, and the inputs' buffers stay alive while the view lives;
* ``"compute"``: the op's ``compute`` returns arrays of its own, allocated per call; they may
  be views of the inputs when the op says so (``OpDef.views``).

and where graph outputs go: ``"fresh"`` (cpu: allocated per call, never shared, so an output
handed to the caller is never overwritten by a later call) or ``"arena"`` (gpu: planned like
any value but never reused, then copied out).

Rules: graph inputs (variables) and constants are not planned. A buffer returns to the pool
once every value in it, and every view of those values, has been read for the last time; a
node's outputs never take a buffer that one of its inputs still holds, except in place. A
value some op writes in place (an auxiliary state that BatchNorm updates in training, when it
is computed in the graph) keeps its buffer to the end. A free buffer is chosen best-fit (the
smallest big enough, else the largest free one, grown); buffers are byte sizes, viewed as any
shape and dtype.

``plan.output_copies`` lists the output positions an executor must copy before returning
(a variable, a constant, an output repeated; every output with ``"arena"``).

Example (the default policy: every op writes into buffers, elementwise ones in place):
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

from dataclasses import dataclass, field

import numpy as np

from ...base import MXNetError
from .fold import constant_value
from .rewrite import mutated_keys, value_nbytes

__all__ = ["plan_memory", "MemoryPlan", "MemoryPolicy", "NodeMemory"]


@dataclass
class NodeMemory:
    """How one node stores its outputs (see the module docstring)."""

    kind: str = "out"                 # "out" | "view" | "compute"
    inplace: tuple = ()               # inputs whose buffer output 0 may take over
    scratch: list = field(default_factory=list)  # [(shape, dtype)] used during the node
    private: list = field(default_factory=list)  # [(shape, dtype)] zeroed, kept


class MemoryPolicy:
    """A backend's answers to the planner: ``outputs`` ("fresh" or "arena") and
    ``node(graph, i) -> NodeMemory``. This default is a backend whose every op writes into
    buffers (elementwise ops in place over an input of their shape), that reshapes as views
    (an op whose array lowering is a ``"view"``) and hands out fresh outputs."""

    outputs = "fresh"

    def node(self, graph, i):
        node = graph.nodes[i]
        lowering = node.op.lowering_for("array")
        if lowering is not None and lowering.kind == "view":
            return NodeMemory("view")
        if not node.op.elementwise or node.num_outputs != 1:
            return NodeMemory("out")
        members = getattr(node.op, "members", None)
        ok = [j for j in range(len(node.inputs)) if members is None or [  # fused: read by
            n for n, m in enumerate(members) if ("in", j) in m.refs] == [0]]  # member 0 only
        return NodeMemory("out", tuple(ok))


class MemoryPlan:
    """Where each value of ``graph`` lives.

    ``buffers``: byte size of each buffer; ``storage``: value key ``(node index, output
    index)`` -> buffer index; ``inplace``: value key -> the dying input key whose buffer it
    takes; ``fresh``: output keys allocated per call; ``aliases``: value key -> keys whose
    memory it may share (views and compute results, which are not in buffers); ``computed``:
    keys an op's compute allocates per call; ``scratch``: node index -> ``[(buffer, shape,
    dtype)]``; ``private``: node index -> ``[(shape, dtype)]``; ``skipped``: outputs nobody
    reads, never written; ``unplanned``: keys of unknown size (allocated per call);
    ``output_copies``: output positions to copy before returning; ``ends``: value key -> the
    last node that needs its memory. ``naive_bytes`` is one buffer per value (and per scratch
    or private buffer);
    ``planned_bytes`` the buffers, the private buffers and the fresh outputs.
    """

    def __init__(self, graph, policy):
        self.graph, self.policy = graph, policy
        self.outputs_policy = policy.outputs
        self.buffers, self.storage, self.inplace = [], {}, {}
        self.fresh, self.unplanned, self.pinned = set(), set(), set()
        self.aliases, self.computed, self.skipped = {}, set(), set()
        self.scratch, self.private, self.ends, self.nodes = {}, {}, {}, {}
        self.output_copies = []
        self.naive_bytes = 0
        self._fresh_bytes = 0

    @property
    def private_bytes(self):
        return sum(_nbytes(s, t) for bufs in self.private.values() for s, t in bufs)

    @property
    def buffer_bytes(self):
        """Bytes preallocated once: the reused buffers and the private ones."""
        return sum(self.buffers) + self.private_bytes

    @property
    def planned_bytes(self):
        """Bytes of the buffers plus the outputs allocated per call."""
        return self.buffer_bytes + self._fresh_bytes

    def summary(self):
        """One line: values, buffers, bytes planned against one buffer per value."""
        saved = 1 - self.planned_bytes / self.naive_bytes if self.naive_bytes else 0.0
        views = f", {len(self.aliases)} views or computed" if self.aliases else ""
        return (f"{len(self.storage)} values in {len(self.buffers)} buffers, "
                f"{len(self.inplace)} in place, {len(self.fresh)} fresh outputs{views}: "
                f"{self.planned_bytes} bytes planned vs {self.naive_bytes} naive "
                f"({saved:.0%} saved)")

    def __repr__(self):
        return f"<MemoryPlan {self.summary()}>"

    def check(self):
        """MXNetError if two values ever share a buffer while both are needed (a value
        written in place over one that dies at its node excepted)."""
        spans = {}
        for key, buf in self.storage.items():
            spans.setdefault(buf, []).append((key[0], self.ends.get(key, key[0]), key))
        for i, bufs in self.scratch.items():
            for n, (buf, _, _) in enumerate(bufs):
                spans.setdefault(buf, []).append((i, i, ("scratch", i, n)))
        for buf, values in spans.items():
            values.sort(key=lambda v: (v[0], v[1]))
            for (_, end, key), (start, _, nxt) in zip(values, values[1:]):
                if start <= end and not (start == end and self.inplace.get(nxt) == key):
                    raise MXNetError(f"memory plan: value {nxt} is given buffer {buf}, still "
                                     f"holding live value {key}")


def _nbytes(shape, dtype):
    size = 1
    for d in shape:
        size *= d
    return size * np.dtype(dtype).itemsize


class _Planner:
    """One planning: classify values, find when their memory dies, assign buffers."""

    def __init__(self, graph, policy, inplace):
        self.graph, self.allow_inplace = graph, inplace
        self.plan = plan = MemoryPlan(graph, policy)
        plan.pinned = mutated_keys(graph)
        self.outputs = [graph.key(e) for e in graph.outputs]
        self.readers = {}
        for i, node in enumerate(graph.nodes):
            for e in node.inputs:
                self.readers.setdefault(graph.key(e), []).append(i)
        self.roots = {}       # value key -> keys whose memory it may share (itself included)
        self.slots = set()    # keys that get a buffer
        self.free_at = []     # buffer -> last node that needs it
        self.policy = policy

    def run(self):
        self._classify()
        self._lifetimes()
        self._assign()
        self._copies()
        return self.plan

    def _classify(self):
        graph, plan, out_set = self.graph, self.plan, set(self.outputs)
        for i, node in enumerate(graph.nodes):
            if node.is_variable or constant_value(node) is not None:
                self.roots[(i, 0)] = frozenset([(i, 0)])
                continue
            mem = plan.nodes[i] = self.policy.node(graph, i)
            inherited = frozenset().union(*(self.roots[graph.key(e)] for e in node.inputs))
            for k in range(node.num_outputs):
                key, size = (i, k), value_nbytes(graph, (i, k))
                plan.naive_bytes += size or 0
                self.roots[key] = frozenset([key])
                if key in out_set and plan.outputs_policy == "fresh":
                    plan.fresh.add(key)
                    plan._fresh_bytes += size or 0
                if mem.kind != "out":
                    if mem.kind == "view" or node.op.views:
                        self.roots[key] = inherited | {key}
                    plan.aliases[key] = self.roots[key]
                    if mem.kind == "compute":
                        plan.computed.add(key)
                elif key in plan.fresh:
                    pass
                elif not (k == 0 or key in out_set or key in self.readers):
                    plan.skipped.add(key)
                elif size is None:
                    plan.unplanned.add(key)
                else:
                    self.slots.add(key)
            if mem.private:
                plan.private[i] = [(tuple(s), np.dtype(t)) for s, t in mem.private]
                plan.naive_bytes += sum(_nbytes(s, t) for s, t in plan.private[i])

    def _lifetimes(self):
        plan, end_of_program = self.plan, len(self.graph.nodes)
        last = {key: max(nodes) for key, nodes in self.readers.items()}
        for key in self.outputs:
            last[key] = end_of_program
        for key in plan.pinned:
            last[key] = end_of_program
        for key, roots in self.roots.items():
            mine = last.get(key, key[0])
            for root in roots:
                plan.ends[root] = max(plan.ends.get(root, root[0]), mine)

    def _assign(self):
        plan, graph = self.plan, self.graph
        for i, node in enumerate(graph.nodes):
            mem = plan.nodes.get(i)
            if mem is None:
                continue
            for shape, dtype in mem.scratch:  # first: it dies here, so outputs cannot take it
                plan.naive_bytes += _nbytes(shape, dtype)
                buf = self._take(i, _nbytes(shape, dtype), i)
                plan.scratch.setdefault(i, []).append((buf, tuple(shape), np.dtype(dtype)))
            for k in range(node.num_outputs):
                key = (i, k)
                if key not in self.slots:
                    continue
                src = (self._inplace_source(i, node, mem)
                       if k == 0 and key not in plan.pinned else None)
                if src is not None:
                    buf = plan.storage[src]
                    plan.inplace[key] = src
                    self.free_at[buf] = max(self.free_at[buf], plan.ends[key])
                elif key in plan.pinned:
                    buf = self._new(value_nbytes(graph, key), plan.ends[key])
                else:
                    buf = self._take(i, value_nbytes(graph, key), plan.ends[key])
                plan.storage[key] = buf

    def _inplace_source(self, i, node, mem):
        """The key of an input dying here whose buffer output 0 may overwrite: read only
        where the node allows, through no other input (a view of it), else None."""
        if not self.allow_inplace:
            return None
        graph, plan = self.graph, self.plan
        keys = [graph.key(e) for e in node.inputs]
        allowed = set(mem.inplace)
        for j in sorted(allowed):
            src = keys[j]
            elsewhere = [n for n, key in enumerate(keys) if n not in allowed and key == src]
            aliased = [key for key in keys if key != src and src in self.roots[key]]
            if (src in plan.storage and src not in plan.pinned and plan.ends[src] == i
                    and graph.shapes.get(src) == graph.shapes.get((i, 0))
                    and graph.dtypes.get(src) == graph.dtypes.get((i, 0))
                    and not elsewhere and not aliased):
                return src
        return None

    def _new(self, size, end):
        self.plan.buffers.append(size)
        self.free_at.append(end)
        return len(self.plan.buffers) - 1

    def _take(self, i, size, end):
        """Best fit among the buffers free at node ``i`` (grown if need be), else a new one."""
        buffers = self.plan.buffers
        free = [b for b, last in enumerate(self.free_at) if last < i]
        fits = [b for b in free if buffers[b] >= size]
        if fits:
            buf = min(fits, key=lambda b: buffers[b])
        elif free:
            buf = max(free, key=lambda b: buffers[b])
            buffers[buf] = size
        else:
            return self._new(size, end)
        self.free_at[buf] = end
        return buf

    def _copies(self):
        plan, seen = self.plan, set()
        for pos, (e, key) in enumerate(zip(self.graph.outputs, self.outputs)):
            if (plan.outputs_policy == "arena" or e.node.is_variable
                    or constant_value(e.node) is not None or key in seen):
                plan.output_copies.append(pos)
            seen.add(key)


def plan_memory(graph, inplace=True, policy=None):
    """A MemoryPlan for ``graph`` under the backend's ``policy`` (a ``MemoryPolicy``; the
    default one when None). ``inplace=False`` never writes over an input."""
    return _Planner(graph, policy or MemoryPolicy(), inplace).run()
