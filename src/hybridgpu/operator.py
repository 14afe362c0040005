"""``mx.operator``: operators written in Python (MXNet 1.x's ``CustomOp`` API).

Subclass ``CustomOp`` (``forward``/``backward`` writing results with ``self.assign``) and
``CustomOpProp`` (names, shape and dtype inference, ``create_operator``), register the prop
with ``@mx.operator.register("name")`` and call it as ``nd.Custom(x, op_type="name")`` or
``F.Custom(x, op_type="name")`` in a ``hybrid_forward``. In a hybridized block the compiled
program calls back into this Python for the node, on every call; autograd runs ``backward``.
Extra keyword arguments reach the prop's ``__init__`` as strings, as in MXNet.

Example:
    >>> import hybridgpu as mx
    >>> class Double(mx.operator.CustomOp):
    ...     def forward(self, is_train, req, in_data, out_data, aux):
    ...         self.assign(out_data[0], req[0], in_data[0] * 2)
    ...     def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
    ...         self.assign(in_grad[0], req[0], out_grad[0] * 2)
    >>> @mx.operator.register("doctest_double")
    ... class DoubleProp(mx.operator.CustomOpProp):
    ...     def create_operator(self, ctx, shapes, dtypes):
    ...         return Double()
    >>> x = mx.nd.array([1.0, 2.0])
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = mx.nd.Custom(x, op_type="doctest_double")
    >>> y.backward()
    >>> y.asnumpy(), x.grad.asnumpy()
    (array([2., 4.], dtype=float32), array([2., 2.], dtype=float32))
"""

from __future__ import annotations

import numpy as np

from . import autograd
from .base import MXNetError
from .context import Context
from .ndarray import NDArray
from .ndarray import array as nd_array
from .ops import custom as _custom

__all__ = ["CustomOp", "CustomOpProp", "register", "get_all_registered_operators"]

# MXNet's numeric dtype flags, which create_operator receives.
_TYPE_FLAG = {"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
              "int64": 6, "bool": 7}


class CustomOp:
    """Base class of a Python operator: override ``forward`` and ``backward``.

    Example:
        >>> import hybridgpu as mx
        >>> out = mx.nd.zeros((2,))
        >>> CustomOp().assign(out, "write", mx.nd.ones((2,)))
        >>> out.asnumpy()
        array([1., 1.], dtype=float32)
    """

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute ``out_data`` from ``in_data`` (lists of NDArrays); write with ``assign``."""
        raise NotImplementedError(f"{type(self).__name__} must implement forward")

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute ``in_grad`` from ``out_grad``, ``in_data`` and ``out_data``."""
        raise NotImplementedError(f"{type(self).__name__} must implement backward to be "
                                  f"differentiated")

    def assign(self, dst, req, src):
        """Write ``src`` into ``dst`` as ``req`` says: 'write'/'inplace' copy, 'add' adds,
        'null' does nothing."""
        if req == "null":
            return
        if req not in ("write", "inplace", "add"):
            raise MXNetError(f"CustomOp.assign: unknown req {req!r}; expected 'null', "
                             f"'write', 'inplace' or 'add'")
        if not isinstance(src, NDArray):
            src = nd_array(np.asarray(src), ctx=dst.context, dtype=dst.dtype)
        if src.shape != dst.shape:
            raise MXNetError(f"CustomOp.assign: the value has shape {src.shape} but the "
                             f"destination has shape {dst.shape}")
        if req == "add":
            dst[:] = dst + src
        else:
            dst[:] = src


class CustomOpProp:
    """Describes a Python operator: its argument, output and auxiliary-state names, shape and
    dtype inference, and the ``CustomOp`` that runs it (``create_operator``).

    Example:
        >>> prop = CustomOpProp()
        >>> prop.list_arguments(), prop.list_outputs(), prop.infer_shape([(2, 3)])
        (['data'], ['output'], ([(2, 3)], [(2, 3)], []))
    """

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def infer_shape(self, in_shape):
        """``(input shapes, output shapes, aux shapes)``; by default every output has the
        first input's shape."""
        return in_shape, [in_shape[0]] * len(self.list_outputs()), []

    def infer_type(self, in_type):
        """``(input dtypes, output dtypes, aux dtypes)``; by default all the first input's."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        """Storage types: only 'default' (dense) arrays exist here."""
        return in_stype, ["default"] * len(self.list_outputs()), \
            ["default"] * len(self.list_auxiliary_states())

    def list_outputs(self):
        """Output names (``['output']`` by default)."""
        return ["output"]

    def list_arguments(self):
        """Input names (``['data']`` by default)."""
        return ["data"]

    def list_auxiliary_states(self):
        """Auxiliary-state names (none by default)."""
        return []

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """What backward reads: out_grad (when ``need_top_grad_``), in_data and out_data."""
        deps = list(out_grad) if self.need_top_grad_ else []
        return deps + list(in_data) + list(out_data)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The ``CustomOp`` that computes this op for these shapes and dtypes."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_operator")


def register(reg_name):
    """Class decorator: register a ``CustomOpProp`` subclass as op type ``reg_name``.

    Example:
        >>> @register("doctest_identity")
        ... class IdentityProp(CustomOpProp):
        ...     pass
        >>> "doctest_identity" in get_all_registered_operators()
        True
    """

    def decorate(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise TypeError(f"mx.operator.register({reg_name!r}) decorates a CustomOpProp "
                            f"subclass, got {prop_cls!r}")
        _custom.register_handler(reg_name, _PropHandler(reg_name, prop_cls))
        return prop_cls

    return decorate


def get_all_registered_operators():
    """The op types registered with ``register``."""
    return _custom.registered_types()


def _context_of(xp, array):
    if xp is np:
        return Context("cpu", 0)
    return Context("gpu", int(getattr(getattr(array, "device", None), "id", 0)))


class _PropHandler:
    """Runs a registered prop class for the ``Custom`` op (see ``ops/custom.py``): one prop
    instance per distinct keyword arguments, one CustomOp per prop, shapes and dtypes (so
    forward and backward of a node share the operator's state, as in MXNet)."""

    def __init__(self, op_type, prop_cls):
        self.op_type = op_type
        self.prop_cls = prop_cls
        self._props = {}
        self._operators = {}

    def prop(self, kwargs):
        key = tuple(sorted(kwargs.items()))
        prop = self._props.get(key)
        if prop is None:
            try:
                prop = self._props[key] = self.prop_cls(**kwargs)
            except TypeError as err:
                raise MXNetError(f"Custom op {self.op_type!r}: {self.prop_cls.__name__}"
                                 f"(**{kwargs}) failed: {err}") from None
        return prop

    def arguments(self, kwargs):
        prop = self.prop(kwargs)
        return list(prop.list_arguments()) + list(prop.list_auxiliary_states())

    def outputs(self, kwargs):
        return list(self.prop(kwargs).list_outputs())

    def _counts(self, kwargs):
        prop = self.prop(kwargs)
        return len(prop.list_arguments()), len(prop.list_outputs())

    def infer_shape(self, kwargs, in_shapes):
        n_args, n_out = self._counts(kwargs)
        result = self.prop(kwargs).infer_shape([list(s) for s in in_shapes[:n_args]])
        ins, outs = result[0], result[1]
        aux = result[2] if len(result) > 2 else []
        if len(outs) != n_out:
            raise MXNetError(f"Custom op {self.op_type!r}: infer_shape returned {len(outs)} "
                             f"output shapes for {n_out} outputs")
        shapes = [tuple(int(d) for d in s) for s in list(ins) + list(aux)]
        return shapes, [tuple(int(d) for d in s) for s in outs]

    def infer_type(self, kwargs, in_types):
        n_args, _ = self._counts(kwargs)
        result = self.prop(kwargs).infer_type([np.dtype(t).type for t in in_types[:n_args]])
        ins, outs = result[0], result[1]
        aux = result[2] if len(result) > 2 else []
        return ([np.dtype(t).name for t in list(ins) + list(aux)],
                [np.dtype(t).name for t in outs])

    def operator(self, kwargs, ctx, arrays):
        shapes = tuple(tuple(a.shape) for a in arrays)
        dtypes = tuple(np.dtype(a.dtype).name for a in arrays)
        key = (tuple(sorted(kwargs.items())), str(ctx), shapes, dtypes)
        op = self._operators.get(key)
        if op is None:
            op = self.prop(kwargs).create_operator(
                ctx, [list(s) for s in shapes], [_TYPE_FLAG.get(t, t) for t in dtypes])
            if not isinstance(op, CustomOp):
                raise MXNetError(f"Custom op {self.op_type!r}: create_operator returned "
                                 f"{type(op).__name__}, not a CustomOp")
            self._operators[key] = op
        return op

    def forward(self, xp, arrays, kwargs, is_train):
        n_args, n_out = self._counts(kwargs)
        ctx = _context_of(xp, arrays[0]) if arrays else Context("cpu", 0)
        in_data = [NDArray(a, ctx) for a in arrays]
        shapes, types = self.infer_shape(kwargs, [a.shape for a in arrays])[1], \
            self.infer_type(kwargs, [a.dtype for a in arrays])[1]
        out_data = [NDArray(xp.zeros(s, dtype=t), ctx) for s, t in zip(shapes, types)]
        op = self.operator(kwargs, ctx, arrays[:n_args])
        with autograd.pause(train_mode=bool(is_train)):
            op.forward(is_train=is_train, req=["write"] * n_out, in_data=in_data[:n_args],
                       out_data=out_data, aux=in_data[n_args:])
        return [o._data for o in out_data]

    def backward(self, xp, arrays, kwargs):
        n_args, n_out = self._counts(kwargs)
        n_in = len(self.arguments(kwargs))
        ctx = _context_of(xp, arrays[0])
        wrapped = [NDArray(a, ctx) for a in arrays]
        out_grad, ins = wrapped[:n_out], wrapped[n_out:n_out + n_in]
        out_data = wrapped[n_out + n_in:]
        in_grad = [NDArray(xp.zeros(a.shape, dtype=a.dtype), ctx) for a in ins[:n_args]]
        op = self.operator(kwargs, ctx, arrays[n_out:n_out + n_args])
        with autograd.pause():
            op.backward(req=["write"] * n_args, out_grad=out_grad, in_data=ins[:n_args],
                        out_data=out_data, in_grad=in_grad, aux=ins[n_args:])
        return [g._data for g in in_grad]
