"""Contributed ops (``_contrib_*`` in MXNet), as ``mx.nd.contrib``."""

from .register import populate

populate(globals(), "contrib")


# MXNet's list-taking forms of the multi-weight AdamW ops (GluonNLP's BERTAdam calls them)
def _multi_adamw(op_name, groups, rescale_grad, lrs, wds, etas, out, size, kwargs):
    from .. import ndarray as nd
    from ..ndarray import NDArray

    weights = groups[0]
    size = size or len(weights)
    if not isinstance(rescale_grad, NDArray):
        rescale_grad = nd.full((1,), rescale_grad, ctx=weights[0].context)
    flat = [array for per_weight in zip(*groups) for array in per_weight]
    op = getattr(nd._internal, op_name)
    return op(*flat, rescale_grad, num_weights=size, lrs=lrs, wds=wds, etas=etas, out=out,
              **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """AdamW steps of several weights at once (``_multi_adamw_update`` over lists).

    Example:
        >>> import hybridgpu as mx
        >>> w, g = mx.nd.ones((2,)), mx.nd.ones((2,))
        >>> m, v = mx.nd.zeros((2,)), mx.nd.zeros((2,))
        >>> _ = multi_adamw_update([w], [g], [m], [v], 1.0, lrs=[0.1], wds=[0.0], etas=[1.0],
        ...                        out=[w])
        >>> w.asnumpy().round(3).tolist()
        [0.684, 0.684]
    """
    return _multi_adamw("_multi_adamw_update", (weights, grads, mean, var), rescale_grad,
                        lrs, wds, etas, out, size, kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """AdamW steps of several low-precision weights with float32 master copies."""
    return _multi_adamw("_multi_mp_adamw_update", (weights, grads, mean, var, weights32),
                        rescale_grad, lrs, wds, etas, out, size, kwargs)
