"""Two ``dist_sync`` ranks that disagree on collectives, under ``mpiexec -n 2``: runs each
CASE in turn, each with a new kvstore, and writes to ``<out>/cases<rank>.json`` what happened
in each: the error's class and message and the seconds it took, or the values it ended with.
Later cases run only if the ranks are still in step after the errors of earlier ones.

    mpiexec -n 2 python kv_disagree.py OUT CASE [CASE ...]

Cases (rank 0 / rank 1):

* ``dtype_init``: init key 3 with float32 / float64;
* ``dtype_push``: both init key 3 as float32, then push float32 / float64;
* ``key``: both init keys 1 and 2, then push key 1 / key 2;
* ``barrier``: push key 3 / ``barrier()``;
* ``shape_init``: init key 3 with shape (4,) / (5,);
* ``agree``: both push key 3 twice, then ``barrier()`` (no error: the values);
* ``idle``: rank 1 sleeps 10 s before the barrier; rank 0 records the CPU seconds its wait
  cost (``time.process_time``).
"""

import json
import os
import sys
import time
import traceback

import numpy as np

import hybridgpu as mx


def _ones(dtype, n=4):
    return mx.nd.array(np.ones(n, dtype=dtype), dtype=dtype)


def _play(case, kv, rank):
    """Run ``case``; returns what this rank saw when nothing raised."""
    if case == "dtype_init":
        kv.init(3, _ones("float32" if rank == 0 else "float64"))
    elif case == "dtype_push":
        kv.init(3, _ones("float32"))
        kv.push(3, _ones("float32" if rank == 0 else "float64"))
    elif case == "key":
        kv.init([1, 2], [_ones("float32"), _ones("float32")])
        kv.push(1 if rank == 0 else 2, _ones("float32"))
    elif case == "barrier":
        kv.init(3, _ones("float32"))
        if rank == 0:
            kv.push(3, _ones("float32"))
        else:
            kv.barrier()
    elif case == "shape_init":
        kv.init(3, _ones("float32", 4 if rank == 0 else 5))
    elif case == "agree":
        kv.init(3, _ones("float32"))
        kv.push(3, _ones("float32") * (rank + 1))
        kv.push(3, _ones("float32") * (rank + 1))
        kv.barrier()
    elif case == "idle":
        kv.barrier()
        if rank == 1:
            time.sleep(10)
        cpu = time.process_time()
        kv.barrier()
        return {"cpu_seconds": time.process_time() - cpu}
    else:
        raise SystemExit(f"unknown case {case!r}")
    out = mx.nd.zeros(4)
    kv.pull(3 if case != "key" else 1, out=out)
    return {"values": out.asnumpy().tolist()}


def main(out, cases):
    results = {}
    for case in cases:
        kv = mx.kv.create("dist_sync")
        rank = kv.rank
        kv.barrier()
        start = time.monotonic()
        try:
            seen = _play(case, kv, rank)
        except mx.MXNetError as err:
            seen = {"error": type(err).__name__, "message": str(err)}
        seen["seconds"] = time.monotonic() - start
        results[case] = seen
    with open(os.path.join(out, f"cases{rank}.json"), "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2:])
    except Exception:
        with open(os.path.join(sys.argv[1], f"error.{os.getpid()}.txt"), "w") as f:
            f.write(traceback.format_exc())
        raise
