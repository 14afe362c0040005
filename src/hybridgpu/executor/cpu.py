"""The cpu backend: ``CpuExecutable`` runs a generated CPU program (see
``compiler.codegen.python``); importing this module registers the backend for cpu contexts
(``compiler.pipeline.register_backend``), with its memory policy (``CpuMemoryPolicy``: lowered
nodes write into planned buffers, outputs fresh per call).

The hybridize flags, as the cpu backend reads them:

* ``static_alloc``: accepted; every program already works in buffers planned and allocated
  once per executable (what MXNet's flag asks for), so True and False run the same program.
  Outputs stay fresh arrays per call either way (a later call never overwrites a result).
* ``static_shape``: accepted; each input signature already compiles a program of its own
  with the shapes as constants, so it changes nothing.
* ``cuda_graph``: ignored on cpu (a CUDA backend's flag).

The flags the backend was built with are ``executable.flags``.

The program's source is compiled once; each instance of it (its module-level buffers and its
``forward`` function) serves one call at a time. A call takes a free instance, or makes a
new one when every instance is busy (another thread is running this executable), so threads
never share buffers and never wait for each other.

The source is registered with ``linecache`` under a unique file name, so tracebacks and
debuggers show the generated lines; an error raised while running is re-raised as an
MXNetError naming the graph node (as the reference interpreter does) and the line.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.compiler.codegen.python import build_cpu_executable
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x, w = mx.sym.var("x"), mx.sym.var("w")
    >>> g = Graph(mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True, name="fc")._outputs)
    >>> infer_shapes(g, {"x": (1, 3)}); infer_types(g, {"x": "float32", "w": "float32"})
    >>> exe = build_cpu_executable(g, None, mx.cpu(), is_train=False)
    >>> exe({"x": np.ones((1, 3), np.float32), "w": np.ones((2, 3), np.float32)})
    [array([[3., 3.]], dtype=float32)]
    >>> exe.program.lowered, exe.program.fallback
    (['fc'], [])
"""

from __future__ import annotations

import itertools
import linecache
import weakref

from ..base import MXNetError
from ..compiler.codegen.python import CpuMemoryPolicy, generate
from ..compiler.pipeline import Executable, register_backend

__all__ = ["CpuExecutable", "build"]

_serial = itertools.count()


class CpuExecutable(Executable):
    """A compiled cpu graph: ``exe(inputs, rng=None) -> [arrays]`` (the Executable contract
    of ``compiler.pipeline``); ``source`` is the generated Python, ``program`` the Program;
    ``print(exe)`` shows the signature and the program, ``repr(exe)`` the signature."""

    def __init__(self, graph, program, ctx, is_train):
        self.graph, self.program, self.ctx, self.is_train = graph, program, ctx, is_train
        self.source = program.source
        self.filename = f"<hybridgpu-cpu-{next(_serial)}>"
        self._code = compile(program.source, self.filename, "exec")
        linecache.cache[self.filename] = (len(self.source), None,
                                          self.source.splitlines(True), self.filename)
        weakref.finalize(self, linecache.cache.pop, self.filename, None)
        self._free = [self._instance()]

    def _instance(self):
        """A fresh copy of the program: its own buffers and ``forward``."""
        namespace = dict(self.program.namespace)
        exec(self._code, namespace)
        return namespace[self.program.entry]

    def __call__(self, inputs, rng=None):
        free = self._free
        try:
            forward = free.pop()
        except IndexError:  # every instance is busy: this thread gets its own
            forward = self._instance()
        try:
            return forward(inputs, rng)
        except (MXNetError, ValueError, TypeError, IndexError, KeyError, ArithmeticError,
                AttributeError) as err:
            raise self._explain(err) from None
        finally:
            free.append(forward)

    def __str__(self):
        """The signature, then the generated program (``print(net.last_executable)``)."""
        return f"cpu program of {self.signature()}\n{self.source}"

    @property
    def instances(self):
        """How many copies of the program (buffer sets) exist now."""
        return len(self._free)

    def _explain(self, err):
        """``err`` as an MXNetError naming the node whose line raised it."""
        line = _program_line(err.__traceback__, self.filename)
        node_index = self.program.line_nodes.get(line)
        if node_index is None:
            return err
        node = self.graph.nodes[node_index]
        if node.is_variable and isinstance(err, KeyError):
            return MXNetError(f"no value for input {node.name!r}")
        text = linecache.getline(self.filename, line).strip()
        if isinstance(err, MXNetError):
            return MXNetError(f"while evaluating node %{node_index} {node.name!r}: {err}")
        shapes = [self.graph.shapes.get(self.graph.key(e)) for e in node.inputs]
        return MXNetError(f"while evaluating node %{node_index} {node.name!r} ({node.op.name}) "
                          f"on inputs of shapes {shapes}, at line {line} of the generated "
                          f"program `{text}`: {type(err).__name__}: {err}")


def build(graph, plan, ctx, is_train, flags=None):
    """The cpu backend's ``build``: the program generated from ``plan`` (the pipeline's,
    made with ``CpuMemoryPolicy``; planned here when None), as a CpuExecutable."""
    executable = CpuExecutable(graph, generate(graph, plan, is_train), ctx, is_train)
    executable.flags = dict(flags or {})
    return executable


def _policy(graph, is_train, flags):
    return CpuMemoryPolicy(graph, is_train)


register_backend("cpu", build, _policy)


def _program_line(tb, filename):
    """The line of ``filename`` in traceback ``tb`` nearest the program (its frame)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
