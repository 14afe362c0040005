"""Decompose: rewrite ops into elementwise pieces that ``fuse_elementwise`` can merge with
their neighbours.

* **BatchNorm in inference** (not training, or ``use_global_stats``), when only its first
  output is read, becomes scale-and-shift over per-channel vectors:
  ``scale = gamma * rsqrt(moving_var + eps)`` (``rsqrt(...)`` alone with ``fix_gamma``) and
  ``out = (x - moving_mean) * scale + beta``, the vectors reshaped to broadcast along ``axis``.
  This is the op's own arithmetic in the op's order, so results match it bit for bit (the
  shorter ``x * scale + shift`` form saves one operation but loses precision where ``x`` is
  close to the mean). The big operations then fuse with what follows (ReLU, a residual add).
  float16 data with float32 statistics (``net.cast('float16')`` keeps BatchNorm's parameters
  in float32, as MXNet) is cast to float32 first and the result back, as the op computes.
* **GEMM bias**: a FullyConnected, Convolution or Deconvolution with a bias whose only reader
  is an elementwise op becomes the op without bias plus ``broadcast_add(y, bias)``, so the
  bias add and the activation after it run as one fused epilogue.

Which input is the bias and along which axis it is added is read from the ops' attributes
(``no_bias``; ``num_hidden``: the last axis; ``num_filter``: axis 1, channels first) until
OpDef carries a ``bias_axis`` property.

Returns a new Graph (the same Graph when nothing applies); the input graph is not changed.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> y = mx.sym.relu(mx.sym.FullyConnected(x, num_hidden=2, name="fc"))
    >>> g = Graph(y._outputs)
    >>> infer_shapes(g, {"x": (1, 3)}); infer_types(g, {"x": "float32"})
    >>> print(decompose(g))
    %0 = var x : (1, 3) float32
    %1 = var fc_weight : (2, 3) float32
    %2 = FullyConnected(%0, %1) num_hidden=2 no_bias=True : (1, 2) float32
    %3 = var fc_bias : (2,) float32
    %4 = broadcast_add(%2, %3) : (1, 2) float32
    %5 = relu(%4) : (1, 2) float32
    return %5
"""

from __future__ import annotations

from ...graph import Entry, Node
from ...ops.rules import known, normalize_axis
from .rewrite import Rewriter, make_node, readers

__all__ = ["decompose"]


def _along(entry, name, shape, axis):
    """``entry`` (a vector) reshaped to broadcast along ``axis`` of ``shape``."""
    target = tuple(shape[axis] if d == axis else 1 for d in range(len(shape)))
    return Entry(make_node("Reshape", name, [entry], shape=target), 0)


def _is_batchnorm(node):
    names = tuple(node.input_names())
    return node.op.mutates_aux and names[:3] == ("data", "gamma", "beta") and len(names) == 5


def _bn_applies(graph, i, node, readers, is_train):
    """True when the BatchNorm node ``i`` runs on its moving statistics and only its first
    output is read (and every input has the data's dtype)."""
    if not _is_batchnorm(node):
        return False
    a, shape = node.attrs, graph.shapes.get((i, 0))
    if (is_train and not a["use_global_stats"]) or not known(shape):
        return False
    if any(readers.get((i, k)) for k in (1, 2)):
        return False
    params = {graph.dtypes.get(graph.key(e)) for e in node.inputs[1:]}
    data = graph.dtypes.get(graph.key(node.inputs[0]))
    return None not in params and data is not None and len(params) == 1


def _batchnorm(graph, i, node, rw):
    a, shape = node.attrs, graph.shapes[(i, 0)]
    x, gamma, beta, mean, var = (rw.entry(e) for e in node.inputs)
    # (SyncBatchNorm has no axis attribute: its channel axis is 1)
    n, ax = node.name, normalize_axis(a.get("axis", 1), len(shape), node.op.name)
    data_dtype = str(graph.dtypes[graph.key(node.inputs[0])])
    param_dtype = str(graph.dtypes[graph.key(node.inputs[3])])
    if data_dtype != param_dtype:  # float16 data, float32 statistics: computed as the op does
        x = Entry(make_node("Cast", f"{n}_data_cast", [x], dtype=param_dtype), 0)
    plus = Entry(make_node("_plus_scalar", f"{n}_var_eps", [var], scalar=a["eps"],
                           is_int=False), 0)
    scale = Entry(make_node("rsqrt", f"{n}_invstd", [plus]), 0)
    if not a["fix_gamma"]:
        scale = Entry(make_node("broadcast_mul", f"{n}_scale", [gamma, scale]), 0)
    centered = make_node("broadcast_sub", f"{n}_center", [x, _along(mean, f"{n}_mean_c",
                                                                       shape, ax)])
    scaled = make_node("broadcast_mul", f"{n}_mul",
                       [Entry(centered, 0), _along(scale, f"{n}_scale_c", shape, ax)])
    out = make_node("broadcast_add", f"{n}_shift",
                    [Entry(scaled, 0), _along(beta, f"{n}_beta_c", shape, ax)])
    if data_dtype != param_dtype:
        out = make_node("Cast", f"{n}_out_cast", [Entry(out, 0)], dtype=data_dtype)
    rw.replace(node, 0, Entry(out, 0))
    return True


def _bias_axis(node, ndim):
    """The axis a GEMM-like op adds its bias along, or None."""
    a = node.attrs
    if "num_hidden" in a:
        return ndim - 1
    if "num_filter" in a and ndim >= 3:
        return 1
    return None


def _gemm_bias(graph, i, node, rw, readers, elementwise):
    a, shape = node.attrs, graph.shapes.get((i, 0))
    if a.get("no_bias", True) or node.num_outputs != 1 or not known(shape):
        return False
    users = readers.get((i, 0), [])
    axis = _bias_axis(node, len(shape))
    if len(users) != 1 or users[0] is None or axis is None:
        return False
    if users[0] not in elementwise:
        return False
    data, weight, bias = (rw.entry(e) for e in node.inputs)
    given = {**node.given_attrs, "no_bias": "True"}
    gemm = Node(node.op, node.name, {**a, "no_bias": True}, [data, weight], given_attrs=given,
                extra=node.extra)
    if axis != len(shape) - 1:
        target = (shape[axis],) + (1,) * (len(shape) - 1 - axis)
        bias = Entry(make_node("Reshape", f"{node.name}_bias_c", [bias], shape=target), 0)
    add = make_node("broadcast_add", f"{node.name}_bias", [Entry(gemm, 0), bias])
    rw.replace(node, 0, Entry(add, 0))
    return True


def _elementwise_after(graph, split):
    """Nodes that are elementwise ops with a C expression, or BatchNorms about to split."""
    return {i for i, n in enumerate(graph.nodes) if i in split or (
        not n.is_variable and n.op.elementwise and n.op.cuda_for(n.attrs) is not None)}


def decompose(graph, is_train=False):
    """``graph`` with inference BatchNorms and GEMM biases split into elementwise ops."""
    rw = Rewriter(graph)
    value_readers = readers(graph)
    split = {i for i, n in enumerate(graph.nodes)
             if not n.is_variable and _bn_applies(graph, i, n, value_readers, is_train)}
    elementwise = _elementwise_after(graph, split)
    changed = False
    for i, node in enumerate(graph.nodes):
        if node.is_variable:
            continue
        if i in split:
            done = _batchnorm(graph, i, node, rw)
        elif "no_bias" in node.attrs and len(node.inputs) == 3:
            done = _gemm_bias(graph, i, node, rw, value_readers, elementwise)
        else:
            done = False
        if not done:
            rw.keep(node)
        changed |= done
    return rw.finish() if changed else graph
