"""``pick`` and its gradient ``_backward_pick`` as kernels (softmax cross-entropy's label
lookup), so a training step's loss stays inside its captured graph.

The data is seen as ``(outer, axis, inner)``; the index holds ``outer * inner`` values of any
stored dtype, truncated toward zero as a C cast does (NumPy's ``astype(int64)``, what the op's
compute does), then bounded by ``mode``: ``clip`` into ``[0, axis)``, ``wrap`` modulo
``axis`` (never negative).

* forward, arguments ``(out, data, index)``: ``out[o] = data[a, bound(index[o]), b]`` for
  ``o = a * inner + b``;
* backward, arguments ``(grad, ograd, index)``: ``grad[a, k, b] = ograd[o]`` where ``k`` is the
  picked position, else 0 (one thread an element of ``grad``, no atomics).

Example:
    >>> spec = PickSpec(outer=2, axis=3, inner=1, dtype="float32", index_dtype="float32",
    ...                 mode="clip", backward=False)
    >>> kernel = generate_pick(spec, "k5_pick")
    >>> kernel.params, kernel.work_items
    (('float*', 'const float*', 'const float*'), 2)
    >>> "k = k < 0 ? 0 : (k >= 3 ? 3 - 1 : k);" in kernel.source
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from .ctype import STORAGE, store
from .elementwise import BLOCK, Kernel
from .source import CudaSource, kernel_head, param_kinds

__all__ = ["PickSpec", "generate_pick"]


@dataclass(frozen=True)
class PickSpec:
    """A pick (or its gradient, ``backward``) over data seen as ``(outer, axis, inner)``."""

    outer: int
    axis: int
    inner: int
    dtype: str
    index_dtype: str
    mode: str
    backward: bool

    @property
    def work(self):
        """Threads with work: the output's elements (forward) or the data's (backward)."""
        picked = self.outer * self.inner
        return picked * self.axis if self.backward else picked


def _bound(mode, n):
    if mode == "wrap":
        return f"k = ((k % {n}) + {n}) % {n};"
    return f"k = k < 0 ? 0 : (k >= {n} ? {n} - 1 : k);"


def generate_pick(spec, name):
    """The Kernel of ``spec``, called ``name``."""
    if spec.mode not in ("clip", "wrap"):
        raise ValueError(f"pick kernels bound indices by clip or wrap, not {spec.mode!r}")
    t, ti = STORAGE[spec.dtype], STORAGE[spec.index_dtype]
    first, second = ("grad", "ograd") if spec.backward else ("out", "data")
    params = [f"{t}* __restrict__ {first}", f"const {t}* __restrict__ {second}",
              f"const {ti}* __restrict__ index"]
    n, inner = spec.axis, spec.inner
    src = CudaSource()
    with src.block(kernel_head(name, params, BLOCK)), src.block(
            f"for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
            f"e < {spec.work}LL; e += (long long)gridDim.x * blockDim.x)"):
        if spec.backward:
            src.line(f"const long long a = e / {n * inner}LL, b = e % {inner}LL;")
            src.line(f"const long long o = a * {inner}LL + b;")
            src.line("long long k = (long long)index[o];")
            src.line(_bound(spec.mode, n))
            src.line(f"grad[e] = (e / {inner}LL) % {n}LL == k ? ograd[o] : "
                     f"{store(spec.dtype, '0.0f')};")
        else:
            src.line(f"const long long a = e / {inner}LL, b = e % {inner}LL;")
            src.line("long long k = (long long)index[e];")
            src.line(_bound(spec.mode, n))
            src.line(f"out[e] = data[(a * {n}LL + k) * {inner}LL + b];")
    return Kernel(name, src.text(), param_kinds(params), spec.work, False)
