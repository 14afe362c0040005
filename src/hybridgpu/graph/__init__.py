"""The graph IR shared by symbol, autograd and the compiler: nodes, the topologically ordered
Graph, its printer and verifier, whole-graph shape/dtype inference and the reference
interpreter (the ground truth every executor is tested against).

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> x = Node.variable("x")
    >>> g = Graph([Entry(Node(ops.get("exp"), "e", {}, [Entry(x, 0)]), 0)])
    >>> print(g)
    %0 = var x
    %1 = exp(%0)
    return %1
"""

from .graph import Graph, topological_order
from .infer import InferenceError, infer_shapes, infer_types, unknown_inputs
from .interpreter import evaluate
from .node import Entry, Node
from .printer import format_graph
from .verifier import verify

__all__ = ["Graph", "Node", "Entry", "topological_order", "infer_shapes", "infer_types",
           "unknown_inputs", "evaluate", "format_graph", "verify", "InferenceError"]
