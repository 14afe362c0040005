"""GEMV with a fused epilogue: ``y = x @ w^T`` for a few rows of ``x`` (small batch), each
result passed through an elementwise body (bias, activation...) before it is stored.

For a Dense layer at batch 1, cuBLAS plus a separate bias-and-activation kernel is two
launches and a round trip through memory; this is one. One warp computes one output column
``c`` for every row ``r < rows``: its lanes stride over ``k`` (``float4`` loads when the
launcher says every pointer is 16-byte aligned and ``k % 4 == 0``), the partial sums meet by
``__shfl_xor_sync``, and lane 0 applies the epilogue to each row's sum: the epilogue is an
``ElementwiseSpec`` over the GEMV's output shape whose input ``slot`` is the product (it is not
loaded); its other inputs are loaded with the same index arithmetic as elementwise kernels.

Arguments: ``(out pointers..., x, w, other epilogue inputs..., int aligned)``.

float16 is loaded into float, accumulated and passed through the epilogue in float, and
rounded once when stored (cuBLAS's ``CUBLAS_COMPUTE_32F``, what MXNet's float16 layers use).

Example:
    >>> from hybridgpu.compiler.codegen.cuda.elementwise import ElementwiseSpec
    >>> epi = ElementwiseSpec((1, 8), "float32", [((1, 8), "float32"), ((8,), "float32")],
    ...                       ["float32"], "T t0 = in0 + in1;\\nout0 = (t0 > (T)0 ? t0 : (T)0);")
    >>> k = generate_gemv(GemvSpec(1, 8, 16, "float32", epi, 0), "k3_gemv")
    >>> k.params, k.work_items
    (('float*', 'const float*', 'const float*', 'const float*', 'int'), 256)
"""

from __future__ import annotations

from dataclasses import dataclass

from .ctype import COMPUTE, STORAGE, load, store
from .elementwise import BLOCK, Kernel, _element_function, _index_expr, coalesce
from .source import CudaSource, param_kinds

__all__ = ["GemvSpec", "generate_gemv", "MAX_ROWS"]

#: GEMVs with at most this many rows get this kernel; larger batches go to cuBLAS.
MAX_ROWS = 8


@dataclass(frozen=True)
class GemvSpec:
    """``rows x cols`` result of ``x (rows, k) @ w (cols, k)^T``, then ``epilogue`` (an
    ElementwiseSpec over ``(rows, cols)``) with the product as its input ``slot``."""

    rows: int
    cols: int
    k: int
    dtype: str
    epilogue: object
    slot: int


def generate_gemv(spec, name):
    """The Kernel computing ``spec``, called ``name``."""
    epi, t, stored = spec.epilogue, COMPUTE[spec.dtype], STORAGE[spec.dtype]
    extents, strides = coalesce(epi.shape, [s for s, _ in epi.inputs])
    src = CudaSource()
    _element_function(src, epi, name, t)
    outs = [f"{STORAGE[d]}* o{n}" for n, d in enumerate(epi.outputs)]
    others = [n for n in range(len(epi.inputs)) if n != spec.slot]
    ins = [f"const {STORAGE[epi.inputs[n][1]]}* __restrict__ i{n}" for n in others]
    params = outs + [f"const {stored}* __restrict__ x", f"const {stored}* __restrict__ w"] + ins
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) '
            f"{name}({', '.join(params + ['int aligned'])})")
    with src.block(head):
        src.line("const int lane = threadIdx.x & 31;")
        src.line("const int warps = (gridDim.x * blockDim.x) >> 5;")
        first = "(int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5)"
        with src.block(f"for (int c = {first}; c < {spec.cols}; c += warps)"):
            _dot_products(src, spec, t)
            with src.block("if (lane == 0)"):
                _epilogue(src, spec, name, extents, strides, t)
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds + ("int",), spec.cols * 32, False)


def _dot_products(src, spec, t):
    rows, k = spec.rows, spec.k
    src.line(f"{t} acc[{rows}];")
    src.line("#pragma unroll")
    src.line(f"for (int r = 0; r < {rows}; ++r) acc[r] = ({t})0;")
    src.line(f"const {STORAGE[spec.dtype]}* wrow = w + (long long)c * {k};")
    if spec.dtype == "float32" and k % 4 == 0:
        with src.block("if (aligned)"), src.block(f"for (int q = lane; q < {k // 4}; q += 32)"):
            src.line("const float4 wv = reinterpret_cast<const float4*>(wrow)[q];")
            src.line("#pragma unroll")
            with src.block(f"for (int r = 0; r < {rows}; ++r)"):
                src.line(f"const float4 xv = reinterpret_cast<const float4*>(x + r * {k})[q];")
                src.line("acc[r] += wv.x * xv.x + wv.y * xv.y + wv.z * xv.z + wv.w * xv.w;")
        with src.block("else"):
            _scalar_products(src, spec, t)
    else:
        _scalar_products(src, spec, t)
    src.line("#pragma unroll")
    with src.block(f"for (int r = 0; r < {rows}; ++r)"):
        src.line("#pragma unroll")
        src.line("for (int s = 16; s > 0; s >>= 1) "
                 "acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], s);")


def _scalar_products(src, spec, t):
    rows, k = spec.rows, spec.k
    with src.block(f"for (int q = lane; q < {k}; q += 32)"):
        src.line(f"const {t} wv = {load(spec.dtype, 'wrow[q]', t)};")
        src.line("#pragma unroll")
        src.line(f"for (int r = 0; r < {rows}; ++r) acc[r] += wv * "
                 f"{load(spec.dtype, f'x[r * {k} + q]', t)};")


def _epilogue(src, spec, name, extents, strides, t):
    epi = spec.epilogue
    with src.block(f"for (int r = 0; r < {spec.rows}; ++r)"):
        src.line(f"const int i = r * {spec.cols} + c;")
        args = []
        for n, (_, dtype) in enumerate(epi.inputs):
            if n == spec.slot:
                args.append("acc[r]")
                continue
            index = _index_expr("i", extents, strides[n])
            src.line(f"const {t} a{n} = {load(dtype, f'i{n}[{index}]', t)};")
            args.append(f"a{n}")
        for n in range(len(epi.outputs)):
            src.line(f"{t} r{n};")
            args.append(f"r{n}")
        src.line(f"{name}_f({', '.join(args)});")
        for n, dtype in enumerate(epi.outputs):
            src.line(f"o{n}[i] = {store(dtype, f'r{n}')};")
