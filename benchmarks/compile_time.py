"""Time from a new input shape to the first result on a gpu context, cold and warm kernel cache.

Run: ``HYBRIDGPU_VIRTUAL_GPU=1 python benchmarks/compile_time.py [--models mlp resnet18_v1]``
(on a real GPU, leave ``HYBRIDGPU_VIRTUAL_GPU`` unset). For each model, two fresh processes
share one new cache folder (``HYBRIDGPU_CACHE`` for the virtual GPU's kernel libraries,
``CUPY_CACHE_DIR`` for CuPy's): the first finds it empty (**cold**), the second finds every
kernel the first compiled (**warm**). Each process, on a hybridized net:

1. ``first``: the first call (trace, passes, lowering, kernel compile, eager run, capture);
2. ``new shape``: a call with a new batch size (no trace: the graph is re-inferred);
3. ``shape args``: after ``SHAPE_ARGS_AFTER`` shapes, the first call with kernels taking
   sizes as arguments, then ``reused``: one more new shape, served by that same module.

Where each call's time goes, from wrappers around the stages: ``trace`` (running the Python
and inferring shapes, or re-inferring them), ``passes`` (``compile_graph`` less the backend's
build), ``lower`` (the GPU program), ``kernels`` (building and loading kernel modules: NVRTC,
or g++ on the virtual GPU, or a cache hit) and ``run`` (the rest: staging, the eager run, the
capture, the copies out). Prints a table and writes the JSON to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
import numpy as np
import hybridgpu as mx
from hybridgpu.gluon import hybrid_block
from hybridgpu.executor.gpu import runtime
from hybridgpu.compiler import pipeline

spent = {}

def timed(owner, name, stage):
    real = getattr(owner, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[stage] = spent.get(stage, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)

timed(hybrid_block.HybridBlock, "_new_trace", "trace")
timed(hybrid_block, "compile_graph", "compile")
timed(pipeline, "_build", "build")
timed(runtime, "lower", "lower")
timed(runtime._State, "_function", "kernels")

model, shape = sys.argv[1], json.loads(sys.argv[2])
ctx = mx.gpu(0)
if model == "mlp":
    from hybridgpu.bench import seed_mlp
    net = seed_mlp()
else:
    from hybridgpu.gluon.model_zoo import vision
    net = vision.get_model(model)
net.initialize(ctx=ctx)
net.hybridize()

def call(batch):
    spent.clear()
    x = mx.nd.array(np.random.RandomState(batch).randn(batch, *shape).astype(np.float32),
                    ctx=ctx)
    t = time.perf_counter()
    net(x).asnumpy()
    total = time.perf_counter() - t
    passes = spent.get("compile", 0.0) - spent.get("build", 0.0)
    stages = {"trace": spent.get("trace", 0.0), "passes": passes,
              "lower": spent.get("lower", 0.0), "kernels": spent.get("kernels", 0.0)}
    stages["run"] = total - sum(stages.values())
    return {"batch": batch, "total": total, **stages}

batches = json.loads(sys.argv[3])
k = hybrid_block.SHAPE_ARGS_AFTER
rows = {"first": call(batches[0]), "new shape": call(batches[1])}
for b in batches[2:k]:
    call(b)
rows["shape args"] = call(batches[k])
rows["reused"] = call(batches[k + 1])
print(json.dumps(rows))
"""

MODELS = {"mlp": ([512], [32, 64, 48, 40, 24, 56]),
          "resnet18_v1": ([3, 224, 224], [1, 2, 3, 4, 5, 6])}
STAGES = ["trace", "passes", "lower", "kernels", "run"]


def run_child(model, cache):
    shape, batches = MODELS[model]
    env = {**os.environ, "HYBRIDGPU_CACHE": cache, "CUPY_CACHE_DIR": os.path.join(cache, "cupy"),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, model, json.dumps(shape),
                           json.dumps(batches)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{model}: the timing process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--json", default=None, help="write the measurements here")
    args = parser.parse_args()
    device = "virtual GPU" if os.environ.get("HYBRIDGPU_VIRTUAL_GPU") else "gpu"
    results = {}
    for model in args.models:
        with tempfile.TemporaryDirectory(prefix="hybridgpu-cache-") as cache:
            results[model] = {"cold": run_child(model, cache), "warm": run_child(model, cache)}
    print(f"seconds from a new input shape to the first result ({device})")
    print(f"{'model':<12} {'cache':<5} {'call':<11} {'batch':>5} {'total':>7} "
          + " ".join(f"{s:>7}" for s in STAGES))
    for model, by_cache in results.items():
        for cache, rows in by_cache.items():
            for call, row in rows.items():
                print(f"{model:<12} {cache:<5} {call:<11} {row['batch']:>5} {row['total']:>7.3f} "
                      + " ".join(f"{row[s]:>7.3f}" for s in STAGES))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": device, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
