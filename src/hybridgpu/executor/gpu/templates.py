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
    ReduceSpec(shape=(2, 3, 4, 5), axes=(2, 3), in_dtype='float32', out_dtype='float32', kind='mean', scale=1.0, rows_arg=False)
"""  # noqa: E501

from __future__ import annotations

import math

from ...compiler.codegen.cuda.batchnorm import BatchNormSpec
from ...compiler.codegen.cuda.ctype import FLOATS, STORAGE
from ...compiler.codegen.cuda.elementwise import ElementwiseSpec
from ...compiler.codegen.cuda.philox import DropoutSpec
from ...compiler.codegen.cuda.pick import PickSpec
from ...compiler.codegen.cuda.reduce import KINDS, ReduceSpec
from ...compiler.codegen.cuda.window import ConvSpec, PoolSpec
from ...ops.conv import _deconv_pad_adj
from ...ops.norm import moving_average_momentum
from ...ops.reduce import reduction_axes
from ...ops.rules import known, normalize_axis

__all__ = ["reduce_spec", "pool_spec", "conv_spec", "dropout_spec", "batch_norm_spec",
           "deconv_spec", "wgrad_spec", "pick_spec", "GEMM_CONV_DTYPES"]

#: Row-wise ops: op name -> (kind, sign of the input).
_ROWS = {"softmax": ("softmax", 1.0), "log_softmax": ("log_softmax", 1.0),
         "softmin": ("softmax", -1.0)}
_GLOBAL_POOL = {"avg": "mean", "max": "max", "sum": "sum"}
GEMM_CONV_DTYPES = frozenset({"float16", "float32", "float64"})


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
    """A PoolSpec (2-D windows) or ReduceSpec (global pooling) of a Pooling node, or the
    PoolSpec of a ``_backward_Pooling`` node (2-D windows; ``out_hw`` is the pooled size), or
    None."""
    node = graph.nodes[i]
    backward = node.op.name == "_backward_Pooling"
    if node.op.name != "Pooling" and not backward:
        return None
    io = _io(graph, i)
    attrs = node.attrs
    if io is None or attrs.get("layout") not in (None, "NCHW", "NCW", "NCDHW"):
        return None
    shape, dtype, out, _ = io
    if backward:
        if len(node.inputs) != 3:
            return None
        out = tuple(graph.shapes.get(graph.key(node.inputs[1])) or ())
        if attrs["global_pool"]:  # avg and sum spread out_grad over the plane
            if attrs["pool_type"] not in ("avg", "sum") or len(out) != len(shape):
                return None
            count = math.prod(shape[2:])
            body = f"out0 = in0 / (T){count};" if attrs["pool_type"] == "avg" else "out0 = in0;"
            return ElementwiseSpec(shape, dtype, [(out, dtype)], [dtype], body)
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


#: pick-family op -> (whether it is the gradient, position of the data input).
_PICKS = {"pick": (False, 0), "_backward_pick": (True, 2)}


def pick_spec(graph, i):
    """For ``pick`` or ``_backward_pick``: a PickSpec (clip or wrap, float data, an index of a
    stored dtype), or None."""
    node = graph.nodes[i]
    found = _PICKS.get(node.op.name)
    if found is None or node.attrs["mode"] not in ("clip", "wrap"):
        return None
    backward, at = found
    data_key, index_key = graph.key(node.inputs[at]), graph.key(node.inputs[1])
    shape, dtype = graph.shapes.get(data_key), str(graph.dtypes.get(data_key))
    index_dtype = str(graph.dtypes.get(index_key))
    if not known(shape) or dtype not in FLOATS or index_dtype not in STORAGE or not shape:
        return None
    if backward and str(graph.dtypes.get(graph.key(node.inputs[0]))) != dtype:
        return None
    axis = normalize_axis(node.attrs["axis"], len(shape))
    spec = PickSpec(math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]), dtype,
                    index_dtype, node.attrs["mode"], backward)
    return spec if spec.axis and spec.work else None


def batch_norm_spec(graph, i, is_train):
    """A BatchNormSpec for BatchNorm in training (batch statistics) or its backward, or None
    (BatchNorm with the moving statistics is rewritten as elementwise ops by ``decompose``)."""
    node = graph.nodes[i]
    backward = node.op.name == "_backward_BatchNorm"
    if node.op.name != "BatchNorm" and not backward:
        return None
    attrs = node.attrs
    train = is_train and not attrs["use_global_stats"]
    if not (train or backward) or len(node.inputs) != 5 or node.num_outputs != 3:
        return None
    keys = [graph.key(e) for e in node.inputs]
    data = keys[1] if backward else keys[0]
    shape, dtype = graph.shapes.get(data), str(graph.dtypes.get(data))
    param = str(graph.dtypes.get(keys[2]))
    if not known(shape) or dtype not in FLOATS or param not in FLOATS or 0 in shape:
        return None
    if any(str(graph.dtypes.get(k)) != param for k in keys[2:]):
        return None
    axis = normalize_axis(attrs["axis"], len(shape), node.op.name)
    return BatchNormSpec(tuple(shape), dtype, axis, param, float(attrs["eps"]),
                         moving_average_momentum(attrs["momentum"]), bool(attrs["fix_gamma"]),
                         backward, train)


def _conv_like(graph, i, name, n_inputs):
    """``(node, keys, shapes, dtype, out shape)`` of a 2-D NCHW node of op ``name`` with one
    group, float32/64, known shapes; else None."""
    node = graph.nodes[i]
    if node.op.name != name or len(node.inputs) < n_inputs or node.num_outputs != 1:
        return None
    attrs = node.attrs
    keys = [graph.key(e) for e in node.inputs]
    shapes = [graph.shapes.get(k) for k in keys]
    out = graph.shapes.get((i, 0))
    dtypes = {str(graph.dtypes.get(k)) for k in keys} | {str(graph.dtypes.get((i, 0)))}
    if len(dtypes) != 1 or next(iter(dtypes)) not in GEMM_CONV_DTYPES:
        return None
    if not all(known(s) for s in (*shapes, out)) or len(out) != 4 or attrs["num_group"] != 1:
        return None
    if attrs.get("layout") not in (None, "NCHW") or len(tuple(attrs["kernel"])) != 2:
        return None
    return node, keys, shapes, next(iter(dtypes)), tuple(out)


def deconv_spec(graph, i):
    """A ConvSpec, in the terms of the convolution it transposes (``shape``: this node's
    output; ``out_shape``: its input), of a 2-D one-group Deconvolution, or None."""
    found = _conv_like(graph, i, "Deconvolution", 2)
    if found is None:
        return None
    node, keys, shapes, dtype, out = found
    attrs = node.attrs
    pad, _ = _deconv_pad_adj(attrs, shapes[0][2:])
    stride, dilate = _pair(attrs["stride"], 1), _pair(attrs["dilate"], 1)
    if None in (stride, dilate):
        return None
    bias = not attrs["no_bias"] and len(keys) == 3
    return ConvSpec(out, tuple(shapes[0]), tuple(attrs["kernel"]), stride, tuple(pad), dilate,
                    1, bias, dtype)


def wgrad_spec(graph, i):
    """A ConvSpec (``shape``: the data, ``out_shape``: the output gradient) of a 2-D
    one-group ``_backward_Convolution_weight(out_grad, data)``, or None."""
    found = _conv_like(graph, i, "_backward_Convolution_weight", 2)
    if found is None:
        return None
    node, keys, shapes, dtype, _ = found
    attrs = node.attrs
    stride, pad, dilate = (_pair(attrs["stride"], 1), _pair(attrs["pad"], 0),
                           _pair(attrs["dilate"], 1))
    if None in (stride, pad, dilate) or len(shapes[1]) != 4:
        return None
    return ConvSpec(tuple(shapes[1]), tuple(shapes[0]), tuple(attrs["kernel"]), stride, pad,
                    dilate, 1, False, dtype)
