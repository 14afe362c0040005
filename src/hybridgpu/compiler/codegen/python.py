"""The CPU code generator: a Graph becomes the text of one straight-line Python function over
NumPy, which ``executor.cpu.CpuExecutable`` compiles once and replays.

``generate(graph, plan, is_train)`` returns a ``Program``: the source (module-level constants,
preallocated buffers and views, then ``def forward(inputs, rng)``), the objects the source
names but does not create (``np``, ``bind``, ``owned`` and the OpDefs ``op_<Name>``), and a map
from source lines to graph nodes (for error messages). ``plan`` is the pipeline's MemoryPlan,
made with ``CpuMemoryPolicy``: the program allocates exactly its buffers.
``build_cpu_executable(graph, plan, ctx, is_train)`` builds with the backend registered for
cpu (``executor/cpu.py``).

How values are stored (the plan decides; the generator only names and emits):

* an op with a lowering (``node.op.lowering_for("array")``, see ``site.lowering_of``) writes
  with ``out=`` into its planned buffer, in place over a dying input where its lowering
  allows it; graph outputs are written into arrays allocated fresh each call, so no later call
  overwrites a result.
* any other op calls its ``OpDef.compute`` (``bind`` fixes ``np`` and the attributes); its
  results may be views of its inputs (``OpDef.views``), so the inputs' buffers stay alive while
  they live, and a graph output that may share memory with a buffer, an input or another
  output is copied (``owned``).

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
from ..passes.plan_memory import MemoryPolicy, NodeMemory, plan_memory
from .site import Site, const_name, lowering_of

__all__ = ["Program", "generate", "build_cpu_executable", "Namespace"]

_BUILDER_NAMES = ("np", "bind", "owned", "single", "inputs", "rng", "forward", "ATTRS")
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
    last: int = -1          # the last node that needs its memory (the plan's ``ends``)
    slot: int | None = None
    inplace: bool = False   # took over the buffer of an input dying at its node

    @property
    def nbytes(self):
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass
class _Slot:
    """One buffer of the plan and the values laid out in it, in program order."""

    capacity: int
    members: list = field(default_factory=list)


def _dtype_expr(dtype):
    name = "bool_" if dtype == np.bool_ else dtype.name
    if getattr(np, name, None) is not None and np.dtype(getattr(np, name)) == dtype:
        return f"np.{name}"
    return f"np.dtype({dtype.str!r})"


def _dtype_name(dtype):
    """``str(dtype)`` for the program's comments, fast (NumPy's ``str`` is slow Python and a
    100,000-input graph asks 100,000 times)."""
    return "" if dtype is None else dtype.name if dtype.isnative else str(dtype)


def _size(nbytes):
    """``nbytes`` for people: 8 B, 1.5 KiB, 2.0 MiB."""
    if nbytes < 1024:
        return f"{nbytes} B"
    return f"{nbytes / 1024:.1f} KiB" if nbytes < 1024 ** 2 else f"{nbytes / 1024 ** 2:.1f} MiB"


def _scalar_literal(value):
    """Source text of a number (a Python bool, int or float only), or None."""
    if type(value) is float and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value) if type(value) in (bool, int, float) else None


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
        self.attrs = []                 # ATTRS[n]: the attributes of the n-th bound compute
        self.namespace = {"np": np, "bind": _bind, "owned": _owned, "single": _single,
                          "ATTRS": self.attrs}
        self._views = {}                # (base, shape) -> name
        self._helpers = {}              # id(function) -> its name in the namespace
        self._ops = {}                  # id(OpDef) -> its name in the namespace

    def bind(self, hint, op, attrs):
        """The name of ``op.compute`` bound to NumPy and ``attrs`` (a module-level line)."""
        op_name = self._ops.get(id(op))
        if op_name is None:
            op_name = self._ops[id(op)] = self.names.name(f"op_{op.name}")
            self.namespace[op_name] = op
        fn = self.names.name(hint)
        # attributes are data, never text: keys and values come from files (a Custom op
        # takes any key), so the program indexes a table built here and the source shows
        # them only in an escaped comment
        self.attrs.append(dict(attrs))
        shown = ", ".join(f"{k}={v!r}" for k, v in attrs.items())
        self.binds.append(f"{fn} = bind({op_name}, **ATTRS[{len(self.attrs) - 1}])  "
                          + python_comment(shown))
        return fn

    def const(self, value, dtype):
        key = (repr(value), dtype.name)
        if key not in self.constants:
            name = self.names.name(const_name(value, dtype))
            text = _scalar_literal(value)
            if text is None:  # not a plain number: handed over as data, never as text
                text = self.names.name(f"{name}_value")
                self.namespace[text] = value
            line = f"{name} = {_dtype_expr(dtype)}({text})"
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

    def helper(self, fn):
        name = self._helpers.get(id(fn))
        if name is None:
            name = self._helpers[id(fn)] = self.names.name(fn.__name__)
            self.namespace[name] = fn
        return name

    def temp(self, hint):
        return self.names.name(hint)


class CpuMemoryPolicy(MemoryPolicy):
    """The cpu backend's answers to ``plan_memory``: a node with a lowering writes into
    buffers (in place and with scratch as its lowering says, or as a view), any other node
    calls its op's compute (arrays of its own, views of its inputs when ``op.views``);
    outputs are allocated fresh each call. It also holds what generation needs: each node's
    Site and Lowering, and the module's names."""

    outputs = "fresh"

    def __init__(self, graph, is_train):
        self.graph, self.is_train = graph, is_train
        self.names = Namespace(_BUILDER_NAMES)
        self.module = _Module(self.names, set())
        self.readers = {graph.key(e) for n in graph.nodes for e in n.inputs}
        self.readers |= {graph.key(e) for e in graph.outputs}
        self.sites = {i: self._lower(i, node) for i, node in enumerate(graph.nodes)
                      if not node.is_variable}
        self.generated = False

    def _lower(self, i, node):
        """``(Lowering or None, Site or None)`` of node ``i``."""
        g = self.graph
        ins = [g.key(e) for e in node.inputs]
        outs = [(i, k) for k in range(node.num_outputs)]
        shapes = [g.shapes.get(key) for key in ins + outs]
        dtypes = [g.dtypes.get(key) for key in ins + outs]
        if not all(known(s) or s == () for s in shapes) or any(t is None for t in dtypes):
            return None, None
        n = len(ins)
        site = Site(node, shapes[:n], dtypes[:n], shapes[n:], dtypes[n:], self.is_train,
                    self.module)
        site.used = [key in self.readers for key in outs]
        try:
            lowering = lowering_of(site)
            memory = None if lowering is None else NodeMemory(
                "view" if lowering.kind == "view" else "out", lowering.inplace_inputs(site),
                lowering.scratch_buffers(site), lowering.private_buffers(site))
        except Exception:  # a lowering that cannot judge these attributes: call compute
            return None, None
        site.memory = memory
        for shape, _ in [] if memory is None else [*memory.scratch, *memory.private]:
            check_elements(shape, f"node {display(node.name)}: a buffer of its lowering")
        return lowering, site

    def node(self, graph, i):
        lowering, site = self.sites[i]
        return NodeMemory("compute") if lowering is None else site.memory


def generate(graph, plan=None, is_train=False):
    """The Program of ``graph`` (shapes and dtypes inferred where known), laid out by
    ``plan``: the pipeline's MemoryPlan made with a ``CpuMemoryPolicy`` (planned here when
    None or made for another backend)."""
    policy = getattr(plan, "policy", None)
    if (not isinstance(policy, CpuMemoryPolicy) or policy.generated or policy.graph is not graph
            or policy.is_train != is_train):
        policy = CpuMemoryPolicy(graph, is_train)
        plan = plan_memory(graph, policy=policy)
    policy.generated = True
    return _Emitter(_Generator(graph, plan, policy)).program()


def build_cpu_executable(graph, plan, ctx, is_train, flags=None):
    """The executable of the backend registered for cpu (``executor/cpu.py``)."""
    from ..pipeline import backend_for

    return backend_for("cpu").build(graph, plan, ctx, is_train, flags or {})


class _Generator:
    """The values of one generation, named after the graph and stored as ``plan`` says."""

    def __init__(self, graph, plan, policy):
        self.graph, self.plan, self.is_train = graph, plan, policy.is_train
        self.names, self.module = policy.names, policy.module
        self.static = self.module.static
        self.sites = policy.sites     # node index -> (Lowering or None, Site or None)
        self.values: dict = {}
        self.outputs = [graph.key(e) for e in graph.outputs]
        self._output_set = set(self.outputs)
        self.readers = {graph.key(e) for n in graph.nodes for e in n.inputs}
        self._make_values()
        self.slots = self._slots()
        self._privates()

    def is_used(self, key):
        """True when a node or the graph's outputs read value ``key``."""
        return key in self.readers or key in self._output_set

    def _make_values(self):
        g, plan = self.graph, self.plan
        for i, node in enumerate(g.nodes):
            out_names = [node.name] if node.is_variable else [node.name] + [
                f"{node.name}_{n}" for n in node.op.output_names(node.attrs)[1:]]
            for k in range(node.num_outputs):
                key = (i, k)
                hint = out_names[k] if k < len(out_names) else f"{node.name}_{k}"
                dtype = g.dtypes.get(key)
                v = _Value(key, self.names.name(hint), g.shapes.get(key),
                           None if dtype is None else np.dtype(dtype))
                v.roots = plan.aliases.get(key, frozenset([key]))
                v.last = max(plan.ends.get(key, i), i)
                if node.is_variable:
                    v.storage = "input"
                elif key in plan.storage:
                    v.storage, v.slot = "slot", plan.storage[key]
                    v.inplace = key in plan.inplace
                elif key in plan.aliases or self.sites[i][0] is None:
                    v.storage = "alias"
                elif key in plan.fresh:
                    v.storage = "fresh"
                else:
                    v.storage = "skip"
                self.values[key] = v

    def _slots(self):
        slots = [_Slot(size) for size in self.plan.buffers]
        members = [(v.key[0], v.key[1], v) for v in self.values.values() if v.storage == "slot"]
        for i, bufs in self.plan.scratch.items():
            name = self.graph.nodes[i].name
            for k, (buf, shape, dtype) in enumerate(bufs):
                key = ("scratch", i, k)
                v = self.values[key] = _Value(key, self.names.name(f"{name}_scratch{k}"), shape,
                                              dtype, "slot", frozenset([key]), i, buf)
                members.append((i, -1, v))  # before the node's outputs
        for _, _, v in sorted(members, key=lambda m: m[:2]):
            slots[v.slot].members.append(v)
        return slots

    def scratch_names(self, i):
        return [self.values[("scratch", i, k)].name
                for k in range(len(self.plan.scratch.get(i, ())))]

    def _privates(self):
        for i, bufs in self.plan.private.items():
            site = self.sites[i][1]
            site.privates = [self.module.define(
                f"{self.graph.nodes[i].name}_private{k}",
                f"np.zeros({tuple(shape)!r}, {_dtype_expr(dtype)})")
                for k, (shape, dtype) in enumerate(bufs)]


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
                       self.gen.plan.buffer_bytes)

    def _header(self):
        gen = self.gen
        nodes = sum(1 for n in self.graph.nodes if not n.is_variable)
        lowered = sum(1 for rule, _ in gen.sites.values() if rule is not None)
        count = len(gen.slots)
        size = _size(sum(s.capacity for s in gen.slots))
        private = gen.plan.private_bytes
        extra = f" and {_size(private)} private to nodes" if private else ""
        return "\n".join([
            f"# hybridgpu cpu program, {'train' if gen.is_train else 'predict'} mode: {nodes} "
            f"nodes ({lowered} as NumPy calls with out=, {nodes - lowered} calling compute)",
            f"# {count} buffer{'s' * (count != 1)} ({size}){extra} preallocated and reused; "
            "outputs are allocated fresh each call",
            "# from the builder: np; bind(op, **attrs) = op.compute with np and attrs fixed;",
            *(["#   ATTRS[n] = the attributes of the n-th bind (data, never written as code);"]
              if gen.module.attrs else []),
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
                kind = "" if v.shape is None else f" : {v.shape} {_dtype_name(v.dtype)}".rstrip()
                lines.append((f"{v.name} = inputs[{python_string(node.name)}]  # %{i}{kind}", i))
        return lines

    def _node_lines(self):
        lines = []
        dying = {}
        for key, v in self.values.items():
            if v.storage == "alias" and key not in self.keep and self.gen.is_used(key):
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
        site.scratch = self.gen.scratch_names(i)
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
        returned, parts, copies = [], [], set(self.gen.plan.output_copies)
        for pos, key in enumerate(self.gen.outputs):
            v = self.values[key]
            parts.append(f"{v.name}.copy()" if pos in copies else self._output_expr(v, returned))
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
