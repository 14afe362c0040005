"""The GPU targets of the CUDA backend, each measured side by side in one run.

* ``mlp``: the seed MLP (Dense 256 relu, Dense 128 relu, Dense 2) at batch 1: hybridgpu
  imperative and hybridized per ``net(x)`` call, PyTorch eager and PyTorch CUDA-graph replay,
  and the floor of any call from Python (one device copy + one graph launch + one allocation).
  Targets: hybridized <= PyTorch replay, >= 5x imperative, <= 20 us on an H100.
* ``chain8``: 8 elementwise ops on 2**24 float32: the whole hybridized call beside one
  device-to-device copy of the same array, and the fused kernel alone when the executable can
  time its steps. Target: kernel <= 1.25x the copy.
* ``resnet18``: resnet18_v1, batch 1, 224x224, TF32 off on both sides: hybridized vs PyTorch
  CUDA-graph replay. Target: <= 1.2x.
* ``fused_update``: one SGD-momentum update of resnet18_v1's parameters, fused (one launch)
  vs per-parameter (``gpucheck.fused_update``). Target: fused faster (< 1.0x).
* ``train_step``: one training step of the seed MLP at batch 1, the Gluon loop imperative and
  hybridized vs ``gluon.TrainStep`` (one CUDA graph a step; ``gpucheck.train_step``).
  Target: imperative >= 5x the captured step.
* ``float16``: resnet18_v1 at batch 32 hybridized after ``net.cast('float16')`` beside
  float32, and PyTorch's float16 peer (``gpucheck.half``). Reported, no target yet.

Every workload first checks hybridgpu's output against the cpu and PyTorch ones (rtol 1e-3
across devices) so no number comes from a wrong result. ``quick=True`` shrinks sizes and
repeats (the virtual GPU in CI runs it to keep this code tested; its times mean nothing).

Example:
    >>> import hybridgpu as mx
    >>> rows = run_targets(mx.cpu(), quick=True, only=["mlp"])
    >>> rows[0]["name"], rows[0]["hybridized"]["median_us"] > 0
    ('mlp', True)
"""

from __future__ import annotations

import numpy as np

from .. import gluon, nd
from ..bench import seed_mlp
from ..timing import time_calls
from .fused_update import fused_update
from .half import half
from .torch_peer import TorchPeer
from .train_step import train_step

__all__ = ["run_targets", "TARGETS", "Chain8"]


class Chain8(gluon.HybridBlock):
    """Eight elementwise ops, one array in and one out (the fusion target)."""

    def hybrid_forward(self, F, x):
        y = F.relu(x * 2.0 + 1.0 - 1.5)
        y = F.exp(y * -1.0) * 3.0
        return F.sqrt(y + x * x)


def _torch(ctx):
    """``torch`` when it can run on this device, else None (then peers are skipped)."""
    if not ctx.is_gpu or getattr(ctx.xp, "is_virtual", False):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def _check(name, got, want, rtol=1e-3, atol=1e-4):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise AssertionError(f"{name}: results differ (max abs error {err}); timings skipped")


def _peers(row, block, ctx, x, torch, opts, expected):
    if torch is None:
        row["torch"] = "not available on this device"
        return
    peer = TorchPeer(block, ctx, torch)
    tx = torch.as_tensor(x.asnumpy()).cuda()
    _check(f"{row['name']}: PyTorch peer", peer(tx).cpu().numpy(), expected)
    replay = peer.cuda_graph(tx)
    _check(f"{row['name']}: PyTorch CUDA graph", replay(tx).cpu().numpy(), expected)
    row["torch_eager"] = time_calls(lambda: peer(tx), ctx.xp, **opts)
    row["torch_cuda_graph"] = time_calls(lambda: replay(tx), ctx.xp, **opts)


def _call_floor(ctx, x, opts):
    """One D2D copy + one graph launch + one allocation, from Python: what any call costs."""
    xp = ctx.xp
    src = x.handle
    static_in, static_out = xp.empty_like(src), xp.empty_like(src)
    stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        xp.multiply(static_in, 1, out=static_out)
        graph = stream.end_capture()

        def call():
            xp.cuda.runtime.memcpyAsync(static_in.data.ptr, src.data.ptr, src.nbytes,
                                        xp.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
            graph.launch(stream)
            return static_out.copy()

        return time_calls(call, xp, **opts)


def _mlp(ctx, quick, opts, torch):
    net = seed_mlp()
    net.initialize(ctx=ctx)
    x = nd.array(np.random.RandomState(0).randn(1, 512).astype(np.float32), ctx=ctx)
    expected = net(x.as_in_context(_cpu())).asnumpy() if ctx.is_gpu else net(x).asnumpy()
    row = {"name": "mlp", "shape": [1, 512]}
    row["imperative"] = time_calls(lambda: net(x), ctx.xp, **opts)
    net.hybridize()
    _check("mlp: hybridized", net(x).asnumpy(), expected)
    row["hybridized"] = time_calls(lambda: net(x), ctx.xp, **opts)
    if ctx.is_gpu:
        row["call_floor"] = _call_floor(ctx, x, opts)
    _peers(row, net, ctx, x, torch, opts, expected)
    return row


def _chain8(ctx, quick, opts, torch):
    n = 1 << (12 if quick else 24)
    x = nd.array(np.random.RandomState(0).rand(n).astype(np.float32), ctx=ctx)
    net = Chain8()
    expected = net(x).asnumpy()
    net.hybridize()
    _check("chain8: hybridized", net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    row = {"name": "chain8", "elements": n}
    row["hybridized"] = time_calls(lambda: net(x), ctx.xp, **opts)
    src = x.handle
    dst = ctx.xp.empty_like(src)
    row["device_copy"] = time_calls(lambda: dst.__setitem__(Ellipsis, src), ctx.xp, **opts)
    kernels = getattr(_executable(net), "time_kernels", None)
    if kernels is not None:
        row["kernels"] = kernels(opts)
    _peers(row, net, ctx, x, torch, opts, expected)
    return row


def _resnet18(ctx, quick, opts, torch):
    from ..gluon.model_zoo import vision

    size = 32 if quick else 224
    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    x = nd.array(np.random.RandomState(0).rand(1, 3, size, size).astype(np.float32), ctx=ctx)
    expected = net(x).asnumpy()
    net.hybridize()
    _check("resnet18: hybridized", net(x).asnumpy(), expected)
    row = {"name": "resnet18", "shape": [1, 3, size, size]}
    row["hybridized"] = time_calls(lambda: net(x), ctx.xp, **opts)
    _peers(row, net, ctx, x, torch, opts, expected)
    return row


def _cpu():
    from ..context import cpu

    return cpu(0)


def _executable(block):
    trace = getattr(block, "_last_trace", None)
    return getattr(trace, "executable", None)


TARGETS = {"mlp": _mlp, "chain8": _chain8, "resnet18": _resnet18}
TARGETS["fused_update"] = fused_update
TARGETS["train_step"] = train_step
TARGETS["float16"] = half


def run_targets(ctx, quick=False, only=None, progress=None):
    """One result dict a target (see the module docstring); a failing check gives a row with
    ``error`` instead of times, so one broken workload does not hide the others."""
    opts = {"repeat": 3, "warmup": 1, "min_seconds": 0.005} if quick else {}
    torch = _torch(ctx)
    rows = []
    for name in only or TARGETS:
        if progress:
            progress(f"[gpucheck] {name} on {ctx}")
        try:
            rows.append(TARGETS[name](ctx, quick, opts, torch))
        except Exception as err:  # report it and go on: the JSON must still be written
            rows.append({"name": name, "error": f"{type(err).__name__}: {err}"})
    return rows
