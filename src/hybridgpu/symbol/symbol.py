"""``Symbol``: a handle on outputs of a graph (MXNet 1.x's symbolic API).

A Symbol holds a list of ``Entry`` (node, output index) of the graph IR in ``hybridgpu.graph``;
ops applied to Symbols add nodes. Symbols made from variables of known shape expose ``.shape``
and ``.dtype`` (MXNet cannot), so ``hybrid_forward`` code can read ``x.shape`` while tracing.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("data")
    >>> y = mx.sym.FullyConnected(x, num_hidden=10, name="fc")
    >>> y, y.list_arguments()
    (<Symbol fc>, ['data', 'fc_weight', 'fc_bias'])
"""

from __future__ import annotations

import copy
import numbers

from .. import attribute, modes, numpy_interop, ops
from .. import name as naming
from ..base import MXNetError, NotImplementedForSymbol
from ..graph import Entry, Graph, Node, infer_shapes, infer_types, unknown_inputs

__all__ = ["Symbol", "apply_op", "NotAvailableOnSymbol", "string_attrs"]

# Keys MXNet lists both as ``__key__`` and ``key`` in list_attr.
_HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage")


class NotAvailableOnSymbol(NotImplementedForSymbol):  # noqa: N818  (public name)
    """An NDArray-only operation (a value, an in-place op) used on a Symbol."""


def _no_value(what, instead):
    def method(self, *args, **kwargs):
        raise NotAvailableOnSymbol(
            f"{what} is not available on Symbol {self.name or '(group)'}: a Symbol has no value "
            f"while the graph is built (inside a hybridized hybrid_forward); {instead}")

    method.__name__ = what
    return method


def apply_op(op, hint, inputs, attrs, given, name=None, attr=None):
    """A Symbol for ``op`` applied to ``inputs`` (an ordered list: Symbols or None, None
    making a variable named ``<node>_<input>`` as MXNet does). ``given`` are the attributes the
    caller passed, written to JSON."""
    node_name = naming.current().get(name, hint)
    text_attrs = op.format_attrs(given)
    extra = _graph_attrs(op, attribute.current().get(attr))
    entries = [_input_entry(op, node_name, input_name, value, {**text_attrs, **extra})
               for input_name, value in zip(op.input_names(attrs), inputs)]
    node = Node(op, node_name, attrs, entries, given_attrs=text_attrs, extra=extra)
    return Symbol([Entry(node, i) for i in range(node.num_visible_outputs)])


def _graph_attrs(op, attrs):
    """``attr=``/AttrScope attributes as MXNet stores them: hidden keys (``lr_mult``) get
    underscores; an op with an attribute schema refuses other plain keys (MXNet hands them to
    its parameter parser), an op without one keeps them."""
    out = {}
    for key, value in attrs.items():
        if key in _HIDDEN_KEYS:
            key = f"__{key}__"
        elif op.attrs and not (key.startswith("__") and key.endswith("__")):
            raise MXNetError(f"{op.name}: Cannot find argument {key!r} (from attr= or "
                             f"AttrScope); {op.name}'s arguments are {sorted(op.attrs)}; "
                             f"name graph attributes like __{key}__")
        out[key] = str(value)
    return out


def _input_entry(op, node_name, input_name, value, var_attrs):
    """The Entry an input reads: a new variable for a missing input (carrying the op's and
    scope's attributes, as MXNet does), else the single output of the given Symbol. Variables
    of inputs with a default initializer get its ``__init__`` unless they have one."""
    init = op.input_init.get(input_name)
    if value is None:
        extra = {"__init__": init} if init else {}
        extra.update(var_attrs)
        return Entry(Node.variable(f"{node_name}_{input_name}", extra=extra), 0)
    if not isinstance(value, Symbol):
        raise TypeError(f"{op.name}: input {input_name!r} must be a Symbol, got "
                        f"{type(value).__name__}")
    if len(value._outputs) != 1:
        raise MXNetError(f"{op.name}: input {input_name!r} is a group of "
                         f"{len(value._outputs)} outputs; pick one with [i]")
    entry = value._outputs[0]
    if init and entry.node.is_variable and "__init__" not in entry.node.extra:
        entry.node.extra["__init__"] = init
    return entry


def _operator(array_op, scalar_op, rscalar_op=None, strict=False):
    def method(self, other):
        if isinstance(other, Symbol):
            return _call(array_op, [self, other], {})
        if isinstance(other, numbers.Number):
            return _call(scalar_op, [self], {"scalar": other})
        if strict:  # == and != would otherwise fall back to identity and answer False
            raise TypeError(f"type {type(other)} not supported")
        return NotImplemented

    def reflected(self, other):
        if isinstance(other, numbers.Number):
            return _call(rscalar_op or scalar_op, [self], {"scalar": other})
        return NotImplemented

    return method, reflected


def _call(called_name, inputs, given):
    op = ops.get(called_name)
    attrs = op.parse_attrs(given, len(inputs) if op.variadic else None)
    return apply_op(op, called_name.lower(), inputs, attrs, given)


class Symbol:
    """Outputs of a graph. Build with ``sym.var`` and ``sym.<op>``; combine with operators.

    Example:
        >>> import hybridgpu as mx
        >>> a, b = mx.sym.var("a"), mx.sym.var("b")
        >>> (a + b * 2).list_arguments()
        ['a', 'b']
    """

    __slots__ = ("_outputs", "__weakref__")

    def __init__(self, outputs):
        self._outputs = [Entry(*e) for e in outputs]

    # -- names and structure -------------------------------------------------------------
    @property
    def name(self):
        """The name of the node whose outputs these are; None for a group of several nodes."""
        nodes = {id(e.node) for e in self._outputs}
        return self._outputs[0].node.name if len(nodes) == 1 else None

    def _graph(self):
        return Graph(self._outputs)

    def list_outputs(self):
        """Output names: ``<node>_output`` (``<node>_output0``...), a variable's own name."""
        names = []
        for e in self._outputs:
            if e.node.is_variable:
                names.append(e.node.name)
            else:
                out = e.node.op.output_names(e.node.attrs)[e.index]
                names.append(f"{e.node.name}_{out}")
        return names

    def _aux_variable_ids(self, graph):
        aux = set()
        for node in graph.nodes:
            if node.op is not None and node.op.aux:
                for input_name, e in zip(node.input_names(), node.inputs):
                    if input_name in node.op.aux and e.node.is_variable:
                        aux.add(id(e.node))
        return aux

    def list_arguments(self):
        """Names of the variables that are not auxiliary states, in topological order."""
        graph = self._graph()
        aux = self._aux_variable_ids(graph)
        return [n.name for n in graph.variables if id(n) not in aux]

    def list_auxiliary_states(self):
        """Names of the auxiliary-state variables (BatchNorm's moving statistics)."""
        graph = self._graph()
        aux = self._aux_variable_ids(graph)
        return [n.name for n in graph.variables if id(n) in aux]

    def list_inputs(self):
        """Every variable's name (arguments and auxiliary states), in topological order."""
        return [n.name for n in self._graph().variables]

    def get_internals(self):
        """A group of every output of every node, in topological order."""
        return Symbol([Entry(n, i) for n in self._graph().nodes
                       for i in range(n.num_visible_outputs)])

    def get_children(self):
        """A group of the inputs of this symbol's node(s); None for a variable."""
        nodes = {id(e.node): e.node for e in self._outputs}.values()
        entries = [i for node in nodes for i in node.inputs]
        return Symbol(entries) if entries else None

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([e]) for e in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            matches = [i for i, n in enumerate(self.list_outputs()) if n == index]
            if not matches:
                raise ValueError(f'Cannot find output that matches name "{index}"; outputs '
                                 f"are {self.list_outputs()}")
            if len(matches) > 1:
                raise ValueError(f"There are multiple outputs with name {index!r}")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not isinstance(index, numbers.Integral):
            raise TypeError(f"Symbol index must be an int, slice or output name, got "
                            f"{type(index).__name__}")
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f"Symbol index {index} out of range for {len(self)} outputs")
        return Symbol([self._outputs[index]])

    def __repr__(self):
        if self.name is not None:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(e.node.name for e in self._outputs)}]>"

    # -- attributes ----------------------------------------------------------------------
    def _single_node(self, what):
        if self.name is None:
            raise MXNetError(f"{what} needs a symbol of one node, not a group")
        return self._outputs[0].node

    def attr(self, key):
        """The attribute ``key`` of this symbol's node as a string, or None (always None on a
        group of several nodes, as in MXNet)."""
        if self.name is None:
            return None
        return _listed(self._outputs[0].node).get(key)

    def list_attr(self, recursive=False):
        """The node's attributes (strings). ``recursive=True`` is gone since MXNet 1.x: use
        ``attr_dict()``."""
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been "
                                     "deprecated. Please use attr_dict instead.")
        node = self._single_node("list_attr")
        return _listed(node)

    def attr_dict(self):
        """``{node name: attributes}`` for every node that has attributes."""
        return {n.name: _listed(n) for n in self._graph().nodes if _listed(n)}

    def _set_attr(self, **kwargs):
        """Set string attributes on this symbol's node."""
        node = self._single_node("_set_attr")
        node.extra.update(string_attrs(kwargs))

    # -- composition and copies ----------------------------------------------------------
    def __copy__(self):
        return copy.deepcopy(self)

    def __deepcopy__(self, memo):
        clones = {}
        for node in self._graph().nodes:
            clones[id(node)] = Node(node.op, node.name, dict(node.attrs),
                                    [Entry(clones[id(e.node)], e.index) for e in node.inputs],
                                    given_attrs=node.given_attrs, extra=node.extra)
        return Symbol([Entry(clones[id(e.node)], e.index) for e in self._outputs])

    def __reduce__(self):
        # pickled as its MXNet JSON, as MXNet pickles a Symbol (the graph holds op functions)
        return Symbol._from_json, (self.tojson(),)

    @staticmethod
    def _from_json(text):
        from .json_format import fromjson

        return fromjson(text)

    def __call__(self, *args, **kwargs):
        """A copy with variables replaced by other symbols (positional: in
        ``list_arguments`` order; keyword: by variable name)."""
        name = kwargs.pop("name", None)
        clone = copy.deepcopy(self)
        clone._compose(*args, name=name, **kwargs)
        return clone

    def _compose(self, *args, **kwargs):
        """Replace variables of this symbol, in place, by other symbols."""
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or "
                            "keyword arguments, not both")
        for value in (*args, *kwargs.values()):
            if not isinstance(value, Symbol) or len(value) != 1:
                raise TypeError(f"compose expects single-output Symbols, got {value!r}")
        arguments = self.list_arguments()
        if len(args) > len(arguments):
            raise MXNetError(f"compose: {len(args)} positional inputs for {len(arguments)} "
                             f"arguments {arguments}")
        unknown = [k for k in kwargs if k not in self.list_inputs()]
        if unknown:
            raise MXNetError(f"Keyword argument name {unknown[0]} not found; the inputs are "
                             f"{self.list_inputs()}")
        replace = dict(zip(arguments, args)) if args else kwargs
        graph = self._graph()
        for node in graph.nodes:  # inputs change: shapes found before may not hold
            node.shape_cache.clear()
        for node in graph.nodes:
            node.inputs = [replace[e.node.name]._outputs[0]
                           if e.node.is_variable and e.node.name in replace else e
                           for e in node.inputs]
        self._outputs = [replace[e.node.name]._outputs[0]
                         if e.node.is_variable and e.node.name in replace else e
                         for e in self._outputs]
        if name is not None and self.name is not None:
            self._outputs[0].node.name = name

    # -- shapes and types ----------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from input shapes (positional in
        ``list_arguments`` order, or by name); ``(None, None, None)`` when some stay unknown."""
        return self._infer_shape(args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        """Like ``infer_shape`` but unknown shapes come back as ``()``."""
        return self._infer_shape(args, kwargs, partial=True)

    def _infer_shape(self, args, kwargs, partial):
        modes.note_read("shape")
        given = self._given("infer_shape", args, kwargs)
        for key, shape in given.items():
            if shape is not None and not isinstance(shape, (tuple, list)):
                raise TypeError(f"Arguments need to be shapes (tuple), but {key!r} is "
                                f"{type(shape)}.")
        graph = self._graph()
        infer_shapes(graph, {k: v for k, v in given.items() if v is not None})
        if not partial and unknown_inputs(graph):
            return None, None, None
        return self._triples(graph, graph.shapes, () if partial else None)

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)`` as NumPy types from input dtypes;
        ``(None, None, None)`` when some stay unknown."""
        triples = self.infer_type_partial(*args, **kwargs)
        if any(t is None for part in triples for t in part):
            return None, None, None
        return triples

    def infer_type_partial(self, *args, **kwargs):
        """Like ``infer_type`` but unknown types come back as None."""
        import numpy as np

        modes.note_read("dtype")
        given = self._given("infer_type", args, kwargs)
        graph = self._graph()
        infer_types(graph, {k: np.dtype(v).name for k, v in given.items() if v is not None})
        triples = self._triples(graph, graph.dtypes, None)
        return tuple([None if t is None else np.dtype(t).type for t in part]
                     for part in triples)

    def _given(self, what, args, kwargs):
        """Inputs given positionally (in ``list_arguments`` order) or by name, checked."""
        if args and kwargs:
            raise TypeError(f"{what}: give inputs either positionally or by name, not both")
        arguments = self.list_arguments()
        if len(args) > len(arguments):
            raise MXNetError(f"{what}: {len(args)} positional inputs for {len(arguments)} "
                             f"arguments {arguments}")
        unknown = [k for k in kwargs if k not in self.list_inputs()]
        if unknown:
            raise MXNetError(f"{what}: {unknown[0]!r} is not an input of this symbol; the "
                             f"inputs are {self.list_inputs()}")
        return dict(zip(arguments, args)) if args else dict(kwargs)

    def _triples(self, graph, table, missing):
        aux = self._aux_variable_ids(graph)
        args = [table.get((graph.index[id(n)], 0), missing) for n in graph.variables
                if id(n) not in aux]
        auxs = [table.get((graph.index[id(n)], 0), missing) for n in graph.variables
                if id(n) in aux]
        outs = [table.get(graph.key(e), missing) for e in self._outputs]
        return args, outs, auxs

    @property
    def shape(self):
        """The output's shape, inferred from the variables' shapes (``sym.var(shape=...)``);
        MXNetError naming the variables without a shape when it cannot be known. Read inside a
        traced ``hybrid_forward``, it makes the input shapes part of that trace's key."""
        modes.note_read("shape")
        return self._inferred("shape", self._graph(),
                              lambda graph, given: infer_shapes(graph, given, use_cache=True))

    @property
    def ndim(self):
        """``len(self.shape)`` (hybridgpu's addition, like ``shape``; a shape read)."""
        return len(self.shape)

    @property
    def size(self):
        """The number of elements, ``prod(self.shape)`` (a shape read, like ``shape``)."""
        size = 1
        for dim in self.shape:
            size *= dim
        return size

    @property
    def dtype(self):
        """The output's dtype (a NumPy type), inferred from the variables' dtypes. Read inside
        a traced ``hybrid_forward``, it makes the input dtypes part of that trace's key."""
        import numpy as np

        modes.note_read("dtype")
        return np.dtype(self._inferred("dtype", self._graph(), infer_types)).type

    def _inferred(self, what, graph, infer):
        if len(self._outputs) != 1:
            raise MXNetError(f"{what} of a group of {len(self)} outputs: pick one with [i]")
        infer(graph, {})
        table = graph.shapes if what == "shape" else graph.dtypes
        value = table.get(graph.key(self._outputs[0]))
        if value is None or (what == "shape" and 0 in value):
            missing = unknown_inputs(graph) if what == "shape" else [
                n.name for i, n in enumerate(graph.nodes)
                if n.is_variable and graph.dtypes.get((i, 0)) is None]
            raise MXNetError(f"the {what} of symbol {self.name!r} is not known: inputs "
                             f"{missing} have no {what}; declare it with "
                             f"sym.var(name, {what}=...)")
        return tuple(value) if what == "shape" else value

    # -- files and values (implemented in json_format.py and executor.py) -----------------
    def tojson(self):
        """MXNet 1.9's JSON for this symbol (``nodes``, ``arg_nodes``, ``node_row_ptr``,
        ``heads``, ``attrs``)."""
        from .json_format import to_json

        return to_json(self)

    def save(self, fname, remove_amp_cast=True):
        """Write ``tojson()`` to ``fname`` (atomically)."""
        from .json_format import save

        save(self, fname)

    def eval(self, ctx=None, **kwargs):
        """Evaluate with NDArray inputs given by name; returns a list of NDArrays."""
        from .executor import evaluate_symbol

        return evaluate_symbol(self, ctx, kwargs)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None,
             group2ctx=None, shared_exec=None):
        """An Executor over given argument arrays (list in ``list_arguments`` order or dict)."""
        from .executor import Executor

        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """An Executor with arrays allocated from the shapes given as keywords."""
        from .executor import simple_bind

        return simple_bind(self, ctx, grad_req, type_dict, kwargs)

    def gradient(self, wrt):
        """A Symbol of the gradients of this symbol's outputs with respect to the variables
        named in ``wrt``; its inputs are the forward variables plus one ``<output>_head_grad``
        variable per output."""
        from .gradient import gradient_symbol

        return gradient_symbol(self, wrt)

    # -- values are not available --------------------------------------------------------
    asnumpy = _no_value("asnumpy", "return the Symbol and call asnumpy() on the NDArray result")
    asscalar = _no_value("asscalar", "return the Symbol and read the NDArray result")
    item = _no_value("item", "return the Symbol and read the NDArray result")
    wait_to_read = _no_value("wait_to_read", "nothing needs waiting for in a graph")
    __bool__ = _no_value("bool()", "branch with F.where(cond, x, y) instead of Python if")
    __setitem__ = _no_value("item assignment", "build a new Symbol (F.where, F.concat, ...)")

    def __array__(self, dtype=None, copy=None):
        raise NotAvailableOnSymbol(
            f"NumPy conversion (np.asarray, np.array) is not available on Symbol "
            f"{self.name or '(group)'}: a Symbol has no value while the graph is built (inside "
            "a hybridized hybrid_forward); compute with F.* functions and call asnumpy() on the "
            "NDArray result")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = numpy_interop.scalar_operator(Symbol, ufunc, method, inputs, kwargs)
        if result is not None:  # np.float32(2) * x
            return result
        raise NotAvailableOnSymbol(
            f"NumPy's {ufunc.__name__} cannot take Symbol {self.name or '(group)'}: a Symbol "
            f"has no value while the graph is built (inside a hybridized hybrid_forward); "
            f"write F.{ufunc.__name__}(x) instead of np.{ufunc.__name__}(x): F is mx.nd when "
            "the block runs imperatively and mx.sym when it is hybridized")

    __hash__ = object.__hash__


def string_attrs(attrs):
    """Graph-level attributes as MXNet stores them: string values only, hidden keys
    (``lr_mult``) with underscores (``__lr_mult__``)."""
    out = {}
    for key, value in (attrs or {}).items():
        if not isinstance(value, str):
            raise ValueError(f"Set Attr only accepts string values, got {key}={value!r}")
        out[f"__{key}__" if key in _HIDDEN_KEYS else key] = value
    return out


def _listed(node):
    """The attributes MXNet lists for a node: given op attributes and graph-level ones, with
    hidden keys (``__lr_mult__``) listed also without underscores."""
    out = {**node.given_attrs, **node.extra}
    for key in _HIDDEN_KEYS:
        if f"__{key}__" in out:
            out[key] = out[f"__{key}__"]
    return out


def _install_operators():
    table = {
        "add": ("_Plus", "_PlusScalar", None), "sub": ("_Minus", "_MinusScalar", "_RMinusScalar"),
        "mul": ("_Mul", "_MulScalar", None), "truediv": ("_Div", "_DivScalar", "_RDivScalar"),
        "mod": ("_Mod", "_ModScalar", "_RModScalar"),
        "pow": ("_Power", "_PowerScalar", "_rpower_scalar"),  # MXNet: 2 ** x is _rpower_scalar0
    }
    for key, (array_op, scalar_op, rscalar_op) in table.items():
        method, reflected = _operator(array_op, scalar_op, rscalar_op)
        setattr(Symbol, f"__{key}__", method)
        setattr(Symbol, f"__r{key}__", reflected)
    Symbol.__div__, Symbol.__rdiv__ = Symbol.__truediv__, Symbol.__rtruediv__
    compare = {"eq": "_equal", "ne": "_not_equal", "gt": "_greater", "ge": "_greater_equal",
               "lt": "_lesser", "le": "_lesser_equal"}  # MXNet names these _greater_scalar0
    for key, array_op in compare.items():
        setattr(Symbol, f"__{key}__",
                _operator(array_op, f"{array_op}_scalar", strict=key in ("eq", "ne"))[0])
    for key in ("add", "sub", "mul", "truediv", "mod", "pow"):
        setattr(Symbol, f"__i{key}__", _no_value(f"in-place {key} (__i{key}__)",
                                                 "use the out-of-place operator (x = x + y)"))
    Symbol.__neg__ = lambda self: _call("_MulScalar", [self], {"scalar": -1.0})
    Symbol.__abs__ = lambda self: _call("abs", [self], {})


_install_operators()
