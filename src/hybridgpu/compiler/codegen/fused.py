"""The lowering of a fused elementwise node (``compiler/passes/fuse_elementwise.py``): its
members' own lowerings, run in order into the node's output buffers and reused scratch
buffers, in place where each member allows it. A member without a usable lowering calls its
op's compute (a fresh array, copied into the output it feeds). Nothing here names an op.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.compiler.passes import fuse_elementwise
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> from hybridgpu.compiler.codegen.site import Site, lowering_of
    >>> x = mx.sym.var("x")
    >>> g = Graph((mx.sym.relu(x) * 2)._outputs)
    >>> infer_shapes(g, {"x": (3,)}); infer_types(g, {"x": "float32"})
    >>> node = fuse_elementwise(g).nodes[-1]
    >>> site = Site(node, [(3,)], ["float32"], [(3,)], ["float32"], is_train=False)
    >>> site.ins, site.outs = ["x"], ["y"]
    >>> lowering_of(site) is FUSED
    True
    >>> [line for line in FUSED.emit(site) if not line.startswith("#")]
    ['np.maximum(x, f32_0, out=y)', 'np.multiply(y, f32_2, out=y)']
"""

from __future__ import annotations

import numpy as np

from ...ops.lowering import Lowering
from ...safe_text import python_comment
from .site import Site, lowering_of

__all__ = ["FUSED"]


class _MemberNode:
    """What a member's Site needs of a node."""

    def __init__(self, member):
        self.op, self.attrs, self.name = member.op, member.attrs, member.name


class _FusedPlan:
    """Where each member of a fused node writes: the buffer of a node output (``("out", k)``),
    a scratch buffer (``("scratch", s)``), or nowhere (``None``: no rule, so its compute
    returns a fresh array). Members run in order; a member may overwrite a dying input in
    place, and a buffer of a later output member is borrowed when what is put there dies
    before that member writes it (or is what it overwrites in place)."""

    def __init__(self, site):
        op = site.op
        self.members, shape, dtype = op.members, site.out_shapes[0], site.out_dtypes[0]
        self.output_of = {j: k for k, j in enumerate(op.outputs) if site.used[k]}
        self.member_of = {k: j for j, k in self.output_of.items()}
        n = len(self.members)
        self.last = {j: n if j in self.output_of else -1 for j in range(n)}
        for j, m in enumerate(self.members):
            for kind, i in m.refs:
                if kind == "t" and i not in self.output_of:
                    self.last[i] = j
        self.sites, self.rules = [], []
        for m in self.members:
            ins = [site.in_shapes[i] if kind == "in" else shape for kind, i in m.refs]
            sub = Site(_MemberNode(m), ins, [dtype] * len(ins), [shape], [dtype],
                       site.is_train, site.module)
            rule = lowering_of(sub)
            self.sites.append(sub)
            self.rules.append(rule if self._usable(rule, sub) else None)
        self.where, self.scratch, self.member_scratch = {}, 0, {}
        self._place()

    def _usable(self, rule, sub):
        """A member lowering writes into one buffer, its scratch of the group's shape."""
        if rule is None or rule.kind != "out" or rule.private_buffers(sub):
            return False
        want = (sub.out_shapes[0], sub.out_dtypes[0])
        return all((tuple(s), np.dtype(t)) == want for s, t in rule.scratch_buffers(sub))

    def _place(self):
        busy = {}
        for j in range(len(self.members)):
            if self.rules[j] is None:
                self.where[j] = None
                continue
            if j in self.output_of:
                where = ("out", self.output_of[j])
            else:
                where = self._inplace(j) or self._free(j, busy)
            self.where[j] = where
            busy[where] = self.last[j]
            self._scratch_of(j, busy)

    def _scratch_of(self, j, busy):
        """Scratch buffers member ``j``'s lowering asks for: busy during ``j`` only."""
        taken = []
        for _ in self.rules[j].scratch_buffers(self.sites[j]):
            free = [s for s in range(self.scratch)
                    if busy.get(("scratch", s), -1) < j and s not in taken]
            if free:
                s = free[0]
            else:
                s, self.scratch = self.scratch, self.scratch + 1
            busy[("scratch", s)] = j
            taken.append(s)
        self.member_scratch[j] = taken

    def _takes(self, j, i):
        """True when member ``j`` may overwrite member ``i``'s value in place."""
        rule = self.rules[j]
        if rule is None:  # its compute reads everything before the copy out
            return True
        allowed = rule.inplace_inputs(self.sites[j])
        return all(p in allowed for p, ref in enumerate(self.members[j].refs) if ref == ("t", i))

    def _fits(self, where, j):
        """Member ``j``'s value may live in ``where`` (an output buffer must be free again,
        or overwritten in place, when its own member writes it)."""
        if where[0] != "out":
            return True
        owner = self.member_of[where[1]]
        return owner > j and (self.last[j] < owner or (
            self.last[j] == owner and self._takes(owner, j)))

    def _inplace(self, j):
        for p in self.rules[j].inplace_inputs(self.sites[j]):
            kind, i = self.members[j].refs[p]
            where = self.where.get(i) if kind == "t" else None
            if where is not None and self.last[i] == j and self._takes(j, i) and self._fits(
                    where, j):
                return where
        return None

    def _free(self, j, busy):
        for k in sorted(self.output_of.values()):
            where = ("out", k)
            if busy.get(where, -1) < j and self._fits(where, j):
                return where
        for s in range(self.scratch):
            if busy.get(("scratch", s), -1) < j:
                return ("scratch", s)
        self.scratch += 1
        return ("scratch", self.scratch - 1)

    def first_write(self, k):
        """The member that first writes output ``k``'s buffer."""
        return min(j for j in range(len(self.members)) if self.where[j] == ("out", k) or (
            self.where[j] is None and self.output_of.get(j) == k))


def _fused_plan(site):
    plan = site.__dict__.get("_fused_plan")
    if plan is None:
        plan = site._fused_plan = _FusedPlan(site)
    return plan


def _fused_when(site):
    dtypes = {*site.in_dtypes, *site.out_dtypes}
    if len(dtypes) != 1 or not hasattr(site.op, "members"):
        return False
    return any(rule is not None for rule in _fused_plan(site).rules)


def _fused_inplace(site):
    """Inputs that output 0 may overwrite: read no later than the member that first writes
    it, and there only where that member reads before it writes."""
    plan = _fused_plan(site)
    if 0 not in plan.output_of.values():
        return ()
    j0 = plan.first_write(0)
    ok = []
    for k in range(len(site.in_shapes)):
        if any(("in", k) in m.refs for m in plan.members[j0 + 1:]):
            continue
        rule = plan.rules[j0]
        places = [p for p, ref in enumerate(plan.members[j0].refs) if ref == ("in", k)]
        if rule is None or all(p in rule.inplace_inputs(plan.sites[j0]) for p in places):
            ok.append(k)
    return tuple(ok)


def _fused_emit(site):
    plan, lines, names = _fused_plan(site), [], {}
    for j, m in enumerate(plan.members):
        sub, where = plan.sites[j], plan.where[j]
        sub.ins = [site.ins[i] if kind == "in" else names[i] for kind, i in m.refs]
        refs = ", ".join([f"{'in' if kind == 'in' else 't'}{i}" for kind, i in m.refs]
                         + [f"{k}={v}" for k, v in m.given_attrs.items()])
        lines.append(python_comment(f"t{j} = {m.op.name}({refs})  ({m.name})"))
        if where is None:
            name = site.temp(m.name)
            lines.append(f"{name} = {site.bind(f'{m.name}_compute', m.op, m.attrs)}"
                         f"({', '.join(sub.ins)})")
            if j in plan.output_of:
                lines.append(f"{site.xp}.copyto({site.outs[plan.output_of[j]]}, {name})")
        else:
            name = site.outs[where[1]] if where[0] == "out" else site.scratch[where[1]]
            sub.outs = [name]
            sub.scratch = [site.scratch[s] for s in plan.member_scratch.get(j, ())]
            lines += plan.rules[j].emit(sub)
        names[j] = name
    return lines


def _fused_scratch(site):
    return [(site.out_shapes[0], site.out_dtypes[0])] * _fused_plan(site).scratch


#: The lowering of every fused node (``site.lowering_of`` hands it out for ops with members).
FUSED = Lowering(_fused_emit, _fused_when, inplace=_fused_inplace, scratch=_fused_scratch)
