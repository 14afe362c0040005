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
        >>> [round(float(v), 3) for v in w.asnumpy()]
        [0.684, 0.684]
    """
    return _multi_adamw("_multi_adamw_update", (weights, grads, mean, var), rescale_grad,
                        lrs, wds, etas, out, size, kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """AdamW steps of several low-precision weights with float32 master copies."""
    return _multi_adamw("_multi_mp_adamw_update", (weights, grads, mean, var, weights32),
                        rescale_grad, lrs, wds, etas, out, size, kwargs)


# MXNet's imperative control flow (Python loops over NDArrays, as MXNet's nd.contrib has them;
# GluonNLP's ELMo encoder and samplers call them). The symbolic forms (subgraph ops) are not
# ported: hybridizing a block that calls F.contrib.foreach raises NotPortedError.

def _flat(value, what):
    """(list of NDArrays, structure) of an NDArray or a nested list/tuple of them."""
    from .ndarray import NDArray

    if isinstance(value, NDArray):
        return [value], None
    if isinstance(value, (list, tuple)):
        flat, fmt = [], []
        for item in value:
            sub, sub_fmt = _flat(item, what)
            flat.extend(sub)
            fmt.append((len(sub), sub_fmt))
        return flat, fmt
    raise TypeError(f"{what} must be an NDArray or a (nested) list of NDArrays, got "
                    f"{type(value).__name__}")


def _unflat(flat, fmt):
    if fmt is None:
        return flat[0]
    out, start = [], 0
    for count, sub_fmt in fmt:
        out.append(_unflat(flat[start:start + count], sub_fmt))
        start += count
    return out


def foreach(body, data, init_states):
    """``outputs, states = body(data[i], states)`` for every i along axis 0 of ``data`` (an
    NDArray or a list of them); returns the stacked outputs and the final states.

    Example:
        >>> import hybridgpu as mx
        >>> outs, total = foreach(lambda x, s: (x * 2, s + x), mx.nd.arange(3), mx.nd.zeros(1))
        >>> outs.asnumpy().ravel().tolist(), total.asscalar().item()
        ([0.0, 2.0, 4.0], 3.0)
    """
    from .. import ndarray as nd

    flat_data, data_fmt = _flat(data, "foreach: data")
    steps = flat_data[0].shape[0]
    states, outputs, out_fmt = init_states, [], None
    for i in range(steps):
        out, states = body(_unflat([d[i] for d in flat_data], data_fmt), states)
        flat_out, out_fmt = _flat(out, "foreach: the body's outputs")
        outputs.append(flat_out)
    stacked = [nd.stack(*items) for items in zip(*outputs)]
    return (_unflat(stacked, out_fmt) if outputs else []), states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """``step_output, loop_vars = func(*loop_vars)`` while ``cond(*loop_vars)`` and fewer than
    ``max_iterations`` steps; returns the step outputs stacked and padded to
    ``max_iterations`` rows (MXNet leaves the padding uninitialized; here it is 0), and the
    final loop variables.

    Example:
        >>> import hybridgpu as mx
        >>> outs, (i,) = while_loop(lambda i: i < 3, lambda i: (i * 10, [i + 1]),
        ...                         [mx.nd.zeros(1)], max_iterations=5)
        >>> outs.asnumpy().ravel().tolist(), i.asscalar().item()
        ([0.0, 10.0, 20.0, 0.0, 0.0], 3.0)
    """
    from .. import ndarray as nd

    if max_iterations is None:
        raise ValueError("while_loop: max_iterations should be specified")
    single = not isinstance(loop_vars, (list, tuple))
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ValueError("while_loop: loop_vars should contain at least one element")
    steps, outputs, out_fmt = 0, [], None
    while steps < int(max_iterations) and bool(_scalar(cond(*loop_vars))):
        step_output, new_vars = func(*loop_vars)
        new_vars = [new_vars] if not isinstance(new_vars, (list, tuple)) else list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError(f"while_loop: func returned {len(new_vars)} loop variables, "
                             f"expected {len(loop_vars)}")
        flat, out_fmt = _flat(step_output if step_output is not None else [], "step output")
        outputs.append(flat)
        loop_vars, steps = new_vars, steps + 1
    stacked = []
    for items in zip(*outputs):
        rows = [x.expand_dims(0) for x in items]
        if steps < int(max_iterations):
            rows.append(nd.zeros((int(max_iterations) - steps, *items[0].shape),
                                 ctx=items[0].context, dtype=items[0].dtype))
        stacked.append(nd.concat(*rows, dim=0))
    if outputs and stacked:
        stacked = _unflat(stacked, out_fmt)
    return stacked, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """``then_func()`` if ``pred`` (a one-element NDArray or a number) is true, else
    ``else_func()``.

    Example:
        >>> import hybridgpu as mx
        >>> cond(mx.nd.array([0]), lambda: "then", lambda: "else")
        'else'
    """
    return then_func() if bool(_scalar(pred)) else else_func()


def _scalar(value):
    from .ndarray import NDArray

    if isinstance(value, NDArray):
        if value.size != 1:
            raise ValueError(f"a loop condition must have one element, got shape {value.shape}")
        return value.asscalar()
    return value
