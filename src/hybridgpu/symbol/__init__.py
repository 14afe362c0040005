"""``mx.sym``: the symbolic API. Every op in the registry is a function here (the same OpDefs
as ``mx.nd``), with ``name=`` and ``attr=``; plus ``var``, ``Group`` and the ``Symbol`` class.

Example:
    >>> import hybridgpu as mx
    >>> with mx.name.NameManager():  # fresh counters
    ...     (mx.sym.relu(mx.sym.var("data")) + 1).name
    '_plusscalar0'
"""

from . import _internal, contrib, image, linalg, random
from .register import Group, Variable, populate, var
from .symbol import NotAvailableOnSymbol, Symbol

populate(globals())
# Hand-written module functions (pow, maximum, zeros, arange, split_v2, ...) and the JSON
# readers win over generated functions of the same name.
# methods attaches x.reshape(), x.sum(), ... to Symbol; printing attaches Symbol.debug_str
from . import methods, printing  # noqa: E402, F401
from .custom import Custom  # noqa: E402, F401
from .functions import *  # noqa: E402, F403
from .functions import __all__ as _functions_all  # noqa: E402
from .json_format import fromjson, load, load_json  # noqa: E402

__all__ = ["Symbol", "NotAvailableOnSymbol", "var", "Variable", "Group", "_internal",
           "contrib", "image", "linalg", "random", "load", "load_json", "fromjson", *_functions_all]
