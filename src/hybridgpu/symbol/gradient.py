"""Backward graphs as Symbols: reverse-mode differentiation of a forward graph, built from each
op's ``grad(F, ins, outs, out_grads, **attrs)`` with ``F = hybridgpu.symbol``.

``gradient_symbol(symbol, wrt)`` returns a Symbol whose outputs are the gradients of the
variables ``wrt`` (in order). Its inputs are the forward variables plus one head-gradient
variable per forward output that the gradients need, named ``<output>_head_grad``. The
backward graph is an ordinary graph, so every executor (and the compiler) can run, fuse and
capture it like a forward graph.

Rules:

* Only nodes between a ``wrt`` variable and an output that gets a gradient are differentiated.
  Contributions to one value from several consumers are summed with ``elemwise_add`` (two) or
  ``add_n`` (more).
* A ``None`` gradient means zero and is skipped; an op without ``grad`` (``argmax``,
  comparisons, ...) passes zero to its inputs, as MXNet's zero-gradient ops do. A ``wrt``
  variable that gets no gradient at all gets ``zeros_like(variable)``.
* Grad functions may read ``.shape`` and ``.dtype`` of ``ins``, ``outs`` and ``out_grads``:
  they come from one shape/dtype inference over the forward graph (pass ``shapes``/``dtypes``
  when the variables carry no ``__shape__``). With ``shapes`` or ``dtypes`` given, the forward
  graph is copied first and the copy's variables are annotated, so the caller's symbol is left
  as it was.
* Ops with ``mode_dependent`` (BatchNorm's backward) take ``is_train`` when the backward graph
  is evaluated: evaluate it in train mode when the forward was.

``plan_backward`` splits a forward graph and its backward graph for an executor: the forward
graph also returns the intermediate values the backward graph reads (saved once, so BatchNorm's
moving statistics are updated and Dropout's mask drawn once), and the backward graph reads them
as variables instead of recomputing them.

Example:
    >>> import hybridgpu as mx
    >>> x, w = mx.sym.var("x"), mx.sym.var("w")
    >>> y = mx.sym.elemwise_mul(x, w, name="mul")
    >>> g = gradient_symbol(y, ["x", "w"])
    >>> sorted(g.list_arguments())
    ['mul_output_head_grad', 'w', 'x']
    >>> dx, dw = g.eval(x=mx.nd.array([1., 2.]), w=mx.nd.array([3., 4.]),
    ...                 mul_output_head_grad=mx.nd.ones(2))
    >>> dx.asnumpy().tolist(), dw.asnumpy().tolist()
    ([3.0, 4.0], [1.0, 2.0])
"""

from __future__ import annotations

import copy

import numpy as np

from .. import name as naming
from ..base import DTYPE_TO_FLAG, MXNetError
from ..graph import Entry, Graph, Node, infer_shapes, infer_types
from ..ops.rules import known
from .symbol import Symbol

__all__ = ["gradient_symbol", "build_gradient", "plan_backward", "GradientGraph",
           "BackwardPlan", "head_grad_names", "annotate_variables"]


class _KnownSymbol(Symbol):
    """A Symbol whose shape and dtype were found by inference over the whole forward graph,
    so grad functions read them without re-running inference per access."""

    __slots__ = ("_known_shape", "_known_dtype")

    def __init__(self, outputs, shape=None, dtype=None):
        super().__init__(outputs)
        self._known_shape = shape
        self._known_dtype = dtype

    @property
    def shape(self):
        if known(self._known_shape):
            return tuple(self._known_shape)
        return Symbol.shape.fget(self)

    @property
    def dtype(self):
        if self._known_dtype is not None:
            return np.dtype(self._known_dtype).type
        return Symbol.dtype.fget(self)


class GradientGraph:
    """What ``build_gradient`` made: ``forward`` (the forward Symbol the gradients refer to,
    a copy of the one given when shapes or dtypes were annotated), ``gradients`` (one output
    per ``wrt`` name), ``wrt`` and ``head_names`` (one per forward output)."""

    def __init__(self, forward, gradients, wrt, head_names):
        self.forward = forward
        self.gradients = gradients
        self.wrt = list(wrt)
        self.head_names = list(head_names)

    def needed_heads(self):
        """Indices of the forward outputs whose head gradient the gradients read (loss
        outputs such as ``SoftmaxOutput`` ignore theirs)."""
        names = {n.name for n in self.gradients._graph().variables}
        return [i for i, n in enumerate(self.head_names) if n in names]


def head_grad_names(symbol):
    """``<output>_head_grad`` for each output of ``symbol`` (suffixed ``_<i>`` where two
    outputs share a name)."""
    outputs = symbol.list_outputs()
    names = []
    for i, out in enumerate(outputs):
        name = f"{out}_head_grad"
        names.append(name if outputs.count(out) == 1 else f"{out}_{i}_head_grad")
    return names


def annotate_variables(symbol, shapes, dtypes):
    """A copy of ``symbol`` whose variables carry ``__shape__``/``__dtype__`` from the maps
    (``build_gradient`` of the copy needs no ``shapes``/``dtypes`` and makes no copy, so its
    forward nodes are the copy's own).

    Example:
        >>> import hybridgpu as mx
        >>> y = annotate_variables(mx.sym.var("x") * 2, {"x": (3,)}, {"x": "float64"})
        >>> y.infer_shape()[1], y.infer_type()[1]
        ([(3,)], [<class 'numpy.float64'>])
    """
    clone = copy.deepcopy(symbol)
    for node in clone._graph().variables:
        shape = shapes.get(node.name)
        if shape is not None:
            node.extra["__shape__"] = str(tuple(int(d) for d in shape))
        dtype = dtypes.get(node.name)
        if dtype is not None:
            name = np.dtype(dtype).name
            node.extra["__dtype__"] = str(DTYPE_TO_FLAG.get(name, name))
    return clone


def _check_wrt(symbol, wrt):
    arguments = symbol.list_arguments()
    if wrt is None:
        return arguments
    if isinstance(wrt, str):
        wrt = [wrt]
    wrt = list(wrt)
    for name in wrt:
        if name not in arguments:
            aux = name in symbol.list_auxiliary_states()
            raise MXNetError(
                f"gradient_symbol: {name!r} is "
                + ("an auxiliary state, which gets no gradient" if aux else
                   "not an argument of the symbol")
                + f"; pick wrt from its arguments {arguments}")
    return wrt


def _depends_on(graph, wrt):
    """``depends[i]``: node ``i`` is a ``wrt`` variable or reads one."""
    wanted = set(wrt)
    depends = []
    for node in graph.nodes:
        if node.is_variable:
            depends.append(node.name in wanted)
        else:
            depends.append(any(depends[graph.index[id(e.node)]] for e in node.inputs))
    return depends


def _symbol_module():
    """``hybridgpu.symbol``: the ``F`` that grad functions build graphs with."""
    from .. import symbol

    return symbol


def _sum(parts, label):
    """One Symbol for the sum of ``parts`` (Symbols of the same shape)."""
    F = _symbol_module()
    if len(parts) == 1:
        return parts[0]
    with naming.Prefix(f"{label}_"):
        if len(parts) == 2:
            return F.elemwise_add(parts[0], parts[1], name="grad_sum")
        return F.add_n(*parts, name="grad_sum")


def _entry_label(node, index):
    return node.name if node.is_variable else f"{node.name}_{index}"


class _Builder:
    """Reverse sweep over one forward graph, collecting gradient contributions per entry."""

    def __init__(self, graph):
        self.graph = graph
        self.contributions = {}  # (node index, output index) -> [Symbol]

    def known(self, entry):
        key = self.graph.key(entry)
        return _KnownSymbol([entry], self.graph.shapes.get(key), self.graph.dtypes.get(key))

    def add(self, entry, grad, node):
        if not isinstance(grad, Symbol) or len(grad) != 1:
            raise MXNetError(f"the gradient of {node.op.name} (node {node.name!r}) must give a "
                             f"single-output Symbol per input, got {grad!r}: fix the op's grad")
        op = grad._outputs[0].node.op
        if op is not None and op.name == "zeros_like":
            return  # a zero contribution: skipping it drops what it reads (a head gradient)
        self.contributions.setdefault(self.graph.key(entry), []).append(grad)

    def summed(self, key, node, index):
        parts = self.contributions.get(key)
        return None if not parts else _sum(parts, _entry_label(node, index))

    def differentiate(self, i, node, depends):
        """Call ``node.op.grad`` and record what it gives the inputs that need it."""
        F = _symbol_module()
        n_out = node.num_outputs
        summed = [self.summed((i, k), node, k) for k in range(n_out)]
        if all(g is None for g in summed) or not node.op.differentiable:
            return
        outs = [self.known(Entry(node, k)) for k in range(n_out)]
        out_grads = []
        for g, out in zip(summed, outs):
            if g is None:  # an output nobody read gets zero
                with naming.Prefix(f"{node.name}_backward_"):
                    g = F.zeros_like(out)
            out_grads.append(_KnownSymbol(g._outputs, out._known_shape, out._known_dtype))
        ins = [self.known(e) for e in node.inputs]
        try:
            with naming.Prefix(f"{node.name}_backward_"):
                grads = list(node.op.grad(F, ins, outs, out_grads, **node.attrs))
        except MXNetError as err:
            raise MXNetError(f"building the gradient of node {node.name!r} ({node.op.name}): "
                             f"{err}; if a shape or dtype is unknown, pass shapes=/dtypes= "
                             f"(variable name -> shape / dtype) to gradient_symbol") from None
        if len(grads) != len(ins):
            raise MXNetError(f"the gradient of {node.op.name} (node {node.name!r}) gave "
                             f"{len(grads)} gradients for {len(ins)} inputs: fix the op's grad")
        skip = set(node.op.nondiff_inputs)
        for name, entry, grad in zip(node.input_names(), node.inputs, grads):
            if grad is None or name in skip or not depends[self.graph.index[id(entry.node)]]:
                continue
            self.add(entry, grad, node)


def _infer_dtypes(graph, dtypes):
    """Fill ``graph.dtypes`` from ``dtypes`` and the variables' ``__dtype__``; variables
    still unknown then count as float32 (MXNet's default), so grad functions can read
    ``.dtype``."""
    given = {k: np.dtype(v).name for k, v in (dtypes or {}).items() if v is not None}
    infer_types(graph, given)
    missing = {n.name: "float32" for i, n in enumerate(graph.nodes)
               if n.is_variable and graph.dtypes.get((i, 0)) is None}
    if missing:
        graph.dtypes.clear()
        infer_types(graph, {**missing, **given})


def build_gradient(symbol, wrt=None, *, shapes=None, dtypes=None):
    """The gradients of ``wrt`` (argument names; default all arguments) as a
    ``GradientGraph``; see the module docstring."""
    F = _symbol_module()
    if not isinstance(symbol, Symbol):
        raise TypeError(f"gradient_symbol expects a Symbol, got {type(symbol).__name__}")
    wrt = _check_wrt(symbol, wrt)
    if shapes or dtypes:
        symbol = annotate_variables(symbol, dict(shapes or {}), dict(dtypes or {}))
    graph = symbol._graph()
    infer_shapes(graph, {k: tuple(v) for k, v in (shapes or {}).items() if v is not None})
    _infer_dtypes(graph, dtypes)
    heads = head_grad_names(symbol)
    builder = _Builder(graph)
    for name, entry in zip(heads, symbol._outputs):
        key = graph.key(entry)
        head = F.var(name, shape=graph.shapes.get(key) if known(graph.shapes.get(key)) else None,
                     dtype=graph.dtypes.get(key))
        builder.contributions.setdefault(key, []).append(head)
    depends = _depends_on(graph, wrt)
    for i in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[i]
        if not node.is_variable and depends[i]:
            builder.differentiate(i, node, depends)
    outputs = []
    for name in wrt:
        parts = [g for i, n in enumerate(graph.nodes) if n.is_variable and n.name == name
                 for g in builder.contributions.get((i, 0), [])]
        if parts:
            outputs.append(_sum(parts, name))
        else:
            var = next(n for n in graph.nodes if n.is_variable and n.name == name)
            with naming.Prefix(f"{name}_"):
                outputs.append(F.zeros_like(Symbol([Entry(var, 0)]), name="zero_grad"))
    gradients = Symbol([s._outputs[0] for s in outputs])
    return GradientGraph(symbol, gradients, wrt, heads)


def gradient_symbol(symbol, wrt=None, *, shapes=None, dtypes=None):
    """A Symbol whose outputs are the gradients of the variables ``wrt`` (default: every
    argument) of ``symbol``, in order; its inputs are the forward variables and
    ``<output>_head_grad`` variables. ``shapes``/``dtypes`` (variable name -> shape / dtype)
    tell grad functions the shapes they read when the variables carry none."""
    return build_gradient(symbol, wrt, shapes=shapes, dtypes=dtypes).gradients


class BackwardPlan:
    """A forward graph and a backward graph that reads saved forward values.

    ``forward``: a Graph whose outputs are the forward outputs followed by ``saved`` values;
    ``backward``: a Graph of the gradients whose inputs are forward variables, the saved values
    (variables named ``saved_names``) and head gradients (``head_names``);
    ``needed_heads``: indices of the outputs whose head gradient the backward graph reads.
    """

    def __init__(self, forward, num_outputs, saved_names, backward, head_names, needed_heads):
        self.forward = forward
        self.num_outputs = num_outputs
        self.saved_names = saved_names
        self.backward = backward
        self.head_names = head_names
        self.needed_heads = needed_heads


def plan_backward(gradient_graph):
    """Split a ``GradientGraph`` into a ``BackwardPlan`` (see its docstring)."""
    fwd_outputs = gradient_graph.forward._outputs
    fwd_ids = {id(n) for n in Graph(fwd_outputs).nodes}
    saved = {}  # (id(node), index) -> (forward Entry, variable Node)
    clones = {}

    def mapped(entry):
        if id(entry.node) in fwd_ids and not entry.node.is_variable:
            key = (id(entry.node), entry.index)
            if key not in saved:
                name = f"__saved{len(saved)}_{entry.node.name}_{entry.index}__"
                saved[key] = (entry, Node.variable(name))
            return Entry(saved[key][1], 0)
        if entry.node.is_variable:
            return entry
        return Entry(clones[id(entry.node)], entry.index)

    for node in Graph(gradient_graph.gradients._outputs).nodes:
        if node.is_variable or id(node) in fwd_ids:
            continue
        clones[id(node)] = Node(node.op, node.name, node.attrs,
                                [mapped(e) for e in node.inputs],
                                given_attrs=node.given_attrs, extra=node.extra)
    backward = Graph([mapped(e) for e in gradient_graph.gradients._outputs])
    forward = Graph([*fwd_outputs, *(entry for entry, _ in saved.values())])
    head_set = set(gradient_graph.head_names)
    used = {n.name for n in backward.variables if n.name in head_set}
    needed = [i for i, n in enumerate(gradient_graph.head_names) if n in used]
    return BackwardPlan(forward, len(fwd_outputs), [v.name for _, v in saved.values()],
                        backward, gradient_graph.head_names, needed)
