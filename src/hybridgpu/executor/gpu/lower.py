"""Lower an optimized graph and its memory plan to a GPU ``Program`` (steps over one arena).

The arena, in order: the memory plan's buffers, then one region per graph output (outputs live
in the arena and are copied out fresh on every call), one per staged input (copied in before
each run), and the cuBLAS workspace when there is a GEMM. Each region starts at a multiple of
``ALIGNMENT`` bytes.

A node becomes:

* a ``Launch`` of a generated elementwise kernel: a fused group (its ``cuda_body``), or one
  elementwise op with a CUDA expression (``op.cuda_for(attrs)``) over float data (or a cast);
* a ``Launch`` of a generated GEMV kernel for a FullyConnected-shaped product of at most
  ``MAX_GEMV_ROWS`` rows (small batch), carrying its epilogue: its bias, or the elementwise
  node (bias + activation, after ``decompose``) that alone reads it and runs next;
* ``Gemm`` steps (cuBLAS) for the rest of the GEMM family (``gemm.GEMM_SHAPES``), plus a bias
  kernel;
* a ``Launch`` of a generated reduction (sum, mean, max, min, prod; softmax, log_softmax;
  global pooling), window (2-D pooling; grouped and depthwise convolution) kernel
  (``templates``); a 2-D convolution with one group as an im2col kernel (none for 1x1) and
  a strided-batched GEMM, plus a bias kernel; a 2-D Deconvolution (one group) as a GEMM and
  a col2im kernel; a convolution's weight gradient as im2col, a transposition and one GEMM;
* for an op that only moves elements (transpose, slice, Concat, split, tile...: found by
  probing its compute on the host, ``compiler/codegen/cuda/gather.py``), one gather kernel an
  output with an index table the program holds;
* for BatchNorm in training and its backward, a kernel a channel (the moving statistics
  updated in place, once a run);
* for ``pick`` and its gradient (softmax cross-entropy's label lookup), a pick kernel
  (``compiler/codegen/cuda/pick.py``);
* for Dropout, a Philox kernel (``compiler/codegen/cuda/philox.py``) reading its seed and run
  counter from 16 bytes of the arena, and one kernel at the end advancing the counter (in
  predict mode, the identity kernel);
* nothing, or a ``Copy``, for an op that only reinterprets its input's elements (Reshape,
  Flatten, expand_dims...: found by running the op once on the host over ``arange`` and
  seeing the elements come back in order): its value is its input's memory under another
  name when that memory does not change during a run (a parameter, a constant, a staged
  input), else a device copy;
* else an ``Eager`` step: the op's ``compute`` on arena views.

Variables are either *staged* (the call's data: copied into an arena region) or *bound* (read
in place by pointer: parameters, and auxiliary states an op updates in place). Names in the
program come from node indices only.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.compiler import passes
    >>> from hybridgpu.graph import Graph, infer_shapes, infer_types
    >>> x, b = mx.sym.var("x"), mx.sym.var("b")
    >>> g = Graph(mx.sym.relu(mx.sym.broadcast_add(x, b))._outputs)
    >>> infer_shapes(g, {"x": (2, 4), "b": (4,)}); infer_types(g, {"x": "float32"})
    >>> g = passes.fuse_elementwise(g)
    >>> from hybridgpu.executor.gpu.policy import GpuMemoryPolicy
    >>> prog = lower(g, passes.plan_memory(g, policy=GpuMemoryPolicy()), staged={"x"})
    >>> print(prog)
    gpu program: 1 step, 1 kernel, arena 512 B, 1 captured segment
      in      x -> arena[256] (32 B)
      0  launch  k2_fused grid=1 block=256 (arena[0], arena[256], b, aligned)  (%2)
      out 0   arena[0] (2, 4) float32
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np

from ...base import MXNetError
from ...compiler.codegen.cuda import ElementwiseSpec, generate, ident, launch_config
from ...compiler.codegen.cuda.ctype import FLOATS, supported
from ...compiler.codegen.cuda.elementwise import BLOCK, MAX_BLOCKS
from ...compiler.codegen.cuda.gemv import MAX_ROWS as MAX_GEMV_ROWS
from ...compiler.codegen.cuda.gemv import GemvSpec, generate_gemv
from ...compiler.codegen.cuda.philox import generate_advance
from ...compiler.codegen.cuda.shaped import generate_shaped, shape_arguments, shape_free_key
from ...compiler.passes.cuda_expr import substitute
from ...compiler.passes.fold import constant_value
from ...compiler.passes.rewrite import mutated_keys, readers
from ...compiler.pipeline import debug_enabled
from ...ops.rules import known
from .gemm import GEMM_DTYPES, GEMM_SHAPES, row_major_gemm
from .lower_templates import TemplateLowering
from .program import ALIGNED, ALIGNMENT, Buffer, Copy, Eager, Gemm, Launch, Program, Ref

__all__ = ["lower", "LoweringError", "WORKSPACE_BYTES", "MAX_FUSED_INPUTS"]

#: cuBLAS workspace in the arena (bytes) when the program has a GEMM (the default; the
#: runtime sizes it for the device: ``cublas.workspace_bytes``).
WORKSPACE_BYTES = 4 << 20
#: A fused node reading more inputs than this runs eagerly (kernel arguments and registers).
MAX_FUSED_INPUTS = 24
#: A fused node with more members than this runs eagerly (code size, spills).
MAX_FUSED_MEMBERS = 96


_TEMPLATE_ERRORS = (MXNetError, ValueError, TypeError, KeyError, IndexError, ArithmeticError)


class LoweringError(Exception):
    """The graph cannot be laid out in an arena (a value of unknown size)."""


def _align(n):
    return -(-n // ALIGNMENT) * ALIGNMENT


class _Lowering(TemplateLowering):
    def __init__(self, graph, plan, staged, is_train, shape_args=False, written=()):
        self.graph, self.plan, self.is_train = graph, plan, is_train
        self.steps, self.kernels, self._by_spec = [], [], {}
        self.shape_args = shape_args
        self.shaped = set()  # names of the kernels that take their sizes as arguments
        self.constants = {}
        self.aliases = {}  # value key -> the Ref of the value it reinterprets
        self.unread = {}   # value key -> arena offset of an output nobody reads
        mutated = mutated_keys(graph)
        self.staged = {n.name for i, n in enumerate(graph.nodes) if n.is_variable
                       and n.name in staged and (i, 0) not in mutated}
        self.offset = 0
        self.buffer_offsets = []
        for size in plan.buffers:
            self.buffer_offsets.append(self.offset)
            self.offset += _align(max(size, 1))
        self.written = _written_outputs(graph, plan, written)
        self.fresh = {}
        for key in sorted(plan.fresh):
            if key not in self.written:
                self.fresh[key] = self._region(self._nbytes(key))
        self.inputs = {}
        for node in graph.variables:
            if node.name in self.staged:
                nbytes = self._nbytes((graph.index[id(node)], 0))
                self.inputs[node.name] = (self._region(nbytes), nbytes)

    def _region(self, nbytes):
        offset = self.offset
        self.offset += _align(max(nbytes, 1))
        return offset

    def _nbytes(self, key):
        shape, dtype = self.graph.shapes.get(key), self.graph.dtypes.get(key)
        if dtype is None or not known(shape) or not supported_any(dtype):
            raise LoweringError(f"value {key} has no known shape and dtype")
        return math.prod(shape) * np.dtype(dtype).itemsize

    # -- where values live --------------------------------------------------------------
    def ref(self, key):
        if key in self.aliases:
            return self.aliases[key]
        node = self.graph.nodes[key[0]]
        if node.is_variable:
            if node.name in self.inputs:
                return Ref.arena(self.inputs[node.name][0])
            return Ref.ext(node.name)
        if constant_value(node) is not None:
            name = f"const{key[0]}"
            self.constants[name] = constant_value(node)
            return Ref.ext(name)
        if key in self.written:
            return Ref.ext(self.written[key])
        if key in self.fresh:
            return Ref.arena(self.fresh[key])
        buf = self.plan.storage.get(key)
        if buf is None and key in getattr(self.plan, "skipped", ()):
            # an output nobody reads: an eager step still writes it somewhere
            if key not in self.unread:
                self.unread[key] = self._region(self._nbytes(key))
            return Ref.arena(self.unread[key])
        if buf is None:
            raise LoweringError(f"value {key} has no buffer in the memory plan")
        return Ref.arena(self.buffer_offsets[buf])

    def value(self, key):
        return self.ref(key), self.graph.shapes[key], str(self.graph.dtypes[key])

    # -- lowering -----------------------------------------------------------------------
    def run(self):
        self.readers = readers(self.graph)
        self.pending = {}  # reader node index -> (GEMM node index, GEMM parameters)
        self.col = self._col_region()
        self.rng_state = None
        makers = (self._gemv, self._elementwise, self._gemm, self._copy, self._reduce,
                  self._pool, self._conv, self._deconv, self._wgrad, self._dropout,
                  self._batch_norm, self._pick, self._gather)
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable or constant_value(node) is not None:
                continue
            for make in makers:
                if self._try(make, i, node):
                    break
            else:
                self._eager(i, node)
        if self.rng_state is not None:  # every run draws fresh numbers: advance the counter
            state = Buffer(Ref.arena(self.rng_state), "uint64", 2)
            self._add(generate_advance(ident("k", len(self.graph.nodes), "advance")),
                      (1, 1, 1), (32, 1, 1), [state], len(self.graph.nodes) - 1)
        outputs = [self.value(self.graph.key(e)) for e in self.graph.outputs]
        has_gemm = any(isinstance(s, Gemm) for s in self.steps)
        size = getattr(self, "workspace_bytes", WORKSPACE_BYTES)
        workspace = self._region(size() if callable(size) else size) if has_gemm else None
        bound = tuple(n.name for n in self.graph.variables if n.name not in self.staged)
        return Program(self.steps, self.kernels, self.offset, self.inputs, outputs,
                       bound + tuple(self.written.values()), self.constants, workspace,
                       self.rng_state, frozenset(self.shaped), {
                           k: self.written[self.graph.key(e)]
                           for k, e in enumerate(self.graph.outputs)
                           if self.graph.key(e) in self.written})

    def _try(self, make, i, node):
        """``make(i, node)``; a template that fails on this node (a case it does not cover)
        leaves nothing behind and the next one is tried; with ``HYBRIDGPU_DEBUG`` it raises."""
        steps, kernels = len(self.steps), len(self.kernels)
        try:
            return make(i, node)
        except _TEMPLATE_ERRORS:
            if debug_enabled():
                raise
            del self.steps[steps:], self.kernels[kernels:]
            return False

    def _kernel(self, spec, i, kind):
        """The name of the kernel computing ``spec`` (one kernel per distinct spec)."""
        kernel = self._by_spec.get(spec)
        if kernel is None:
            kernel = self._by_spec[spec] = generate(spec, ident("k", i, kind))
            self.kernels.append(kernel)
        return kernel

    def _launch(self, spec, i, kind, outs, ins):
        """Launch the kernel of ``spec`` with ``outs`` and ``ins`` (Refs)."""
        if set(outs) & set(ins):
            spec = dataclasses.replace(spec, aliased=True)
        if self.shape_args:
            return self._launch_shaped(spec, i, kind, outs, ins)
        kernel = self._kernel(spec, i, kind)
        grid, block = launch_config(kernel)
        size = math.prod(spec.shape)
        args = [Buffer(r, d, size) for r, d in zip(outs, spec.outputs)]
        args += [Buffer(r, d, math.prod(s)) for r, (s, d) in zip(ins, spec.inputs)]
        self.steps.append(Launch(kernel.name, grid, block, (*args, ALIGNED), node=i))

    def _launch_shaped(self, spec, i, kind, outs, ins):
        """Launch the kernel of ``spec`` that takes its sizes as arguments (one kernel, and
        one source, for every shape of this spec's rank and body)."""
        key = ("shaped", shape_free_key(spec))
        kernel = self._by_spec.get(key)
        if kernel is None:
            kernel = self._by_spec[key] = generate_shaped(spec, ident("k", i, kind))
            self.kernels.append(kernel)
            self.shaped.add(kernel.name)
        work, vector, sizes = shape_arguments(spec, kernel)
        grid = (max(1, min(MAX_BLOCKS, -(-work // BLOCK))), 1, 1)
        size = math.prod(spec.shape)
        args = [Buffer(r, d, size) for r, d in zip(outs, spec.outputs)]
        args += [Buffer(r, d, math.prod(s)) for r, (s, d) in zip(ins, spec.inputs)]
        aligned = ALIGNED if vector else np.int32(0)
        self.steps.append(Launch(kernel.name, grid, (BLOCK, 1, 1), (*args, *sizes, aligned),
                                 node=i))

    def _elementwise(self, i, node):
        spec = elementwise_spec(self.graph, i)
        if spec is None:
            return False
        outs = [self.ref((i, k)) for k in range(node.num_outputs)]
        ins = [self.ref(self.graph.key(e)) for e in node.inputs]
        kind = "fused" if hasattr(node.op, "members") else "ew"
        self._launch(spec, i, kind, outs, ins)
        return True

    def _gemm_shape(self, i, node):
        """The GEMM parameters of node ``i`` (see ``gemm``), or None."""
        shapes_of = GEMM_SHAPES.get(node.op.name)
        if shapes_of is None or node.num_outputs != 1:
            return None
        keys = [self.graph.key(e) for e in node.inputs]
        dtype = str(self.graph.dtypes.get((i, 0)))
        if dtype not in GEMM_DTYPES or any(str(self.graph.dtypes.get(k)) != dtype
                                           for k in keys):
            return None
        in_shapes = [self.graph.shapes.get(k) for k in keys]
        out_shape = self.graph.shapes.get((i, 0))
        if not all(known(s) for s in (*in_shapes, out_shape)):
            return None
        return shapes_of(node.attrs, in_shapes, out_shape)

    def _gemm(self, i, node):
        found = self._gemm_shape(i, node)
        if found is None:
            return False
        keys = [self.graph.key(e) for e in node.inputs]
        dtype = str(self.graph.dtypes[(i, 0)])
        m, n, k, ta, tb, bias, batch = found
        c = self.ref((i, 0))
        self.steps.append(row_major_gemm(dtype, m, n, k, self.ref(keys[0]), ta,
                                         self.ref(keys[1]), tb, c, batch, node=i))
        if bias:
            spec = ElementwiseSpec((m, n), dtype, [((m, n), dtype), ((n,), dtype)], [dtype],
                                   "out0 = in0 + in1;")
            self._launch(spec, i, "bias", [c], [c, self.ref(keys[2])])
        return True

    def _gemv(self, i, node):
        """A small-batch FullyConnected-shaped GEMM (``x @ w^T``) as a GEMV kernel carrying
        its epilogue: its bias, or the elementwise node that alone reads it and runs next.
        Deferred to that node (returns True with nothing emitted), or emitted by it. Not
        with shape arguments (a GEMV kernel has its sizes as constants: cuBLAS instead)."""
        if self.shape_args:
            return False
        if i in self.pending:
            gemm, found = self.pending.pop(i)
            if self._try(lambda j, n: self._emit_gemv(j, n, gemm, found), i, node):
                return True
            if not self._try(self._gemm, gemm, self.graph.nodes[gemm]):
                self._eager(gemm, self.graph.nodes[gemm])
            return False
        found = self._gemm_shape(i, node)
        if found is None:
            return False
        m, n, k, ta, tb, bias, batch = found
        if ta or not tb or batch != 1 or m > MAX_GEMV_ROWS:
            return False
        if bias:
            return self._emit_gemv(i, node, i, found)
        reader = self._sole_next_reader(i)
        if reader is None:
            return False
        self.pending[reader] = (i, found)
        return True

    def _sole_next_reader(self, i):
        """The node that alone reads node ``i``'s value, when it is elementwise, has a kernel,
        computes the same shape, comes next in the program and does not write over the
        GEMM's operands; else None."""
        graph = self.graph
        users = self.readers.get((i, 0), [])
        if len(users) != 1 or users[0] is None:
            return None
        j = users[0]
        between = graph.nodes[i + 1:j]
        if any(not b.is_variable and constant_value(b) is None for b in between):
            return None
        spec = elementwise_spec(graph, j)
        if spec is None or spec.shape != graph.shapes[(i, 0)]:
            return None
        operands = {self.ref(graph.key(e)) for e in graph.nodes[i].inputs}
        if any(self.ref((j, k)) in operands for k in range(graph.nodes[j].num_outputs)):
            return None
        return j

    def _emit_gemv(self, j, node, i, found):
        """Emit the GEMV of GEMM node ``i`` with node ``j``'s epilogue (``j == i``: the bias)."""
        m, n, k = found[:3]
        graph, gemm = self.graph, self.graph.nodes[i]
        dtype = str(graph.dtypes[(i, 0)])
        x, w = (self.ref(graph.key(e)) for e in gemm.inputs[:2])
        if j == i:
            epi = ElementwiseSpec((m, n), dtype, [((m, n), dtype), ((n,), dtype)], [dtype],
                                  "out0 = in0 + in1;")
            slot, others = 0, [graph.key(gemm.inputs[2])]
        else:
            epi = elementwise_spec(graph, j)
            keys = [graph.key(e) for e in node.inputs]
            slot = keys.index((i, 0))
            others = [key for n_, key in enumerate(keys) if n_ != slot]
        kernel = self._by_spec.get((epi, slot, m, n, k))
        if kernel is None:
            kernel = generate_gemv(GemvSpec(m, n, k, dtype, epi, slot), ident("k", j, "gemv"))
            self._by_spec[(epi, slot, m, n, k)] = kernel
            self.kernels.append(kernel)
        grid, block = launch_config(kernel)
        args = [Buffer(self.ref((j, o)), d, m * n) for o, d in enumerate(epi.outputs)]
        args += [Buffer(x, dtype, m * k), Buffer(w, dtype, n * k)]
        args += [Buffer(self.ref(key), str(graph.dtypes[key]), math.prod(graph.shapes[key]))
                 for key in others]
        self.steps.append(Launch(kernel.name, grid, block, (*args, ALIGNED), node=j))
        return True

    def _add(self, kernel, grid, block, args, i):
        """Launch ``kernel`` (generated once per distinct spec by the caller)."""
        if kernel.name not in {k.name for k in self.kernels}:
            self.kernels.append(kernel)
        self.steps.append(Launch(kernel.name, grid, block, tuple(args), node=i))

    def _cached(self, spec, make):
        """The generated ``(kernel, grid, block)`` of ``spec``, made by ``make()`` once."""
        found = self._by_spec.get(spec)
        if found is None:
            found = self._by_spec[spec] = make()
        return found

    def _buffer(self, key):
        graph = self.graph
        return Buffer(self.ref(key), str(graph.dtypes[key]), math.prod(graph.shapes[key]))

    def _copy(self, i, node):
        """A reshape: the same memory under another name when its source never changes
        during a run (a parameter, a constant, a staged input, or such an alias), else a
        device copy."""
        if not reinterprets(self.graph, i):
            return False
        src = self.ref(self.graph.key(node.inputs[0]))
        stable = {offset for offset, _ in self.inputs.values()}
        written = (i, 0) in self.written  # the caller's array must receive the elements
        if not written and (src.kind == "ext" or src.kind == "arena" and src.offset in stable):
            self.aliases[(i, 0)] = src
            return True
        dst = self.ref((i, 0))
        self.steps.append(Copy(dst, src, self._nbytes((i, 0)), node=i))
        return True

    def _eager(self, i, node):
        ins = tuple(self.value(self.graph.key(e)) for e in node.inputs)
        outs = tuple(self.value((i, k)) for k in range(node.num_outputs))
        self.steps.append(Eager(node.op, dict(node.attrs), ins, outs, node=i,
                                random=node.op.random,
                                is_train=self.is_train if node.op.mode_dependent else None))


def supported_any(dtype):
    """True for any dtype an arena region can hold (bool included)."""
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def elementwise_spec(graph, i):
    """The ElementwiseSpec of node ``i``, or None when it gets no elementwise kernel."""
    node = graph.nodes[i]
    op = node.op
    if not op.elementwise or op.random or op.mutates_aux or op.needs_host_sync(node.attrs):
        return None
    keys = [graph.key(e) for e in node.inputs]
    outs = [(i, k) for k in range(node.num_outputs)]
    shapes = [graph.shapes.get(k) for k in keys + outs]
    dtypes = [graph.dtypes.get(k) for k in keys + outs]
    if not all(known(s) for s in shapes) or not all(d and supported(d) for d in dtypes):
        return None
    out_shape, dtype = shapes[len(keys)], str(dtypes[len(keys)])
    if any(shapes[len(keys) + k] != out_shape for k in range(len(outs))):
        return None
    members = getattr(op, "members", None)
    if members is not None:
        if len(keys) > MAX_FUSED_INPUTS or len(members) > MAX_FUSED_MEMBERS:
            return None
        body = op.cuda_body
    else:
        expr = op.cuda_for(node.attrs) if len(outs) == 1 else None
        if expr is None:
            return None
        body = f"T t0 = {substitute(expr, [f'in{k}' for k in range(len(keys))], node.attrs)};"
        body += "\nout0 = t0;"
    if dtype not in FLOATS and body.strip() not in ("T t0 = (T)in0;\nout0 = t0;",
                                                     "T t0 = in0;\nout0 = t0;"):
        return None  # integer math stays eager: only casts and copies get kernels
    if not all(_broadcasts(s, out_shape) for s in shapes[:len(keys)]):
        return None
    return ElementwiseSpec(out_shape, dtype, list(zip(shapes[:len(keys)], dtypes[:len(keys)])),
                           dtypes[len(keys):], body)


def _broadcasts(shape, out_shape):
    if len(shape) > len(out_shape):
        return False
    return all(d in (1, o) for d, o in zip(reversed(shape), reversed(out_shape)))


def reinterprets(graph, i):
    """True when node ``i`` only reinterprets its one input's elements in order (a reshape):
    checked by running its compute over ``arange`` on the host."""
    node = graph.nodes[i]
    op = node.op
    if (len(node.inputs) != 1 or node.num_outputs != 1 or op.elementwise or op.random
            or op.mode_dependent or op.mutates_aux or op.creation
            or op.needs_host_sync(node.attrs)):
        return False
    src = graph.key(node.inputs[0])
    shape, out_shape = graph.shapes.get(src), graph.shapes.get((i, 0))
    if not known(shape) or not known(out_shape) or math.prod(shape) != math.prod(out_shape):
        return False
    if graph.dtypes.get(src) != graph.dtypes.get((i, 0)) or math.prod(shape) > 1 << 24:
        return False
    probe = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    try:
        result = op.compute(np, probe, **node.attrs)
    except Exception:  # an op that cannot run on the probe: let it run eagerly
        return False
    result = result[0] if isinstance(result, tuple) else result
    return (isinstance(result, np.ndarray) and result.shape == tuple(out_shape)
            and np.array_equal(result.reshape(-1), probe.reshape(-1)))


def lower(graph, plan, staged=(), is_train=False, shape_args=False, written=(),
          workspace=WORKSPACE_BYTES):
    """The Program of ``graph`` laid out by ``plan``; ``staged`` names the variables copied
    into the arena on each call (the others are read in place). ``shape_args``: elementwise
    kernels take their sizes as arguments (``compiler/codegen/cuda/shaped.py``) and no GEMV
    kernel is generated, so another shape of the same graph needs no new compile for them.
    ``written``: indices of outputs the step producing them writes straight into an array
    the caller gives on every call (``Program.written``: index -> the name it is bound as),
    where the output is a value of its own (not an input, a constant, nor given twice).
    ``workspace``: bytes of the cuBLAS workspace region when the program has a GEMM (or a
    function giving them, asked only then)."""
    lowering = _Lowering(graph, plan, set(staged), is_train, shape_args, written)
    lowering.workspace_bytes = workspace
    return lowering.run()


def _written_outputs(graph, plan, written):
    """``{value key: bound name}`` of the outputs in ``written`` that can be written into
    a caller's array: planned apart (``plan.fresh``), given once among the outputs."""
    keys = [graph.key(e) for e in graph.outputs]
    names = {n.name for n in graph.variables}
    found = {}
    for k in written:
        key = keys[k]
        name = f"__out{k}__"
        if key in plan.fresh and keys.count(key) == 1 and name not in names:
            found[key] = name
    return found


def kernel_file_name(source):
    """The ``.cu`` file name a kernel source is dumped under: a hash of the text."""
    return hashlib.sha256(source.encode()).hexdigest()[:16] + ".cu"
