"""``mx.viz`` and ``Symbol.debug_str`` against MXNet 1.9.1: the texts and DOT sources MXNet
writes for the same networks (fixtures from ``tests/fixtures/make_mxnet_misc_fixtures.py``), names
that try to break the DOT, and rendering with Graphviz's ``dot`` where it is installed."""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import hybridgpu as mx

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_misc_fixtures as gen  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "mxnet_misc" /
                      "symbols.json").read_text())
gen.register_scaled_product(mx)
SUMMARIZED = sorted(c for c in FIXTURE if "summary" in FIXTURE[c])
HAS_DOT = shutil.which("dot") is not None


@pytest.mark.parametrize("case", sorted(FIXTURE))
def test_debug_str_matches_mxnet(case):
    assert gen.build(mx, case).debug_str() == FIXTURE[case]["debug_str"]


@pytest.mark.parametrize("case", SUMMARIZED)
def test_print_summary_matches_mxnet(case):
    shapes = {k: tuple(v) for k, v in FIXTURE[case]["shapes"].items()}
    assert gen.summary_text(mx, gen.build(mx, case), shapes) == FIXTURE[case]["summary"]


def _source(dot):
    return dot.source.rstrip("\n")  # older graphviz packages end without a newline


@pytest.mark.parametrize("case", SUMMARIZED)
def test_plot_with_shapes_matches_mxnet(case):
    pytest.importorskip("graphviz")
    shapes = {k: tuple(v) for k, v in FIXTURE[case]["shapes"].items()}
    dot = mx.viz.plot_network(gen.build(mx, case), shape=shapes)
    assert type(dot).__name__ == "Digraph"
    assert _source(dot) == FIXTURE[case]["plot"].rstrip("\n")


@pytest.mark.parametrize("case", gen.PLOTTED)
def test_plot_without_shapes_matches_mxnet(case):
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(gen.build(mx, case), title=case)
    assert _source(dot) == FIXTURE[case]["plot_no_shape"].rstrip("\n")


def test_plot_options():
    pytest.importorskip("graphviz")
    net = gen.build(mx, "mlp")
    shown = mx.viz.plot_network(net, hide_weights=False, node_attrs={"shape": "oval"})
    assert "fc1 -> fc1_weight" in shown.source and "shape=box" not in shown.source
    typed = mx.viz.plot_network(net, shape={"data": (2, 5)}, dtype={"data": "float16"})
    assert 'label="5(float16)"' in typed.source
    with pytest.raises(TypeError, match="must be a Symbol"):
        mx.viz.plot_network("not a symbol")
    with pytest.raises(TypeError, match="dict of input name"):
        mx.viz.plot_network(net, shape=(2, 5))


HOSTILE = ['a" -> evil [color=red]; x="', "<b>html</b>", "new\nline", "semi;colon {}",
           "tab\there"]


def _hostile_network():
    with mx.name.NameManager():
        return _hostile_layers()


def _hostile_layers():
    x = mx.sym.var(HOSTILE[0])
    h = mx.sym.relu(x, name=HOSTILE[1])
    h = mx.sym.FullyConnected(h, num_hidden=2, name=HOSTILE[2])
    return mx.sym.Activation(h, act_type="relu", name=HOSTILE[4]) + mx.sym.var(HOSTILE[3])


def test_hostile_names_stay_data_in_the_source():
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(_hostile_network(), title='ti"tle',
                              shape={HOSTILE[0]: (2, 3), HOSTILE[3]: (2, 2)})
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', "Q", dot.source)  # every quoted DOT string -> Q
    assert "evil" not in bare and "html" not in bare and "colon" not in bare
    assert bare.count("->") == 5 and bare.count("[") == 11  # 6 nodes, 5 edges, none injected


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
def test_hostile_names_parse_back_as_the_same_graph():
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(_hostile_network(), title='ti"tle')
    parsed = json.loads(subprocess.run(["dot", "-Tjson"], input=dot.source, text=True,
                                       capture_output=True, check=True).stdout)
    names = [o["name"] for o in parsed["objects"]]
    assert names == [HOSTILE[0], HOSTILE[1], HOSTILE[2], HOSTILE[4], HOSTILE[3], "_plus0"]
    assert len(parsed["edges"]) == 5 and parsed["name"] == 'ti"tle'


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz's dot program is not installed")
def test_render_svg(tmp_path):
    pytest.importorskip("graphviz")
    dot = mx.viz.plot_network(gen.build(mx, "convnet"), shape={"data": (1, 3, 8, 8)},
                              save_format="svg")
    path = pathlib.Path(dot.render(str(tmp_path / "convnet")))
    assert path.suffix == ".svg" and "<svg" in path.read_text()


def test_summary_without_shapes_lists_layers():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        mx.viz.print_summary(gen.build(mx, "convnet"))
    text = out.getvalue()
    assert "conv0(Convolution)" in text and "fc0(FullyConnected)" in text
    assert "Total params: 0" in text  # no shapes, no parameter sizes
