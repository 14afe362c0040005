"""gpucheck's smoke stage: the real GPU path, one small proof each, in well under 2 minutes.

* ``gemm``: a hybridized ``dot`` whose program holds a cuBLAS GEMM step (the ctypes binding,
  not CuPy's matmul), checked against NumPy;
* ``fused_kernel``: a hybridized elementwise chain run as one generated kernel (NVRTC);
* ``capture_replay``: the same executable called again with new inputs: captured once as a
  CUDA graph, then replayed, each result checked;
* ``train_step``: one ``gluon.TrainStep`` step captured on the GPU, its weights checked
  against the same step on cpu;
* ``nccl_all_reduce``: an all-reduce across ``gpu(0)`` and ``gpu(1)`` (skipped with one GPU).

Each check prints ``pass``, ``FAIL`` with its error, or ``skip`` with the reason as soon as it
ends; ``run_smoke`` returns one dict a check (``name``, ``status``, ``seconds``, ``error``,
``traceback``).

Example (cpu: the checks that need no GPU still run; the others say why not):
    >>> import hybridgpu as mx
    >>> rows = run_smoke(mx.cpu(), only=["fused_kernel"], progress=lambda line: None)
    >>> rows[0]["name"], rows[0]["status"]
    ('fused_kernel', 'pass')
"""

from __future__ import annotations

import time
import traceback

import numpy as np

from .. import gluon, nd
from ..context import cpu, gpu, num_gpus

__all__ = ["run_smoke", "CHECKS", "CannotRunHereError"]


class CannotRunHereError(Exception):
    """A check that cannot run here (its message says why)."""


class _Dot(gluon.HybridBlock):
    def hybrid_forward(self, F, x, w):
        return F.dot(x, w)


class _Chain(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return F.sqrt(F.exp(F.relu(x * 2.0 - 0.5) * -1.0) + x * x)


def _chain_host(x):
    return np.sqrt(np.exp(np.maximum(x * 2.0 - 0.5, 0) * -1.0) + x * x)


def _program(block):
    trace = getattr(block, "_last_trace", None)
    exe = getattr(trace, "executable", None)
    return exe, getattr(exe, "program", None)


def _close(name, got, want, rtol, atol):
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise AssertionError(f"{name}: result differs from NumPy's (max abs error {err}, "
                             f"rtol {rtol}, atol {atol})")


def _gemm(ctx):
    rng = np.random.RandomState(0)
    x, w = rng.rand(64, 96).astype(np.float32), rng.rand(96, 80).astype(np.float32)
    block = _Dot()
    block.hybridize()
    got = block(nd.array(x, ctx=ctx), nd.array(w, ctx=ctx)).asnumpy()
    _close("gemm", got, x @ w, rtol=2e-3, atol=1e-3)  # TF32 may round the inputs
    if ctx.is_gpu:
        _, program = _program(block)
        kinds = [type(s).__name__ for s in getattr(program, "steps", [])]
        if "Gemm" not in kinds:
            raise AssertionError(f"gemm: the program has no cuBLAS GEMM step (steps: {kinds})")


def _fused_kernel(ctx):
    x = np.linspace(-2, 2, 4096, dtype=np.float32)
    block = _Chain()
    block.hybridize()
    got = block(nd.array(x, ctx=ctx)).asnumpy()
    _close("fused_kernel", got, _chain_host(x), rtol=1e-5, atol=1e-6)
    if ctx.is_gpu:
        _, program = _program(block)
        launches = [s for s in program.steps if type(s).__name__ == "Launch"]
        if len(launches) != 1 or len(program.steps) != 1:
            raise AssertionError("fused_kernel: the chain is not one kernel launch "
                                 f"({[type(s).__name__ for s in program.steps]})")


def _capture_replay(ctx):
    if not ctx.is_gpu:
        raise CannotRunHereError("CUDA graphs are a gpu feature")
    block = _Chain()
    block.hybridize()
    for k in range(4):
        x = np.random.RandomState(k).randn(2048).astype(np.float32)
        got = block(nd.array(x, ctx=ctx)).asnumpy()
        _close(f"capture_replay (call {k + 1})", got, _chain_host(x), rtol=1e-5, atol=1e-6)
    exe, _ = _program(block)
    if exe.captures != 1:
        raise AssertionError(f"capture_replay: captured {exe.captures} times in 4 calls "
                             "(want once, then replays)")


def _small_net(ctx, weights=None):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(32, activation="relu", in_units=48), gluon.nn.Dense(4, in_units=32))
    net.initialize(ctx=ctx)
    if weights is not None:
        for param, value in zip(net.collect_params().values(), weights, strict=True):
            param.set_data(nd.array(value, ctx=ctx))
    return net


def _train_step(ctx):
    rng = np.random.RandomState(1)
    x, y = rng.randn(16, 48).astype(np.float32), rng.randint(0, 4, 16).astype(np.float32)
    start = [p.data().asnumpy() for p in _small_net(cpu()).collect_params().values()]
    after = {}
    for where in (cpu(), ctx):
        net = _small_net(where, start)
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd",
                                {"learning_rate": 0.1, "momentum": 0.9})
        step = gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer)
        step(nd.array(x, ctx=where), nd.array(y, ctx=where))
        if where.is_gpu and step.mode != "captured":
            raise AssertionError(f"train_step: TrainStep ran {step.mode!r} on {where}, not "
                                 f"'captured' ({step.reason})")
        after[where.device_type] = [p.data(where).asnumpy()
                                    for p in net.collect_params().values()]
    if all(np.array_equal(a, b) for a, b in zip(after["cpu"], start)):
        raise AssertionError("train_step: the step left the weights unchanged")
    for k, (got, want) in enumerate(zip(after[ctx.device_type], after["cpu"])):
        _close(f"train_step (parameter {k})", got, want, rtol=1e-3, atol=1e-4)


def _nccl_all_reduce(ctx):
    if not ctx.is_gpu or num_gpus() < 2:
        raise CannotRunHereError(f"needs two GPUs ({num_gpus()} here)")
    from ..kvstore.device_reduce import nccl_all_reduce

    host = [np.arange(1000, dtype=np.float32) * (k + 1) for k in range(2)]
    arrays = [nd.array(h, ctx=gpu(k)) for k, h in enumerate(host)]
    nccl_all_reduce(arrays)
    for k, array in enumerate(arrays):
        _close(f"nccl_all_reduce (gpu {k})", array.asnumpy(), host[0] + host[1], 0, 0)


CHECKS = {"gemm": _gemm, "fused_kernel": _fused_kernel, "capture_replay": _capture_replay,
          "train_step": _train_step, "nccl_all_reduce": _nccl_all_reduce}


def _one(name, ctx):
    start = time.monotonic()
    row = {"name": name, "status": "pass", "error": None}
    try:
        CHECKS[name](ctx)
        nd.waitall()
    except CannotRunHereError as why:
        row.update(status="skip", error=str(why))
    except Exception as err:  # report it and go on: the next check may still pass
        row.update(status="FAIL", error=f"{type(err).__name__}: {err}",
                   traceback=traceback.format_exc()[-4000:])
    row["seconds"] = round(time.monotonic() - start, 2)
    return row


def run_smoke(ctx, only=None, progress=print):
    """Run the smoke checks (``only`` those named) on ``ctx``; one row each, printed through
    ``progress`` as soon as it is known."""
    rows = []
    for name in only or CHECKS:
        row = _one(name, ctx)
        detail = f": {row['error']}" if row["error"] else ""
        progress(f"[smoke] {name}: {row['status']} ({row['seconds']:.1f} s){detail}")
        rows.append(row)
    return rows
