"""The ``Custom`` op: a step that calls back into Python, for ``mx.operator.CustomOp``.

``Custom`` carries ``op_type`` and the user's keyword arguments (kept as strings, as MXNet hands
them to ``CustomOpProp.__init__``). Everything else about it — input and output names, shape and
dtype inference, forward and backward — comes from the handler registered for its ``op_type``
with ``register_handler`` (``mx.operator.register`` does that). This module only looks up
registered handlers; it never imports anything. A compiled program runs the node through its
``compute`` (the generated CPU program falls back to an op's compute), so a hybridized block
calls the user's Python on every call. The gradient is the op ``_backward_Custom`` over
``out_grads + inputs + outputs``, whose compute calls the handler's ``backward``.

A handler provides ``arguments(kwargs)``, ``outputs(kwargs)``, ``infer_shape(kwargs, shapes)``,
``infer_type(kwargs, dtypes)``, ``forward(xp, arrays, kwargs, is_train)`` and
``backward(xp, arrays, kwargs)``, where ``kwargs`` are the string attributes without ``op_type``.

Example:
    >>> from hybridgpu import ops
    >>> op = ops.get("Custom")
    >>> op.format_attrs({"op_type": "my_op", "scale": 2})
    {'op_type': 'my_op', 'scale': '2'}
    >>> "my_op" in registered_types()
    False
"""

from __future__ import annotations

from ..base import MXNetError
from .attrs import Str
from .opdef import OpDef, register

__all__ = ["register_handler", "registered_types", "handler_for"]

_HANDLERS: dict = {}


def register_handler(op_type, handler):
    """Make ``Custom(op_type=op_type)`` run ``handler`` (replacing an earlier one)."""
    if not isinstance(op_type, str) or not op_type:
        raise MXNetError(f"a custom op type must be a non-empty string, got {op_type!r}")
    _HANDLERS[op_type] = handler


def registered_types():
    """The registered ``op_type`` names, sorted."""
    return sorted(_HANDLERS)


def handler_for(op_type):
    """The handler of ``op_type``; MXNetError listing the registered ones when unknown."""
    handler = _HANDLERS.get(op_type)
    if handler is None:
        raise MXNetError(f"Cannot find custom operator {op_type!r}; registered custom ops: "
                         f"{registered_types() or 'none'} (register the CustomOpProp class "
                         f"with @mx.operator.register({op_type!r}) before using it)")
    return handler


def _split(attrs):
    """``(handler, user kwargs)`` of a node's attributes."""
    kwargs = {k: v for k, v in attrs.items() if k not in ("op_type", "num_args")}
    return handler_for(attrs["op_type"]), kwargs


class _CustomOpDef(OpDef):
    """An OpDef whose inputs, outputs and attributes come from the registered handler."""

    #: its compute runs Python the program cannot see into: a GPU program cannot capture it
    #: (a segment boundary). Custom is also mode_dependent (it gets is_train), so passes never
    #: fold or merge it: the Python runs on every call.
    python_callback = True

    def parse_attrs(self, given, num_inputs=None):
        attrs = {}
        for key, value in given.items():
            if key.startswith("__") and key.endswith("__"):
                continue
            attrs[key] = value if key == "num_args" else self.attrs["op_type"].format(value)
        if "op_type" not in attrs:
            raise MXNetError(f"{self.name}: required attribute 'op_type' is missing (the name "
                             f"given to mx.operator.register)")
        handler_for(attrs["op_type"])
        if self.variadic and attrs.get("num_args") is None:
            attrs["num_args"] = num_inputs
        return attrs

    def format_attrs(self, attrs):
        return {k: self.attrs["op_type"].format(v) for k, v in attrs.items() if k != "num_args"}

    def input_names(self, attrs):
        if self.variadic:
            return tuple(f"arg{i}" for i in range(attrs.get("num_args") or 0))
        handler, kwargs = _split(attrs)
        return tuple(handler.arguments(kwargs))

    def output_names(self, attrs):
        handler, kwargs = _split(attrs)
        if self.variadic:
            return tuple(f"{n}_grad" for n in handler.arguments(kwargs))
        return tuple(handler.outputs(kwargs))

    def num_outputs(self, attrs):
        return len(self.output_names(attrs))

    def num_visible_outputs(self, attrs):
        return self.num_outputs(attrs)


def _result(arrays):
    """One array for one output (as every op's compute returns), else a tuple."""
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _forward(xp, /, *arrays, is_train=False, **attrs):
    handler, kwargs = _split(attrs)
    return _result(handler.forward(xp, list(arrays), kwargs, is_train))


def _backward(xp, /, *arrays, **attrs):
    handler, kwargs = _split(attrs)
    return _result(handler.backward(xp, list(arrays), kwargs))


def _infer_shape(attrs, in_shapes):
    handler, kwargs = _split(attrs)
    if any(s is None or 0 in s for s in in_shapes):
        return list(in_shapes), [None] * len(handler.outputs(kwargs))
    return handler.infer_shape(kwargs, in_shapes)


def _infer_type(attrs, in_types):
    handler, kwargs = _split(attrs)
    known = [t for t in in_types if t is not None]
    if not known:
        return list(in_types), [None] * len(handler.outputs(kwargs))
    return handler.infer_type(kwargs, [t or known[0] for t in in_types])


def _grad(F, ins, outs, gouts, **attrs):
    """``_backward_Custom(out_grads..., inputs..., outputs...)``: one gradient per argument."""
    handler, kwargs = _split(attrs)
    count = len(handler.arguments(kwargs))
    grads = F._backward_Custom(*gouts, *ins, *outs, **attrs)
    grads = [grads] if count == 1 else [grads[i] for i in range(count)]
    return grads + [None] * (len(ins) - count)


def _backward_shape(attrs, in_shapes):
    handler, kwargs = _split(attrs)
    count = len(handler.arguments(kwargs))
    offset = len(handler.outputs(kwargs))
    return list(in_shapes), list(in_shapes[offset:offset + count])


def _backward_type(attrs, in_types):
    handler, kwargs = _split(attrs)
    count = len(handler.arguments(kwargs))
    offset = len(handler.outputs(kwargs))
    return list(in_types), list(in_types[offset:offset + count])


_OP_TYPE = Str(doc="the name the CustomOpProp class was registered under")

register(_CustomOpDef(
    "Custom", inputs=(), compute=_forward, attrs={"op_type": _OP_TYPE},
    infer_shape=_infer_shape, infer_type=_infer_type, grad=_grad, mode_dependent=True,
    doc="Runs a custom operator written in Python (mx.operator.CustomOp) registered under "
        "op_type; other keyword arguments go to its CustomOpProp as strings.",
    example="nd.Custom(x, op_type='my_sigmoid')  # after @mx.operator.register('my_sigmoid')"))

register(_CustomOpDef(
    "_backward_Custom", inputs=(), compute=_backward, attrs={"op_type": _OP_TYPE},
    variadic=True, infer_shape=_backward_shape, infer_type=_backward_type,
    doc="The gradient of Custom: calls the CustomOp's backward with out_grads, inputs and "
        "outputs (in that order).",
    example="nd._backward_Custom(dy, x, y, op_type='my_sigmoid')  # d(loss)/dx"))
