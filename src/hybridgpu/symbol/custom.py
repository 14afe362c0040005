"""``sym.Custom`` (and so ``F.Custom`` in a ``hybrid_forward``): a node of op ``Custom`` that
runs a Python operator registered with ``mx.operator.register``.

Symbols given positionally or by input name are the inputs (in the order of the prop's
``list_arguments()``); inputs left out become variables ``<name>_<input>``, as in MXNet; other
keyword arguments go to the prop as strings and are written to JSON.

Example:
    >>> import hybridgpu as mx
    >>> @mx.operator.register("doctest_pair")
    ... class PairProp(mx.operator.CustomOpProp):
    ...     def list_arguments(self):
    ...         return ["a", "b"]
    >>> s = Custom(b=mx.sym.var("y"), op_type="doctest_pair", name="p")
    >>> s.list_arguments(), s.list_outputs()
    (['p_a', 'y'], ['p_output'])
"""

from __future__ import annotations

from .. import ops
from ..ndarray.custom import order_inputs
from .symbol import Symbol, apply_op

__all__ = ["Custom"]


def Custom(*data, **kwargs):  # noqa: N802  (MXNet's name)
    """A node of op ``Custom`` for the custom op ``op_type``; see the module docstring."""
    name = kwargs.pop("name", None)
    attr = kwargs.pop("attr", None)
    named = {k: kwargs.pop(k) for k in list(kwargs) if isinstance(kwargs[k], Symbol)}
    op = ops.get("Custom")
    attrs = op.parse_attrs(kwargs)
    _, values = order_inputs(op, attrs, data, named, "Symbol",
                             lambda v: isinstance(v, Symbol))
    return apply_op(op, "custom", values, attrs, kwargs, name=name, attr=attr)


Custom.opdef = ops.get("Custom")
