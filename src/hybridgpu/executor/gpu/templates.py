"""Which kernel template computes a node: reductions, softmax, pooling and convolution.

Each function reads the node's attributes and inferred shapes and returns the spec of a
generated kernel (``compiler/codegen/cuda``), or None when the template does not cover the case
(the node then runs eagerly). The op facts (axes, geometry) come from the ops' own helpers;
the tables here only say which template an op uses.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> g = Graph(mx.sym.mean(mx.sym.var("x"), axis=(2, 3))._outputs)
    >>> infer_shapes(g, {"x": (2, 3, 4, 5)}); infer_types(g, {"x": "float32"})
    >>> reduce_spec(g, 1)
    ReduceSpec(shape=(2, 3, 4, 5), axes=(2, 3), in_dtype='float32', out_dtype='float32', kind='mean', scale=1.0)
"""  # noqa: E501

from __future__ import annotations

import math

from ...compiler.codegen.cuda.ctype import FLOATS
from ...compiler.codegen.cuda.elementwise import ElementwiseSpec
from ...compiler.codegen.cuda.philox import DropoutSpec
from ...compiler.codegen.cuda.reduce import KINDS, ReduceSpec
from ...compiler.codegen.cuda.window import ConvSpec, PoolSpec
from ...ops.reduce import reduction_axes
from ...ops.rules import known, normalize_axis

__all__ = ["reduce_spec", "pool_spec", "conv_spec", "dropout_spec", "GEMM_CONV_DTYPES"]

#: Row-wise ops: op name -> (kind, sign of the input).
_ROWS = {"softmax": ("softmax", 1.0), "log_softmax": ("log_softmax", 1.0),
         "softmin": ("softmax", -1.0)}
_GLOBAL_POOL = {"avg": "mean", "max": "max", "sum": "sum"}
GEMM_CONV_DTYPES = frozenset({"float32", "float64"})


def _io(graph, i, several=False):
    """``(in shape, in dtype, out shape, out dtype)`` of input 0 and output 0 of a node with
    one output (or ``several``), or None when unknown or not float."""
    node = graph.nodes[i]
    if (node.num_outputs != 1 and not several) or not node.inputs:
        return None
    key = graph.key(node.inputs[0])
    shape, out = graph.shapes.get(key), graph.shapes.get((i, 0))
    dtype, out_dtype = graph.dtypes.get(key), graph.dtypes.get((i, 0))
    if not known(shape) or not known(out) or str(dtype) not in FLOATS:
        return None
    if str(out_dtype) not in FLOATS or 0 in shape:
        return None
    return tuple(shape), str(dtype), tuple(out), str(out_dtype)


def reduce_spec(graph, i):
    """A ReduceSpec for a reduction (sum, mean, max...) or softmax-like node, or None."""
    node = graph.nodes[i]
    name, attrs = node.op.name, node.attrs
    io = _io(graph, i, name == "LayerNorm")
    if io is None or len(node.inputs) != (3 if name == "LayerNorm" else 1):
        return None
    shape, dtype, out, out_dtype = io
    if name in KINDS:
        axes = reduction_axes(name, attrs.get("axis"), shape, attrs.get("exclude", False))
        if math.prod(out) != math.prod(d for a, d in enumerate(shape) if a not in axes):
            return None
        return ReduceSpec(shape, tuple(axes), dtype, out_dtype, name)
    if name == "LayerNorm" and shape:
        axis = normalize_axis(attrs["axis"], len(shape), name)
        return ReduceSpec(shape, (axis,), dtype, out_dtype, "layernorm", float(attrs["eps"]))
    if name in _ROWS and not attrs.get("use_length") and shape:
        kind, sign = _ROWS[name]
        axis = normalize_axis(attrs.get("axis", -1), len(shape), name)
        temperature = attrs.get("temperature")
        scale = sign / (1.0 if temperature is None else temperature)
        return ReduceSpec(shape, (axis,), dtype, out_dtype, kind, scale)
    return None


def _pair(value, default):
    value = tuple(value or ())
    return value if len(value) == 2 else (default, default) if not value else None


def pool_spec(graph, i):
    """A PoolSpec (2-D windows) or ReduceSpec (global pooling) of a Pooling node, or None."""
    node = graph.nodes[i]
    if node.op.name != "Pooling":
        return None
    io = _io(graph, i)
    attrs = node.attrs
    if io is None or attrs.get("layout") not in (None, "NCHW", "NCW", "NCDHW"):
        return None
    shape, dtype, out, _ = io
    kind = attrs["pool_type"]
    if attrs["global_pool"]:
        if kind not in _GLOBAL_POOL or len(shape) < 3:
            return None
        return ReduceSpec(shape, tuple(range(2, len(shape))), dtype, dtype, _GLOBAL_POOL[kind])
    if len(shape) != 4 or kind not in ("max", "avg", "sum"):
        return None
    kernel, stride, pad = (tuple(attrs["kernel"]), _pair(attrs["stride"], 1),
                           _pair(attrs["pad"], 0))
    if len(kernel) != 2 or stride is None or pad is None:
        return None
    include = attrs.get("count_include_pad") is not False
    return PoolSpec(shape, out[2:], kernel, stride, pad, kind, include, dtype)


def conv_spec(graph, i):
    """A ConvSpec of a 2-D NCHW Convolution node, or None."""
    node = graph.nodes[i]
    if node.op.name != "Convolution":
        return None
    attrs = node.attrs
    keys = [graph.key(e) for e in node.inputs]
    shapes = [graph.shapes.get(k) for k in keys]
    dtypes = {str(graph.dtypes.get(k)) for k in keys} | {str(graph.dtypes.get((i, 0)))}
    out = graph.shapes.get((i, 0))
    if len(dtypes) != 1 or next(iter(dtypes)) not in FLOATS:
        return None
    if not all(known(s) for s in (*shapes, out)) or len(shapes[0]) != 4:
        return None
    if attrs.get("layout") not in (None, "NCHW"):
        return None
    kernel = tuple(attrs["kernel"])
    stride, pad, dilate = (_pair(attrs["stride"], 1), _pair(attrs["pad"], 0),
                           _pair(attrs["dilate"], 1))
    if len(kernel) != 2 or None in (stride, pad, dilate):
        return None
    bias = not attrs["no_bias"] and len(keys) == 3
    return ConvSpec(tuple(shapes[0]), tuple(out), kernel, stride, pad, dilate,
                    attrs["num_group"], bias, next(iter(dtypes)))


def dropout_spec(graph, i, is_train):
    """For a Dropout node: an ElementwiseSpec (inactive: the data and a mask of ones), a
    DropoutSpec (active, one mask value an element), or None (shared ``axes``)."""
    node = graph.nodes[i]
    if node.op.name != "Dropout" or node.num_outputs != 2:
        return None
    key = graph.key(node.inputs[0])
    shape, dtype = graph.shapes.get(key), str(graph.dtypes.get(key))
    if not known(shape) or dtype not in FLOATS:
        return None
    attrs = node.attrs
    if not (is_train or attrs["mode"] == "always") or attrs["p"] == 0.0:
        return ElementwiseSpec(shape, dtype, [(shape, dtype)], [dtype, dtype],
                               "out0 = in0;\nout1 = (T)1;")
    if attrs["axes"] or not 0.0 <= attrs["p"] <= 1.0:
        return None
    return DropoutSpec(math.prod(shape), dtype, float(attrs["p"]), i)
