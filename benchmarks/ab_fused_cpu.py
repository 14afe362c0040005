"""Side by side on cpu: the per-parameter optimizer update (each rule's NumPy code once per
parameter, what ``Optimizer.step_arrays`` runs on cpu) against the same update vectorized over
one flat buffer (gradients and weights gathered into it, states kept flat, per-element
learning rate and weight decay, weights scattered back), for SGD with momentum and Adam.

Run: ``PYTHONPATH=src python benchmarks/ab_fused_cpu.py``. Prints the best of 15 repeats of
each, per workload (the seed MLP's parameters, resnet18_v1's, and 400 tiny tensors), and
checks the two give the same weights bitwise. The flat variant is the *best case* for a flat
cpu path: its states already live in the flat buffer and its per-element rate arrays are
prepared outside the timing.
"""

from __future__ import annotations

import time

import numpy as np

from hybridgpu import optimizer as opt_mod
from hybridgpu.optimizer.optimizer import op_scalars


def _workloads():
    from hybridgpu import nd
    from hybridgpu.bench import seed_mlp
    from hybridgpu.gluon.model_zoo import vision

    mlp = seed_mlp()
    mlp.initialize()
    mlp(nd.zeros((1, 512)))
    resnet = vision.resnet18_v1()
    resnet.initialize()
    resnet(nd.zeros((1, 3, 32, 32)))
    return {"seed-mlp": [p.shape for p in mlp.collect_params().values()],
            "resnet18_v1": [p.shape for p in resnet.collect_params().values()],
            "400-tiny": [(64,)] * 400}


def _per_parameter(opt, weights, grads, states, lrs, wds):
    for k, (w, g, s) in enumerate(zip(weights, grads, states)):
        opt._step(np, w, g, s, lrs[k], wds[k], 1)


def _flat_sgd(opt, weights, grads, flat_w, flat_g, flat_s, lr_e, wd_e, bounds):
    np.concatenate([g.ravel() for g in grads], out=flat_g)
    np.concatenate([w.ravel() for w in weights], out=flat_w)
    f = op_scalars(flat_w.dtype)
    g = flat_g * f(opt.rescale_grad)
    flat_s *= f(opt.momentum)
    flat_s -= lr_e * wd_e * flat_w
    flat_s -= lr_e * g
    flat_w += flat_s
    for w, (a, b) in zip(weights, bounds):
        w.ravel()[...] = flat_w[a:b]


def _time(run, repeats=15):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t)
    return best * 1e6


def compare(shapes):
    """Best times (us) of the per-parameter and the flat SGD-momentum update, and whether
    their weights agree bitwise after one update."""
    rng = np.random.RandomState(0)
    opt = opt_mod.create("sgd", learning_rate=0.1, momentum=0.9, wd=1e-4)
    sizes = [int(np.prod(s)) for s in shapes]
    bounds = list(zip(np.cumsum([0] + sizes[:-1]), np.cumsum(sizes)))
    weights = [rng.randn(*s).astype(np.float32) for s in shapes]
    grads = [rng.randn(*s).astype(np.float32) for s in shapes]
    lrs, wds = [0.1] * len(shapes), [1e-4] * len(shapes)
    f = op_scalars(np.float32)
    lr_e = np.concatenate([np.full(n, f(lr), np.float32) for n, lr in zip(sizes, lrs)])
    wd_e = np.concatenate([np.full(n, f(wd), np.float32) for n, wd in zip(sizes, wds)])
    total = sum(sizes)
    flat_w, flat_g = np.empty(total, np.float32), np.empty(total, np.float32)
    flat_s = np.zeros(total, np.float32)
    ref_w = [w.copy() for w in weights]
    ref_s = [np.zeros_like(w) for w in weights]
    _per_parameter(opt, ref_w, grads, ref_s, lrs, wds)
    _flat_sgd(opt, weights, grads, flat_w, flat_g, flat_s, lr_e, wd_e, bounds)
    same = all(np.array_equal(a, b) for a, b in zip(ref_w, weights))
    per = _time(lambda: _per_parameter(opt, ref_w, grads, ref_s, lrs, wds))
    flat = _time(lambda: _flat_sgd(opt, weights, grads, flat_w, flat_g, flat_s, lr_e, wd_e,
                                   bounds))
    return per, flat, same


def main():
    for name, shapes in _workloads().items():
        per, flat, same = compare(shapes)
        print(f"{name:12s} {len(shapes):4d} tensors  per-parameter {per:10.1f} us  "
              f"flat {flat:10.1f} us  flat/per {flat / per:5.2f}  bitwise equal: {same}")


if __name__ == "__main__":
    main()
