"""``SymbolBlock``: a Gluon block around a Symbol graph, and ``SymbolBlock.imports``, which
loads the ``-symbol.json`` / ``-0000.params`` files that ``HybridBlock.export`` (MXNet's or
hybridgpu's) and MXNet's ``Module.save_checkpoint`` write.

Every variable of the graph that is not an input becomes a Parameter named exactly like the
variable (no prefix); auxiliary states (BatchNorm's running statistics) get ``grad_req='null'``.
Shapes are filled in from shape inference where the graph alone determines them, otherwise
when the first batch arrives (deferred initialization).

Called with NDArrays, the block runs through the same traced-graph path as a hybridized
``HybridBlock`` (one trace per input signature: shapes, dtypes, context, train mode), with the
wrapped graph as the trace. Called with Symbols, it returns the graph with its inputs replaced
by them, so a SymbolBlock can sit inside a hybridized HybridBlock.

Differences from MXNet 1.9, on purpose: an input name of ``imports`` that is not a variable of
the graph is an error naming the graph's inputs (MXNet turns the real input into a parameter
and later reports it missing from the file); parameter shapes the graph determines are known
at construction (MXNet leaves them unknown until the first call), so a ``.params`` file of the
wrong shapes is refused when loaded; ``export`` works before the first call (MXNet then writes
an empty ``.params`` file); ``load_parameters`` reads the short names ``save_parameters``
writes (MXNet 1.9 cannot).

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> data = mx.sym.var("data")
    >>> out = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=2, name="fc"),
    ...                         act_type="relu", name="act")
    >>> net = SymbolBlock(out, data)
    >>> [(name, p.shape) for name, p in net.collect_params().items()]
    [('fc_weight', (2, 0)), ('fc_bias', (2,))]
    >>> net.collect_params()["fc_weight"].shape = (2, 3)
    >>> net.initialize("ones")
    >>> net(mx.nd.ones((1, 3))).asnumpy()  # 1 + 1 + 1 + bias 1
    array([[4., 4.]], dtype=float32)
    >>> net(mx.sym.var("x")).list_arguments()
    ['x', 'fc_weight', 'fc_bias']
"""

from __future__ import annotations

import copy
import warnings

import numpy as np

from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError, mx_real_t
from ..graph import Graph, infer_shapes, infer_types
from ..ndarray import NDArray
from ..symbol import Symbol
from .hybrid_block import BlockInputError, HybridBlock, _Program, _Trace
from .nesting import flatten, regroup
from .numpy_mode import NumpyArray, numpy_call, to_numpy
from .parameter import ParameterDict

__all__ = ["SymbolBlock"]

# BatchNorm inputs kept in float32 when a SymbolBlock is cast to float16 (as MXNet does).
_BATCHNORM_FLOAT32_INPUTS = ("gamma", "beta", "moving_mean", "moving_var")


def _is_symbol(value):
    return isinstance(value, Symbol)


def _width(value):
    return len(value) if isinstance(value, Symbol) and len(value) > 1 else 0


def _common_prefix(names):
    """The longest string every name starts with."""
    if not names:
        return ""
    prefix = names[0]
    for name in names[1:]:
        i = 0
        while i < min(len(prefix), len(name)) and prefix[i] == name[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


def _input_names(flat_inputs):
    """The names of the input variables; MXNetError for an operator output or a repeat."""
    names = []
    for i, sym in enumerate(flat_inputs):
        entry = sym._outputs[0]
        if len(sym) != 1 or not entry.node.is_variable:
            raise MXNetError(f"SymbolBlock inputs must be variables (mx.sym.var), but input {i} "
                             f"{sym!r} is an output of operator {entry.node.op.name}; pass the "
                             "variables the graph reads (see outputs.list_arguments())")
        if entry.node.name in names:
            raise MXNetError(f"SymbolBlock input {entry.node.name!r} is given twice; each input "
                             "variable must be listed once")
        names.append(entry.node.name)
    return names


def _var_dtypes(flat_inputs):
    """``{name: dtype name}`` when every input variable declares a dtype, else None."""
    dtypes = {}
    for sym in flat_inputs:
        graph = Graph(sym._outputs)
        infer_types(graph, {})
        if graph.dtypes.get((0, 0)) is None:
            return None
        dtypes[sym.name] = np.dtype(graph.dtypes[(0, 0)]).name
    return dtypes


class SymbolBlock(HybridBlock):
    """A HybridBlock running the graph ``outputs`` (a Symbol or list of Symbols) of the
    variables ``inputs`` (a Symbol variable or a list of them); ``params`` (a ParameterDict)
    supplies existing Parameters of the same names to share.

    Example:
        >>> import hybridgpu as mx
        >>> a, b = mx.sym.var("a"), mx.sym.var("b")
        >>> net = SymbolBlock([a + b, a * b], [a, b])
        >>> [float(o.asscalar()) for o in net(mx.nd.array([2.0]), mx.nd.array([3.0]))]
        [5.0, 6.0]
    """

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol):
            inputs = list(inputs)
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        flat_in, self._in_format = flatten(inputs, "input", _is_symbol)
        flat_out, self._out_format = flatten(outputs, "output", _is_symbol, _width)
        if not flat_out:
            raise MXNetError("SymbolBlock needs at least one output Symbol")
        self._input_names = _input_names(flat_in)
        self._symbol = flat_out[0] if len(flat_out) == 1 else symbol.Group(flat_out)
        self._check_inputs_used()
        self._create_params(flat_in, params)

    def _check_inputs_used(self):
        graph_inputs = self._symbol.list_inputs()
        for name in self._input_names:
            if name not in graph_inputs:
                warnings.warn(f"SymbolBlock input {name!r} is not a variable of the graph, "
                              f"whose inputs are {graph_inputs}; it is ignored", stacklevel=3)

    def _create_params(self, flat_in, shared):
        """One Parameter per non-input argument and auxiliary state (taken from ``shared``
        when it has that name), with the shapes and dtypes the graph determines before any
        data is seen."""
        graph = Graph(self._symbol._outputs)
        try:
            infer_shapes(graph, {})
        except MXNetError:
            graph.shapes.clear()  # the first call reports the conflict with real shapes
        dtypes = _var_dtypes(flat_in)
        if dtypes is not None:
            try:
                infer_types(graph, dtypes)
            except MXNetError:
                graph.dtypes.clear()
        position = {node.name: i for i, node in enumerate(graph.nodes) if node.is_variable}
        aux = self._symbol.list_auxiliary_states()
        for name in self._symbol.list_arguments() + aux:
            if name in self._input_names:
                continue
            shape = graph.shapes.get((position[name], 0))
            dtype = graph.dtypes.get((position[name], 0)) if dtypes is not None else None
            extra = {"grad_req": "null"} if name in aux else {}
            if shared is None or name not in shared:
                extra["allow_deferred_init"] = True
            self._params.get(name, shape=shape, dtype=np.dtype(dtype or mx_real_t).type,
                             **extra)
        cut = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {key[cut:]: value for key, value in self._params.items()}

    def __repr__(self):
        return (f"{type(self).__name__}(\n{self._symbol!r} : {len(self._input_names)} -> "
                f"{len(self._symbol.list_outputs())}\n)")

    # -- loading --------------------------------------------------------------------------
    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock of the graph in ``symbol_file`` whose inputs are the variables
        ``input_names`` (a name or a list), with parameters from ``param_file`` (``arg:``/
        ``aux:`` names; stored dtypes are kept) on ``ctx``.

        Example:
            >>> import hybridgpu as mx
            >>> import os, tempfile
            >>> x = mx.sym.var("x")
            >>> path = os.path.join(tempfile.mkdtemp(), "m-symbol.json")
            >>> mx.sym.FullyConnected(x, num_hidden=2, name="fc").save(path)
            >>> net = SymbolBlock.imports(path, ["x"])
            >>> list(net.collect_params())
            ['fc_weight', 'fc_bias']
        """
        graph = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        inputs = graph.list_inputs()
        for name in input_names:
            if name not in inputs:
                raise MXNetError(f"SymbolBlock.imports: input {name!r} is not a variable of "
                                 f"the graph in {str(symbol_file)!r}, whose variables are "
                                 f"{inputs[:12]}{' ...' if len(inputs) > 12 else ''}; models "
                                 "exported by HybridBlock.export name their inputs 'data' "
                                 "(one input) or 'data0', 'data1', ...")
        # Without a params file, float32 inputs type the parameters; with one, the file does.
        dtype = mx_real_t if param_file is None else None
        block = SymbolBlock(graph, [symbol.var(n, dtype=dtype) for n in input_names])
        if param_file is not None:
            block.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                        cast_dtype=True, dtype_source="saved")
        return block

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source="current"):
        """Load a ``save_parameters`` file (the parameter names less their common prefix),
        or one of full names (``collect_params().save``, an export's ``arg:``/``aux:``)."""
        loaded = nd.load(filename)
        if isinstance(loaded, dict) and loaded and set(loaded) <= set(self._reg_params) \
                and not set(loaded) & set(self._params.keys()):
            restore = _common_prefix(list(self._params.keys()))
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, restore,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        super().load_parameters(filename, ctx, allow_missing, ignore_extra, cast_dtype,
                                dtype_source)

    # -- running --------------------------------------------------------------------------
    def forward(self, x, *args):
        """Run the graph on NDArrays, or compose it with Symbols."""
        if isinstance(x, Symbol):
            return self._compose_inputs(x, *args)
        if not isinstance(x, NDArray):
            raise BlockInputError(f"In HybridBlock, there must be one NDArray or one Symbol in "
                                  f"the input. SymbolBlock {self.name!r} got {type(x).__name__} "
                                  "as its first input")
        self._check_format([x, *args], "NDArray")
        ctx = x.context
        self._check_contexts(ctx, args)
        with ctx:
            out = self._call_traced(x, *args)
        if isinstance(x, NumpyArray):  # mx.np inputs give mx.np outputs, with set_np or not
            with numpy_call():
                return to_numpy(out)
        return to_numpy(out)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError("SymbolBlock runs its graph directly; it has no "
                                  "hybrid_forward")

    def _check_format(self, args, kind):
        leaf = _is_symbol if kind == "Symbol" else (lambda v: isinstance(v, NDArray))
        _, fmt = flatten(list(args), "input", leaf)
        if fmt != self._in_format:
            raise ValueError(f"SymbolBlock expects its inputs {self._input_names} structured "
                             f"as {self._in_format}, got {kind}s structured as {fmt} (0 is one "
                             "array, a list is a list)")

    def _compose_inputs(self, *args):
        """The graph with its input variables replaced by the Symbols ``args``."""
        self._check_format(args, "Symbol")
        flat, _ = flatten(list(args), "input", _is_symbol)
        present = set(self._symbol.list_inputs())
        composed = copy.copy(self._symbol)
        composed._compose(**{name: value for name, value in zip(self._input_names, flat)
                             if name in present})
        return regroup(list(composed), self._out_format)

    def _trace(self, flat, in_format, ctx):
        """The wrapped graph as the trace for arrays ``flat`` (HybridBlock's replay path runs
        it); completes deferred parameter shapes."""
        shapes = {n: a.shape for n, a in zip(self._input_names, flat)}
        dtypes = {n: a._data.dtype.name for n, a in zip(self._input_names, flat)}
        return self._graph_trace(shapes, dtypes)

    def _specialize(self, program, flat):
        """No Python to skip: a new signature just infers the wrapped graph again."""
        return self._trace(flat, None, None)

    def _graph_trace(self, shapes, dtypes):
        graph = Graph(self._symbol._outputs)
        for param in self._params.values():  # loaded values win over the file's hints
            if param._data is not None:
                shapes.setdefault(param.name, param.shape)
                dtypes.setdefault(param.name, np.dtype(param.dtype).name)
        infer_types(graph, dtypes)
        infer_shapes(graph, shapes)
        params = self._bind_parameters(graph)
        program = _Program(self._symbol, list(self._input_names), params,
                           repr(self._in_format), self._out_format, reads=(), flat=[])
        trace = _Trace(graph, program)
        self._last_trace = trace
        return trace

    # -- files and dtypes -----------------------------------------------------------------
    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` (the wrapped graph) and ``path-%04d.params``; works
        before the first call when every parameter is initialized."""
        if self._last_trace is None:
            self._graph_trace({}, {})
        return super().export(path, epoch, remove_amp_cast)

    def cast(self, dtype):
        """Convert the parameters to ``dtype``; for float16, BatchNorm's scale, shift and
        running statistics stay float32, as MXNet keeps them."""
        self._clear_cache()
        super().cast(dtype)
        if np.dtype(dtype) != np.float16:
            return
        for node in Graph(self._symbol._outputs).nodes:
            if node.op is None or node.op.name != "BatchNorm":
                continue
            for input_name, entry in zip(node.input_names(), node.inputs):
                name = entry.node.name
                if input_name in _BATCHNORM_FLOAT32_INPUTS and name in self._params:
                    self._params[name].cast("float32")
