"""Fused optimizer updates on gpu: every weight of one ``Optimizer.step_arrays`` call that a
built-in rule updates goes through one generated kernel launch per (family, dtype, device).

``fused_step(optimizer, jobs, lrs, wds, counts)`` groups the jobs it can fuse (gpu, float32 or
float64, contiguous weight, gradient and states of one dtype and size, a built-in ``_step``
that no subclass overrode), launches ``compiler/codegen/cuda/multi_update``'s kernel once per
group, and returns the positions of the jobs it left to the per-parameter path (the reference,
still used for cpu, float16 without ``multi_precision``, custom rules and ``Signum``,
``AdamW``, ``AdaDelta``, ``FTML``).

Per-tensor learning rates and weight decays (``lr_mult``/``wd_mult``, and Adam's bias
correction from each weight's own update count) go to the device as a small ``(tensors, 2)``
array; the pointer table as a ``(tensors, slots)`` uint64 array. Both are cached on the
device by content, so a step whose pointers and rates repeat uploads nothing. Scalars are
rounded exactly as the per-parameter path rounds them (``op_scalars``: float32 first, as
MXNet's update ops take float32 parameters; AdaGrad in the weight's own dtype).

Kernels are compiled once per (device, family, dtype) through ``xp.RawModule`` (CuPy, or the
virtual GPU). ``launch_counts()`` counts launches by (family, dtype). Turn fusion off with
``optimizer.fused_updates = False`` or ``HYBRIDGPU_FUSED_OPTIMIZER=0``.

Example:
    >>> import hybridgpu as mx
    >>> opt = mx.optimizer.create("sgd", momentum=0.9)
    >>> family_of(opt, 1), family_of(mx.optimizer.create("sgd"), 0)
    ('sgd_mom', 'sgd')
    >>> family_of(mx.optimizer.create("signum"), 1) is None  # per-parameter path
    True
"""

from __future__ import annotations

import collections
import math
import os
import threading

import numpy as np

from ..compiler.codegen.cuda import multi_update
from .adaptive import AdaGrad, Adam, RMSProp
from .optimizer import Optimizer, op_scalars
from .sgd import NAG, SGD

__all__ = ["fused_step", "family_of", "launch_counts", "reset_launch_counts", "enabled",
           "CapturedUpdate"]

_LAUNCHES = collections.Counter()
_KERNELS = {}
_UPLOADS = {}
_UPLOAD_CACHE_SIZE = 32
_lock = threading.Lock()


def enabled(optimizer):
    """Whether ``optimizer`` may fuse: its ``fused_updates`` and ``HYBRIDGPU_FUSED_OPTIMIZER``
    (``0`` turns fusion off everywhere)."""
    return (getattr(optimizer, "fused_updates", True)
            and os.environ.get("HYBRIDGPU_FUSED_OPTIMIZER", "1") != "0")


def launch_counts():
    """Fused kernel launches made from Python so far, by ``(family, dtype)`` (a copy; the
    replays of a captured ``CapturedUpdate`` are not counted)."""
    with _lock:
        return dict(_LAUNCHES)


def reset_launch_counts():
    """Forget the counts ``launch_counts`` reports."""
    with _lock:
        _LAUNCHES.clear()


def family_of(optimizer, states):
    """The fused family updating a weight with ``states`` state arrays under ``optimizer``,
    or None when only the per-parameter path can (a custom rule, an unfused optimizer)."""
    kind = type(optimizer)
    if kind._rescaled is not Optimizer._rescaled:
        return None
    step = kind._step
    if step is SGD._step or step is NAG._step:
        base = "sgd" if step is SGD._step else "nag"
        return base + "_mom" if states and optimizer.momentum > 0 else base
    if step is Adam._step:
        return "adam"
    if step is RMSProp._step:
        return "rmsprop_centered" if optimizer.centered else "rmsprop"
    if step is AdaGrad._step:
        bound = optimizer.clip_gradient
        return "adagrad" if bound is None or bound >= 0 else None
    return None


def _state_arrays(state):
    if state is None:
        return []
    return list(state) if isinstance(state, tuple) else [state]


#: The dtypes the kernels take, by np.dtype (a dict lookup: ``str(dtype)`` costs microseconds).
_KERNEL_DTYPES = {np.dtype(name): name for name in multi_update.DTYPES}


def _fusable(job, states):
    """The kernel dtype of ``job`` when it can be fused with ``states``, else None: the
    weight's, or ``MULTI_PRECISION`` for a float32 master with a float16 gradient and a
    float16 weight to write (``low_precision``, as ``gluon.TrainStep`` passes them; the
    per-parameter path casts the gradient first and so stays on the float32 kernel)."""
    w, low = job.weight, job.low_precision
    dtype = _KERNEL_DTYPES.get(w.dtype)
    if dtype is None or not job.ctx.is_gpu:
        return None
    grad_dtype = w.dtype
    if low is not None and job.grad is not None and job.grad.dtype == np.float16:
        if w.dtype != np.float32 or low.dtype != np.float16:
            return None
        dtype, grad_dtype = multi_update.MULTI_PRECISION, np.dtype(np.float16)
    arrays = [(w, w.dtype), (job.grad, grad_dtype), *((a, w.dtype) for a in states)]
    if dtype == multi_update.MULTI_PRECISION:
        arrays.append((low, low.dtype))
    for a, want in arrays:
        if a is None or a.dtype != want or a.size != w.size or not a.flags.c_contiguous:
            return None
    return dtype


def _math_dtype(dtype):
    """The dtype a kernel computes (and rounds its scalars) in."""
    return "float32" if dtype == multi_update.MULTI_PRECISION else dtype


def _header(optimizer, family, dtype):
    """``(has_clip, [rescale, clip, h0..h3])`` rounded as the per-parameter path rounds them."""
    op, native = op_scalars(dtype), np.dtype(dtype).type
    bound = optimizer.clip_gradient
    if family == "adagrad":
        rescale, has_clip = native(optimizer.rescale_grad), bound is not None
        hypers = [native(optimizer.float_stable_eps)]
    else:
        rescale, has_clip = op(optimizer.rescale_grad), bool(bound and bound >= 0)
        if family.startswith(("sgd", "nag")):
            hypers = [op(optimizer.momentum)] if family.endswith("_mom") else []
        elif family == "adam":
            hypers = [op(optimizer.beta1), op(optimizer.beta2), op(optimizer.epsilon)]
        else:
            cw = optimizer.clip_weights
            hypers = [op(optimizer.gamma1), op(optimizer.gamma2), op(optimizer.epsilon),
                      native(cw) if cw and cw >= 0 else native(-1)]
    hypers += [native(0)] * (multi_update.HYPERS - len(hypers))
    return np.int32(has_clip), [rescale, native(bound if has_clip else 0), *hypers]


def _rates(optimizer, family, dtype, rates, counts):
    """The ``(tensors, 2)`` learning rates and weight decays, rounded as ``op_scalars``
    rounds them (through float32; AdaGrad straight to the weight's dtype)."""
    if family == "adam":
        b1, b2 = optimizer.beta1, optimizer.beta2
        rates = [(lr * (math.sqrt(1.0 - b2 ** t) / (1.0 - b1 ** t)), wd)
                 for (lr, wd), t in zip(rates, counts)]
    if family == "adagrad":
        return np.array(rates, dtype)
    return np.array(rates, np.float32).astype(dtype)


def _scalars(optimizer, family, dtype, rates, counts):
    """``(has_clip, scalars)``: the kernel's int flag and its device scalars on the host,
    the header then each tensor's rate and decay (``multi_update.HEADER``)."""
    has_clip, header = _header(optimizer, family, dtype)
    table = _rates(optimizer, family, dtype, rates, counts).reshape(-1)
    return has_clip, np.concatenate([np.array(header, dtype), table])


def _table(members, mixed=False):
    """The kernel's pointer table of ``members`` (``(job, states, ...)`` each); ``mixed``:
    the float16 weight's pointer after the states (``MULTI_PRECISION``)."""
    return np.array([(job.weight.data.ptr, job.grad.data.ptr, *(a.data.ptr for a in states),
                      *((job.low_precision.data.ptr,) if mixed else ()), job.weight.size)
                     for job, states, *_ in members], np.uint64)


def _group(optimizer, jobs):
    """``(groups, rest)``: the positions of the jobs one launch each can update, by
    ``(ctx, family, dtype)`` with their state arrays, and the positions of the others."""
    groups, rest, families = {}, [], {}
    for n, job in enumerate(jobs):
        states = _state_arrays(job.state)
        if len(states) not in families:
            families[len(states)] = family_of(optimizer, len(states))
        family = families[len(states)]
        dtype = None if family is None else _fusable(job, states)
        wanted = 0 if family is None else multi_update.FAMILIES[family].states
        if dtype is None or len(states) < wanted:
            rest.append(n)
        elif job.weight.size:
            groups.setdefault((job.ctx, family, dtype), []).append((n, states[:wanted]))
    return groups, rest


def fused_step(optimizer, jobs, lrs, wds, counts):
    """Update the jobs that can be fused, one launch per (device, family, dtype); returns
    the positions of the others, for the per-parameter path."""
    if not enabled(optimizer):
        return list(range(len(jobs)))
    groups, rest = _group(optimizer, jobs)
    for (ctx, family, dtype), members in groups.items():
        with ctx.scope():
            _launch(optimizer, ctx, family, dtype, [
                (jobs[n], states, lrs[n], wds[n], counts[n]) for n, states in members])
    return rest


def _launch(optimizer, ctx, family, dtype, members):
    """One launch of ``family``'s kernel over ``members``: ``(job, states, lr, wd, count)``."""
    kernel = multi_update.generate(family, dtype)
    has_clip, scalars = _scalars(optimizer, family, _math_dtype(dtype),
                                 [(lr, wd) for *_, lr, wd, _ in members],
                                 [t for *_, t in members])
    grid, block = multi_update.launch_grid([job.weight.size for job, *_ in members])
    function = _function(ctx, kernel)
    mixed = dtype == multi_update.MULTI_PRECISION
    function(grid, block, (_upload(ctx, _table(members, mixed)), _upload(ctx, scalars),
                           np.int32(len(members)), has_clip))
    with _lock:
        _LAUNCHES[(family, dtype)] += 1


def _function(ctx, kernel):
    key = (ctx, kernel.name)
    with _lock:
        function = _KERNELS.get(key)
    if function is None:
        module = ctx.xp.RawModule(code=kernel.source, options=multi_update.OPTIONS)
        function = module.get_function(kernel.name)
        with _lock:
            _KERNELS[key] = function
    return function


def _upload(ctx, host):
    """``host`` on ``ctx``'s device, reusing a device copy of the same bytes."""
    key = (ctx, host.dtype.str, host.shape, host.tobytes())
    with _lock:
        device = _UPLOADS.pop(key, None)
        if device is not None:
            _UPLOADS[key] = device  # most recent last
            return device
    device = ctx.xp.asarray(host)
    with _lock:
        _UPLOADS[key] = device
        while len(_UPLOADS) > _UPLOAD_CACHE_SIZE:
            _UPLOADS.pop(next(iter(_UPLOADS)))
    return device


class CapturedUpdate:
    """The fused update of one fixed set of weights, written to be captured into a CUDA graph
    (``gluon.TrainStep``): the pointer tables are uploaded once, and each group's scalars
    (``1 / batch_size`` as ``rescale``, clip, hyperparameters, every tensor's learning rate,
    weight decay and Adam bias correction) live in one device buffer: ``prepare`` computes
    them on the host, ``write`` copies them, uncaptured, before every replay, and ``launch``
    is what the graph holds (the epilogue of ``GpuExecutable.run_into``).

    ``CapturedUpdate.plan(optimizer, jobs)`` returns None, and why, when some job cannot be
    fused; ``key`` changes whenever the launches would (pointers,
    families, whether the gradient is clipped), and the caller recaptures then.

    Example (the kernels need CuPy or the virtual GPU; here only the planning):
        >>> import hybridgpu as mx
        >>> import numpy as np
        >>> from hybridgpu.optimizer.optimizer import UpdateJob
        >>> jobs = [UpdateJob(mx.cpu(), np.ones(2, np.float32), np.ones(2, np.float32), None)]
        >>> CapturedUpdate.plan(mx.optimizer.create("sgd"), jobs)
        (None, 'weight 0 cannot go through a fused gpu kernel (cpu(0), float32)')
    """

    @classmethod
    def plan(cls, optimizer, jobs):
        """``(update, reason)``: the captured update of ``jobs`` (``UpdateJob`` each, in the
        order of the rates ``prepare`` will get) and '', or None and why it cannot be."""
        if not enabled(optimizer):
            return None, ("fused optimizer updates are off (fused_updates or "
                          "HYBRIDGPU_FUSED_OPTIMIZER=0)")
        groups, rest = _group(optimizer, jobs)
        if rest:
            job = jobs[rest[0]]
            rule = family_of(optimizer, len(_state_arrays(job.state)))
            why = f"{type(optimizer).__name__} has no fused kernel" if rule is None else \
                f"{job.ctx}, {job.weight.dtype}"
            return None, f"weight {rest[0]} cannot go through a fused gpu kernel ({why})"
        return cls(optimizer, jobs, groups), ""

    def __init__(self, optimizer, jobs, groups):
        self.optimizer = optimizer
        self.groups = []
        for (ctx, family, dtype), members in groups.items():
            rows = [(jobs[n], states) for n, states in members]
            table = _table(rows, dtype == multi_update.MULTI_PRECISION)
            has_clip, _ = _header(optimizer, family, _math_dtype(dtype))
            with ctx.scope():
                device_table = ctx.xp.asarray(table)
                buffer = ctx.xp.zeros(multi_update.HEADER + 2 * len(rows), _math_dtype(dtype))
            grid, block = multi_update.launch_grid([job.weight.size for job, _ in rows])
            self.groups.append(_CapturedGroup(ctx, family, dtype, [n for n, _ in members],
                                              table, device_table, buffer, grid, block,
                                              has_clip))
        self.key = self.signature(optimizer) + tuple(
            (g.family, g.dtype, g.table.tobytes()) for g in self.groups)

    @staticmethod
    def signature(optimizer):
        """What of ``optimizer`` decides the kernels and their int flag: its class, whether
        momentum is used, centered RMSProp, and whether the gradient is clipped."""
        bound = optimizer.clip_gradient
        return (type(optimizer), bool(getattr(optimizer, "momentum", 0) > 0),
                bool(getattr(optimizer, "centered", False)), bound is not None,
                bool(bound and bound >= 0))

    def prepare(self, lrs, wds, counts):
        """Compute this step's scalars on the host (``lrs``, ``wds``, ``counts`` by job
        position) for the next ``write``."""
        for group in self.groups:
            _, group.host = _scalars(self.optimizer, group.family, _math_dtype(group.dtype),
                                     [(lrs[n], wds[n]) for n in group.positions],
                                     [counts[n] for n in group.positions])

    def write(self, stream):
        """Copy the prepared scalars into the device buffers, ordered on ``stream`` before
        the graph that reads them (uncaptured: the host buffer is read when this returns)."""
        for group in self.groups:
            if group.host is None:
                raise RuntimeError("CapturedUpdate.write before prepare")
            group.buffer.set(group.host, stream=stream)

    def launch(self):
        """Launch every group's kernel on the current stream (captured by the caller)."""
        for group in self.groups:
            function = _function(group.ctx, multi_update.generate(group.family, group.dtype))
            function(group.grid, group.block, (group.device_table, group.buffer,
                                               np.int32(len(group.positions)), group.has_clip))
            with _lock:
                _LAUNCHES[(group.family, group.dtype)] += 1


class _CapturedGroup:
    """One (device, family, dtype) launch of a ``CapturedUpdate``."""

    def __init__(self, ctx, family, dtype, positions, table, device_table, buffer, grid, block,
                 has_clip):
        self.ctx, self.family, self.dtype, self.positions = ctx, family, dtype, positions
        self.table, self.device_table, self.buffer = table, device_table, buffer
        self.grid, self.block, self.has_clip = grid, block, has_clip
        self.host = None  # this step's scalars, from prepare
