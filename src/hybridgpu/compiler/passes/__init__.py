"""Compiler passes: one verb a file, each a function from Graph to Graph (a new Graph, or the
same one where the pass says so), never changing the nodes of the graph it is given.

``infer_shape``, ``infer_type`` (fill shapes/dtypes in place), ``dce`` (drop identities and what
no output needs), ``fold`` (constants computed once), ``cse`` (duplicate computations merged),
``decompose`` (inference BatchNorm to scale-and-shift, GEMM bias to a separate add),
``fuse_elementwise`` (convex elementwise groups to one ``_fused`` node), ``absorb_casts``
(gpu only: float16/float32 Casts into the fused groups they touch) and ``plan_memory``
(buffers by liveness; returns a ``MemoryPlan``, not a Graph).

What the passes add to the IR, for executors:

* constant nodes: ``constant_value(node)`` is the array (op ``_constant``, ``attrs["value"]``);
  the node's compute returns it.
* fused nodes: ``isinstance(node.op, FusedOp)``; ``node.op.members`` (op, attrs, argument
  refs), ``node.op.outputs``, ``node.op.cuda`` / ``node.op.cuda_body``; compute runs the members.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph(mx.sym.relu(x + mx.sym.ones((2,)))._outputs)
    >>> infer_shapes(g, {"x": (2,)}); infer_types(g, {"x": "float32"})
    >>> print(fuse_elementwise(cse(fold(dce(g)))))
    %0 = var x : (2,) float32
    %1 = _constant() value=[1. 1.] : (2,) float32
    %2 = _fused(%0, %1) members=[t0 = elemwise_add(in0, in1); t1 = relu(t0)] : (2,) float32
    return %2
"""

from .absorb_casts import absorb_casts
from .cse import cse
from .dce import dce
from .decompose import decompose
from .fold import CONSTANT, constant_node, constant_value, fold
from .fuse_elementwise import FusedOp, fuse_elementwise
from .infer_shape import infer_shape
from .infer_type import infer_type
from .plan_memory import MemoryPlan, MemoryPolicy, NodeMemory, plan_memory

__all__ = ["infer_shape", "infer_type", "dce", "fold", "cse", "decompose", "fuse_elementwise",
           "absorb_casts",
           "plan_memory", "MemoryPlan", "MemoryPolicy", "NodeMemory", "FusedOp", "CONSTANT",
           "constant_node", "constant_value"]
