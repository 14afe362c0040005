"""Build the ``sym.*`` functions from the op registry (the same OpDefs as ``nd.*``), plus
``var``/``Variable`` and ``Group``.

A call binds arguments as ``nd.*`` does, adds ``name=`` and ``attr=``, and creates variables
for inputs left out (``sym.FullyConnected(x, num_hidden=4)`` makes ``fullyconnected0_weight``
and ``fullyconnected0_bias``), as MXNet does.

Example:
    >>> import hybridgpu as mx
    >>> mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=4, name="fc").list_arguments()
    ['x', 'fc_weight', 'fc_bias']
"""

from __future__ import annotations

import numpy as np

from .. import attribute
from ..base import DTYPE_TO_FLAG, MXNetError, missing_name_hook
from ..graph import Entry, Node
from ..ops.calling import bind_arguments, functions_of, signature
from .symbol import Symbol, apply_op, string_attrs

__all__ = ["make_function", "populate", "var", "Variable", "Group"]


# MXNet writes a variable's storage type (and dtype: base.DTYPE_TO_FLAG) as numeric flags.
_STYPE_FLAG = {"default": 0, "row_sparse": 1, "csr": 2}


def make_function(op, called_name):
    """The ``sym.<called_name>`` function for ``op``."""

    def function(*args, **kwargs):
        name = kwargs.pop("name", None)
        attr = kwargs.pop("attr", None)
        kwargs.pop("ctx", None)
        inputs, given = bind_arguments(op, args, kwargs)
        attrs = op.parse_attrs(given, len(inputs) if op.variadic else None)
        if op.variadic:
            ordered = list(inputs)
        else:
            names = op.input_names(attrs)
            extra = [n for n, v in inputs.items() if v is not None and n not in names]
            if extra:
                raise MXNetError(f"{op.name}: input {extra[0]!r} is not used with these "
                                 f"attributes")
            ordered = [inputs.get(n) for n in names]
        if op.variadic:
            given = {**given, "num_args": attrs["num_args"]}
        return apply_op(op, called_name.lower(), ordered, attrs, given, name=name, attr=attr)

    function.__name__ = function.__qualname__ = called_name
    function.__doc__ = op.docstring()
    function.__signature__ = signature(op, ["name", "attr"])
    function.__module__ = "hybridgpu.symbol"
    function.opdef = op
    return function


def populate(namespace, submodule=""):
    """Put a ``sym`` function for every op name of ``submodule`` into ``namespace`` (see
    ``ops.calling.functions_of``)."""
    for op, name in functions_of(submodule):
        namespace[name] = make_function(op, name)
    public = "mx.sym" + (f".{submodule}" if submodule else "")
    namespace.setdefault("__getattr__", missing_name_hook(namespace, public))
    return namespace

def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A variable (an input of the graph). ``shape`` and ``dtype`` make ``.shape``/``.dtype``
    of the symbols built on it known.

    Example:
        >>> v = var("w", shape=(3, 4), lr_mult=2.0)
        >>> v.list_attr()["__shape__"], v.shape
        ('(3, 4)', (3, 4))
    """
    if not isinstance(name, str):
        raise TypeError(f"Expect a string for variable `name`, got {type(name).__name__}")
    extra = string_attrs(attribute.current().get(attr))
    if shape is not None:
        extra["__shape__"] = str(shape)  # as given, like MXNet: '3', '[2]', '(3, 4)'
    if lr_mult is not None:
        extra["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        extra["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        extra["__dtype__"] = str(DTYPE_TO_FLAG[np.dtype(dtype).name])
    if init is not None:
        extra["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        if stype not in _STYPE_FLAG:
            raise MXNetError(f"var {name!r}: unknown storage type {stype!r}; expected one of "
                             f"{list(_STYPE_FLAG)}")
        extra["__storage_type__"] = str(_STYPE_FLAG[stype])
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise ValueError(f"Attribute name={key} is not supported. Additional attributes "
                             f"must start and end with double underscores, e.g, __yourattr__")
        extra[key] = str(value)
    return Symbol([Entry(Node.variable(name, extra=extra), 0)])


Variable = var


def Group(symbols):
    """One Symbol holding the outputs of several.

    Example:
        >>> a, b = var("a"), var("b")
        >>> Group([a, b]).list_outputs()
        ['a', 'b']
    """
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([e for s in symbols for e in s._outputs])
