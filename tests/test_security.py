"""Model files from strangers: no name or attribute in a file ever runs code, names survive as
data, and sizes from a file are capped before anything is allocated (docs/security.md).

Every hostile name goes through the whole path a user takes: ``sym.load`` ->
``SymbolBlock.imports`` -> ``hybridize`` -> call (the generated CPU program), and through
``Symbol.bind`` executors. Payloads would create a marker file if they ever ran; the tests
assert the outputs equal the unrenamed model's and that the marker never appears.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import gluon, nd
from hybridgpu.compiler import compile_graph
from hybridgpu.gluon import nn
from hybridgpu.graph import Graph, infer_shapes, infer_types
from hybridgpu.safe_text import c_comment, c_string, identifier, one_line, python_comment

from optional_hypothesis import HealthCheck, given, settings, st


def _payloads(marker):
    """Names that would run ``open(marker, 'w')`` if pasted into generated source."""
    code = f"open({str(marker)!r}, 'w')"
    return [
        f"r\n    {code}\n    #",               # the reported attack: ends the comment
        f"r\r    {code}\r    #",               # a bare carriage return ends a line too
        f"r\x0c\n{code}\n#",                   # form feed
        f"r\x00\n    {code}",                 # NUL byte
        "r\\",                                # trailing backslash (line splice in C)
        f"r\\\n    {code}",
        f"x'] + [{code}] + inputs['",          # breaks out of a string literal
        f'x"] + [{code}] + inputs["',
        f"r\u2028{code}\u2029#",               # Unicode line separators
        f"r\x85{code}",
        "ünïcödé-名前 with spaces",
        "*/ " + code + " /*",                   # C block comment
        "??/\n" + code,                          # a trigraph backslash
        "n" * 5000,                              # long
        "",                                      # empty
    ]


def _model(tmp_path):
    net = nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(nn.Dense(4, activation="relu"), nn.Dense(3, activation="sigmoid"), nn.Dense(2))
    net.initialize(mx.init.Uniform(1.0))
    x = nd.array(np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
    net.hybridize()
    expected = net(x).asnumpy()
    net.export(str(tmp_path / "m"))
    doc = json.loads((tmp_path / "m-symbol.json").read_text())
    params = nd.load(str(tmp_path / "m-0000.params"))
    return doc, params, x, expected


def _rename(doc, params, names):
    """``doc`` and ``params`` with node ``i`` renamed to ``names[i]`` (variables too; their
    parameter keys follow)."""
    doc = json.loads(json.dumps(doc))
    renamed = {}
    for i, node in enumerate(doc["nodes"]):
        if i in names:
            renamed[node["name"]] = names[i]
            node["name"] = names[i]
    new_params = {}
    for key, value in params.items():
        kind, name = key.split(":", 1)
        new_params[f"{kind}:{renamed.get(name, name)}"] = value
    return doc, new_params


def _unique_names(doc, base_names):
    """A name for every node from ``base_names`` (cycled), made unique by a suffix."""
    return {i: f"{base_names[i % len(base_names)]}#{i}" for i in range(len(doc["nodes"]))}


def _run_imported(tmp_path, doc, params, x, hybridize=True):
    (tmp_path / "h-symbol.json").write_text(json.dumps(doc))
    nd.save(str(tmp_path / "h-0000.params"), params)
    data_name = doc["nodes"][doc["arg_nodes"][0]]["name"]
    block = gluon.SymbolBlock.imports(str(tmp_path / "h-symbol.json"), [data_name],
                                      str(tmp_path / "h-0000.params"))
    if hybridize:
        block.hybridize()
    first = block(x).asnumpy()
    second = block(x).asnumpy()  # the replay path
    np.testing.assert_array_equal(first, second)
    return block, first


@pytest.mark.parametrize("index", range(15))
def test_hostile_names_load_hybridize_and_run(tmp_path, index):
    marker = tmp_path / "PWNED"
    doc, params, x, expected = _model(tmp_path)
    payload = _payloads(marker)[index]
    doc2, params2 = _rename(doc, params, _unique_names(doc, [payload]))
    for hybridize in (True, False):
        block, out = _run_imported(tmp_path, doc2, params2, x, hybridize)
        np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert not marker.exists(), "a node name ran code"
    # names stay data: written back unchanged
    sym = mx.sym.load(str(tmp_path / "h-symbol.json"))
    back = json.loads(sym.tojson())
    assert [n["name"] for n in back["nodes"]] == [n["name"] for n in doc2["nodes"]]


def test_reported_reproduction(tmp_path):
    """The issue's exact file: an Activation node renamed to a payload."""
    marker = tmp_path / "PWNED"
    doc, params, x, expected = _model(tmp_path)
    payload = f"r\n    __import__('os').system('touch {marker}')\n    #"
    act = [i for i, n in enumerate(doc["nodes"]) if n["op"] == "Activation"][0]
    doc2, params2 = _rename(doc, params, {act: payload})
    _, out = _run_imported(tmp_path, doc2, params2, x)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert not marker.exists()


def _hostile_text():
    plain = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
    return st.one_of(plain, st.builds(lambda a, b, c: a + b + c, plain,
                                      st.sampled_from(["\n", "\r", "\\", "'", '"', "\x00",
                                                       "\u2028", "*/", "#"]), plain))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(names=st.lists(_hostile_text(), min_size=1, max_size=4))
def test_generated_names_never_run_code(tmp_path, names):
    marker = tmp_path / "PWNED"
    doc, params, x, expected = _model(tmp_path)
    names = [n + f"open({str(marker)!r},'w')" if k % 2 else n for k, n in enumerate(names)]
    doc2, params2 = _rename(doc, params, _unique_names(doc, names))
    _, out = _run_imported(tmp_path, doc2, params2, x)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    executor = mx.sym.load_json(json.dumps(doc2)).bind(
        mx.cpu(), {k.split(":", 1)[1]: v for k, v in params2.items()}
        | {doc2["nodes"][doc2["arg_nodes"][0]]["name"]: x})
    np.testing.assert_allclose(executor.forward()[0].asnumpy(), expected, rtol=1e-6)
    assert not marker.exists()


@settings(max_examples=30, deadline=None)
@given(value=_hostile_text())
def test_hostile_string_attributes_are_refused_or_kept(value):
    """A free-form string attribute (a graph-level ``__key__``) survives a round trip; one an
    op parses is refused with an MXNetError naming the node."""
    doc = json.loads(mx.sym.relu(mx.sym.var("x"), name="r").tojson())
    doc["nodes"][1]["attrs"] = {"__note__": value}
    sym = mx.sym.load_json(json.dumps(doc))
    assert json.loads(sym.tojson())["nodes"][1]["attrs"]["__note__"] == value
    doc["nodes"][1]["attrs"] = {"act_type": value}
    doc["nodes"][1]["op"] = "Activation"
    try:
        sym = mx.sym.load_json(json.dumps(doc))
    except mx.MXNetError as err:
        assert "node 1" in str(err)
    else:
        assert sym.attr("act_type") == value.strip() or sym.attr("act_type") == value


def _compiled_source(doc, x_shape):
    sym = mx.sym.load_json(json.dumps(doc))
    graph = Graph(sym._outputs)
    shapes = {doc["nodes"][i]["name"]: None for i in doc["arg_nodes"]}
    data = doc["nodes"][doc["arg_nodes"][0]]["name"]
    shapes[data] = x_shape
    infer_shapes(graph, {data: x_shape})
    infer_types(graph, {data: "float32"})
    return graph, compile_graph(graph, mx.cpu(), is_train=False)


def test_generated_source_is_printable_ascii_and_graph_prints_escaped(tmp_path):
    marker = tmp_path / "PWNED"
    doc, params, _, _ = _model(tmp_path)
    doc2, _ = _rename(doc, params, _unique_names(doc, _payloads(marker)))
    graph, exe = _compiled_source(doc2, (2, 3))
    assert exe.source is not None
    for line in exe.source.splitlines():
        assert all(" " <= ch <= "~" for ch in line), line
    text = str(graph)
    assert len(text.splitlines()) == len(graph.nodes) + 1  # one line a node, then return
    assert "open(" in text  # the names are shown (escaped), not dropped


def test_lone_surrogate_name_is_refused_at_load():
    doc = json.loads(mx.sym.relu(mx.sym.var("x"), name="r").tojson())
    doc["nodes"][1]["name"] = "bad\ud800name"
    with pytest.raises(mx.MXNetError, match=r"node 1.*cannot be stored"):
        mx.sym.load_json(json.dumps(doc))
    doc["nodes"][1]["name"] = "r"
    doc["nodes"][1]["attrs"] = {"__x__": "\udfff"}
    with pytest.raises(mx.MXNetError, match=r"node 1.*attribute __x__"):
        mx.sym.load_json(json.dumps(doc))


@pytest.mark.parametrize("key", ["a\nb", "x'] + [1] + ['", "\x00", "名前", "k" * 5000])
def test_params_keys_with_payloads_round_trip(tmp_path, key):
    arrays = {f"arg:{key}": nd.ones((2,)), "aux:plain": nd.zeros((1,))}
    nd.save(str(tmp_path / "p.params"), arrays)
    back = nd.load(str(tmp_path / "p.params"))
    assert sorted(back) == sorted(arrays)
    np.testing.assert_array_equal(back[f"arg:{key}"].asnumpy(), np.ones(2))


def test_load_parameters_with_hostile_names(tmp_path):
    doc, params, x, expected = _model(tmp_path)
    names = _unique_names(doc, ["p\n'\"\\", "名"])
    doc2, params2 = _rename(doc, params, names)
    block, _ = _run_imported(tmp_path, doc2, params2, x)
    block.save_parameters(str(tmp_path / "saved.params"))
    block.load_parameters(str(tmp_path / "saved.params"))
    np.testing.assert_allclose(block(x).asnumpy(), expected, rtol=1e-6)


# -- bounded work ---------------------------------------------------------------------------

def _file_graph(make):
    return mx.sym.load_json(make().tojson())


@pytest.mark.parametrize("make", [
    lambda: mx.sym.broadcast_add(mx.sym.var("data"), mx.sym.sum(mx.sym.zeros((10**5, 10**5)))),
    lambda: mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=10**10),
    lambda: mx.sym.repeat(mx.sym.var("data"), repeats=10**10),
    lambda: mx.sym.Convolution(mx.sym.var("data"), kernel=(1, 1), num_filter=1,
                               pad=(10**5, 10**5), stride=(10**5, 10**5)),
], ids=["zeros", "num_hidden", "repeat", "conv_pad"])
def test_sizes_from_a_file_are_capped_before_allocating(make):
    sym = _file_graph(make)
    block = gluon.SymbolBlock(sym, [mx.sym.var("data")])
    block.initialize()
    block.hybridize()
    with pytest.raises(mx.MXNetError, match="HYBRIDGPU_MAX_ARRAY_ELEMENTS"):
        block(nd.ones((1, 1, 2, 2)))


def test_the_cap_is_configurable(monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_MAX_ARRAY_ELEMENTS", "10")
    y = mx.sym.zeros((4, 4), name="z")
    with pytest.raises(mx.MXNetError, match=r"node z .*16 elements"):
        y.infer_shape()
    monkeypatch.setenv("HYBRIDGPU_MAX_ARRAY_ELEMENTS", "16")
    assert y.infer_shape()[1] == [(4, 4)]


def test_attribute_strings_are_bounded():
    doc = json.loads(mx.sym.Reshape(mx.sym.var("x"), shape=(1,), name="r").tojson())
    doc["nodes"][1]["attrs"]["shape"] = "(" * 20000 + ")" * 20000
    with pytest.raises(mx.MXNetError, match="node 1.*characters"):
        mx.sym.load_json(json.dumps(doc))


# -- the helper itself ------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(), max_size=60))
def test_helper_outputs_cannot_escape(text):
    ident = identifier(text)
    assert ident.isidentifier() and ident.isascii()
    line = one_line(text)
    assert all(" " <= ch <= "~" for ch in line)
    comment = python_comment(text)
    compile(comment + "\nx = 1\n", "<t>", "exec")  # the comment is one line
    assert not c_comment(text).endswith("\\") and "\n" not in c_comment(text)
    literal = c_string(text)
    assert all(" " <= ch <= "~" for ch in literal) and literal.startswith('"')
    body = literal[1:-1].replace("\\\\", "")
    assert '"' not in body.replace('\\"', "")


# -- every path a model file takes: Module, the GPU backend, kernel dumps, Custom ops ----------

def test_module_with_hostile_names(tmp_path):
    marker = tmp_path / "PWNED"
    doc, params, x, expected = _model(tmp_path)
    doc2, params2 = _rename(doc, params, _unique_names(doc, _payloads(marker)[:6]))
    sym = mx.sym.load_json(json.dumps(doc2))
    data = doc2["nodes"][doc2["arg_nodes"][0]]["name"]
    module = mx.mod.Module(sym, data_names=[data], label_names=None)
    module.bind(data_shapes=[(data, x.shape)], for_training=False)
    args = {k.split(":", 1)[1]: v for k, v in params2.items() if k.startswith("arg:")}
    module.set_params(args, {}, allow_missing=False)
    module.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(module.get_outputs()[0].asnumpy(), expected, rtol=1e-6)
    assert not marker.exists()


@pytest.mark.gpu
def test_hostile_names_on_the_gpu_backend(tmp_path, monkeypatch):
    marker = tmp_path / "PWNED"
    dump = tmp_path / "dump"
    monkeypatch.setenv("HYBRIDGPU_DUMP_CUDA", str(dump))
    doc, params, x, expected = _model(tmp_path)
    doc2, params2 = _rename(doc, params, _unique_names(doc, _payloads(marker)))
    (tmp_path / "g-symbol.json").write_text(json.dumps(doc2))
    nd.save(str(tmp_path / "g-0000.params"), params2)
    data = doc2["nodes"][doc2["arg_nodes"][0]]["name"]
    block = gluon.SymbolBlock.imports(str(tmp_path / "g-symbol.json"), [data],
                                      str(tmp_path / "g-0000.params"), ctx=mx.gpu(0))
    block.hybridize()
    xg = x.as_in_context(mx.gpu(0))
    for _ in range(2):  # the eager first call, then the replay
        np.testing.assert_allclose(block(xg).asnumpy(), expected, rtol=1e-4, atol=1e-6)
    exe = block._last_trace.executable
    assert exe.source and all(" " <= ch <= "~" for ln in exe.source.splitlines() for ch in ln)
    names = [p.name for p in dump.iterdir()]
    assert names and all(len(n) > 3 and n.endswith(".cu")
                         and all(c in "0123456789abcdef" for c in n[:-3]) for n in names)
    assert not marker.exists()


@pytest.mark.parametrize("op_type", ["os.system", "subprocess", "__import__", "../evil"])
def test_custom_op_types_are_looked_up_never_imported(op_type):
    doc = json.loads(mx.sym.relu(mx.sym.var("x"), name="r").tojson())
    doc["nodes"][1]["op"] = "Custom"
    doc["nodes"][1]["attrs"] = {"op_type": op_type}
    with pytest.raises(mx.MXNetError):
        sym = mx.sym.load_json(json.dumps(doc))
        sym.bind(mx.cpu(), {"x": nd.ones((2,))}).forward()
