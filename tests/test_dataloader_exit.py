"""A DataLoader whose worker thread hangs for good raises ``TimeoutError`` and then lets the
process exit (its workers are daemon threads, abandoned at exit instead of joined)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

PROGRAM = textwrap.dedent("""
    import threading, time
    import hybridgpu as mx

    class Stuck:
        def __len__(self):
            return 8

        def __getitem__(self, index):
            threading.Event().wait()  # a read that never returns
            return index

    loader = mx.gluon.data.DataLoader(Stuck(), batch_size=2, num_workers=2, timeout=1,
                                      auto_reload={auto_reload})
    try:
        for batch in loader:
            pass
    except TimeoutError as err:
        print("TimeoutError:", err, flush=True)
    print("stuck workers:", sum(t.name.startswith("hybridgpu-DataLoader")
                                for t in threading.enumerate()), flush=True)
""")


def _run(auto_reload):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(auto_reload=auto_reload)],
                         capture_output=True, text=True, timeout=60, env=env, check=False)
    return out, time.monotonic() - start


def test_a_hung_worker_does_not_keep_the_process_alive():
    out, seconds = _run(auto_reload=False)
    assert out.returncode == 0, out.stderr
    assert "TimeoutError: DataLoader: a worker thread took more than 1 s" in out.stdout
    assert "stuck workers: 2" in out.stdout  # still blocked when the program ends ...
    assert seconds < 30  # ... and the process exits anyway (it never did before)


def test_a_hung_auto_reload_pass_does_not_keep_the_process_alive():
    out, seconds = _run(auto_reload=True)
    assert out.returncode == 0, out.stderr
    assert "TimeoutError" in out.stdout and seconds < 30
