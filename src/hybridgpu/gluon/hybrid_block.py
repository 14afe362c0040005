"""``HybridBlock``: write ``hybrid_forward(F, x, **params)`` once; run it imperatively
(``F = nd``) or, after ``hybridize()``, trace it (``F = sym``) and replay the traced graph.

Two keys (docs/gluon.md, "When hybrid_forward runs"): the *trace key* decides when the Python
of ``hybrid_forward`` runs again: the argument structure plus only what the Python read while
traced (input shapes, dtypes, train mode; ``modes.watching_reads``). The *compile key* (argument
structure, shapes, dtypes, context, train mode) holds one compiled Executable each
(``compiler.compile_graph``); a new compile key with a known trace key re-infers the traced
graph's shapes, as MXNet does. Inputs are traced as variables of known shape, so ``x.shape``
works inside ``hybrid_forward``; reading it makes that trace specific to the shape.

Example:
    >>> import hybridgpu as mx
    >>> class Double(HybridBlock):
    ...     def hybrid_forward(self, F, x):
    ...         print("tracing" if F is mx.sym else "imperative")
    ...         return x * 2
    >>> net = Double()
    >>> net.hybridize()
    >>> net(mx.nd.ones((1, 2))).asnumpy()
    tracing
    array([[2., 2.]], dtype=float32)
    >>> net(mx.nd.ones((3, 2))).shape  # a new shape: re-inferred, hybrid_forward does not run
    (3, 2)
"""

from __future__ import annotations

import functools
import inspect
import re
import threading
import warnings
from collections import OrderedDict, namedtuple

import numpy as np

from .. import modes, random_state, symbol
from .. import ndarray as nd
from ..base import ArgumentTypeError, MXNetError
from ..compiler import compile_graph
from ..graph import Graph, InferenceError, infer_shapes, infer_types
from ..ndarray import NDArray
from ..ops.rules import known
from ..serialization import files
from ..symbol import NotAvailableOnSymbol, Symbol
from .block import Block
from .nesting import flatten, regroup
from .numpy_mode import NumpyArray, front_end, in_numpy_mode, numpy_call, to_numpy
from .parameter import DeferredInitializationError, DeferredShapeError
from .traced_backward import run_recorded

__all__ = ["HybridBlock", "BlockInputError", "DeferredInferenceError", "CompiledSignature",
           "HybridForwardError"]

#: Signatures kept per block before the oldest is dropped (with one warning).
MAX_TRACES = 8
#: A program (one run of the Python) compiled for more distinct input shapes than this gets,
#: for every later shape, kernels that take sizes as arguments (gpu: no new kernel compile).
SHAPE_ARGS_AFTER = 4
_HYBRIDIZE_FLAGS = ("static_alloc", "static_shape", "inline_limit", "forward_bulk_size",
                    "backward_bulk_size", "cuda_graph", "clear", "backend", "static_output")


class _Program:
    """What running ``hybrid_forward``'s Python once produced: the traced Symbol, how its
    variables map to inputs and Parameters, and what the Python read (its guards).

    The trace key is the argument structure plus only what was read: a program that read no
    shape serves every input shape (shapes are re-inferred on its graph), one that read a shape
    serves only the shapes it was traced with; the same for dtypes and train mode."""

    def __init__(self, symbol_, input_names, params, in_format, out_format, reads, flat):
        self.symbol = symbol_
        self.input_names = input_names
        self.params = params          # [(variable name, Parameter)]
        self.in_format = in_format
        self.out_format = out_format
        self.reads = frozenset(reads)
        self.guard = self.guard_values(flat)
        self.compiled_shapes = set()  # input shapes compiled from this program

    def guard_values(self, flat):
        """The values of what this program read, for inputs ``flat`` and the current mode."""
        return (tuple(a.shape for a in flat) if "shape" in self.reads else None,
                tuple(a.dtype for a in flat) if "dtype" in self.reads else None,
                modes.is_training() if "training" in self.reads else None)

    def serves(self, in_format, flat):
        """True when this program's Python would run the same for inputs ``flat``."""
        return (in_format == self.in_format and len(flat) == len(self.input_names)
                and self.guard_values(flat) == self.guard)


class _Trace:
    """One compile signature (shapes, dtypes, context, train mode) of a program: its graph
    with this signature's shapes and dtypes, and its compiled Executable."""

    def __init__(self, graph, program):
        self.graph = graph
        self.program = program
        self.input_names = program.input_names
        self.params = program.params
        self.out_format = program.out_format
        self.symbol = program.symbol  # the traced Symbol, for export
        self.executable = None        # compiled on first replay (compile_graph)


def _named_error(err, block):
    """``err`` (an op error raised while ``block`` ran imperatively) naming the block, unless
    it already names a block (an inner layer's, or a subclass carrying its own context)."""
    message = str(err)
    if type(err) is not MXNetError or repr(block.name) in message or message.startswith("in "):
        return err
    return MXNetError(f"in {type(block).__name__} {block.name!r}: {message}")


def _signature_key(in_format, flat, ctx):
    """The compile key: argument structure, shapes and dtypes, context, train mode (one
    Executable each; whether the Python runs again is the program's trace key)."""
    return (in_format, tuple((a._data.shape, a._data.dtype.str) for a in flat), ctx,
            modes.is_training())


_ONE_INPUT = repr([0])  # the argument structure of the common call net(x)


#: One compiled signature of a HybridBlock (``HybridBlock.compiled_signatures()``).
CompiledSignature = namedtuple("CompiledSignature", ["inputs", "context", "training",
                                                     "arena_bytes", "shape_args"])


class DeferredInferenceError(InferenceError, ValueError):
    """Shape inference failed on the first forward, while parameters wait for their shapes
    (MXNet 1.9.1: ``ValueError``); also an InferenceError, hence an MXNetError."""


class BlockInputError(TypeError, ValueError):
    """A HybridBlock called with something that is neither NDArray nor Symbol (MXNet 1.9.1:
    ``ValueError``; hybridgpu raised ``TypeError`` before, so it is both)."""


class HybridForwardError(MXNetError, TypeError):
    """``hybrid_forward`` written or used in a way HybridBlock cannot run: a registered
    Parameter its signature lacks, an NDArray mixed into the traced Symbols, NDArray-style
    indexing of a traced Symbol. The message names the block, what was wrong and what to write
    instead. A TypeError (what MXNet 1.9.1 raises for these) and an MXNetError."""


#: Symbol misuse while tracing -> what was wrong and what to write instead.
_SLICE_HINT = (
    "while hybridized, hybrid_forward's inputs are Symbols, and on a Symbol len(x) counts its "
    "outputs (1) and x[i] / x[a:b] select outputs, not rows as on an NDArray "
    "(x[:len(x) // 2] is an empty group); slice rows with F.slice_axis(x, axis=0, begin=0, "
    "end=x.shape[0] // 2) (x.shape works while tracing), which runs the same with F = nd")
_NDARRAY_HINT = (
    "while hybridized, hybrid_forward's inputs and parameters are Symbols (F = mx.sym), and an "
    "NDArray (made with nd.* or held by the block) is a value outside the graph; make it part "
    "of the graph: a constant parameter (self.c = self.params.get_constant('c', value) in "
    "__init__, then take c as an argument of hybrid_forward), or build it with F "
    "(F.ones_like(x), F.arange(...)), so the same code runs with F = nd and F = sym")
_TRACE_TRAPS = (
    (TypeError, re.compile(r"unsupported operand type\(s\) for (\S+): '(Symbol|NDArray)' and "
                           r"'(Symbol|NDArray)'"), _NDARRAY_HINT),
    (TypeError, re.compile(r"(\w+): input '(\w+)' must be a Symbol, got NDArray"), _NDARRAY_HINT),
    (MXNetError, re.compile(r"(\w+): input '(\w+)' is a group of 0 outputs"), _SLICE_HINT),
    (IndexError, re.compile(r"Symbol index (-?\d+) out of range for 1 outputs"), _SLICE_HINT),
)


def _trace_trap(err):
    """The ``_TRACE_TRAPS`` explanation of ``err`` (raised by Symbol code while tracing), or
    None when it is not one of them."""
    if isinstance(err, HybridForwardError):
        return None
    for kind, pattern, hint in _TRACE_TRAPS:
        if isinstance(err, kind) and pattern.search(str(err)):
            return f"{err}: {hint}"
    return None


@functools.cache
def _signature_misses(hybrid_forward, param_names):
    """The Parameter names (passed by keyword) that ``hybrid_forward`` cannot take."""
    try:
        sig = inspect.signature(hybrid_forward)
    except (TypeError, ValueError):
        return ()
    kinds = {p.name: p.kind for p in sig.parameters.values()}
    if inspect.Parameter.VAR_KEYWORD in kinds.values():
        return ()
    takes = {n for n, k in kinds.items() if k != inspect.Parameter.POSITIONAL_ONLY}
    return tuple(n for n in param_names if n not in takes)


@functools.cache
def _input_range(hybrid_forward, param_names):
    """``(fewest, most)`` positional inputs ``hybrid_forward`` takes after ``F``, its
    parameters (passed by name) left out; ``most`` is huge for ``*args``."""
    try:
        sig = inspect.signature(hybrid_forward)
    except (TypeError, ValueError):
        return 0, 1 << 31
    low = high = 0
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for param in list(sig.parameters.values())[2:]:  # self, F
        if param.kind == inspect.Parameter.VAR_POSITIONAL:
            high = 1 << 31
        elif param.kind in positional and param.name not in param_names:
            high += 1
            low += param.default is inspect.Parameter.empty
    return low, max(high, low)


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
        self._traces = OrderedDict()  # compile key -> _Trace
        self._programs = []           # _Program, newest last: runs of the Python
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
            # counts the clears (a child added, a cast, hybridize): TrainStep re-collects
            self.__dict__["_cache_version"] = self.__dict__.get("_cache_version", 0) + 1
            self._traces.clear()
            self._programs.clear()
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
        if isinstance(x, NumpyArray) and not in_numpy_mode():
            with numpy_call():  # mx.np inputs: NumPy mode for this call (numpy_mode.py)
                return self.forward(x, *args)
        if not args and self._active and (type(x) is NDArray or type(x) is NumpyArray):
            out = self._replay_one(x)
            if out is not None:
                return out if type(x) is NDArray else to_numpy(out)
        if not isinstance(x, NDArray):
            raise BlockInputError(
                f"In HybridBlock, there must be one NDArray or one Symbol in the input. Please "
                f"check the type of the args: HybridBlock requires the first argument to forward "
                f"be either Symbol or NDArray, but {type(self).__name__} {self.name!r} got "
                f"{type(x)}"
                + ("; convert it with mx.nd.array(...)" if hasattr(x, "__array__") else ""))
        self._check_input_count(1 + len(args))
        ctx = x.context
        self._check_contexts(ctx, args)
        with ctx:
            if self._active:
                return to_numpy(self._call_traced(x, *args))
            params = self._param_data(ctx, (x, *args))
            try:
                return to_numpy(self.hybrid_forward(front_end(nd), x, *args, **params))
            except MXNetError as err:
                raise _named_error(err, self) from None
            except TypeError:
                problem = self._signature_error(params)
                if problem is None:
                    raise
                raise problem from None

    def _check_input_count(self, count):
        """TypeError naming the block when ``count`` inputs do not fit ``hybrid_forward``
        (Python's own message would say "got multiple values for argument 'weight'")."""
        low, high = _input_range(type(self).hybrid_forward, tuple(self._reg_params))
        if low <= count <= high:
            return
        takes = f"{low}" if low == high else f"{low} to {high}" if high < 1 << 30 else \
            f"at least {low}"
        try:
            shown = f"hybrid_forward{inspect.signature(self.hybrid_forward)}"
        except (TypeError, ValueError):
            shown = "hybrid_forward"
        raise TypeError(f"{type(self).__name__} {self.name!r} was called with {count} "
                        f"input{'s' if count != 1 else ''}, but its {shown} takes {takes} after "
                        f"F (its Parameters {sorted(self._reg_params)} are passed by name); "
                        "pass one array for each of its inputs")

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
            unused = [v.name for v in self._reg_params.values() if v._deferred_init]
            if unused:
                raise DeferredShapeError(
                    f"Deferred initialization failed because shape cannot be inferred: "
                    f"{type(self).__name__} {self.name!r} does not use Parameter(s) {unused} in "
                    "hybrid_forward, so nothing fixes their unknown (0) dimensions; give their "
                    "full shape when creating them") from None
            return {k: v.data(ctx) for k, v in self._reg_params.items()}

    def _symbol_forward(self, x, *args):
        self._check_input_count(1 + len(args))
        params = {k: to_numpy(v.var()) for k, v in self._reg_params.items()}
        self._traced_input = x  # lets a shape error report this layer's input shape
        try:
            with self.name_scope():
                return self.hybrid_forward(front_end(symbol), x, *args, **params)
        except (NotAvailableOnSymbol, ArgumentTypeError) as err:
            raise self._named(err) from None
        except (TypeError, IndexError, MXNetError) as err:
            problem = self._signature_error(params) if isinstance(err, TypeError) else None
            trap = None if problem else _trace_trap(err)
            if trap:
                problem = HybridForwardError(f"in HybridBlock {self.name!r} ({type(self).__name__}"
                                             f".hybrid_forward, while tracing): {trap}")
            if problem is None:
                raise
            raise problem from None

    def _signature_error(self, params):
        """A HybridForwardError when ``hybrid_forward``'s signature cannot take the
        Parameters ``params`` (passed by name), else None."""
        missing = _signature_misses(type(self).hybrid_forward, tuple(params))
        if not missing:
            return None
        try:
            shown = f"hybrid_forward{inspect.signature(self.hybrid_forward)}"
        except (TypeError, ValueError):
            shown = "hybrid_forward"
        names = ", ".join(missing)
        return HybridForwardError(
            f"{type(self).__name__} {self.name!r} registers Parameter(s) {list(missing)} "
            f"(self.{missing[0]} = self.params.get({missing[0]!r}, ...)), and every registered "
            f"Parameter is passed to hybrid_forward by name, but its {shown} has no argument "
            f"named {names}: add {names} to its arguments, def hybrid_forward(self, F, x, "
            f"{names}) (or take **kwargs)")

    def _named(self, err):
        """``err`` (raised by NDArray-only code while tracing) naming this block."""
        message = str(err)
        if message.startswith("in HybridBlock"):
            return err
        return type(err)(f"in HybridBlock {self.name!r} ({type(self).__name__}."
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
            trace.executable = self._compile(trace, key, ctx)
        outs = trace.executable(values, rng=random_state.generator(ctx))
        return regroup([NDArray(o, ctx) for o in outs], trace.out_format)

    def _compile(self, trace, key, ctx):
        """The Executable of ``trace`` (compile key ``key``); on gpu, past
        ``SHAPE_ARGS_AFTER`` distinct input shapes of its program, with kernels taking sizes
        as arguments."""
        seen = trace.program.compiled_shapes
        seen.add(tuple(shape for shape, _ in key[1]))
        flags = {**self._flags, "data_inputs": tuple(trace.input_names), "block": self.name}
        if len(seen) > SHAPE_ARGS_AFTER and ctx.device_type == "gpu":
            flags["shape_args"] = True
        return compile_graph(trace.graph, ctx, key[3], flags)

    @property
    def last_executable(self):
        """The compiled program of the signature this block traced or compiled last (None
        before the first hybridized call): ``print(net.last_executable)`` shows it (on cpu
        the generated NumPy program, on gpu its steps), ``.source`` is its text.

        Example:
            >>> import hybridgpu as mx
            >>> from hybridgpu.gluon import nn
            >>> net = nn.Dense(2, in_units=3, prefix="fc_")
            >>> net.initialize(); net.hybridize(); _ = net(mx.nd.ones((1, 3)))
            >>> net.last_executable
            <CpuExecutable 'fc' on cpu(0) predict: data (1, 3) float32 -> (1, 2) float32>
        """
        trace = self._last_trace
        return None if trace is None else trace.executable

    def compiled_program(self, *args):
        """The compiled program ``net(*args)`` runs (traced and compiled now if needed; not
        run): the Executable of that signature. The block must be hybridized.

        Example:
            >>> import hybridgpu as mx
            >>> from hybridgpu.gluon import nn
            >>> net = nn.Dense(2, in_units=3, prefix="fc_")
            >>> net.initialize(); net.hybridize()
            >>> exe = net.compiled_program(mx.nd.ones((4, 3)))
            >>> exe.signature()
            "'fc' on cpu(0) predict: data (4, 3) float32 -> (4, 2) float32"
        """
        if not self._active:
            raise MXNetError(f"{type(self).__name__} {self.name!r} is not hybridized, so it "
                             "runs no compiled program: call net.hybridize() first")
        if not args or not isinstance(args[0], NDArray):
            raise BlockInputError(f"{type(self).__name__}.compiled_program takes the inputs "
                                  "of a call (NDArrays), as net(*args) does")
        self._check_input_count(len(args))
        ctx = args[0].context
        self._check_contexts(ctx, args[1:])
        flat, in_format = flatten(list(args), "input", _is_leaf)
        key = _signature_key(repr(in_format), flat, ctx)
        with ctx:
            with self._trace_lock:
                trace = self._traces.get(key) or self._new_trace(key, flat, in_format, ctx)
            if trace.executable is None:
                trace.executable = self._compile(trace, key, ctx)
        return trace.executable

    def compiled_signatures(self):
        """The signatures this block has compiled (oldest first), as ``CompiledSignature``
        tuples: ``inputs`` (``(shape, dtype name)`` each), ``context``, ``training``,
        ``arena_bytes`` (device memory the gpu program holds; None on backends without an
        arena) and ``shape_args`` (its kernels take sizes as arguments)."""
        found = []
        for key, trace in self._traces.items():
            exe = trace.executable
            if exe is None:
                continue
            inputs = tuple((shape, np.dtype(dtype).name) for shape, dtype in key[1])
            flags = getattr(exe, "flags", None) or {}
            found.append(CompiledSignature(inputs, key[2], key[3],
                                           getattr(exe, "arena_bytes", None),
                                           bool(flags.get("shape_args"))))
        return found

    def _new_trace(self, key, flat, in_format, ctx):
        """The _Trace of a new compile key: the graph of a program whose guards hold for
        these inputs, re-inferred for their shapes and dtypes, or else a new run of the
        Python."""
        program = next((p for p in reversed(self._programs) if p.serves(key[0], flat)), None)
        trace = None
        if program is not None:
            try:
                trace = self._specialize(program, flat)
            except InferenceError:  # run the Python: the layers' own checks say what is wrong
                trace = None
        if trace is None:
            trace = self._trace(flat, in_format, ctx)
            self._programs.append(trace.program)
            del self._programs[:-MAX_TRACES]
        if len(self._traces) >= MAX_TRACES:
            self._traces.popitem(last=False)
            if not self._warned_cap:
                self._warned_cap = True
                warnings.warn(f"HybridBlock {self.name!r} has been compiled for more than "
                              f"{MAX_TRACES} input signatures (shapes, dtypes, contexts, train "
                              "mode); the oldest are dropped and compiled again when needed",
                              stacklevel=4)
        self._traces[key] = trace
        self._last_trace = trace
        return trace

    def _trace(self, flat, in_format, ctx):
        """Trace ``hybrid_forward`` with Symbols for the arrays ``flat``, recording what the
        Python reads; fills deferred parameter shapes and finishes their initialization."""
        names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
        inputs = to_numpy([symbol.var(n, shape=a.shape, dtype=a.dtype)
                           for n, a in zip(names, flat)])  # NumpySymbols in NumPy mode
        grouped = regroup(inputs, in_format)
        with modes.watching_reads() as reads:
            out = self._symbol_forward(*grouped)
        flat_out, out_format = flatten(out, "output", lambda v: isinstance(v, Symbol), _width)
        if any(not s._outputs for s in flat_out):
            raise HybridForwardError(
                f"in HybridBlock {self.name!r} ({type(self).__name__}.hybrid_forward, while "
                f"tracing): it returned a Symbol of no outputs (an empty group): {_SLICE_HINT}")
        traced = symbol.Group(flat_out)
        graph = Graph(traced._outputs)
        # parameters' current shapes win over the (possibly deferred) ones their variables
        # were made with
        given = {p.name: p.shape for p in self.collect_params().values() if known(p.shape)}
        self._infer(graph, names, flat, given)
        params = self._bind_parameters(graph)
        for node in graph.nodes:  # exported files carry no input shapes, as MXNet's
            if node.name in names and node.is_variable:
                node.extra.pop("__shape__", None)
                node.extra.pop("__dtype__", None)
        program = _Program(traced, names, params, repr(in_format), out_format, reads, flat)
        trace = _Trace(graph, program)
        self._last_trace = trace
        return trace

    def _specialize(self, program, flat):
        """A _Trace of ``program`` for inputs ``flat`` without running the Python again:
        shapes and dtypes inferred afresh on the traced graph (as MXNet does)."""
        graph = Graph(program.symbol._outputs)
        given = {p.name: p.shape for _, p in program.params if known(p.shape)}
        self._infer(graph, program.input_names, flat, given)
        return _Trace(graph, program)

    def _infer(self, graph, names, flat, given):
        given = {**given, **{n: a.shape for n, a in zip(names, flat)}}
        try:
            infer_types(graph, {n: a._data.dtype.name for n, a in zip(names, flat)})
        except InferenceError as err:
            raise self._dtype_error(err, flat) from None
        try:
            infer_shapes(graph, given)
        except InferenceError as err:
            error = self._layer_error(graph, err)
            if any(p._deferred_init for p in self.collect_params().values()):
                error = DeferredInferenceError(
                    f"Deferred initialization failed because shape cannot be inferred. {error}",
                    err.node_name)
            raise error from None

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
        aux = set(traced.list_auxiliary_states())
        arrays = {}  # in the order the graph reads them, as MXNet writes them
        for name, param in self._last_trace.params:
            arrays[f"{'aux' if name in aux else 'arg'}:{name}"] = param._reduce()
        with files.together():  # both written first; then params renamed, then the symbol
            nd.save(params_file, arrays)
            traced.save(sym_file)
        return sym_file, params_file
