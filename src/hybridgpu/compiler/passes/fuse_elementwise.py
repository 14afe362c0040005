"""Elementwise fusion: merge connected, convex groups of elementwise nodes into one node each.

A node can join a group when its op is ``elementwise`` with a CUDA expression
(``cuda_for(attrs)``), not ``random``/``mode_dependent``/``mutates_aux``/host-syncing, with one
output of known shape and dtype, and inputs of that dtype (no type changes inside a group).
Every member of a group has the same output shape and dtype; the group's inputs may broadcast
(a bias ``(4,)`` into ``(3, 4)``). Groups grow in topological order: a node joins the groups of
the inputs it reads, unless that would put an outside node (or group) on a path from the group
back into it: a group must be **convex**, so the fused node can run at one point of the
program.

Each group of two or more nodes becomes a node of a ``FusedOp`` (``_fused``), built at compile
time: its ``compute`` runs the members' computes in order (so every executor, the reference
interpreter included, runs it unchanged), its ``cuda`` is the members' C expressions composed
into one (single-output groups) and ``cuda_body`` the same as statements
(``T t0 = ...; out0 = t1;``, any number of outputs), for the GPU backend's kernel. Its outputs
are the members' values read outside the group. It prints its members::

    %5 = _fused(%3, %4) members=[t0 = broadcast_add(in0, in1); t1 = relu(t0)] : (1, 2) float32

A group holds at most ``MAX_GROUP_MEMBERS`` nodes (a longer chain is cut into several
groups), so the generated kernel stays small: its body is one statement per member, and with
the cap every kernel the tests generate compiles for sm_90 without register spills.

Returns a new Graph (the same Graph when nothing fuses); the input graph is not changed.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x, b = mx.sym.var("x"), mx.sym.var("b")
    >>> g = Graph((mx.sym.relu(mx.sym.broadcast_add(x, b)) * 2)._outputs)
    >>> infer_shapes(g, {"x": (2, 3), "b": (3,)}); infer_types(g, {"x": "float32"})
    >>> fused = fuse_elementwise(g)
    >>> print(fused)
    %0 = var x : (2, 3) float32
    %1 = var b : (3,) float32
    %2 = _fused(%0, %1) members=[t0 = broadcast_add(in0, in1); t1 = relu(t0); t2 = _mul_scalar(t1, scalar=2)] : (2, 3) float32
    return %2
    >>> print(fused.nodes[2].op.cuda)
    (((in0 + in1) > (T)0 ? (in0 + in1) : (T)0)) * ((T)(2))
"""  # noqa: E501

from __future__ import annotations

import heapq
from typing import NamedTuple

from ...base import MXNetError
from ...graph import Entry, Node
from ...ops import OpDef
from ...ops.rules import known
from .cuda_expr import compose
from .rewrite import Rewriter, readers

__all__ = ["fuse_elementwise", "FusedOp", "Member", "is_fusible", "MAX_GROUP_MEMBERS"]

#: The most nodes one fused group (one generated kernel) takes.
MAX_GROUP_MEMBERS = 64


class Member(NamedTuple):
    """One member of a fused group: ``refs`` name its arguments, ``("in", k)`` for the fused
    node's input k, ``("t", j)`` for member j's value."""

    op: OpDef
    attrs: dict
    refs: tuple
    name: str
    given_attrs: dict


class FusedOp(OpDef):
    """The op of one fused group: ``members`` (Members, in order) and ``outputs`` (indices of
    the members whose values the node returns)."""

    def __init__(self, members, outputs):
        self.members, self.outputs = tuple(members), tuple(outputs)
        self._composed = None  # (cuda, cuda_body), composed when a GPU backend first asks
        count = 1 + max((k for m in members for kind, k in m.refs if kind == "in"), default=-1)
        super().__init__("_fused", compute=self._compute, inputs=tuple(f"in{k}" for k in
                                                                         range(count)),
                         infer_shape=self._infer_shape, infer_type=self._infer_type,
                         num_outputs=len(outputs), elementwise=True,
                         doc="Fused elementwise group (built by the compiler).")

    @property
    def cuda(self):
        """The group's CUDA expression (None when it has several outputs or is too long)."""
        if self._composed is None:
            self._composed = compose(self.members, self.outputs)
        return self._composed[0]

    @cuda.setter
    def cuda(self, value):  # OpDef.__init__ sets None: the expression is composed on demand
        pass

    @property
    def cuda_body(self):
        """The group's CUDA statements (any number of outputs)."""
        if self._composed is None:
            self._composed = compose(self.members, self.outputs)
        return self._composed[1]

    def _chain(self, inputs, apply):
        temps = []
        for m in self.members:
            temps.append(apply(m, [inputs[k] if kind == "in" else temps[k]
                                   for kind, k in m.refs]))
        return [temps[j] for j in self.outputs]

    def _compute(self, xp, *arrays):
        def run(m, args):
            try:
                return m.op.compute(xp, *args, **m.attrs)
            except (MXNetError, ValueError, TypeError, IndexError) as err:
                raise MXNetError(f"fused member {m.name!r} ({m.op.name}): {err}") from None

        outs = self._chain(arrays, run)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _infer_shape(self, attrs, in_shapes):
        def rule(m, args):
            return None if None in args else m.op.infer_shape(m.attrs, args)[1][0]

        return list(in_shapes), self._chain(in_shapes, rule)

    def _infer_type(self, attrs, in_types):
        def rule(m, args):
            return None if None in args else m.op.infer_type(m.attrs, args)[1][0]

        return list(in_types), self._chain(in_types, rule)

    def describe(self):
        """The node's printed attributes: its members, and its outputs when several."""
        lines = []
        for j, m in enumerate(self.members):
            args = [f"{'in' if kind == 'in' else 't'}{k}" for kind, k in m.refs]
            args += [f"{k}={v}" for k, v in m.given_attrs.items()]
            lines.append(f"t{j} = {m.op.name}({', '.join(args)})")
        text = {"members": f"[{'; '.join(lines)}]"}
        if len(self.outputs) > 1:
            text["outputs"] = f"({', '.join(f't{j}' for j in self.outputs)})"
        return text


def is_fusible(graph, i):
    """True when node ``i`` may be a member of a fused group."""
    node = graph.nodes[i]
    if node.is_variable or node.num_outputs != 1:
        return False
    op = node.op
    if not op.elementwise or op.random or op.mode_dependent or op.mutates_aux:
        return False
    if op.needs_host_sync(node.attrs) or op.cuda_for(node.attrs) is None:
        return False
    dtype = graph.dtypes.get((i, 0))
    if dtype is None or not known(graph.shapes.get((i, 0))):
        return False
    return all(graph.dtypes.get(graph.key(e)) == dtype for e in node.inputs)


def _creates_cycle(graph, gid, members, groups, i):
    """True when merging node ``i`` with ``groups`` puts an outside unit (node or group) on a
    path between two merged nodes (a backward search from the outside inputs)."""
    inside = set(groups)
    merged = [i, *(m for g in groups for m in members[g])]
    low = min(merged)  # nothing before the earliest merged node descends from it
    # one group is convex already and precedes ``i``: only a path into ``i`` can close a
    # cycle, so the search starts from ``i``'s inputs alone (linear in long chains)
    starts = [i] if len(groups) == 1 else merged
    stack = [graph.index[id(e.node)] for m in starts for e in graph.nodes[m].inputs]
    stack = [j for j in stack if gid.get(j) not in inside]
    seen = set()
    while stack:
        j = stack.pop()
        g = gid.get(j)
        unit = ("g", g) if g is not None else ("n", j)
        if unit in seen:
            continue
        seen.add(unit)
        nodes = members[g] if g is not None else [j]
        if nodes[-1] < low:
            continue
        for m in nodes:
            for e in graph.nodes[m].inputs:
                p = graph.index[id(e.node)]
                if gid.get(p) in inside:
                    return True
                stack.append(p)
    return False


def _partition(graph):
    """Groups (ascending node indices, two or more each) of fusible nodes."""
    gid, members, signature = {}, {}, {}
    for i, node in enumerate(graph.nodes):
        if not is_fusible(graph, i):
            continue
        mine = (graph.shapes[(i, 0)], graph.dtypes[(i, 0)])
        producers = []
        for e in node.inputs:
            g = gid.get(graph.index[id(e.node)])
            if g is not None and signature[g] == mine and g not in producers:
                producers.append(g)
        producers.sort(key=lambda g: -len(members[g]))
        options = ([producers] if len(producers) > 1 else []) + [[g] for g in producers]
        options = [o for o in options
                   if sum(len(members[g]) for g in o) < MAX_GROUP_MEMBERS]
        chosen = next((o for o in options
                       if not _creates_cycle(graph, gid, members, o, i)), [])
        if not chosen:
            gid[i], members[i], signature[i] = i, [i], mine
            continue
        keep = chosen[0]  # the largest: relabel the others into it
        for g in chosen[1:]:
            for m in members[g]:
                gid[m] = keep
            members[keep].extend(members.pop(g))
            del signature[g]
        members[keep].append(i)  # the latest node so far: the list stays sorted
        if len(chosen) > 1:
            members[keep].sort()
        gid[i] = keep
    return [m for m in members.values() if len(m) > 1]


def _unit_order(graph, groups):
    """Units (("n", node index) or ("g", group index)) in an order where every unit comes
    after the units it reads: Kahn's algorithm on the graph with each group contracted."""
    gid = {m: k for k, g in enumerate(groups) for m in g}

    def unit(j):
        return ("g", gid[j]) if j in gid else ("n", j)

    deps, users, first = {}, {}, {}
    for j, node in enumerate(graph.nodes):
        u = unit(j)
        deps.setdefault(u, set())
        first.setdefault(u, j)
        for e in node.inputs:
            v = unit(graph.index[id(e.node)])
            if v != u and v not in deps[u]:
                deps[u].add(v)
                users.setdefault(v, []).append(u)
    count = {u: len(d) for u, d in deps.items()}
    ready = [(first[u], u) for u, c in count.items() if c == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for w in users.get(u, ()):
            count[w] -= 1
            if count[w] == 0:
                heapq.heappush(ready, (first[w], w))
    if len(order) != len(deps):
        raise MXNetError("fuse_elementwise: fused groups form a cycle (a bug in the pass)")
    return order


def _fuse(graph, group, rw, readers):
    """Replace the members of ``group`` by one fused node."""
    inside = {m: pos for pos, m in enumerate(group)}
    inputs, slot, specs = [], {}, []
    for m in group:
        node, refs = graph.nodes[m], []
        for e in node.inputs:
            j = graph.index[id(e.node)]
            if j in inside:
                refs.append(("t", inside[j]))
                continue
            key = graph.key(e)
            if key not in slot:
                slot[key] = len(inputs)
                inputs.append(rw.entry(e))
            refs.append(("in", slot[key]))
        specs.append(Member(node.op, node.attrs, tuple(refs), node.name, node.given_attrs))
    outs = [pos for pos, m in enumerate(group)
            if any(r is None or r not in inside for r in readers.get((m, 0), ()))]
    op = FusedOp(specs, outs)
    fused = Node(op, f"{graph.nodes[group[-1]].name}_fused", {}, inputs,
                 given_attrs=op.describe())
    for k, pos in enumerate(outs):
        rw.replace(graph.nodes[group[pos]], 0, Entry(fused, k))


def fuse_elementwise(graph):
    """``graph`` with its convex elementwise groups fused (see the module docstring)."""
    groups = _partition(graph)
    if not groups:
        return graph
    value_readers = readers(graph)
    rw = Rewriter(graph)
    for kind, k in _unit_order(graph, groups):
        if kind == "g":
            _fuse(graph, groups[k], rw, value_readers)
        elif not graph.nodes[k].is_variable:
            rw.keep(graph.nodes[k])
    return rw.finish()
