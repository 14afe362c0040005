"""``export_model``: a Symbol and its parameters as an ONNX model file (opset 13).

The graph's shapes and dtypes are inferred from ``in_shapes``/``in_types``; every node goes
through its converter (``converters.py``); parameters become initializers; inputs are the
variables that are not parameters (loss labels left out). Node and tensor names come from the
MXNet names, made unique; they are data in the protobuf, never code.

Example:
    >>> import os, tempfile
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    >>> params = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    >>> path = os.path.join(tempfile.mkdtemp(), "fc.onnx")
    >>> export_model(net, params, [(1, 3)], np.float32, path) == path
    True
"""

from __future__ import annotations

import os

import numpy as np

from ..base import MXNetError
from . import rnn as _rnn  # noqa: F401  (registers the RNN converters)
from .converters import CONVERTERS, unused_inputs

__all__ = ["export_model"]

OPSET = 13


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("mx.onnx.export_model needs the onnx package: pip install onnx") \
            from None
    return onnx


def _load_params(params):
    """``{name: numpy array}`` from a .params path, a dict, or ``[arg_params, aux_params]``;
    MXNet's ``arg:``/``aux:`` prefixes are dropped."""
    from .. import ndarray as nd

    if isinstance(params, (str, os.PathLike)):
        params = nd.load(os.fspath(params))
    if isinstance(params, (list, tuple)):
        merged = {}
        for part in params:
            merged.update(part)
        params = merged
    if not isinstance(params, dict):
        raise TypeError(f"export_model: params must be a path, a dict or [arg_params, "
                        f"aux_params], got {type(params).__name__}")
    out = {}
    for key, value in params.items():
        name = key.split(":", 1)[1] if key.startswith(("arg:", "aux:")) else key
        out[name] = value.asnumpy() if hasattr(value, "asnumpy") else np.asarray(value)
    return out


class _Names:
    """Unique ONNX tensor names derived from MXNet names."""

    def __init__(self):
        self.used = set()

    def unique(self, hint):
        name, k = hint, 0
        while name in self.used:
            k += 1
            name = f"{hint}_{k}"
        self.used.add(name)
        return name


class _Context:
    """What converters use: add nodes and constants, read inferred shapes and dtypes."""

    def __init__(self, onnx, graph, names, params=None):
        self.onnx, self.graph, self.names = onnx, graph, names
        self.params = params or {}  # {name: numpy array}: values converters may fold
        self.nodes, self.initializers = [], []

    def add(self, op_type, inputs, outputs, **attrs):
        self.nodes.append(self.onnx.helper.make_node(
            op_type, list(inputs), list(outputs), name=self.names.unique(f"{outputs[0]}_op"),
            **attrs))

    def const(self, array, hint):
        name = self.names.unique(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def temp(self, hint):
        return self.names.unique(hint)

    def shape_of(self, entry):
        node, index = entry
        shape = self.graph.shapes.get((self.graph.index[id(node)], index))
        if shape is None:
            raise MXNetError(f"ONNX export: the shape of {node.name!r} is unknown; give the "
                             f"input shapes (in_shapes)")
        return tuple(shape)

    def dtype_of(self, entry):
        node, index = entry
        return np.dtype(self.graph.dtypes.get((self.graph.index[id(node)], index)) or
                        "float32")


def _load_symbol(sym):
    from .. import symbol

    if isinstance(sym, (str, os.PathLike)):
        return symbol.load(os.fspath(sym))
    if not isinstance(sym, symbol.Symbol):
        raise TypeError(f"export_model: sym must be a Symbol or a path to a -symbol.json file, "
                        f"got {type(sym).__name__}")
    return sym


def _data_inputs(graph, params):
    """The variables that are graph inputs: not parameters, read by some converted node."""
    used = set()
    for node in graph.nodes:
        if node.is_variable:
            continue
        skip = unused_inputs(node)
        used.update(id(e.node) for k, e in enumerate(node.inputs) if k not in skip)
    return [n for n in graph.nodes if n.is_variable and n.name not in params and id(n) in used]


def _infer(graph, inputs, in_shapes, in_types, params):
    from ..graph import infer_shapes, infer_types

    if len(in_shapes) != len(inputs):
        raise MXNetError(f"export_model: {len(in_shapes)} input shapes given for the inputs "
                         f"{[n.name for n in inputs]}")
    types = list(in_types) if isinstance(in_types, (list, tuple)) else [in_types] * len(inputs)
    shapes = {n.name: tuple(s) for n, s in zip(inputs, in_shapes)}
    dtypes = {n.name: np.dtype(t).name for n, t in zip(inputs, types)}
    for name, value in params.items():
        shapes[name], dtypes[name] = value.shape, value.dtype.name
    infer_shapes(graph, shapes)
    infer_types(graph, dtypes)
    return dtypes


def _value_info(onnx, name, dtype, shape):
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return onnx.helper.make_tensor_value_info(name, elem, list(shape))


def _convert_nodes(ctx, graph, tensor_of):
    for node in graph.nodes:
        if node.is_variable:
            continue
        convert = CONVERTERS.get(node.op.name)
        if convert is None:
            raise MXNetError(f"ONNX export: op {node.op.name!r} (node {node.name!r}) has no "
                             f"ONNX converter; supported ops: {sorted(CONVERTERS)}")
        ins = [tensor_of.get((id(e.node), e.index)) for e in node.inputs]
        count = node.num_outputs
        outs = [ctx.names.unique(node.name if count == 1 else f"{node.name}_output{i}")
                for i in range(count)]
        convert(ctx, node, ins, outs)
        for i, name in enumerate(outs):
            tensor_of[(id(node), i)] = name


def _prune(nodes, outputs):
    """The nodes some output depends on (a converter that folds constants, such as RNN's
    parameters, leaves the nodes that computed them unread)."""
    needed, kept = set(outputs), []
    for node in reversed(nodes):
        if needed.intersection(node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    return kept[::-1]


def export_model(sym, params, in_shapes=None, in_types=np.float32, onnx_file_path="model.onnx",
                 verbose=False, dynamic=False, dynamic_input_shapes=None,
                 run_shape_inference=False, input_type=None, input_shape=None):
    """Write ``sym`` (a Symbol or a -symbol.json path) with ``params`` (a dict, ``[arg, aux]``
    or a .params path) as the ONNX file ``onnx_file_path`` and return that path; MXNet 1.9's
    ``mx.onnx.export_model``. ``in_shapes`` lists the data inputs' shapes, ``in_types`` their
    dtype(s). ``dynamic`` shapes are not supported (the shapes are fixed at export)."""
    onnx = _onnx()
    in_shapes = input_shape if in_shapes is None else in_shapes
    in_types = input_type if input_type is not None else in_types
    if in_shapes is None:
        raise MXNetError("export_model: in_shapes (the shapes of the data inputs) is required")
    if dynamic:
        raise MXNetError("export_model: dynamic=True is not supported; shapes are fixed at "
                         "export")
    from ..graph import Graph

    symbol, params = _load_symbol(sym), _load_params(params)
    graph = Graph(symbol._outputs)
    inputs = _data_inputs(graph, params)
    dtypes = _infer(graph, inputs, in_shapes, in_types, params)
    names = _Names()
    ctx = _Context(onnx, graph, names, params)
    tensor_of = {}
    graph_inputs = []
    for node in graph.nodes:
        if node.is_variable:
            tensor_of[(id(node), 0)] = names.unique(node.name)
    used = {id(n) for n in inputs}
    for node in graph.nodes:
        if not node.is_variable:
            continue
        name = tensor_of[(id(node), 0)]
        if node.name in params:
            ctx.initializers.append(onnx.numpy_helper.from_array(params[node.name], name))
        elif id(node) in used:
            graph_inputs.append(_value_info(onnx, name, dtypes[node.name],
                                            ctx.shape_of((node, 0))))
    _convert_nodes(ctx, graph, tensor_of)
    ctx.nodes = _prune(ctx.nodes, [tensor_of[(id(e.node), e.index)] for e in graph.outputs])
    read = {name for n in ctx.nodes for name in n.input}  # drop parameters no node reads
    ctx.initializers = [t for t in ctx.initializers if t.name in read]
    outputs = [_value_info(onnx, tensor_of[(id(e.node), e.index)], ctx.dtype_of(e),
                           ctx.shape_of(e)) for e in graph.outputs]
    model = onnx.helper.make_model(
        onnx.helper.make_graph(ctx.nodes, "hybridgpu_model", graph_inputs, outputs,
                               ctx.initializers),
        opset_imports=[onnx.helper.make_opsetid("", OPSET)], producer_name="hybridgpu")
    model.ir_version = 8  # opset 13's IR version, readable by every onnxruntime since 1.10
    onnx.checker.check_model(model)
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    path = os.fspath(onnx_file_path)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(model.SerializeToString())
    os.replace(tmp, path)
    if verbose:
        print(f"exported {len(ctx.nodes)} ONNX nodes to {path}")
    return path
