"""How ``mx.np`` and ``mx.npx`` functions run an op: through the same registry and the same
dispatch point as ``nd`` (``ndarray.imperative.invoke``), or, when an input is a Symbol (a
hybridized ``hybrid_forward`` calling ``F.np.*``), through the ``sym`` function of that op.

``call(name, inputs, attrs)`` is the one entry: it picks the front end from the inputs' types
and wraps eager results as ``mx.np.ndarray``.

Example:
    >>> import hybridgpu as mx
    >>> call("_np_sum", [mx.np.ones((2, 3))], {"axis": 1})
    array([3., 3.])
"""

from __future__ import annotations

from .. import ops
from ..ndarray import NDArray
from ..ndarray.imperative import invoke
from ..symbol import Symbol

__all__ = ["call", "wrap", "is_symbolic", "ndarray_class"]

_CLASS = []  # the mx.np.ndarray class, set by multiarray (which imports this module)
_SYM_CLASS = []  # NumpySymbol, set by numpy/symbol.py
_SYM_FUNCTIONS = {}


def ndarray_class():
    """``mx.np.ndarray``."""
    return _CLASS[0]


def wrap(result):
    """An ``nd`` result (NDArray, or a list of them) as ``mx.np.ndarray``, a Symbol as a
    ``NumpySymbol``: the same object, its class changed (autograd's record of it stays)."""
    if type(result) is NDArray:
        result.__class__ = _CLASS[0]
        return result
    if type(result) is Symbol:
        result.__class__ = _SYM_CLASS[0]
        return result
    if isinstance(result, (list, tuple)):
        return type(result)(wrap(r) for r in result)
    return result


def is_symbolic(values):
    """True when any of ``values`` is a Symbol (``hybrid_forward`` is being traced)."""
    return any(isinstance(v, Symbol) for v in values)


def _sym_function(name):
    fn = _SYM_FUNCTIONS.get(name)
    if fn is None:
        from ..symbol.register import make_function

        fn = _SYM_FUNCTIONS[name] = make_function(ops.get(name), name)
    return fn


def call(name, inputs, attrs=None, ctx=None):
    """Run registry op ``name`` on ``inputs`` (NDArrays or Symbols) with attributes ``attrs``
    (Python values); eager results come back as ``mx.np.ndarray``."""
    attrs = {} if attrs is None else attrs
    if is_symbolic(inputs):
        return wrap(_sym_function(name)(*inputs, **attrs))
    op = ops.get(name)
    parsed = op.parse_attrs(attrs, len(inputs) if op.variadic else None)
    return wrap(invoke(op, list(inputs), parsed, ctx=ctx))
