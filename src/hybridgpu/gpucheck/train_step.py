"""The ``train_step`` gpucheck target: one training step of the seed MLP (Dense 256 relu,
Dense 128 relu, Dense 2) at batch 1 (softmax cross-entropy, SGD momentum 0.9, lr 1e-3), timed
three ways:

* ``imperative``: the Gluon loop as written (``autograd.record()``, ``backward()``,
  ``trainer.step(1)``) on a net that is not hybridized;
* ``hybridized``: the same loop on the hybridized net;
* ``captured``: ``gluon.TrainStep`` on the hybridized net (on gpu one CUDA graph replayed a
  step; on cpu its mode is ``compiled``). The row records ``step_mode`` and ``step_reason``.

Each mode trains its own net built from the same initial weights, 3 steps on the same batch
first; the weights after those steps must agree across the modes (rtol 1e-4, atol 1e-6) so no
number comes from a wrong result. Reported as imperative / captured (target: >= 5x).

Example:
    >>> import hybridgpu as mx
    >>> row = train_step(mx.cpu(), True, {"repeat": 2, "warmup": 1, "min_seconds": 0.001},
    ...                  None)
    >>> row["step_mode"], row["captured"]["median_us"] > 0
    ('compiled', True)
"""

from __future__ import annotations

import numpy as np

from .. import gluon, nd
from ..bench import loop_step, seed_mlp
from ..timing import time_calls

__all__ = ["train_step", "MODES", "CHECK_STEPS"]

#: The ways a step is timed, in the row's order.
MODES = ("imperative", "hybridized", "captured")
#: Steps each mode runs on the same batch before its weights are compared (and timed).
CHECK_STEPS = 3


def _batch(ctx):
    rng = np.random.RandomState(0)
    x = nd.array(rng.randn(1, 512).astype(np.float32), ctx=ctx)
    y = nd.array(rng.randint(0, 2, size=1).astype(np.float32), ctx=ctx)
    return x, y


def _net_like(reference, ctx, x):
    """A fresh seed MLP on ``ctx`` holding copies of ``reference``'s weights."""
    net = seed_mlp()
    net.initialize(ctx=ctx)
    net(x)  # finishes the deferred initialization
    mine, theirs = list(net.collect_params().values()), list(reference.collect_params().values())
    for param, ref in zip(mine, theirs, strict=True):
        param.set_data(ref.data(ctx).copy())
    return net


def _step_fn(mode, net, loss_fn, trainer):
    """One training step of ``mode`` as a function of ``(x, y)``, and the TrainStep (or
    None)."""
    if mode == "captured":
        net.hybridize()
        step = gluon.TrainStep(net, loss_fn, trainer)
        return step, step
    if mode == "hybridized":
        net.hybridize()
    return loop_step(net, loss_fn, trainer), None


def _weights(net):
    return [p.data().asnumpy() for p in net.collect_params().values()]


def _check_agree(initial, after):
    """Raise when a mode's weights after the check steps differ from imperative's, or when
    imperative's did not move from ``initial`` (then agreeing would prove nothing)."""
    want = after["imperative"]
    if all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(want, initial)):
        raise AssertionError(f"train_step: {CHECK_STEPS} imperative steps left the weights "
                             "unchanged; nothing to compare, timings skipped")
    for mode in MODES[1:]:
        for k, (got, ref) in enumerate(zip(after[mode], want)):
            if not np.allclose(got, ref, rtol=1e-4, atol=1e-6):
                err = float(np.max(np.abs(got - ref)))
                raise AssertionError(
                    f"train_step: {mode} weights (parameter {k}) differ from imperative's "
                    f"after {CHECK_STEPS} steps (max abs error {err:.3g}); timings skipped")


def train_step(ctx, quick, opts, torch):
    """The target's row: ``imperative``, ``hybridized`` and ``captured`` timings of one step
    (``quick`` only shrinks the repeats, through ``opts``; ``torch`` is unused)."""
    x, y = _batch(ctx)
    reference = seed_mlp()
    reference.initialize(ctx=ctx)
    reference(x)
    initial = _weights(reference)
    row = {"name": "train_step", "shape": [1, 512], "check_steps": CHECK_STEPS}
    steps, after = {}, {}
    for mode in MODES:
        net = _net_like(reference, ctx, x)
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 1e-3, "momentum": 0.9})
        steps[mode], step = _step_fn(mode, net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer)
        for _ in range(CHECK_STEPS):
            steps[mode](x, y)
        after[mode] = _weights(net)
        if step is not None:
            row["step_mode"], row["step_reason"] = step.mode, step.reason
    if ctx.is_gpu and row["step_mode"] != "captured":
        raise AssertionError(f"train_step: TrainStep ran {row['step_mode']!r} on {ctx}, not "
                             f"'captured' ({row['step_reason']})")
    _check_agree(initial, after)
    for mode in MODES:
        row[mode] = time_calls(lambda f=steps[mode]: f(x, y), ctx.xp, **opts)
    if steps["captured"].mode != row["step_mode"]:
        raise AssertionError(f"train_step: TrainStep ran {steps['captured'].mode!r} while "
                             f"timed, {row['step_mode']!r} before ({steps['captured'].reason})")
    return row
