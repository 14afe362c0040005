"""Elementwise kernels that take their sizes as arguments: one compiled kernel for every shape.

``elementwise.generate`` writes the sizes of one compile signature into the kernel as
constants, so each new input shape is a new source and a new NVRTC (or g++) compile. A block
that keeps seeing new shapes (bucketing, variable sequence lengths) uses these kernels instead:
the source depends only on what the spec computes (the rank of the output, the dtypes, the
body, whether it writes in place), never on the sizes, so a second shape finds the module
already compiled (CuPy's cache, the virtual GPU's cache, the runtime's own).

The kernel's arguments are ``(out pointers..., in pointers..., long long n, long long e0 ..
e{R-1}, then for each input: long long f{k}, long long s{k}_0 .. s{k}_{R-1}, int aligned)``:
``n`` the element count, ``e`` the output's coalesced extents padded with 1s in front to the
output's rank ``R``, and per input a flag ``f`` (1: laid out as the output, index ``i``) and
its element strides (0 where it broadcasts). ``shape_arguments(spec, kernel)`` computes them
for one signature (int64 scalars, as CuPy passes a ``long long``). An input that broadcasts
costs ``R - 1`` 64-bit divisions an element (the constant-shape kernel needs fewer); on
float32 the vector path loads ``float4`` for the inputs laid out as the output and gathers the
others lane by lane; the launcher turns it on (``aligned = 1``) only when ``n % 4 == 0`` and
every pointer is 16-byte aligned.

Example:
    >>> from hybridgpu.compiler.codegen.cuda import ElementwiseSpec
    >>> spec = ElementwiseSpec((8, 3), "float32", [((8, 3), "float32"), ((3,), "float32")],
    ...                        ["float32"], "T t0 = in0 * in1;\\nout0 = t0;")
    >>> kernel = generate_shaped(spec, "k1_ew")
    >>> work, vector, args = shape_arguments(spec, kernel)
    >>> work, vector, [int(a) for a in args]  # 6 float4s; n, e0 e1, f0 s0_0 s0_1, f1 s1_0 s1_1
    (6, True, [24, 8, 3, 1, 3, 1, 0, 0, 1])
    >>> other = ElementwiseSpec((5, 3), "float32", [((5, 3), "float32"), ((3,), "float32")],
    ...                         ["float32"], "T t0 = in0 * in1;\\nout0 = t0;")
    >>> generate_shaped(other, "k1_ew").source == kernel.source  # one source, any shape
    True
"""

from __future__ import annotations

import math

import numpy as np

from .ctype import COMPUTE, STORAGE
from .elementwise import Kernel, coalesce, scalar_element, vector_lanes
from .source import CudaSource, param_kinds

__all__ = ["generate_shaped", "shape_arguments", "shape_free_key"]


def _rank(spec):
    return max(1, len(spec.shape))


def shape_free_key(spec):
    """What a shaped kernel's source depends on: ``spec`` without its sizes."""
    return (_rank(spec), spec.dtype, tuple(d for _, d in spec.inputs), spec.outputs,
            spec.body, spec.aliased)


def _vector(spec):
    return all(d == "float32" for d in (spec.dtype, *spec.outputs,
                                          *(d for _, d in spec.inputs)))


def generate_shaped(spec, name):
    """The Kernel computing ``spec`` for any sizes of its rank, called ``name``; its
    ``work_items`` is 0 (the launcher takes it from ``shape_arguments``)."""
    rank, compute = _rank(spec), COMPUTE[spec.dtype]
    src = CudaSource()
    args = [f"{compute} in{k}" for k in range(len(spec.inputs))]
    args += [f"{compute}& out{k}" for k in range(len(spec.outputs))]
    with src.block(f"__device__ __forceinline__ void {name}_f({', '.join(args)})"):
        src.line(f"typedef {compute} T;")
        src.lines(spec.body)
    _offset_function(src, name, rank)
    restrict = "" if spec.aliased else " __restrict__"
    outs = [f"{STORAGE[d]}*{restrict} o{k}" for k, d in enumerate(spec.outputs)]
    ins = [f"const {STORAGE[d]}*{restrict} i{k}" for k, (_, d) in enumerate(spec.inputs)]
    sizes = ["long long n"] + [f"long long e{d}" for d in range(rank)]
    for k in range(len(spec.inputs)):
        sizes += [f"long long f{k}"] + [f"long long s{k}_{d}" for d in range(rank)]
    vector = _vector(spec)
    head = (f'extern "C" __global__ void __launch_bounds__(256) '
            f"{name}({', '.join(outs + ins + sizes + ['int aligned'])})")
    with src.block(head):
        src.line("const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;")
        src.line("const long long step = (long long)gridDim.x * blockDim.x;")
        if vector:
            with src.block("if (aligned)"):
                _vector_loop(src, spec, name, rank)
                src.line("return;")
        _scalar_loop(src, spec, name, rank, compute)
    params = param_kinds(outs + ins)
    params += ("long long",) * len(sizes) + ("int",)
    return Kernel(name, src.text(), params, 0, vector)


def _offset_function(src, name, rank):
    """``name_at(i, e.., s..)``: the element offset of output element ``i`` in an input
    with strides ``s`` (the coordinates peeled off from the innermost dimension)."""
    extents = ", ".join(f"long long e{d}" for d in range(rank))
    strides = ", ".join(f"long long s{d}" for d in range(rank))
    with src.block(f"__device__ __forceinline__ long long {name}_at(long long i, {extents}, "
                   f"{strides})"):
        src.line("long long off = 0;")
        for d in range(rank - 1, 0, -1):
            src.line(f"{{ const long long q = i / e{d}; off += (i - q * e{d}) * s{d}; i = q; }}")
        src.line("return off + i * s0;")


def _at(name, k, rank, var):
    extents = ", ".join(f"e{d}" for d in range(rank))
    strides = ", ".join(f"s{k}_{d}" for d in range(rank))
    return f"{name}_at({var}, {extents}, {strides})"


def _scalar_loop(src, spec, name, rank, compute):
    with src.block("for (long long i = start; i < n; i += step)"):
        scalar_element(src, spec, name, compute,
                       lambda k: f"f{k} ? i : {_at(name, k, rank, 'i')}")


def _vector_loop(src, spec, name, rank):
    with src.block("for (long long v = start; v < n / 4; v += step)"):
        src.line("const long long i = v * 4;")
        for k in range(len(spec.inputs)):
            src.line(f"float4 a{k};")
            src.line(f"if (f{k}) a{k} = reinterpret_cast<const float4*>(i{k})[v];")
            with src.block("else"):
                for n, lane in enumerate("xyzw"):
                    at = _at(name, k, rank, f"i + {n}" if n else "i")
                    src.line(f"a{k}.{lane} = i{k}[{at}];")
        vector_lanes(src, spec, name)


def shape_arguments(spec, kernel):
    """``(work items, vector path usable, int64 size arguments)`` of ``kernel`` (made by
    ``generate_shaped``) for the sizes in ``spec``."""
    rank, size = _rank(spec), math.prod(spec.shape)
    extents, strides = coalesce(spec.shape, [s for s, _ in spec.inputs])
    pad = rank - len(extents)
    extents = [1] * pad + list(extents)
    contiguous, step = [], 1
    for extent in reversed(extents):
        contiguous.insert(0, step)
        step *= extent
    args = [size, *extents]
    for st in strides:
        st = [0] * pad + list(st)
        args += [int(st == contiguous), *st]
    vector = kernel.vector and size > 0 and size % 4 == 0
    work = size // 4 if vector else size
    return work, vector, tuple(np.int64(a) for a in args)
