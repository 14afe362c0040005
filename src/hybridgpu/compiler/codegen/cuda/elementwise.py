"""Elementwise kernels: one generated kernel computes a fused group (or one elementwise op)
over a static output shape.

An ``ElementwiseSpec`` says what to compute: the output shape, the compute dtype, each input's
shape and dtype (inputs broadcast into the output shape, NumPy style), the output dtypes, and
the body: C statements over ``in0, in1, ...`` assigning ``out0, out1, ...``, with ``T`` the
compute type (a fused node's ``cuda_body``). ``generate(spec, name)`` writes the kernel.

The kernel:

* computes the body in a ``__device__`` function called once an element;
* indexes with constants: the shapes are part of the compile signature. Dimensions are first
  coalesced (neighbours merged where every input is contiguous across them or broadcast across
  both), so a bias ``(C,)`` into ``(N, C)`` or a channel vector ``(1, C, 1, 1)`` into
  ``(N, C, H, W)`` costs one division and one remainder;
* loops grid-stride, so any grid size covers the output;
* on float32 with a size divisible by 4 and an innermost coalesced extent divisible by 4, has a
  vector path: 128-bit ``float4`` loads and stores, an input broadcast along the innermost
  dimension loaded once and splatted. The launcher passes ``aligned = 1`` only when every
  pointer is 16-byte aligned; otherwise the scalar loop runs;
* takes its arguments as ``(out pointers..., in pointers..., int aligned)``, ``__restrict__``
  unless the spec says an output is written over an input (``aliased``: in place).

Example:
    >>> spec = ElementwiseSpec((2, 4), "float32", [((2, 4), "float32"), ((4,), "float32")],
    ...                        ["float32"], "T t0 = in0 + in1;\\nout0 = t0;")
    >>> kernel = generate(spec, "k1_ew")
    >>> kernel.vector, kernel.work_items, kernel.params
    (True, 2, ('float*', 'const float*', 'const float*', 'int'))
    >>> print(kernel.source.split("extern")[0])  # the element function
    __device__ __forceinline__ void k1_ew_f(float in0, float in1, float& out0) {
      typedef float T;
      T t0 = in0 + in1;
      out0 = t0;
    }
    <BLANKLINE>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .ctype import COMPUTE, STORAGE, load, store
from .source import CudaSource, param_kinds

__all__ = ["ElementwiseSpec", "Kernel", "generate", "coalesce", "BLOCK", "MAX_BLOCKS",
           "launch_config"]

#: Threads a block for elementwise kernels.
BLOCK = 256
#: Grid cap: 132 SMs x 8 blocks of 256 threads fill an H100; the loop is grid-stride.
MAX_BLOCKS = 1056


@dataclass(frozen=True)
class ElementwiseSpec:
    """What an elementwise kernel computes (see the module docstring). ``inputs``: one
    ``(shape, dtype name)`` each; ``outputs``: dtype names; ``body``: C statements."""

    shape: tuple
    dtype: str
    inputs: tuple
    outputs: tuple
    body: str
    aliased: bool = False  # an output is an input's memory (in place): no __restrict__

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "inputs", tuple((tuple(s), str(d)) for s, d in self.inputs))
        object.__setattr__(self, "outputs", tuple(str(d) for d in self.outputs))


@dataclass(frozen=True)
class Kernel:
    """A generated kernel: its ``name``, ``source`` (device function + kernel), the C types
    of its ``params`` in order, ``work_items`` (threads that have work: elements, or vectors
    of 4 on the vector path), and whether it has a ``vector`` path."""

    name: str
    source: str
    params: tuple
    work_items: int
    vector: bool


def _strides(shape, out_shape):
    """Element strides of a contiguous input of ``shape`` broadcast into ``out_shape``
    (0 where it broadcasts), aligned to the output's dimensions."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, step = [], 1
    for dim, out in zip(reversed(shape), reversed(out_shape)):
        if dim not in (1, out):
            raise ValueError(f"input shape {shape} does not broadcast into {out_shape}")
        strides.append(0 if dim == 1 and out != 1 else step)
        step *= dim
    return list(reversed(strides))


def coalesce(out_shape, in_shapes):
    """``(extents, strides per input)``: the output's dimensions merged where every input
    allows it (see the module docstring); extents of 1 are dropped.

    Example:
        >>> coalesce((2, 3, 4, 5), [(2, 3, 4, 5), (1, 3, 1, 1)])
        ([2, 3, 20], [[60, 20, 1], [0, 1, 0]])
    """
    dims = [d for d, n in enumerate(out_shape) if n != 1]
    strides = [_strides(s, out_shape) for s in in_shapes]
    extents, merged = [], [[] for _ in in_shapes]
    for d in dims:
        n = out_shape[d]
        if extents and all(_mergeable(st[-1], stride[d], n) for st, stride in
                           zip(merged, strides)):
            extents[-1] *= n
            for st, stride in zip(merged, strides):
                st[-1] = stride[d]
            continue
        extents.append(n)
        for st, stride in zip(merged, strides):
            st.append(stride[d])
    return extents, merged


def _mergeable(outer, inner, inner_extent):
    return (outer == 0 and inner == 0) or (inner != 0 and outer == inner * inner_extent)


def _index_expr(var, extents, strides):
    """C expression of an input's element index for output element ``var``."""
    if not any(strides):
        return "0"
    if strides == _contiguous(extents):
        return var
    terms, after = [], math.prod(extents)
    for d, (extent, stride) in enumerate(zip(extents, strides)):
        after //= extent
        if stride == 0:
            continue
        coord = var if after == 1 else f"{var} / {after}"
        if d > 0:
            coord = f"({coord}) % {extent}"
        terms.append(coord if stride == 1 else f"({coord}) * {stride}")
    return " + ".join(terms)


def _contiguous(extents):
    strides, step = [], 1
    for extent in reversed(extents):
        strides.append(step)
        step *= extent
    return list(reversed(strides))


def _vectorizable(spec, extents):
    if spec.dtype != "float32" or any(d != "float32" for _, d in spec.inputs):
        return False
    if any(d != "float32" for d in spec.outputs):
        return False
    size = math.prod(spec.shape)
    return size % 4 == 0 and size > 0 and (not extents or extents[-1] % 4 == 0)


def generate(spec, name):
    """The Kernel computing ``spec``, called ``name`` (a safe identifier)."""
    compute = COMPUTE[spec.dtype]
    size = math.prod(spec.shape)
    extents, strides = coalesce(spec.shape, [s for s, _ in spec.inputs])
    vector = _vectorizable(spec, extents)
    src = CudaSource()
    _element_function(src, spec, name, compute)
    restrict = "" if spec.aliased else " __restrict__"
    ins = [f"const {STORAGE[d]}*{restrict} i{k}" for k, (_, d) in enumerate(spec.inputs)]
    outs = [f"{STORAGE[d]}*{restrict} o{k}" for k, d in enumerate(spec.outputs)]
    index_t = "int" if size < 2 ** 31 - 2 ** 20 else "long long"
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) '
            f"{name}({', '.join(outs + ins + ['int aligned'])})")
    with src.block(head):
        src.line(f"const {index_t} start = ({index_t})blockIdx.x * blockDim.x + threadIdx.x;")
        src.line(f"const {index_t} step = ({index_t})gridDim.x * blockDim.x;")
        if vector:
            with src.block("if (aligned)"):
                _vector_loop(src, spec, name, extents, strides, index_t)
                src.line("return;")
        _scalar_loop(src, spec, name, extents, strides, index_t, compute)
    params = param_kinds(outs + ins)
    work = size // 4 if vector else size
    return Kernel(name, src.text(), params + ("int",), work, vector)


def _element_function(src, spec, name, compute):
    args = [f"{compute} in{k}" for k in range(len(spec.inputs))]
    args += [f"{compute}& out{k}" for k in range(len(spec.outputs))]
    with src.block(f"__device__ __forceinline__ void {name}_f({', '.join(args)})"):
        src.line(f"typedef {compute} T;")
        src.lines(spec.body)


def scalar_element(src, spec, name, compute, index_of):
    """Element ``i`` of a fused group: load each input ``k`` at ``index_of(k)`` (a C index
    expression), call ``<name>_f``, store every output at ``i``."""
    args = []
    for k, (_, dtype) in enumerate(spec.inputs):
        src.line(f"const {compute} a{k} = {load(dtype, f'i{k}[{index_of(k)}]', compute)};")
        args.append(f"a{k}")
    for k in range(len(spec.outputs)):
        src.line(f"{compute} r{k};")
        args.append(f"r{k}")
    src.line(f"{name}_f({', '.join(args)});")
    for k, dtype in enumerate(spec.outputs):
        src.line(f"o{k}[i] = {store(dtype, f'r{k}')};")


def _scalar_loop(src, spec, name, extents, strides, index_t, compute):
    size = math.prod(spec.shape)
    with src.block(f"for ({index_t} i = start; i < {size}; i += step)"):
        scalar_element(src, spec, name, compute,
                       lambda k: _index_expr("i", extents, strides[k]))


def _vector_loop(src, spec, name, extents, strides, index_t):
    size = math.prod(spec.shape)
    with src.block(f"for ({index_t} v = start; v < {size // 4}; v += step)"):
        src.line(f"const {index_t} i = v * 4;")
        for k in range(len(spec.inputs)):
            st = strides[k]
            if not any(st):
                src.line(f"const float s{k} = i{k}[0];")
                src.line(f"const float4 a{k} = make_float4(s{k}, s{k}, s{k}, s{k});")
            elif st[-1] == 0:  # broadcast along the innermost dimension: one value for 4
                src.line(f"const float s{k} = i{k}[{_index_expr('i', extents, st)}];")
                src.line(f"const float4 a{k} = make_float4(s{k}, s{k}, s{k}, s{k});")
            else:
                index = _index_expr("i", extents, st)
                src.line(f"const float4 a{k} = reinterpret_cast<const float4*>(i{k})"
                         f"[({index}) / 4];")
        vector_lanes(src, spec, name)


def vector_lanes(src, spec, name):
    """The vector path's body after its inputs are loaded as ``float4 a<k>``: the element
    function on each lane ``xyzw``, then every output stored as one ``float4`` at ``v``."""
    for k in range(len(spec.outputs)):
        src.line(f"float4 r{k};")
    for lane in "xyzw":
        args = [f"a{k}.{lane}" for k in range(len(spec.inputs))]
        args += [f"r{k}.{lane}" for k in range(len(spec.outputs))]
        src.line(f"{name}_f({', '.join(args)});")
    for k in range(len(spec.outputs)):
        src.line(f"reinterpret_cast<float4*>(o{k})[v] = r{k};")


def launch_config(kernel):
    """``(grid, block)`` tuples for ``kernel``: enough blocks for its work, at most
    ``MAX_BLOCKS`` (the loop strides over the rest)."""
    blocks = max(1, min(MAX_BLOCKS, -(-kernel.work_items // BLOCK)))
    return (blocks, 1, 1), (BLOCK, 1, 1)
