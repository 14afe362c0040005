"""Gather kernels: ops that only move elements (transpose, slice, Concat, split, tile, flip,
broadcast_to, SwapAxis...) as ``out[i] = inputs[table[i]]`` with a precomputed index table.

``gather_tables(op, attrs, in_shapes)`` finds the tables without knowing the op: it runs the
op's NumPy compute on probe inputs whose elements are a random permutation of the positions of
all input elements, so each output element names where it came from; a second permutation must
move the same way, and each input replaced by zeros in turn must give zeros exactly where that
input's elements went. Anything that looks at values (sort, where, a reduction) fails one of
these and runs eagerly instead.

The kernel reads the table (int32) and picks the input whose range the index falls in.
Arguments: ``(out, table, in0, in1, ...)``.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> t = ops.get("transpose")
    >>> gather_tables(t, t.parse_attrs({}), [(2, 3)])[0].tolist()
    [0, 3, 1, 4, 2, 5]
    >>> gather_tables(ops.get("sort"), ops.get("sort").parse_attrs({}), [(2, 3)]) is None
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .ctype import STORAGE
from .elementwise import BLOCK, Kernel
from .source import CudaSource, kernel_head, param_kinds

__all__ = ["GatherSpec", "gather_tables", "generate_gather", "MAX_ELEMENTS"]

#: Ops over more elements than this are not probed (the tables would be large).
MAX_ELEMENTS = 1 << 20


@dataclass(frozen=True)
class GatherSpec:
    """``size`` output elements of ``dtype`` picked from inputs of ``in_sizes``."""

    size: int
    dtype: str
    in_sizes: tuple


def _run(op, attrs, arrays):
    out = op.compute(np, *arrays, **attrs)
    return out if isinstance(out, tuple) else (out,)


def _split(values, shapes):
    parts, start = [], 0
    for shape in shapes:
        n = math.prod(shape)
        parts.append(values[start:start + n].reshape(shape))
        start += n
    return parts


def gather_tables(op, attrs, in_shapes):
    """One int array per output (flat indices into the inputs laid end to end), or None
    when the op is not a pure movement of elements for these shapes."""
    total = sum(math.prod(s) for s in in_shapes)
    if not total or total > MAX_ELEMENTS:
        return None
    rng = np.random.default_rng(20261124)
    first, second = (rng.permutation(total).astype(np.float64) for _ in range(2))
    try:
        outs = _run(op, attrs, _split(first, in_shapes))
        again = _run(op, attrs, _split(second, in_shapes))
    except Exception:  # the op refuses the probe: it is not ours to take
        return None
    inverse = np.empty(total, np.int64)
    inverse[first.astype(np.int64)] = np.arange(total)
    tables = []
    for out, out2 in zip(outs, again):
        out = np.asarray(out)
        if out.dtype != np.float64 or out.size > MAX_ELEMENTS or not out.size:
            return None
        flat = out.reshape(-1)
        if not np.array_equal(flat, np.round(flat)) or flat.min() < 0 or flat.max() >= total:
            return None
        table = inverse[flat.astype(np.int64)]
        if not np.array_equal(np.asarray(out2).reshape(-1), second[table]):
            return None
        tables.append(table)
    return tables if _zeros_follow(op, attrs, in_shapes, first, tables) else None


def _zeros_follow(op, attrs, in_shapes, first, tables):
    """Each input replaced by zeros in turn gives zeros exactly where its elements went."""
    if len(in_shapes) == 1:
        return True
    start = 0
    for shape in in_shapes:
        n = math.prod(shape)
        probe = first.copy()
        probe[start:start + n] = 0.0
        try:
            outs = _run(op, attrs, _split(probe, in_shapes))
        except Exception:
            return False
        for out, table in zip(outs, tables):
            if not np.array_equal(np.asarray(out).reshape(-1), probe[table]):
                return False
        start += n
    return True


def generate_gather(spec, name):
    """The Kernel of ``spec``, called ``name``."""
    t = STORAGE[spec.dtype]
    ins = [f"const {t}* __restrict__ i{k}" for k in range(len(spec.in_sizes))]
    params = [f"{t}* __restrict__ o0", "const int* __restrict__ table", *ins]
    src = CudaSource()
    head = kernel_head(name, params, BLOCK)
    with src.block(head), src.block(
            f"for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"i < {spec.size}; i += (long long)gridDim.x * blockDim.x)"):
        src.line("const int j = table[i];")
        start = 0
        for k, n in enumerate(spec.in_sizes):
            last = k == len(spec.in_sizes) - 1
            pick = f"o0[i] = i{k}[j - {start}];" if start else f"o0[i] = i{k}[j];"
            if last:
                src.line(pick if k == 0 else f"else {pick}")
            else:
                src.line(f"{'if' if k == 0 else 'else if'} (j < {start + n}) {pick}")
            start += n
    kinds = param_kinds(params)
    return Kernel(name, src.text(), kinds, spec.size, False)
