"""Per-context random number generators behind ``mx.random.seed`` and the random ops.

cpu contexts use ``numpy.random.RandomState`` and gpu contexts ``cupy.random.RandomState``: the
same API on both, so an op's compute draws with ``rng.uniform(...)`` whatever the device.

Example:
    >>> from hybridgpu.context import cpu
    >>> seed(42); a = generator(cpu()).uniform(size=2)
    >>> seed(42); b = generator(cpu()).uniform(size=2)
    >>> bool((a == b).all())
    True
"""

from __future__ import annotations

import threading

import numpy as np

from .base import MXNetError

__all__ = ["generator", "seed"]

_lock = threading.Lock()
_generators: dict = {}
_base_seed = [None]  # None: fresh entropy


def _make(ctx, base):
    state = None if base is None else (base + 1000003 * ctx.device_id) % (2**32)
    if ctx.is_gpu:
        xp = ctx.xp
        with ctx.scope():
            return xp.random.RandomState(state)
    return np.random.RandomState(state)


def generator(ctx):
    """The RandomState of ``ctx`` (created on first use, from the last seed if any)."""
    gen = _generators.get(ctx)
    if gen is None:
        with _lock:
            gen = _generators.get(ctx)
            if gen is None:
                gen = _generators[ctx] = _make(ctx, _base_seed[0])
    return gen


def seed(seed_state, ctx="all"):
    """Seed the generators of every context (``ctx='all'``) or of one context.

    Each device gets its own stream derived from ``seed_state``, so runs are repeatable.
    """
    from .context import Context

    if not isinstance(seed_state, (int, np.integer)) or isinstance(seed_state, bool):
        raise MXNetError(f"seed_state must be an int, got {seed_state!r}")
    seed_state = int(seed_state) % (2**32)
    with _lock:
        if ctx == "all":
            _base_seed[0] = seed_state
            _generators.clear()
        else:
            ctx = Context(ctx)
            _generators[ctx] = _make(ctx, seed_state)
