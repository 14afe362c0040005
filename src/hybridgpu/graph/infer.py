"""Shape and dtype inference over a whole Graph, filling ``graph.shapes`` / ``graph.dtypes``.

Each op's rule runs forward over the nodes until nothing changes, so shapes that only an op
can know (a FullyConnected weight from the data's shape) flow back into the variables. A
conflict names the node and both shapes.

Example:
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph.node import Node, Entry
    >>> from hybridgpu.graph.graph import Graph
    >>> x, w = Node.variable("x"), Node.variable("w")
    >>> fc = ops.get("FullyConnected")
    >>> y = Node(fc, "fc", fc.parse_attrs({"num_hidden": 4, "no_bias": True}),
    ...          [Entry(x, 0), Entry(w, 0)])
    >>> g = Graph([Entry(y, 0)])
    >>> infer_shapes(g, {"x": (2, 3)})
    >>> g.shapes[(1, 0)], g.shapes[(2, 0)]
    ((4, 3), (2, 4))
"""

from __future__ import annotations

from ..base import MXNetError, dtype_of_flag
from ..limits import check_elements
from ..ops.rules import known, merge_shapes
from ..safe_text import display

__all__ = ["infer_shapes", "infer_types", "unknown_inputs", "InferenceError"]

_MAX_ROUNDS = 10


class InferenceError(MXNetError):
    """Shape or type inference failed at a node; ``node_name`` says which."""

    def __init__(self, message, node_name):
        super().__init__(message)
        self.node_name = node_name


def _merge(graph, key, new, node, what):
    if new is None:
        return False
    old = graph.shapes.get(key)
    try:
        merged = merge_shapes(old, tuple(new))
    except MXNetError:
        raise InferenceError(f"shape conflict at node {display(node.name)} ({what}): {old} vs "
                             f"{tuple(new)}", node.name) from None
    if merged != old:
        try:
            check_elements(merged, f"node {display(node.name)} ({what})")
        except MXNetError as err:
            raise InferenceError(str(err), node.name) from None
        graph.shapes[key] = merged
        return True
    return False


def _shape_round(graph, skip_known):
    changed = False
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            continue
        if skip_known and all(known(graph.shapes.get((i, k)))
                              for k in range(node.num_outputs)):
            continue
        in_keys = [graph.key(e) for e in node.inputs]
        in_shapes = [graph.shapes.get(k) for k in in_keys]
        try:
            ins, outs = node.op.infer_shape(node.attrs, in_shapes)
        except MXNetError as err:
            raise InferenceError(f"shape inference failed at node {node.name!r}: {err}",
                                 node.name) from None
        names = node.input_names()
        for k, key, shape in zip(range(len(ins)), in_keys, ins):
            label = f"input {names[k] if k < len(names) else k}"
            changed |= _merge(graph, key, shape, node, label)
        for k, shape in enumerate(outs):
            changed |= _merge(graph, (i, k), shape, node, f"output {k}")
    return changed


def infer_shapes(graph, given, use_cache=False):
    """Fill ``graph.shapes`` from ``given`` (variable name -> shape) and each variable's
    ``__shape__`` attribute.

    Every run records fully known output shapes on the nodes (``node.shape_cache``).
    ``use_cache=True`` starts from those and skips nodes already known: fast for asking one
    output's shape again and again while a graph grows (``Symbol.shape`` in a deep trace), but
    it does not fill the variables above cached nodes, so a trace runs a full inference."""
    if use_cache:
        for i, node in enumerate(graph.nodes):
            for k, shape in node.shape_cache.items():
                graph.shapes[(i, k)] = shape
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            shape = given.get(node.name)
            if shape is None and "__shape__" in node.extra:
                from ..ops.attrs import Shape

                shape = Shape().parse(node.extra["__shape__"])
            if shape is not None:
                _merge(graph, (i, 0), tuple(shape), node, "given shape")
    for _ in range(_MAX_ROUNDS):
        if not _shape_round(graph, use_cache):
            break
    for i, node in enumerate(graph.nodes):
        for k in range(node.num_outputs if not node.is_variable else 0):
            if known(graph.shapes.get((i, k))):
                node.shape_cache[k] = graph.shapes[(i, k)]


def unknown_inputs(graph):
    """Names of variables whose shape is still not fully known."""
    return [n.name for i, n in enumerate(graph.nodes)
            if n.is_variable and not known(graph.shapes.get((i, 0)))]


def infer_types(graph, given):
    """Fill ``graph.dtypes`` from ``given`` (variable name -> dtype name) and ``__dtype__``."""
    from ..ops.attrs import DType

    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            dtype = given.get(node.name) or _dtype_attr(node)
            if dtype is not None:
                graph.dtypes[(i, 0)] = DType().parse(dtype)
    for _ in range(_MAX_ROUNDS):
        changed = False
        for i, node in enumerate(graph.nodes):
            if node.is_variable:
                continue
            keys = [graph.key(e) for e in node.inputs]
            try:
                ins, outs = node.op.infer_type(node.attrs, [graph.dtypes.get(k) for k in keys])
            except MXNetError as err:
                raise InferenceError(f"type inference failed at node {node.name!r}: {err}",
                                     node.name) from None
            for key, dtype in [*zip(keys, ins), *(((i, k), t) for k, t in enumerate(outs))]:
                if dtype is not None and graph.dtypes.get(key) is None:
                    graph.dtypes[key] = dtype
                    changed = True
        if not changed:
            break


def _dtype_attr(node):
    """A variable's ``__dtype__``: MXNet writes its numeric type flag (a name passes through)."""
    flag = node.extra.get("__dtype__")
    if flag is None:
        return None
    name = dtype_of_flag(flag)
    return flag if name is None else name
