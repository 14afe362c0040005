"""The table-driven op test harness: an ``OpCase`` per (op, attributes, inputs), and the checks
run on every case (NumPy reference, shape and dtype inference, finite-difference gradient,
cupy vs numpy).

Case tables live in ``tests/op_cases/<family>.py`` as a module-level ``CASES`` list.

Example:
    >>> case = OpCase("relu", shapes=[(2, 3)], ref=lambda x: np.maximum(x, 0))
    >>> [a.shape for a in case.make_inputs(np.float32)]
    [(2, 3)]
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.ndarray.imperative import invoke


@dataclass
class OpCase:
    """One test case of one op.

    op:        registry name (an alias works too)
    shapes:    shapes of random float inputs, drawn uniformly from ``domain``
    make:      instead of ``shapes``: ``make(rng, dtype) -> [np.ndarray]`` for special inputs
               (integer indices, positive-definite data, ...)
    attrs:     attributes, as a user would pass them
    ref:       NumPy reference ``ref(*inputs, **attrs) -> array or tuple`` of the visible
               outputs; ``None`` skips the value check (random ops)
    grad:      check the gradient against finite differences (float64)
    grad_inputs: which inputs to perturb (default: every float input not in op.nondiff_inputs)
    dtypes:    dtypes the forward check runs in
    is_train:  train mode for mode-dependent ops
    rtol, atol: float32 tolerances of the forward check (float64 uses 1e-10 / 1e-12 scaled)
    id:        test id suffix
    """

    op: str
    shapes: list = field(default_factory=list)
    make: Callable | None = None
    attrs: dict = field(default_factory=dict)
    ref: Callable | None = None
    grad: bool = True
    grad_inputs: tuple | None = None
    dtypes: tuple = ("float32", "float64")
    domain: tuple = (-2.0, 2.0)
    is_train: bool = False
    rtol: float = 1e-5
    atol: float = 1e-6
    id: str = ""
    seed: int = 0

    @property
    def opdef(self):
        return ops.get(self.op)

    @property
    def name(self):
        return f"{self.op}-{self.id}" if self.id else self.op

    def make_inputs(self, dtype):
        rng = np.random.RandomState(self.seed)
        if self.make is not None:
            return [np.asarray(a) for a in self.make(rng, np.dtype(dtype))]
        low, high = self.domain
        return [rng.uniform(low, high, size=s).astype(dtype) for s in self.shapes]


def nd_function(name):
    """The ``nd`` function registered for op ``name`` (top level or a submodule)."""
    from hybridgpu.ndarray.register import namespace_of

    module, public = namespace_of(name)
    if name.startswith("_") and not module:
        return getattr(mx.nd._internal, name)
    return getattr(getattr(mx.nd, module) if module else mx.nd, public)


def run_all_outputs(case, arrays, ctx=None):
    """All outputs (hidden ones too) of the op on NDArrays made from ``arrays``."""
    op = case.opdef
    ctx = ctx or mx.cpu()
    attrs = op.parse_attrs(case.attrs, len(arrays) if op.variadic else None)
    inputs = [mx.nd.array(a, ctx=ctx, dtype=a.dtype) for a in arrays]
    mx.random.seed(case.seed)
    with mx.modes.training(case.is_train):
        result = _all_outputs(op, inputs, attrs, ctx)
    return attrs, inputs, result


def _all_outputs(op, inputs, attrs, ctx):
    shown = op._num_visible
    op._num_visible = None  # show every output for this call
    try:
        out = invoke(op, inputs, attrs, ctx=ctx)  # ctx places ops without inputs
    finally:
        op._num_visible = shown
    return out if isinstance(out, list) else [out]


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def check_forward(case, dtype):
    """nd.<op> on float inputs equals the NumPy reference; output dtype matches inference."""
    arrays = case.make_inputs(dtype)
    fn = nd_function(case.op)
    inputs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    mx.random.seed(case.seed)
    with mx.modes.training(case.is_train):
        got = as_tuple(fn(*inputs, **case.attrs))
    attrs = case.opdef.parse_attrs(case.attrs, len(arrays) if case.opdef.variadic else None)
    _, out_types = case.opdef.infer_type(attrs, [a.dtype.name for a in arrays])
    for g, t in zip(got, out_types):
        assert np.dtype(g.dtype).name == t, f"{case.name}: dtype {g.dtype} vs inferred {t}"
    if case.ref is None:
        return
    want = as_tuple(case.ref(*arrays, **case.attrs))
    assert len(got) == len(want), f"{case.name}: {len(got)} outputs, reference {len(want)}"
    tight = np.dtype(dtype) == np.float64
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.shape == w.shape, f"{case.name} output {i}: shape {g.shape} vs ref {w.shape}"
        np.testing.assert_allclose(
            g.asnumpy().astype(np.float64), w.astype(np.float64),
            rtol=1e-10 if tight else case.rtol, atol=1e-12 if tight else case.atol,
            err_msg=f"{case.name} output {i} ({dtype}); inputs: {arrays}")


def check_infer_shape(case):
    """Inferred output shapes equal computed ones, for every output."""
    arrays = case.make_inputs(case.dtypes[0])
    attrs, _, outs = run_all_outputs(case, arrays)
    _, out_shapes = case.opdef.infer_shape(attrs, [a.shape for a in arrays])
    assert [tuple(s) for s in out_shapes] == [o.shape for o in outs], (
        f"{case.name}: inferred {out_shapes}, computed {[o.shape for o in outs]}")


def _objective(case, arrays, gouts):
    _, _, outs = run_all_outputs(case, arrays)
    return sum(float((o.asnumpy() * g).sum()) for o, g in zip(outs, gouts))


def check_grad(case, eps=1e-6, rtol=1e-4, atol=1e-7):
    """The op's gradient (written as ops) against central finite differences in a random
    direction, in float64."""
    op = case.opdef
    arrays = case.make_inputs(np.float64)
    attrs, inputs, outs = run_all_outputs(case, arrays)
    rng = np.random.RandomState(case.seed + 1)
    visible = op.num_visible_outputs(attrs)
    gouts = [rng.standard_normal(o.shape) if i < visible else np.zeros(o.shape)
             for i, o in enumerate(outs)]
    names = op.input_names(attrs)
    check = case.grad_inputs if case.grad_inputs is not None else [
        i for i, (n, a) in enumerate(zip(names, arrays))
        if n not in op.nondiff_inputs and n not in op.aux and a.dtype.kind == "f"]
    with mx.modes.training(case.is_train):
        grads = op.grad(mx.nd, inputs, outs, [mx.nd.array(g, dtype="float64") for g in gouts],
                        **attrs)
    assert len(grads) == len(arrays), f"{case.name}: {len(grads)} gradients for {len(arrays)}"
    directions = {i: rng.standard_normal(arrays[i].shape) for i in check}
    analytic = 0.0
    for i in check:
        assert grads[i] is not None, f"{case.name}: no gradient for input {names[i]}"
        assert grads[i].shape == arrays[i].shape, (
            f"{case.name}: gradient of {names[i]} has shape {grads[i].shape}, "
            f"input {arrays[i].shape}")
        analytic += float((grads[i].asnumpy() * directions[i]).sum())

    def shifted(t):
        moved = [a + t * directions[i] if i in directions else a for i, a in enumerate(arrays)]
        return _objective(case, moved, gouts)

    numeric = (shifted(eps) - shifted(-eps)) / (2 * eps)
    assert abs(analytic - numeric) <= atol + rtol * max(abs(numeric), abs(analytic)), (
        f"{case.name}: directional derivative {analytic!r} (gradient ops) vs "
        f"{numeric!r} (finite differences)")


def check_gpu_matches_cpu(case):
    """The op on gpu(0) (CuPy) gives the cpu (NumPy) results (rtol 1e-4)."""
    arrays = case.make_inputs(case.dtypes[0])
    _, _, cpu_outs = run_all_outputs(case, arrays, mx.cpu())
    _, _, gpu_outs = run_all_outputs(case, arrays, mx.gpu(0))
    for c, g in zip(cpu_outs, gpu_outs):
        assert g.context == mx.gpu(0)
        # CuPy promotes dtypes like NumPy 1; a different dtype is a bug here
        assert g.dtype == c.dtype, f"{case.name}: gpu dtype {g.dtype} vs cpu {c.dtype}"
        if case.opdef.random:
            assert c.shape == g.shape
            continue
        np.testing.assert_allclose(g.asnumpy(), c.asnumpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=case.name)


def collect_cases():
    """Every ``CASES`` entry of every module in ``tests/op_cases``."""
    import op_cases

    cases = []
    for info in pkgutil.iter_modules(op_cases.__path__):
        module = importlib.import_module(f"op_cases.{info.name}")
        cases.extend(getattr(module, "CASES", []))
    return cases


def untested_ops():
    """``{op name: reason}`` of ops tested outside the table (random ops, ...)."""
    import op_cases

    reasons = {}
    for info in pkgutil.iter_modules(op_cases.__path__):
        module = importlib.import_module(f"op_cases.{info.name}")
        reasons.update(getattr(module, "TESTED_ELSEWHERE", {}))
    return reasons
