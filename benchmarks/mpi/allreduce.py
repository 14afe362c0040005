"""All-reduce throughput under ``mpiexec -n K``: ``DistKVStore.push`` + ``pull`` of one key
beside the same sum done by hand with mpi4py (``Allreduce`` of a NumPy buffer: the floor).
Rank 0 prints one JSON line per size: median seconds of each and the ratio.

    mpiexec -n 2 python benchmarks/mpi/allreduce.py [--sizes 4096 1048576 16777216]
"""

import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

import hybridgpu as mx


def _median(fn, repeat):
    fn()
    samples = []
    for _ in range(repeat):
        MPI.COMM_WORLD.Barrier()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1 << 12, 1 << 20, 1 << 24])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    kv = mx.kv.create("dist_sync")
    comm = MPI.COMM_WORLD
    for n in args.sizes:
        grad = mx.nd.ones(n)
        out = mx.nd.zeros(n)
        kv.init(n, mx.nd.zeros(n))
        send, recv = np.ones(n, np.float32), np.empty(n, np.float32)

        def store(n=n, grad=grad, out=out):
            kv.push(n, grad)
            kv.pull(n, out=out)

        floor = _median(lambda: comm.Allreduce(send, recv), args.repeat)  # noqa: B023
        ours = _median(store, args.repeat)
        if kv.rank == 0:
            print(json.dumps({"elements": n, "workers": kv.num_workers, "kvstore_s": ours,
                              "mpi4py_floor_s": floor, "ratio": ours / floor}), flush=True)


if __name__ == "__main__":
    main()
