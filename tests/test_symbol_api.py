"""MXNet 1.x's Symbol API (the article in shared/seeds/003 walks through it), checked against
what MXNet 1.9.1 prints: names and reprs, attributes, graph inspection, indexing, composition,
copies, operators (op and automatic node name), ``var``/``Group``, ``NameManager``/``Prefix``,
``AttrScope``, shape and type inference; then hybridgpu's own ``.shape``/``.dtype`` and the
errors for NDArray-only operations; then the module functions of ``symbol/functions.py`` and
``nd.histogram``.

Every expected name, list and message below was printed by MXNet 1.9.1 (``.oracle``); values
are computed with NumPy.
"""

from __future__ import annotations

import copy
import operator
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.graph import evaluate
from hybridgpu.ndarray.histogram import histogram as nd_histogram
from hybridgpu.symbol import NotAvailableOnSymbol
from hybridgpu.symbol.register import make_function


@pytest.fixture(autouse=True)
def fresh_names():
    """Automatic names count from 0 in every test, as in a fresh MXNet process."""
    with mx.name.NameManager():
        yield


def _node(symbol):
    """The graph node of a single-output Symbol."""
    (entry,) = symbol._outputs
    return entry.node


def _values(symbol, **inputs):
    """The outputs of ``symbol`` from the reference interpreter, as NumPy arrays."""
    return evaluate(symbol._graph(), {k: np.asarray(v) for k, v in inputs.items()}, np)


def _net():
    x = mx.sym.var("x")
    fc = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    return x, fc, mx.sym.Activation(fc, act_type="relu", name="act")


# -- names and repr -----------------------------------------------------------------------------

def test_name_and_repr_of_variables_ops_and_groups():
    x, fc, act = _net()
    group = mx.sym.Group([fc, act])
    assert (x.name, fc.name, group.name) == ("x", "fc", None)
    assert (repr(x), str(fc)) == ("<Symbol x>", "<Symbol fc>")
    assert repr(group) == "<Symbol group [fc, act]>"
    assert repr(mx.sym.Group([x, mx.sym.var("y"), fc])) == "<Symbol group [x, y, fc]>"
    assert mx.sym.Variable("q").name == "q"


def test_outputs_of_one_node_keep_its_name():
    parts = mx.sym.split(mx.sym.var("x"), num_outputs=3, name="sp")
    assert parts.name == "sp" and len(parts) == 3
    assert parts.list_outputs() == ["sp_output0", "sp_output1", "sp_output2"]
    assert (repr(parts[1]), parts[1].list_outputs()) == ("<Symbol sp>", ["sp_output1"])


# -- attributes ---------------------------------------------------------------------------------

def test_attr_and_list_attr_of_an_op_node():
    _, fc, act = _net()
    assert fc.attr("num_hidden") == "4" and fc.attr("foo") is None
    assert fc.list_attr() == {"num_hidden": "4"}
    conv = mx.sym.Convolution(mx.sym.var("a"), kernel=(3, 3), num_filter=4, name="conv")
    assert conv.attr("kernel") == "(3, 3)"
    assert conv.list_attr() == {"kernel": "(3, 3)", "num_filter": "4"}
    with pytest.raises(DeprecationWarning, match="Please use attr_dict instead"):
        fc.list_attr(recursive=True)


def test_attr_dict_holds_every_node_with_attributes():
    _, _, act = _net()
    assert act.attr_dict() == {"fc_weight": {"num_hidden": "4"}, "fc_bias": {"num_hidden": "4"},
                               "fc": {"num_hidden": "4"}, "act": {"act_type": "relu"}}
    a = mx.sym.var("a", attr={"a1": "a2"})
    b = mx.sym.var("b", attr={"b1": "b2"})
    assert (a + b).attr_dict() == {"a": {"a1": "a2"}, "b": {"b1": "b2"}}


def test_set_attr_adds_string_attributes():
    c = mx.sym.var("a") + mx.sym.var("b")
    c._set_attr(foo="bar")
    assert c.list_attr() == {"foo": "bar"}
    assert c.attr_dict() == {"_plus0": {"foo": "bar"}}
    with pytest.raises(ValueError, match="Set Attr only accepts string values"):
        c._set_attr(foo=1)
    with pytest.raises(MXNetError):
        mx.sym.Group([mx.sym.var("a"), mx.sym.var("b")])._set_attr(foo="x")


def test_var_records_shape_dtype_multipliers_init_and_extra_attributes():
    v = mx.sym.var("v", attr={"a1": "a2"}, shape=(2, 3), lr_mult=2.0, wd_mult=0.5,
                   dtype="float16", init="zeros", __foo__="bar")
    assert v.list_attr() == {
        "a1": "a2", "__shape__": "(2, 3)", "__lr_mult__": "2.0", "lr_mult": "2.0",
        "__wd_mult__": "0.5", "wd_mult": "0.5", "__dtype__": "2", "__init__": "zeros",
        "__foo__": "bar"}
    assert v.attr("__shape__") == "(2, 3)" and v.attr("__lr_mult__") == "2.0"
    assert mx.sym.var("w", dtype=np.int32).list_attr() == {"__dtype__": "4"}
    assert mx.sym.var("w", lr_mult=2).list_attr() == {"__lr_mult__": "2", "lr_mult": "2"}
    assert mx.sym.var("w", __x__=1).list_attr() == {"__x__": "1"}


def test_var_refuses_other_keywords_and_non_string_names():
    with pytest.raises(ValueError, match="Attribute name=foo is not supported. Additional "
                                         "attributes must start and end with double "
                                         "underscores"):
        mx.sym.var("w", foo=1)
    with pytest.raises(TypeError, match="Expect a string for variable `name`"):
        mx.sym.var(1)


def test_var_writes_stype_and_shape_like_mxnet_and_refuses_non_string_attr():
    assert mx.sym.var("w", stype="default").list_attr() == {"__storage_type__": "0"}
    assert mx.sym.var("w", shape=3).list_attr() == {"__shape__": "3"}
    assert mx.sym.var("w", shape=[2]).list_attr() == {"__shape__": "[2]"}
    with pytest.raises(ValueError, match="Set Attr only accepts string values"):
        mx.sym.var("w", attr={"a": 1})


def test_attr_reads_hidden_keys_without_underscores():
    assert mx.sym.var("v", lr_mult=2.0).attr("lr_mult") == "2.0"


def test_hidden_keys_are_stored_with_underscores():
    r = mx.sym.relu(mx.sym.var("x"), attr={"ctx_group": "a", "foo": "b"})
    assert r.list_attr() == {"foo": "b", "__ctx_group__": "a", "ctx_group": "a"}


def test_ops_with_parameters_refuse_plain_graph_attributes():
    # MXNet hands attr= keys to the op's parameter parser: only __key__ and hidden keys pass.
    x = mx.sym.var("x")
    with pytest.raises(MXNetError, match="foo"):
        mx.sym.FullyConnected(x, num_hidden=2, attr={"foo": "f"})
    fc = mx.sym.FullyConnected(x, num_hidden=2, attr={"lr_mult": "5", "__foo__": "f"}, name="f")
    assert fc.list_attr() == {"num_hidden": "2", "__foo__": "f", "__lr_mult__": "5",
                              "lr_mult": "5"}


def test_set_attr_and_var_store_hidden_keys_with_underscores():
    q = mx.sym.var("q")
    q._set_attr(lr_mult="3")
    assert q.list_attr() == {"__lr_mult__": "3", "lr_mult": "3"}
    with mx.AttrScope(ctx_group="dev1"):
        v = mx.sym.var("v")
    assert v.list_attr() == {"__ctx_group__": "dev1", "ctx_group": "dev1"}


# -- inspecting the graph -----------------------------------------------------------------------

def test_list_arguments_outputs_auxiliary_states_and_inputs():
    x, fc, act = _net()
    assert act.list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert act.list_outputs() == ["act_output"]
    assert act.list_auxiliary_states() == [] and x.list_outputs() == ["x"]
    bn = mx.sym.BatchNorm(x, name="bn")
    assert bn.list_arguments() == ["x", "bn_gamma", "bn_beta"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_inputs() == ["x", "bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    stats = mx.sym.BatchNorm(x, name="bn2", output_mean_var=True)
    assert stats.list_outputs() == ["bn2_output", "bn2_mean", "bn2_var"]
    nb = mx.sym.FullyConnected(x, num_hidden=3, no_bias=True, name="f2")
    assert nb.list_arguments() == ["x", "f2_weight"]


def test_group_arguments_are_listed_once():
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    group = mx.sym.Group([a + b, b * c])
    assert group.list_arguments() == ["a", "b", "c"] == group.list_inputs()
    assert mx.sym.Group([a, a]).list_outputs() == ["a", "a"]
    assert mx.sym.Group([a, a]).list_arguments() == ["a"]


def test_get_internals_lists_every_output_of_every_node():
    x, fc, act = _net()
    internals = act.get_internals()
    assert internals.list_outputs() == ["x", "fc_weight", "fc_bias", "fc_output", "act_output"]
    assert repr(internals) == "<Symbol group [x, fc_weight, fc_bias, fc, act]>"
    assert internals["fc_output"].list_arguments() == ["x", "fc_weight", "fc_bias"]
    assert x.get_internals().list_outputs() == ["x"]
    stats = mx.sym.BatchNorm(x, name="bn2", output_mean_var=True)
    assert stats.get_internals().list_outputs()[-3:] == ["bn2_output", "bn2_mean", "bn2_var"]


def test_get_children_are_the_inputs_of_the_output_nodes():
    x, fc, act = _net()
    assert act.get_children().list_outputs() == ["fc_output"]
    assert fc.get_children().list_outputs() == ["x", "fc_weight", "fc_bias"]
    assert (x + 1).get_children().list_outputs() == ["x"]
    assert x.get_children() is None
    group = mx.sym.Group([fc, act])
    assert group.get_children().list_outputs() == ["x", "fc_weight", "fc_bias", "fc_output"]


def test_get_children_of_a_multi_output_node_lists_its_inputs_once():
    stats = mx.sym.BatchNorm(mx.sym.var("a"), name="bn2", output_mean_var=True)
    assert stats.get_children().list_outputs() == [
        "a", "bn2_gamma", "bn2_beta", "bn2_moving_mean", "bn2_moving_var"]


# -- len, iteration, indexing -------------------------------------------------------------------

def test_len_iter_and_indexing_by_int_slice_and_name():
    x, fc, act = _net()
    group = mx.sym.Group([fc, act])
    assert (len(x), len(group)) == (1, 2)
    assert [s.name for s in group] == ["fc", "act"] and [s.name for s in x] == ["x"]
    assert (group[0].name, group[1].name, x[0].name) == ("fc", "act", "x")
    assert repr(group[0:2]) == "<Symbol group [fc, act]>" and group[1:].name == "act"
    assert group["act_output"].name == "act" and x["x"].name == "x"
    with pytest.raises(IndexError):
        group[2]
    with pytest.raises(IndexError):
        x[1]
    with pytest.raises(TypeError):
        group[1.0]


def test_indexing_by_a_missing_or_ambiguous_name():
    _, fc, act = _net()
    with pytest.raises(ValueError, match="Cannot find output that matches name"):
        mx.sym.Group([fc, act])["nope"]
    with pytest.raises(ValueError, match="There are multiple outputs with name"):
        mx.sym.Group([fc, fc])["fc_output"]


# -- composition and copies ---------------------------------------------------------------------

def test_call_composes_a_copy_by_keyword():
    x = mx.sym.var("x")
    b = mx.sym.FullyConnected(x, num_hidden=3, name="b")
    tt = mx.sym.var("tt")
    assert b(x=tt).list_arguments() == ["tt", "b_weight", "b_bias"]
    assert b(b_weight=tt).list_arguments() == ["x", "tt", "b_bias"]
    assert b(x=tt, name="new").list_arguments() == ["tt", "b_weight", "b_bias"]
    assert b.list_arguments() == ["x", "b_weight", "b_bias"] and b.name == "b"
    z = x + mx.sym.var("y")
    z2 = z(x=tt)
    assert (z2.list_arguments(), z2.name, z.list_arguments()) == (["tt", "y"], "_plus0",
                                                                   ["x", "y"])


def test_call_composes_positionally_in_argument_order():
    # MXNet composes positionally only symbols made without inputs; hybridgpu allows any.
    b = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="b")
    assert b(mx.sym.var("tt")).list_arguments() == ["tt", "b_weight", "b_bias"]


def test_compose_errors():
    b = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="b")
    tt = mx.sym.var("tt")
    with pytest.raises(TypeError, match="either as positional or keyword arguments, not both"):
        b(tt, x=tt)
    with pytest.raises(TypeError):
        b(x=1)
    with pytest.raises((TypeError, MXNetError)):
        b(x=mx.sym.Group([tt, mx.sym.var("y")]))


def test_compose_with_an_unknown_keyword_raises():
    b = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="b")
    with pytest.raises(MXNetError, match="zz"):
        b(zz=mx.sym.var("tt"))


def test_compose_mutates_in_place_and_returns_none():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    w = x * 2
    assert w._compose(x=y) is None
    assert w.list_arguments() == ["y"]


def test_copies_are_independent():
    x, tt = mx.sym.var("x"), mx.sym.var("tt")
    b = mx.sym.FullyConnected(x, num_hidden=3, name="b")
    for clone in (b.__copy__(), copy.copy(b), copy.deepcopy(b)):
        assert clone is not b and repr(clone) == "<Symbol b>"
        clone._compose(x=tt, name="dd")
        assert (clone.list_arguments(), clone.name) == (["tt", "b_weight", "b_bias"], "dd")
        assert (b.list_arguments(), b.name) == (["x", "b_weight", "b_bias"], "b")
    clone = copy.copy(b)
    clone._set_attr(__mark__="1")
    assert clone.list_attr() == {"num_hidden": "3", "__mark__": "1"}
    assert b.list_attr() == {"num_hidden": "3"}


# -- operators ----------------------------------------------------------------------------------

_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
              "%": operator.mod, "**": operator.pow, "==": operator.eq, "!=": operator.ne,
              ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
# (operator, operands, op, node name): Symbol/Symbol, Symbol/2 and 2/Symbol, from MXNet 1.9.1
_OPERATOR_CASES = [
    ("+", "ss", "elemwise_add", "_plus0"), ("+", "s2", "_plus_scalar", "_plusscalar0"),
    ("+", "2s", "_plus_scalar", "_plusscalar0"),
    ("-", "ss", "elemwise_sub", "_minus0"), ("-", "s2", "_minus_scalar", "_minusscalar0"),
    ("-", "2s", "_rminus_scalar", "_rminusscalar0"),
    ("*", "ss", "elemwise_mul", "_mul0"), ("*", "s2", "_mul_scalar", "_mulscalar0"),
    ("*", "2s", "_mul_scalar", "_mulscalar0"),
    ("/", "ss", "elemwise_div", "_div0"), ("/", "s2", "_div_scalar", "_divscalar0"),
    ("/", "2s", "_rdiv_scalar", "_rdivscalar0"),
    ("%", "ss", "_mod", "_mod0"), ("%", "s2", "_mod_scalar", "_modscalar0"),
    ("%", "2s", "_rmod_scalar", "_rmodscalar0"),
    ("**", "ss", "_power", "_power0"), ("**", "s2", "_power_scalar", "_powerscalar0"),
    ("**", "2s", "_rpower_scalar", "_rpower_scalar0"),
    ("==", "ss", "_equal", "_equal0"), ("!=", "ss", "_not_equal", "_not_equal0"),
    (">", "ss", "_greater", "_greater0"), (">=", "ss", "_greater_equal", "_greater_equal0"),
    ("<", "ss", "_lesser", "_lesser0"), ("<=", "ss", "_lesser_equal", "_lesser_equal0"),
    *[(sign, side, op, f"{op}0") for sign, side, op in [
        ("==", "s2", "_equal_scalar"), ("==", "2s", "_equal_scalar"),
        ("!=", "s2", "_not_equal_scalar"), ("!=", "2s", "_not_equal_scalar"),
        (">", "s2", "_greater_scalar"), (">", "2s", "_lesser_scalar"),
        (">=", "s2", "_greater_equal_scalar"), (">=", "2s", "_lesser_equal_scalar"),
        ("<", "s2", "_lesser_scalar"), ("<", "2s", "_greater_scalar"),
        ("<=", "s2", "_lesser_equal_scalar"), ("<=", "2s", "_greater_equal_scalar")]],
]


@pytest.mark.parametrize(("sign", "side", "op", "name"), _OPERATOR_CASES)
def test_operator_builds_mxnets_op_and_name(sign, side, op, name):
    x, y = mx.sym.var("x"), mx.sym.var("y")
    fn = _OPERATORS[sign]
    result = {"ss": lambda: fn(x, y), "s2": lambda: fn(x, 2), "2s": lambda: fn(2, x)}[side]()
    node = _node(result)
    assert (node.op.name, result.name) == (op, name)
    assert result.list_arguments() == (["x", "y"] if side == "ss" else ["x"])
    if side != "ss":
        assert node.given_attrs == {"scalar": "2"}


def test_scalar_operands_are_written_like_mxnet():
    x = mx.sym.var("x")
    assert _node(x + 2.5).given_attrs == {"scalar": "2.5"}
    assert _node(x + np.float32(2)).given_attrs == {"scalar": "2.0"}
    assert _node(x + np.int64(2)).given_attrs == {"scalar": "2"}
    neg = -x
    assert (_node(neg).op.name, neg.name, _node(neg).given_attrs) == (
        "_mul_scalar", "_mulscalar0", {"scalar": "-1.0"})
    magnitude = abs(x)
    assert (_node(magnitude).op.name, magnitude.name) == ("abs", "abs0")


@pytest.mark.parametrize("sign", ["+", "-", "*", "/", "%", "**", "<", ">"])
def test_operators_refuse_other_operand_types(sign):
    with pytest.raises(TypeError):
        _OPERATORS[sign](mx.sym.var("x"), "a")
    with pytest.raises(TypeError):
        _OPERATORS[sign](mx.sym.var("x"), [1])


def test_equality_with_a_non_number_raises():
    with pytest.raises(TypeError):
        mx.sym.var("x") == "a"  # noqa: B015


def test_operators_compute_numpy_values():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    a, b = np.array([1.0, -2.0, 3.5]), np.array([2.0, 3.0, -1.0])
    expected = {"+": a + b, "-": a - b, "*": a * b, "/": a / b, ">": (a > b) * 1.0,
                "<=": (a <= b) * 1.0}
    for sign, want in expected.items():
        (got,) = _values(_OPERATORS[sign](x, y), x=a, y=b)
        np.testing.assert_allclose(got, want, err_msg=sign)
    (got,) = _values(10 - x, x=a)
    np.testing.assert_allclose(got, 10 - a)
    (got,) = _values(2 ** x, x=a)
    np.testing.assert_allclose(got, 2 ** a)


# -- Group, NameManager, Prefix, AttrScope ------------------------------------------------------

def test_group_flattens_groups_and_refuses_non_symbols():
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    assert mx.sym.Group([mx.sym.Group([a, b]), c]).list_outputs() == ["a", "b", "c"]
    assert mx.sym.Group((a, b)).list_outputs() == ["a", "b"]
    for bad in ([], [a, 1]):
        with pytest.raises(TypeError, match="Expected a list of symbols as input"):
            mx.sym.Group(bad)


def test_name_manager_counts_per_hint():
    x = mx.sym.var("x")
    with mx.name.NameManager():
        assert [mx.sym.relu(x).name, mx.sym.relu(x).name, (x + 1).name] == [
            "relu0", "relu1", "_plusscalar0"]


def test_prefix_applies_to_op_names_given_or_automatic_but_not_variables():
    x = mx.sym.var("x")
    with mx.name.Prefix("net_"):
        assert mx.sym.relu(x).name == "net_relu0"
        assert mx.sym.relu(x, name="r").name == "net_r"
        assert mx.sym.var("v").name == "v"
        assert mx.sym.FullyConnected(x, num_hidden=2).list_arguments() == [
            "x", "net_fullyconnected0_weight", "net_fullyconnected0_bias"]
        assert mx.sym.FullyConnected(x, num_hidden=2, name="fc").list_arguments() == [
            "x", "net_fc_weight", "net_fc_bias"]
    with mx.name.Prefix("a_"):
        with mx.name.Prefix("b_"):
            assert mx.sym.relu(x).name == "b_relu0"
        assert mx.sym.relu(x).name == "a_relu0"


def test_attr_scope_puts_attributes_on_nodes_and_nests():
    x = mx.sym.var("x")
    with mx.AttrScope(group="dev1", foo="bar"):
        v = mx.sym.var("v")
        r = mx.sym.relu(v, name="r")
        with mx.AttrScope(foo="baz", k="1"):
            q = mx.sym.relu(r, name="q")
            explicit = mx.sym.relu(r, name="qa", attr={"k": "2"})
            own = mx.sym.var("vv", attr={"foo": "own"})
    assert v.list_attr() == r.list_attr() == {"group": "dev1", "foo": "bar"}
    assert q.list_attr() == {"group": "dev1", "foo": "baz", "k": "1"}
    assert explicit.list_attr() == {"group": "dev1", "foo": "baz", "k": "2"}
    assert own.list_attr() == {"group": "dev1", "foo": "own", "k": "1"}
    assert mx.sym.relu(x, name="after").list_attr() == {}
    with pytest.raises(ValueError):
        mx.AttrScope(a=1)


def test_attr_scope_reaches_the_variables_an_op_creates():
    x = mx.sym.var("x")
    with mx.AttrScope(__foo__="s"):
        fc = mx.sym.FullyConnected(x, num_hidden=2, name="g")
    expected = {"num_hidden": "2", "__foo__": "s"}
    assert fc.attr_dict() == {"g_weight": expected, "g_bias": expected, "g": expected}


# -- shape and type inference -------------------------------------------------------------------

def test_infer_shape_returns_argument_output_and_auxiliary_shapes():
    x, _, act = _net()
    assert act.infer_shape(x=(2, 5)) == ([(2, 5), (4, 5), (4,)], [(2, 4)], [])
    assert act.infer_shape((2, 5)) == ([(2, 5), (4, 5), (4,)], [(2, 4)], [])  # MXNet 1.9 fails
    bn = mx.sym.BatchNorm(x, name="bn")
    assert bn.infer_shape(x=(2, 3, 4)) == ([(2, 3, 4), (3,), (3,)], [(2, 3, 4)], [(3,), (3,)])
    assert mx.sym.Group([_net()[1], act]).infer_shape(x=(2, 5))[1] == [(2, 4), (2, 4)]
    assert mx.sym.split(x, num_outputs=2, axis=1).infer_shape(x=(2, 4))[1] == [(2, 2), (2, 2)]
    y = mx.sym.var("y")
    assert mx.sym.broadcast_add(x, y).infer_shape(x=(2, 1), y=(1, 3)) == (
        [(2, 1), (1, 3)], [(2, 3)], [])


def test_infer_shape_with_unknown_inputs():
    _, _, act = _net()
    assert act.infer_shape() == (None, None, None)
    assert act.infer_shape(x=(0, 5)) == (None, None, None)
    assert act.infer_shape(fc_weight=(4, 5)) == (None, None, None)
    assert act.infer_shape_partial(x=(0, 5)) == ([(0, 5), (4, 5), (4,)], [(0, 4)], [])
    args, outs, aux = act.infer_shape_partial()
    assert (args[0], outs, aux) == ((), [()], [])


def test_var_shape_attribute_feeds_inference_and_given_shapes_win():
    v = mx.sym.var("v", shape=(2, 3))
    assert (v * 2).infer_shape() == ([(2, 3)], [(2, 3)], [])
    assert (v * 2).infer_shape(v=(3, 3)) == ([(3, 3)], [(3, 3)], [])
    partial = mx.sym.var("w", shape=(0, 3)) * 2
    assert partial.infer_shape_partial() == ([(0, 3)], [(0, 3)], [])
    assert partial.infer_shape() == (None, None, None)


def test_shape_conflict_names_the_node_and_both_shapes():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    with pytest.raises(MXNetError) as info:
        (x + y).infer_shape(x=(2, 3), y=(3, 2))
    assert all(word in str(info.value) for word in ("_plus0", "(2, 3)", "(3, 2)"))
    _, _, act = _net()
    with pytest.raises(MXNetError) as info:
        act.infer_shape(x=(2, 5), fc_weight=(4, 6))
    assert all(word in str(info.value) for word in ("'fc'", "(4, 6)", "(4, 5)"))
    with pytest.raises(MXNetError, match="broadcast"):
        mx.sym.broadcast_add(x, y).infer_shape(x=(2, 3), y=(4, 3))


def test_infer_shape_refuses_unknown_names_and_non_shapes():
    _, _, act = _net()
    with pytest.raises(MXNetError, match="z"):
        act.infer_shape(z=(2, 5))
    with pytest.raises(TypeError, match="Arguments need to be shapes"):
        act.infer_shape(x=5)


def test_infer_type_returns_numpy_types():
    x, _, act = _net()
    f32, f16, f64 = np.float32, np.float16, np.float64
    assert act.infer_type(x=np.float32) == ([f32, f32, f32], [f32], [])
    assert act.infer_type(x="float64") == ([f64, f64, f64], [f64], [])
    assert act.infer_type(np.float16) == ([f16, f16, f16], [f16], [])  # MXNet 1.9 fails
    assert act.infer_type() == (None, None, None)
    assert (mx.sym.var("vd", dtype="float16") * 2).infer_type() == ([f16], [f16], [])
    bn = mx.sym.BatchNorm(x, name="bn")
    assert bn.infer_type(x=np.float32) == ([f32] * 3, [f32], [f32] * 2)
    with pytest.raises(MXNetError, match="_plus0"):
        (x + mx.sym.var("y")).infer_type(x=np.float32, y=np.float64)


def test_infer_type_partial():
    _, _, act = _net()
    assert act.infer_type_partial() == ([None, None, None], [None], [])


# -- hybridgpu: .shape and .dtype, and what a Symbol cannot do ----------------------------------

def test_shape_and_dtype_of_symbols_from_known_variables():
    x = mx.sym.var("x", shape=(2, 5), dtype="float16")
    y = mx.sym.FullyConnected(x, num_hidden=10)
    assert y.shape == (2, 10) and (x * 2).dtype is np.float16
    assert mx.sym.split(x, num_outputs=5, axis=1)[2].shape == (2, 1)
    assert (mx.sym.var("q") + x).shape == (2, 5)  # q's shape comes from x
    assert mx.sym.zeros((2, 3)).shape == (2, 3) and mx.sym.zeros((2, 3)).dtype is np.float32


def test_shape_and_dtype_errors_say_what_to_declare():
    with pytest.raises(MXNetError, match=r"inputs \['x'\] have no shape; declare it with "
                                         r"sym.var\(name, shape=...\)"):
        _ = mx.sym.var("x").shape
    with pytest.raises(MXNetError, match=r"have no dtype; declare it with sym.var\(name, "
                                         r"dtype=...\)"):
        _ = mx.sym.relu(mx.sym.var("x", shape=(2,))).dtype
    with pytest.raises(MXNetError, match=r"pick one with \[i\]"):
        _ = mx.sym.Group([mx.sym.var("a", shape=(1,)), mx.sym.var("b", shape=(1,))]).shape


def _in_place_add(x):
    x += 1


def _set_item(x):
    x[0] = 1


@pytest.mark.parametrize(("action", "instead"), [
    (lambda x: x.asnumpy(), "call asnumpy() on the NDArray result"),
    (lambda x: x.asscalar(), "read the NDArray result"),
    (lambda x: x.item(), "read the NDArray result"),
    (lambda x: x.wait_to_read(), "nothing needs waiting"),
    (bool, "F.where(cond, x, y)"),
    (lambda x: 1 if x > 0 else 0, "F.where(cond, x, y)"),
    (_in_place_add, "x = x + y"),
    (_set_item, "build a new Symbol"),
], ids=["asnumpy", "asscalar", "item", "wait_to_read", "bool", "if", "iadd", "setitem"])
def test_ndarray_only_operations_raise_and_say_what_to_do(action, instead):
    x = mx.sym.var("data")
    with pytest.raises(NotAvailableOnSymbol) as info:
        action(x)
    assert isinstance(info.value, MXNetError)
    assert "not available on Symbol" in str(info.value) and instead in str(info.value)


def test_fluent_methods():
    x = mx.sym.var("x")
    assert [x.reshape((2, 3)).name, x.sum(axis=1).name, x.astype("float16").name] == [
        "reshape0", "sum0", "cast0"]


# -- module functions: pow, power, maximum, minimum, hypot --------------------------------------

@pytest.mark.parametrize(("fn", "ops_and_names", "on_numbers"), [
    ("pow", [("_power", "_power0"), ("_power_scalar", "_powerscalar0"),
             ("_rpower_scalar", "_rpowerscalar0")], (8, 15.625)),
    ("power", [("_power", "_power0"), ("_power_scalar", "_powerscalar0"),
               ("_rpower_scalar", "_rpowerscalar0")], (8, 15.625)),
    ("maximum", [("_maximum", "_maximum0"), ("_maximum_scalar", "_maximumscalar0"),
                 ("_maximum_scalar", "_maximumscalar1")], (3, 3)),
    ("minimum", [("_minimum", "_minimum0"), ("_minimum_scalar", "_minimumscalar0"),
                 ("_minimum_scalar", "_minimumscalar1")], (2, 2.5)),
    ("hypot", [("_hypot", "_hypot0"), ("_hypot_scalar", "_hypotscalar0"),
               ("_hypot_scalar", "_hypotscalar1")], (np.hypot(2, 3), np.hypot(2.5, 3))),
])
def test_binary_functions_pick_mxnets_op_and_name(fn, ops_and_names, on_numbers):
    f = getattr(mx.sym, fn)
    x, y = mx.sym.var("x"), mx.sym.var("y")
    built = [f(x, y), f(x, 2), f(2, x)]
    assert [(_node(s).op.name, s.name) for s in built] == ops_and_names
    assert [_node(s).given_attrs for s in built] == [{}, {"scalar": "2"}, {"scalar": "2"}]
    assert (f(2, 3), f(2.5, 3)) == on_numbers
    assert type(f(2, 3)) is type(on_numbers[0])
    for bad in (("a", x), (x, "a"), (x, mx.nd.ones(1))):
        with pytest.raises(TypeError, match="not supported"):
            f(*bad)


def test_binary_functions_compute_numpy_values():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    a, b = np.array([1.0, 4.0, 2.5]), np.array([2.0, 0.5, 3.0])
    cases = [(mx.sym.pow(x, y), a ** b), (mx.sym.pow(x, 3), a ** 3), (mx.sym.pow(2, x), 2 ** a),
             (mx.sym.maximum(x, y), np.maximum(a, b)), (mx.sym.maximum(2, x), np.maximum(2, a)),
             (mx.sym.minimum(x, 2), np.minimum(a, 2)), (mx.sym.hypot(x, y), np.hypot(a, b)),
             (mx.sym.hypot(3, x), np.hypot(3, a))]
    for symbol, want in cases:
        (got,) = _values(symbol, x=a, y=b)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=symbol.name)


def test_mx_sym_has_no_comparison_helpers():
    # MXNet 1.9's mx.sym has only the operators; mx.nd has equal, greater, ...
    for name in ("equal", "not_equal", "greater", "lesser_equal", "logical_and", "add"):
        assert not hasattr(mx.sym, name), name


# -- module functions: creation -----------------------------------------------------------------

@pytest.mark.parametrize(("build", "op", "name", "given", "shape", "dtype"), [
    (lambda: mx.sym.zeros((2, 3)), "_zeros", "_zeros0",
     {"shape": "(2, 3)", "dtype": "float32"}, (2, 3), np.float32),
    (lambda: mx.sym.zeros(4, dtype=np.float64, name="z"), "_zeros", "z",
     {"shape": "4", "dtype": "float64"}, (4,), np.float64),
    (lambda: mx.sym.ones([2], dtype="float16"), "_ones", "_ones0",
     {"shape": "[2]", "dtype": "float16"}, (2,), np.float16),
    (lambda: mx.sym.full((2, 3), 7), "_full", "_full0",
     {"shape": "(2, 3)", "dtype": "float32", "value": "7.0"}, (2, 3), np.float32),
    (lambda: mx.sym.full((2,), 7.5, dtype="int32"), "_full", "_full0",
     {"shape": "(2,)", "dtype": "int32", "value": "7.5"}, (2,), np.int32),
    (lambda: mx.sym.eye(3), "_eye", "_eye0",
     {"N": "3", "M": "0", "k": "0", "dtype": "float32"}, (3, 3), np.float32),
    (lambda: mx.sym.eye(3, 4, 1, dtype="int64"), "_eye", "_eye0",
     {"N": "3", "M": "4", "k": "1", "dtype": "int64"}, (3, 4), np.int64),
    (lambda: mx.sym.arange(5), "_arange", "_arange0",
     {"start": "5", "stop": "None", "step": "1.0", "repeat": "1", "infer_range": "False",
      "dtype": "float32"}, (5,), np.float32),
    (lambda: mx.sym.arange(0, 10, 3, repeat=2, dtype="int32", name="r"), "_arange", "r",
     {"start": "0", "stop": "10", "step": "3", "repeat": "2", "infer_range": "False",
      "dtype": "int32"}, (8,), np.int32),
    (lambda: mx.sym.linspace(0, 1, 5), "_linspace", "_linspace0",
     {"start": "0", "stop": "1", "num": "5", "endpoint": "True", "dtype": "float32"},
     (5,), np.float32),
    (lambda: mx.sym.linspace(0, 1, 5, endpoint=False, dtype="float64", name="l"),
     "_linspace", "l",
     {"start": "0", "stop": "1", "num": "5", "endpoint": "False", "dtype": "float64"},
     (5,), np.float64),
], ids=["zeros", "zeros-int-shape", "ones", "full", "full-int", "eye", "eye-MNk", "arange",
        "arange-repeat", "linspace", "linspace-no-endpoint"])
def test_creation_functions_build_mxnets_node(build, op, name, given, shape, dtype):
    symbol = build()
    node = _node(symbol)
    assert (node.op.name, symbol.name, node.given_attrs) == (op, name, given)
    assert symbol.list_arguments() == []
    assert symbol.infer_shape() == ([], [shape], [])
    assert symbol.infer_type() == ([], [dtype], [])


def test_creation_functions_compute_numpy_values():
    cases = [(mx.sym.zeros((2, 3), dtype="int32"), np.zeros((2, 3), np.int32)),
             (mx.sym.ones(4), np.ones(4, np.float32)),
             (mx.sym.full((2, 2), 7.5, dtype="int32"), np.full((2, 2), 7, np.int32)),
             (mx.sym.eye(2, 4, 1), np.eye(2, 4, 1, dtype=np.float32)),
             (mx.sym.arange(0.5, 3.0, 0.5), np.arange(0.5, 3.0, 0.5, dtype=np.float32)),
             (mx.sym.arange(3, repeat=2), np.repeat(np.arange(3, dtype=np.float32), 2)),
             (mx.sym.linspace(-1, 1, 5, endpoint=False, dtype="float64"),
              np.linspace(-1, 1, 5, endpoint=False))]
    for symbol, want in cases:
        (got,) = _values(symbol)
        assert got.dtype == want.dtype, symbol.name
        np.testing.assert_allclose(got, want, err_msg=symbol.name)


def test_creation_functions_take_attr_ctx_and_extra_attributes():
    with mx.AttrScope(__scope__="s", lr_mult="2"):
        z = mx.sym.zeros((2,), ctx=mx.cpu(), attr={"__mine__": "1"}, __a__="b")
    assert z.list_attr() == {"shape": "(2,)", "dtype": "float32", "__mine__": "1",
                             "__lr_mult__": "2", "lr_mult": "2", "__scope__": "s",
                             "__a__": "b"}
    with mx.AttrScope(scope="s"), pytest.raises(MXNetError, match="scope"):
        mx.sym.zeros((2,))
    with pytest.raises(MXNetError, match="unknown attribute 'foo'"):
        mx.sym.zeros((2, 3), foo=1)
    with pytest.raises(MXNetError, match="dtype"):
        mx.sym.ones((2,), dtype="complex64")


# -- module functions: histogram and split_v2 ---------------------------------------------------

def test_histogram_with_bin_count_and_range():
    x = mx.sym.var("x")
    h = mx.sym.histogram(x, bins=5, range=(0, 10))
    node = _node(h[0])
    assert (node.op.name, h.name, node.given_attrs) == (
        "_histogram", "_histogram0", {"bin_cnt": "5", "range": "(0, 10)"})
    assert h.list_outputs() == ["_histogram0_output0", "_histogram0_output1"]
    assert h.list_arguments() == ["x"]
    assert h.infer_shape(x=(3, 4)) == ([(3, 4)], [(5,), (6,)], [])
    assert h.infer_shape_partial() == ([()], [(5,), (6,)], [])
    assert h.infer_type(x=np.float64) == ([np.float64], [np.int64, np.float64], [])
    assert h.infer_type(x=np.int32) == ([np.int32], [np.int64, np.int32], [])
    data = np.array([0, 1, 2, 2, 3, 7.5, 9, 10], dtype=np.float32)
    counts, edges = _values(h, x=data)
    assert counts.dtype == np.int64 and edges.dtype == np.float32
    np.testing.assert_array_equal(counts, [2, 3, 0, 1, 2])  # MXNet 1.9.1's counts
    np.testing.assert_array_equal(edges, np.histogram(data, 5, (0, 10))[1].astype(np.float32))
    assert mx.sym.histogram(x, bins=5, range=(0, 10), name="h").name == "h"


def test_histogram_with_a_bins_symbol():
    x, b = mx.sym.var("x"), mx.sym.var("b")
    h = mx.sym.histogram(x, bins=b, range=(0, 99))  # range is ignored with bins, as in MXNet
    assert (_node(h[0]).given_attrs, h.list_arguments()) == ({}, ["x", "b"])
    assert h.infer_shape(x=(3, 4), b=(6,)) == ([(3, 4), (6,)], [(5,), (6,)], [])
    assert h.infer_type(x=np.float64, b=np.float64)[1] == [np.int64, np.float64]
    data, bins = np.array([-1, 0, 1, 2, 3, 11.0]), np.array([0, 1, 1.5, 3])
    counts, edges = _values(h, x=data, b=bins)
    np.testing.assert_array_equal(counts, np.histogram(data, bins)[0])
    np.testing.assert_array_equal(edges, bins)
    with pytest.raises(MXNetError, match="1D vector"):
        h.infer_shape(x=(3,), b=(2, 2))


def test_histogram_errors():
    x = mx.sym.var("x")
    with pytest.raises(ValueError, match="null range is not supported in symbol mode"):
        mx.sym.histogram(x, bins=5)
    with pytest.raises(ValueError, match="bins argument should be either an integer"):
        mx.sym.histogram(x, bins=[1, 2])
    with pytest.raises(MXNetError, match="should be less than or equal to right hand side"):
        _values(mx.sym.histogram(x, bins=3, range=(3, 2)), x=np.ones(3))
    op = ops.get("_histogram")
    with pytest.raises(MXNetError, match="bin_cnt and range must be given together"):
        make_function(op, "_histogram")(x, bin_cnt=3).infer_shape(x=(3,))


def test_nd_histogram_matches_mxnet():
    data = mx.nd.array([0, 1, 2, 2, 3, 7.5, 9, 10])
    counts, edges = nd_histogram(data, bins=5, range=(0, 10))
    assert counts.dtype is np.int64 and edges.dtype is np.float32
    assert counts.asnumpy().tolist() == [2, 3, 0, 1, 2]
    assert edges.asnumpy().tolist() == [0, 2, 4, 6, 8, 10]
    counts, edges = nd_histogram(data, bins=mx.nd.array([0, 2, 5, 10]))
    assert counts.asnumpy().tolist() == [2, 3, 3]
    degenerate = nd_histogram(mx.nd.array([-1, 0, 1, 2, 3, 11]), bins=3, range=(2, 2))
    assert degenerate[0].asnumpy().tolist() == [0, 1, 0]
    np.testing.assert_allclose(degenerate[1].asnumpy(), np.linspace(1.5, 2.5, 4), rtol=1e-6)
    with pytest.raises(ValueError, match="bins argument should be either an integer"):
        nd_histogram(data, bins=2.0)


def test_nd_histogram_without_range_warns_and_uses_numpy():
    values = np.array([1.0, 2, 3, 4, 4.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts, edges = nd_histogram(mx.nd.array(values), bins=2)
    assert [str(w.message) for w in caught] == [
        "range is not specified, using numpy's result to ensure consistency with numpy"]
    want_counts, want_edges = np.histogram(values.astype(np.float32), bins=2)
    assert counts.dtype is np.float32 and edges.dtype is np.float32
    np.testing.assert_array_equal(counts.asnumpy(), want_counts)
    np.testing.assert_allclose(edges.asnumpy(), want_edges, rtol=1e-6)


@pytest.mark.parametrize(("args", "given", "outputs"), [
    ((3,), {"indices": "[]", "axis": "0", "squeeze_axis": "False", "sections": "3"},
     ["_split_v20_output0", "_split_v20_output1", "_split_v20_output2"]),
    (((1, 3), 1), {"indices": "[0, 1, 3]", "axis": "1", "squeeze_axis": "False",
                   "sections": "0"},
     ["_split_v20_output0", "_split_v20_output1", "_split_v20_output2"]),
    (((1,), 1, True), {"indices": "[0, 1]", "axis": "1", "squeeze_axis": "True",
                       "sections": "0"}, ["_split_v20_output0", "_split_v20_output1"]),
    ((1,), {"indices": "[]", "axis": "0", "squeeze_axis": "False", "sections": "1"},
     ["_split_v20_output"]),
], ids=["sections", "indices", "squeeze", "one-piece"])
def test_split_v2_writes_sections_or_indices_like_mxnet(args, given, outputs):
    s = mx.sym.split_v2(mx.sym.var("x"), *args)
    assert (s.name, _node(s[0]).given_attrs, s.list_outputs()) == ("_split_v20", given, outputs)


def test_split_v2_shapes_values_and_errors():
    x = mx.sym.var("x")
    assert mx.sym.split_v2(x, 3, axis=1).infer_shape(x=(2, 6))[1] == [(2, 2)] * 3
    assert mx.sym.split_v2(x, (2, 3), axis=1).infer_shape(x=(2, 6))[1] == [
        (2, 2), (2, 1), (2, 3)]
    data = np.arange(12.0).reshape(2, 6)
    pieces = _values(mx.sym.split_v2(x, [2, 3], axis=1), x=data)  # a list works too
    for got, want in zip(pieces, np.split(data, [2, 3], axis=1)):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(MXNetError, match="equal pieces"):
        mx.sym.split_v2(x, 4).infer_shape(x=(6, 2))
    for bad in (2.5, "a", 0, (1.5,)):
        with pytest.raises(ValueError, match="indices_or_sections must either int or tuple of "
                                             "ints|at least 1"):
            mx.sym.split_v2(x, bad)
