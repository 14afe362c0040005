"""Flat-buffer optimizer updates on cpu, for small tensors only: where NumPy's per-call
overhead (a microsecond or two per operation, several operations a rule) costs more than the
update itself, the small weights of one step are gathered into one flat buffer, the rule runs
once over it with per-element learning rates and weight decays, and the results are copied
back.

Measured on the 2-core development machine (``benchmarks/ab_fused_cpu.py``): flat is 3-9x
faster over tensors of at most a few thousand elements (resnet18_v1's 81 such tensors: 525 us
per-parameter, 80 us flat) and 1.3-3.7x *slower* over whole models, whose large weights cost
more to gather and scatter than the overhead saved. So only tensors of at most ``SMALL``
elements go flat; the others keep the per-parameter rule.

The rule is the optimizer's own ``_step``, called with arrays where it takes scalars: every
rule is elementwise, so the flat result equals the per-parameter one bitwise. Only the
built-in families the gpu kernels fuse (``fused.family_of``) go flat, grouped by dtype, state
layout and update count (Adam's bias correction takes one count).

Example:
    >>> import hybridgpu as mx
    >>> opt = mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9)
    >>> weights = [mx.nd.ones(3), mx.nd.ones(2)]
    >>> states = [opt.create_state(k, w) for k, w in enumerate(weights)]
    >>> opt.update([0, 1], weights, [mx.nd.ones(3), mx.nd.ones(2)], states)
    >>> [round(x, 6) for w in weights for x in w.asnumpy().tolist()]
    [0.9, 0.9, 0.9, 0.9, 0.9]
"""

from __future__ import annotations

import numpy as np

from .fused import enabled, family_of

__all__ = ["flat_step", "SMALL"]

#: Tensors of at most this many elements are updated in a flat buffer on cpu.
SMALL = 2048


def _layout(state):
    """A key for the structure of ``state``: None, one array, or a tuple of n arrays."""
    if state is None:
        return None
    return len(state) if isinstance(state, tuple) else "array"


def _flat_candidate(optimizer, job):
    w, g = job.weight, job.grad
    if job.ctx.is_gpu or w.size > SMALL or w.dtype.kind != "f":
        return False
    arrays = [w, g, *(job.state if isinstance(job.state, tuple) else
                      ([] if job.state is None else [job.state]))]
    if not all(isinstance(a, np.ndarray) and a.dtype == w.dtype and a.size == w.size
               and a.flags.c_contiguous for a in arrays):
        return False
    states = len(arrays) - 2
    return family_of(optimizer, states) is not None


def flat_step(optimizer, jobs, lrs, wds, counts, positions):
    """Update the small cpu jobs among ``positions`` through flat buffers (groups of two or
    more); returns the positions left to the per-parameter path."""
    if not enabled(optimizer):
        return list(positions)
    groups, rest = {}, []
    for n in positions:
        job = jobs[n]
        if not _flat_candidate(optimizer, job):
            rest.append(n)
            continue
        key = (job.weight.dtype.str, _layout(job.state), counts[n])
        groups.setdefault(key, []).append(n)
    for (_, _, count), members in groups.items():
        if len(members) < 2:
            rest += members
            continue
        _run(optimizer, [jobs[n] for n in members], [lrs[n] for n in members],
             [wds[n] for n in members], count)
    return rest


def _gather(arrays):
    return np.concatenate([a.reshape(-1) for a in arrays])


def _run(optimizer, jobs, lrs, wds, count):
    sizes = [job.weight.size for job in jobs]
    weight, grad = _gather([j.weight for j in jobs]), _gather([j.grad for j in jobs])
    layout = _layout(jobs[0].state)
    if layout is None:
        state = None
    elif layout == "array":
        state = _gather([j.state for j in jobs])
    else:
        state = tuple(_gather([j.state[k] for j in jobs]) for k in range(layout))
    lr = np.repeat(np.asarray(lrs, np.float64), sizes)
    wd = np.repeat(np.asarray(wds, np.float64), sizes)
    optimizer._step(np, weight, grad, state, lr, wd, count)
    flat_states = [] if state is None else ([state] if layout == "array" else list(state))
    offset = 0
    for k, job in enumerate(jobs):
        end = offset + sizes[k]
        job.weight.reshape(-1)[...] = weight[offset:end]
        targets = [] if job.state is None else (
            [job.state] if layout == "array" else list(job.state))
        for target, flat in zip(targets, flat_states):
            target.reshape(-1)[...] = flat[offset:end]
        offset = end
