"""``GpuMemoryPolicy``: how the gpu backend asks the memory planner to lay out a program.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.compiler.passes import plan_memory
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> g = Graph(mx.sym.Flatten(mx.sym.relu(mx.sym.var("x")) * 2)._outputs)
    >>> infer_shapes(g, {"x": (2, 3, 4)}); infer_types(g, {"x": "float32"})
    >>> plan = plan_memory(g, policy=GpuMemoryPolicy())
    >>> sorted(plan.storage), sorted(plan.fresh)   # the Flatten is a value, not a view
    ([(1, 0), (2, 0)], [(3, 0)])
"""

from __future__ import annotations

from ...compiler.passes.plan_memory import MemoryPolicy, NodeMemory

__all__ = ["GpuMemoryPolicy"]


class GpuMemoryPolicy(MemoryPolicy):
    """The gpu backend's answers to the planner: every node writes into the arena (a kernel,
    a GEMM, a copy, or an eager step copying its result in: no value lives outside it, views
    included), elementwise ones in place over a dying input as the default policy allows;
    graph outputs are planned apart (``plan.fresh``), laid out in the arena by the lowering
    and copied out on each call."""

    outputs = "fresh"

    def node(self, graph, i):
        memory = super().node(graph, i)
        return NodeMemory("out") if memory.kind != "out" else memory
