"""``mx.np``: MXNet 1.9's NumPy interface. ``mx.np.ndarray`` is an NDArray with NumPy's
semantics (zero-dim arrays, NumPy indexing, MXNet's NumPy dtype rules); every function runs an
op of the same registry through the same dispatch point as ``mx.nd`` (or, given Symbols while a
block is hybridized, builds the same op's Symbol). See docs/numpy_mode.md.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import np
    >>> x = np.arange(6).reshape(2, 3)
    >>> x.attach_grad()
    >>> with mx.autograd.record():
    ...     y = (np.exp(x) * 2).sum()
    >>> y.backward()
    >>> x.grad.shape, y.shape
    ((2, 3), ())
"""

from __future__ import annotations

import numpy as _onp

from . import linalg, random
from . import methods as _methods  # noqa: F401  (attaches the operators and methods)
from . import symbol as _symbol  # noqa: F401  (NumpySymbol: traced values in NumPy mode)
from .creation import *  # noqa: F403
from .creation import __all__ as _creation_all
from .extra import *  # noqa: F403
from .extra import __all__ as _extra_all
from .fallback import *  # noqa: F403
from .fallback import __all__ as _fallback_all
from .manipulation import *  # noqa: F403
from .manipulation import __all__ as _manipulation_all
from .math import BINARY as _BINARY
from .math import UNARY as _UNARY
from .math import clip, dot, logical_not, make_binary, make_unary, matmul, tensordot, where
from .multiarray import array, ndarray
from .reduce import *  # noqa: F403
from .reduce import __all__ as _reduce_all

for _name in _UNARY:
    globals()[_name] = make_unary(_name)
for _name in _BINARY:
    globals()[_name] = make_binary(_name)
divide = true_divide = globals()["true_divide"]  # noqa: F405
remainder = globals()["mod"]  # noqa: F405
row_stack = vstack  # noqa: F405
round_ = around  # noqa: F405
product = prod  # noqa: F405
sometrue = any  # noqa: F405
alltrue = all  # noqa: F405
asarray = array

# NumPy's dtypes and constants, as mx.np re-exports them
float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
int8, int32, int64, uint8, bool_ = _onp.int8, _onp.int32, _onp.int64, _onp.uint8, _onp.bool_
dtype = _onp.dtype
pi, e, inf, nan, newaxis = _onp.pi, _onp.e, _onp.inf, _onp.nan, None
NAN = NaN = nan
PINF, NINF, PZERO, NZERO = inf, -inf, 0.0, -0.0
bool = _onp.bool_  # noqa: A001 (MXNet's mx.np.bool)
finfo = _onp.finfo

__all__ = ["ndarray", "array", "asarray", "linalg", "random", "dot", "matmul", "tensordot",
           "clip", "where", "logical_not", "divide", "remainder", "row_stack", "round_",
           "product", "sometrue", "alltrue", *_creation_all,
           *_manipulation_all, *_reduce_all, *_extra_all, *_fallback_all, *_UNARY, *_BINARY]
