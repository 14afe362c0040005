"""The reference interpreter: evaluate a Graph with each op's ``compute``, one node at a time.
It is the semantic ground truth every executor is tested against.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph.node import Node, Entry
    >>> from hybridgpu.graph.graph import Graph
    >>> x = Node.variable("x")
    >>> y = Node(ops.get("relu"), "r", {}, [Entry(x, 0)])
    >>> evaluate(Graph([Entry(y, 0)]), {"x": np.array([-1.0, 2.0])}, np)
    [array([0., 2.])]
"""

from __future__ import annotations

from ..base import MXNetError

__all__ = ["evaluate"]


def evaluate(graph, inputs, xp, is_train=False, rng=None):
    """Outputs of ``graph`` (a list of arrays) given ``inputs`` (variable name -> array).

    Ops that mutate auxiliary states (BatchNorm in training) write into the arrays passed in.
    """
    values = {}
    release = graph.release_plan()  # drop each value after its last reader, as eager code does
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            if node.name not in inputs:
                raise MXNetError(f"no value for input {node.name!r}")
            values[(i, 0)] = inputs[node.name]
            continue
        args = [values[graph.key(e)] for e in node.inputs]
        extra = {}
        if node.op.random:
            extra["rng"] = rng if rng is not None else xp.random
        if node.op.mode_dependent:
            extra["is_train"] = is_train
        try:
            result = node.op.compute(xp, *args, **node.attrs, **extra)
        except MXNetError as err:
            raise MXNetError(f"while evaluating node %{i} {node.name!r}: {err}") from None
        except (ValueError, TypeError, IndexError) as err:
            shapes = [tuple(a.shape) for a in args]
            raise MXNetError(f"while evaluating node %{i} {node.name!r} ({node.op.name}) on "
                             f"inputs of shapes {shapes}: {err}") from None
        for k, r in enumerate(result if isinstance(result, tuple) else (result,)):
            values[(i, k)] = r
        for key in release.get(i, ()):
            values.pop(key, None)
    return [values[graph.key(e)] for e in graph.outputs]
