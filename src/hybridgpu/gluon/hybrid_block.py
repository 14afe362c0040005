"""``HybridBlock``: write ``hybrid_forward(F, x, **params)`` once; run it imperatively
(``F = nd``) or, after ``hybridize()``, trace it once per input signature (``F = sym``) and
replay the traced graph.

The cache key is (argument structure, shapes, dtypes, context, train mode), so a new shape
retraces instead of failing, and ``if autograd.is_training():`` inside ``hybrid_forward`` is
never frozen into the wrong mode. Inputs are traced as variables of known shape, so
``x.shape`` works inside ``hybrid_forward``. Each traced graph is compiled once by
``compiler.compile_graph`` (passes, then generated NumPy code on cpu).

Example:
    >>> import hybridgpu as mx
    >>> class Double(HybridBlock):
    ...     def hybrid_forward(self, F, x):
    ...         print("tracing" if F is mx.sym else "imperative", x.shape)
    ...         return x * 2
    >>> net = Double()
    >>> net.hybridize()
    >>> net(mx.nd.ones((1, 2))).asnumpy()
    tracing (1, 2)
    array([[2., 2.]], dtype=float32)
    >>> net(mx.nd.ones((1, 2))).asnumpy()  # replayed: hybrid_forward does not run
    array([[2., 2.]], dtype=float32)
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict

from .. import modes, random_state, symbol
from .. import ndarray as nd
from ..base import MXNetError
from ..compiler import compile_graph
from ..graph import Graph, InferenceError, infer_shapes, infer_types
from ..ndarray import NDArray
from ..ops.rules import known
from ..symbol import NotAvailableOnSymbol, Symbol
from .block import Block
from .nesting import flatten, regroup
from .parameter import DeferredInitializationError
from .traced_backward import run_recorded

__all__ = ["HybridBlock"]

#: Signatures kept per block before the oldest is dropped (with one warning).
MAX_TRACES = 8
_HYBRIDIZE_FLAGS = ("static_alloc", "static_shape", "inline_limit", "forward_bulk_size",
                    "backward_bulk_size", "cuda_graph", "clear", "backend", "static_output")


class _Trace:
    """One traced signature: the graph, its compiled Executable, and how values map."""

    def __init__(self, graph, input_names, params, out_format, symbol_):
        self.graph = graph
        self.input_names = input_names
        self.params = params          # [(variable name, Parameter)]
        self.out_format = out_format
        self.symbol = symbol_         # the traced Symbol, for export
        self.executable = None        # compiled on first replay (compile_graph)


def _named_error(err, block):
    """``err`` (an op error raised while ``block`` ran imperatively) naming the block, unless
    it already names a block (an inner layer's, or a subclass carrying its own context)."""
    message = str(err)
    if type(err) is not MXNetError or repr(block.name) in message or message.startswith("in "):
        return err
    return MXNetError(f"in {type(block).__name__} {block.name!r}: {message}")


def _signature_key(in_format, flat, ctx):
    """The trace cache key: argument structure, shapes and dtypes, context, train mode."""
    return (in_format, tuple((a._data.shape, a._data.dtype.str) for a in flat), ctx,
            modes.is_training())


_ONE_INPUT = repr([0])  # the argument structure of the common call net(x)


def _is_leaf(value):
    return isinstance(value, (NDArray, Symbol))


def _width(value):
    return len(value) if isinstance(value, Symbol) and len(value) > 1 else 0


class HybridBlock(Block):
    """A Block whose ``hybrid_forward(F, x, *args, **params)`` works with ``F = nd`` and
    ``F = sym``; registered parameters arrive as keyword arguments."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix, params)
        self._active = False
        self._flags = {}
        self._traces = OrderedDict()
        self._last_trace = None
        self._trace_lock = threading.Lock()
        self._warned_cap = False

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cache()

    def cast(self, dtype):
        """Convert parameters to ``dtype``; traces made for the old dtype are dropped."""
        super().cast(dtype)
        self._clear_cache()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError(f"Children of HybridBlock must also be HybridBlock, but {block} has "
                             f"type {type(block)}. If you are using Sequential, please try "
                             "HybridSequential instead.")
        super().register_child(block, name)
        self._clear_cache()

    def _clear_cache(self):
        if "_traces" in self.__dict__:
            self._traces.clear()
            self._last_trace = None

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, cuda_graph=True, static_output=False, **kwargs):
        """Trace and replay from the next call (recursively). ``static_alloc`` and
        ``static_shape`` are accepted as in MXNet; ``cuda_graph=False`` turns off CUDA-graph
        capture on gpu; ``static_output=True`` (gpu) returns the compiled program's own output
        buffers, overwritten by the next call, instead of fresh copies. Unknown keywords are
        refused here, not at the first forward."""
        if kwargs:
            raise TypeError(f"{type(self).__name__}.hybridize() got unexpected keyword "
                            f"arguments {sorted(kwargs)}; accepted: {list(_HYBRIDIZE_FLAGS)}")
        if backend is not None:
            raise MXNetError(f"hybridize(backend={backend!r}): subgraph backends are not "
                             "supported by hybridgpu")
        self._active = active
        self._flags = {"static_alloc": static_alloc, "static_shape": static_shape,
                       "cuda_graph": cuda_graph, "static_output": static_output}
        if clear:
            self._clear_cache()
        super().hybridize(active, clear=clear, static_alloc=static_alloc,
                          static_shape=static_shape, inline_limit=inline_limit,
                          forward_bulk_size=forward_bulk_size,
                          backward_bulk_size=backward_bulk_size, cuda_graph=cuda_graph,
                          static_output=static_output)

    # -- forward ------------------------------------------------------------------------
    def forward(self, x, *args):
        """Run ``hybrid_forward`` on NDArrays (imperative or traced) or build Symbols."""
        if isinstance(x, Symbol):
            return self._symbol_forward(x, *args)
        if not args and self._active and type(x) is NDArray:
            out = self._replay_one(x)
            if out is not None:
                return out
        if not isinstance(x, NDArray):
            raise TypeError(f"HybridBlock requires the first argument to forward be either "
                            f"Symbol or NDArray, but got {type(x)}")
        ctx = x.context
        self._check_contexts(ctx, args)
        with ctx:
            if self._active:
                return self._call_traced(x, *args)
            params = self._param_data(ctx, (x, *args))
            try:
                return self.hybrid_forward(nd, x, *args, **params)
            except MXNetError as err:
                raise _named_error(err, self) from None

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, for ``F = nd`` and ``F = sym``; override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")

    def _check_contexts(self, ctx, args):
        flat, _ = flatten(list(args), "input", _is_leaf)
        for i, arg in enumerate(flat, 1):
            if isinstance(arg, NDArray) and arg.context != ctx:
                raise MXNetError(f"{type(self).__name__} {self.name!r}: inputs are on different "
                                 f"contexts: input 0 is on {ctx}, input {i} is on "
                                 f"{arg.context}; move them with as_in_context first")

    def _param_data(self, ctx, args):
        try:
            return {k: v.data(ctx) for k, v in self._reg_params.items()}
        except DeferredInitializationError:
            with self._trace_lock:  # one thread completes deferred init; others then read it
                try:
                    return {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._trace(*flatten(list(args), "input", _is_leaf), ctx)
            return {k: v.data(ctx) for k, v in self._reg_params.items()}

    def _symbol_forward(self, x, *args):
        params = {k: v.var() for k, v in self._reg_params.items()}
        self._traced_input = x  # lets a shape error report this layer's input shape
        try:
            with self.name_scope():
                return self.hybrid_forward(symbol, x, *args, **params)
        except NotAvailableOnSymbol as err:
            raise self._named(err) from None

    def _named(self, err):
        message = str(err)
        if message.startswith("in HybridBlock"):
            return err
        return NotAvailableOnSymbol(f"in HybridBlock {self.name!r} ({type(self).__name__}."
                                    f"hybrid_forward, while tracing): {message}")

    # -- tracing and replay -------------------------------------------------------------
    def _replay_one(self, x):
        """The common call, one NDArray replayed through its compiled trace without
        flatten/regroup; None when it needs ``_call_traced`` (no compiled trace for this
        signature yet, or autograd is recording)."""
        data, ctx = x._data, x._ctx
        trace = self._traces.get(_signature_key(_ONE_INPUT, (x,), ctx))
        if trace is None or trace.executable is None or modes.is_recording():
            return None
        values = {trace.input_names[0]: data}
        for name, param in trace.params:
            arrays = param._data
            array = arrays.get(ctx) if arrays else None
            values[name] = (array if array is not None else param.data(ctx))._data
        outs = trace.executable(values, rng=random_state.generator(ctx))
        if trace.out_format == 0:
            return NDArray(outs[0], ctx)
        return regroup([NDArray(o, ctx) for o in outs], trace.out_format)

    def _call_traced(self, *args):
        flat, in_format = flatten(list(args), "input", _is_leaf)
        ctx = args[0].context
        key = _signature_key(repr(in_format), flat, ctx)
        trace = self._traces.get(key)
        if trace is None:
            with self._trace_lock:
                trace = self._traces.get(key) or self._new_trace(key, flat, in_format, ctx)
        if modes.is_recording():
            recorded = run_recorded(self, trace, flat, ctx)
            if recorded is not None:
                return regroup(recorded, trace.out_format)
        values = {n: a._data for n, a in zip(trace.input_names, flat)}
        for name, param in trace.params:
            values[name] = param.data(ctx)._data
        if trace.executable is None:
            flags = {**self._flags, "data_inputs": tuple(trace.input_names), "block": self.name}
            trace.executable = compile_graph(trace.graph, ctx, key[3], flags)
        outs = trace.executable(values, rng=random_state.generator(ctx))
        return regroup([NDArray(o, ctx) for o in outs], trace.out_format)

    def _new_trace(self, key, flat, in_format, ctx):
        trace = self._trace(flat, in_format, ctx)
        if len(self._traces) >= MAX_TRACES:
            self._traces.popitem(last=False)
            if not self._warned_cap:
                self._warned_cap = True
                warnings.warn(f"HybridBlock {self.name!r} has been traced for more than "
                              f"{MAX_TRACES} input signatures (shapes, dtypes, contexts, train "
                              "mode); the oldest traces are dropped and retraced when needed",
                              stacklevel=4)
        self._traces[key] = trace
        return trace

    def _trace(self, flat, in_format, ctx):
        """Trace ``hybrid_forward`` with Symbols for the arrays ``flat``; fills deferred
        parameter shapes and finishes their initialization."""
        names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
        inputs = [symbol.var(n, shape=a.shape, dtype=a.dtype) for n, a in zip(names, flat)]
        grouped = regroup(inputs, in_format)
        out = self._symbol_forward(*grouped)
        flat_out, out_format = flatten(out, "output", lambda v: isinstance(v, Symbol), _width)
        traced = symbol.Group(flat_out)
        graph = Graph(traced._outputs)
        # parameters' current shapes win over the (possibly deferred) ones their variables
        # were made with
        given = {p.name: p.shape for p in self.collect_params().values() if known(p.shape)}
        given.update({n: a.shape for n, a in zip(names, flat)})
        try:
            infer_types(graph, {n: a._data.dtype.name for n, a in zip(names, flat)})
        except InferenceError as err:
            raise self._dtype_error(err, flat) from None
        try:
            infer_shapes(graph, given)
        except InferenceError as err:
            raise self._layer_error(graph, err) from None
        params = self._bind_parameters(graph)
        for node in graph.nodes:  # exported files carry no input shapes, as MXNet's
            if node.name in names and node.is_variable:
                node.extra.pop("__shape__", None)
                node.extra.pop("__dtype__", None)
        trace = _Trace(graph, names, params, out_format, traced)
        self._last_trace = trace
        return trace

    def _layer_error(self, graph, err):
        """``err`` naming the layer that made the failing node (the descendant whose prefix
        is the longest start of the node's name), that layer's input shape, and what the
        layer expects (its ``_shape_hint()``, when it has one)."""
        layer, best, stack = self, "", [self]
        while stack:
            block = stack.pop()
            stack.extend(block._children.values())
            if err.node_name.startswith(block.prefix) and len(block.prefix) > len(best):
                layer, best = block, block.prefix
        shape = "unknown"
        traced = getattr(layer, "_traced_input", None)
        if isinstance(traced, Symbol) and id(traced._outputs[0].node) in graph.index:
            shape = graph.shapes.get(graph.key(traced._outputs[0])) or shape
        hint = layer._shape_hint() + ". " if hasattr(layer, "_shape_hint") else ""
        return InferenceError(f"{type(layer).__name__} {layer.name!r} cannot take an input of "
                              f"shape {shape}: {hint}({err})", err.node_name)

    def _dtype_error(self, err, flat):
        """A dtype conflict while tracing, said as one (not as a shape problem)."""
        dtypes = sorted({a._data.dtype.name for a in flat})
        return InferenceError(
            f"{type(self).__name__} {self.name!r} cannot take inputs of dtype "
            f"{', '.join(dtypes)}: they disagree with its parameters' dtypes; cast the input "
            f"(x.astype('float32')) or the block (net.cast('{dtypes[0]}')) ({err})",
            err.node_name)

    def _bind_parameters(self, graph):
        """``[(variable name, Parameter)]`` of the graph; completes deferred parameters."""
        by_name = {p.name: p for p in self.collect_params().values()}
        bound = []
        for i, node in enumerate(graph.nodes):
            param = by_name.get(node.name) if node.is_variable else None
            if param is None:
                continue
            inferred = graph.shapes.get((i, 0))
            if not known(param.shape) and known(inferred):
                param.shape = inferred
            if param._deferred_init:
                param._finish_deferred_init()
            bound.append((node.name, param))
        unused = sorted(set(by_name) - {n for n, _ in bound})
        if unused:
            warnings.warn(f"Parameter {', '.join(unused)} is not used by any computation. Is "
                          "this intended?", stacklevel=6)
        return bound

    # -- graphs out ---------------------------------------------------------------------
    def infer_shape(self, *args):
        """Complete unknown parameter shapes from input arrays' shapes."""
        self._trace(*flatten(list(args), "input", _is_leaf), args[0].context)

    def infer_type(self, *args):
        """Complete parameter dtypes from the input arrays' dtypes."""
        trace = self._trace(*flatten(list(args), "input", _is_leaf), args[0].context)
        for i, node in enumerate(trace.graph.nodes):
            for name, param in trace.params:
                if node.name == name and trace.graph.dtypes.get((i, 0)):
                    param.dtype = trace.graph.dtypes[(i, 0)]

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` and ``path-%04d.params`` (MXNet's files) of the last
        traced graph; returns their names."""
        if self._last_trace is None:
            raise RuntimeError("Please first call block.hybridize() and then run forward with "
                               "this block at least once before calling export.")
        traced = self._last_trace.symbol
        sym_file, params_file = f"{path}-symbol.json", f"{path}-{epoch:04d}.params"
        traced.save(sym_file)
        aux = set(traced.list_auxiliary_states())
        arrays = {}  # in the order the graph reads them, as MXNet writes them
        for name, param in self._last_trace.params:
            arrays[f"{'aux' if name in aux else 'arg'}:{name}"] = param._reduce()
        nd.save(params_file, arrays)
        return sym_file, params_file
