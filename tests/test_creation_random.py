"""The Python-level creation functions (``nd.zeros``, ``nd.arange``, ...) against MXNet's
signatures and NumPy, and the random ops (``nd.random.*``, ``mx.random``): seeding, moments of
large samples, ranges, dtypes, shapes and contexts, and their error messages."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd, ops
from hybridgpu.base import MXNetError
from hybridgpu.ndarray.register import namespace_of

# -- signatures (as MXNet 1.9.1 prints them) -------------------------------------------------

MXNET_SIGNATURES = {
    nd.zeros: "(shape, ctx=None, dtype=None, stype=None, **kwargs)",
    nd.ones: "(shape, ctx=None, dtype=None, **kwargs)",
    # MXNet's default is base.mx_real_t, numpy.float32 (as printed by MXNet 1.9.1)
    nd.full: "(shape, val, ctx=None, dtype=<class 'numpy.float32'>, out=None)",
    nd.arange: "(start, stop=None, step=1.0, repeat=1, infer_range=None, ctx=None, "
               "dtype=<class 'numpy.float32'>)",
    nd.linspace: "(start, stop, num, endpoint=True, ctx=None, dtype=<class 'numpy.float32'>)",
    nd.eye: "(N, M=0, k=0, ctx=None, dtype=None, **kwargs)",
    nd.empty: "(shape, ctx=None, dtype=None, stype=None)",
    nd.random.uniform: "(low=0, high=1, shape=_Null, dtype=_Null, ctx=None, out=None, "
                       "**kwargs)",
    nd.random.normal: "(loc=0, scale=1, shape=_Null, dtype=_Null, ctx=None, out=None, "
                      "**kwargs)",
    nd.random.randint: "(low, high, shape=_Null, dtype=_Null, ctx=None, out=None, **kwargs)",
    nd.random.shuffle: "(data, **kwargs)",
    nd.random.randn: "(*shape, **kwargs)",
}


@pytest.mark.parametrize("fn", list(MXNET_SIGNATURES), ids=lambda f: f.__name__)
def test_signature_matches_mxnet(fn):
    assert str(inspect.signature(fn)) == MXNET_SIGNATURES[fn]


# -- creation functions -----------------------------------------------------------------------

def test_positional_calls_match_numpy():
    np.testing.assert_array_equal(nd.arange(0, 10, 2).asnumpy(), np.arange(0, 10, 2))
    np.testing.assert_array_equal(nd.arange(5).asnumpy(), np.arange(5))
    np.testing.assert_array_equal(nd.full((2, 2), 7).asnumpy(), np.full((2, 2), 7.0))
    np.testing.assert_array_equal(nd.eye(3, k=1).asnumpy(), np.eye(3, k=1))
    np.testing.assert_array_equal(nd.eye(2, 3, -1).asnumpy(), np.eye(2, 3, -1))
    np.testing.assert_allclose(nd.linspace(0, 1, 5).asnumpy(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(nd.zeros(3).asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(nd.ones((2, 3)).asnumpy(), np.ones((2, 3)))


@pytest.mark.parametrize("make", [
    lambda dt: nd.zeros((2,), dtype=dt), lambda dt: nd.ones((2,), dtype=dt),
    lambda dt: nd.full((2,), 3, dtype=dt), lambda dt: nd.arange(0, 4, dtype=dt),
    lambda dt: nd.linspace(0, 4, 3, dtype=dt), lambda dt: nd.eye(2, dtype=dt)])
@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", np.int64, "uint8"])
def test_creation_dtype(make, dtype):
    assert make(dtype).dtype == np.dtype(dtype).type


def test_default_dtype_is_float32():
    for x in (nd.zeros((2,)), nd.ones((2,)), nd.full((2,), 1), nd.arange(3), nd.eye(2),
              nd.linspace(0, 1, 3)):
        assert x.dtype == np.float32


def test_ctx_argument_places_the_result():
    for x in (nd.zeros((2,), ctx=mx.cpu(1)), nd.ones((2,), ctx="cpu(1)"),
              nd.full((2,), 1, ctx=mx.cpu(1)), nd.arange(3, ctx=mx.cpu(1)),
              nd.eye(2, ctx=mx.cpu(1)), nd.linspace(0, 1, 3, ctx=mx.cpu(1))):
        assert x.context == mx.cpu(1)
    with mx.cpu(2):
        assert nd.zeros((2,)).context == mx.cpu(2)


def test_out_argument_is_written():
    out = nd.ones((2, 2))
    assert nd.full((2, 2), 5, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 5.0))
    assert nd.zeros((2, 2), out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), np.zeros((2, 2)))


def test_arange_follows_mxnet_arithmetic():
    # start and step are taken in the output dtype: 2.5 -> 2, 1.5 -> 1 (MXNet gives [2, 3, 4])
    got = nd.arange(2.5, 7, 1.5, dtype="int32").asnumpy()
    np.testing.assert_array_equal(got, np.trunc(2.5) + np.arange(3) * np.trunc(1.5))
    np.testing.assert_array_equal(nd.arange(0, 3, repeat=2).asnumpy(),
                                  np.repeat(np.arange(3), 2))
    np.testing.assert_allclose(nd.arange(4, -1, -1.5).asnumpy(), np.arange(4, -1, -1.5))


def test_arange_infer_range_is_deprecated_and_ignored():
    with pytest.warns(DeprecationWarning, match="infer_range"):
        got = nd.arange(0, 4, infer_range=True)
    np.testing.assert_array_equal(got.asnumpy(), np.arange(4))
    op = ops.get("_arange")
    attrs = op.parse_attrs({"start": 0, "stop": 4, "infer_range": True})
    assert op.infer_shape(attrs, [])[1] == [None]  # the length comes from the graph
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nd.arange(0, 4)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: nd.zeros((2, 0)), ["_zeros", "(2, 0)", "unknown"]),
    (lambda: nd.ones(()), ["_ones", "()", "unknown"]),
    (lambda: nd.full((0,), 1), ["_full", "(0,)"]),
    (lambda: nd.zeros((2, -1)), ["_zeros", "positive"]),
    (lambda: nd.arange(5, 0), ["_arange", "invalid range", "(5.0, 0.0, 1.0)"]),
    (lambda: nd.arange(0, 5, 0), ["_arange", "step"]),
    (lambda: nd.arange(0, 5, repeat=0), ["_arange", "repeat"]),
    (lambda: nd.eye(-1), ["_eye", "N=-1"]),
    (lambda: nd.linspace(0, 1, -2), ["_linspace", "num", "-2"]),
    (lambda: nd.zeros((2,), dtype="complex64"), ["_zeros", "dtype"]),
    (lambda: nd.eye(2, dtype="bool"), ["_eye", "dtype", "bool"]),
    (lambda: nd.zeros((2,), stype="csr"), ["nd.zeros", "stype", "csr"]),
])
def test_bad_creation_arguments_raise_clear_errors(call, words):
    with pytest.raises(MXNetError) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)


def test_zero_dims_stay_unknown_in_shape_inference():
    op = ops.get("_zeros")
    assert op.infer_shape(op.parse_attrs({"shape": (2, 0)}), [])[1] == [(2, 0)]
    assert op.infer_shape(op.parse_attrs({}), [])[1] == [None]


def test_creation_ops_read_mxnet_json_attributes():
    op = ops.get("_arange")
    attrs = op.parse_attrs({"start": "0", "stop": "10", "step": "1.0", "repeat": "1",
                            "infer_range": "False", "dtype": "float32"})
    assert op.infer_shape(attrs, [])[1] == [(10,)]
    op = ops.get("_random_uniform")
    attrs = op.parse_attrs({"high": "1", "low": "0", "shape": "(2, 3)"})  # MXNet's JSON
    assert op.infer_shape(attrs, [])[1] == [(2, 3)] and attrs["dtype"] is None


def test_ctx_is_not_an_op_attribute():
    # the nd functions take ctx= as the device; the op schema does not have it
    assert "ctx" not in ops.get("_zeros").attrs
    assert nd._internal._zeros(shape=(2,), ctx=mx.cpu(1)).context == mx.cpu(1)


def test_zeros_like_and_ones_like_keep_dtype():
    x = nd.array([[1, 2, 3]], dtype="int32")
    assert nd.zeros_like(x).dtype == np.int32 and nd.ones_like(x).dtype == np.int32
    np.testing.assert_array_equal(nd.ones_like(x).asnumpy(), np.ones((1, 3)))


# -- random: seeding --------------------------------------------------------------------------

DRAWS = {
    "uniform": lambda: nd.random.uniform(-1, 2, shape=(50,)),
    "normal": lambda: nd.random.normal(1, 3, shape=(50,)),
    "randint": lambda: nd.random.randint(0, 1000, shape=(50,)),
    "randn": lambda: nd.random.randn(50),
    "shuffle": lambda: nd.random.shuffle(nd.arange(50)),
    "uniform_like": lambda: nd.random.uniform_like(nd.zeros((50,))),
    "normal_like": lambda: nd.random.normal_like(nd.zeros((50,))),
    "sample_uniform": lambda: nd.random.uniform(nd.zeros((5,)), nd.ones((5,)), shape=10),
    "sample_normal": lambda: nd.random.normal(nd.zeros((5,)), nd.ones((5,)), shape=10),
    "mx.random.uniform": lambda: mx.random.uniform(shape=(50,)),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_seed_makes_draws_repeatable(name):
    draw = DRAWS[name]
    mx.random.seed(123)
    first = draw().asnumpy()
    mx.random.seed(123)
    again = draw().asnumpy()
    mx.random.seed(124)
    other = draw().asnumpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_consecutive_draws_differ():
    mx.random.seed(0)
    a = nd.random.uniform(shape=(20,)).asnumpy()
    b = nd.random.uniform(shape=(20,)).asnumpy()
    assert not np.array_equal(a, b)


def test_seeding_one_context_leaves_the_others():
    mx.random.seed(5)
    cpu0 = nd.random.uniform(shape=(10,)).asnumpy()
    mx.random.seed(5)
    mx.random.seed(99, ctx=mx.cpu(1))
    np.testing.assert_array_equal(nd.random.uniform(shape=(10,)).asnumpy(), cpu0)
    mx.random.seed(99, ctx=mx.cpu(1))
    a = nd.random.uniform(shape=(10,), ctx=mx.cpu(1)).asnumpy()
    mx.random.seed(99, ctx=mx.cpu(1))
    np.testing.assert_array_equal(nd.random.uniform(shape=(10,), ctx=mx.cpu(1)).asnumpy(), a)


# -- random: distributions --------------------------------------------------------------------

N = 200_000


def _moments(x):
    x = x.asnumpy().astype(np.float64)
    return x.mean(), x.var()


def test_uniform_moments_and_range():
    mx.random.seed(1)
    x = nd.random.uniform(2, 5, shape=(N,))
    mean, var = _moments(x)
    assert abs(mean - 3.5) < 0.01 and abs(var - 9 / 12) < 0.01
    values = x.asnumpy()
    assert values.min() >= 2 and values.max() < 5


def test_normal_moments():
    mx.random.seed(2)
    mean, var = _moments(nd.random.normal(1, 2, shape=(N,)))
    assert abs(mean - 1) < 0.02 and abs(var - 4) < 0.05


def test_randn_moments_and_shape():
    mx.random.seed(3)
    x = nd.random.randn(400, 500, loc=-1, scale=0.5)
    assert x.shape == (400, 500)
    mean, var = _moments(x)
    assert abs(mean + 1) < 0.01 and abs(var - 0.25) < 0.01


def test_randint_range_and_coverage():
    mx.random.seed(4)
    values = nd.random.randint(-3, 4, shape=(N,)).asnumpy()
    assert values.dtype == np.int32
    assert set(np.unique(values)) == set(range(-3, 4))
    assert abs(values.mean() - 0) < 0.02


def test_sample_ops_use_one_distribution_per_element():
    mx.random.seed(5)
    low, high = nd.array([0, 10]), nd.array([1, 30])
    x = nd.random.uniform(low, high, shape=N // 2).asnumpy()
    assert x.shape == (2, N // 2)
    np.testing.assert_allclose(x.mean(axis=1), [0.5, 20], atol=0.05)
    assert (x[0] >= 0).all() and (x[0] < 1).all() and (x[1] >= 10).all() and (x[1] < 30).all()
    y = nd.random.normal(nd.array([[0], [5]]), nd.array([[1], [0.1]]), shape=(N // 2,))
    assert y.shape == (2, 1, N // 2)
    y = y.asnumpy().reshape(2, -1)
    np.testing.assert_allclose(y.mean(axis=1), [0, 5], atol=0.02)
    np.testing.assert_allclose(y.std(axis=1), [1, 0.1], rtol=0.02)


def test_uniform_low_precision_stays_below_high():
    mx.random.seed(6)
    x = nd.random.uniform(0, 1, shape=(N,), dtype="float16").asnumpy()
    assert x.max() < 1 and x.min() >= 0


def test_uniform_like_and_normal_like_follow_the_input():
    data = nd.zeros((300, 400), dtype="float64")
    mx.random.seed(7)
    u = nd.random.uniform_like(data, low=-2, high=0)
    assert u.shape == data.shape and u.dtype == np.float64
    assert abs(_moments(u)[0] + 1) < 0.01
    g = nd.random.normal_like(data, loc=3, scale=2)
    assert g.dtype == np.float64 and abs(_moments(g)[1] - 4) < 0.05


def test_shuffle_permutes_rows():
    mx.random.seed(8)
    data = nd.array(np.arange(40).reshape(20, 2))
    out = nd.random.shuffle(data)
    rows = out.asnumpy()
    assert out.shape == (20, 2)
    assert not np.array_equal(rows, data.asnumpy())
    assert sorted(map(tuple, rows)) == sorted(map(tuple, data.asnumpy()))
    np.testing.assert_array_equal(data.asnumpy(), np.arange(40).reshape(20, 2))  # unchanged


def test_shuffle_keeps_dtype_and_handles_one_row():
    x = nd.array([[1, 2]], dtype="int64")
    out = nd.random.shuffle(x)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy())


# -- random: arguments ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_dtypes(dtype):
    assert nd.random.uniform(shape=(2,), dtype=dtype).dtype == np.dtype(dtype).type
    assert nd.random.normal(shape=(2,), dtype=dtype).dtype == np.dtype(dtype).type
    assert nd.random.uniform(nd.zeros((2,)), nd.ones((2,)), dtype=dtype).dtype == \
        np.dtype(dtype).type


def test_default_dtypes_and_shapes():
    assert nd.random.uniform().shape == (1,) and nd.random.uniform().dtype == np.float32
    assert nd.random.normal(shape=4).shape == (4,)
    assert nd.random.randint(0, 5).shape == (1,)
    assert nd.random.randint(0, 5, shape=(2, 3), dtype="int64").dtype == np.int64
    # array parameters: float32 output unless dtype says otherwise, as in MXNet
    low = nd.zeros((3,), dtype="float64")
    assert nd.random.uniform(low, low + 1).dtype == np.float32
    assert nd.random.uniform(low, low + 1).shape == (3,)


def test_random_ctx_and_out():
    assert nd.random.uniform(shape=(2,), ctx=mx.cpu(1)).context == mx.cpu(1)
    assert nd.random.randint(0, 3, shape=(2,), ctx="cpu(1)").context == mx.cpu(1)
    out = nd.zeros((3, 2))
    assert nd.random.normal(5, 1, shape=(3, 2), out=out) is out
    assert abs(out.asnumpy().mean() - 5) < 3


def test_out_gives_shape_and_dtype_when_not_given():
    weight = nd.zeros((20, 30), dtype="float64")
    mx.random.seed(9)
    assert nd.random.uniform(-1, 1, out=weight) is weight
    values = weight.asnumpy()
    assert values.dtype == np.float64 and values.min() >= -1 and values.max() < 1
    assert len(np.unique(values)) == values.size  # really float64 draws, all filled
    ints = nd.zeros((50,), dtype="int64")
    nd.random.randint(5, 8, out=ints)
    assert set(np.unique(ints.asnumpy())) <= {5, 6, 7}
    grid = nd.zeros((2, 40))
    nd.random.normal(nd.array([0, 100]), nd.array([1, 1]), out=grid)
    assert abs(grid.asnumpy()[1].mean() - 100) < 1
    with pytest.raises(MXNetError, match="shape"):
        nd.random.uniform(-1, 1, shape=(3, 2), out=nd.zeros((2, 3)))


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: nd.random.uniform(2, 1, shape=(2,)), MXNetError, ["_random_uniform", "low"]),
    (lambda: nd.random.normal(0, -1, shape=(2,)), MXNetError, ["_random_normal", "scale"]),
    (lambda: nd.random.randint(3, 3, shape=(2,)), MXNetError, ["_random_randint", "low=3"]),
    (lambda: nd.random.randint(0, 5, dtype="float32"), MXNetError, ["dtype", "int32"]),
    (lambda: nd.random.uniform(dtype="int32"), MXNetError, ["dtype", "float32"]),
    (lambda: nd.random.uniform(shape=(2, 0)), MXNetError, ["_random_uniform", "(2, 0)"]),
    (lambda: nd.random.uniform(nd.zeros((2,)), 1.0), ValueError, ["uniform", "NDArray"]),
    (lambda: nd.random.uniform(nd.zeros((2,)), nd.ones((3,))), MXNetError,
     ["_sample_uniform", "(2,)", "(3,)"]),
    (lambda: nd.random.shuffle(nd.array(np.float32(1.0)).reshape(())), MXNetError,
     ["_shuffle", "0-d"]),
    (lambda: nd.random.shuffle([1, 2]), TypeError, ["shuffle", "NDArray"]),
])
def test_bad_random_arguments_raise_clear_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)


# -- namespaces -------------------------------------------------------------------------------

def test_every_random_op_is_reachable_under_its_mxnet_names():
    for op in ops.all_ops():
        if not op.random:
            continue
        for name in (op.name, *op.aliases):
            module, public = namespace_of(name)
            if module == "random":
                fn = getattr(nd.random, public)
                assert op.name in getattr(fn, "op_names", (fn.opdef.name,)), name
            elif name.startswith("_"):
                assert getattr(nd._internal, name).opdef is op
            else:
                assert getattr(nd, name).opdef is op


def test_mx_random_reexports_nd_random():
    for name in ("uniform", "normal", "randint", "randn", "shuffle"):
        assert getattr(mx.random, name) is getattr(nd.random, name)
    assert callable(mx.random.seed)


# -- linalg: errors and names ------------------------------------------------------------------

@pytest.mark.parametrize(("call", "words"), [
    (lambda: nd.dot(nd.ones((2, 3)), nd.ones((4, 5))), ["dot", "(2, 3)", "(4, 5)", "3 and 4"]),
    (lambda: nd.dot(nd.ones((3,)), nd.ones((3,)), transpose_a=True), ["dot", "vectors"]),
    (lambda: nd.dot(nd.ones((2, 2)), nd.ones((2, 2)), forward_stype="csr"), ["dot", "csr"]),
    (lambda: nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((3, 4, 5))),
     ["batch_dot", "(2, 3, 4)", "(3, 4, 5)", "batch"]),
    (lambda: nd.batch_dot(nd.ones((3, 4)), nd.ones((4, 5))), ["batch_dot", "N >= 3"]),
    (lambda: nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 5, 5))), ["batch_dot", "4 and 5"]),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((4, 4))), ["_linalg_gemm2", "3 and 4"]),
    (lambda: nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 4)), axis=-1),
     ["_linalg_gemm2", "axis=-1", "column"]),
    (lambda: nd.linalg.gemm2(nd.ones((3,)), nd.ones((3, 4))), ["_linalg_gemm2", "dimensions"]),
    (lambda: nd.linalg.gemm2(nd.ones((2, 5, 3)), nd.ones((5, 3, 4))),
     ["_linalg_gemm2", "(2, 5, 3)", "(5, 3, 4)"]),
    (lambda: nd.linalg.gemm(nd.ones((2, 3)), nd.ones((3, 4)), nd.ones((1, 4))),
     ["_linalg_gemm", "(2, 4)", "(1, 4)"]),
])
def test_bad_linalg_arguments_raise_clear_errors(call, words):
    with pytest.raises(MXNetError) as info:
        call()
    for word in words:
        assert word in str(info.value), str(info.value)


def test_linalg_names_and_shape_completion():
    assert nd.linalg.gemm2.opdef is ops.get("_linalg_gemm2") is nd.linalg_gemm2.opdef
    assert nd.linalg.gemm.opdef is ops.get("_linalg_gemm")
    dot = ops.get("dot")  # an unknown contracted size is filled from the other input
    assert dot.infer_shape(dot.parse_attrs({}), [(2, 0), (3, 4)]) == ([(2, 3), (3, 4)],
                                                                      [(2, 4)])


def test_dot_of_integers_stays_integer():
    out = nd.dot(nd.ones((2, 3), dtype="int32"), nd.ones((3, 2), dtype="int32"))
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 3))


# -- gpu ----------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_creation_and_random(gpu_available):
    ctx = gpu_available
    assert nd.zeros((2, 3), ctx=ctx).context == ctx
    np.testing.assert_array_equal(nd.arange(0, 10, 3, ctx=ctx).asnumpy(), np.arange(0, 10, 3))
    np.testing.assert_array_equal(nd.eye(3, k=1, ctx=ctx).asnumpy(), np.eye(3, k=1))
    mx.random.seed(11)
    a = nd.random.uniform(0, 1, shape=(N,), ctx=ctx)
    mx.random.seed(11)
    b = nd.random.uniform(0, 1, shape=(N,), ctx=ctx)
    assert a.context == ctx
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert abs(a.asnumpy().mean() - 0.5) < 0.01 and a.asnumpy().max() < 1
    rows = nd.random.shuffle(nd.arange(10, ctx=ctx)).asnumpy()
    assert sorted(rows.tolist()) == list(range(10))
    ints = nd.random.randint(0, 4, shape=(1000,), ctx=ctx).asnumpy()
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {0, 1, 2, 3}
