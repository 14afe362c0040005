"""BatchNorm in training: one block a channel computes the batch statistics, updates the moving
statistics in place and normalizes; its backward (``_backward_BatchNorm``) likewise.

Forward (``ops/norm.py``'s arithmetic): ``mean`` and the biased ``var`` over every axis but the
channel's, ``moving = moving * momentum + (1 - momentum) * stat`` (written into the auxiliary
arrays, so a captured graph updates them once per replay), ``invstd = 1 / sqrt(var + eps)``,
``out = (x - mean) * scale + beta`` with ``scale = invstd`` (``fix_gamma``) or
``gamma * invstd``. Arguments: ``(out, mean, invstd, data, gamma, beta, moving_mean,
moving_var)``.

Backward: ``xhat = (x - mean) * invstd``, ``dbeta = sum g``, ``dgamma = sum g * xhat`` (zero
with ``fix_gamma``), ``dx = scale * (g - (dbeta + xhat * dgamma) / count)`` (training) or
``scale * g``. Arguments: ``(dx, dgamma, dbeta, ograd, data, gamma, mean, invstd)``.

Statistics accumulate in double. ``BatchNormSpec``: data shape and dtype, channel axis, the
parameters' dtype, attributes.

Example:
    >>> spec = BatchNormSpec((2, 3, 4), "float32", 1, "float32", 1e-5, 0.9, False, False, True)
    >>> k, grid, block = generate_batch_norm(spec, "k5_bn")
    >>> k.params[-2:], grid, block
    (('float*', 'float*'), (3, 1, 1), (32, 1, 1))
"""

from __future__ import annotations

from dataclasses import dataclass

from ...passes.cuda_expr import c_literal
from .ctype import COMPUTE, STORAGE, load, store
from .elementwise import Kernel
from .reduce import MAX_GRID, ReduceSpec, _geometry, _loop, _offset, _tree, block_size
from .source import CudaSource, kernel_head, param_kinds

__all__ = ["BatchNormSpec", "generate_batch_norm"]


@dataclass(frozen=True)
class BatchNormSpec:
    """See the module docstring; ``backward`` picks the gradient kernel."""

    shape: tuple
    dtype: str
    axis: int
    param_dtype: str
    eps: float
    momentum: float
    fix_gamma: bool
    backward: bool
    train: bool = True


def _params(spec):
    t, p = STORAGE[spec.dtype], STORAGE[spec.param_dtype]
    if spec.backward:
        return [f"{t}* __restrict__ o0", f"{p}* __restrict__ o1", f"{p}* __restrict__ o2",
                f"const {t}* __restrict__ g0", f"const {t}* __restrict__ i0",
                f"const {p}* __restrict__ gamma", f"const {p}* __restrict__ mu",
                f"const {p}* __restrict__ inv"]
    return [f"{t}* __restrict__ o0", f"{p}* __restrict__ o1", f"{p}* __restrict__ o2",
            f"const {t}* __restrict__ i0", f"const {p}* __restrict__ gamma",
            f"const {p}* __restrict__ beta", f"{p}* __restrict__ mmean",
            f"{p}* __restrict__ mvar"]


def generate_batch_norm(spec, name):
    """``(Kernel, grid, block)`` of ``spec``, called ``name``."""
    red_axes = tuple(a for a in range(len(spec.shape)) if a != spec.axis)
    geometry = ReduceSpec(spec.shape, red_axes, spec.dtype, spec.dtype, "sum")
    rows, length, kept, red = _geometry(geometry)
    threads = block_size(length)
    params = _params(spec)
    src = CudaSource()
    head = kernel_head(name, params, threads)
    with src.block(head):
        src.line(f"__shared__ double buf[{threads}];")
        with src.block(f"for (long long row = blockIdx.x; row < {rows}; row += gridDim.x)"):
            src.line(f"const long long base = {_offset('row', *kept)};")
            if spec.backward:
                _backward(src, spec, length, red)
            else:
                _forward(src, spec, length, red)
    grid = min(rows, MAX_GRID)
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, grid * threads, False), (grid, 1, 1), (threads, 1, 1)


def _x(spec, name="i0"):
    return load(spec.dtype, f"{name}[base + r_off]", "double")


def _p(spec, name):
    return load(spec.param_dtype, f"{name}[row]", "double")


def _forward(src, spec, length, red):
    src.line("double v = 0.0;")
    _loop(src, length, red, lambda: src.line(f"v += {_x(spec)};"))
    _tree(src, "double", "a + b", "total")
    rounded = f"(double)({COMPUTE[spec.param_dtype]})"  # the statistics' own precision
    src.line(f"const double mean = {rounded}(total / {length}.0);")
    src.line("v = 0.0;")
    _loop(src, length, red, lambda: src.line(f"{{ const double d = {_x(spec)} - mean; "
                                             "v += d * d; }"))
    _tree(src, "double", "a + b", "squares")
    src.line(f"const double var = {rounded}(squares / {length}.0);")
    src.line(f"const double invstd = 1.0 / sqrt(var + {c_literal(spec.eps)});")
    with src.block("if (threadIdx.x == 0)"):
        keep, new = spec.momentum, 1.0 - spec.momentum
        for moving, stat in (("mmean", "mean"), ("mvar", "var")):
            update = f"{_p(spec, moving)} * {c_literal(keep)} + {c_literal(new)} * {stat}"
            src.line(f"{moving}[row] = {store(spec.param_dtype, update)};")
        src.line(f"o1[row] = {store(spec.param_dtype, 'mean')};")
        src.line(f"o2[row] = {store(spec.param_dtype, 'invstd')};")
    scale = "invstd" if spec.fix_gamma else f"{_p(spec, 'gamma')} * invstd"
    src.line(f"const double scale = {scale};")
    src.line(f"const double shift = {_p(spec, 'beta')};")
    _loop(src, length, red, lambda: src.line(
        f"o0[base + r_off] = {store(spec.dtype, f'({_x(spec)} - mean) * scale + shift')};"))


def _backward(src, spec, length, red):
    src.line(f"const double mean = {_p(spec, 'mu')};")
    src.line(f"const double invstd = {_p(spec, 'inv')};")
    src.line("double v = 0.0;")
    _loop(src, length, red, lambda: src.line(f"v += {_x(spec, 'g0')};"))
    _tree(src, "double", "a + b", "dbeta")
    src.line("v = 0.0;")
    _loop(src, length, red, lambda: src.line(
        f"v += {_x(spec, 'g0')} * (({_x(spec)} - mean) * invstd);"))
    _tree(src, "double", "a + b", "dgamma")
    with src.block("if (threadIdx.x == 0)"):
        src.line(f"o1[row] = {store(spec.param_dtype, '0.0' if spec.fix_gamma else 'dgamma')};")
        src.line(f"o2[row] = {store(spec.param_dtype, 'dbeta')};")
    scale = "invstd" if spec.fix_gamma else f"{_p(spec, 'gamma')} * invstd"
    src.line(f"const double scale = {scale};")
    if spec.train:
        grad = (f"scale * ({_x(spec, 'g0')} - (dbeta + (({_x(spec)} - mean) * invstd) * dgamma)"
                f" / {length}.0)")
    else:
        grad = f"scale * {_x(spec, 'g0')}"
    _loop(src, length, red, lambda: src.line(
        f"o0[base + r_off] = {store(spec.dtype, grad)};"))
