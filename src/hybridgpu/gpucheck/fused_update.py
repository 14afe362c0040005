"""The ``fused_update`` gpucheck target: one SGD-momentum update of resnet18_v1's 62 trainable
tensors (what a ``Trainer.step`` runs after the gradients are summed), through the fused
multi-tensor kernel (one launch) beside the per-parameter path (7 CuPy launches a tensor).

Both modes first update copies of the same weights once and must agree within rtol 1e-6, so
no number comes from a wrong result. Reported as fused / per-parameter (target: below 1).

Example:
    >>> import hybridgpu as mx
    >>> row = fused_update(mx.cpu(), True, {"repeat": 2, "warmup": 1, "min_seconds": 0.001},
    ...                    None)
    >>> row["tensors"], row["fused"]["median_us"] > 0
    (62, True)
"""

from __future__ import annotations

import numpy as np

from .. import nd
from .. import optimizer as opt_mod
from ..timing import time_calls

__all__ = ["fused_update"]


def _trainable_weights(ctx, quick):
    from ..gluon.model_zoo import vision

    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    size = 32 if quick else 224
    net(nd.zeros((1, 3, size, size), ctx=ctx))
    return [p.data(ctx) for p in net.collect_params().values() if p.grad_req != "null"]


def _updater(fused_updates):
    opt = opt_mod.create("sgd", learning_rate=1e-3, momentum=0.9, wd=1e-4)
    opt.fused_updates = fused_updates
    return opt_mod.get_updater(opt)


def fused_update(ctx, quick, opts, torch):
    """The target's row: ``per_parameter`` and ``fused`` timings of one update (``torch`` is
    unused: PyTorch's fused optimizers are another library's rules)."""
    weights = _trainable_weights(ctx, quick)
    rng = np.random.RandomState(0)
    grads = [nd.array(rng.randn(*w.shape) * 1e-2, ctx=ctx) for w in weights]
    indices = list(range(len(weights)))
    row = {"name": "fused_update", "tensors": len(weights),
           "elements": int(sum(w.size for w in weights))}
    after_one = {}
    for mode in ("per_parameter", "fused"):
        copies = [w.copy() for w in weights]
        update = _updater(mode == "fused")
        update(indices, grads, copies)
        after_one[mode] = [w.asnumpy() for w in copies]
        row[mode] = time_calls(lambda u=update, c=copies: u(indices, grads, c), ctx.xp, **opts)
    for k, (a, b) in enumerate(zip(after_one["fused"], after_one["per_parameter"])):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0,
                                   err_msg=f"fused_update: tensor {k} differs")
    return row
