"""Reduction kernels: one block per output row reduces over the row's elements; also softmax,
log_softmax and softmin, which reduce a row twice (max, then the sum of exponentials) and
write every element of it.

A ``ReduceSpec`` gives the input shape, the reduced ``axes``, the input and output dtypes and
the ``kind``: ``sum mean prod max min nansum nanprod`` (one value a row, in the order of the
kept dimensions, which is the output's order with or without ``keepdims``), or ``softmax
log_softmax`` (the output has the input's shape; ``scale`` multiplies the input first:
``sign / temperature``).

The kernel: block ``b`` takes rows ``b, b + gridDim.x, ...``; its threads stride over the
row's ``R`` elements (index arithmetic with constants, contiguous runs of dimensions merged)
accumulating sums and products in double (a reduction is memory-bound; NumPy's pairwise sums
are accurate too, so the two agree closely) and softmax in float (double for float64 data),
then meet in a shared-memory tree. NaN
propagates through max and min as in NumPy. Arguments: ``(out pointer, in pointer)``; with
``rows_arg`` one more, ``long long rows``: the row count is then not in the source, and a
kernel generated for a batch of 2 (axis 0 kept) serves every batch size.

Example:
    >>> k, grid, block = generate_reduce(
    ...     ReduceSpec((2, 3, 4), (1, 2), "float32", "float32", "mean"), "k1")
    >>> k.params, grid, block, "/ (double)12" in k.source
    (('float*', 'const float*'), (2, 1, 1), (32, 1, 1), True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...passes.cuda_expr import c_literal
from .ctype import STORAGE, load, store
from .elementwise import Kernel, _index_expr
from .source import CudaSource, param_kinds

__all__ = ["ReduceSpec", "generate_reduce", "KINDS", "block_size"]

_INF = {"float": "__int_as_float(0x7f800000)",
        "double": "__longlong_as_double(0x7ff0000000000000LL)"}

#: kind -> (initial value, combine(a, b), what an element x counts as); INF is per type.
KINDS = {
    "sum": ("0", "a + b", "{x}"),
    "mean": ("0", "a + b", "{x}"),
    "nansum": ("0", "a + b", "({x} != {x} ? ({acc})0 : {x})"),
    "prod": ("1", "a * b", "{x}"),
    "nanprod": ("1", "a * b", "({x} != {x} ? ({acc})1 : {x})"),
    "max": ("-INF", "((a > b || a != a) ? a : b)", "{x}"),
    "min": ("INF", "((a < b || a != a) ? a : b)", "{x}"),
}
ROW_KINDS = ("softmax", "log_softmax", "layernorm")
MAX_GRID = 4096


@dataclass(frozen=True)
class ReduceSpec:
    """See the module docstring."""

    shape: tuple
    axes: tuple
    in_dtype: str
    out_dtype: str
    kind: str
    scale: float = 1.0
    rows_arg: bool = False  # the row count is an argument (see the module docstring)


def block_size(n):
    """Threads a block for rows of ``n`` elements: a power of two in [32, 256]."""
    size = 32
    while size < min(n, 256):
        size *= 2
    return size


def _merged(dims):
    """``(extents, strides)`` of ``dims`` (``(extent, stride)`` pairs, outer first) with
    neighbours merged where the outer one's stride spans the inner one."""
    extents, strides = [], []
    for extent, stride in dims:
        if extent == 1:
            continue
        if extents and strides[-1] == stride * extent:
            extents[-1] *= extent
            strides[-1] = stride
            continue
        extents.append(extent)
        strides.append(stride)
    return extents, strides


def _geometry(spec):
    """``(rows, row length, (kept extents, strides), (reduced extents, strides))``."""
    strides, step = [], 1
    for d in reversed(spec.shape):
        strides.append(step)
        step *= d
    strides.reverse()
    kept = [(d, s) for a, (d, s) in enumerate(zip(spec.shape, strides)) if a not in spec.axes]
    red = [(d, s) for a, (d, s) in enumerate(zip(spec.shape, strides)) if a in spec.axes]
    rows = math.prod(d for d, _ in kept)
    length = math.prod(d for d, _ in red)
    return rows, length, _merged(kept), _merged(red)


def _offset(var, extents, strides):
    if not extents:
        return "0"
    return _index_expr(var, extents, strides)


def generate_reduce(spec, name):
    """``(Kernel, grid, block)`` computing ``spec``, called ``name``."""
    sums = spec.kind not in ("softmax", "log_softmax", "max", "min")
    acc = "double" if sums or "float64" in (spec.in_dtype, spec.out_dtype) else "float"
    rows, length, kept, red = _geometry(spec)
    threads = block_size(length)
    src = CudaSource()
    t_out, t_in = STORAGE[spec.out_dtype], STORAGE[spec.in_dtype]
    params = [f"{t_out}* __restrict__ o0", f"const {t_in}* __restrict__ i0"]
    if spec.kind == "layernorm":  # outputs: data, mean, std; inputs: data, gamma, beta
        params[1:1] = [f"{t_out}* __restrict__ o1", f"{t_out}* __restrict__ o2"]
        params += [f"const {t_in}* __restrict__ gamma", f"const {t_in}* __restrict__ beta"]
    if spec.rows_arg:
        params.append("long long rows")
    head = (f'extern "C" __global__ void __launch_bounds__({threads}) {name}('
            f"{', '.join(params)})")
    bound = "rows" if spec.rows_arg else rows
    with src.block(head):
        src.line(f"__shared__ {acc} buf[{threads}];")
        with src.block(f"for (long long row = blockIdx.x; row < {bound}; row += gridDim.x)"):
            src.line(f"const long long base = {_offset('row', *kept)};")
            if spec.kind == "layernorm":
                _layer_norm_body(src, spec, acc, length, red)
            elif spec.kind in ROW_KINDS:
                _row_body(src, spec, acc, length, red)
            else:
                _reduce_body(src, spec, acc, length, red)
    grid = min(rows, MAX_GRID)
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, grid * threads, False), (grid, 1, 1), (threads, 1, 1)


def _value(spec, acc, var="r"):
    """C expression of element ``var`` of the row, loaded as ``acc`` (scaled for rows)."""
    value = load(spec.in_dtype, f"i0[base + {var}_off]", acc)
    if spec.kind in ("softmax", "log_softmax") and spec.scale != 1.0:
        value = f"{value} * ({acc})({c_literal(spec.scale)})"
    return value


def _loop(src, length, red, body):
    """``for r in this thread's elements: body(offset name)``."""
    with src.block(f"for (long long r = threadIdx.x; r < {length}; r += blockDim.x)"):
        src.line(f"const long long r_off = {_offset('r', *red)};")
        body()


def _tree(src, acc, combine, into):
    """Combine every thread's ``v`` in ``buf``; ``into`` = the block's result, for all."""
    src.line("buf[threadIdx.x] = v;")
    src.line("__syncthreads();")
    with src.block("for (int s = blockDim.x / 2; s > 0; s >>= 1)"):
        with src.block("if (threadIdx.x < s)"):
            src.line(f"const {acc} a = buf[threadIdx.x];")
            src.line(f"const {acc} b = buf[threadIdx.x + s];")
            src.line(f"buf[threadIdx.x] = {combine};")
        src.line("__syncthreads();")
    src.line(f"const {acc} {into} = buf[0];")
    src.line("__syncthreads();")


def _reduce_body(src, spec, acc, length, red):
    init, combine, transform = KINDS[spec.kind]
    init = init.replace("INF", _INF[acc])
    src.line(f"{acc} v = ({acc})({init});")

    def accumulate():
        src.line(f"const {acc} x = {_value(spec, acc)};")
        src.line(f"const {acc} a = v;")
        src.line(f"const {acc} b = {transform.format(acc=acc, x='x')};")
        src.line(f"v = {combine};")

    _loop(src, length, red, accumulate)
    _tree(src, acc, combine, "total")
    result = f"total / ({acc}){length}" if spec.kind == "mean" else "total"
    src.line(f"if (threadIdx.x == 0) o0[row] = {store(spec.out_dtype, f'({acc})({result})')};")


def _row_body(src, spec, acc, length, red):
    src.line(f"{acc} v = -{_INF[acc]};")
    _loop(src, length, red, lambda: src.line(
        f"{{ const {acc} a = v; const {acc} b = {_value(spec, acc)}; "
        "v = ((a > b || a != a) ? a : b); }"))
    _tree(src, acc, "((a > b || a != a) ? a : b)", "top")
    src.line(f"v = ({acc})0;")
    _loop(src, length, red, lambda: src.line(f"v += exp({_value(spec, acc)} - top);"))
    _tree(src, acc, "a + b", "total")
    if spec.kind == "log_softmax":
        src.line(f"const {acc} lt = log(total);")
        out = f"({_value(spec, acc)} - top) - lt"
    else:
        out = f"exp({_value(spec, acc)} - top) / total"
    _loop(src, length, red, lambda: src.line(
        f"o0[base + r_off] = {store(spec.out_dtype, f'({acc})({out})')};"))


def _layer_norm_body(src, spec, acc, length, red):
    """LayerNorm of a row (``scale`` is eps): mean, then the mean of squared deviations,
    ``std = sqrt(var + eps)``, ``out = (x - mean) / std * gamma + beta``; mean and std are
    stored at the row's index."""
    src.line(f"{acc} v = ({acc})0;")
    _loop(src, length, red, lambda: src.line(f"v += {_value(spec, acc)};"))
    _tree(src, acc, "a + b", "total")
    src.line(f"const {acc} mean = total / ({acc}){length};")
    src.line(f"v = ({acc})0;")
    _loop(src, length, red, lambda: src.line(
        f"{{ const {acc} d = {_value(spec, acc)} - mean; v += d * d; }}"))
    _tree(src, acc, "a + b", "squares")
    eps = c_literal(spec.scale)
    src.line(f"const {acc} sd = sqrt(squares / ({acc}){length} + ({acc})({eps}));")
    with src.block("if (threadIdx.x == 0)"):
        src.line(f"o1[row] = {store(spec.out_dtype, f'({acc})mean')};")
        src.line(f"o2[row] = {store(spec.out_dtype, f'({acc})sd')};")
    g, b = (load(spec.in_dtype, f"{n}[r]", acc) for n in ("gamma", "beta"))
    value = f"({acc})(({_value(spec, acc)} - mean) / sd * {g} + {b})"
    _loop(src, length, red, lambda: src.line(f"o0[base + r_off] = {store(spec.out_dtype, value)};"))
