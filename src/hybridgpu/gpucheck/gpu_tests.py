"""The test part of ``gpucheck``: ``pytest -m gpu`` over the files that hold gpu tests, split
into shards run side by side (a fresh GPU machine compiles every kernel with NVRTC on its CPU
cores: one process would spend most of a session's 10-minute call limit compiling).

Files are dealt to ``shards`` processes, largest first, each to the shard with the least
bytes so far. Every shard runs ``pytest -q -m gpu`` with the project's plugin-needing options
overridden, all under one deadline; their summaries are added up ("12 passed, 1 failed in
3 shards, 41 s") and the failure lines (``-rfE``) kept. A shard still running at the deadline
is killed and reported as such, the others still count. With ``log_dir`` each shard writes
its output to ``log_dir/shard-<i>.log`` as it runs (what comes back from a killed device call).

Example:
    >>> deal([("a", 50), ("b", 40), ("c", 30), ("d", 5)], 2)
    [['a', 'd'], ['b', 'c']]
    >>> sorted(add_up(["3 passed, 1 skipped in 2.0s", "1 failed, 2 passed in 1.5s"]).items())
    [('failed', 1), ('passed', 5), ('skipped', 1)]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

__all__ = ["run_gpu_tests", "gpu_test_files", "deal", "add_up"]

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_COUNTS = ("passed", "failed", "error", "errors", "skipped", "xfailed", "xpassed",
           "deselected")


def gpu_test_files(tests):
    """The test files that hold gpu-marked tests (the others are not even collected, so a
    package the GPU machine lacks and only they need cannot stop the run)."""
    files = []
    for name in sorted(os.listdir(tests)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(tests, name), encoding="utf-8") as f:
                if "mark.gpu" in f.read():
                    files.append(os.path.join(tests, name))
    return files


def deal(sized, shards):
    """``sized`` ``(name, size)`` pairs dealt into at most ``shards`` lists, largest first,
    each to the list with the smallest total so far (empty lists dropped)."""
    bins = [[0, []] for _ in range(max(1, shards))]
    for name, size in sorted(sized, key=lambda p: -p[1]):
        smallest = min(bins, key=lambda b: b[0])
        smallest[0] += size
        smallest[1].append(name)
    return [names for _, names in bins if names]


def add_up(summaries):
    """The counts of pytest summary lines, added up (``error`` and ``errors`` together)."""
    total = {}
    for line in summaries:
        for count, what in re.findall(r"(\d+) (\w+)", line):
            what = "error" if what == "errors" else what
            if what in _COUNTS:
                total[what] = total.get(what, 0) + int(count)
    return total


def _command(files, extra):
    return [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
            "-o", "addopts=-rfE", "--continue-on-collection-errors", *files, *extra]


def _finish(proc, deadline, log):
    """``(returncode or 'timeout', output)`` of ``proc``, killed at ``deadline``; the output
    is read back from ``log`` when the shard wrote there."""
    try:
        out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        code = "timeout"
    if log is not None:
        log.close()
        with open(log.name, encoding="utf-8", errors="replace") as f:
            out = f.read()
    return code, out or ""


def _start(group, extra, log_dir, index):
    log = None
    if log_dir is not None:
        os.makedirs(log_dir, exist_ok=True)
        path = os.path.join(log_dir, f"shard-{index}.log")
        log = open(path, "w", encoding="utf-8")  # noqa: SIM115  (closed by _finish)
        log.write(" ".join(_command(group, extra)) + "\n")
        log.flush()
    proc = subprocess.Popen(_command(group, extra), stdout=log or subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=_ROOT)
    return proc, log


def run_gpu_tests(timeout=300, extra=(), shards=None, tests=None, log_dir=None):
    """``pytest -m gpu`` over the gpu test files of ``tests`` (default: the source tree's)
    in ``shards`` parallel processes (default: half the CPU cores, at most 8), each writing
    to ``log_dir/shard-<i>.log`` when given; ``{returncode, summary, counts, shards, tail}``."""
    tests = tests or os.path.join(_ROOT, "tests")
    if not os.path.isdir(tests):
        return {"returncode": None, "summary": "no tests/ folder beside the package"}
    shards = shards or max(1, min(8, (os.cpu_count() or 2) // 2))
    groups = deal([(f, os.path.getsize(f)) for f in gpu_test_files(tests)], shards)
    start, deadline = time.monotonic(), time.monotonic() + timeout
    started = [_start(group, extra, log_dir, i) for i, group in enumerate(groups)]
    results = [_finish(proc, deadline, log) for proc, log in started]
    lines = [next((ln for ln in reversed(out.splitlines())
                   if re.search(r"\d+ (passed|failed|error)", ln)), "no summary")
             for _, out in results]
    counts = add_up(lines)
    codes = [code for code, _ in results]
    timed_out = codes.count("timeout")
    summary = ", ".join(f"{n} {what}" for what, n in counts.items()) or "no tests ran"
    summary += (f" in {len(groups)} shards, {time.monotonic() - start:.0f} s"
                + (f"; {timed_out} shard(s) killed at the {timeout} s deadline"
                   if timed_out else ""))
    failures = [ln for _, out in results for ln in out.splitlines()
                if ln.startswith(("FAILED", "ERROR"))]
    worst = "timeout" if timed_out else max((c for c in codes if c != "timeout"), default=0)
    return {"returncode": worst, "summary": summary, "counts": counts, "shards": lines,
            "tail": "\n".join(failures)[-4000:] or results[-1][1][-2000:]}
