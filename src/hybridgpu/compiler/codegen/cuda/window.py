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

Arguments: pooling ``(out, data)``; convolution ``(out, data, weight[, bias])``. With
``batch_arg`` (a spec field), a kernel takes one more argument, ``long long total``: the number
of elements it computes. Its source then has no batch size (generate it for batch 1), so one
compiled kernel serves every batch size (the GPU backend's shape arguments).

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
from .source import CudaSource, kernel_head, param_kinds

__all__ = ["PoolSpec", "ConvSpec", "generate_pool", "generate_conv", "generate_im2col",
           "generate_col2im", "generate_swap01", "generate_pool_backward"]

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
    batch_arg: bool = False  # the element count is an argument (see the module docstring)


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
    batch_arg: bool = False  # the element count is an argument (see the module docstring)


def _coords(src, out_shape):
    """Declare ``n, c, oy, ox`` of output element ``i``."""
    _, c, h, w = out_shape
    src.line(f"const int ox = (int)(i % {w});")
    src.line(f"const int oy = (int)((i / {w}) % {h});")
    src.line(f"const int c = (int)((i / {w * h}) % {c});")
    src.line(f"const int n = (int)(i / {w * h * c});")


def _sized(params, spec, total):
    """``(params, loop bound)``: with ``spec.batch_arg`` the bound is the argument ``total``
    (appended to ``params``), else the constant ``total``."""
    if spec.batch_arg:
        return [*params, "long long total"], "total"
    return params, total


def _grid_loop(src, total):
    return src.block(f"for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                     f"i < {total}; i += (long long)gridDim.x * blockDim.x)")


def generate_pool(spec, name):
    """The Kernel computing ``spec``, called ``name``."""
    n, c, h, w = spec.shape
    oh, ow = spec.out_hw
    (kh, kw), (sh, sw), (ph, pw) = spec.kernel, spec.stride, spec.pad
    acc, t = COMPUTE[spec.dtype], STORAGE[spec.dtype]
    total = n * c * oh * ow
    params, bound = _sized([f"{t}* __restrict__ o0", f"const {t}* __restrict__ i0"], spec, total)
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), _grid_loop(src, bound):
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
    return Kernel(name, src.text(), param_kinds(params), total, False)


def _divide(src, spec, h, w):
    (kh, kw), (ph, pw) = spec.kernel, spec.pad
    if spec.include_pad:
        src.line(f"const int ch = min(y0 + {kh}, {h + ph}) - y0;")
        src.line(f"const int cw = min(x0 + {kw}, {w + pw}) - x0;")
    else:
        src.line(f"const int ch = min(y0 + {kh}, {h}) - max(y0, 0);")
        src.line(f"const int cw = min(x0 + {kw}, {w}) - max(x0, 0);")
    src.line("const int cnt = max(ch, 1) * max(cw, 1);")
    acc = COMPUTE[spec.dtype]
    src.line(f"v = v / ({acc})(cnt);")


def generate_conv(spec, name):
    """The Kernel computing ``spec`` directly, called ``name``."""
    n, c, h, w = spec.shape
    _, o, oh, ow = spec.out_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = spec.kernel, spec.stride, spec.pad, spec.dilate
    cg, og = c // spec.groups, o // spec.groups
    acc, t = COMPUTE[spec.dtype], STORAGE[spec.dtype]
    total = math.prod(spec.out_shape)
    params = [f"{t}* __restrict__ o0", f"const {t}* __restrict__ i0", f"const {t}* __restrict__ wt"]
    if spec.bias:
        params.append(f"const {t}* __restrict__ bs")
    params, bound = _sized(params, spec, total)
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), _grid_loop(src, bound):
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
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, total, False)


def generate_im2col(spec, name, batch_inner=False):
    """The Kernel writing ``col[n, (c * kh + ky) * kw + kx, oy * OW + ox]`` (zero outside the
    input) for the GEMM form of ``spec`` (a ConvSpec with one group); with ``batch_inner``
    the layout is ``col[k, n * P + p]`` (one matrix for the whole batch, for the weight
    gradient). Arguments: (col, data)."""
    n, c, h, w = spec.shape
    _, _, oh, ow = spec.out_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = spec.kernel, spec.stride, spec.pad, spec.dilate
    t = STORAGE[spec.dtype]
    p, k = oh * ow, c * kh * kw
    total = n * k * p
    if spec.batch_arg and batch_inner:
        raise ValueError("im2col with the batch inner needs the batch size in its source")
    params, bound = _sized([f"{t}* __restrict__ o0", f"const {t}* __restrict__ i0"], spec, total)
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), _grid_loop(src, bound):
        src.line(f"const int ox = (int)(i % {ow});")
        src.line(f"const int oy = (int)((i / {ow}) % {oh});")
        src.line(f"const int kx = (int)((i / {p}) % {kw});")
        src.line(f"const int ky = (int)((i / {p * kw}) % {kh});")
        src.line(f"const int cc = (int)((i / {p * kw * kh}) % {c});")
        src.line(f"const long long n = i / {k * p};")
        src.line(f"const int y = oy * {sh} - {ph} + ky * {dh};")
        src.line(f"const int x = ox * {sw} - {pw} + kx * {dw};")
        src.line(f"const bool inside = y >= 0 && y < {h} && x >= 0 && x < {w};")
        zero = store(spec.dtype, "0.0f") if spec.dtype == "float16" else f"({t})0.0f"
        value = f"inside ? i0[(n * {c} + cc) * {h * w} + y * {w} + x] : {zero}"
        if batch_inner:  # element (n, k, p) goes to col[k, n * P + p]
            src.line(f"const long long kk = (i / {p}) % {k};")
            src.line(f"o0[kk * {n * p} + n * {p} + (i % {p})] = {value};")
        else:
            src.line(f"o0[i] = {value};")
    return Kernel(name, src.text(), param_kinds(params), total, False)


def generate_col2im(spec, name):
    """The Kernel of a transposed convolution's last step, for ``spec`` in the convolution's
    terms (``spec.shape`` is the transposed convolution's output, ``out_shape`` its input):
    ``out[n, f, y, x] (+ bias[f]) = sum over (ky, kx) of col[n, (f * kh + ky) * kw + kx,
    oy * W + ox]`` where ``y + pad - ky * dilate = oy * stride`` (and the same for x), a thread
    an output element, so no atomics. Arguments: (out, col[, bias])."""
    n, f, oh, ow = spec.shape
    _, _, h, w = spec.out_shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = spec.kernel, spec.stride, spec.pad, spec.dilate
    t, acc = STORAGE[spec.dtype], COMPUTE[spec.dtype]
    p = h * w
    params = [f"{t}* __restrict__ o0", f"const {t}* __restrict__ col"]
    if spec.bias:
        params.append(f"const {t}* __restrict__ bs")
    total = n * f * oh * ow
    params, bound = _sized(params, spec, total)
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), _grid_loop(src, bound):
        _coords(src, (n, f, oh, ow))
        bias = load(spec.dtype, "bs[c]", acc) if spec.bias else f"({acc})0"
        src.line(f"{acc} v = {bias};")
        src.line(f"const {t}* cols = col + (long long)n * {f * kh * kw * p};")
        with src.block(f"for (int ky = 0; ky < {kh}; ++ky)"):
            src.line(f"const int yy = oy + {ph} - ky * {dh};")
            src.line(f"if (yy < 0 || yy % {sh} != 0 || yy / {sh} >= {h}) continue;")
            with src.block(f"for (int kx = 0; kx < {kw}; ++kx)"):
                src.line(f"const int xx = ox + {pw} - kx * {dw};")
                src.line(f"if (xx < 0 || xx % {sw} != 0 || xx / {sw} >= {w}) continue;")
                element = (f"cols[((long long)(c * {kh} + ky) * {kw} + kx) * {p} "
                           f"+ (yy / {sh}) * {w} + xx / {sw}]")
                src.line(f"v += {load(spec.dtype, element, acc)};")
        src.line(f"o0[i] = {store(spec.dtype, 'v')};")
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, total, False)


def generate_swap01(shape, dtype, name):
    """The Kernel of ``out[b, a, r] = in[a, b, r]`` for ``in`` of ``shape`` (A, B, R).
    Arguments: (out, in)."""
    a, b, r = shape
    t = STORAGE[dtype]
    src = CudaSource()
    head = (f'extern "C" __global__ void __launch_bounds__({BLOCK}) {name}({t}* __restrict__ o0, '
            f"const {t}* __restrict__ i0)")
    with src.block(head), _grid_loop(src, a * b * r):
        src.line(f"const long long q = i % {r}, bb = (i / {r}) % {b}, aa = i / {b * r};")
        src.line(f"o0[(bb * {a} + aa) * {r} + q] = i0[i];")
    return Kernel(name, src.text(), (f"{t}*", f"const {t}*"), a * b * r, False)


def generate_pool_backward(spec, name):
    """The Kernel of ``_backward_Pooling`` for ``spec`` (a PoolSpec), a thread an input
    element, gathering from the windows that contain it: max passes ``out_grad`` to the first
    element of a window (in window order) equal to the window's output, avg passes
    ``out_grad / count``, sum passes ``out_grad``. Arguments: (grad, data, output, out_grad)."""
    n, c, h, w = spec.shape
    oh, ow = spec.out_hw
    (kh, kw), (sh, sw), (ph, pw) = spec.kernel, spec.stride, spec.pad
    acc, t = COMPUTE[spec.dtype], STORAGE[spec.dtype]
    total = n * c * h * w
    params = [f"{t}* __restrict__ o0", f"const {t}* __restrict__ i0",
              f"const {t}* __restrict__ y0", f"const {t}* __restrict__ g0"]
    params, bound = _sized(params, spec, total)
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), _grid_loop(src, bound):
        _coords(src, (n, c, h, w))  # here (oy, ox) name the input element
        src.line(f"const long long plane = (long long)n * {c} + c;")
        src.line(f"const {t}* xs = i0 + plane * {h * w};")
        src.line(f"const {acc} me = {load(spec.dtype, 'xs[oy * ' + str(w) + ' + ox]', acc)};")
        src.line(f"{acc} v = ({acc})0;")
        with src.block(f"for (int py = 0; py < {oh}; ++py)"):
            src.line(f"const int ky = oy + {ph} - py * {sh};")
            src.line(f"if (ky < 0 || ky >= {kh}) continue;")
            with src.block(f"for (int px = 0; px < {ow}; ++px)"):
                src.line(f"const int kx = ox + {pw} - px * {sw};")
                src.line(f"if (kx < 0 || kx >= {kw}) continue;")
                src.line(f"const long long o = plane * {oh * ow} + py * {ow} + px;")
                src.line(f"const {acc} g = {load(spec.dtype, 'g0[o]', acc)};")
                if spec.kind == "max":
                    _first_max(src, spec, acc, h, w)
                elif spec.kind == "avg":
                    src.line(f"const int y0 = py * {sh} - {ph};")
                    src.line(f"const int x0 = px * {sw} - {pw};")
                    _divide_count(src, spec, h, w, acc)
                else:
                    src.line("v += g;")
        src.line(f"o0[i] = {store(spec.dtype, f'({acc})v')};")
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, total, False)


def _first_max(src, spec, acc, h, w):
    """``v += g`` when this element is the window's first element equal to its output."""
    kw, (sh, sw), (ph, pw) = spec.kernel[1], spec.stride, spec.pad
    src.line(f"const {acc} top = {load(spec.dtype, 'y0[o]', acc)};")
    src.line("if (me != top) continue;")
    src.line("bool first = true;")
    with src.block(f"for (int q = 0; q < ky * {kw} + kx; ++q)"):  # the positions before mine
        src.line(f"const int yy = py * {sh} - {ph} + q / {kw}, xx = px * {sw} - {pw} + q % {kw};")
        src.line(f"const {acc} e = (yy < 0 || yy >= {h} || xx < 0 || xx >= {w}) ? "
                 f"{_LOWEST[acc]} : {load(spec.dtype, f'xs[yy * {w} + xx]', acc)};")
        src.line("if (e == top) { first = false; break; }")
    src.line("if (first) v += g;")


def _divide_count(src, spec, h, w, acc):
    """``v += g / count`` with the window's size as the forward pass divided by."""
    (kh, kw), (ph, pw) = spec.kernel, spec.pad
    if spec.include_pad:
        src.line(f"const int ch = min(y0 + {kh}, {h + ph}) - y0;")
        src.line(f"const int cw = min(x0 + {kw}, {w + pw}) - x0;")
    else:
        src.line(f"const int ch = min(y0 + {kh}, {h}) - max(y0, 0);")
        src.line(f"const int cw = min(x0 + {kw}, {w}) - max(x0, 0);")
    src.line(f"v += g / ({acc})(max(ch, 1) * max(cw, 1));")
