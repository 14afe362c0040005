"""``mx.init``: name dispatch, every initializer's values against MXNet 1.9.1's formulas,
``create``/``dumps`` as MXNet writes them, repeatability under ``mx.random.seed``, errors.

Strings and numbers marked "oracle" were produced by the real MXNet 1.9.1
(``.oracle/bin/python``); the statistical checks compute MXNet's bounds from the shape here.
"""

from __future__ import annotations

import json
import logging
import math
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import initializer as init
from hybridgpu.base import MXNetError
from hybridgpu.initializer import InitDesc


@pytest.fixture(autouse=True)
def _seeded():
    """Every test draws from a fixed seed, so the statistical checks are deterministic."""
    mx.random.seed(1234)


def filled(initializer, name, shape=(2, 3), attrs=None, dtype="float32", start=7.0, ctx=None):
    """``initializer`` applied to a ``shape`` array full of ``start``; returns NumPy values."""
    arr = mx.nd.full(shape, start, dtype=dtype, ctx=ctx)
    initializer(InitDesc(name, attrs), arr)
    assert arr.dtype == np.dtype(dtype).type and arr.shape == shape
    return arr.asnumpy()


def legacy(initializer, name, shape=(6,)):
    arr = mx.nd.full(shape, 7.0)
    with pytest.warns(DeprecationWarning, match="InitDesc"):
        initializer(name, arr)
    return arr.asnumpy()


# -- InitDesc and dispatch on the parameter name --------------------------------------------
def test_initdesc_is_a_str_with_attrs():
    d = InitDesc("fc_weight", {"k": "v"})
    assert isinstance(d, str) and d == "fc_weight" and d.attrs == {"k": "v"}
    assert d.global_init is None
    assert InitDesc("x").attrs == {} and InitDesc("x").attrs is not InitDesc("y").attrs


@pytest.mark.parametrize("name, value", [
    ("fc_bias", 0.0), ("bn_gamma", 1.0), ("bn_beta", 0.0), ("q_min", 0.0), ("q_max", 1.0),
    ("xmin", 0.0), ("stn_loc_bias", 0.0), ("fc_bias_quantize", 0.0)])
def test_suffix_rules_fill_constants(name, value):
    np.testing.assert_array_equal(filled(init.Uniform(), name), np.full((2, 3), value))


def test_weight_suffix_uses_the_initializers_own_rule():
    values = filled(init.Uniform(0.5), "conv0_weight", shape=(50, 40))
    assert np.abs(values).max() <= 0.5 and values.std() > 0.2
    values = filled(init.Uniform(0.5), "weight", shape=(10,))
    assert np.abs(values).max() <= 0.5 and len(np.unique(values)) == 10


def test_quantized_weight_draws_int8_range_per_element():
    values = filled(init.Zero(), "fc_weight_quantize", shape=(40, 40))
    assert values.min() >= -127 and values.max() < 127
    assert np.array_equal(values, np.round(values)) and len(np.unique(values)) > 100


@pytest.mark.parametrize("name", ["foo", "bn_moving_mean", "bn_moving_var", "Weight",
                                  "fc_weight_"])
def test_unknown_names_raise_naming_the_parameter(name):
    with pytest.raises(ValueError, match=f"Unknown initialization pattern for {name}\\. "
                                         "Default initialization is now limited to"):
        filled(init.Uniform(), name)


@pytest.mark.parametrize("own, expect", [
    ('["zero", {}]', 0.0), ('["Constant", {"value": 0.25}]', 0.25), ("ones", 1.0), ("One", 1.0),
    (init.Constant(0.25), 0.25), ({"initializer": "zeros"}, 0.0)])
def test_init_attribute_wins_over_the_name(own, expect):
    for name in ("foo", "fc_bias", "bn_gamma", "fc_weight"):
        values = filled(init.Uniform(), name, attrs={"__init__": own})
        np.testing.assert_array_equal(values, np.full((2, 3), expect))


def test_init_attribute_applies_the_weight_rule_whatever_the_name():
    values = filled(init.Xavier(), "fc_bias", shape=(30, 20), attrs={"__init__": "xavier"})
    assert values.std() > 0
    with pytest.raises(ValueError, match="cannot be applied to vector fc_bias"):
        filled(init.Zero(), "fc_bias", shape=(3,), attrs={"__init__": '["xavier", {}]'})
    with pytest.raises(ValueError, match="bogus is not registered"):
        filled(init.Zero(), "fc_bias", attrs={"__init__": "bogus"})


def test_empty_init_attribute_and_other_attrs_are_ignored():
    np.testing.assert_array_equal(filled(init.Uniform(), "fc_bias", attrs={"__init__": ""}), 0)
    np.testing.assert_array_equal(filled(init.Uniform(), "fc_bias", attrs={"lr_mult": "2"}), 0)


def test_global_init_is_set_once():
    d = InitDesc("fc_weight")
    uniform = init.Uniform()
    uniform(d, mx.nd.zeros((2, 2)))
    assert d.global_init is uniform
    zero = init.Zero()
    d = InitDesc("fc_weight", global_init=zero)
    uniform(d, mx.nd.zeros((2, 2)))
    assert d.global_init is zero


@pytest.mark.parametrize("make", [init.Zero, init.One, lambda: init.Constant(2.5),
                                  lambda: init.LSTMBias(3.0), init.Bilinear])
def test_constant_initializers_only_change_weights(make):
    # As in MXNet: bias/gamma/beta keep their defaults whatever the initializer.
    np.testing.assert_array_equal(filled(make(), "fc_bias", shape=(8,)), np.zeros(8))
    np.testing.assert_array_equal(filled(make(), "bn_gamma", shape=(8,)), np.ones(8))


def test_base_initializer_has_no_weight_rule():
    with pytest.raises(NotImplementedError, match="Initializer has no rule for weights such "
                                                  "as fc_weight.*override _init_weight"):
        filled(init.Initializer(), "fc_weight")
    np.testing.assert_array_equal(filled(init.Initializer(), "fc_bias"), 0)


def test_array_must_be_an_ndarray():
    with pytest.raises(TypeError, match="array for fc_weight must be an mx.nd.NDArray"):
        init.Uniform()(InitDesc("fc_weight"), np.zeros((2, 2)))


# -- the deprecated init(str, arr) form -----------------------------------------------------
@pytest.mark.parametrize("name, expect", [
    ("bn_moving_mean", [0] * 6), ("bn_moving_var", [1] * 6), ("bn_moving_inv_var", [0] * 6),
    ("bn_moving_avg", [0] * 6), ("fc_bias", [0] * 6), ("bn_gamma", [1] * 6),
    ("bn_beta", [0] * 6), ("x_min", [0] * 6), ("x_max", [1] * 6), ("stn_loc_weight", [0] * 6),
    ("stn_loc_bias", [1, 0, 0, 0, 1, 0]), ("stn_loc_gamma", [1] * 6)])
def test_legacy_string_names_follow_mxnets_old_table(name, expect):
    np.testing.assert_array_equal(legacy(init.Uniform(), name), np.array(expect, "float32"))


def test_legacy_upsampling_prefix_gives_bilinear_and_errors():
    values = legacy(init.Uniform(), "upsampling0_bias", shape=(1, 1, 4, 4))
    np.testing.assert_allclose(values[0, 0, 0], [0.0625, 0.1875, 0.1875, 0.0625])
    with pytest.raises(ValueError, match="Unknown initialization pattern for foo"):
        legacy(init.Uniform(), "foo")
    with pytest.raises(ValueError, match="stn_loc_bias.*shape \\(6,\\)"):
        legacy(init.Uniform(), "stn_loc_bias", shape=(4,))
    with pytest.raises(TypeError, match="must be an mx.init.InitDesc or a str"):
        init.Uniform()(3, mx.nd.zeros((2,)))


# -- random initializers: MXNet's formulas --------------------------------------------------
def xavier_scale(shape, factor_type, magnitude):
    """MXNet's Xavier scale, computed independently from the shape."""
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    return math.sqrt(magnitude / factor)


def check_uniform(values, bound):
    """Samples of U(-bound, bound): inside the bounds, reaching them, moments within 5 sigma
    of the sampling error (the std of U is bound / sqrt(3))."""
    n = values.size
    assert np.abs(values).max() <= bound and np.abs(values).max() > (1 - 20 / n) * bound
    assert abs(values.mean()) < 5 * bound / math.sqrt(3 * n)
    assert values.std() == pytest.approx(bound / math.sqrt(3), rel=5 / math.sqrt(n))


def check_normal(values, std):
    """Samples of N(0, std**2): mean and std within 5 sigma of the sampling error."""
    n = values.size
    assert abs(values.mean()) < 5 * std / math.sqrt(n)
    assert values.std() == pytest.approx(std, rel=5 / math.sqrt(2 * n))


XAVIER_CASES = [((256, 128, 3, 3), "avg", 3), ((300, 200), "in", 2), ((300, 200, 2), "out", 2.5),
                ((64, 3, 5, 5), "avg", 3), ((100, 200, 1, 1), "in", 6),
                ((200, 50, 2, 2, 2), "out", 1)]


@pytest.mark.parametrize("shape, factor_type, magnitude", XAVIER_CASES)
def test_xavier_uniform_bounds(shape, factor_type, magnitude):
    values = filled(init.Xavier("uniform", factor_type, magnitude), "c_weight", shape)
    check_uniform(values, xavier_scale(shape, factor_type, magnitude))


@pytest.mark.parametrize("shape, factor_type, magnitude", XAVIER_CASES)
def test_xavier_gaussian_std(shape, factor_type, magnitude):
    values = filled(init.Xavier("gaussian", factor_type, magnitude), "c_weight", shape)
    check_normal(values, xavier_scale(shape, factor_type, magnitude))


def test_xavier_numbers_seen_in_the_oracle():
    # oracle: Xavier() on (256,128,3,3) spans +-0.041666; Xavier(factor_type='in',
    # magnitude=2) on (300,200) spans +-0.099999 (sqrt(2/200) = 0.1)
    assert init.Xavier()._scale("w", (256, 128, 3, 3)) == pytest.approx(0.0416667, rel=1e-5)
    assert init.Xavier("uniform", "in", 2)._scale("w", (300, 200)) == pytest.approx(0.1)
    assert init.Xavier.fans("w", (8, 4, 3, 3)) == (36.0, 72.0)


@pytest.mark.parametrize("shape, factor_type, slope", [((256, 128, 3, 3), "avg", 0.25),
                                                        ((400, 300), "in", 0.5),
                                                        ((500, 100), "out", 0.0)])
def test_msraprelu_std(shape, factor_type, slope):
    values = filled(init.MSRAPrelu(factor_type, slope), "c_weight", shape)
    check_normal(values, xavier_scale(shape, factor_type, 2.0 / (1 + slope ** 2)))


@pytest.mark.parametrize("make", [init.Xavier, init.MSRAPrelu])
def test_xavier_needs_two_dimensions(make):
    with pytest.raises(ValueError, match=f"{make.__name__} initializer cannot be applied to "
                                         "vector fc_weight. It requires at least 2D"):
        filled(make(), "fc_weight", shape=(3,))


def test_uniform_and_normal_bounds_and_std():
    check_uniform(filled(init.Uniform(), "w_weight", (200, 300)), 0.07)
    check_uniform(filled(init.Uniform(2.0), "w_weight", (200, 300)), 2.0)
    check_normal(filled(init.Normal(), "w_weight", (200, 300)), 0.01)
    check_normal(filled(init.Normal(sigma=3.0), "w_weight", (200, 300)), 3.0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_random_initializers_keep_the_dtype(dtype):
    for initializer in (init.Uniform(), init.Normal(), init.Xavier(), init.Orthogonal()):
        values = filled(initializer, "w_weight", (20, 30), dtype=dtype)
        assert values.dtype == np.dtype(dtype) and values.std() > 0


def test_random_initializers_refuse_integer_arrays():
    with pytest.raises(MXNetError, match="Uniform cannot initialize w_weight of dtype int32"):
        filled(init.Uniform(), "w_weight", dtype="int32")
    assert filled(init.Constant(3), "w_weight", dtype="int32").tolist() == [[3] * 3] * 2


@pytest.mark.parametrize("make", [init.Uniform, init.Normal, init.Xavier, init.MSRAPrelu,
                                  init.Orthogonal, lambda: init.Orthogonal(rand_type="normal")])
def test_seed_makes_random_initializers_repeatable(make):
    mx.random.seed(11)
    first = filled(make(), "w_weight", (6, 5))
    mx.random.seed(11)
    again = filled(make(), "w_weight", (6, 5))
    other = filled(make(), "w_weight", (6, 5))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


# -- Orthogonal, Bilinear, LSTMBias, Constant ----------------------------------------------
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 2), (4, 2, 3, 3)])
@pytest.mark.parametrize("rand_type", ["uniform", "normal"])
def test_orthogonal_rows_or_columns_orthonormal_times_scale(shape, rand_type):
    values = filled(init.Orthogonal(2.0, rand_type), "o_weight", shape, dtype="float64")
    m = values.reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(len(gram)), atol=1e-10)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="at least 2 dimensions, but o_weight has shape"):
        filled(init.Orthogonal(), "o_weight", shape=(6,))
    with pytest.raises(ValueError, match="rand_type='foo' is not one of"):
        init.Orthogonal(rand_type="foo")


def bilinear_axis(size):
    """MXNet's bilinear weights along one kernel axis (f, c as in MXNet's formula)."""
    f = math.ceil(size / 2)
    c = (2 * f - 1 - f % 2) / (2 * f)
    return np.array([1 - abs(i / f - c) for i in range(size)])


def bilinear_reference(shape):
    """The kernel value at (y, x) is bilinear_axis(kh)[y] * bilinear_axis(kw)[x]."""
    kernel = bilinear_axis(shape[2])[:, None] * bilinear_axis(shape[3])[None, :]
    return np.broadcast_to(kernel, shape).astype("float32")


# oracle: mx.init.Bilinear() on these shapes, row [0, 0, 0] and [0, 0, 1]
BILINEAR_ORACLE = {(1, 1, 4, 4): ([0.0625, 0.1875, 0.1875, 0.0625],
                                  [0.1875, 0.5625, 0.5625, 0.1875]),
                   (1, 1, 3, 3): ([0.0625, 0.1875, 0.1875], [0.1875, 0.5625, 0.5625]),
                   (1, 1, 1, 1): ([1.0], None)}


@pytest.mark.parametrize("shape", [(1, 1, 4, 4), (1, 1, 3, 3), (1, 1, 1, 1), (2, 3, 4, 4),
                                   (3, 1, 5, 5), (1, 2, 3, 5), (1, 1, 6, 2)])
def test_bilinear_kernel(shape):
    values = filled(init.Bilinear(), "up_weight", shape)
    np.testing.assert_array_equal(values, bilinear_reference(shape))
    assert values.min() >= 0 and np.array_equal(values[0, 0], values[-1, -1])
    rows = BILINEAR_ORACLE.get(shape)
    if rows:
        assert values[0, 0, 0].tolist() == rows[0]
        if rows[1] is not None:
            assert values[0, 0, 1].tolist() == rows[1]


def test_bilinear_needs_4d():
    with pytest.raises(ValueError, match="Bilinear initializer needs a 4-D.*up_weight has "
                                         "shape \\(3, 3\\)"):
        filled(init.Bilinear(), "up_weight", shape=(3, 3))


@pytest.mark.parametrize("forget_bias, hidden", [(1.0, 2), (3.0, 5)])
def test_lstm_bias_sets_the_forget_gate(forget_bias, hidden):
    values = filled(init.Zero(), "lstm_i2h_bias", (4 * hidden,),
                    attrs={"__init__": init.LSTMBias(forget_bias)})
    expect = np.zeros(4 * hidden, "float32")
    expect[hidden:2 * hidden] = forget_bias
    np.testing.assert_array_equal(values, expect)
    with pytest.raises(ValueError, match="LSTMBias: b_weight has shape \\(6,\\).*4 \\* hidden"):
        filled(init.LSTMBias(), "b_weight", (6,))


@pytest.mark.parametrize("value", [mx.nd.array([1, 2, 3]), np.array([1.0, 2.0, 3.0]),
                                   [1, 2, 3], mx.nd.array([[1, 2, 3], [1, 2, 3]])])
def test_constant_with_array_values(value):
    np.testing.assert_array_equal(filled(init.Constant(value), "w_weight"),
                                  [[1, 2, 3], [1, 2, 3]])


def test_constant_scalar_and_shape_error():
    np.testing.assert_array_equal(filled(init.Constant(0.25), "w_weight"), 0.25)
    with pytest.raises(ValueError, match="cannot initialize w_weight of shape \\(2, 2\\) with "
                                         "a value of shape \\(3,\\)"):
        filled(init.Constant(mx.nd.array([1, 2, 3])), "w_weight", shape=(2, 2))


# -- Mixed and Load ------------------------------------------------------------------------
def test_mixed_first_match_from_the_start_of_the_name():
    mixed = init.Mixed(["bias", "fc.*", ".*gamma"], [init.One(), init.Constant(3), "ones"])
    # "bias" goes to One(), which still fills a bias with zeros (the suffix rule)
    np.testing.assert_array_equal(filled(mixed, "bias"), 0)
    np.testing.assert_array_equal(filled(mixed, "fc_weight"), 3)
    np.testing.assert_array_equal(filled(mixed, "fc_bias"), 0)
    np.testing.assert_array_equal(filled(mixed, "bn_gamma"), 1)
    with pytest.raises(ValueError, match="Parameter name x_bias did not match any pattern of "
                                         "Mixed \\['bias', 'fc.\\*', '.\\*gamma'\\]"):
        filled(mixed, "x_bias")


def test_mixed_as_init_attribute_and_round_trip():
    mixed = init.Mixed(["a_.*", ".*"], [init.Constant(5), "zeros"])
    np.testing.assert_array_equal(filled(init.Uniform(), "a_x", attrs={"__init__": mixed}), 5)
    np.testing.assert_array_equal(filled(init.Uniform(), "b_x", attrs={"__init__": mixed}), 0)
    again = init.create(mixed.dumps())
    assert again == mixed and isinstance(again.map[0][1], init.Constant)
    assert json.loads(mixed.dumps()) == ["mixed", {"patterns": ["a_.*", ".*"],
                                                   "initializers": [["constant", {"value": 5}],
                                                                    ["zero", {}]]}]


def test_mixed_argument_errors():
    with pytest.raises(ValueError, match="1 patterns but 0 initializers"):
        init.Mixed(["a"], [])
    with pytest.raises(TypeError, match="both must be lists"):
        init.Mixed("a", init.One())
    with pytest.raises(ValueError, match="pattern '\\(' is not a regular expression"):
        init.Mixed(["("], [init.One()])


def test_load_from_dict_and_file(tmp_path):
    fname = str(tmp_path / "p.params")
    mx.nd.save(fname, {"arg:fc_weight": mx.nd.ones((2, 2)), "aux:bn_moving_mean": mx.nd.full(
        (2,), 3)})
    load = init.Load(fname)
    np.testing.assert_array_equal(filled(load, "fc_weight", (2, 2)), 1)
    np.testing.assert_array_equal(filled(load, "bn_moving_mean", (2,)), 3)
    with pytest.raises(ValueError, match="Cannot Initialize fc_bias. Not found in loaded param"):
        filled(load, "fc_bias", (2,))
    with pytest.raises(ValueError, match="Shape mismatch, target \\(3,\\) vs loaded \\(2, 2\\)"):
        filled(load, "fc_weight", (3,))
    load = init.Load({"fc_weight": mx.nd.ones((2, 2))}, default_init=init.One())
    np.testing.assert_array_equal(filled(load, "zz_weight", (2, 2)), 1)
    with pytest.raises(TypeError, match="no JSON form"):
        load.dumps()


# -- create, dumps, register ---------------------------------------------------------------
# oracle: dumps() of each, as MXNet 1.9.1 writes it
DUMPS_ORACLE = [
    (init.Uniform(), '["uniform", {"scale": 0.07}]'),
    (init.Normal(), '["normal", {"sigma": 0.01}]'),
    (init.Xavier(), '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'),
    (init.Xavier("gaussian", "in", 2),
     '["xavier", {"rnd_type": "gaussian", "factor_type": "in", "magnitude": 2}]'),
    (init.MSRAPrelu(), '["msraprelu", {"factor_type": "avg", "slope": 0.25}]'),
    (init.MSRAPrelu("in", 0.1), '["msraprelu", {"factor_type": "in", "slope": 0.1}]'),
    (init.Zero(), '["zero", {}]'), (init.One(), '["one", {}]'),
    (init.Constant(0.25), '["constant", {"value": 0.25}]'),
    (init.Constant(mx.nd.ones((2,))), '["constant", {"value": [1.0, 1.0]}]'),
    (init.Constant(np.array([1.0, 2.0])), '["constant", {"value": [1.0, 2.0]}]'),
    (init.Orthogonal(), '["orthogonal", {"scale": 1.414, "rand_type": "uniform"}]'),
    (init.Orthogonal(2.0, "normal"), '["orthogonal", {"scale": 2.0, "rand_type": "normal"}]'),
    (init.Bilinear(), '["bilinear", {}]'), (init.LSTMBias(), '["lstmbias", {"forget_bias": 1.0}]'),
    (init.LSTMBias(2), '["lstmbias", {"forget_bias": 2}]'),
    (init.Initializer(), '["initializer", {}]')]


@pytest.mark.parametrize("initializer, text", DUMPS_ORACLE, ids=lambda v: str(v)[:30])
def test_dumps_matches_mxnet_and_round_trips(initializer, text):
    assert initializer.dumps() == text
    if not isinstance(initializer, init.Bilinear) and type(initializer) is not init.Initializer:
        assert init.create(text) == initializer


@pytest.mark.parametrize("spec, kwargs, text", [
    ("xavier", {}, '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'),
    ("Xavier", {"magnitude": 2},
     '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'),
    ("XAVIER", {}, '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]'),
    ('["xavier", {"magnitude": 2}]', {},
     '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'),
    ({"initializer": "xavier", "magnitude": 2}, {},
     '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 2}]'),
    ("zeros", {}, '["zero", {}]'), ("zero", {}, '["zero", {}]'), ("ones", {}, '["one", {}]'),
    ("constant", {"value": 1}, '["constant", {"value": 1}]'),
    ("msraprelu", {}, '["msraprelu", {"factor_type": "avg", "slope": 0.25}]')])
def test_create_variants(spec, kwargs, text):
    assert init.create(spec, **kwargs).dumps() == text


def test_create_keyword_form_and_instance():
    assert init.create(initializer="normal", sigma=2).sigma == 2
    zero = init.Zero()
    assert init.create(zero) is zero


@pytest.mark.parametrize("args, kwargs, error, message", [
    (("foo",), {}, ValueError, "foo is not registered as an initializer; known names: "
                               "bilinear, constant"),
    (("mixed ",), {}, TypeError, "patterns"),
    ((init.Zero(), 1), {}, TypeError, "already says which initializer.*are invalid"),
    (('["zero", {}]', 1), {}, TypeError, "already says which initializer"),
    ((3,), {}, TypeError, "expected an initializer name, instance, dumps\\(\\) string or dict"),
    ((None,), {}, TypeError, "got NoneType"), ((), {}, TypeError, "give an initializer"),
    (("[zero",), {}, ValueError, "is not valid JSON"),
    (("xavier",), {"rnd_type": "foo"}, ValueError, "rnd_type='foo' is not one of"),
    (("xavier",), {"factor_type": "foo"}, ValueError, "factor_type='foo' is not one of")])
def test_create_errors(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        init.create(*args, **kwargs)


def test_register_custom_initializer_and_alias():
    @init.register
    @init.alias("my_halves")
    class TestHalf(init.Initializer):
        def __init__(self, extra=1):
            super().__init__(extra=extra)

        def _init_weight(self, _, arr):
            arr[:] = 0.5

    assert init.create("testhalf").dumps() == '["testhalf", {"extra": 1}]'
    assert isinstance(init.create("MY_HALVES", extra=2), TestHalf)
    np.testing.assert_array_equal(filled(init.Uniform(), "p", attrs={"__init__": "testhalf"}),
                                  0.5)
    with pytest.raises(TypeError, match="expected a subclass of mx.init.Initializer"):
        init.register(dict)


def test_equality_by_class_and_arguments():
    assert init.Uniform() == init.Uniform(0.07) and init.Zero() != init.One()
    assert init.Uniform() != init.Uniform(0.1) and init.Uniform() != "uniform"
    assert init.Constant(mx.nd.ones((2,))) == init.Constant(mx.nd.ones((2,)))
    assert repr(init.Xavier()) == "Xavier(rnd_type='uniform', factor_type='avg', magnitude=3)"
    with pytest.raises(TypeError):
        hash(init.Uniform())


def test_set_verbosity_logs_each_array(caplog):
    uniform = init.Uniform()
    assert uniform.set_verbosity(True) is uniform
    with caplog.at_level(logging.INFO, logger="hybridgpu.initializer"):
        uniform(InitDesc("fc_bias"), mx.nd.ones((4,)))
        uniform(InitDesc("q", {"__init__": "ones"}), mx.nd.zeros((4,)))
        uniform.set_verbosity(True, print_func=lambda x: "PF")
        uniform(InitDesc("fc_weight"), mx.nd.zeros((4,)))
        uniform.set_verbosity(False)
        uniform(InitDesc("fc_weight"), mx.nd.zeros((4,)))
    assert [r.getMessage() for r in caplog.records] == [
        "Initialized fc_bias as bias: 0.0", "Initialized q as ones: 1.0",
        "Initialized fc_weight as weight: PF"]


def test_wired_as_mx_init():
    assert mx.init is mx.initializer is init


def test_no_warning_on_the_initdesc_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        filled(init.Xavier(), "fc_weight", (3, 4))


# -- gpu -----------------------------------------------------------------------------------
@pytest.mark.gpu
def test_initializers_fill_gpu_arrays_in_place(gpu_available):
    ctx = gpu_available
    for initializer, name, shape in [(init.Xavier(), "w_weight", (64, 32)),
                                     (init.Orthogonal(), "w_weight", (8, 16)),
                                     (init.Constant(mx.nd.array([1, 2])), "w_weight", (3, 2)),
                                     (init.Bilinear(), "w_weight", (1, 1, 4, 4)),
                                     (init.Uniform(), "w_bias", (5,))]:
        arr = mx.nd.full(shape, 7.0, ctx=ctx)
        initializer(InitDesc(name), arr)
        assert arr.context == ctx and arr.shape == shape and (arr.asnumpy() != 7).any()
    mx.random.seed(3)
    a = filled(init.Xavier(), "w_weight", (16, 16), ctx=ctx)
    mx.random.seed(3)
    np.testing.assert_array_equal(a, filled(init.Xavier(), "w_weight", (16, 16), ctx=ctx))
