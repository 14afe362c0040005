"""``compile_graph(graph, ctx, is_train)``: the passes a backend runs, then an ``Executable``.

The Executable contract (every backend keeps it):

* ``executable(inputs, rng=None) -> list of arrays``: ``inputs`` maps each graph variable's
  name to an array of the context's module (numpy / cupy); names the optimized graph no longer
  reads are ignored. Outputs are fresh arrays that no later call overwrites. Ops that update
  auxiliary states (BatchNorm in training) write into the arrays passed in, as the reference
  interpreter does.
* ``executable.graph``: the optimized Graph (``print(executable.graph)``, one line a node;
  fused nodes list their members).
* ``executable.source``: generated code, where the backend generates any (else None).
* ``executable.plan``: the ``MemoryPlan`` of the optimized graph; ``executable.passes``: the
  names of the passes that ran, in order; ``executable.pass_stats``: ``{pass: (nodes after,
  seconds)}``.

Passes per backend (``PASSES``): infer_shape, infer_type, dce, fold, cse, decompose,
fuse_elementwise (gpu: then absorb_casts), then plan_memory. With ``HYBRIDGPU_DEBUG=1`` or
``flags["debug"]`` the verifier runs after every pass (its error names the pass) and the
memory plan is checked by simulation. ``flags["passes"]`` replaces the list (``()`` compiles
the graph as traced); ``flags["executor"] = "interpreter"`` (or
``HYBRIDGPU_EXECUTOR=interpreter``) forces the reference interpreter, to tell a backend's bug
from a pass's.

Backends are registered by device type (``register_backend("cpu", build, policy)``), each in
its own module of ``executor/``, which registers itself when imported (``hybridgpu`` imports
them all): ``build(graph, plan, ctx, is_train, flags) -> Executable`` and
``policy(graph, is_train, flags) -> MemoryPolicy`` (how its nodes store values and where its
outputs go; ``passes/plan_memory.py``). The plan is made with the backend's policy and handed
to ``build``, so ``executable.plan`` is what runs. A context's backend is the one registered for
its ``device_type`` (``cpu_pinned`` and ``cpu_shared`` use ``cpu``'s); without one, and as the
shared fallback, ``InterpretedExecutable`` runs the reference interpreter over the optimized
graph (fused nodes run their members' computes; it ignores the plan, made with the default
policy). ``flags`` (``hybridize``'s ``static_alloc``, ``static_shape``, ``cuda_graph``) reach
``build`` and ``policy`` unchanged; each backend documents what it does with them.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph((mx.sym.relu(x) * 2)._outputs)
    >>> infer_shapes(g, {"x": (2,)}); infer_types(g, {"x": "float64"})
    >>> exe = compile_graph(g, mx.cpu(), is_train=False)
    >>> exe({"x": np.array([-1.0, 3.0])})
    [array([0., 6.])]
    >>> print(exe.graph)
    %0 = var x : (2,) float64
    %1 = _fused(%0) members=[t0 = relu(in0); t1 = _mul_scalar(t0, scalar=2)] : (2,) float64
    return %1
    >>> exe.passes[-2:]
    ['fuse_elementwise', 'plan_memory']
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from ..base import MXNetError
from ..graph import evaluate, verify
from ..limits import check_model_bytes
from ..safe_text import display
from . import passes

__all__ = ["Executable", "InterpretedExecutable", "compile_graph", "PASSES", "debug_enabled",
           "register_backend", "backend_for", "Backend"]


_STEPS = {
    "infer_shape": lambda g, ctx, train: passes.infer_shape(g),
    "infer_type": lambda g, ctx, train: passes.infer_type(g),
    "dce": lambda g, ctx, train: passes.dce(g, is_train=train),
    "fold": lambda g, ctx, train: passes.fold(g, xp=ctx.xp),
    "cse": lambda g, ctx, train: passes.cse(g),
    "decompose": lambda g, ctx, train: passes.decompose(g, is_train=train),
    "fuse_elementwise": lambda g, ctx, train: passes.fuse_elementwise(g),
    "absorb_casts": lambda g, ctx, train: passes.absorb_casts(g),
}

_DEFAULT = ("infer_shape", "infer_type", "dce", "fold", "cse", "decompose", "fuse_elementwise")

#: The graph passes each backend runs, in order (``plan_memory`` always follows). The gpu
#: backend also moves float16/float32 Casts into fused groups (its kernels compute both in
#: float; the cpu program runs a group's members as NumPy calls of one dtype).
PASSES = {"cpu": _DEFAULT, "gpu": (*_DEFAULT, "absorb_casts")}


class Executable:
    """A compiled graph; see the module docstring for the contract."""

    graph = None
    source = None
    plan = None
    passes = ()
    pass_stats = None
    flags = None

    def __call__(self, inputs, rng=None):
        raise NotImplementedError

    def run_into(self, inputs, into, rng=None, epilogue=None):
        """Run once, writing output ``k`` into the array ``into[k]`` (same shape and dtype)
        instead of returning it (its place in the returned list is None). ``epilogue`` is
        device work to run after the outputs are written, in the same captured CUDA graph
        (only the gpu backend takes one: see ``GpuExecutable.run_into``).

        Example:
            >>> import numpy as np
            >>> import hybridgpu as mx
            >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
            >>> x = mx.sym.var("x")
            >>> g = Graph(mx.sym.Group([x * 2, x + 1])._outputs)
            >>> infer_shapes(g, {"x": (2,)}); infer_types(g, {"x": "float64"})
            >>> exe = compile_graph(g, mx.cpu(), is_train=False)
            >>> dst = np.zeros(2)
            >>> exe.run_into({"x": np.array([1.0, 2.0])}, {0: dst}), dst
            ([None, array([2., 3.])], array([2., 4.]))
        """
        if epilogue is not None:
            raise MXNetError(f"{type(self).__name__} runs no device epilogue (gpu only)")
        outs = self(inputs, rng)
        for k, dst in into.items():
            _check_into(dst, outs[k], k)
            dst[...] = outs[k]
            outs[k] = None
        return outs

    def signature(self):
        """One line: the block, the context and mode, the data inputs and the outputs.

        Example:
            >>> import hybridgpu as mx
            >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
            >>> x = mx.sym.var("x")
            >>> g = Graph((x * 2)._outputs)
            >>> infer_shapes(g, {"x": (2,)}); infer_types(g, {"x": "float32"})
            >>> compile_graph(g, mx.cpu(), is_train=False).signature()
            'cpu(0) predict: x (2,) float32 -> (2,) float32'
        """
        graph, flags = self.graph, self.flags or {}
        if graph is None:
            return "(no graph)"

        def value(key):
            return f"{graph.shapes.get(key)} {graph.dtypes.get(key)}"

        data = flags.get("data_inputs")
        names = [n for n in graph.variables if data is None or n.name in data]
        ins = ", ".join(f"{n.name} {value((graph.index[id(n)], 0))}" for n in names)
        outs = ", ".join(value(graph.key(e)) for e in graph.outputs)
        block = f"{flags['block']!r} on " if flags.get("block") else ""
        mode = "train" if getattr(self, "is_train", False) else "predict"
        return f"{block}{getattr(self, 'ctx', '?')} {mode}: {ins} -> {outs}"

    def __repr__(self):
        return f"<{type(self).__name__} {self.signature()}>"


def _check_into(dst, value, k):
    if tuple(dst.shape) != tuple(value.shape) or dst.dtype != value.dtype:
        raise MXNetError(f"run_into: output {k} is {tuple(value.shape)} {value.dtype}, its "
                         f"destination {tuple(dst.shape)} {dst.dtype}")


class InterpretedExecutable(Executable):
    """Runs the graph with the reference interpreter (the fallback of every backend): each
    op's compute allocates its results, so the plan is not used (beyond ``output_copies``),
    and the hybridize flags change nothing."""

    def __init__(self, graph, ctx, is_train, plan=None):
        self.graph = graph
        self.ctx = ctx
        self.is_train = is_train
        self.plan = plan
        if plan is not None:
            self._copies = frozenset(plan.output_copies)
        else:  # a graph output that is a variable would hand out the input array itself
            self._copies = frozenset(k for k, e in enumerate(graph.outputs) if e.node.is_variable)

    def __call__(self, inputs, rng=None):
        with self.ctx.scope():
            outs = evaluate(self.graph, inputs, self.ctx.xp, is_train=self.is_train, rng=rng)
        return [o.copy() if k in self._copies else o for k, o in enumerate(outs)]


def debug_enabled(flags=None):
    """True when passes are verified: ``flags["debug"]`` or ``HYBRIDGPU_DEBUG=1``."""
    if flags and flags.get("debug") is not None:
        return bool(flags["debug"])
    return os.environ.get("HYBRIDGPU_DEBUG", "") not in ("", "0")


def _verified(graph, after):
    try:
        verify(graph)
    except MXNetError as err:
        raise MXNetError(f"after compiler pass {after!r}: {err}") from None


def _optimize(graph, ctx, is_train, names, debug):
    stats = {}
    if debug:
        _verified(graph, "(none: the graph as given)")
    for name in names:
        step = _STEPS.get(name)
        if step is None:
            raise MXNetError(f"unknown compiler pass {name!r}; known passes: {list(_STEPS)}")
        start = time.perf_counter()
        with ctx.scope():
            graph = step(graph, ctx, is_train)
        stats[name] = (len(graph), time.perf_counter() - start)
        if debug:
            _verified(graph, name)
    return graph, stats


@dataclass(frozen=True)
class Backend:
    """A registered backend: ``build(graph, plan, ctx, is_train, flags) -> Executable`` and
    ``policy(graph, is_train, flags) -> MemoryPolicy`` (None: the default policy)."""

    device_type: str
    build: object
    policy: object = None

    def memory_policy(self, graph, is_train, flags):
        return None if self.policy is None else self.policy(graph, is_train, flags)


def _interpret(graph, plan, ctx, is_train, flags):
    return InterpretedExecutable(graph, ctx, is_train, plan)


INTERPRETER = Backend("interpreter", _interpret)
_BACKENDS: dict = {}


def register_backend(device_type, build, policy=None):
    """Make ``build`` (and its memory ``policy``) the backend of contexts of ``device_type``
    (``"cpu"``, ``"gpu"``); a later registration replaces an earlier one."""
    _BACKENDS[device_type] = Backend(device_type, build, policy)
    return _BACKENDS[device_type]


def backend_for(device_type, flags=None):
    """The Backend that compiles for ``device_type`` (a name or a Context): the registered
    one, else the interpreter; the interpreter too with ``flags["executor"] =
    "interpreter"`` or ``HYBRIDGPU_EXECUTOR=interpreter``."""
    choice = (flags or {}).get("executor") or os.environ.get("HYBRIDGPU_EXECUTOR") or ""
    if choice == "interpreter":
        return INTERPRETER
    if not isinstance(device_type, str):
        device_type = device_type.device_type
    if device_type not in _BACKENDS and device_type.startswith("cpu"):
        device_type = "cpu"
    return _BACKENDS.get(device_type, INTERPRETER)


def _build(backend, graph, plan, ctx, is_train, flags):
    """The one place an Executable is made: the backend's ``build`` on the planned graph."""
    return backend.build(graph, plan, ctx, is_train, flags)


def _check_allocation(graph, plan):
    """MXNetError before anything is allocated when the plan's buffers and fresh outputs plus
    the arrays its ops' computes make and the output copies (as if all lived at once) pass
    the model cap
    (``limits.HYBRIDGPU_MAX_MODEL_BYTES``)."""
    computed = 0
    copies = [graph.key(graph.outputs[pos]) for pos in plan.output_copies]
    for key in [*plan.computed, *copies]:
        shape, dtype = graph.shapes.get(key), graph.dtypes.get(key)
        if shape is not None and dtype is not None and all(d is not None for d in shape):
            computed += math.prod(shape) * np.dtype(dtype).itemsize
    heads = ", ".join(display(e.node.name) for e in graph.outputs[:3])
    check_model_bytes(plan.planned_bytes + computed, f"the model computing {heads}",
                      f" ({plan.buffer_bytes} in buffers, {computed} by its ops' computes "
                      "and copies)")


def compile_graph(graph, ctx, is_train, flags=None):
    """An Executable of ``graph`` for ``ctx``: the backend's passes, a memory plan, then the
    backend's executable (see the module docstring). ``graph`` itself is not changed."""
    flags = dict(flags or {})
    debug = debug_enabled(flags)
    names = flags.get("passes")
    if names is None:
        names = PASSES["gpu" if ctx.is_gpu else "cpu"]
    graph, stats = _optimize(graph, ctx, is_train, tuple(names), debug)
    backend = backend_for(ctx, flags)
    start = time.perf_counter()
    plan = passes.plan_memory(graph, policy=backend.memory_policy(graph, is_train, flags))
    stats["plan_memory"] = (len(graph), time.perf_counter() - start)
    if debug:
        plan.check()
    _check_allocation(graph, plan)
    executable = _build(backend, graph, plan, ctx, is_train, flags)
    executable.plan = plan
    executable.flags = flags
    executable.passes = [*names, "plan_memory"]
    executable.pass_stats = stats
    return executable
