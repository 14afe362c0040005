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
fuse_elementwise, then plan_memory. With ``HYBRIDGPU_DEBUG=1`` or ``flags["debug"]`` the
verifier runs after every pass (its error names the pass) and the memory plan is checked by
simulation. ``flags["passes"]`` replaces the list (``()`` compiles the graph as traced);
``flags["executor"] = "interpreter"`` (or ``HYBRIDGPU_EXECUTOR=interpreter``) forces the
reference interpreter, to tell a backend's bug from a pass's.

Backends: on cpu, ``compiler/codegen/python.py``'s ``build_cpu_executable(graph, plan, ctx,
is_train)`` when that module exists; on gpu, ``executor/gpu``'s ``build_gpu_executable`` (a
GPU program over one arena, captured as CUDA graphs); elsewhere ``InterpretedExecutable``, the
reference interpreter over the optimized graph (fused nodes run their members' computes).

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

import importlib.util
import os
import time

from ..base import MXNetError
from ..graph import evaluate, verify
from . import passes

__all__ = ["Executable", "InterpretedExecutable", "compile_graph", "PASSES", "debug_enabled"]


_STEPS = {
    "infer_shape": lambda g, ctx, train: passes.infer_shape(g),
    "infer_type": lambda g, ctx, train: passes.infer_type(g),
    "dce": lambda g, ctx, train: passes.dce(g, is_train=train),
    "fold": lambda g, ctx, train: passes.fold(g, xp=ctx.xp),
    "cse": lambda g, ctx, train: passes.cse(g),
    "decompose": lambda g, ctx, train: passes.decompose(g, is_train=train),
    "fuse_elementwise": lambda g, ctx, train: passes.fuse_elementwise(g),
}

_DEFAULT = ("infer_shape", "infer_type", "dce", "fold", "cse", "decompose", "fuse_elementwise")

#: The graph passes each backend runs, in order (``plan_memory`` always follows).
PASSES = {"cpu": _DEFAULT, "gpu": _DEFAULT}


class Executable:
    """A compiled graph; see the module docstring for the contract."""

    graph = None
    source = None
    plan = None
    passes = ()
    pass_stats = None

    def __call__(self, inputs, rng=None):
        raise NotImplementedError


class InterpretedExecutable(Executable):
    """Runs the graph with the reference interpreter (the fallback of every backend)."""

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


def _has_codegen():
    try:
        return importlib.util.find_spec("hybridgpu.compiler.codegen.python") is not None
    except ModuleNotFoundError:
        return False


def _build(graph, plan, ctx, is_train, flags):
    executor = flags.get("executor") or os.environ.get("HYBRIDGPU_EXECUTOR") or "default"
    if not ctx.is_gpu and executor != "interpreter" and _has_codegen():
        from .codegen.python import build_cpu_executable

        return build_cpu_executable(graph, plan, ctx, is_train)
    if ctx.is_gpu and executor != "interpreter":
        from ..executor.gpu.runtime import build_gpu_executable

        built = build_gpu_executable(graph, plan, ctx, is_train, flags)
        if built is not None:
            return built
    return InterpretedExecutable(graph, ctx, is_train, plan)


def compile_graph(graph, ctx, is_train, flags=None):
    """An Executable of ``graph`` for ``ctx``: the backend's passes, a memory plan, then the
    backend's executable (see the module docstring). ``graph`` itself is not changed."""
    flags = dict(flags or {})
    debug = debug_enabled(flags)
    names = flags.get("passes")
    if names is None:
        names = PASSES["gpu" if ctx.is_gpu else "cpu"]
    graph, stats = _optimize(graph, ctx, is_train, tuple(names), debug)
    start = time.perf_counter()
    plan = passes.plan_memory(graph)
    stats["plan_memory"] = (len(graph), time.perf_counter() - start)
    if debug:
        plan.check()
    executable = _build(graph, plan, ctx, is_train, flags)
    executable.plan = plan
    executable.passes = [*names, "plan_memory"]
    executable.pass_stats = stats
    return executable
