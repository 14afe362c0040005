"""The main job: ``python -m hybridgpu bench`` prints the imperative-vs-hybridized table on
gpu(0) if there is one, else cpu(0).

Until the hybridized engine lands (issue "The hybridized engine"), the hybridized column reads
``n/a`` and each workload is timed imperatively beside its hand-written NumPy/CuPy floor.
Times are medians of several repeats, each of many calls (after a warm-up); on gpu every repeat
ends with a device synchronization.

Example:
    >>> rows = run_table(ctx=None, quick=True, workloads=["add-1x512"], progress=False)
    >>> rows[0]["workload"]
    'add-1x512'
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

from . import nd
from .context import cpu, gpu, num_gpus

__all__ = ["run_table", "main"]


def _sync(ctx):
    if ctx.is_gpu:
        nd.waitall()


def _median_seconds(fn, ctx, quick):
    fn()
    _sync(ctx)
    start = time.perf_counter()
    fn()
    _sync(ctx)
    single = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(10000, int((0.02 if quick else 0.1) / single)))
    samples = []
    for _ in range(3 if quick else 7):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        _sync(ctx)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def _add_workload(ctx, xp):
    rng = np.random.RandomState(0)
    a_host, b_host = rng.rand(1, 512).astype(np.float32), rng.rand(1, 512).astype(np.float32)
    a, b = nd.array(a_host, ctx=ctx), nd.array(b_host, ctx=ctx)
    fa, fb = a.handle, b.handle
    return (lambda: a + b), (lambda: fa + fb)


def _mlp_workload(batch):
    def make(ctx, xp):
        rng = np.random.RandomState(0)
        sizes = [(256, 512), (128, 256), (2, 128)]
        host = [(rng.randn(o, i).astype(np.float32) * 0.05, np.zeros(o, np.float32))
                for o, i in sizes]
        params = [(nd.array(w, ctx=ctx), nd.array(b, ctx=ctx)) for w, b in host]
        raw = [(w.handle, b.handle) for w, b in params]
        x = nd.array(rng.randn(batch, 512).astype(np.float32), ctx=ctx)
        fx = x.handle

        def imperative():
            h = x
            for i, (w, b) in enumerate(params):
                h = nd.FullyConnected(h, w, b, num_hidden=w.shape[0])
                if i < 2:
                    h = nd.relu(h)
            return h

        def floor():
            h = fx
            for i, (w, b) in enumerate(raw):
                h = h @ w.T + b
                if i < 2:
                    h = xp.maximum(h, 0)
            return h

        return imperative, floor

    return make


def _chain_workload(ctx, xp):
    n = (1 << 24) if ctx.is_gpu else (1 << 20)
    x = nd.array(np.random.RandomState(0).rand(n).astype(np.float32), ctx=ctx)
    fx = x.handle

    def imperative():
        y = x * 2.0 + 1.0
        y = nd.relu(y - 1.5)
        y = nd.exp(y * -1.0) * 3.0
        return y + x

    def floor():
        y = fx * 2.0 + 1.0
        y = xp.maximum(y - 1.5, 0)
        y = xp.exp(y * -1.0) * 3.0
        return y + fx

    return imperative, floor


WORKLOADS = {
    "add-1x512": _add_workload,
    "mlp-batch1": _mlp_workload(1),
    "mlp-batch64": _mlp_workload(64),
    "chain8-elementwise": _chain_workload,
}


def run_table(ctx=None, quick=False, workloads=None, progress=True):
    """Time every workload on ``ctx``; returns one dict per row."""
    ctx = ctx or (gpu(0) if num_gpus() > 0 else cpu(0))
    rows = []
    for name in workloads or WORKLOADS:
        if progress:
            print(f"[bench] {name} on {ctx} ...", file=sys.stderr, flush=True)
        imperative, floor = WORKLOADS[name](ctx, ctx.xp)
        t_imp = _median_seconds(imperative, ctx, quick)
        t_floor = _median_seconds(floor, ctx, quick)
        rows.append({"workload": name, "device": str(ctx), "floor_us": t_floor * 1e6,
                     "imperative_us": t_imp * 1e6, "hybridized_us": None,
                     "imperative_over_floor": t_imp / t_floor})
    return rows


def format_table(rows):
    """The rows as a fixed-width text table."""
    head = (f"{'workload':<20} {'device':<8} {'floor us':>10} {'imperative us':>14} "
            f"{'hybridized us':>14} {'imp/floor':>10}")
    lines = [head, "-" * len(head)]
    for r in rows:
        hyb = "n/a" if r["hybridized_us"] is None else f"{r['hybridized_us']:.1f}"
        lines.append(f"{r['workload']:<20} {r['device']:<8} {r['floor_us']:>10.1f} "
                     f"{r['imperative_us']:>14.1f} {hyb:>14} "
                     f"{r['imperative_over_floor']:>9.2f}x")
    lines.append("hybridized: n/a until the hybridized engine lands (compiler issue)")
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
