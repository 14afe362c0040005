"""The graph IR: topological order, the printer (golden output), the verifier, whole-graph
inference, and the reference interpreter against eager execution for every op case."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.graph import (
    Entry,
    Graph,
    Node,
    evaluate,
    format_graph,
    infer_shapes,
    infer_types,
    topological_order,
    unknown_inputs,
    verify,
)

from op_harness import collect_cases, run_all_outputs


def _node(op_name, name, inputs, **given):
    op = ops.get(op_name)
    return Node(op, name, op.parse_attrs(given), [Entry(n, 0) for n in inputs],
                given_attrs=op.format_attrs(given))


def _mlp():
    x, w1, b1, w2 = (Node.variable(n) for n in ("x", "w1", "b1", "w2"))
    fc1 = _node("FullyConnected", "fc1", [x, w1, b1], num_hidden=4)
    act = _node("Activation", "act", [fc1], act_type="relu")
    fc2 = _node("FullyConnected", "fc2", [act, w2], num_hidden=2, no_bias=True)
    return Graph([Entry(fc2, 0)])


def test_printer_golden_with_inferred_types():
    g = _mlp()
    infer_shapes(g, {"x": (3, 5)})
    infer_types(g, {"x": "float32"})
    assert str(g) == "\n".join([
        "%0 = var x : (3, 5) float32",
        "%1 = var w1 : (4, 5) float32",
        "%2 = var b1 : (4,) float32",
        "%3 = FullyConnected(%0, %1, %2) num_hidden=4 : (3, 4) float32",
        "%4 = Activation(%3) act_type=relu : (3, 4) float32",
        "%5 = var w2 : (2, 4) float32",
        "%6 = FullyConnected(%4, %5) num_hidden=2 no_bias=True : (3, 2) float32",
        "return %6",
    ])


def test_printer_names_outputs_of_multi_output_nodes():
    x = Node.variable("x")
    split = _node("split", "s", [x], num_outputs=2)
    g = Graph([Entry(split, 1), Entry(split, 0)])
    assert format_graph(g).splitlines()[-1] == "return %1.1, %1.0"


def test_topological_order_is_depth_first_post_order_and_shares_nodes():
    x = Node.variable("x")
    a = _node("relu", "a", [x])
    b = _node("exp", "b", [x])
    c = _node("elemwise_add", "c", [a, b])
    assert [n.name for n in topological_order([Entry(c, 0)])] == ["x", "a", "b", "c"]


def test_cycles_are_named():
    x = Node.variable("x")
    a = _node("relu", "a", [x])
    b = _node("exp", "b", [a])
    a.inputs = [Entry(b, 0)]
    with pytest.raises(MXNetError, match="cycle through node"):
        Graph([Entry(b, 0)])


def test_verifier_accepts_a_sound_graph():
    g = _mlp()
    infer_shapes(g, {"x": (3, 5)})
    verify(g)


@pytest.mark.parametrize(("break_it", "message"), [
    (lambda g: g.nodes[3].inputs.pop(), r"FullyConnected takes 3 inputs"),
    (lambda g: g.nodes[4].inputs.__setitem__(0, Entry(g.nodes[3], 2)),
     r"reads output 2 of 'fc1', which has 1"),
    (lambda g: setattr(g.nodes[5], "name", "w1"), r"two variables are named 'w1'"),
    (lambda g: g.nodes[3].attrs.pop("flatten"), r"attributes \['flatten'\] are not set"),
])
def test_verifier_names_the_node_and_shows_its_neighbourhood(break_it, message):
    g = _mlp()
    break_it(g)
    with pytest.raises(MXNetError, match=message) as info:
        verify(g)
    assert "  > %" in str(info.value)  # the bad node's line, printed


def test_verifier_checks_recorded_shapes():
    g = _mlp()
    infer_shapes(g, {"x": (3, 5)})
    g.shapes[(4, 0)] = (3, 9)
    with pytest.raises(MXNetError, match=r"output 0 is recorded as \(3, 9\) but its inputs give "
                                         r"\(3, 4\)"):
        verify(g)


def test_inference_fills_parameters_and_reports_conflicts():
    g = _mlp()
    infer_shapes(g, {"x": (3, 5)})
    assert g.shapes[(1, 0)] == (4, 5) and g.shapes[(5, 0)] == (2, 4)
    assert unknown_inputs(g) == []
    g2 = _mlp()
    with pytest.raises(MXNetError, match=r"node 'fc1'") as info:
        infer_shapes(g2, {"x": (3, 5), "w1": (4, 6)})
    assert "(4, 6)" in str(info.value) and "(4, 5)" in str(info.value)
    g3 = _mlp()
    infer_shapes(g3, {})
    assert set(unknown_inputs(g3)) == {"x", "w1", "w2"}


def test_variable_shape_and_dtype_attributes_are_read():
    x = Node.variable("x", extra={"__shape__": "(2, 3)", "__dtype__": "2"})
    g = Graph([Entry(_node("relu", "r", [x]), 0)])
    infer_shapes(g, {})
    infer_types(g, {})
    assert g.shapes[(1, 0)] == (2, 3) and g.dtypes[(1, 0)] == "float16"


def test_interpreter_reports_the_failing_node():
    g = _mlp()
    with pytest.raises(MXNetError, match=r"node %3 'fc1'"):
        evaluate(g, {"x": np.ones((3, 5)), "w1": np.ones((4, 6)), "b1": np.ones(4),
                     "w2": np.ones((2, 4))}, np)
    with pytest.raises(MXNetError, match="no value for input 'b1'"):
        evaluate(g, {"x": np.ones((3, 5)), "w1": np.ones((4, 5))}, np)


CASES = [c for c in collect_cases() if not c.opdef.random]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_interpreter_matches_eager_execution(case):
    """The reference interpreter on a one-node graph gives what ``nd`` gives."""
    arrays = case.make_inputs(case.dtypes[0])
    attrs, _, eager = run_all_outputs(case, arrays)
    inputs = [Node.variable(f"in{i}") for i in range(len(arrays))]
    node = Node(case.opdef, "op", attrs, [Entry(v, 0) for v in inputs])
    graph = Graph([Entry(node, k) for k in range(node.num_outputs)])
    values = {f"in{i}": a.copy() for i, a in enumerate(arrays)}
    got = evaluate(graph, values, np, is_train=case.is_train)
    for g, e in zip(got, eager):
        np.testing.assert_array_equal(np.asarray(g), e.asnumpy(), err_msg=case.name)


def test_interpreter_runs_on_the_context_module_for_symbols():
    x = mx.sym.var("x")
    y = mx.sym.relu(x) * 2
    g = Graph(y._outputs)
    (out,) = evaluate(g, {"x": np.array([-1.0, 3.0])}, np)
    assert out.tolist() == [0.0, 6.0]
