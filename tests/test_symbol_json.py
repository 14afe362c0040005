"""Symbol JSON against the real MXNet 1.9.1: the fixtures in ``tests/fixtures/mxnet_symbols/``
(written by ``make_mxnet_symbol_fixtures.py`` with MXNet) load with the same names and shapes,
evaluate to MXNet's outputs and write back MXNet's JSON byte for byte; symbols built with
hybridgpu write what MXNet writes for the same code; older layouts load; malformed files raise
errors that name the node. The ``oracle`` test has the real MXNet load hybridgpu's JSON.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.graph import Graph, evaluate

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_symbol_fixtures as gen  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mxnet_symbols"
ORACLE = ROOT / ".oracle" / "bin" / "python"
TABLE = json.loads((FIXTURES / "cases.json").read_text())
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))
CASES = sorted(TABLE)
BUILT = [c for c in CASES if not TABLE[c]["legacy"]]


def _file(case):
    return FIXTURES / f"{case}-symbol.json"


def _expected_json(case):
    """What MXNet writes for the case after loading its file."""
    name = f"{case}-resaved.json" if TABLE[case]["legacy"] else f"{case}-symbol.json"
    return (FIXTURES / name).read_text()


def _inputs(case):
    prefix = f"{case}/in/"
    return {k[len(prefix):]: v for k, v in ARRAYS.items() if k.startswith(prefix)}


def _outputs(case):
    n = len(TABLE[case]["outputs"])
    return [ARRAYS[f"{case}/out{i}"] for i in range(n)]


def _interpret(symbol, inputs):
    return [np.asarray(o) for o in evaluate(Graph(symbol._outputs), dict(inputs), np)]


def _assert_outputs(case, got):
    want = _outputs(case)
    assert len(got) == len(want), f"{case}: {len(got)} outputs, MXNet gives {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        label = f"{case} output {i} ({TABLE[case]['outputs'][i]})"
        assert tuple(g.shape) == w.shape, f"{label}: shape {g.shape}, MXNet {w.shape}"
        assert g.dtype == w.dtype, f"{label}: dtype {g.dtype}, MXNet {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=label)


def _assert_same_json(got, want, label):
    got_doc, want_doc = json.loads(got), json.loads(want)
    got_nodes = [(n["op"], n["name"]) for n in got_doc["nodes"]]
    want_nodes = [(n["op"], n["name"]) for n in want_doc["nodes"]]
    assert got_nodes == want_nodes, f"{label}: node order/ops differ"
    for g, w in zip(got_doc["nodes"], want_doc["nodes"]):
        assert g == w, f"{label}: node {w['name']!r} differs"
    assert got_doc == want_doc, f"{label}: JSON differs"
    assert got == want, f"{label}: same JSON but different bytes (spacing)"


# -- the fixtures -----------------------------------------------------------------------------

def test_fixture_set_is_complete_and_small():
    assert len(CASES) >= 12
    assert set(CASES) == set(gen.CASES)
    size = sum(p.stat().st_size for p in FIXTURES.iterdir())
    assert size < 300_000, f"fixtures take {size} bytes"


@pytest.mark.parametrize("case", CASES)
def test_fixture_loads_with_mxnet_names(case):
    symbol = mx.sym.load(str(_file(case)))
    assert symbol.list_arguments() == TABLE[case]["arguments"]
    assert symbol.list_outputs() == TABLE[case]["outputs"]
    assert symbol.list_auxiliary_states() == TABLE[case]["auxiliary_states"]


@pytest.mark.parametrize("case", CASES)
def test_fixture_infer_shape_matches_mxnet(case):
    info = TABLE[case]["infer_shape"]
    symbol = mx.sym.load(str(_file(case)))
    given = {k: tuple(v) for k, v in info["given"].items()}
    arg_shapes, out_shapes, aux_shapes = symbol.infer_shape(**given)
    assert arg_shapes == [tuple(s) for s in info["arg_shapes"]]
    assert out_shapes == [tuple(s) for s in info["out_shapes"]]
    assert aux_shapes == [tuple(s) for s in info["aux_shapes"]]


@pytest.mark.parametrize("case", CASES)
def test_fixture_writes_back_mxnet_json(case):
    symbol = mx.sym.load(str(_file(case)))
    _assert_same_json(symbol.tojson(), _expected_json(case), case)


@pytest.mark.parametrize("case", CASES)
def test_fixture_round_trips(case):
    text = mx.sym.load(str(_file(case))).tojson()
    assert mx.sym.load_json(text).tojson() == text


@pytest.mark.parametrize("case", CASES)
def test_fixture_evaluates_to_mxnet_outputs(case):
    symbol = mx.sym.load(str(_file(case)))
    _assert_outputs(case, _interpret(symbol, _inputs(case)))


@pytest.mark.parametrize("case", CASES)
def test_fixture_evaluates_with_symbol_eval(case):
    symbol = mx.sym.load(str(_file(case)))
    inputs = {k: mx.nd.array(v, dtype=v.dtype) for k, v in _inputs(case).items()}
    args = {k: v for k, v in inputs.items() if k in symbol.list_arguments()}
    aux = {k: v for k, v in inputs.items() if k not in args}
    try:
        if aux:
            exe = symbol.bind(mx.cpu(), args=args, aux_states=aux, grad_req="null")
            outputs = exe.forward(is_train=False)
        else:
            outputs = symbol.eval(ctx=mx.cpu(), **args)
    except (ImportError, NotImplementedError) as err:
        pytest.skip(f"Symbol.eval/bind are not there yet: {err}")
    _assert_outputs(case, [o.asnumpy() for o in outputs])


@pytest.mark.parametrize("case", BUILT)
def test_symbol_built_with_hybridgpu_writes_mxnet_json(case):
    if case == "gluon_export" and not hasattr(mx, "gluon"):
        pytest.skip("hybridgpu.gluon is not there yet")
    symbol = gen.build(mx, case)
    _assert_same_json(symbol.tojson(), _file(case).read_text(), case)


# -- writing --------------------------------------------------------------------------------

def test_save_is_atomic_and_loads_back(tmp_path):
    symbol = gen.build(mx, "mlp")
    target = tmp_path / "net-symbol.json"
    target.write_text("old contents")
    symbol.save(str(target))
    assert target.read_text() == symbol.tojson()
    assert [p.name for p in tmp_path.iterdir()] == ["net-symbol.json"]
    assert mx.sym.load(target).tojson() == symbol.tojson()


def test_save_leaves_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "net-symbol.json"
    target.write_text("old contents")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(MXNetError, match="disk full"):  # as nd.save: MXNetError naming it
        gen.build(mx, "mlp").save(str(target))
    assert target.read_text() == "old contents"
    assert [p.name for p in tmp_path.iterdir()] == ["net-symbol.json"]


def test_save_rejects_a_non_path():
    with pytest.raises(TypeError, match="fname"):
        mx.sym.var("x").save(3)


def test_heads_repeat_and_name_variables():
    a = mx.sym.var("a")
    doc = json.loads(mx.sym.Group([a, a * 2, a]).tojson())
    assert doc["heads"] == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]
    assert doc["arg_nodes"] == [0]
    assert doc["node_row_ptr"] == [0, 1, 2]


def test_many_inputs_write_one_per_line():
    xs = [mx.sym.var(f"x{i}") for i in range(11)]
    text = mx.sym.concat(*xs, dim=0, name="cat").tojson()
    assert '"inputs": [\n        [0, 0, 0], \n        [1, 0, 0], ' in text
    assert '"arg_nodes": [\n    0, \n    1, ' in text


def test_strings_are_escaped_as_mxnet_does():
    text = mx.sym.var('a"b\\c\nd\té').tojson()
    assert '"name": "a\\"b\\\\c\\nd\\té"' in text
    assert mx.sym.load_json(text).list_arguments() == ['a"b\\c\nd\té']


# -- older layouts --------------------------------------------------------------------------

def _doc(*nodes, heads=None, version=10901, args=None):
    """A graph document over ``x`` (node 0) and ``nodes``."""
    all_nodes = [{"op": "null", "name": "x", "inputs": []}, *nodes]
    doc = {"nodes": all_nodes,
           "arg_nodes": args if args is not None else [
               i for i, n in enumerate(all_nodes) if n.get("op") == "null"],
           "heads": heads if heads is not None else [[len(all_nodes) - 1, 0, 0]]}
    if version is not None:
        doc["attrs"] = {"mxnet_version": ["int", version]}
    return doc


def _act(**fields):
    node = {"op": "Activation", "name": "act", "inputs": [[0, 0, 0]]}
    node.update(fields)
    return node


def _attrs_of(symbol, name):
    return {n["name"]: n.get("attrs") for n in json.loads(symbol.tojson())["nodes"]}[name]


def test_legacy_param_and_attr_keys():
    doc = _doc(_act(param={"act_type": "relu"}, attr={"__b__": "2"}, inputs=[[0, 0]],
                    backward_source_id=-1))
    symbol = mx.sym.load_json(json.dumps(doc))
    assert _attrs_of(symbol, "act") == {"__b__": "2", "act_type": "relu"}
    assert json.loads(symbol.tojson())["nodes"][1]["inputs"] == [[0, 0, 0]]


def test_attrs_win_over_param_and_replace_attr():
    doc = _doc(_act(param={"act_type": "relu"}, attrs={"act_type": "tanh"}))
    assert _attrs_of(mx.sym.load_json(json.dumps(doc)), "act") == {"act_type": "tanh"}
    doc = _doc(_act(attr={"__b__": "2"}, attrs={"act_type": "relu", "__c__": "3"}))
    assert _attrs_of(mx.sym.load_json(json.dumps(doc)), "act") == {"__c__": "3",
                                                                    "act_type": "relu"}


def test_old_versions_rename_hidden_keys():
    doc = _doc(_act(attrs={"act_type": "relu", "lr_mult": "2"}), version=10500)
    doc["nodes"][0]["attrs"] = {"wd_mult": "0", "foo": "1"}
    symbol = mx.sym.load_json(json.dumps(doc))
    assert _attrs_of(symbol, "act") == {"__lr_mult__": "2", "act_type": "relu"}
    assert _attrs_of(symbol, "x") == {"__wd_mult__": "0", "foo": "1"}


def test_bare_hidden_key_on_an_op_in_a_current_file_is_an_error():
    doc = _doc(_act(attrs={"act_type": "relu", "lr_mult": "2"}))
    with pytest.raises(MXNetError, match=r"node 1 'act'.*'__lr_mult__'"):
        mx.sym.load_json(json.dumps(doc))


def test_files_before_0_9_get_their_auxiliary_states_back():
    bn = {"op": "BatchNorm", "name": "bn", "param": {"eps": "0.01"},
          "inputs": [[0, 0], [1, 0], [2, 0]]}
    doc = _doc({"op": "null", "name": "g", "inputs": []},
               {"op": "null", "name": "b", "inputs": []}, bn, version=None)
    symbol = mx.sym.load_json(json.dumps(doc))
    assert symbol.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert _attrs_of(symbol, "bn_moving_var") == {"__init__": '["one", {}]', "eps": "0.01"}


def test_heads_may_name_any_node_and_forward_references_load():
    relu = {"op": "relu", "name": "r", "inputs": [[2, 0, 0]]}
    doc = {"nodes": [{"op": "null", "name": "x", "inputs": []}, relu,
                     {"op": "exp", "name": "e", "inputs": [[0, 0, 0]]}],
           "arg_nodes": [0], "heads": [[1, 0, 0], [0, 0, 0]]}
    symbol = mx.sym.load_json(json.dumps(doc))
    assert symbol.list_outputs() == ["r_output", "x"]
    assert [n["name"] for n in json.loads(symbol.tojson())["nodes"]] == ["x", "e", "r"]


def test_head_versions_are_written_back_as_read():
    doc = _doc({"op": "null", "name": "mm", "inputs": []}, heads=[[0, 0, 0], [1, 0, 2]])
    assert json.loads(mx.sym.load_json(json.dumps(doc)).tojson())["heads"] == doc["heads"]


def test_entry_versions_are_written_back_as_read():
    text = (FIXTURES / "convnet-symbol.json").read_text()
    assert "[2, 0, 1]" not in text and ", 0, 1]" in text
    doc = json.loads(text)
    for node in doc["nodes"]:
        node["inputs"] = [e[:2] for e in node["inputs"]]
    again = json.loads(mx.sym.load_json(json.dumps(doc)).tojson())
    assert all(e[2] == 0 for n in again["nodes"] for e in n["inputs"])


# -- malformed files ------------------------------------------------------------------------

BAD = {
    "not JSON": ('{"nodes": [', r"not valid JSON: .* line 1 column"),
    "not an object": ("[1, 2]", r"expected a JSON object"),
    "missing heads": (json.dumps({"nodes": [], "arg_nodes": []}), r"missing key 'heads'"),
    "unknown top key": (json.dumps({**_doc(_act(attrs={"act_type": "relu"})), "bogus": 1}),
                        r"unknown key 'bogus'"),
    "node missing op": (_doc({"name": "act", "inputs": [[0, 0, 0]]}),
                        r"node 1 'act': missing key 'op'"),
    "node missing inputs": (_doc({"op": "relu", "name": "r"}),
                            r"node 1 'r': missing key 'inputs'"),
    "unknown node key": (_doc(_act(attrs={"act_type": "relu"}, extra=1)),
                         r"node 1 'act': unknown key 'extra'"),
    "input out of range": (_doc(_act(attrs={"act_type": "relu"}, inputs=[[7, 0, 0]])),
                           r"node 1 'act': input 0 \[7, 0, 0\] names node 7, but the file "
                           r"has nodes 0..1"),
    "bad entry": (_doc(_act(attrs={"act_type": "relu"}, inputs=[[0]])),
                  r"node 1 'act': input 0 \[0\] is not \[node, output\]"),
    "self loop": (_doc(_act(attrs={"act_type": "relu"}, inputs=[[1, 0, 0]])),
                  r"node 1 'act': reads its own output: the graph has a cycle"),
    "cycle": (_doc({"op": "relu", "name": "r1", "inputs": [[2, 0, 0]]},
                   {"op": "relu", "name": "r2", "inputs": [[1, 0, 0]]}),
              r"node 2 'r2': reads node 1 'r1', which depends on it: the graph has a cycle"),
    "output index": (_doc(_act(attrs={"act_type": "relu"}, inputs=[[0, 2, 0]])),
                     r"node 1 'act': input 0 \(data\) reads output 2 of 'x', which has 1"),
    "unknown op": (_doc({"op": "Activatoin", "name": "a", "inputs": [[0, 0, 0]]}),
                   r"node 1 'a': unknown operator 'Activatoin'; did you mean Activation"),
    "bad attribute": (_doc(_act(attrs={"act_type": "relux"})),
                      r"node 1 'act': bad attributes for Activation: attribute 'act_type': "
                      r"expected one of"),
    "unknown attribute": (_doc(_act(attrs={"act_type": "relu", "foo": "1"})),
                          r"node 1 'act': bad attributes for Activation: .*'foo'"),
    "non-string attribute": (_doc(_act(attrs={"act_type": 3})),
                             r"node 1 'act': attribute 'act_type' must be a string"),
    "too many inputs": (_doc(_act(attrs={"act_type": "relu"}, inputs=[[0, 0, 0]] * 2)),
                        r"node 1 'act': Activation takes 1 inputs \['data'\], the file "
                        r"gives 2"),
    "too few inputs": (_doc({"op": "FullyConnected", "name": "fc",
                             "attrs": {"num_hidden": "3"}, "inputs": [[0, 0, 0]]}),
                       r"node 1 'fc': FullyConnected takes 3 inputs"),
    "variable with inputs": (_doc({"op": "null", "name": "y", "inputs": [[0, 0, 0]]}),
                             r"node 1 'y': a variable .* cannot have inputs"),
    "head out of range": (_doc(_act(attrs={"act_type": "relu"}), heads=[[5, 0, 0]]),
                          r"heads\[0\] = \[5, 0, 0\] names node 5"),
    "head output index": (_doc(_act(attrs={"act_type": "relu"}), heads=[[1, 3, 0]]),
                          r"heads\[0\] = \[1, 3, 0\] reads output 3 of node 1 'act'"),
    "arg_nodes not a variable": (_doc(_act(attrs={"act_type": "relu"}), args=[1]),
                                 r"arg_nodes\[0\] = 1 is not the index of a variable"),
    "no heads": (_doc(_act(attrs={"act_type": "relu"}), heads=[]), r"'heads' is empty"),
    "bad version": ({**_doc(), "attrs": {"mxnet_version": 5}},
                    r"mxnet_version must look like"),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_malformed_json_names_the_problem(what):
    doc, pattern = BAD[what]
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(MXNetError, match=pattern):
        mx.sym.load_json(text)


def test_load_names_the_file(tmp_path):
    path = tmp_path / "broken-symbol.json"
    path.write_text('{"nodes": [')
    with pytest.raises(MXNetError, match=r"broken-symbol.json.*not valid JSON"):
        mx.sym.load(str(path))
    with pytest.raises(MXNetError, match=r"cannot read symbol file .*missing.json"):
        mx.sym.load(str(tmp_path / "missing.json"))


def test_load_json_rejects_a_non_string():
    with pytest.raises(TypeError, match="JSON string"):
        mx.sym.load_json({"nodes": []})


# -- the real MXNet reads what hybridgpu writes -----------------------------------------------

_ORACLE_SCRIPT = r"""
import json, sys
import numpy as np
import mxnet as mx
folder = sys.argv[1]
table = json.load(open(folder + "/cases.json"))
arrays = np.load(folder + "/arrays.npz")
report = {}
for case, info in table.items():
    try:
        sym = mx.sym.load(folder + "/" + case + ".json")
        names = [sym.list_arguments(), sym.list_outputs(), sym.list_auxiliary_states()]
        assert names == [info["arguments"], info["outputs"], info["auxiliary_states"]], names
        get = lambda k: mx.nd.array(arrays[case + "/in/" + k],
                                    dtype=arrays[case + "/in/" + k].dtype)
        exe = sym.bind(mx.cpu(), args={k: get(k) for k in sym.list_arguments()},
                       aux_states={k: get(k) for k in sym.list_auxiliary_states()},
                       grad_req="null")
        for i, out in enumerate(exe.forward(is_train=False)):
            np.testing.assert_allclose(out.asnumpy(), arrays["%s/out%d" % (case, i)],
                                       rtol=1e-5, atol=1e-6)
        report[case] = "ok"
    except Exception as err:
        report[case] = "%s: %s" % (type(err).__name__, str(err)[-500:])
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def oracle_report(tmp_path_factory):
    """``{case: "ok" | what went wrong}`` from the real MXNet loading and evaluating the JSON
    hybridgpu writes for every fixture it can load (the others are left out)."""
    if not ORACLE.exists():
        pytest.skip(f"the real MXNet is not installed at {ORACLE}")
    folder = tmp_path_factory.mktemp("hybridgpu_json")
    table = {}
    for case in CASES:
        try:
            mx.sym.load(str(_file(case))).save(str(folder / f"{case}.json"))
        except MXNetError:
            continue  # test_fixture_loads_with_mxnet_names reports it
        table[case] = TABLE[case]
    (folder / "cases.json").write_text(json.dumps(table))
    (folder / "arrays.npz").write_bytes((FIXTURES / "arrays.npz").read_bytes())
    env = {**os.environ, "MXNET_SUBGRAPH_BACKEND": "NONE"}  # see the fixture generator
    run = subprocess.run([str(ORACLE), "-c", _ORACLE_SCRIPT, str(folder)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.oracle
@pytest.mark.parametrize("case", CASES)
def test_real_mxnet_loads_and_evaluates_hybridgpu_json(case, oracle_report):
    if case not in oracle_report:
        pytest.fail(f"hybridgpu cannot load the {case} fixture, so wrote no JSON for MXNet")
    assert oracle_report[case] == "ok", f"MXNet on hybridgpu's {case} JSON: " \
                                        f"{oracle_report[case]}"
