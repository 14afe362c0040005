"""``mx.np`` math: elementwise functions (``exp``, ``add``, ``maximum``, comparisons, ...),
``dot``, ``matmul``, ``tensordot``, ``clip``, ``where``.

Each runs the registry op ``nd`` runs (``exp``, ``broadcast_add``, ``_plus_scalar``, ...);
MXNet's NumPy dtype rules (``dtypes.py``) are applied first by casting inputs with the
recorded ``cast`` op, so gradients flow through. Comparisons give bool arrays.

Example:
    >>> import hybridgpu as mx
    >>> a = mx.np.array([[1, 2], [3, 4]], dtype="int32")
    >>> add, greater = make_binary("add"), make_binary("greater")
    >>> add(a, 1.5), divide(a, 2), greater(a, 2)
    (array([[2, 3],
           [4, 5]], dtype=int32), array([[0.5, 1. ],
           [1.5, 2. ]]), array([[False, False],
           [ True,  True]]))
"""

from __future__ import annotations

import numbers

import numpy as onp

from .. import ops
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.imperative import invoke
from . import _dispatch
from .dtypes import binary_result, divide_result, scalar_result
from .multiarray import as_np

__all__ = ["dot", "matmul", "tensordot", "clip", "where", "cast_to", "UNARY", "BINARY",
           "true_divide", "divide"]

_BOOL = onp.dtype(onp.bool_)
_NO_ATTRS: dict = {}

# np name -> registry op (MXNet 1.9 keeps an integer input's dtype for these)
UNARY = {
    "exp": "exp", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
    "log1p": "log1p", "sqrt": "sqrt", "cbrt": "cbrt", "square": "square", "abs": "abs",
    "absolute": "abs", "fabs": "abs", "sign": "sign", "sin": "sin", "cos": "cos", "tan": "tan",
    "arcsin": "arcsin", "arccos": "arccos", "arctan": "arctan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "arcsinh": "arcsinh", "arccosh": "arccosh", "arctanh": "arctanh",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc", "rint": "rint", "fix": "fix",
    "negative": "negative", "reciprocal": "reciprocal", "degrees": "degrees",
    "radians": "radians", "rad2deg": "degrees", "deg2rad": "radians",
}

# np name -> (array op, scalar op, reflected scalar op, kind)
BINARY = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar", "arith"),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar", "arith"),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar", "arith"),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar", "divide"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar", "arith"),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar", "arith"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar", "arith"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar", "arith"),
    "hypot": ("broadcast_hypot", "_hypot_scalar", "_hypot_scalar", "arith"),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar", "compare"),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar", "compare"),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar", "compare"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar",
                      "_lesser_equal_scalar", "compare"),
    "less": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar", "compare"),
    "less_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
                   "compare"),
    "logical_and": ("broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                    "compare"),
    "logical_or": ("broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                   "compare"),
    "logical_xor": ("broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                    "compare"),
}


def is_scalar(value):
    """A Python or NumPy number (not an array)."""
    return isinstance(value, (numbers.Number, onp.bool_)) and not isinstance(value, NDArray)


def cast_to(x, dtype):
    """``x`` in ``dtype`` (recorded ``cast``; ``x`` itself when it already has it)."""
    if not _dispatch.is_symbolic([x]) and onp.dtype(x.dtype) == onp.dtype(dtype):
        return x
    return _dispatch.call("cast", [x], {"dtype": onp.dtype(dtype).name})


def _to_bool(out):
    return out if _dispatch.is_symbolic([out]) else cast_to(out, _BOOL)


def _check_out(result, out):
    if out is None:
        return result
    if not isinstance(out, NDArray) or out.shape != result.shape:
        raise MXNetError(f"out= must be an ndarray of shape {result.shape}, got "
                         f"{getattr(out, 'shape', type(out).__name__)}")
    out[...] = result.astype(out.dtype) if result.dtype != out.dtype else result
    return out


def _arrays(name, array_op, kind, a, b):
    if _dispatch.is_symbolic([a, b]):
        return _dispatch.call(array_op, [a, b])
    if kind == "divide":
        dtype = divide_result(binary_result(a.dtype, b.dtype, arithmetic=False))
    else:
        dtype = binary_result(a.dtype, b.dtype, arithmetic=kind == "arith")
    out = _dispatch.call(array_op, [cast_to(a, dtype), cast_to(b, dtype)])
    return _to_bool(out) if kind == "compare" else out


def _with_scalar(op_name, kind, a, scalar):
    if not _dispatch.is_symbolic([a]):
        if kind == "divide":
            a = cast_to(a, divide_result(a.dtype))
        elif kind == "arith":
            a = cast_to(a, scalar_result(a.dtype, scalar))
    out = _dispatch.call(op_name, [a], {"scalar": scalar})
    return _to_bool(out) if kind == "compare" else out


def make_binary(name):
    """The ``mx.np.<name>`` function of table ``BINARY``."""
    array_op, scalar_op, rscalar_op, kind = BINARY[name]
    numpy_fn = getattr(onp, name)
    array_def, scalar_def = ops.get(array_op), ops.get(scalar_op)
    float_kinds = "f" if kind == "divide" else "fiu"
    wrap, ndarray = _dispatch.wrap, _dispatch.ndarray_class()

    def function(x1, x2, out=None, **kwargs):
        # the common cases first: two arrays of one dtype, an array and a Python number
        if out is None and kind != "compare" and type(x1) is ndarray:
            dtype = x1._data.dtype
            if type(x2) is ndarray and x2._data.dtype is dtype and dtype.kind in float_kinds:
                return wrap(invoke(array_def, [x1, x2], _NO_ATTRS))
            if type(x2) in (int, float) and dtype.kind in float_kinds and (
                    kind != "arith" or dtype.kind != "b"):
                return wrap(invoke(scalar_def, [x1], {"scalar": x2, "is_int": True}))
        if is_scalar(x1) and is_scalar(x2):
            from .multiarray import array

            return _check_out(array(numpy_fn(x1, x2)), out)
        if is_scalar(x2):
            result = _with_scalar(scalar_op, kind, as_np(x1), x2)
        elif is_scalar(x1):
            result = _with_scalar(rscalar_op, kind, as_np(x2), x1)
        else:
            result = _arrays(name, array_op, kind, as_np(x1), as_np(x2))
        return _check_out(result, out)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``numpy.{name}`` with MXNet's dtype rules, over ``{array_op}`` "
                        f"(``{scalar_op}`` with a scalar).\n\nExample:\n    >>> import "
                        f"hybridgpu as mx\n    >>> mx.np.{name}(mx.np.ones(2), 2).shape\n"
                        f"    (2,)\n")
    return function


def make_unary(name):
    """The ``mx.np.<name>`` function of table ``UNARY``."""
    op_name = UNARY[name]

    def function(x, out=None, **kwargs):
        if is_scalar(x):
            from .multiarray import array

            return _check_out(array(getattr(onp, name)(x)), out)
        return _check_out(_dispatch.call(op_name, [as_np(x)]), out)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``numpy.{name}`` elementwise, over the ``{op_name}`` op.\n\n"
                        f"Example:\n    >>> import hybridgpu as mx\n    >>> "
                        f"mx.np.{name}(mx.np.ones(2)).shape\n    (2,)\n")
    return function


true_divide = make_binary("true_divide")
divide = true_divide


def logical_not(x, out=None):
    """Elementwise NOT, as bool."""
    return _check_out(_to_bool(_dispatch.call("logical_not", [as_np(x)])), out)


def _same_dtype(a, b):
    if _dispatch.is_symbolic([a, b]):
        return a, b
    dtype = binary_result(a.dtype, b.dtype, arithmetic=False)
    return cast_to(a, dtype), cast_to(b, dtype)


def tensordot(a, b, axes=2):
    """Sum of products over ``axes`` (an int: the last ``axes`` of ``a`` with the first of
    ``b``; or two lists), over ``_npi_tensordot``.

    Example:
        >>> import hybridgpu as mx
        >>> tensordot(mx.np.ones((2, 3)), mx.np.ones((3, 4)), axes=1).shape
        (2, 4)
    """
    a, b = _same_dtype(as_np(a), as_np(b))
    if isinstance(axes, int):
        summed_a = tuple(range(len(a.shape) - axes, len(a.shape)))
        summed_b = tuple(range(axes))
    else:
        summed_a, summed_b = ((x,) if isinstance(x, int) else tuple(x) for x in axes)
    return _dispatch.call("_npi_tensordot", [a, b], {"a_axes_summed": summed_a,
                                                     "b_axes_summed": summed_b})


def dot(a, b, out=None):
    """NumPy's ``dot``: scalars multiply, otherwise the last axis of ``a`` with the
    second-to-last of ``b`` (the only one of a vector).

    Example:
        >>> import hybridgpu as mx
        >>> dot(mx.np.ones(3), mx.np.ones(3))
        array(3.)
    """
    if is_scalar(a) or is_scalar(b) or as_np(a).ndim == 0 or as_np(b).ndim == 0:
        return _check_out(make_binary("multiply")(a, b), out)
    a, b = as_np(a), as_np(b)
    axis_b = 0 if b.ndim == 1 else b.ndim - 2
    return _check_out(tensordot(a, b, axes=((a.ndim - 1,), (axis_b,))), out)


def matmul(a, b, out=None):
    """NumPy's ``matmul`` (``a @ b``): stacks of matrices, batch axes broadcast; a vector
    operand gets a 1 added to its shape and taken away from the result.

    Example:
        >>> import hybridgpu as mx
        >>> matmul(mx.np.ones((5, 2, 3)), mx.np.ones(3)).shape
        (5, 2)
    """
    a, b = _same_dtype(as_np(a), as_np(b))
    if a.ndim == 0 or b.ndim == 0:
        raise MXNetError("np.matmul: operands must have at least one dimension (use "
                         "np.multiply for scalars)")
    vec_a, vec_b = a.ndim == 1, b.ndim == 1
    if vec_a:
        a = a.reshape(1, -1)
    if vec_b:
        b = b.reshape(-1, 1)
    out_ = _dispatch.call("_npi_matmul", [a, b])
    if vec_a or vec_b:
        shape = out_.shape[:-2] + (() if vec_a else out_.shape[-2:-1]) + (
            () if vec_b else out_.shape[-1:])
        out_ = out_.reshape(shape)
    return _check_out(out_, out)


def clip(a, a_min, a_max, out=None):
    """Values limited to ``[a_min, a_max]`` (None for no bound)."""
    a = as_np(a)
    low = -onp.inf if a_min is None else a_min
    high = onp.inf if a_max is None else a_max
    return _check_out(_dispatch.call("clip", [a], {"a_min": low, "a_max": high}), out)


def where(condition, x=None, y=None):
    """``x`` where ``condition`` holds, else ``y`` (arrays or scalars, broadcast)."""
    if x is None and y is None:
        from .multiarray import from_host

        cond = as_np(condition)
        return tuple(from_host(i, cond.ctx) for i in onp.nonzero(cond.asnumpy()))
    cond = as_np(condition)
    ref = x if not is_scalar(x) else y
    ref = as_np(ref) if ref is not None and not is_scalar(ref) else None
    dtype = onp.dtype("float32") if ref is None else onp.dtype(ref.dtype)
    if not is_scalar(x) and not is_scalar(y):
        dtype = binary_result(as_np(x).dtype, as_np(y).dtype, arithmetic=False)
    from .manipulation import broadcast_arrays

    xs = [cast_to(as_np(v, ctx=cond.ctx, dtype=dtype), dtype) for v in (x, y)]
    c, xv, yv = broadcast_arrays(cond, *xs)
    return _dispatch.call("where", [cast_to(c, dtype), xv, yv])
