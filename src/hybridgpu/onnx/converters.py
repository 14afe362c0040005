"""One converter per MXNet op: how a graph node becomes ONNX nodes (opset 13).

A converter is ``convert(ctx, node, ins, outs)``: ``ins`` are the ONNX tensor names of the
node's inputs, ``outs`` the names its outputs must get; it adds nodes with ``ctx.add`` and
constants with ``ctx.const``. Models are exported for inference: Dropout is the identity,
BatchNorm uses its moving statistics, SoftmaxOutput is a softmax (its label input unused).

Example:
    >>> "Convolution" in CONVERTERS and "FullyConnected" in CONVERTERS
    True
"""

from __future__ import annotations

import numpy as np

from ..base import MXNetError

__all__ = ["CONVERTERS", "unused_inputs"]

CONVERTERS: dict = {}


def converts(*op_names):
    """Register the decorated function as the converter of ``op_names``."""
    def register(fn):
        for name in op_names:
            CONVERTERS[name] = fn
        return fn
    return register


def unused_inputs(node):
    """Input positions a converter ignores (loss labels), so they are not graph inputs."""
    if node.op.name in ("SoftmaxOutput", "LinearRegressionOutput", "LogisticRegressionOutput"):
        return {1}
    return set()


def _ints(values):
    return [int(v) for v in values]


# -- layers -----------------------------------------------------------------------------------

@converts("Convolution")
def _convolution(ctx, node, ins, outs):
    a = node.attrs
    kernel = _ints(a["kernel"])
    n = len(kernel)
    if a.get("layout") not in (None, "NCW", "NCHW", "NCDHW"):
        raise MXNetError(f"ONNX export: Convolution {node.name!r}: layout {a['layout']!r} is "
                         f"not supported (channels must come first)")
    pad = _ints(a.get("pad") or (0,) * n)
    ctx.add("Conv", ins, outs, kernel_shape=kernel, strides=_ints(a.get("stride") or (1,) * n),
            dilations=_ints(a.get("dilate") or (1,) * n), pads=pad + pad,
            group=int(a.get("num_group") or 1))


@converts("FullyConnected")
def _fully_connected(ctx, node, ins, outs):
    data, weight = ins[0], ins[1]
    bias = None if node.attrs.get("no_bias") else ins[2]
    if node.attrs.get("flatten", True):
        flat = ctx.temp(f"{node.name}_flatten")
        ctx.add("Flatten", [data], [flat], axis=1)
        ctx.add("Gemm", [flat, weight] + ([bias] if bias else []), outs, transB=1)
        return
    weight_t = ctx.temp(f"{node.name}_weight_t")
    ctx.add("Transpose", [weight], [weight_t], perm=[1, 0])
    if bias is None:
        ctx.add("MatMul", [data, weight_t], outs)
        return
    product = ctx.temp(f"{node.name}_matmul")
    ctx.add("MatMul", [data, weight_t], [product])
    ctx.add("Add", [product, bias], outs)


@converts("BatchNorm")
def _batch_norm(ctx, node, ins, outs):
    a = node.attrs
    if int(a.get("axis", 1)) != 1:
        raise MXNetError(f"ONNX export: BatchNorm {node.name!r}: only axis=1 is supported, got "
                         f"axis={a['axis']}")
    gamma = ins[1]
    if a.get("fix_gamma", True):  # MXNet then ignores gamma: it is 1
        gamma = ctx.const(np.ones(ctx.shape_of(node.inputs[1]), ctx.dtype_of(node.inputs[1])),
                          f"{node.name}_gamma_fixed")
    ctx.add("BatchNormalization", [ins[0], gamma, ins[2], ins[3], ins[4]], outs[:1],
            epsilon=float(a.get("eps", 1e-3)))


@converts("Pooling")
def _pooling(ctx, node, ins, outs):
    a = node.attrs
    kind = a.get("pool_type", "max")
    if kind not in ("max", "avg"):
        raise MXNetError(f"ONNX export: Pooling {node.name!r}: pool_type {kind!r} is not "
                         f"supported (max and avg are)")
    if a.get("global_pool"):
        ctx.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", ins, outs)
        return
    kernel = _ints(a["kernel"])
    n = len(kernel)
    pad = _ints(a.get("pad") or (0,) * n)
    extra = {}
    if kind == "avg":
        include = a.get("count_include_pad")
        extra["count_include_pad"] = 1 if include is None or include else 0
    ctx.add("MaxPool" if kind == "max" else "AveragePool", ins, outs, kernel_shape=kernel,
            strides=_ints(a.get("stride") or (1,) * n), pads=pad + pad,
            ceil_mode=1 if a.get("pooling_convention") == "full" else 0, **extra)


_ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
                "softsign": "Softsign"}


@converts("Activation")
def _activation(ctx, node, ins, outs):
    act = node.attrs["act_type"]
    if act not in _ACTIVATIONS:
        raise MXNetError(f"ONNX export: Activation {node.name!r}: act_type {act!r} is not "
                         f"supported; supported: {sorted(_ACTIVATIONS)}")
    ctx.add(_ACTIVATIONS[act], ins, outs)


@converts("LeakyReLU")
def _leaky_relu(ctx, node, ins, outs):
    act, slope = node.attrs.get("act_type", "leaky"), float(node.attrs.get("slope", 0.25))
    if act == "leaky":
        ctx.add("LeakyRelu", ins[:1], outs[:1], alpha=slope)
    elif act == "elu":
        ctx.add("Elu", ins[:1], outs[:1], alpha=slope)
    elif act == "prelu":
        shape = ctx.shape_of(node.inputs[0])
        slope_shape = [-1] + [1] * (len(shape) - 2)
        reshaped = ctx.temp(f"{node.name}_slope")
        ctx.add("Reshape", [ins[1], ctx.const(np.array(slope_shape, np.int64), "shape")],
                [reshaped])
        ctx.add("PRelu", [ins[0], reshaped], outs[:1])
    else:
        raise MXNetError(f"ONNX export: LeakyReLU {node.name!r}: act_type {act!r} is not "
                         f"supported (leaky, elu and prelu are)")


@converts("Flatten", "flatten")
def _flatten(ctx, node, ins, outs):
    ctx.add("Flatten", ins, outs, axis=1)


@converts("Concat", "concat")
def _concat(ctx, node, ins, outs):
    ctx.add("Concat", ins, outs, axis=int(node.attrs.get("dim", 1)))


@converts("Dropout", "_copy", "identity", "BlockGrad", "stop_gradient")
def _identity(ctx, node, ins, outs):
    ctx.add("Identity", ins[:1], outs[:1])


@converts("clip")
def _clip(ctx, node, ins, outs):
    dtype = ctx.dtype_of(node.inputs[0])
    low = ctx.const(np.array(node.attrs["a_min"], dtype), f"{node.name}_min")
    high = ctx.const(np.array(node.attrs["a_max"], dtype), f"{node.name}_max")
    ctx.add("Clip", [ins[0], low, high], outs)


@converts("softmax", "SoftmaxActivation", "SoftmaxOutput", "log_softmax")
def _softmax(ctx, node, ins, outs):
    op = node.op.name
    if op == "SoftmaxActivation":
        axis = 1 if node.attrs.get("mode") == "channel" else -1
    elif op == "SoftmaxOutput":
        axis = 1 if node.attrs.get("multi_output") else -1
    else:
        axis = int(node.attrs.get("axis", -1))
        if node.attrs.get("temperature") not in (None, 1.0):
            raise MXNetError(f"ONNX export: {op} {node.name!r}: temperature is not supported")
    ctx.add("LogSoftmax" if op == "log_softmax" else "Softmax", ins[:1], outs[:1], axis=axis)


@converts("Reshape", "reshape", "reshape_like")
def _reshape(ctx, node, ins, outs):
    shape = ctx.shape_of((node, 0))  # the inferred output shape: MXNet's codes resolved
    ctx.add("Reshape", [ins[0], ctx.const(np.array(shape, np.int64), f"{node.name}_shape")],
            outs)


@converts("transpose")
def _transpose(ctx, node, ins, outs):
    axes = node.attrs.get("axes") or ()
    rank = len(ctx.shape_of(node.inputs[0]))
    perm = _ints(axes) if axes else list(range(rank))[::-1]
    ctx.add("Transpose", ins, outs, perm=perm)


# -- arithmetic -------------------------------------------------------------------------------

_BINARY = {"elemwise_add": "Add", "_plus": "Add", "_Plus": "Add", "broadcast_add": "Add",
           "broadcast_plus": "Add", "elemwise_sub": "Sub", "_minus": "Sub",
           "broadcast_sub": "Sub", "broadcast_minus": "Sub", "elemwise_mul": "Mul",
           "_mul": "Mul", "broadcast_mul": "Mul", "elemwise_div": "Div", "_div": "Div",
           "broadcast_div": "Div", "broadcast_maximum": "Max", "broadcast_minimum": "Min",
           "_maximum": "Max", "_minimum": "Min", "broadcast_power": "Pow", "_power": "Pow"}


@converts(*_BINARY)
def _binary(ctx, node, ins, outs):
    ctx.add(_BINARY[node.op.name], ins, outs)


@converts("add_n", "ElementWiseSum")
def _add_n(ctx, node, ins, outs):
    ctx.add("Sum", ins, outs)


# op -> (ONNX op, scalar first)
_SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
           "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
           "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
           "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
           "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False)}


@converts(*_SCALAR)
def _scalar(ctx, node, ins, outs):
    onnx_op, scalar_first = _SCALAR[node.op.name]
    scalar = ctx.const(np.array(node.attrs["scalar"], ctx.dtype_of(node.inputs[0])),
                       f"{node.name}_scalar")
    ctx.add(onnx_op, [scalar, ins[0]] if scalar_first else [ins[0], scalar], outs)


_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
          "sqrt": "Sqrt", "abs": "Abs", "negative": "Neg", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "softsign": "Softsign", "erf": "Erf", "sin": "Sin",
          "cos": "Cos"}


@converts(*_UNARY)
def _unary(ctx, node, ins, outs):
    ctx.add(_UNARY[node.op.name], ins, outs)


@converts("mean", "sum")
def _reduce(ctx, node, ins, outs):
    axis = node.attrs.get("axis")
    rank = len(ctx.shape_of(node.inputs[0]))
    axes = list(range(rank)) if axis is None or axis == () else \
        [int(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    if node.attrs.get("exclude"):
        axes = [d for d in range(rank) if d not in {a % rank for a in axes}]
    keep = 1 if node.attrs.get("keepdims") else 0
    axes_name = ctx.const(np.array(axes, np.int64), f"{node.name}_axes")
    if node.op.name == "sum":
        ctx.add("ReduceSum", [ins[0], axes_name], outs, keepdims=keep)
    else:
        ctx.add("ReduceMean", ins, outs, axes=axes, keepdims=keep)


# -- more layers and shape ops ----------------------------------------------------------------

@converts("Embedding")
def _embedding(ctx, node, ins, outs):
    indices = ctx.temp(f"{node.name}_indices")
    ctx.add("Cast", [ins[0]], [indices], to=7)  # INT64: MXNet's indices are float
    ctx.add("Gather", [ins[1], indices], outs, axis=0)


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "float64": 11}


@converts("Cast", "cast")
def _cast(ctx, node, ins, outs):
    ctx.add("Cast", ins, outs, to=_ONNX_TYPES[np.dtype(node.attrs["dtype"]).name])


def _int64s(ctx, values, hint):
    return ctx.const(np.array(values, np.int64), hint)


@converts("slice_axis")
def _slice_axis(ctx, node, ins, outs):
    a = node.attrs
    end = a.get("end")
    end = np.iinfo(np.int64).max if end is None else int(end)
    ctx.add("Slice", [ins[0], _int64s(ctx, [int(a["begin"])], f"{node.name}_starts"),
                      _int64s(ctx, [end], f"{node.name}_ends"),
                      _int64s(ctx, [int(a["axis"])], f"{node.name}_axes")], outs)


@converts("expand_dims")
def _expand_dims(ctx, node, ins, outs):
    ctx.add("Unsqueeze", [ins[0], _int64s(ctx, [int(node.attrs["axis"])], f"{node.name}_axes")],
            outs)


@converts("SliceChannel", "split")
def _split(ctx, node, ins, outs):
    a = node.attrs
    axis, count = int(a.get("axis", 1)), int(a["num_outputs"])
    length = ctx.shape_of(node.inputs[0])[axis]
    sizes = _int64s(ctx, [length // count] * count, f"{node.name}_sizes")
    if not a.get("squeeze_axis"):
        ctx.add("Split", [ins[0], sizes], outs, axis=axis)
        return
    parts = [ctx.temp(f"{name}_unsqueezed") for name in outs]
    ctx.add("Split", [ins[0], sizes], parts, axis=axis)
    axes = _int64s(ctx, [axis], f"{node.name}_axes")
    for part, out in zip(parts, outs):
        ctx.add("Squeeze", [part, axes], [out])


@converts("Deconvolution")
def _deconvolution(ctx, node, ins, outs):
    a = node.attrs
    if a.get("target_shape"):
        raise MXNetError(f"ONNX export: Deconvolution {node.name!r}: target_shape is not "
                         f"supported; give pad and adj instead")
    kernel = _ints(a["kernel"])
    n = len(kernel)
    pad = _ints(a.get("pad") or (0,) * n)
    inputs = ins[:2] if a.get("no_bias", True) else ins[:3]
    ctx.add("ConvTranspose", inputs, outs, kernel_shape=kernel,
            strides=_ints(a.get("stride") or (1,) * n),
            dilations=_ints(a.get("dilate") or (1,) * n), pads=pad + pad,
            output_padding=_ints(a.get("adj") or (0,) * n), group=int(a.get("num_group") or 1))


def _transposed_last_two(ctx, name, entry, hint):
    rank = len(ctx.shape_of(entry))
    out = ctx.temp(hint)
    ctx.add("Transpose", [name], [out], perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    return out


@converts("batch_dot", "dot")
def _dot(ctx, node, ins, outs):
    a = node.attrs
    lhs, rhs = ins
    if node.op.name == "dot" and (len(ctx.shape_of(node.inputs[0])) != 2
                                  or len(ctx.shape_of(node.inputs[1])) != 2):
        raise MXNetError(f"ONNX export: dot {node.name!r}: only 2-d operands are supported")
    if a.get("transpose_a"):
        lhs = _transposed_last_two(ctx, lhs, node.inputs[0], f"{node.name}_lhs_t")
    if a.get("transpose_b"):
        rhs = _transposed_last_two(ctx, rhs, node.inputs[1], f"{node.name}_rhs_t")
    ctx.add("MatMul", [lhs, rhs], outs)


@converts("InstanceNorm")
def _instance_norm(ctx, node, ins, outs):
    ctx.add("InstanceNormalization", ins, outs[:1], epsilon=float(node.attrs.get("eps", 1e-3)))
