"""The virtual GPU's ordering modes: how far it departs from running everything in issue order.

``HYBRIDGPU_VGPU_ORDER`` holds a comma-separated list of modes (read when the virtual GPU
starts; ``configure()`` changes them in a running process):

- ``async``: work on a stream is queued and runs only when the host waits for it (a stream,
  event or device synchronize, a host read or host computation on that stream) or another
  stream waits on an event recorded after it; queues are drained newest stream first, so a
  missing ``wait_event`` reads stale data.
- ``reverse``: the blocks of a launch, and the threads of a block, run last to first.
- ``shuffle``: they run in a pseudo-random order (seed ``HYBRIDGPU_VGPU_SEED``, default 0).
- ``poison``: shared memory holds 0xff bytes (NaN) at the start of every block.
- ``gc``: the garbage collector runs when a capture begins and when it ends, so a finalizer
  that synchronises (cuBLAS handle destruction...) fails the capture every time, not by chance.
- ``strict``: all of ``async,reverse,poison,gc``.

Without the variable the virtual GPU runs synchronously, in order (the cheap default). Launch
checks (argument types, limits, ``__launch_bounds__``, shared memory), warp-scoped shuffles
and the check that a block's threads meet at the same ``__syncthreads`` are always on.

Example:
    >>> configure("reverse,poison")
    >>> sorted(active()), launch_flags()
    (['poison', 'reverse'], 5)
    >>> configure("")
"""

from __future__ import annotations

import os

__all__ = ["MODES", "configure", "active", "enabled", "launch_flags", "seed"]

MODES = ("async", "reverse", "shuffle", "poison", "gc")
_SHORTHANDS = {"strict": ("async", "reverse", "poison", "gc")}
_FLAGS = {"reverse": 1, "shuffle": 2, "poison": 4}  # cuda_shim.h's kReverse, kShuffle, kPoison
_state = {"modes": frozenset(), "seed": 0, "started": False}


def _parse(text, where):
    found = set()
    for word in (w.strip().lower() for w in text.split(",")):
        if not word:
            continue
        if word in _SHORTHANDS:
            found.update(_SHORTHANDS[word])
        elif word in MODES:
            found.add(word)
        else:
            raise ValueError(f"{where}: unknown virtual GPU mode {word!r} (modes: "
                             f"{', '.join(MODES)}, or {', '.join(_SHORTHANDS)})")
    if {"reverse", "shuffle"} <= found:
        raise ValueError(f"{where}: 'reverse' and 'shuffle' are two orders; choose one")
    return frozenset(found)


def configure(text=None, seed=None):
    """Set the modes from ``text`` (``None``: from ``HYBRIDGPU_VGPU_ORDER``) and the shuffle
    seed (``None``: from ``HYBRIDGPU_VGPU_SEED``)."""
    where = "HYBRIDGPU_VGPU_ORDER" if text is None else "vgpu modes"
    text = os.environ.get("HYBRIDGPU_VGPU_ORDER", "") if text is None else text
    modes = _parse(text, where)
    if seed is None:
        raw = os.environ.get("HYBRIDGPU_VGPU_SEED", "0")
        try:
            seed = int(raw)
        except ValueError:
            raise ValueError(f"HYBRIDGPU_VGPU_SEED must be an integer, got {raw!r}") from None
    if _state["started"] and "async" in _state["modes"] ^ modes:
        from . import streams

        streams.drain_all()  # work queued under the old mode runs before the switch
    _state.update(modes=modes, seed=int(seed) & (2**63 - 1), started=True)


def active():
    """The modes on now (a frozenset of names)."""
    return _state["modes"]


def enabled(mode):
    """True when ``mode`` is on."""
    return mode in _state["modes"]


def launch_flags():
    """The order flags a kernel launch passes to the shim (cfg[8])."""
    return sum(bit for name, bit in _FLAGS.items() if name in _state["modes"])


def seed():
    """The seed of the shuffled order (cfg[9])."""
    return _state["seed"]


configure()
