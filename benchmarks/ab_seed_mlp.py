"""Side by side: the seed MLP hybridized on cpu under two source trees (say main's and a
branch's), alternating subprocesses A B A B ... so both see the same machine load.

Run: ``python benchmarks/ab_seed_mlp.py /path/to/main/src /path/to/branch/src --rounds 6``.
Each subprocess times 25 repeats of 300 calls per batch size (1 and 64, OPENBLAS_NUM_THREADS=1);
the report gives the best and the median repeat over all rounds, and their ratios B/A.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_TIMER = r"""
import json, time, numpy as np, hybridgpu as mx
from hybridgpu.bench import seed_mlp
out = {}
for batch in (1, 64):
    net = seed_mlp(); net.initialize()
    x = mx.nd.array(np.random.RandomState(0).randn(batch, 512).astype(np.float32))
    net.hybridize(); net(x); net(x)
    reps = []
    for _ in range(25):
        t = time.perf_counter()
        for _ in range(300):
            net(x)
        reps.append((time.perf_counter() - t) / 300 * 1e6)
    out[batch] = reps
print(json.dumps(out))
"""


def _run(src):
    env = {"PYTHONPATH": src, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _TIMER], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="src directory of the baseline")
    parser.add_argument("b", help="src directory to compare")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args(argv)
    times = {"a": {}, "b": {}}
    for _ in range(args.rounds):
        for side in ("a", "b"):
            for batch, reps in _run(getattr(args, side)).items():
                times[side].setdefault(batch, []).extend(reps)
    for batch in times["a"]:
        a, b = times["a"][batch], times["b"][batch]
        mid_a, mid_b = statistics.median(a), statistics.median(b)
        print(f"seed MLP batch {batch}, hybridized, cpu: best {min(a):.2f} vs {min(b):.2f} us "
              f"(B/A {min(b) / min(a):.3f}); median {mid_a:.2f} vs {mid_b:.2f} us "
              f"(B/A {mid_b / mid_a:.3f})")


if __name__ == "__main__":
    main()
