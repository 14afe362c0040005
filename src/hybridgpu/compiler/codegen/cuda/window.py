"""Window kernels over NCHW data, one thread an output element: 2-D pooling (max, avg, sum)
and direct 2-D convolution (for grouped and depthwise convolutions, where im2col + GEMM would
be many tiny GEMMs).

Pooling follows MXNet (see ``ops/pool.py``): the window of output ``o`` starts at
``o * stride - pad``; max takes the largest valid element (the lowest finite value when none
is valid, NaN when any is NaN); avg divides the sum by the window size clipped to
``[-pad, size + pad)`` (``count_include_pad``) or by its valid elements; sizes are at least 1.

Convolution: ``out[n, o, y, x] = bias[o] + sum over the group's channels c and the kernel
(ky, kx) of data[n, g * Cg + c, y * sy - py + ky * dy, x * sx - px + kx * dx] * w[o, c, ky,
kx]`` with ``g = o / (O / groups)``, accumulated in float (double for float64).

Arguments: pooling ``(out, data)``; convolution ``(out, data, weight[, bias])``.

Example:
    >>> spec = PoolSpec((1, 2, 5, 5), (2, 2), (3, 3), (2, 2), (1, 1), "avg", True, "float32")
    >>> k = generate_pool(spec, "k2_pool")
    >>> k.work_items, "/ (float)(cnt)" in k.source
    (8, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .ctype import COMPUTE, STORAGE, load, store
from .elementwise import BLOCK, Kernel
from .source import CudaSource

__all__ = ["PoolSpec", "ConvSpec", "generate_pool", "generate_conv", "generate_im2col"]

_LOWEST = {"float": "(-3.402823466e+38f)", "double": "(-1.7976931348623157e+308)"}


@dataclass(frozen=True)
class PoolSpec:
    """``shape`` (N, C, H, W) in, ``out_hw`` out; ``kind`` max | avg | sum."""

    shape: tuple
    out_hw: tuple
    kernel: tuple
    stride: tuple
    pad: tuple
    kind: str
    include_pad: bool
    dtype: str


@dataclass(frozen=True)
class ConvSpec:
    """``shape`` (N, C, H, W) in, ``out_shape`` (N, O, OH, OW) out, 2-D geometry, groups."""

    shape: tuple
    out_shape: tuple
    kernel: tuple
    stride: tuple
    pad: tuple
    dilate: tuple
    groups: int
    bias: bool
    dtype: str


def _coords(src, out_shape):
    """Declare ``n, c, oy, ox`` of output element ``i``."""
    _, c, h, w = out_shape
    src.line(f"const int ox = (int)(i % {w});")
    src.line(f"const int oy = (int)((i / {w}) % {h});")
    src.line(f"const int c = (int)((i / {w * h}) % {c});")
    src.line(f"const int n = (int)(i / {w * h * c});")


def _grid_loop(src, total):
    return src.block(f"for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                     f"i < {total}; i += (long long)gridDim.x * blockDim.x)")


def generate_pool(spec, name):
    """The Kernel computing ``spec``, called ``name``."""
    n, c, h, w = spec.shape
    oh, ow = spec.out_hw
    (kh, kw), (sh, sw), (ph, pw) = spec.kernel, spec.stride, spec.pad
    acc, t = ("double" if spec.dtype == "float64" else "float"), STORAGE[spec.dtype]
    total = n * c * oh * ow
    src = CudaSource()
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({t}* __restrict__ o0, '
            f"const {t}* __restrict__ i0)")
    with src.block(head), _grid_loop(src, total):
        _coords(src, (n, c, oh, ow))
        src.line(f"const int y0 = oy * {sh} - {ph};")
        src.line(f"const int x0 = ox * {sw} - {pw};")
        src.line(f"const {t}* plane = i0 + ((long long)n * {c} + c) * {h * w};")
        init = _LOWEST[acc] if spec.kind == "max" else f"({acc})0"
        src.line(f"{acc} v = {init};")
        with src.block(f"for (int ky = 0; ky < {kh}; ++ky)"):
            src.line("const int y = y0 + ky;")
            src.line(f"if (y < 0 || y >= {h}) continue;")
            with src.block(f"for (int kx = 0; kx < {kw}; ++kx)"):
                src.line("const int x = x0 + kx;")
                src.line(f"if (x < 0 || x >= {w}) continue;")
                src.line(f"const {acc} e = {load(spec.dtype, f'plane[y * {w} + x]', acc)};")
                if spec.kind == "max":
                    src.line("v = ((v > e || v != v) ? v : e);")
                else:
                    src.line("v += e;")
        if spec.kind == "avg":
            _divide(src, spec, h, w)
        src.line(f"o0[i] = {store(spec.dtype, f'({acc})v')};")
    return Kernel(name, src.text(), (f"{t}*", f"const {t}*"), total, False)


def _divide(src, spec, h, w):
    (kh, kw), (ph, pw) = spec.kernel, spec.pad
    if spec.include_pad:
        src.line(f"const int ch = min(y0 + {kh}, {h + ph}) - y0;")
        src.line(f"const int cw = min(x0 + {kw}, {w + pw}) - x0;")
    else:
        src.line(f"const int ch = min(y0 + {kh}, {h}) - max(y0, 0);")
        src.line(f"const int cw = min(x0 + {kw}, {w}) - max(x0, 0);")
    src.line("const int cnt = max(ch, 1) * max(cw, 1);")
    acc = "double" if spec.dtype == "float64" else "float"
    src.line(f"v = v / ({acc})(cnt);")


def generate_conv(spec, name):
    """The Kernel computing ``spec`` directly, called ``name``."""
    n, c, h, w = spec.shape
    _, o, oh, ow = spec.out_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = spec.kernel, spec.stride, spec.pad, spec.dilate
    cg, og = c // spec.groups, o // spec.groups
    acc, t = COMPUTE[spec.dtype], STORAGE[spec.dtype]
    acc = "double" if acc == "double" else "float"
    total = math.prod(spec.out_shape)
    params = [f"{t}* __restrict__ o0", f"const {t}* __restrict__ i0", f"const {t}* __restrict__ wt"]
    if spec.bias:
        params.append(f"const {t}* __restrict__ bs")
    src = CudaSource()
    head = f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({", ".join(params)})'
    with src.block(head), _grid_loop(src, total):
        _coords(src, (n, o, oh, ow))
        src.line(f"const int g = c / {og};")
        src.line(f"const int y0 = oy * {sh} - {ph};")
        src.line(f"const int x0 = ox * {sw} - {pw};")
        src.line(f"{acc} v = {load(spec.dtype, 'bs[c]', acc) if spec.bias else f'({acc})0'};")
        with src.block(f"for (int cc = 0; cc < {cg}; ++cc)"):
            src.line(f"const {t}* plane = i0 + ((long long)n * {c} + g * {cg} + cc) * {h * w};")
            src.line(f"const {t}* filt = wt + ((long long)c * {cg} + cc) * {kh * kw};")
            with src.block(f"for (int ky = 0; ky < {kh}; ++ky)"):
                src.line(f"const int y = y0 + ky * {dh};")
                src.line(f"if (y < 0 || y >= {h}) continue;")
                with src.block(f"for (int kx = 0; kx < {kw}; ++kx)"):
                    src.line(f"const int x = x0 + kx * {dw};")
                    src.line(f"if (x < 0 || x >= {w}) continue;")
                    src.line(f"v += {load(spec.dtype, f'plane[y * {w} + x]', acc)} * "
                             f"{load(spec.dtype, f'filt[ky * {kw} + kx]', acc)};")
        src.line(f"o0[i] = {store(spec.dtype, f'({acc})v')};")
    kinds = tuple(p.rsplit(" ", 1)[0].replace(" __restrict__", "") for p in params)
    return Kernel(name, src.text(), kinds, total, False)


def generate_im2col(spec, name):
    """The Kernel writing ``col[n, (c * kh + ky) * kw + kx, oy * OW + ox]`` (zero outside the
    input) for the GEMM form of ``spec`` (a ConvSpec with one group). Arguments: (col, data)."""
    n, c, h, w = spec.shape
    _, _, oh, ow = spec.out_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = spec.kernel, spec.stride, spec.pad, spec.dilate
    t = STORAGE[spec.dtype]
    p, k = oh * ow, c * kh * kw
    total = n * k * p
    src = CudaSource()
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({t}* __restrict__ o0, '
            f"const {t}* __restrict__ i0)")
    with src.block(head), _grid_loop(src, total):
        src.line(f"const int ox = (int)(i % {ow});")
        src.line(f"const int oy = (int)((i / {ow}) % {oh});")
        src.line(f"const int kx = (int)((i / {p}) % {kw});")
        src.line(f"const int ky = (int)((i / {p * kw}) % {kh});")
        src.line(f"const int cc = (int)((i / {p * kw * kh}) % {c});")
        src.line(f"const long long n = i / {k * p};")
        src.line(f"const int y = oy * {sh} - {ph} + ky * {dh};")
        src.line(f"const int x = ox * {sw} - {pw} + kx * {dw};")
        src.line(f"const bool inside = y >= 0 && y < {h} && x >= 0 && x < {w};")
        src.line(f"o0[i] = inside ? i0[(n * {c} + cc) * {h * w} + y * {w} + x] : ({t})0.0f;")
    return Kernel(name, src.text(), (f"{t}*", f"const {t}*"), total, False)
