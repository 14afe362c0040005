"""The main job: ``python -m hybridgpu bench`` prints the imperative-vs-hybridized table on
gpu(0) if there is one, else cpu(0).

Workloads (issue "The hybridized engine", benchmarks): the seed MLP (Dense 256 relu, Dense 128
relu, Dense 2) at batch 1 and 64; a chain of 8 elementwise ops (2^24 float32 on gpu, 2^20 on
cpu); resnet18_v1 at batch 1 (224x224 on gpu, 64x64 on cpu). Each runs imperatively and
hybridized, beside a hand-written NumPy/CuPy floor of the same math. Times are medians of
several repeats of many calls after a warm-up; on gpu every repeat ends with a device sync.
Hybridized graphs are compiled (graph passes, then one generated NumPy function on cpu); on
gpu the optimized graph runs op by op with CuPy until the CUDA backend lands.

Example:
    >>> rows = run_table(quick=True, workloads=["mlp-batch1"], progress=False)
    >>> rows[0]["workload"], rows[0]["hybridized_us"] > 0
    ('mlp-batch1', True)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from . import gluon, nd
from .context import cpu, gpu, num_gpus

__all__ = ["run_table", "format_table", "main", "WORKLOADS"]


def _sync(ctx):
    if ctx.is_gpu:
        nd.waitall()


def median_seconds(fn, ctx, quick=False):
    """Median seconds per call of ``fn`` over several timed repeats (after a warm-up)."""
    fn()
    _sync(ctx)
    start = time.perf_counter()
    fn()
    _sync(ctx)
    single = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(10000, int((0.02 if quick else 0.2) / single)))
    samples = []
    for _ in range(3 if quick else 7):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        _sync(ctx)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def seed_mlp():
    """The seeds' MLP: Dense(256, relu), Dense(128, relu), Dense(2)."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(128, activation="relu"),
                gluon.nn.Dense(2))
    return net


def _mlp(batch):
    def make(ctx):
        net = seed_mlp()
        net.initialize(ctx=ctx)
        x = nd.array(np.random.RandomState(0).randn(batch, 512).astype(np.float32), ctx=ctx)
        net(x)
        xp, raw = ctx.xp, [(d.weight.data(ctx).handle, d.bias.data(ctx).handle) for d in net]
        fx = x.handle

        def floor():
            h = fx
            for i, (w, b) in enumerate(raw):
                h = h @ w.T + b
                h = xp.maximum(h, 0) if i < 2 else h
            return h

        return net, x, floor

    return make


class _Chain8(gluon.HybridBlock):
    """Eight elementwise ops: the fusion benchmark."""

    def hybrid_forward(self, F, x):
        y = F.relu(x * 2.0 + 1.0 - 1.5)
        y = F.exp(y * -1.0) * 3.0
        return F.sqrt(y + x * x)


def _chain(ctx):
    n = (1 << 24) if ctx.is_gpu else (1 << 20)
    x = nd.array(np.random.RandomState(0).rand(n).astype(np.float32), ctx=ctx)
    xp, fx = ctx.xp, x.handle

    def floor():
        y = xp.maximum(fx * 2.0 + 1.0 - 1.5, 0)
        y = xp.exp(y * -1.0) * 3.0
        return xp.sqrt(y + fx * fx)

    return _Chain8(), x, floor


def _resnet(ctx):
    from .gluon.model_zoo import vision

    size = 224 if ctx.is_gpu else 64
    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    x = nd.array(np.random.RandomState(0).rand(1, 3, size, size).astype(np.float32), ctx=ctx)
    return net, x, None


WORKLOADS = {"mlp-batch1": _mlp(1), "mlp-batch64": _mlp(64), "chain8-elementwise": _chain,
             "resnet18_v1-batch1": _resnet}


def _time_row(name, ctx, quick):
    net, x, floor = WORKLOADS[name](ctx)
    t_floor = median_seconds(floor, ctx, quick) if floor else None
    t_imp = median_seconds(lambda: net(x), ctx, quick)
    net.hybridize()
    t_hyb = median_seconds(lambda: net(x), ctx, quick)
    return {"workload": name, "device": str(ctx),
            "floor_us": None if t_floor is None else t_floor * 1e6,
            "imperative_us": t_imp * 1e6, "hybridized_us": t_hyb * 1e6,
            "speedup": t_imp / t_hyb}


def run_table(ctx=None, quick=False, workloads=None, progress=True):
    """Time every workload on ``ctx`` (default: gpu(0) if any, else cpu(0)); one dict a row."""
    ctx = ctx or (gpu(0) if num_gpus() > 0 else cpu(0))
    rows = []
    for name in workloads or WORKLOADS:
        if progress:
            print(f"[bench] {name} on {ctx} ...", file=sys.stderr, flush=True)
        rows.append(_time_row(name, ctx, quick))
    return rows


def format_table(rows):
    """The rows as a fixed-width text table."""
    head = (f"{'workload':<20} {'device':<7} {'floor us':>9} {'imperative us':>14} "
            f"{'hybridized us':>14} {'hybrid speedup':>15}")
    lines = [head, "-" * len(head)]
    for r in rows:
        floor = "-" if r["floor_us"] is None else f"{r['floor_us']:.1f}"
        lines.append(f"{r['workload']:<20} {r['device']:<7} {floor:>9} "
                     f"{r['imperative_us']:>14.1f} {r['hybridized_us']:>14.1f} "
                     f"{r['speedup']:>14.2f}x")
    lines.append("hybridized: compiled graph (cpu: generated NumPy program; gpu: CuPy op by op "
                 "until the CUDA-graph backend lands)")
    return "\n".join(lines)


def main(argv=None):
    """Entry point of ``python -m hybridgpu bench [--json PATH] [--quick] [--cpu]``."""
    parser = argparse.ArgumentParser(prog="python -m hybridgpu")
    sub = parser.add_subparsers(dest="command", required=True)
    bench = sub.add_parser("bench", help="imperative vs hybridized table")
    bench.add_argument("--json", help="also save the rows as JSON to this path")
    bench.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    bench.add_argument("--cpu", action="store_true", help="run on cpu(0) even with a GPU")
    args = parser.parse_args(argv)
    rows = run_table(cpu(0) if args.cpu else None, quick=args.quick)
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                      f, indent=2)
    return 0
