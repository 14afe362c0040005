"""Values of graphs: ``Symbol.eval``, ``Symbol.bind``, ``Symbol.simple_bind`` and the
``Executor`` (MXNet 1.x's executor API), compiled like hybridized graphs.

An Executor owns the argument, gradient and auxiliary arrays of one symbol on one context.
``forward(is_train, **kwargs)`` runs the graph compiled by ``compiler.compile_graph`` on the
context's array module and writes the results into the persistent ``outputs`` arrays (as
MXNet does: an output NDArray held by the caller shows the next forward's values).
``backward(out_grads)`` evaluates the backward graph of ``symbol/gradient.py``: an ordinary
graph that reads the intermediate values the training forward saved, so BatchNorm's moving
statistics are updated once (in the forward, in place in ``aux_dict``) and Dropout's mask is
the forward's.

Differences from MXNet 1.9.1, on purpose:

* ``bind`` checks the shapes of ``args_grad`` and ``aux_states`` (MXNet accepts wrong ones)
  and names the argument whose shape disagrees with the others.
* ``backward`` with a wrong number of ``out_grads`` raises (MXNet ignores extra ones); numpy
  arrays are accepted as out_grads.
* ``grad_dict`` works without ``args_grad`` (every value None; MXNet raises TypeError).
* ``eval`` accepts auxiliary states by name and moves inputs to ``ctx``.
* BatchNorm updates its moving statistics in the training forward (MXNet 1.9's cpu kernel
  does it in the backward).

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("x")
    >>> y = mx.sym.FullyConnected(x, num_hidden=2, name="fc")
    >>> exe = y.simple_bind(mx.cpu(), x=(1, 3))
    >>> exe.arg_dict["fc_weight"][:] = 1.0
    >>> exe.forward(is_train=True, x=mx.nd.array([[1., 2., 3.]]))[0].asnumpy().tolist()
    [[6.0, 6.0]]
    >>> exe.backward(mx.nd.ones((1, 2)))
    >>> exe.grad_dict["fc_weight"].asnumpy().tolist()
    [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
"""

from __future__ import annotations

import numpy as np

from .. import random_state
from ..base import MXNetError
from ..compiler import compile_graph
from ..context import Context, current_context
from ..graph import infer_shapes, infer_types
from ..limits import check_model_bytes
from ..ndarray.ndarray import NDArray
from .gradient import build_gradient, plan_backward

__all__ = ["Executor", "evaluate_symbol", "simple_bind"]

_GRAD_REQS = ("null", "write", "add")


# -- argument checking ----------------------------------------------------------------------

def _check_array(value, name, what):
    if not isinstance(value, NDArray):
        raise TypeError(f"bind: {what}[{name!r}] must be an NDArray, got "
                        f"{type(value).__name__}; Only accept list of NDArrays or dict of str "
                        f"to NDArray (wrap it with mx.nd.array)")
    return value


def _as_list(values, names, what, allow_missing=False):
    """``values`` (list in ``names`` order or dict by name) as a list aligned with ``names``;
    ``None`` entries only where ``allow_missing``."""
    if isinstance(values, dict):
        out = []
        for name in names:
            if name not in values or values[name] is None:
                if not allow_missing:
                    raise ValueError(f"bind: key `{name}` is missing in `{what}`; the symbol "
                                     f"needs {names}")
                out.append(None)
            else:
                out.append(_check_array(values[name], name, what))
        return out
    if isinstance(values, NDArray):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"bind: `{what}` must be a list of NDArrays or a dict of str to "
                        f"NDArray, got {type(values).__name__}")
    if len(values) != len(names):
        raise ValueError(f"bind: Length of {what} does not match the number of arguments: got "
                         f"{len(values)}, the symbol has {len(names)} ({names}); pass one per "
                         f"name, in this order, or a dict by name")
    return [None if (v is None and allow_missing) else _check_array(v, n, what)
            for n, v in zip(names, values)]


def _grad_reqs(grad_req, names, grads):
    """One of 'null'/'write'/'add' per argument ('null' where there is no gradient array)."""
    if isinstance(grad_req, str):
        reqs = [grad_req] * len(names)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, "null") for n in names]
    elif isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError(f"bind: grad_req has {len(grad_req)} entries for {len(names)} "
                             f"arguments ({names})")
        reqs = list(grad_req)
    else:
        raise TypeError(f"bind: grad_req must be a str, list or dict, got "
                        f"{type(grad_req).__name__}")
    for name, req in zip(names, reqs):
        if req not in _GRAD_REQS:
            raise ValueError(f"bind: grad_req {req!r} for argument {name!r}: grad_req must be "
                             f"in {{'null', 'write', 'add'}}")
    return [r if g is not None else "null" for r, g in zip(reqs, grads)]


def _variable_table(graph, table):
    """``{variable name: table value}`` for the variables of ``graph``."""
    return {n.name: table.get((i, 0)) for i, n in enumerate(graph.nodes) if n.is_variable}


def _shape_culprits(symbol, given):
    """``[(name, implied shape or None)]``: the variables without whose given shape the
    others are consistent (``implied``: the shape the others then give it)."""
    culprits = []
    if len(given) > _MAX_CULPRIT_SEARCH:  # one inference per input: not for 100k inputs
        return culprits
    for name in given:
        graph = symbol._graph()
        try:
            infer_shapes(graph, {k: v for k, v in given.items() if k != name})
        except MXNetError:
            continue
        implied = _variable_table(graph, graph.shapes).get(name)
        culprits.append((name, None if implied is None else tuple(implied)))
    culprits.sort(key=lambda c: c[1] is None)  # the ones with a known implied shape first
    return culprits


#: Above this many given shapes, a shape conflict is reported without naming the culprit.
_MAX_CULPRIT_SEARCH = 64


def _infer_bound_shapes(symbol, given, where):
    """Run shape inference with every given shape; a conflict names the variable."""
    graph = symbol._graph()
    try:
        infer_shapes(graph, given)
    except MXNetError as err:
        culprits = _shape_culprits(symbol, given)
        if not culprits:
            raise MXNetError(f"{where}: the shapes given are inconsistent: {err}; given "
                             f"{given}") from None
        name, implied = culprits[0]
        kind = "auxiliary state" if name in symbol.list_auxiliary_states() else "argument"
        others = ", ".join(f"{n} {tuple(given[n])}" for n, _ in culprits[1:])
        also = f" (or else {others} is wrong)" if others else ""
        if implied is None:
            raise MXNetError(f"{where}: {kind} {name!r} has shape {tuple(given[name])}, "
                             f"which conflicts with the other inputs{also}: {err}") from None
        raise MXNetError(f"{where}: {kind} {name!r} has shape {tuple(given[name])}, but "
                         f"the other inputs imply {implied} (Shape inconsistent, Provided = "
                         f"{tuple(given[name])}, inferred shape={implied}){also}; pass an "
                         f"array of shape {implied}") from None
    return graph


def _check_grad_shapes(arg_names, args, grads):
    for name, arg, grad in zip(arg_names, args, grads):
        if grad is not None and grad.shape != arg.shape:
            raise MXNetError(f"bind: args_grad[{name!r}] has shape {grad.shape}, but the "
                             f"argument has shape {arg.shape}; pass a gradient array of the "
                             f"argument's shape")


def _check_context(ctx, names, arrays, what):
    for name, array in zip(names, arrays):
        if array is not None and array.context != ctx:
            raise MXNetError(f"bind: {what} {name!r} is on {array.context} but the executor "
                             f"runs on {ctx}; move it with x.as_in_context({ctx}) first")


def _check_bytes(specs, what):
    """MXNetError before allocating arrays of ``specs`` (``(shape, dtype)`` pairs) when they
    pass the model cap (``limits.HYBRIDGPU_MAX_MODEL_BYTES``)."""
    nbytes = sum(int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
                 for shape, dtype in specs)
    check_model_bytes(nbytes, what)


def _zeros(ctx, shape, dtype):
    xp = ctx.xp
    if ctx.is_gpu:
        with ctx.scope():
            return NDArray(xp.zeros(shape, dtype=dtype), ctx)
    return NDArray(xp.zeros(shape, dtype=dtype), ctx)


def _device_array(value, ctx, what):
    """``value`` (NDArray, numpy array or nested list) as an array of ``ctx``'s module."""
    from ..ndarray.ndarray import to_device_array

    if isinstance(value, NDArray):
        return to_device_array(value._data, value._ctx, ctx, copy=False)
    if isinstance(value, (np.ndarray, np.generic, list, tuple, int, float)):
        return to_device_array(np.asarray(value), None, ctx, copy=False)
    if ctx.is_gpu and isinstance(value, ctx.xp.ndarray):
        return value
    raise TypeError(f"{what} must be an NDArray or a numpy array, got {type(value).__name__}")


class Executor:
    """Arrays bound to a symbol on one context, with ``forward`` and ``backward``.

    Made by ``Symbol.bind`` (arrays given) or ``Symbol.simple_bind`` (arrays allocated).
    ``arg_arrays``/``grad_arrays``/``aux_arrays`` follow ``list_arguments()`` and
    ``list_auxiliary_states()``; ``arg_dict``/``grad_dict``/``aux_dict``/``output_dict`` map
    names to the same NDArrays (``grad_dict`` holds None for arguments without a gradient).

    Example:
        >>> import hybridgpu as mx
        >>> a, b = mx.sym.var("a"), mx.sym.var("b")
        >>> exe = (a * b).bind(mx.cpu(), {"a": mx.nd.array([2.]), "b": mx.nd.array([5.])},
        ...                    args_grad={"a": mx.nd.zeros(1)})
        >>> exe.forward(is_train=True)[0].asnumpy().tolist()
        [10.0]
        >>> exe.backward(mx.nd.ones(1)); exe.grad_dict["a"].asnumpy().tolist(), exe.grad_dict["b"]
        ([5.0], None)
    """

    def __init__(self, symbol, ctx, args, args_grad=None, grad_req="write", aux_states=None):
        self._symbol = symbol
        self._ctx = Context(ctx) if ctx is not None else current_context()
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self.arg_arrays = _as_list(args, self._arg_names, "args")
        self.grad_arrays = ([None] * len(self._arg_names) if args_grad is None else
                            _as_list(args_grad, self._arg_names, "args_grad", True))
        self.aux_arrays = _as_list([] if aux_states is None else aux_states, self._aux_names,
                                   "aux_states")
        self._grad_req = _grad_reqs(grad_req, self._arg_names, self.grad_arrays)
        for names, arrays, what in ((self._arg_names, self.arg_arrays, "argument"),
                                    (self._arg_names, self.grad_arrays, "gradient of"),
                                    (self._aux_names, self.aux_arrays, "auxiliary state")):
            _check_context(self._ctx, names, arrays, what)
        _check_grad_shapes(self._arg_names, self.arg_arrays, self.grad_arrays)
        self._graph = self._checked_graph()
        self.outputs = self._allocate_outputs()
        self.arg_dict = dict(zip(self._arg_names, self.arg_arrays))
        self.grad_dict = dict(zip(self._arg_names, self.grad_arrays))
        self.aux_dict = dict(zip(self._aux_names, self.aux_arrays))
        self._plan = None
        self._saved = None
        self._saved_train = False

    # -- binding ------------------------------------------------------------------------
    def _given(self, attr):
        names = [*self._arg_names, *self._aux_names]
        arrays = [*self.arg_arrays, *self.aux_arrays]
        return {n: getattr(a, attr) for n, a in zip(names, arrays)}

    def _checked_graph(self):
        """The forward Graph with shapes inferred from the bound arrays (errors name the
        argument whose shape disagrees) and dtypes where they can be inferred."""
        graph = _infer_bound_shapes(self._symbol, self._given("shape"), "bind")
        names = {}  # dtype -> name, once each (np.dtype(...).name is slow Python)
        given = {k: names.get(v) or names.setdefault(v, np.dtype(v).name)
                 for k, v in self._given("dtype").items()}
        try:
            infer_types(graph, given)
        except MXNetError:
            graph.dtypes.clear()  # mixed dtypes: let the ops decide at run time
        return graph

    def _allocate_outputs(self):
        """Zero output arrays, after checking their bytes against the model cap."""
        specs = []
        for entry in self._graph.outputs:
            key = self._graph.key(entry)
            shape = self._graph.shapes.get(key)
            specs.append((shape if shape is not None else (0,),
                          self._graph.dtypes.get(key) or "float32"))
        _check_bytes(specs, "bind: the outputs")
        return [_zeros(self._ctx, shape, dtype) for shape, dtype in specs]

    @property
    def output_dict(self):
        """``{output name: NDArray}`` (``list_outputs()`` names)."""
        return dict(zip(self._output_names, self.outputs))

    @property
    def symbol(self):
        """The symbol this executor runs."""
        return self._symbol

    @property
    def context(self):
        """The Context the executor runs on."""
        return self._ctx

    ctx = context

    @property
    def grad_req(self):
        """``{argument name: 'null' | 'write' | 'add'}`` in effect."""
        return dict(zip(self._arg_names, self._grad_req))

    def debug_str(self):
        """The forward graph, printed one node a line."""
        return str(self._graph)

    # -- running ------------------------------------------------------------------------
    def _run(self, graph, values, is_train):
        """Run ``graph`` through the compiler (the same pipeline as hybridized blocks), one
        compiled Executable per (graph, train mode)."""
        compiled = self.__dict__.setdefault("_compiled", {})
        key = (id(graph), bool(is_train))
        entry = compiled.get(key)
        if entry is None or entry[0] is not graph:
            entry = compiled[key] = (graph, compile_graph(graph, self._ctx, bool(is_train)))
        return entry[1](values, rng=random_state.generator(self._ctx))

    def _values(self):
        """Inputs of the interpreter: the bound arrays' own data (aux updated in place)."""
        values = {n: a._data for n, a in zip(self._arg_names, self.arg_arrays)}
        values.update((n, a._data) for n, a in zip(self._aux_names, self.aux_arrays))
        return values

    def _set_argument(self, name, value):
        target = self.arg_dict.get(name)
        if target is None:
            raise TypeError(f"Unknown argument {name}: forward() takes the symbol's arguments "
                            f"{self._arg_names} by name")
        data = _device_array(value, self._ctx, f"forward: argument {name!r}")
        if tuple(data.shape) != target.shape:
            raise ValueError(f"Shape not match! Argument {name}, need: {target.shape}, "
                             f"received: {tuple(data.shape)}; for a new shape use "
                             f"executor.reshape({name}={tuple(data.shape)}) or bind again")
        target._data[...] = data

    def _store_outputs(self, results):
        for out, result in zip(self.outputs, results):
            if out._data.shape == result.shape and out._data.dtype == result.dtype:
                out._data[...] = result
            else:  # inference could not tell: adopt the computed shape and dtype
                out._data = result.copy()

    def _needs_grad(self):
        return any(r != "null" for r in self._grad_req)

    def forward(self, is_train=False, **kwargs):
        """Evaluate the outputs (``is_train`` selects train-mode behaviour: batch statistics,
        dropout); keywords overwrite argument arrays by name first. Returns ``outputs``."""
        for name, value in kwargs.items():
            self._set_argument(name, value)
        values = self._values()
        if is_train and self._needs_grad():
            plan = self._backward_plan()
            results = self._run(plan.forward, values, True)
            self._saved = dict(zip(plan.saved_names, results[plan.num_outputs:]))
            self._saved_train = True
            results = results[:plan.num_outputs]
        else:
            results = self._run(self._graph, values, bool(is_train))
            self._saved, self._saved_train = None, False
        self._store_outputs(results)
        return self.outputs

    # -- gradients ----------------------------------------------------------------------
    def _backward_plan(self):
        """The forward-with-saved-values and backward graphs (built once, on first need)."""
        if self._plan is None:
            wrt = [n for n, r in zip(self._arg_names, self._grad_req) if r != "null"]
            dtypes = {k: np.dtype(v).name for k, v in self._given("dtype").items()}
            gradient = build_gradient(self._symbol, wrt, shapes=self._given("shape"),
                                      dtypes=dtypes)
            self._plan = plan_backward(gradient)
        return self._plan

    def _head_grads(self, out_grads, plan):
        """``{head-gradient variable name: array}`` for the outputs the gradients read."""
        if out_grads is None:
            out_grads = []
        elif not isinstance(out_grads, (list, tuple)):
            out_grads = [out_grads]
        if out_grads and len(out_grads) != len(self.outputs):
            raise MXNetError(f"backward: got {len(out_grads)} out_grads for "
                             f"{len(self.outputs)} outputs {self._output_names}; pass one array "
                             f"per output, in this order")
        heads = {}
        for i in plan.needed_heads:
            name, out = self._output_names[i], self.outputs[i]
            if not out_grads or out_grads[i] is None:
                raise MXNetError(
                    f"backward: output {name!r} needs a head gradient: Because the last "
                    f"operator is not Loss function, head_gradient is required when calling "
                    f"backward. Pass out_grads (one array of each output's shape, e.g. "
                    f"mx.nd.ones({out.shape})); to minimize the output as an objective, "
                    f"pass it through a loss op such as make_loss")
            data = _device_array(out_grads[i], self._ctx, f"backward: out_grads[{i}]")
            if tuple(data.shape) != out.shape:
                raise MXNetError(f"backward: out_grads[{i}] for output {name!r} has shape "
                                 f"{tuple(data.shape)}, but the output has shape {out.shape}")
            heads[plan.head_names[i]] = data.astype(out._data.dtype, copy=False)
        return heads

    def backward(self, out_grads=None, is_train=True):
        """Compute the gradients of the arguments with grad_req 'write' (overwrite) or 'add'
        (accumulate) into ``grad_arrays``. ``out_grads``: one array per output (or one array),
        needed unless every output is a loss op. The backward graph runs in the mode of the
        forward it differentiates (``is_train`` is accepted for compatibility)."""
        if not self._needs_grad():
            return
        plan = self._backward_plan()
        heads = self._head_grads(out_grads, plan)
        values = self._values()
        if self._saved is None:  # the last forward saved nothing: recompute in predict mode
            results = self._run(plan.forward, values, False)
            self._saved = dict(zip(plan.saved_names, results[plan.num_outputs:]))
            self._saved_train = False
        grads = self._run(plan.backward, {**values, **self._saved, **heads}, self._saved_train)
        wrt = [(a, r) for a, r in zip(self.grad_arrays, self._grad_req) if r != "null"]
        for (array, req), grad in zip(wrt, grads):
            if req == "add":
                array._data += grad
            else:
                array._data[...] = grad

    # -- parameters and shapes ----------------------------------------------------------
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy values by name into the argument (and auxiliary) arrays; a name the symbol
        does not have raises unless ``allow_extra_params``."""
        for params, table, what in ((arg_params, self.arg_dict, "arguments"),
                                    (aux_params or {}, self.aux_dict, "auxiliary states")):
            for name, value in params.items():
                target = table.get(name)
                if target is None:
                    if allow_extra_params:
                        continue
                    raise ValueError(f'Find name "{name}" that is not in the {what} '
                                     f"{list(table)}; pass allow_extra_params=True to skip it")
                data = _device_array(value, self._ctx, f"copy_params_from: {name!r}")
                if tuple(data.shape) != target.shape:
                    raise MXNetError(f"copy_params_from: {name!r} has shape "
                                     f"{tuple(data.shape)}, the executor's array has "
                                     f"{target.shape}")
                target._data[...] = data

    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new Executor for new input shapes (keywords), sharing every array whose shape
        is unchanged. Other arrays are new (zeros); one that grows needs
        ``allow_up_sizing``, one not named in ``kwargs`` needs ``partial_shaping``."""
        old = self._given("shape")
        graph = _infer_bound_shapes(self._symbol, dict(kwargs), "reshape")
        shapes = _variable_table(graph, graph.shapes)
        missing = {n: s for n, s in old.items() if n not in kwargs and shapes.get(n) is None}
        if missing:
            graph = _infer_bound_shapes(self._symbol, {**missing, **kwargs}, "reshape")
            shapes = _variable_table(graph, graph.shapes)
        args, grads, aux = [], [], []
        for name, array, grad in zip(self._arg_names, self.arg_arrays, self.grad_arrays):
            args.append(self._reshaped(name, array, shapes[name], kwargs, partial_shaping,
                                       allow_up_sizing))
            grads.append(None if grad is None else grad if args[-1] is array else
                         _zeros(self._ctx, args[-1].shape, grad.dtype))
        for name, array in zip(self._aux_names, self.aux_arrays):
            aux.append(self._reshaped(name, array, shapes[name], kwargs, partial_shaping,
                                      allow_up_sizing))
        return Executor(self._symbol, self._ctx, args, grads, list(self._grad_req), aux)

    def _reshaped(self, name, array, shape, kwargs, partial_shaping, allow_up_sizing):
        shape = tuple(shape)
        if shape == array.shape:
            return array
        if name not in kwargs and not partial_shaping:
            raise MXNetError(f"reshape: the shape of {name!r} changes from {array.shape} to "
                             f"{shape}; pass partial_shaping=True to allow it")
        if int(np.prod(shape)) > array.size and not allow_up_sizing:
            raise MXNetError(f"reshape: New shape of arg: {name} {shape} is larger than "
                             f"original {array.shape}; pass allow_up_sizing=True to allocate "
                             f"new arrays")
        return _zeros(self._ctx, shape, array.dtype)

    def __repr__(self):
        return (f"<Executor {self._symbol.name or self._output_names} on {self._ctx}: "
                f"arguments {self._arg_names}>")


# -- Symbol.eval and Symbol.simple_bind -----------------------------------------------------

def evaluate_symbol(symbol, ctx, kwargs):
    """``Symbol.eval``: the outputs (a list of NDArrays) for inputs given by name, in
    predict mode. Arguments and auxiliary states must all be given; arrays on another context
    are copied to ``ctx`` (default: the current context)."""
    ctx = Context(ctx) if ctx is not None else current_context()
    arrays = {}
    for name, value in kwargs.items():
        if isinstance(value, NDArray):
            arrays[name] = value.as_in_context(ctx)
        else:
            arrays[name] = NDArray(_device_array(value, ctx, f"eval: {name!r}"), ctx)
    names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    for name in (*names, *aux_names):
        if name not in arrays:
            raise ValueError(f"eval: key `{name}` is missing in `args`; the symbol needs "
                             f"{names}" + (f" and auxiliary states {aux_names}" if aux_names
                                           else ""))
    exe = Executor(symbol, ctx, {n: arrays[n] for n in names}, None, "null",
                   {n: arrays[n] for n in aux_names})
    return list(exe.forward(is_train=False))


def _infer_variable_dtypes(symbol, type_dict):
    """``{variable name: dtype name}``: ``type_dict`` and what inference derives from it,
    float32 for the rest (as MXNet's simple_bind)."""
    given = {k: np.dtype(v).name for k, v in (type_dict or {}).items()}
    graph = symbol._graph()
    infer_types(graph, given)
    found = _variable_table(graph, graph.dtypes)
    if any(v is None for v in found.values()):
        given = {**{k: v or "float32" for k, v in found.items()}, **given}
        graph = symbol._graph()
        infer_types(graph, given)
        found = _variable_table(graph, graph.dtypes)
    return found


def simple_bind(symbol, ctx, grad_req="write", type_dict=None, shapes=None):
    """``Symbol.simple_bind``: an Executor with zero arrays of the shapes inferred from
    ``shapes`` (variable name -> shape) and the dtypes of ``type_dict`` (default float32);
    gradient arrays for every argument whose grad_req is not 'null'."""
    ctx = Context(ctx) if ctx is not None else current_context()
    shapes = {k: tuple(v) for k, v in (shapes or {}).items()}
    graph = _infer_bound_shapes(symbol, shapes, "simple_bind")
    table = _variable_table(graph, graph.shapes)
    unknown = [n for n, s in table.items() if s is None or not all(d > 0 for d in s)]
    if unknown:
        raise MXNetError(
            f"simple_bind: cannot infer the shapes of {unknown} from the shapes given "
            f"({shapes or 'none'}); known so far: "
            f"{ {n: table[n] for n in unknown} }. Pass them as keywords, e.g. "
            f"simple_bind(ctx, {unknown[0]}=(...))")
    dtypes = _infer_variable_dtypes(symbol, type_dict)
    arg_names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    reqs = _grad_reqs(grad_req, arg_names, [True] * len(arg_names))
    _check_bytes([(table[n], dtypes[n]) for n in [*arg_names, *aux_names]]
                 + [(table[n], dtypes[n]) for n, r in zip(arg_names, reqs) if r != "null"],
                 "simple_bind: the arguments, auxiliary states and gradients")
    args = {n: _zeros(ctx, table[n], dtypes[n]) for n in arg_names}
    aux = {n: _zeros(ctx, table[n], dtypes[n]) for n in aux_names}
    grads = {n: _zeros(ctx, table[n], dtypes[n]) for n, r in zip(arg_names, reqs)
             if r != "null"}
    return Executor(symbol, ctx, args, grads, reqs, aux)
