"""The ``mx.nd`` two-operand helpers (``nd.add`` ... ``nd.logical_xor``) in every operand form,
and the op-backed ``NDArray`` methods (``x.sum(axis=1)``, ``x.clip(0, 1)``, ...), against NumPy.

Behaviour checked against MXNet 1.9.1: a number meeting an array is cast to the array's dtype;
results keep the array's dtype (comparisons give 0/1 in it); two numbers give a Python number
(comparisons the int 0 or 1); a number on the left of ``greater`` mirrors to ``lesser``.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.ndarray import methods, ufunc

nd = mx.nd

# helper -> NumPy function (results cast back to the array operand's dtype)
NUMPY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "true_divide": np.divide, "modulo": np.mod, "power": np.power, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "lesser": np.less,
    "lesser_equal": np.less_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
# helper -> what Python gives for two numbers
PYTHON = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "true_divide": operator.truediv, "modulo": operator.mod,
    "power": operator.pow, "maximum": max, "minimum": min,
    "equal": lambda a, b: int(a == b), "not_equal": lambda a, b: int(a != b),
    "greater": lambda a, b: int(a > b), "greater_equal": lambda a, b: int(a >= b),
    "lesser": lambda a, b: int(a < b), "lesser_equal": lambda a, b: int(a <= b),
    "logical_and": lambda a, b: int(bool(a) and bool(b)),
    "logical_or": lambda a, b: int(bool(a) or bool(b)),
    "logical_xor": lambda a, b: int(bool(a) != bool(b)),
}
HELPERS = sorted(NUMPY)


def _operands(dtype="float32"):
    """Positive values (power and modulo stay real and smooth), with some equal entries."""
    rng = np.random.RandomState(0)
    a = rng.randint(1, 5, size=(2, 3)).astype(dtype)
    b = rng.randint(1, 5, size=(3,)).astype(dtype)
    return a, b


def _check(got, want, dtype):
    assert isinstance(got, mx.nd.NDArray)
    assert got.dtype == np.dtype(dtype).type, f"dtype {got.dtype}, MXNet gives {dtype}"
    np.testing.assert_allclose(got.asnumpy(), np.asarray(want).astype(dtype), rtol=1e-6)


def test_helper_list_matches_mxnet():
    assert sorted(ufunc.__all__) == HELPERS
    for name in HELPERS:
        assert getattr(nd, name) is getattr(ufunc, name), f"nd.{name} is not the helper"
        assert name in nd.__all__


@pytest.mark.parametrize("name", HELPERS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_array_array_broadcasts(name, dtype):
    a, b = _operands(dtype)
    got = getattr(nd, name)(nd.array(a, dtype=dtype), nd.array(b, dtype=dtype))
    _check(got, NUMPY[name](a, b), dtype)


@pytest.mark.parametrize("name", HELPERS)
def test_array_scalar(name):
    a, _ = _operands()
    _check(getattr(nd, name)(nd.array(a), 2), NUMPY[name](a, np.float32(2)), "float32")


@pytest.mark.parametrize("name", HELPERS)
def test_scalar_array_puts_the_number_on_the_left(name):
    a, _ = _operands()
    _check(getattr(nd, name)(3, nd.array(a)), NUMPY[name](np.float32(3), a), "float32")


@pytest.mark.parametrize("name", HELPERS)
@pytest.mark.parametrize(("x", "y"), [(3, 2), (2.5, 2), (0, 3), (2, 2)])
def test_scalar_scalar_is_python_arithmetic(name, x, y):
    got = getattr(nd, name)(x, y)
    want = PYTHON[name](x, y)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "greater", "equal", "logical_xor"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_array_casts_the_number_to_its_dtype(name, dtype):
    a, _ = _operands(dtype)
    x = nd.array(a, dtype=dtype)
    scalar = np.dtype(dtype).type(2)  # 2.5 becomes 2, as in MXNet
    _check(getattr(nd, name)(x, 2.5), NUMPY[name](a, scalar), dtype)
    _check(getattr(nd, name)(2.5, x), NUMPY[name](scalar, a), dtype)


def test_int_division_truncates():
    x = nd.array([1, 2, 7], dtype="int32")
    _check(nd.divide(x, 2), np.trunc(np.array([1, 2, 7]) / 2), "int32")
    _check(nd.divide(7, x), np.trunc(7 / np.array([1, 2, 7])), "int32")


@pytest.mark.parametrize("number", [np.float32(2), np.int64(2), True, np.bool_(True)])
def test_numpy_scalars_and_bools_are_numbers(number):
    a, _ = _operands()
    _check(nd.multiply(nd.array(a), number), a * float(number), "float32")
    _check(nd.subtract(number, nd.array(a)), float(number) - a, "float32")


@pytest.mark.parametrize(("lhs", "rhs", "which"), [
    ("array", [1, 2], "rhs"), ([1, 2], "array", "lhs"), ("array", np.ones(3), "rhs"),
    ("array", "text", "rhs"), (None, 2, "lhs"),
])
def test_bad_operands_raise_a_clear_type_error(lhs, rhs, which):
    x = nd.ones((3,))
    lhs, rhs = (x if isinstance(v, str) and v == "array" else v for v in (lhs, rhs))
    with pytest.raises(TypeError, match=rf"nd\.add: {which} must be an NDArray or a number"):
        nd.add(lhs, rhs)


def test_power_names_its_arguments_like_mxnet():
    x = nd.array([1.0, 2.0, 3.0])
    _check(nd.power(base=2, exp=x), 2.0 ** np.array([1.0, 2.0, 3.0]), "float32")


def test_hypot_has_no_helper():
    assert "hypot" not in ufunc.__all__


# -- NDArray methods ------------------------------------------------------------------------

def _nd_function(name):
    fn = getattr(nd, name, None)
    if fn is None:
        pytest.skip(f"nd.{name} is not registered yet")
    return fn


_UNARY = {
    "abs": np.abs, "arccos": np.arccos, "arcsin": np.arcsin, "arctan": np.arctan,
    "arcsinh": np.arcsinh, "arctanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil,
    "cos": np.cos, "cosh": np.cosh, "degrees": np.degrees, "exp": np.exp, "expm1": np.expm1,
    "fix": np.fix, "floor": np.floor, "radians": np.radians, "reciprocal": np.reciprocal,
    "relu": lambda x: np.maximum(x, 0), "rint": np.rint, "round": np.round,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sign": np.sign, "sin": np.sin,
    "sinh": np.sinh, "square": np.square, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
}
_POSITIVE = {
    "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "rcbrt": lambda x: 1 / np.cbrt(x),
    "arccosh": lambda x: np.arccosh(x + 1),
}


@pytest.mark.parametrize("name", sorted(_UNARY) + sorted(_POSITIVE))
def test_unary_method_equals_numpy(name):
    _nd_function(name)
    rng = np.random.RandomState(1)
    values = rng.uniform(-0.9, 0.9, (2, 3)) if name in _UNARY else rng.uniform(0.1, 2, (2, 3))
    if name == "arccosh":
        values = values + 1
        ref = np.arccosh
    else:
        ref = _UNARY.get(name) or _POSITIVE[name]
    x = nd.array(values)
    got = getattr(x, name)()
    np.testing.assert_allclose(got.asnumpy(), ref(values.astype(np.float32)), rtol=1e-5,
                               atol=1e-6)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], dtype=np.float32)

# (method, args, kwargs, NumPy reference of X); positional args bind like MXNet's.
_WITH_ARGS = [
    ("sum", (), {"axis": 1}, lambda x: x.sum(axis=1)),
    ("sum", (), {}, lambda x: x.sum().reshape(1)),
    ("mean", (), {"axis": 0}, lambda x: x.mean(axis=0)),
    ("max", (), {"axis": 1}, lambda x: x.max(axis=1)),
    ("min", (), {}, lambda x: x.min().reshape(1)),
    ("prod", (), {"axis": 1}, lambda x: x.prod(axis=1)),
    ("nansum", (), {"axis": 1}, lambda x: np.nansum(x, axis=1)),
    ("nanprod", (), {"axis": 0}, lambda x: np.nanprod(x, axis=0)),
    ("norm", (), {}, lambda x: np.sqrt((x * x).sum()).reshape(1)),
    ("argmax", (), {"axis": 1}, lambda x: x.argmax(axis=1).astype(np.float32)),
    ("argmin", (1,), {}, lambda x: x.argmin(axis=1).astype(np.float32)),
    ("argmax_channel", (), {}, lambda x: x.argmax(axis=-1).astype(np.float32)),
    ("clip", (1, 3), {}, lambda x: np.clip(x, 1, 3)),
    ("transpose", ((1, 0),), {}, lambda x: x.T),
    ("expand_dims", (1,), {}, lambda x: x[:, None, :]),
    ("flatten", (), {}, lambda x: x.reshape(2, 3)),
    ("swapaxes", (0, 1), {}, lambda x: x.swapaxes(0, 1)),
    ("flip", (), {"axis": 1}, lambda x: x[:, ::-1]),
    ("tile", ((2, 1),), {}, lambda x: np.tile(x, (2, 1))),
    ("repeat", (), {"repeats": 2, "axis": 0}, lambda x: np.repeat(x, 2, axis=0)),
    ("sort", (), {}, lambda x: np.sort(x, axis=-1)),
    ("argsort", (), {}, lambda x: np.argsort(x, axis=-1).astype(np.float32)),
    ("topk", (), {"k": 2}, lambda x: np.argsort(-x, axis=-1)[:, :2].astype(np.float32)),
    ("softmax", (), {}, _softmax),
    ("softmin", (), {}, lambda x: _softmax(-x)),
    ("log_softmax", (), {}, lambda x: np.log(_softmax(x))),
    ("slice_axis", (), {"axis": 1, "begin": 0, "end": 2}, lambda x: x[:, 0:2]),
    ("slice", ((0, 1), (2, 3)), {}, lambda x: x[0:2, 1:3]),
    ("broadcast_to", ((3, 2, 3),), {}, lambda x: np.broadcast_to(x, (3, 2, 3))),
    ("broadcast_to", ((2, 0, 3),), {}, lambda x: np.broadcast_to(x, (2, 2, 3))),
    ("zeros_like", (), {}, np.zeros_like),
    ("ones_like", (), {}, np.ones_like),
    ("shape_array", (), {}, lambda x: np.array(x.shape, dtype=np.int64)),
    ("size_array", (), {}, lambda x: np.array([x.size], dtype=np.int64)),
    ("squeeze", (), {}, lambda x: x),
    ("diag", (), {}, np.diag),
    ("split", (3, 1), {}, lambda x: np.split(x, 3, axis=1)),
    ("split_v2", (3, 1), {}, lambda x: np.split(x, 3, axis=1)),
    ("one_hot", (6,), {}, lambda x: np.eye(6, dtype=np.float32)[x.astype(int)]),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "ref"), _WITH_ARGS,
                         ids=[f"{m}-{i}" for i, (m, *_) in enumerate(_WITH_ARGS)])
def test_method_with_arguments_equals_numpy(method, args, kwargs, ref):
    _nd_function(methods.all_methods()[method])
    got = getattr(nd.array(X), method)(*args, **kwargs)
    want = ref(X.copy())
    got = got if isinstance(got, list) else [got]
    want = want if isinstance(want, list) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape, f"{method}: shape {g.shape} vs {w.shape}"
        np.testing.assert_allclose(g.asnumpy(), w, rtol=1e-5, atol=1e-6, err_msg=method)


_OTHER_INPUT = [
    ("pick", lambda: (nd.array([0, 2]), 1), {}, lambda x: x[[0, 1], [0, 2]]),
    ("take", lambda: (nd.array([1, 0, 1]),), {}, lambda x: x[[1, 0, 1]]),
    ("broadcast_like", lambda: (nd.zeros((4, 2, 3)),), {}, lambda x: np.broadcast_to(
        x, (4, 2, 3))),
    ("slice_like", lambda: (nd.zeros((1, 2)),), {}, lambda x: x[:1, :2]),
]


@pytest.mark.parametrize(("method", "make", "kwargs", "ref"), _OTHER_INPUT,
                         ids=[m for m, *_ in _OTHER_INPUT])
def test_method_with_a_second_input(method, make, kwargs, ref):
    _nd_function(method)
    got = getattr(nd.array(X), method)(*make(), **kwargs)
    want = ref(X.copy())
    assert got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)


def _depth_to_space(x, b):
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    return y.reshape(n, c // (b * b), h * b, w * b)


def test_image_methods_equal_numpy():
    values = np.arange(2 * 8 * 2 * 3, dtype=np.float32).reshape(2, 8, 2, 3)
    x = nd.array(values)
    _nd_function("depth_to_space")
    np.testing.assert_array_equal(x.depth_to_space(2).asnumpy(), _depth_to_space(values, 2))
    _nd_function("space_to_depth")
    np.testing.assert_array_equal(x.depth_to_space(2).space_to_depth(2).asnumpy(), values)
    _nd_function("pad")
    got = x.pad(mode="constant", pad_width=(0, 0, 0, 0, 1, 1, 2, 0), constant_value=0)
    np.testing.assert_array_equal(got.asnumpy(), np.pad(values, ((0, 0), (0, 0), (1, 1),
                                                                 (2, 0))))


def test_broadcast_axes_method():
    _nd_function("broadcast_axes")
    got = nd.array(X[:1]).broadcast_axes(axis=0, size=3)
    np.testing.assert_array_equal(got.asnumpy(), np.repeat(X[:1], 3, axis=0))


def test_every_method_equals_its_nd_function():
    x = nd.array(X)
    for method in ("exp", "relu", "abs", "sign", "floor", "sigmoid"):
        np.testing.assert_array_equal(getattr(x, method)().asnumpy(),
                                      getattr(nd, method)(x).asnumpy())
    np.testing.assert_array_equal(x.clip(1, 2).asnumpy(), nd.clip(x, 1, 2).asnumpy())


@pytest.mark.parametrize(("method", "args"), [("flatten", ()), ("expand_dims", (0,)),
                                              ("squeeze", ())])
def test_inplace_methods_return_views(method, args):
    x = nd.array(X[:, None, :])
    view = getattr(x, method)(*args, inplace=True)
    copy = getattr(x, method)(*args)
    assert view.shape == copy.shape
    view[:] = 7
    assert (x.asnumpy() == 7).all(), "inplace=True must share memory"
    assert not (copy.asnumpy() == 7).all(), "inplace=False must copy"


@pytest.mark.parametrize("shape", [(3,), (2, 4), (5, 3, 0)])
def test_broadcast_to_rejects_incompatible_shapes(shape):
    with pytest.raises(ValueError, match="broadcast_to: cannot broadcast shape"):
        nd.array(X).broadcast_to(shape)


def test_slice_assign_writes_into_self():
    _nd_function("_slice_assign")
    x = nd.zeros((3, 4))
    out = x.slice_assign(nd.ones((1, 2)), (1, 1), (2, 3), (None, None))
    assert out is x
    want = np.zeros((3, 4), dtype=np.float32)
    want[1:2, 1:3] = 1
    np.testing.assert_array_equal(x.asnumpy(), want)
    _nd_function("_slice_assign_scalar")
    assert x.slice_assign_scalar(7, (0, 0), (1, 2), (None, None)) is x
    want[0:1, 0:2] = 7
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_writable_property():
    x = nd.array(X)
    assert x.writable is True
    x.writable = False
    with pytest.raises(MXNetError, match="read-only"):
        x[0] = 1
    x.writable = True
    x[0] = 1
    assert x.asnumpy()[0].tolist() == [1, 1, 1]


def test_method_of_a_missing_function_names_it(monkeypatch):
    monkeypatch.delattr(nd, "sigmoid")
    with pytest.raises(MXNetError, match=r"NDArray\.sigmoid: needs nd\.sigmoid"):
        nd.array(X).sigmoid()


def test_ndarray_py_methods_are_not_replaced():
    for name in ("reshape", "reshape_like", "astype", "copy", "asnumpy"):
        assert getattr(mx.nd.NDArray, name).__module__ == "hybridgpu.ndarray.ndarray", name


@pytest.mark.parametrize("method", sorted(methods.all_methods()))
def test_every_method_resolves_to_a_registered_op(method):
    function = methods.all_methods()[method]
    op_name = methods.op_name_of(function)
    if not ops.exists(op_name):
        pytest.skip(f"op {op_name} is not registered yet")
    assert hasattr(mx.nd.NDArray, method)
    fn = getattr(nd, function, None)
    assert callable(fn), f"NDArray.{method} needs nd.{function}"
    if function == op_name:
        assert fn.opdef is ops.get(op_name)


MXNET_ATTRIBUTES = (
    "T", "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax",
    "argmax_channel", "argmin", "argsort", "as_in_context", "as_nd_ndarray", "asnumpy", "asscalar",
    "astype", "broadcast_axes", "broadcast_like", "broadcast_to", "cbrt", "ceil", "clip",
    "context", "copy", "copyto", "cos", "cosh", "ctx", "degrees", "depth_to_space", "diag",
    "dtype", "exp", "expand_dims", "expm1", "fix", "flatten", "flip", "floor", "handle", "log",
    "log10", "log1p", "log2", "log_softmax", "max", "mean", "min", "nanprod", "nansum", "ndim",
    "norm", "one_hot", "ones_like", "pad", "pick", "prod", "radians", "rcbrt", "reciprocal",
    "relu", "repeat", "reshape", "reshape_like", "rint", "round", "rsqrt", "shape", "shape_array",
    "sigmoid", "sign", "sin", "sinh", "size", "size_array", "slice", "slice_assign",
    "slice_assign_scalar", "slice_axis", "slice_like", "softmax", "softmin", "sort",
    "space_to_depth", "split", "split_v2", "sqrt", "square", "squeeze", "stype", "sum", "swapaxes",
    "take", "tan", "tanh", "tile", "to_dlpack_for_read", "to_dlpack_for_write", "topk", "tostype",
    "transpose", "trunc", "wait_to_read", "writable", "zeros_like",
)


def test_every_mxnet_attribute_exists():
    missing = [name for name in MXNET_ATTRIBUTES if not hasattr(mx.nd.NDArray, name)]
    assert not missing, f"NDArray lacks MXNet's {missing}"
