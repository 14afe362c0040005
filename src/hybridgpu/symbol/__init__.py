"""``mx.sym``: the symbolic API. Every op in the registry is a function here (the same OpDefs
as ``mx.nd``), with ``name=`` and ``attr=``; plus ``var``, ``Group`` and the ``Symbol`` class.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("data")
    >>> (mx.sym.relu(x) + 1).name
    '_plusscalar0'
"""

from . import _internal, contrib, linalg
from .register import Group, Variable, populate, var
from .symbol import NotAvailableOnSymbol, Symbol

populate(globals())

__all__ = ["Symbol", "NotAvailableOnSymbol", "var", "Variable", "Group", "_internal",
           "contrib", "linalg"]
