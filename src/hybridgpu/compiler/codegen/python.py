"""The CPU code generator: a Graph becomes the text of one straight-line Python function over
NumPy, which ``executor.cpu.CpuExecutable`` compiles once and replays.

``generate(graph, plan, is_train)`` returns a ``Program``: the source (module-level constants,
preallocated buffers and views, then ``def forward(inputs, rng)``), the objects the source
names but does not create (``np``, ``bind``, ``owned`` and the OpDefs ``op_<Name>``), and a map
from source lines to graph nodes (for error messages). ``build_cpu_executable(graph, plan, ctx,
is_train)`` is the hook ``compiler.pipeline.compile_graph`` calls for cpu contexts.

How values are stored:

* an op with a lowering rule (``lowering_cpu.LOWERINGS``) writes with ``out=`` into a
  preallocated buffer; buffers are reused once every value (and view) in them is dead, and an
  elementwise op may overwrite a dying input in place. Graph outputs are the exception: they are
  written into arrays allocated fresh each call, so no later call overwrites a result.
* any other op calls its ``OpDef.compute`` (``bind`` fixes ``np`` and the attributes); its
  results may be views of its inputs, so the inputs' buffers stay alive while they live, and a
  graph output that may share memory with a buffer, an input or another output is copied
  (``owned``).

Names follow the graph: a node's output 0 is named after the node (``dense0_fwd``), other
outputs ``<node>_<output name>``, made safe identifiers and unique; each node's lines follow a
comment that is its line in ``print(graph)``.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph(mx.sym.relu(mx.sym.negative(x, name="neg"), name="act")._outputs)
    >>> infer_shapes(g, {"x": (2,)}); infer_types(g, {"x": "float32"})
    >>> exe = build_cpu_executable(g, None, mx.cpu(), is_train=False)
    >>> exe({"x": np.array([-1.0, 3.0], dtype=np.float32)})
    [array([1., 0.], dtype=float32)]
    >>> print(exe.source.split("def forward")[1])  # doctest: +NORMALIZE_WHITESPACE
    (inputs, rng):
        x = inputs['x']  # %0 : (2,) float32
        # %1 = negative(%0) : (2,) float32
        np.negative(x, out=neg)
        # %2 = relu(%1) : (2,) float32
        act = np.empty((2,), np.float32)
        np.maximum(neg, f32_0, out=act)
        return [act]
"""

from __future__ import annotations

import builtins
import functools
import keyword
import math
from dataclasses import dataclass, field

import numpy as np

from ...graph.printer import format_node
from ...limits import check_elements
from ...ops.rules import known
from ...safe_text import display, identifier, python_comment, python_string
from .lowering_cpu import HELPERS, Site, const_name, rule_for

__all__ = ["Program", "generate", "build_cpu_executable", "Namespace"]

_BUILDER_NAMES = ("np", "bind", "owned", "single", "inputs", "rng", "forward", *HELPERS)
#: A graph output that may share memory with more than this many arrays is copied outright.
_MAX_OWNED_CHECKS = 8


@dataclass
class Program:
    """Generated source and what it needs; ``line_nodes[line]`` is the graph node index of a
    line of the source (1-based lines, as tracebacks count), ``lowered``/``fallback`` name
    the nodes that became NumPy calls and those that call their op's compute."""

    source: str
    namespace: dict
    line_nodes: dict
    lowered: list = field(default_factory=list)
    fallback: list = field(default_factory=list)
    buffer_bytes: int = 0
    entry: str = "forward"


class Namespace:
    """Unique, safe Python identifiers (after ``torch.fx``'s ``_Namespace``).

    Example:
        >>> ns = Namespace(["np"])
        >>> ns.name("dense0_fwd"), ns.name("dense0-fwd"), ns.name("np"), ns.name("class")
        ('dense0_fwd', 'dense0_fwd_1', 'np_1', 'class_1')
    """

    def __init__(self, reserved=()):
        self._used = set(reserved) | set(keyword.kwlist) | set(dir(builtins))

    def name(self, hint):
        """A new identifier like ``hint``: ASCII only (``safe_text.identifier``), so a node
        name from a file never reaches the source as anything but letters, digits and ``_``."""
        base = identifier(hint)
        candidate, n = base, 1
        while candidate in self._used:
            candidate, n = f"{base}_{n}", n + 1
        self._used.add(candidate)
        return candidate


@dataclass
class _Value:
    """One graph value: how the program stores it (``input``, ``slot``: a preallocated
    buffer, ``fresh``: allocated per call, ``alias``: whatever compute or a view returns,
    ``skip``: never computed) and what memory it may share (``roots``: value keys)."""

    key: tuple
    name: str
    shape: tuple | None
    dtype: np.dtype | None
    storage: str = "alias"
    roots: frozenset = frozenset()
    last: int = -1
    end: int = -1
    slot: int | None = None
    inplace: bool = False   # took over the buffer of an input dying at its node

    @property
    def nbytes(self):
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass
class _Slot:
    capacity: int
    end: int
    members: list = field(default_factory=list)


def _dtype_expr(dtype):
    name = "bool_" if dtype == np.bool_ else dtype.name
    if getattr(np, name, None) is not None and np.dtype(getattr(np, name)) == dtype:
        return f"np.{name}"
    return f"np.dtype({dtype.str!r})"


def _size(nbytes):
    """``nbytes`` for people: 8 B, 1.5 KiB, 2.0 MiB."""
    if nbytes < 1024:
        return f"{nbytes} B"
    return f"{nbytes / 1024:.1f} KiB" if nbytes < 1024 ** 2 else f"{nbytes / 1024 ** 2:.1f} MiB"


def _literal(value):
    """Source text that evaluates to ``value``, or None."""
    if isinstance(value, str):
        return python_string(value)
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, (tuple, list)):
        parts = [_literal(v) for v in value]
        if any(p is None for p in parts):
            return None
        inner = ", ".join(parts) + ("," if isinstance(value, tuple) and len(parts) == 1 else "")
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    return None


def _scalar_literal(value):
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def _bind(op, **attrs):
    """``op.compute`` with NumPy and the attributes fixed: what a fallback line calls."""
    return functools.partial(op.compute, np, **attrs)


def _single(result):
    """The array of a one-output compute that may return it as a 1-tuple."""
    return result[0] if isinstance(result, tuple) else result


def _owned(value, *others):
    """``value``, or a copy when it may share memory with any of ``others``."""
    for other in others:
        if np.may_share_memory(value, other):
            return value.copy()
    return value


class _Module:
    """Module-level text the node bodies ask for: constants, then views of buffers and other
    objects built once (in the order asked, so each names only earlier ones)."""

    def __init__(self, names, static):
        self.names = names
        self.static = static            # names of module-level arrays
        self.constants = {}             # (repr, dtype name) -> (name, line)
        self.lines = []                 # views and definitions
        self.binds = []                 # ``x_compute = bind(op_X, ...)`` lines
        self.namespace = {"np": np, "bind": _bind, "owned": _owned, "single": _single,
                          **HELPERS}
        self._views = {}                # (base, shape) -> name
        self._ops = {}                  # id(OpDef) -> its name in the namespace

    def bind(self, hint, op, attrs):
        """The name of ``op.compute`` bound to NumPy and ``attrs`` (a module-level line)."""
        op_name = self._ops.get(id(op))
        if op_name is None:
            op_name = self._ops[id(op)] = self.names.name(f"op_{op.name}")
            self.namespace[op_name] = op
        fn = self.names.name(hint)
        texts = {k: _literal(v) for k, v in attrs.items()}
        if all(t is not None for t in texts.values()):
            args = "".join(f", {k}={t}" for k, t in texts.items())
        else:  # an attribute without a literal (a NaN, an object): pass the dict
            attrs_name = self.names.name(f"{fn}_attrs")
            self.namespace[attrs_name] = dict(attrs)
            args = f", **{attrs_name}"
        self.binds.append(f"{fn} = bind({op_name}{args})")
        return fn

    def const(self, value, dtype):
        key = (repr(value), dtype.name)
        if key not in self.constants:
            name = self.names.name(const_name(value, dtype))
            line = f"{name} = {_dtype_expr(dtype)}({_scalar_literal(value)})"
            self.constants[key] = (name, line)
        return self.constants[key][0]

    def view(self, base, shape):
        if base not in self.static:
            return f"{base}.reshape({shape!r})"
        if (base, shape) not in self._views:
            hint = f"{base}_{'x'.join(map(str, shape)) or 'scalar'}"
            self._views[(base, shape)] = self.define(hint, f"{base}.reshape({shape!r})")
        return self._views[(base, shape)]

    def define(self, hint, expr):
        name = self.names.name(hint)
        self.lines.append(f"{name} = {expr}")
        self.static.add(name)
        return name

    def is_static(self, name):
        return name in self.static

    def temp(self, hint):
        return self.names.name(hint)


def generate(graph, plan=None, is_train=False):
    """The Program of ``graph`` (shapes and dtypes inferred where known).

    ``plan`` (the pipeline's ``MemoryPlan``) is accepted and not used: buffers are planned
    here, because only the generator knows that a compute may return a view of its input
    (whose buffer must then outlive the view) and which inputs a lowering still reads after
    it first writes its output (``softsign``: no in place)."""
    return _Generator(graph, is_train).run()


def build_cpu_executable(graph, plan, ctx, is_train):
    """The hook of ``compiler.pipeline.compile_graph`` for cpu contexts: a CpuExecutable."""
    from ...executor.cpu import CpuExecutable

    return CpuExecutable(graph, generate(graph, plan, is_train), ctx, is_train)


class _Generator:
    """One generation: name values, pick rules, classify storage, plan buffers, emit."""

    def __init__(self, graph, is_train):
        self.graph, self.is_train = graph, is_train
        self.names = Namespace(_BUILDER_NAMES)
        self.static = set()
        self.module = _Module(self.names, self.static)
        self.values: dict = {}
        self.sites: dict = {}      # node index -> (Rule or None, Site or None)
        self.slots: list = []
        self.scratch: dict = {}    # node index -> keys of its scratch values
        self.outputs = [graph.key(e) for e in graph.outputs]
        self._output_set = set(self.outputs)
        self.readers = self._readers()

    def run(self):
        self._make_values()
        self._choose_rules()
        self._classify()
        self._lifetimes()
        self._assign_slots()
        return _Emitter(self).program()

    # -- values and rules ---------------------------------------------------------------
    def _make_values(self):
        g = self.graph
        for i, node in enumerate(g.nodes):
            out_names = [node.name] if node.is_variable else [node.name] + [
                f"{node.name}_{n}" for n in node.op.output_names(node.attrs)[1:]]
            for k in range(node.num_outputs):
                hint = out_names[k] if k < len(out_names) else f"{node.name}_{k}"
                dtype = g.dtypes.get((i, k))
                self.values[(i, k)] = _Value((i, k), self.names.name(hint), g.shapes.get((i, k)),
                                             None if dtype is None else np.dtype(dtype))

    def _site(self, i, node):
        ins = [self.values[self.graph.key(e)] for e in node.inputs]
        outs = [self.values[(i, k)] for k in range(node.num_outputs)]
        every = ins + outs
        if not all(known(v.shape) or v.shape == () for v in every):
            return None
        if any(v.dtype is None for v in every):
            return None
        site = Site(node, [v.shape for v in ins], [v.dtype for v in ins],
                    [v.shape for v in outs], [v.dtype for v in outs], self.is_train, self.module)
        site.used = [self.is_used(v.key) for v in outs]
        return site

    def _choose_rules(self):
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                continue
            site = self._site(i, node)
            try:
                rule = rule_for(site) if site is not None else None
            except Exception:  # a rule that cannot judge these attributes: call compute
                rule = None
            self.sites[i] = (rule, site)
            if rule is not None and rule.scratch is not None:
                for k, (shape, dtype) in enumerate(rule.scratch(site)):
                    check_elements(shape, f"node {display(node.name)}: scratch buffer")
                    key = ("scratch", i, k)
                    self.values[key] = _Value(key, self.names.name(f"{node.name}_scratch{k}"),
                                              tuple(shape), np.dtype(dtype), "slot",
                                              frozenset([key]), last=i)
                    self.scratch.setdefault(i, []).append(key)

    # -- storage and lifetimes ----------------------------------------------------------
    def is_used(self, key):
        """True when a node or the graph's outputs read value ``key``."""
        return key in self.readers or key in self._output_set

    def _classify(self):
        outputs, readers = self._output_set, self.readers
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                v = self.values[(i, 0)]
                v.storage, v.roots = "input", frozenset([v.key])
                continue
            rule, _ = self.sites[i]
            inherited = frozenset().union(*(self.values[self.graph.key(e)].roots
                                             for e in node.inputs))
            for k in range(node.num_outputs):
                v = self.values[(i, k)]
                used = k == 0 or (i, k) in outputs or readers.get((i, k))
                if rule is None or rule.kind == "view":
                    v.storage, v.roots = "alias", inherited | {v.key}
                elif not used:
                    v.storage = "skip"
                else:
                    v.storage = "fresh" if v.key in outputs else "slot"
                    v.roots = frozenset([v.key])

    def _readers(self):
        readers = {}
        for i, node in enumerate(self.graph.nodes):
            for e in node.inputs:
                readers.setdefault(self.graph.key(e), []).append(i)
        return readers

    def _lifetimes(self):
        end_of_program = len(self.graph.nodes)
        for key, nodes in self.readers.items():
            self.values[key].last = max(nodes)
        for key in self.outputs:
            self.values[key].last = end_of_program
        for v in self.values.values():
            for root in v.roots:
                owner = self.values[root]
                owner.end = max(owner.end, v.last, owner.last)

    # -- buffers ------------------------------------------------------------------------
    def _assign_slots(self):
        for i, node in enumerate(self.graph.nodes):
            keys = self.scratch.get(i, []) + [(i, k) for k in range(
                0 if node.is_variable else node.num_outputs)]
            for key in keys:  # scratch first: it dies here, so outputs cannot take it
                v = self.values[key]
                if v.storage != "slot":
                    continue
                slot = self._inplace_slot(i, node, v) if key == (i, 0) else None
                v.inplace = slot is not None
                if slot is None:
                    slot = self._free_slot(i, v.nbytes)
                v.slot = slot
                s = self.slots[slot]
                s.capacity, s.end = max(s.capacity, v.nbytes), max(s.end, v.end)
                s.members.append(v)

    def _inplace_slot(self, i, node, v):
        """The slot of an input that dies here and that output 0 may overwrite: read only
        where the rule allows, and through no other input (a view of it), else None."""
        rule, site = self.sites[i]
        keys = [self.graph.key(e) for e in node.inputs]
        allowed = set(rule.inplace_inputs(site))
        for j in sorted(allowed):
            u = self.values[keys[j]]
            elsewhere = [n for n, key in enumerate(keys) if n not in allowed and key == u.key]
            aliased = [key for key in keys if key != u.key and u.key in self.values[key].roots]
            if (u.storage == "slot" and u.end == i and u.shape == v.shape
                    and u.dtype == v.dtype and not elsewhere and not aliased):
                return u.slot
        return None

    def _free_slot(self, i, nbytes):
        """Best fit among the slots free at node ``i`` (grown if need be), else a new one."""
        free = [n for n, s in enumerate(self.slots) if s.end < i]
        fitting = [n for n in free if self.slots[n].capacity >= nbytes]
        if fitting:
            return min(fitting, key=lambda n: self.slots[n].capacity)
        if free:
            return max(free, key=lambda n: self.slots[n].capacity)
        self.slots.append(_Slot(0, -1))
        return len(self.slots) - 1


class _Emitter:
    """Writes the source of a planned generation."""

    def __init__(self, gen):
        self.gen, self.graph, self.values = gen, gen.graph, gen.values
        self.names = gen.names
        self.namespace = gen.module.namespace
        self.slot_names = [self.names.name(f"slot{n}") for n in range(len(gen.slots))]
        self.keep = frozenset().union(*(self.values[k].roots for k in gen.outputs))

    def program(self):
        buffers = self._buffer_lines()   # marks buffer names static before bodies ask views
        body = self._input_lines() + self._node_lines() + [(self._return_line(), None)]
        module = self.gen.module
        head = [self._header()]
        for section in ([line for _, line in module.constants.values()], buffers,
                        module.lines, module.binds):
            head += [""] + section if section else []
        head += ["", "", "def forward(inputs, rng):"]
        text, line_nodes = "\n".join(head).split("\n"), {}
        for line, node in body:
            text.append("    " + line)
            if node is not None:
                line_nodes[len(text)] = node
        lowered = [n.name for i, n in enumerate(self.graph.nodes)
                   if not n.is_variable and self.gen.sites[i][0] is not None]
        fallback = [n.name for i, n in enumerate(self.graph.nodes)
                    if not n.is_variable and self.gen.sites[i][0] is None]
        return Program("\n".join(text) + "\n", self.namespace, line_nodes, lowered, fallback,
                       sum(s.capacity for s in self.gen.slots))

    def _header(self):
        gen = self.gen
        nodes = sum(1 for n in self.graph.nodes if not n.is_variable)
        lowered = sum(1 for rule, _ in gen.sites.values() if rule is not None)
        count = len(gen.slots)
        size = _size(sum(s.capacity for s in gen.slots))
        return "\n".join([
            f"# hybridgpu cpu program, {'train' if gen.is_train else 'predict'} mode: {nodes} "
            f"nodes ({lowered} as NumPy calls with out=, {nodes - lowered} calling compute)",
            f"# {count} buffer{'s' * (count != 1)} ({size}) preallocated and reused; outputs "
            "are allocated fresh each call",
            "# from the builder: np; bind(op, **attrs) = op.compute with np and attrs fixed;",
            "#   owned(x, *others) = x, or a copy if it may share memory with others; "
            "op_<Name> = OpDefs"])

    # -- buffers ------------------------------------------------------------------------
    def _buffer_lines(self):
        lines = []
        for n, slot in enumerate(self.gen.slots):
            dtypes = {v.dtype for v in slot.members}
            typed = len(dtypes) == 1 and slot.capacity % next(iter(dtypes)).itemsize == 0
            base = self.slot_names[n]
            note = f"  # {_size(slot.capacity)}, {len(slot.members)} value" + "s" * (
                len(slot.members) != 1)
            if typed:
                dtype = next(iter(dtypes))
                size = slot.capacity // dtype.itemsize
                lines.append(f"{base} = np.empty({size}, {_dtype_expr(dtype)}){note}")
            else:
                lines.append(f"{base} = np.empty({slot.capacity}, np.uint8){note}")
            lines += self._member_lines(base, slot, typed)
        return lines

    def _member_lines(self, base, slot, typed):
        lines, seen = [], {}
        for v in slot.members:
            self.gen.static.add(v.name)
            same = seen.get((v.shape, v.dtype))
            if same is not None:
                how = "in place" if v.inplace else "reused"
                lines.append(f"{v.name} = {same}  # {how}")
                continue
            seen[(v.shape, v.dtype)] = v.name
            if typed:
                count = math.prod(v.shape)
                whole = count * v.dtype.itemsize == slot.capacity
                src = base if whole else f"{base}[:{count}]"
                lines.append(f"{v.name} = {src}.reshape({v.shape!r})")
            else:
                lines.append(f"{v.name} = {base}[:{v.nbytes}].view({_dtype_expr(v.dtype)})"
                             f".reshape({v.shape!r})")
        return lines

    # -- the function body --------------------------------------------------------------
    def _input_lines(self):
        lines = []
        if any(n.op is not None and n.op.random and self.gen.sites[i][0] is None
               for i, n in enumerate(self.graph.nodes)):
            lines.append(("if rng is None:", None))
            lines.append(("    rng = np.random", None))
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                v = self.values[(i, 0)]
                kind = "" if v.shape is None else f" : {v.shape} {v.dtype or ''}".rstrip()
                lines.append((f"{v.name} = inputs[{python_string(node.name)}]  # %{i}{kind}", i))
        return lines

    def _node_lines(self):
        lines = []
        dying = {}
        for key, v in self.values.items():
            if v.storage == "alias" and key not in self.keep and v.last >= 0:
                dying.setdefault(v.last, []).append(v.name)
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                continue
            lines.append((python_comment(format_node(self.graph, i)), None))
            rule, site = self.gen.sites[i]
            body = self._lowered(i, node, rule, site) if rule else self._fallback(i, node)
            lines += [(line, i) for line in body]
            if dying.get(i):
                lines.append((f"del {', '.join(dying[i])}", None))
        return lines

    def _lowered(self, i, node, rule, site):
        ins = [self.values[self.graph.key(e)].name for e in node.inputs]
        outs = [self.values[(i, k)] for k in range(node.num_outputs)]
        site.ins = ins
        site.outs = [None if v.storage == "skip" else v.name for v in outs]
        site.scratch = [self.values[key].name for key in self.gen.scratch.get(i, ())]
        lines = [f"{v.name} = np.empty({v.shape!r}, {_dtype_expr(v.dtype)})"
                 for v in outs if v.storage == "fresh"]
        return lines + list(rule.emit(site))

    def _fallback(self, i, node):
        op = node.op
        attrs = dict(node.attrs)
        if op.mode_dependent:
            attrs["is_train"] = self.gen.is_train
        fn = self.gen.module.bind(f"{node.name}_compute", op, attrs)
        call_args = [self.values[self.graph.key(e)].name for e in node.inputs]
        if op.random:
            call_args.append("rng=rng")
        targets = [self.values[(i, k)] for k in range(node.num_outputs)]
        lhs = ", ".join(v.name if k == 0 or self.gen.is_used(v.key) else "_"
                        for k, v in enumerate(targets))
        call = f"{fn}({', '.join(call_args)})"
        if len(targets) == 1 and callable(getattr(op, "_num_outputs", None)):
            call = f"single({call})"  # may be a 1-tuple: the output count follows the attrs
        return [f"{lhs} = {call}"]

    # -- outputs ------------------------------------------------------------------------
    def _return_line(self):
        returned, parts = [], []
        for key in self.gen.outputs:
            parts.append(self._output_expr(self.values[key], returned))
            returned.append(key)
        return f"return [{', '.join(parts)}]"

    def _output_expr(self, v, returned):
        """A graph output as a fresh array: itself, ``owned(...)`` or a copy."""
        if v.storage == "fresh":
            return f"{v.name}.copy()" if v.key in returned else v.name
        if v.storage != "alias":
            return f"{v.name}.copy()"
        danger = {r for r in v.roots if r != v.key or v.key in returned}
        danger |= {w for w in returned if v.key in self.values[w].roots}
        names = sorted({self._memory_name(self.values[r]) for r in danger})
        if not names:
            return v.name
        if len(names) > _MAX_OWNED_CHECKS:
            return f"{v.name}.copy()"
        return f"owned({v.name}, {', '.join(names)})"

    def _memory_name(self, v):
        return self.slot_names[v.slot] if v.storage == "slot" else v.name
