"""``compile_graph(graph, ctx, is_train)``: the passes a backend runs, then an ``Executable``.

The Executable contract (every backend keeps it):

* ``executable(inputs, rng=None) -> list of arrays``: ``inputs`` maps each graph variable's
  name to an array of the context's module (numpy / cupy); outputs are fresh arrays that no
  later call overwrites. Ops that update auxiliary states (BatchNorm in training) write into
  the arrays passed in, as the reference interpreter does.
* ``executable.graph``: the optimized Graph (``print(executable.graph)``, one line a node).
* ``executable.source``: generated code, where the backend generates any (else None).

Today every context gets ``InterpretedExecutable``: the reference interpreter over the graph.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph
    >>> x = mx.sym.var("x")
    >>> exe = compile_graph(Graph((mx.sym.relu(x) * 2)._outputs), mx.cpu(), is_train=False)
    >>> exe({"x": np.array([-1.0, 3.0])})
    [array([0., 6.])]
"""

from __future__ import annotations

from ..graph import evaluate

__all__ = ["Executable", "InterpretedExecutable", "compile_graph"]


class Executable:
    """A compiled graph; see the module docstring for the contract."""

    graph = None
    source = None

    def __call__(self, inputs, rng=None):
        raise NotImplementedError


class InterpretedExecutable(Executable):
    """Runs the graph with the reference interpreter (the fallback of every backend)."""

    def __init__(self, graph, ctx, is_train):
        self.graph = graph
        self.ctx = ctx
        self.is_train = is_train

    def __call__(self, inputs, rng=None):
        with self.ctx.scope():
            outs = evaluate(self.graph, inputs, self.ctx.xp, is_train=self.is_train, rng=rng)
        # a graph output that is a variable would hand out the input array itself
        return [o.copy() if e.node.is_variable else o for o, e in zip(outs, self.graph.outputs)]


def compile_graph(graph, ctx, is_train, flags=None):
    """An Executable of ``graph`` for ``ctx`` (shapes and dtypes already inferred)."""
    return InterpretedExecutable(graph, ctx, is_train)
