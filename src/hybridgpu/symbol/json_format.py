"""Symbol JSON in MXNet's format, both ways: ``to_json``/``save`` write exactly what MXNet 1.9
writes for the same symbol (byte for byte: node order, ``attrs`` placement, spacing), and
``fromjson``/``load`` read every layout MXNet 1.x still loads.

The layout: ``nodes`` (each ``{"op": name or "null", "name", "attrs"?, "inputs": [[node,
output, version], ...]}``) in depth-first post-order from the heads, ``arg_nodes`` (indices of
the variables), ``node_row_ptr`` (running count of every node's outputs), ``heads`` (the
symbol's outputs) and ``attrs.mxnet_version``. Older files still load: ``param``/``attr`` in
place of ``attrs``, inputs as ``[node, output]`` pairs, no ``node_row_ptr``, a
``backward_source_id`` key, graph-level keys written without underscores (``lr_mult`` for
``__lr_mult__``, before 1.9.1) and, before 0.9, auxiliary states left out of the file (they are
added back as variables ``<node>_<input>``, as MXNet does).

Malformed files raise ``MXNetError`` naming the node (index and name) and what is wrong.

Example:
    >>> import hybridgpu as mx
    >>> net = mx.sym.Activation(mx.sym.var("x"), act_type="relu", name="act")
    >>> text = net.tojson()
    >>> text.splitlines()[10]
    '      "attrs": {"act_type": "relu"}, '
    >>> again = mx.sym.load_json(text)
    >>> again.list_arguments(), again.tojson() == text
    (['x'], True)
"""

from __future__ import annotations

import json
import os
import weakref

from .. import ops
from ..base import MXNetError, dtype_of_flag
from ..graph import Entry, Node, topological_order
from ..ops.attrs import AttrError, DType, Float, Shape
from ..safe_text import check_storable, display
from ..serialization.files import atomic_write, read_regular
from ..util import is_np_shape
from .symbol import Symbol

__all__ = ["to_json", "save", "fromjson", "load", "load_json", "MXNET_VERSION"]

#: The version written to ``attrs.mxnet_version`` (MXNet 1.9.1).
MXNET_VERSION = 10901
# Files older than this lack auxiliary-state inputs (MXNet 0.9.0).
_AUX_IN_FILE_VERSION = 900
# Graph-level keys MXNet renames to ``__key__`` (files older than 1.9.1 may have them bare).
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")
# ``__init__`` MXNet gives the auxiliary-state variables it creates.
_AUX_INIT = {"moving_mean": '["zero", {}]', "moving_var": '["one", {}]'}


def _pooling_outputs(attrs):
    channels_first = attrs.get("layout") in (None, "NCW", "NCHW", "NCDHW")
    return 2 if attrs.get("pool_type") == "max" and channels_first else 1


# MXNet 1.9's pip wheels (built with oneDNN) count hidden outputs these ops have there (a max
# pooling workspace, LRN's scale, rrelu's mask) in ``node_row_ptr``; only the file shows them.
_ROW_OUTPUTS = {
    "Pooling": _pooling_outputs,
    "LRN": lambda attrs: 2,
    "LeakyReLU": lambda attrs: 2 if attrs.get("act_type") == "rrelu" else 1,
}

# Hints a variable may carry, parsed when a graph is inferred or trained: checked at load.
_HINTS = {"__shape__": Shape(), "__lr_mult__": Float(), "__wd_mult__": Float()}

_GRAPH_KEYS = ("nodes", "arg_nodes", "node_row_ptr", "heads", "attrs")
_GRAPH_REQUIRED = ("nodes", "arg_nodes", "heads")
_NODE_KEYS = ("op", "name", "inputs", "attrs", "attr", "param", "control_deps", "subgraphs",
              "backward_source_id")
_NODE_REQUIRED = ("op", "name", "inputs")

# Entry versions read from a file, so a loaded symbol writes them back unchanged:
# node -> (its input entries when loaded, their versions).
_LOADED_VERSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# The same for a loaded symbol's heads: id(symbol) -> (weak reference, outputs, versions).
# Keyed by id because Symbol's ``==`` builds an op node instead of comparing.
_LOADED_HEADS: dict = {}


# -- writing --------------------------------------------------------------------------------

class _Writer:
    """Writes JSON with MXNet's (dmlc's) spacing: items of a multi-line scope each start on a
    new line indented two spaces per open scope, separators are ``", "`` (so multi-line items
    end with a trailing space), and one-line scopes keep everything on one line."""

    def __init__(self):
        self.parts = []
        self.scopes = []  # [multi_line, items so far]

    def begin(self, bracket, multi_line):
        self.parts.append(bracket)
        self.scopes.append([multi_line, 0])

    def item(self, key=None):
        scope = self.scopes[-1]
        if scope[1]:
            self.parts.append(", ")
        scope[1] += 1
        if scope[0]:
            self.parts.append("\n" + "  " * len(self.scopes))
        if key is not None:
            self.parts.append(_quote(key) + ": ")

    def end(self, bracket):
        multi_line, count = self.scopes.pop()
        if multi_line and count:
            self.parts.append("\n" + "  " * len(self.scopes))
        self.parts.append(bracket)

    def value(self, value):
        self.parts.append(_quote(value) if isinstance(value, str) else str(int(value)))

    def array(self, values, multi_line=None):
        """An array of ints, strings or entry lists (one line unless more than 10 items)."""
        self.begin("[", len(values) > 10 if multi_line is None else multi_line)
        for v in values:
            self.item()
            if isinstance(v, (list, tuple)):
                self.array(v, multi_line=False)
            else:
                self.value(v)
        self.end("]")

    def string_map(self, mapping):
        """An object of strings, keys sorted, one line unless it has several keys."""
        self.begin("{", len(mapping) > 1)
        for key in sorted(mapping):
            self.item(key)
            self.value(mapping[key])
        self.end("}")


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text):
    """A JSON string as MXNet writes it (other characters raw; control characters escaped so
    the file stays valid JSON)."""
    out = []
    for ch in str(text):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _node_attrs(node):
    """The strings MXNet writes in a node's ``attrs``: given op attributes and graph-level
    ones, hidden keys always written ``__key__`` as MXNet stores them."""
    merged = {}
    for source in (node.given_attrs, node.extra):
        for key, value in source.items():
            if key in _HIDDEN_KEYS:
                key = f"__{key}__"
            merged[str(key)] = str(value)
    return merged


def _same_entries(a, b):
    return len(a) == len(b) and all(x.node is y.node and x.index == y.index
                                    for x, y in zip(a, b))


def _versions(nodes):
    """Entry versions per node: as loaded when the inputs are unchanged, else MXNet's count of
    how many times each variable has been mutated (as an auxiliary state) so far."""
    mutated, out = {}, {}
    for node in nodes:
        aux = set(node.op.aux) if node.op is not None else set()
        versions = []
        for name, e in zip(node.input_names(), node.inputs):
            if name in aux and e.node.is_variable:
                mutated[id(e.node)] = mutated.get(id(e.node), 0) + 1
                versions.append(mutated[id(e.node)])
            else:
                versions.append(0)
        versions += [0] * (len(node.inputs) - len(versions))
        loaded = _LOADED_VERSIONS.get(node)
        if loaded is not None and _same_entries(loaded[0], node.inputs):
            versions = list(loaded[1])
        out[id(node)] = versions
    return out


def _row_outputs(node):
    """How many outputs MXNet counts for ``node`` in ``node_row_ptr``."""
    extra = _ROW_OUTPUTS.get(node.op.name) if node.op is not None else None
    return max(node.num_outputs, extra(node.attrs) if extra else 1)


def _write_node(w, node, inputs):
    """One entry of ``nodes``: op, name, attrs (left out when empty), inputs."""
    w.item()
    w.begin("{", True)
    w.item("op")
    w.value("null" if node.op is None else node.op.name)
    w.item("name")
    w.value(node.name)
    attrs = _node_attrs(node)
    if attrs:
        w.item("attrs")
        w.string_map(attrs)
    w.item("inputs")
    w.array(inputs)
    w.end("}")


def to_json(symbol):
    """MXNet 1.9's JSON text for ``symbol``, byte for byte what ``mxnet.sym.tojson()`` gives.

    Example:
        >>> import hybridgpu as mx
        >>> import json
        >>> doc = json.loads(to_json(mx.sym.var("x") * 2))
        >>> [n["op"] for n in doc["nodes"]], doc["heads"], doc["attrs"]
        (['null', '_mul_scalar'], [[1, 0, 0]], {'mxnet_version': ['int', 10901]})
    """
    if not isinstance(symbol, Symbol):
        raise TypeError(f"to_json expects a Symbol, got {type(symbol).__name__}")
    nodes = topological_order(symbol._outputs)
    index = {id(n): i for i, n in enumerate(nodes)}
    versions = _versions(nodes)
    w = _Writer()
    w.begin("{", True)
    w.item("nodes")
    w.begin("[", True)
    for node in nodes:
        _write_node(w, node, [[index[id(e.node)], e.index, v]
                              for e, v in zip(node.inputs, versions[id(node)])])
    w.end("]")
    w.item("arg_nodes")
    w.array([i for i, n in enumerate(nodes) if n.is_variable])
    row_ptr = [0]
    for node in nodes:
        row_ptr.append(row_ptr[-1] + _row_outputs(node))
    w.item("node_row_ptr")
    w.array(row_ptr)
    loaded = _LOADED_HEADS.get(id(symbol))
    head_versions = [0] * len(symbol._outputs)
    if loaded is not None and loaded[0]() is symbol and _same_entries(loaded[1],
                                                                      symbol._outputs):
        head_versions = list(loaded[2])
    w.item("heads")
    w.array([[index[id(e.node)], e.index, v] for e, v in zip(symbol._outputs, head_versions)])
    w.item("attrs")
    np_shape = is_np_shape()  # MXNet marks files written with NumPy shape semantics on
    w.begin("{", np_shape)
    if np_shape:
        w.item("is_np_shape")
        w.array(["int", 1], multi_line=False)
    w.item("mxnet_version")
    w.array(["int", MXNET_VERSION], multi_line=False)
    w.end("}")
    w.end("}")
    return "".join(w.parts)


def save(symbol, fname):
    """Write ``to_json(symbol)`` to ``fname`` atomically (``serialization.files``: a
    temporary file in the same folder, then a rename, so a crash never leaves half a file;
    mode 0644 less the umask, as MXNet's; leftovers of killed saves removed)."""
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname must be a string or path, got {type(fname).__name__}")
    data = to_json(symbol).encode("utf-8")
    atomic_write(os.fspath(fname), lambda stream: stream.write(data))


# -- reading --------------------------------------------------------------------------------

class _Loader:
    """One file being read: ``where`` prefixes every error (the file name, when known)."""

    def __init__(self, where):
        self.where = where

    def fail(self, what):
        return MXNetError(f"{self.where}: {what}")

    def node_fail(self, i, name, what):
        label = f"node {i}" + (f" {name!r}" if isinstance(name, str) else "")
        return self.fail(f"{label}: {what}")

    # -- the document ----------------------------------------------------------------------
    def parse(self, text):
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as err:
                raise self.fail(f"not UTF-8 text ({err})") from None
        if not isinstance(text, str):
            raise TypeError(f"load_json expects a JSON string, got {type(text).__name__}")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            raise self.fail(f"not valid JSON: {err.msg} at line {err.lineno} column "
                            f"{err.colno}; a symbol file is the JSON text that "
                            "Symbol.save / tojson writes") from None
        except RecursionError:
            raise self.fail("the JSON is nested too deeply to read (a symbol file nests "
                            "objects and lists only a few levels deep)") from None
        if not isinstance(doc, dict):
            raise self.fail(f"expected a JSON object with keys {list(_GRAPH_REQUIRED)}, "
                            f"got {type(doc).__name__}")
        unknown = [k for k in doc if k not in _GRAPH_KEYS]
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r}; a symbol file has the keys "
                            f"{list(_GRAPH_KEYS)}")
        missing = [k for k in _GRAPH_REQUIRED if k not in doc]
        if missing:
            raise self.fail(f"missing key {missing[0]!r} (a symbol file needs "
                            f"{list(_GRAPH_REQUIRED)})")
        for key in ("nodes", "arg_nodes", "heads"):
            if not isinstance(doc[key], list):
                raise self.fail(f"{key!r} must be a list, got {type(doc[key]).__name__}")
        return doc

    def version(self, doc):
        """``attrs.mxnet_version`` (``["int", 10901]``); files without it are MXNet 0.8."""
        attrs = doc.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise self.fail(f"'attrs' must be an object, got {type(attrs).__name__}")
        value = attrs.get("mxnet_version")
        if value is None:
            return 800
        if (isinstance(value, list) and len(value) == 2 and isinstance(value[1], int)
                and not isinstance(value[1], bool)):
            return value[1]
        raise self.fail(f"attrs.mxnet_version must look like [\"int\", {MXNET_VERSION}], got "
                        f"{value!r}")

    # -- nodes ---------------------------------------------------------------------------
    def node_fields(self, i, raw, version):
        """``(op name, name, attribute strings, raw inputs)`` of node ``i``, checked."""
        if not isinstance(raw, dict):
            raise self.node_fail(i, None, f"expected an object, got {type(raw).__name__}")
        name = raw.get("name")
        unknown = [k for k in raw if k not in _NODE_KEYS]
        if unknown:
            raise self.node_fail(i, name, f"unknown key {unknown[0]!r}; a node has the keys "
                                          f"{list(_NODE_KEYS)}")
        missing = [k for k in _NODE_REQUIRED if k not in raw]
        if missing:
            raise self.node_fail(i, name, f"missing key {missing[0]!r} (every node needs "
                                          f"{list(_NODE_REQUIRED)})")
        for key in ("op", "name"):
            if not isinstance(raw[key], str):
                raise self.node_fail(i, name, f"{key!r} must be a string, got {raw[key]!r}")
        if not isinstance(raw["inputs"], list):
            raise self.node_fail(i, name, f"'inputs' must be a list, got {raw['inputs']!r}")
        if raw.get("subgraphs"):
            raise self.node_fail(i, name, f"op {raw['op']} has subgraphs (control flow: "
                                          "foreach, while_loop, cond), which are not supported")
        # "attr" and "attrs" replace each other (the last one wins); "param" sits beneath.
        strings = dict(self.string_map(i, name, raw, "param"))
        last = [k for k in raw if k in ("attr", "attrs")]
        if last:
            strings.update(self.string_map(i, name, raw, last[-1]))
        self.check_text(i, raw, strings)
        if version < MXNET_VERSION:
            strings = {f"__{k}__" if k in _HIDDEN_KEYS else k: v for k, v in strings.items()}
        return raw["op"], name, strings, raw["inputs"]

    def check_text(self, i, raw, strings):
        """Refuse strings that could not be written back (lone surrogates), now rather than
        from inside a compiler or a later save."""
        try:
            check_storable(raw["name"], "name")
            check_storable(raw["op"], "op")
            for key, value in strings.items():
                check_storable(key, "attribute key")
                check_storable(value, f"attribute {display(key)}")
        except MXNetError as err:
            raise self.fail(f"node {i}: {err}") from None

    def check_hints(self, i, name, strings):
        """Refuse a variable's ``__shape__``/``__lr_mult__``/``__wd_mult__``/``__dtype__``
        that later steps could not read, now, naming the node."""
        for key, spec in _HINTS.items():
            if key not in strings:
                continue
            try:
                spec.parse(strings[key])
            except AttrError as err:
                raise self.node_fail(i, name, f"attribute {key}={strings[key][:60]!r} is "
                                              f"malformed: {err}") from None
        flag = strings.get("__dtype__")
        if flag is not None and dtype_of_flag(flag) is None:
            try:
                DType().parse(flag)
            except AttrError:
                raise self.node_fail(i, name, f"attribute __dtype__={flag[:60]!r} is neither "
                                              "a dtype flag MXNet writes (0 float32 ... 7 "
                                              "bool) nor a dtype name") from None

    def string_map(self, i, name, raw, key):
        value = raw.get(key) or {}
        if not isinstance(value, dict):
            raise self.node_fail(i, name, f"{key!r} must be an object of strings, got "
                                          f"{value!r}")
        for k, v in value.items():
            if not isinstance(v, str):
                raise self.node_fail(i, name, f"attribute {k!r} must be a string (MXNet "
                                              f"writes every attribute as one), got {v!r}")
        return value

    def entry(self, i, name, raw, count, what):
        """``(node index, output index, version)`` from ``[n, k]`` or ``[n, k, version]``."""
        if (not isinstance(raw, list) or len(raw) not in (2, 3)
                or any(not isinstance(v, int) or isinstance(v, bool) for v in raw)):
            raise self.node_fail(i, name, f"{what} {raw!r} is not [node, output] or "
                                          "[node, output, version] (integers)")
        if not 0 <= raw[0] < count:
            raise self.node_fail(i, name, f"{what} {raw!r} names node {raw[0]}, but the file "
                                          f"has nodes 0..{count - 1}")
        if raw[1] < 0:
            raise self.node_fail(i, name, f"{what} {raw!r} has a negative output index")
        return raw[0], raw[1], raw[2] if len(raw) == 3 else 0

    def make_node(self, i, op_name, name, strings, n_inputs):
        """A Node (inputs still empty) for node ``i``."""
        if op_name == "null":
            if n_inputs:
                raise self.node_fail(i, name, f"a variable (op \"null\") cannot have inputs, "
                                              f"it has {n_inputs}")
            self.check_hints(i, name, strings)
            return Node.variable(name, extra=strings)
        try:
            op = ops.get(op_name)
        except MXNetError as err:
            raise self.node_fail(i, name, str(err)) from None
        given = {k: v for k, v in strings.items() if not (k.startswith("__")
                                                          and k.endswith("__"))}
        extra = {k: v for k, v in strings.items() if k not in given}
        bare = [k for k in given if k in _HIDDEN_KEYS]
        if bare:
            raise self.node_fail(i, name, f"attribute {bare[0]!r} of {op_name}: a file of "
                                          f"mxnet_version {MXNET_VERSION} writes graph-level "
                                          f"attributes as '__{bare[0]}__'; rename the key")
        try:
            attrs = op.parse_attrs(given, n_inputs if op.variadic else None)
        except MXNetError as err:
            why = str(err).removeprefix(f"{op.name}: ")
            raise self.node_fail(i, name, f"bad attributes for {op_name}: {why}") from None
        return Node(op, name, attrs, [], given_attrs=given, extra=extra)


def _add_missing_aux(node, strings, made):
    """Files older than MXNet 0.9 leave auxiliary states out: add them as variables
    ``<node>_<input>`` carrying the node's attributes, as MXNet does."""
    names = node.op.input_names(node.attrs)
    for input_name in names[len(made):]:
        extra = dict(strings)
        if input_name in _AUX_INIT and "__init__" not in extra:
            extra["__init__"] = _AUX_INIT[input_name]
        made.append((Node.variable(f"{node.name}_{input_name}", extra=extra), 0, 0))


def _link(loader, nodes, entries):
    """Fill every node's inputs; check counts, output indices and cycles."""
    for i, node in enumerate(nodes):
        if node.op is None:
            continue
        expected = node.op.input_names(node.attrs)
        if len(entries[i]) != len(expected):
            raise loader.node_fail(i, node.name, f"{node.op.name} takes {len(expected)} inputs "
                                                 f"{list(expected)}, the file gives "
                                                 f"{len(entries[i])}")
        inputs = []
        for k, (src, index, _) in enumerate(entries[i]):
            src_node = src if isinstance(src, Node) else nodes[src]
            if index >= src_node.num_outputs:
                raise loader.node_fail(i, node.name, f"input {k} ({expected[k]}) reads output "
                                                     f"{index} of {src_node.name!r}, which has "
                                                     f"{src_node.num_outputs}")
            inputs.append(Entry(src_node, index))
        node.inputs = inputs
        _LOADED_VERSIONS[node] = (tuple(inputs), tuple(v for _, _, v in entries[i]))
    _check_cycles(loader, nodes, entries)


def _check_cycles(loader, nodes, entries):
    """Raise when a node reads itself through its inputs: an iterative depth-first search
    that visits every input entry once (linear in the file's size, no recursion, so a
    100,000-input ``add_n`` or a 100,000-node chain is checked in one pass)."""
    sources = [[s for s, _, _ in made if not isinstance(s, Node)] for made in entries]
    state = [0] * len(nodes)  # 0: unseen, 1: open (on the path), 2: done
    for start in range(len(nodes)):
        if state[start]:
            continue
        state[start] = 1
        stack = [(start, iter(sources[start]))]
        while stack:
            i, pending = stack[-1]
            for j in pending:
                if state[j] == 1:
                    what = ("reads its own output" if j == i else
                            f"reads node {j} {nodes[j].name!r}, which depends on it")
                    raise loader.node_fail(i, nodes[i].name, f"{what}: the graph has a cycle")
                if state[j] == 0:
                    state[j] = 1
                    stack.append((j, iter(sources[j])))
                    break
            else:
                state[i] = 2
                stack.pop()


def _build(loader, doc):
    """The Symbol of a parsed document."""
    version = loader.version(doc)
    raw_nodes = doc["nodes"]
    count = len(raw_nodes)
    nodes, entries = [], []
    for i, raw in enumerate(raw_nodes):
        op_name, name, strings, raw_inputs = loader.node_fields(i, raw, version)
        made = [loader.entry(i, name, e, count, f"input {k}") for k, e in enumerate(raw_inputs)]
        node = loader.make_node(i, op_name, name, strings, len(made))
        if (node.op is not None and version < _AUX_IN_FILE_VERSION and node.op.aux
                and len(made) < len(node.op.input_names(node.attrs))):
            _add_missing_aux(node, strings, made)
        nodes.append(node)
        entries.append(made)
    _link(loader, nodes, entries)
    for k, raw in enumerate(doc["arg_nodes"]):
        if not isinstance(raw, int) or not 0 <= raw < count or not nodes[raw].is_variable:
            raise loader.fail(f"arg_nodes[{k}] = {raw!r} is not the index of a variable "
                              "node")
    heads, head_versions = [], []
    for k, raw in enumerate(doc["heads"]):
        if (not isinstance(raw, list) or len(raw) not in (2, 3)
                or any(not isinstance(v, int) or isinstance(v, bool) for v in raw)):
            raise loader.fail(f"heads[{k}] = {raw!r} is not [node, output, version]")
        if not 0 <= raw[0] < count:
            raise loader.fail(f"heads[{k}] = {raw!r} names node {raw[0]}, but the file has "
                              f"nodes 0..{count - 1}")
        node = nodes[raw[0]]
        if not 0 <= raw[1] < node.num_outputs:
            raise loader.fail(f"heads[{k}] = {raw!r} reads output {raw[1]} of node {raw[0]} "
                              f"{node.name!r}, which has {node.num_outputs}")
        heads.append(Entry(node, raw[1]))
        head_versions.append(raw[2] if len(raw) == 3 else 0)
    if not heads:
        raise loader.fail("'heads' is empty: the file names no output")
    symbol = Symbol(heads)
    if any(head_versions):
        key = id(symbol)
        ref = weakref.ref(symbol, lambda _: _LOADED_HEADS.pop(key, None))
        _LOADED_HEADS[key] = (ref, tuple(heads), tuple(head_versions))
    return symbol


def fromjson(json_str):
    """The Symbol described by ``json_str`` (MXNet 1.x JSON, any layout MXNet loads).

    Example:
        >>> import hybridgpu as mx
        >>> net = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
        >>> fromjson(net.tojson()).list_arguments()
        ['x', 'fc_weight', 'fc_bias']
    """
    loader = _Loader("cannot load symbol JSON")
    return _build(loader, loader.parse(json_str))


def load_json(json_str):
    """The Symbol described by a JSON string (``mx.sym.load_json``)."""
    return fromjson(json_str)


def load(fname):
    """The Symbol saved in the file ``fname`` (by ``Symbol.save`` or MXNet's
    ``export``/``save``)."""
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"fname must be a string or path, got {type(fname).__name__}")
    loader = _Loader(f"cannot load symbol file {os.fspath(fname)!r}")

    def check_header(head, size):
        start = head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
        if start and start != b"{":
            raise loader.fail(f"not a symbol file: it starts with {head[:16]!r}, but a "
                              "symbol file is a JSON object (it starts with '{')")

    data = read_regular(fname, "symbol file", 64, check_header, verb="read")
    return _build(loader, loader.parse(data))
