"""``mx.kv.create('dist_sync')`` under ``mpiexec -n K``: writes what each rank saw to
``<out>/kv<rank>.json``."""

import json
import os
import sys

import hybridgpu as mx


def main(out):
    kv = mx.kv.create("dist_sync")
    rank = kv.rank
    seen = {"rank": rank, "num_workers": kv.num_workers, "type": kv.type}
    kv.init("w", mx.nd.ones(3) * (rank + 10))          # every rank keeps rank 0's value
    got = mx.nd.zeros(3)
    kv.pull("w", out=got)
    seen["after_init"] = got.asnumpy().tolist()
    kv.push("w", [mx.nd.ones(3) * (rank + 1), mx.nd.ones(3)])   # in process, then workers
    kv.pull("w", out=got)
    seen["after_push"] = got.asnumpy().tolist()
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.5))
    kv.pushpull("w", mx.nd.ones(3), out=got)            # w - 0.5 * K
    seen["after_update"] = got.asnumpy().tolist()
    kv.barrier()
    with open(os.path.join(out, f"kv{rank}.json"), "w") as f:
        json.dump(seen, f)


if __name__ == "__main__":
    main(sys.argv[1])
