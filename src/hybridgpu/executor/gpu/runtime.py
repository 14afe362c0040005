"""``GpuExecutable``: runs a GPU ``Program`` on CuPy, captured once as CUDA graphs and replayed.

A call (the Executable contract of ``compiler.pipeline``):

1. The replay stream (a non-blocking stream the executable owns) waits for an event recorded
   on the caller's current stream, so it sees the inputs the caller wrote.
2. The staged inputs are copied device-to-device into their arena regions.
3. The steps run. The first call runs them eagerly (compiling the kernels; GEMMs go through the
   device's one cuBLAS handle, ``cublas.device_handle``); then each captured segment (a run of
   steps between eager ones) is captured into a ``cupy.cuda.Graph`` without running. Every
   later call launches the graphs, with the eager steps run between them.
   ``cuda_graph=False`` runs every call eagerly.
4. The outputs are copied out into fresh arrays (``static_output=True``: the arena's own
   buffers are returned, overwritten by the next call).
5. The caller's stream waits for an event recorded on the replay stream.

A graph reads bound inputs (parameters) by the pointer they had at capture: every call checks
those pointers, and a parameter whose array was replaced (``cast``, ``reset_ctx``,
``load_parameters``...) makes the call recapture instead of replaying over freed memory. Writes
into the same array (``set_data``, a Trainer's update) are seen by the next replay. A bound
input that arrives non-contiguous is copied to a contiguous array first (and, its pointer being
new, recaptured: slow but right). One lock serializes calls (the arena is shared).

``HYBRIDGPU_DUMP_CUDA=DIR`` writes the program's CUDA source to ``DIR/<hash>.cu``.

Example (CuPy or the virtual GPU needed to run a program; here only what it would run):
    >>> import hybridgpu as mx
    >>> from hybridgpu.compiler.passes import fuse_elementwise
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x = mx.sym.var("x")
    >>> g = Graph((mx.sym.relu(x) * 2)._outputs)
    >>> infer_shapes(g, {"x": (8,)}); infer_types(g, {"x": "float32"})
    >>> exe = GpuExecutable.build(fuse_elementwise(g), None, mx.gpu(0), False,
    ...                           {"data_inputs": ("x",)})
    >>> print(exe)
    gpu program: 1 step, 1 kernel, arena 512 B, 1 captured segment
      in      x -> arena[256] (32 B)
      0  launch  k1_fused grid=1 block=256 (arena[0], arena[256], aligned)  (%1)
      out 0   arena[0] (8,) float32
    >>> "k1_fused_f(a0.x, r0.x);" in exe.source  # the float4 path, lane x
    True
"""

from __future__ import annotations

import collections
import os
import re
import threading

import numpy as np

from ...base import MXNetError
from ...compiler.codegen.cuda import numbered
from ...compiler.passes import plan_memory
from ...compiler.pipeline import Executable
from .lower import kernel_file_name, lower
from .policy import GpuMemoryPolicy
from .program import ALIGNED, Buffer, Copy, Gemm, Launch, Ref

__all__ = ["GpuExecutable", "build_gpu_executable"]

_D2D = 3  # cudaMemcpyDeviceToDevice


class GpuExecutable(Executable):
    """A compiled gpu graph: ``exe(inputs, rng=None) -> [arrays]``; ``print(exe)`` lists
    the program's steps, ``exe.source`` is its CUDA source, ``exe.program`` the Program."""

    def __init__(self, graph, program, ctx, is_train, flags=None):
        flags = dict(flags or {})
        self.graph, self.program, self.ctx, self.is_train = graph, program, ctx, is_train
        self.source = program.source or None
        self.use_graphs = flags.get("cuda_graph", True) is not False
        self.static_output = bool(flags.get("static_output", False))
        self.tf32 = _tf32(flags)
        self.block = flags.get("block")  # the HybridBlock's name, for error messages
        self._lock = threading.Lock()
        self._state = None
        _dump(program.source)

    @classmethod
    def build(cls, graph, plan, ctx, is_train, flags=None):
        """Lower ``graph`` (laid out by ``plan``, planned here when None) to a Program."""
        flags = dict(flags or {})
        plan = plan if plan is not None else plan_memory(graph, policy=GpuMemoryPolicy())
        names = [n.name for n in graph.variables]
        staged = flags.get("data_inputs")
        staged = names if staged is None else [n for n in names if n in set(staged)]
        program = lower(graph, plan, staged, is_train, bool(flags.get("shape_args")),
                        tuple(flags.get("written_outputs", ())),
                        lambda: device_workspace_bytes(ctx))
        return cls(graph, program, ctx, is_train, flags)

    def __str__(self):
        return str(self.program)

    @property
    def workspace_bytes(self):
        """Bytes of the cuBLAS workspace in the arena (sized for the device), 0 without a
        GEMM."""
        return 0 if self.program.workspace is None else device_workspace_bytes(self.ctx)

    @property
    def captures(self):
        """How many times the program was captured (tests read it)."""
        return 0 if self._state is None else self._state.captures

    def __call__(self, inputs, rng=None):
        return self._call(inputs, rng, None)

    def run_into(self, inputs, into, rng=None, epilogue=None):
        """Run once, copying output ``k`` into the device array ``into[k]`` and then running
        ``epilogue`` (an object with ``key``, ``write(stream)`` and ``launch()``), both at the
        end of the last captured graph: one replay runs the program, the copies and the
        epilogue's launches. ``epilogue.write(stream)`` runs before the replay, uncaptured (it
        puts what changes between steps into device memory the graph reads). A new pointer in
        ``into`` or a new ``epilogue.key`` makes the call recapture. Returns the outputs, None
        where written into ``into``. ``gluon.TrainStep`` runs a training step this way."""
        return self._call(inputs, rng, _Tail(self.program, into, epilogue))

    def _call(self, inputs, rng, tail):
        with self._lock, self.ctx.scope():
            if self._state is None:
                self._state = _State(self)
            return self._state.call(inputs, rng, tail)

    @property
    def arena_bytes(self):
        """Size of the arena this executable allocates on the device."""
        return self.program.arena_bytes

    def time_kernels(self, opts=None):
        """Device time of each kernel launch of the program alone (after a first call),
        ``{"<step> <kernel>": {median_us, min_us, max_us, ...}}`` plus ``"fused"``: the first
        fused kernel's (else the slowest kernel's), for ``gpucheck``'s kernel-vs-copy target."""
        from ...timing import time_calls

        if self._state is None:
            raise MXNetError("time_kernels: call the executable once first")
        state, times = self._state, {}
        with self._lock, self.ctx.scope(), state.stream:
            for n, step in enumerate(self.program.steps):
                if isinstance(step, Launch):
                    times[f"{n} {step.kernel}"] = time_calls(
                        lambda step=step: state._launch(step), state.xp, **(opts or {}))
        fused = [v for k, v in times.items() if "fused" in k]
        if times:
            times["fused"] = fused[0] if fused else max(times.values(),
                                                         key=lambda t: t["median_us"])
        return times


def _tf32(flags):
    from .cublas import tf32_allowed

    return tf32_allowed(flags)


def device_workspace_bytes(ctx):
    """The cuBLAS workspace for ``ctx``'s device, from its compute capability (32 MiB from
    Hopper on, else 4 MiB: ``cublas.workspace_bytes``)."""
    from .cublas import workspace_bytes

    xp = ctx.xp
    return workspace_bytes(xp.cuda.Device(ctx.device_id).compute_capability)


def _dump(source):
    folder = os.environ.get("HYBRIDGPU_DUMP_CUDA")
    if not folder or not source:
        return
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, kernel_file_name(source))
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(source)
        os.replace(tmp, path)


class _State:
    """The device side of one executable: arena, module, stream, graphs. It holds what it
    needs of the executable, never the executable itself: no reference cycle, so a dropped
    executable is freed at once by reference counting, not by the cyclic collector at some
    later allocation (which may be inside another program's capture)."""

    def __init__(self, exe):
        self.program, self.graph, self.ctx = exe.program, exe.graph, exe.ctx
        self.use_graphs, self.static_output = exe.use_graphs, exe.static_output
        self.tf32, self.workspace_bytes = exe.tf32, exe.workspace_bytes
        self.captures = 0
        xp = self.xp = exe.ctx.xp
        try:
            self.arena = xp.empty((max(self.program.arena_bytes, 1),), dtype=np.uint8)
        except Exception as err:  # CuPy's OutOfMemoryError and its kin
            raise _arena_error(exe, err) from None
        self.stream = xp.cuda.Stream(non_blocking=True)
        self.constants = {k: xp.asarray(v) for k, v in self.program.constants.items()}
        self.staged = set(self.program.inputs)
        self.functions = {}
        self.module = None
        self.graphs = None        # [(kind, step indices, Graph or None)]
        self.bound_key = None     # pointers of the bound inputs the graphs were captured with
        self.ext = {}
        self.ready, self.done = xp.cuda.Event(), xp.cuda.Event()  # reused: calls are serial
        self.seeded = False

    # -- one call -----------------------------------------------------------------------
    def call(self, inputs, rng, tail=None):
        xp, stream = self.xp, self.stream
        if self.program.written:
            inputs = _with_written(self.program, inputs, tail)
        self.ext = self._externals(inputs)
        caller = xp.cuda.get_current_stream()
        if self.program.rng_state is not None and not self.seeded:
            self._seed(rng)
        self.ready.record(caller)
        with stream:
            stream.wait_event(self.ready)
            if tail is not None:
                tail.write(stream)
            self._stage(inputs)
            if not self.use_graphs:
                self._run(range(len(self.program.steps)), rng)
                if tail is not None:
                    tail.run(self)
            else:
                self._replay(rng, tail)
            outs = self._outputs(tail.into if tail is not None else {})
            self.done.record(stream)
        caller.wait_event(self.done)
        return outs

    def _seed(self, rng):
        """Write the Philox seed (drawn from the call's generator, so ``mx.random.seed``
        makes dropout masks repeat) and a zero run counter into the arena (once)."""
        rng = rng if rng is not None else self.xp.random
        words = self.xp.asnumpy(rng.randint(0, 2 ** 31 - 1, size=(2,))).astype(np.uint64)
        seed = int(words[0]) << 31 | int(words[1])
        state = self.view(Ref.arena(self.program.rng_state), (2,), "uint64")
        state[...] = self.xp.asarray(np.array([seed, 0], dtype=np.uint64))
        self.seeded = True

    def _externals(self, inputs):
        ext = dict(self.constants)
        for name in self.program.bound:
            try:
                array = inputs[name]
            except KeyError:
                raise MXNetError(f"gpu program: no value for input {name!r}") from None
            if not array.flags.c_contiguous:
                array = self.xp.ascontiguousarray(array)
            ext[name] = array
        return ext

    def _stage(self, inputs):
        runtime = self.xp.cuda.runtime
        for name, (offset, nbytes) in self.program.inputs.items():
            try:
                array = inputs[name]
            except KeyError:
                raise MXNetError(f"gpu program: no value for input {name!r}") from None
            if array.nbytes != nbytes:
                raise MXNetError(f"gpu program: input {name!r} has {array.nbytes} bytes, the "
                                 f"program was compiled for {nbytes}")
            if not array.flags.c_contiguous:
                array = self.xp.ascontiguousarray(array)
            runtime.memcpyAsync(self.arena.data.ptr + offset, array.data.ptr, nbytes, _D2D,
                                self.stream.ptr)

    def _replay(self, rng, tail):
        key = (tuple(self.ext[n].data.ptr for n in self.program.bound),
               None if tail is None else tail.key)
        if self.graphs is None or key != self.bound_key:
            self._run(range(len(self.program.steps)), rng)  # this call's results
            if tail is not None:
                tail.run(self)
            self._capture(tail)
            self.bound_key = key
            return
        for _kind, steps, graph in self.graphs:
            if graph is not None:
                graph.launch(stream=self.stream)
            else:
                self._run(steps, rng)

    def _capture(self, tail):
        """Capture each segment between eager steps into a graph; ``tail`` (output copies and
        an epilogue) ends the last graph, or is captured alone after a final eager step."""
        self.graphs = []
        segments = list(self.program.segments())
        for n, (kind, steps) in enumerate(segments):
            if kind == "eager":
                self.graphs.append((kind, steps, None))
                continue
            ends = tail if n == len(segments) - 1 else None
            self.graphs.append((kind, steps, self._captured(steps, ends)))
        if tail is not None and (not segments or segments[-1][0] == "eager"):
            self.graphs.append(("tail", (), self._captured((), tail)))
        self.captures += 1

    def _captured(self, steps, tail):
        self.stream.begin_capture()
        try:
            self._run(steps, None)
            if tail is not None:
                tail.run(self)
        finally:
            graph = self.stream.end_capture()
        return graph

    def _outputs(self, written):
        outs = []
        runtime = self.xp.cuda.runtime
        for k, (ref, shape, dtype) in enumerate(self.program.outputs):
            if k in written:
                outs.append(None)
                continue
            source = self.view(ref, shape, dtype)
            if self.static_output and ref.kind == "arena":
                outs.append(source)
                continue
            out = self.xp.empty(shape, dtype=dtype)
            if out.nbytes:
                runtime.memcpyAsync(out.data.ptr, source.data.ptr, out.nbytes, _D2D,
                                    self.stream.ptr)
            outs.append(out)
        return outs

    # -- steps --------------------------------------------------------------------------
    def view(self, ref, shape, dtype):
        """The array a Ref names, as ``shape`` and ``dtype``."""
        if ref.kind == "ext":
            array = self.ext[ref.name]
            return array if array.shape == tuple(shape) else array.reshape(shape)
        return self.xp.ndarray(tuple(shape), dtype=dtype, memptr=self.arena.data + ref.offset)

    def ptr(self, ref):
        if ref.kind == "ext":
            return self.ext[ref.name].data.ptr
        return self.arena.data.ptr + ref.offset

    def _run(self, indices, rng):
        steps = self.program.steps
        for n in indices:
            step = steps[n]
            try:
                if isinstance(step, Launch):
                    self._launch(step)
                elif isinstance(step, Gemm):
                    self._gemm(step)
                elif isinstance(step, Copy):
                    self.xp.cuda.runtime.memcpyAsync(self.ptr(step.dst), self.ptr(step.src),
                                                     step.nbytes, _D2D, self.stream.ptr)
                else:
                    self._eager(step, rng)
            except MXNetError as err:
                raise MXNetError(f"gpu program step {n} ({self._where(step)}): {err}") from None

    def _where(self, step):
        node = self.graph.nodes[step.node] if step.node >= 0 else None
        return f"node %{step.node} {node.op.name}" if node is not None else "program"

    def _function(self, name):
        fn = self.functions.get(name)
        if fn is None:
            static, shaped = self.program.module_sources()
            if name in self.program.shaped:
                module = _shaped_module(self.xp, self.ctx, shaped)
            else:
                if self.module is None:
                    self.module = _module(self.xp, static)
                module = self.module
            try:
                fn = self.functions[name] = module.get_function(name)
            except MXNetError:
                raise
            except Exception as err:  # CuPy compiles on the first get_function
                raise _compile_error(err, static if module is self.module else shaped) from None
        return fn

    def _launch(self, step):
        kernel = self._function(step.kernel)
        args, pointers = [], []
        for a in step.args:
            if isinstance(a, Buffer):
                array = self.view(a.ref, (a.count,), a.dtype)
                args.append(array)
                pointers.append(array.data.ptr)
            else:
                args.append(a)
        aligned = np.int32(all(p % 16 == 0 for p in pointers))
        kernel(step.grid, step.block, tuple(aligned if a is ALIGNED else a for a in args))

    def _gemm(self, step):
        """The step through the device's cuBLAS handle (one for the process, shared by
        every program on the device), bound to this program's stream and workspace."""
        from .cublas import device_handle

        ws = self.program.workspace
        handle = device_handle(self.xp, self.ctx.device_id)
        handle.gemm(step, self.ptr(step.a), self.ptr(step.b), self.ptr(step.c), self.stream.ptr,
                    self.arena.data.ptr + ws if ws is not None else 0,
                    self.workspace_bytes, self.tf32)

    def _eager(self, step, rng):
        xp = self.xp
        args = [self.view(ref, shape, dtype) for ref, shape, dtype in step.ins]
        kwargs = dict(step.attrs)
        if step.random:
            kwargs["rng"] = rng if rng is not None else xp.random
        if step.is_train is not None:
            kwargs["is_train"] = step.is_train
        try:
            result = step.op.compute(xp, *args, **kwargs)
        except MXNetError:
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as err:
            raise MXNetError(f"{type(err).__name__}: {err}") from None
        results = result if isinstance(result, tuple) else (result,)
        for out, value in zip(step.outs, results):
            if out is None:
                continue
            ref, shape, dtype = out
            target = self.view(ref, shape, dtype)
            target[...] = value


class _Tail:
    """What ``GpuExecutable.run_into`` adds after a program's steps: output copies into
    given arrays, then an epilogue's launches; ``key`` is what its capture depends on."""

    def __init__(self, program, into, epilogue):
        for k, dst in into.items():
            if not 0 <= k < len(program.outputs):
                raise MXNetError(f"run_into: the program has {len(program.outputs)} outputs, "
                                 f"not {k + 1}")
            _, shape, dtype = program.outputs[k]
            if (tuple(dst.shape) != tuple(shape) or dst.dtype != np.dtype(dtype)
                    or not dst.flags.c_contiguous):
                raise MXNetError(f"run_into: output {k} is {tuple(shape)} {dtype}, its "
                                 f"destination {tuple(dst.shape)} {dst.dtype}"
                                 f"{'' if dst.flags.c_contiguous else ' (not contiguous)'}")
        self.program, self.into, self.epilogue = program, dict(into), epilogue
        self.key = (tuple((k, dst.data.ptr) for k, dst in sorted(self.into.items())),
                    None if epilogue is None else epilogue.key)

    def write(self, stream):
        if self.epilogue is not None:
            self.epilogue.write(stream)

    def run(self, state):
        for k, dst in self.into.items():
            if dst.nbytes and k not in self.program.written:
                state.xp.cuda.runtime.memcpyAsync(dst.data.ptr, state.ptr(
                    self.program.outputs[k][0]), dst.nbytes, _D2D, state.stream.ptr)
        if self.epilogue is not None:
            self.epilogue.launch()


def _with_written(program, inputs, tail):
    """``inputs`` plus the caller's arrays of the outputs the program writes in place."""
    into = tail.into if tail is not None else {}
    missing = sorted(set(program.written) - set(into))
    if missing:
        raise MXNetError(f"gpu program: outputs {missing} are written straight into arrays "
                         "the caller gives (flag 'written_outputs'): call run_into with them")
    return {**inputs, **{name: into[k] for k, name in program.written.items()}}


def _module(xp, source):
    try:
        return xp.RawModule(code=source, options=("-std=c++17",))
    except Exception as err:
        raise _compile_error(err, source) from None


def _compile_error(err, source):
    return MXNetError(f"gpu program: the generated CUDA source does not compile: {err}\n"
                      f"{numbered(source)}")


#: Modules of kernels that take their sizes as arguments, by (device, source): one compiled
#: module serves every signature of a block that keeps seeing new shapes. The least recently
#: used are dropped past ``MAX_SHAPED_MODULES`` (an executable keeps the functions it got).
_SHAPED_MODULES = collections.OrderedDict()
_SHAPED_LOCK = threading.Lock()
MAX_SHAPED_MODULES = 64


def _shaped_module(xp, ctx, source):
    key = (getattr(xp, "is_virtual", False), ctx.device_id, source)
    with _SHAPED_LOCK:
        module = _SHAPED_MODULES.get(key)
        if module is None:
            module = _SHAPED_MODULES[key] = _module(xp, source)
            for name in _kernel_names(source):  # compile now, under the lock, not per caller
                module.get_function(name)
        _SHAPED_MODULES.move_to_end(key)
        while len(_SHAPED_MODULES) > MAX_SHAPED_MODULES:
            _SHAPED_MODULES.popitem(last=False)
        return module


def _kernel_names(source):
    return re.findall(r'^extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(',
                      source, flags=re.M)


def _arena_error(exe, err):
    """The error of an arena that does not fit: the block, the signature, the size."""
    from .program import _size

    owner = f" of HybridBlock {exe.block!r}" if exe.block else ""
    shapes = ", ".join(f"{n.name} {exe.graph.shapes.get((exe.graph.index[id(n)], 0))}"
                       for n in exe.graph.variables if n.name in exe.program.inputs)
    signature = f" (inputs {shapes})" if shapes else ""
    return MXNetError(f"gpu program{owner}{signature}: out of memory allocating its arena of "
                      f"{exe.program.arena_bytes} bytes on {exe.ctx} "
                      f"({_size(exe.program.arena_bytes)}); each input signature has its own "
                      f"arena (see "
                      f"HybridBlock.compiled_signatures() and executable.arena_bytes): {err}")


def build_gpu_executable(graph, plan, ctx, is_train, flags=None):
    """The hook of ``compiler.pipeline.compile_graph`` for gpu contexts: a GpuExecutable, or
    None when the graph cannot be laid out in an arena (the caller then interprets it)."""
    from .lower import LoweringError

    try:
        return GpuExecutable.build(graph, plan, ctx, is_train, flags)
    except LoweringError:
        return None
