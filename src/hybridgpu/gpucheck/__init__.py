"""``python -m hybridgpu gpucheck --out DIR``: one call on a lent GPU checks and times
everything, writing as it goes into DIR (the only folder that comes back; see docs/gpucheck.md).

1. the smoke stage (``gpucheck.smoke``; ``--smoke`` runs only it): one GEMM through cuBLAS,
   one fused kernel, one capture and replay, one TrainStep step, one NCCL all-reduce on two
   GPUs, each printed pass or FAIL with its error as soon as known;
2. the GPU targets (``gpucheck.targets``) beside PyTorch eager and PyTorch CUDA-graph replay
   and the floor of a call from Python, with CUDA events, warm-up and medians, each target's
   verdict printed as soon as it has one; no target starts when less than ``--test-reserve``
   seconds of the ``--budget`` are left;
3. ``pytest -m gpu`` in parallel shards (``gpucheck.gpu_tests``) for the rest of the budget,
   each shard writing its log into ``DIR/tests/``.

``DIR`` gets ``environment.json`` (device, driver, CUDA, CuPy, NumPy, torch, every installed
package), ``gpucheck.log`` (every line printed) and ``gpucheck-<date>-<commit>.json`` (the
results, rewritten after every check, target and stage: a call killed at the device's time
limit still leaves what it measured); see ``gpucheck.output``.

On a machine without a GPU it runs on the virtual GPU when ``HYBRIDGPU_VIRTUAL_GPU`` is set
(times are meaningless there: it only proves the code runs), else it says there is no GPU.

Example:
    >>> verdicts([{"name": "resnet18", "hybridized": {"median_us": 600.0},
    ...            "torch_cuda_graph": {"median_us": 550.0}}], device="NVIDIA H100")
    [('resnet18 vs PyTorch CUDA graph', '1.09x', '<= 1.2x', 'met')]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .environment import describe
from .gpu_tests import run_gpu_tests
from .output import Output
from .smoke import CHECKS, run_smoke
from .targets import TARGETS, run_targets

__all__ = ["main", "verdicts", "run_gpu_tests"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


def _ratio(a, b):
    return None if not a or not b else a["median_us"] / b["median_us"]


def _verdict(label, value, target, ok):
    if value is None:
        return (label, "-", target, "not measured")
    return (label, f"{value:.2f}x" if label[-1] != "s" or "us" not in target
            else f"{value:.1f} us", target, "met" if ok(value) else "MISSED")


def _mlp_verdicts(row, device):
    hyb = row.get("hybridized")
    out = [_verdict("mlp b1 vs PyTorch CUDA graph", _ratio(hyb, row.get("torch_cuda_graph")),
                    "<= 1.0x", lambda v: v <= 1.0),
           _verdict("mlp b1 imperative / hybridized",
                    _ratio(row.get("imperative"), hyb), ">= 5x", lambda v: v >= 5)]
    if "H100" in device and hyb:
        value = hyb["median_us"]
        out.append(("mlp b1 per call", f"{value:.1f} us", "<= 20 us",
                    "met" if value <= 20 else "MISSED"))
    return out


def _train_step_verdicts(row):
    captured = row.get("captured")
    other = _ratio(row.get("hybridized"), captured)
    return [_verdict("mlp training step b1: imperative / captured",
                     _ratio(row.get("imperative"), captured), ">= 5x", lambda v: v >= 5),
            ("mlp training step b1: hybridized / captured",
             "-" if other is None else f"{other:.2f}x", "(reported)", "reported")]


def _half_verdicts(row):
    half = row.get("float16")
    torch_half = row.get("torch_float16")
    peer = _ratio(half, torch_half) if isinstance(torch_half, dict) else None
    return [(label, "-" if value is None else f"{value:.2f}x", "(reported)", "reported")
            for label, value in (("resnet18 b32 float16 / float32",
                                  _ratio(half, row.get("float32"))),
                                 ("resnet18 b32 float16 vs PyTorch float16", peer))]


def verdicts(rows, device=""):
    """``[(target, measured, wanted, verdict)]`` for result rows; the verdict is ``met``,
    ``MISSED``, ``not measured``, or ``reported`` for a ratio shown without a target."""
    out = []
    for row in rows:
        if "error" in row:
            out.append((row["name"], "error", row["error"][:60], "FAILED"))
        elif "skipped" in row:
            out.append((row["name"], "-", "-", "skipped (no time left)"))
        elif row["name"] == "mlp":
            out += _mlp_verdicts(row, device)
        elif row["name"] == "chain8":
            kernel = row.get("kernels", {}).get("fused")
            out.append(_verdict("chain8 fused kernel / device copy",
                                _ratio(kernel, row.get("device_copy")), "<= 1.25x",
                                lambda v: v <= 1.25))
            whole = _ratio(row.get("hybridized"), row.get("device_copy"))
            out.append(("chain8 whole call / device copy",
                        "-" if whole is None else f"{whole:.2f}x", "(reported)", "reported"))
        elif row["name"] == "fused_update":
            out.append(_verdict("fused optimizer update / per-parameter",
                                _ratio(row.get("fused"), row.get("per_parameter")), "< 1.0x",
                                lambda v: v < 1.0))
        elif row["name"] == "train_step":
            out += _train_step_verdicts(row)
        elif row["name"] == "float16":
            out += _half_verdicts(row)
        elif row["name"] == "resnet18":
            out.append(_verdict("resnet18 vs PyTorch CUDA graph",
                                _ratio(row.get("hybridized"), row.get("torch_cuda_graph")),
                                "<= 1.2x", lambda v: v <= 1.2))
    return out


def _table(results):
    lines = [f"gpucheck on {results['environment'].get('device')} "
             f"(commit {results['environment'].get('commit', '?')[:10]})"]
    lines += [f"smoke {r['name']}: {r['status']}" + (f" ({r['error'][:80]})" if r["error"]
                                                     else "") for r in results["smoke"]]
    lines.append(f"gpu tests: {results['tests'].get('summary')}")
    rows = results["verdicts"]
    if not rows:
        return "\n".join(lines)
    width = max([len(r[0]) for r in rows] + [10])
    lines.append(f"{'target':<{width}}  {'measured':>10}  {'wanted':>10}  verdict")
    lines += [f"{a:<{width}}  {b:>10}  {c:>10}  {d}" for a, b, c, d in rows]
    return "\n".join(lines)


def _parser():
    parser = argparse.ArgumentParser(prog="python -m hybridgpu gpucheck",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(_ROOT, "benchmarks", "results"),
                        help="folder for everything the run writes (the JSON, gpucheck.log, "
                             "environment.json, tests/shard-*.log); on a lent GPU: \"$OUT\"")
    parser.add_argument("--smoke", action="store_true",
                        help="only the smoke stage (one GEMM, one fused kernel, one capture "
                             "and replay, one TrainStep step, one NCCL all-reduce)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--skip-tests", action="store_true", help="no gpu test suite")
    parser.add_argument("--budget", type=float, default=570,
                        help="seconds for the whole run (default 570: one 600 s device call)")
    parser.add_argument("--test-reserve", type=float, default=240,
                        help="seconds of the budget kept for the gpu tests: no target starts "
                             "with less left (default 240)")
    parser.add_argument("--test-timeout", type=float, default=None,
                        help="seconds for the gpu tests, all shards together (default: what "
                             "is left of the budget)")
    parser.add_argument("--only", nargs="+", choices=list(TARGETS), help="these targets")
    return parser


#: Seconds a smoke check may run before every thread's stack goes to gpucheck.log (a hang on
#: the device then shows where it is, while the call still has time to be read back).
HANG_REPORT_S = 60


def _smoke(ctx, out, results):
    import faulthandler

    for name in CHECKS:
        out.note(f"[smoke] {name}: started")
        with open(out.log_path, "a", encoding="utf-8") as log:
            faulthandler.dump_traceback_later(HANG_REPORT_S, file=log)
            try:
                results["smoke"] += run_smoke(ctx, only=[name], progress=out.say)
            finally:
                faulthandler.cancel_dump_traceback_later()
        out.save(results)


def _targets(ctx, args, out, results, deadline):
    device = results["environment"].get("device", "")
    reserve = 0 if args.skip_tests else args.test_reserve
    for name in args.only or TARGETS:
        left = deadline - time.monotonic()
        if left < reserve:
            row = {"name": name, "skipped": f"{left:.0f} s left of the budget, "
                                            f"{reserve:.0f} s kept for the gpu tests"}
            rows = [row]
        else:
            out.note(f"[target] {name}: started ({left:.0f} s left of the budget)")
            rows = run_targets(ctx, quick=args.quick, only=[name], progress=out.say)
        results["targets"] += rows
        results["verdicts"] = verdicts(results["targets"], device)
        for target, measured, wanted, verdict in verdicts(rows, device):
            out.say(f"[verdict] {target}: {measured} (wanted {wanted}) {verdict}")
        out.save(results)


def _tests(args, out, deadline):
    if args.skip_tests:
        return {"summary": "skipped"}
    left = deadline - time.monotonic() - 5
    timeout = left if args.test_timeout is None else min(args.test_timeout, left)
    if timeout < 20:
        return {"returncode": None, "summary": f"not run: {left:.0f} s left of the budget"}
    out.say(f"[tests] pytest -m gpu, {timeout:.0f} s, shard logs in {out.tests_dir}")
    tests = run_gpu_tests(timeout, log_dir=out.tests_dir)
    out.say(f"[tests] {tests['summary']}")
    for line in tests.get("tail", "").splitlines():
        if line.startswith(("FAILED", "ERROR")):
            out.say(f"[tests] {line}")
    return tests


def main(argv=None):
    """Entry point: ``python -m hybridgpu gpucheck [--out DIR] [--smoke] [--quick]
    [--skip-tests] [--only TARGET...] [--budget S]``."""
    args = _parser().parse_args(argv)
    from ..context import gpu, num_gpus

    if num_gpus() == 0:
        print("gpucheck: no GPU (CuPy sees no CUDA device and HYBRIDGPU_VIRTUAL_GPU is not "
              "set); nothing to check", file=sys.stderr)
        return 2
    deadline = time.monotonic() + args.budget
    ctx = gpu(0)
    env = describe(ctx.xp)
    out = Output(args.out, env)
    results = {"environment": env, "budget_s": args.budget, "smoke": [], "targets": [],
               "verdicts": [], "tests": {"summary": "skipped" if args.skip_tests
                                         else "not run yet"}}
    out.say(f"gpucheck on {env.get('device')} (commit {env['commit'][:10]}), "
            f"writing to {out.folder}")
    out.save(results)
    _smoke(ctx, out, results)
    if args.smoke:
        results["tests"] = {"summary": "skipped (--smoke)"}
    else:
        _targets(ctx, args, out, results, deadline)
        results["tests"] = _tests(args, out, deadline)
    out.save(results)
    table = _table(results)
    print(table)
    print(f"written: {out.json_path}")
    out.say(table)
    failed = results["tests"].get("returncode") not in (0, None) or any(
        r[3] == "FAILED" for r in results["verdicts"]) or any(
        r["status"] == "FAIL" for r in results["smoke"])
    return 1 if failed else 0
