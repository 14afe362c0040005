"""``mx.nd``: the imperative API. Every op in the registry is a function here (generated from
its OpDef), beside MXNet's Python-level helpers (``array``, ``zeros``, ``maximum``, ``save``...).

Example:
    >>> import hybridgpu as mx
    >>> mx.nd.relu(mx.nd.array([-1, 2])).asnumpy()
    array([0., 2.], dtype=float32)
"""

from . import _internal, contrib, image, linalg, methods, operators, random  # noqa: F401  (attach methods)
from .creation import *  # noqa: F403
from .creation import __all__ as _creation_all
from .imperative import invoke
from .ndarray import NDArray
from .register import populate
from .ufunc import *  # noqa: F403
from .ufunc import __all__ as _ufunc_all
from .utils import *  # noqa: F403
from .utils import __all__ as _utils_all

populate(globals())
# Hand-written helpers win over generated functions of the same name.
from .creation import *  # noqa: E402, F403
from .custom import Custom  # noqa: E402, F401
from .histogram import histogram  # noqa: E402
from .splitting import split_v2  # noqa: E402
from .ufunc import *  # noqa: E402, F403
from .utils import *  # noqa: E402, F403

__all__ = ["NDArray", "invoke", "_internal", "contrib", "image", "linalg", "random", "split_v2",
           "histogram",
           *_creation_all,
           *_ufunc_all, *_utils_all]
