"""``mx.viz``: a network as a table (``print_summary``) or a picture (``plot_network``).

``print_summary(symbol, shape)`` prints MXNet's layer table: each layer with its output shape
(without the batch axis), its parameter count and the layers it reads. ``plot_network`` returns a
``graphviz.Digraph`` (the ``graphviz`` Python package; rendering to PDF/SVG needs Graphviz's
``dot`` program) with MXNet's node colours and labels, and the shapes on the edges when
``shape`` is given. Node names are data: they are escaped, so no name can change the DOT.

Example:
    >>> import hybridgpu as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
    >>> print_summary(net, shape={"data": (2, 5)}, line_length=80)  # doctest: +NORMALIZE_WHITESPACE
    ________________________________________________________________________________
    Layer (type)                       Output Shape    Param # Previous Layer
    ================================================================================
    data(null)                         5               0
    ________________________________________________________________________________
    fc(FullyConnected)                 3               18      data
    ================================================================================
    Total params: 18
    ________________________________________________________________________________
"""

from __future__ import annotations

import numpy as np

from .base import MXNetError
from .graph import Graph

__all__ = ["print_summary", "plot_network"]

# MXNet's colours: variables, conv/fc, activations, batch norm, pooling, shape ops, the rest.
_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#fccde5")
_COLOR_OF = {"Convolution": 1, "FullyConnected": 1, "Activation": 2, "LeakyReLU": 2,
             "BatchNorm": 3, "Pooling": 4, "Concat": 5, "Flatten": 5, "Reshape": 5}
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")


def _entry_shapes(symbol, shape):
    """``{(node id, output index): shape}`` of every value, from ``shape`` (input name ->
    shape); empty without ``shape``."""
    if not shape:
        return {}
    if not isinstance(shape, dict):
        raise TypeError(f"mx.viz: shape must be a dict of input name -> shape, got "
                        f"{type(shape).__name__}")
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape(**shape)
    if out_shapes is None:
        raise MXNetError(f"mx.viz: cannot infer the shapes of the network from {shape}")
    return {(id(e.node), e.index): s for e, s in zip(internals._outputs, out_shapes)}


def _entry_dtypes(symbol, dtype):
    if not dtype:
        return {}
    internals = symbol.get_internals()
    _, out_types, _ = internals.infer_type(**dtype)
    return {(id(e.node), e.index): np.dtype(t).name
            for e, t in zip(internals._outputs, out_types or []) if t is not None}


def _dims(shape):
    return "x".join(str(d) for d in shape[1:])


# -- print_summary ----------------------------------------------------------------------------

def _row(fields, positions):
    line = ""
    for field, end in zip(fields, positions):
        line = (line + str(field))[:end]
        line += " " * (end - len(line))
    return line


_LEARNED_INPUTS = ("weight", "bias", "gamma", "beta")


def _layer_params(node, shapes):
    """Parameters of an op node: the sizes of its learned variable inputs (weight, bias,
    gamma, beta); 0 when their shapes are unknown."""
    total = 0
    for input_name, entry in zip(node.input_names(), node.inputs):
        if entry.node.is_variable and input_name in _LEARNED_INPUTS:
            total += int(np.prod(shapes.get((id(entry.node), 0), (0,))))
    return total


def print_summary(symbol, shape=None, line_length=120, positions=(0.44, 0.64, 0.74, 1.0)):
    """Print the layer table of ``symbol``; ``shape`` (input name -> shape) adds the output
    shapes and the parameter counts. ``positions`` are the column ends as fractions of
    ``line_length``.

    Example:
        >>> import hybridgpu as mx
        >>> net = mx.sym.Activation(mx.sym.var("x"), act_type="relu", name="r")
        >>> print_summary(net, line_length=80)  # doctest: +NORMALIZE_WHITESPACE
        ________________________________________________________________________________
        Layer (type)                       Output Shape    Param # Previous Layer
        ================================================================================
        x(null)                                            0
        ________________________________________________________________________________
        r(Activation)                                      0       x
        ================================================================================
        Total params: 0
        ________________________________________________________________________________
    """
    from .symbol import Symbol

    if not isinstance(symbol, Symbol):
        raise TypeError(f"print_summary: symbol must be a Symbol, got {type(symbol).__name__}")
    shapes = _entry_shapes(symbol, shape)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    graph = Graph(symbol._outputs)
    # MXNet's rule for the variables listed as previous layers: those whose node index is in
    # the first output's [node, index, version] triple (in practice: the data, node 0).
    head = graph.outputs[0]
    first_head = {graph.index[id(head.node)], head.index, 0}
    lines = ["_" * line_length,
             _row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], positions),
             "=" * line_length]
    total = 0
    shown = [(i, n) for i, n in enumerate(graph.nodes) if not n.is_variable or i == 0]
    for k, (_, node) in enumerate(shown):
        kind = "null" if node.is_variable else node.op.name
        previous = [e.node for e in node.inputs
                    if not e.node.is_variable or graph.index[id(e.node)] in first_head]
        out = shapes.get((id(node), 0))
        params = 0 if node.is_variable else _layer_params(node, shapes)
        total += params
        names = [p.name for p in previous]
        lines.append(_row([f"{node.name}({kind})", _dims(out) if out else "", params,
                           names[0] if names else ""], positions))
        lines += [_row(["", "", "", name], positions) for name in names[1:]]
        lines.append(("=" if k == len(shown) - 1 else "_") * line_length)
    lines += [f"Total params: {total}", "_" * line_length]
    print("\n".join(lines))


# -- plot_network -----------------------------------------------------------------------------

def _label(node):
    """MXNet's node label: the op and its main attributes for the common layers."""
    attrs, op = node.given_attrs, node.op.name
    kernel = "x".join(str(k) for k in node.attrs.get("kernel") or ())
    stride = "x".join(str(s) for s in node.attrs.get("stride") or ()) \
        if "stride" in attrs else "1"
    if op == "Convolution":
        return f"Convolution\n{kernel}/{stride}, {node.attrs['num_filter']}"
    if op == "FullyConnected":
        return f"FullyConnected\n{node.attrs['num_hidden']}"
    if op in ("Activation", "LeakyReLU"):
        return f"{op}\n{node.attrs.get('act_type')}"
    if op == "Pooling":
        return f"Pooling\n{node.attrs.get('pool_type')}, {kernel}/{stride}"
    if op == "Custom":
        return str(node.attrs["op_type"])
    return node.name


def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise ImportError("mx.viz.plot_network needs the graphviz Python package: "
                          "pip install graphviz (and Graphviz's dot program to render)") from None
    return graphviz


def _looks_like_weight(name):
    return name.endswith(_WEIGHT_SUFFIXES)


def plot_network(symbol, title="plot", save_format="pdf", shape=None, dtype=None,
                 node_attrs=None, hide_weights=True):
    """A ``graphviz.Digraph`` of ``symbol`` (render it with ``.render()`` or view its
    ``.source``). ``shape``/``dtype`` (input name -> shape/dtype) label the edges; weights
    and biases are left out when ``hide_weights``; ``node_attrs`` override the node style.

    Example:
        >>> import hybridgpu as mx
        >>> net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc")
        >>> dot = plot_network(net, shape={"data": (2, 5)})
        >>> type(dot).__name__, "fc -> data" in dot.source
        ('Digraph', True)
    """
    from .symbol import Symbol

    if not isinstance(symbol, Symbol):
        raise TypeError(f"plot_network: symbol must be a Symbol, got {type(symbol).__name__}")
    graphviz = _graphviz()
    shapes, dtypes = _entry_shapes(symbol, shape), _entry_dtypes(symbol, dtype)
    style = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034",
             "style": "filled", **(node_attrs or {})}
    dot = graphviz.Digraph(name=graphviz.escape(str(title)), format=save_format)
    hidden = set()
    graph = Graph(symbol._outputs)
    for node in graph.nodes:
        name = graphviz.escape(node.name)
        if node.is_variable:
            if _looks_like_weight(node.name):
                if hide_weights:
                    hidden.add(id(node))
                continue  # MXNet draws an unstyled oval from the edge alone
            dot.node(name=name, label=name, **{**style, "shape": "oval",
                                               "fillcolor": _COLORS[0]})
            continue
        color = _COLORS[_COLOR_OF.get(node.op.name, 6)]
        dot.node(name=name, label=graphviz.escape(_label(node)),
                 **{**style, "fillcolor": color})
    for node in graph.nodes:
        for entry in node.inputs:
            if id(entry.node) in hidden:
                continue
            key = (id(entry.node), entry.index)
            label = _dims(shapes[key]) if key in shapes else ""
            if key in dtypes:
                label += f"({dtypes[key]})"
            dot.edge(graphviz.escape(node.name), graphviz.escape(entry.node.name),
                     label=graphviz.escape(label), dir="back", arrowtail="open")
    return dot
