"""``nd.Custom``: run a Python operator registered with ``mx.operator.register`` (op ``Custom``).

Positional NDArrays are the inputs in the order of the prop's ``list_arguments()`` (then its
auxiliary states); NDArrays given by keyword go to the input of that name; other keyword
arguments go to the prop's ``__init__`` as strings.

Example:
    >>> import hybridgpu as mx
    >>> @mx.operator.register("doctest_negate")
    ... class NegateProp(mx.operator.CustomOpProp):
    ...     def create_operator(self, ctx, shapes, dtypes):
    ...         return Negate()
    >>> class Negate(mx.operator.CustomOp):
    ...     def forward(self, is_train, req, in_data, out_data, aux):
    ...         self.assign(out_data[0], req[0], -in_data[0])
    >>> Custom(mx.nd.array([1, -2]), op_type="doctest_negate").asnumpy()
    array([-1.,  2.], dtype=float32)
"""

from __future__ import annotations

from .. import ops
from ..base import MXNetError
from .imperative import invoke
from .ndarray import NDArray

__all__ = ["Custom"]


def order_inputs(op, attrs, positional, named, kind, is_input):
    """The inputs in the op's order: ``positional`` first, then ``named`` by input name."""
    names = op.input_names(attrs)
    if len(positional) > len(names):
        raise MXNetError(f"Custom op {attrs['op_type']!r}: {len(positional)} inputs given, it "
                         f"takes {len(names)} ({list(names)})")
    values = list(positional) + [None] * (len(names) - len(positional))
    for key, value in named.items():
        if key not in names:
            raise MXNetError(f"Custom op {attrs['op_type']!r}: no input named {key!r}; its "
                             f"inputs are {list(names)}")
        values[names.index(key)] = value
    for name, value in zip(names, values):
        if value is not None and not is_input(value):
            raise TypeError(f"Custom op {attrs['op_type']!r}: input {name!r} must be an "
                            f"{kind}, got {type(value).__name__}")
    return names, values


def Custom(*data, **kwargs):  # noqa: N802  (MXNet's name)
    """Run the custom op ``op_type`` on NDArrays (op ``Custom``); see the module docstring."""
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    named = {k: kwargs.pop(k) for k in list(kwargs) if isinstance(kwargs[k], NDArray)}
    op = ops.get("Custom")
    attrs = op.parse_attrs(kwargs)
    names, values = order_inputs(op, attrs, data, named, "NDArray",
                                 lambda v: isinstance(v, NDArray))
    missing = [n for n, v in zip(names, values) if v is None]
    if missing:
        raise MXNetError(f"Custom op {attrs['op_type']!r}: input {missing[0]!r} is missing")
    return invoke(op, values, attrs, out=out)


Custom.opdef = ops.get("Custom")
