"""The ``float16`` gpucheck target: resnet18_v1 at batch 32 (224x224; 32x32 and batch 2 when
quick), hybridized, after ``net.cast('float16')`` beside the same net in float32 (TF32 off):
what tensor cores (``cublasGemmEx`` summing in float32) buy a user who casts. Also the
PyTorch peer in float16 where torch can run, built from the float32 net and cast with
``.half()``. BatchNorm stays float32 in both, as MXNet and PyTorch keep it.

The float16 output must agree with the float32 one within 3e-2 (relative to the largest
output) before anything is timed. Reported as float16 / float32 (no target yet: the first GPU
run sets the expectation in benchmarks/NOTES.md).

Example:
    >>> import hybridgpu as mx
    >>> row = half(mx.cpu(), True, {"repeat": 2, "warmup": 1, "min_seconds": 0.001}, None)
    >>> row["name"], row["float16"]["median_us"] > 0, row["max_relative_error"] < 3e-2
    ('float16', True, True)
"""

from __future__ import annotations

import numpy as np

from .. import nd
from ..timing import time_calls

__all__ = ["half", "TOLERANCE"]

#: Largest float16-vs-float32 difference allowed, relative to the largest float32 output.
TOLERANCE = 3e-2


def _nets(ctx, size, batch):
    from ..gluon.model_zoo import vision

    net32 = vision.resnet18_v1()
    net32.initialize(ctx=ctx)
    x = np.random.RandomState(0).rand(batch, 3, size, size).astype(np.float32)
    net32(nd.array(x, ctx=ctx))
    net16 = vision.resnet18_v1()
    net16.initialize(ctx=ctx)
    net16(nd.array(x, ctx=ctx))
    for mine, theirs in zip(net16.collect_params().values(), net32.collect_params().values()):
        mine.set_data(theirs.data(ctx).copy())
    net16.cast("float16")
    for net in (net32, net16):
        net.hybridize()
    return net32, net16, x


def half(ctx, quick, opts, torch):
    """The target's row: ``float32`` and ``float16`` timings of one hybridized call, the
    check's ``max_relative_error``, and the PyTorch float16 peer where torch runs."""
    size, batch = (32, 2) if quick else (224, 32)
    net32, net16, host = _nets(ctx, size, batch)
    x32 = nd.array(host, ctx=ctx)
    x16 = nd.array(host, ctx=ctx, dtype="float16")
    want = net32(x32).asnumpy()
    got = net16(x16).asnumpy().astype(np.float32)
    error = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
    if not error < TOLERANCE:
        raise AssertionError(f"float16: resnet18 in float16 differs from float32 by {error:.3g}"
                             f" of the largest output (allowed {TOLERANCE}); timings skipped")
    row = {"name": "float16", "shape": [batch, 3, size, size], "max_relative_error": error}
    row["float32"] = time_calls(lambda: net32(x32), ctx.xp, **opts)
    row["float16"] = time_calls(lambda: net16(x16), ctx.xp, **opts)
    if torch is not None:
        row["torch_float16"] = _torch_half(net32, ctx, host, torch, opts)
    return row


def _torch_half(net32, ctx, host, torch, opts):
    """PyTorch's float16 peer of ``net32`` (its own check against float32 first)."""
    from .torch_peer import TorchPeer

    peer = TorchPeer(net32, ctx, torch)
    tx = torch.as_tensor(host).cuda()
    want = peer(tx).float().cpu().numpy()
    peer.half()
    got = peer(tx.half()).float().cpu().numpy()
    if not np.max(np.abs(got - want)) <= TOLERANCE * max(float(np.max(np.abs(want))), 1e-30):
        return "PyTorch float16 peer disagrees with its float32 run; not timed"
    txh = tx.half()
    return time_calls(lambda: peer(txh), ctx.xp, **opts)
