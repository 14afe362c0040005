"""``python -m hybridgpu gpucheck``: one call on a lent GPU checks and times everything.

1. runs ``pytest -m gpu`` on the device (from the source tree's ``tests/``, when there is one),
   in parallel shards so that the kernels' NVRTC compiles use every core
   (``gpucheck.gpu_tests``);
2. times the GPU targets (``gpucheck.targets``) beside PyTorch eager and PyTorch CUDA-graph
   replay and the floor of a call from Python, with CUDA events, warm-up and medians;
3. writes one JSON under ``benchmarks/results/`` (device, driver, CUDA, CuPy, NumPy and torch
   versions, date, commit, test summary, every timing), rewritten after the tests and after
   each target so a call killed at the device's time limit still leaves what it measured,
   and prints each target with its measured ratio and verdict.

On a machine without a GPU it runs on the virtual GPU when ``HYBRIDGPU_VIRTUAL_GPU`` is set
(times are meaningless there: it only proves the code runs), else it says there is no GPU.

Example:
    >>> verdicts([{"name": "resnet18", "hybridized": {"median_us": 600.0},
    ...            "torch_cuda_graph": {"median_us": 550.0}}], device="NVIDIA H100")
    [('resnet18 vs PyTorch CUDA graph', '1.09x', '<= 1.2x', 'met')]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..serialization.ndarray_file import _atomic_write
from .environment import describe
from .gpu_tests import run_gpu_tests
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
             f"(commit {results['environment'].get('commit', '?')[:10]})",
             f"gpu tests: {results['tests'].get('summary')}"]
    rows = results["verdicts"]
    width = max([len(r[0]) for r in rows] + [10])
    lines.append(f"{'target':<{width}}  {'measured':>10}  {'wanted':>10}  verdict")
    lines += [f"{a:<{width}}  {b:>10}  {c:>10}  {d}" for a, b, c, d in rows]
    return "\n".join(lines)


def main(argv=None):
    """Entry point: ``python -m hybridgpu gpucheck [--quick] [--skip-tests] [--out DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m hybridgpu gpucheck",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--skip-tests", action="store_true", help="only the timings")
    parser.add_argument("--test-timeout", type=int, default=300,
                        help="seconds for the gpu tests, all shards together (default 300: "
                             "the timings need the rest of a 600 s device call)")
    parser.add_argument("--only", nargs="+", choices=list(TARGETS), help="these targets")
    parser.add_argument("--out", default=os.path.join(_ROOT, "benchmarks", "results"),
                        help="folder for the JSON result")
    args = parser.parse_args(argv)
    from ..context import gpu, num_gpus

    if num_gpus() == 0:
        print("gpucheck: no GPU (CuPy sees no CUDA device and HYBRIDGPU_VIRTUAL_GPU is not "
              "set); nothing to check", file=sys.stderr)
        return 2
    ctx = gpu(0)
    env = describe(ctx.xp)
    stamp = env["date"][:19].replace(":", "").replace("-", "")
    path = os.path.join(args.out, f"gpucheck-{stamp}-{env['commit'][:10]}.json")
    os.makedirs(args.out, exist_ok=True)
    tests = {"summary": "skipped"} if args.skip_tests else run_gpu_tests(args.test_timeout)
    print(f"gpu tests: {tests['summary']}", file=sys.stderr, flush=True)
    results = {"environment": env, "tests": tests, "targets": [], "verdicts": []}
    _write(path, results)  # a call killed at its time limit still leaves what it measured
    for name in args.only or TARGETS:
        results["targets"] += run_targets(ctx, quick=args.quick, only=[name],
                                          progress=lambda m: print(m, file=sys.stderr,
                                                                   flush=True))
        results["verdicts"] = verdicts(results["targets"], env.get("device", ""))
        _write(path, results)
    print(_table(results))
    print(f"written: {path}")
    failed = tests.get("returncode") not in (0, None) or any(
        r[3] in ("FAILED",) for r in results["verdicts"])
    return 1 if failed else 0


def _write(path, results):
    """The results as JSON at ``path``, atomically (rewritten after each target)."""
    text = json.dumps(results, indent=2, default=str).encode()
    _atomic_write(path, lambda stream: stream.write(text))
