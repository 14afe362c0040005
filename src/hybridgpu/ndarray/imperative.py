"""The one eager dispatch point: ``invoke(op, inputs, attrs)`` runs an OpDef on NDArrays.

Every ``nd.*`` function and NDArray operator comes here. It checks that the inputs share one
context, runs ``op.compute`` with that context's array module, wraps the outputs, writes into
``out=`` when given, and hands the call to ``tape.record`` while recording.

Example:
    >>> from hybridgpu import nd, ops
    >>> x = nd.array([-1.0, 2.0])
    >>> invoke(ops.get("relu"), [x], {})
    <BLANKLINE>
    [0. 2.]
    <NDArray 2 @cpu(0)>
"""

from __future__ import annotations

from .. import modes, random_state, tape
from ..base import MXNetError
from ..context import current_context
from .ndarray import NDArray

__all__ = ["invoke"]


def _common_context(op, inputs):
    """The inputs' context; cpu, cpu_pinned and cpu_shared count as one host (as in MXNet),
    the result going to the first input's."""
    ctx = inputs[0]._ctx
    for i in range(1, len(inputs)):
        other = inputs[i]._ctx
        if other is not ctx and other != ctx and (ctx.is_gpu or other.is_gpu):
            raise MXNetError(
                f"{op.name}: inputs are on different contexts: input 0 is on {ctx}, input {i} "
                f"is on {inputs[i]._ctx}; move them with x.as_in_context(ctx) first")
    return ctx


def _compute_error(op, arrays, attrs, err):
    shapes = [tuple(a.shape) for a in arrays]
    given = {k: v for k, v in attrs.items() if v is not None}
    return MXNetError(f"{op.name}: {err} (input shapes {shapes}, attributes {given})")


def _run_compute(op, ctx, arrays, attrs):
    extra = {}
    if op.random:
        extra["rng"] = random_state.generator(ctx)
    if op.mode_dependent:
        extra["is_train"] = modes.is_training()
    try:
        if ctx.is_gpu:
            with ctx.scope():
                return op.compute(ctx.xp, *arrays, **attrs, **extra)
        return op.compute(ctx._xp, *arrays, **attrs, **extra)
    except MXNetError:
        raise
    except (ValueError, TypeError, IndexError, ZeroDivisionError) as err:
        raise _compute_error(op, arrays, attrs, err) from None


def invoke(op, inputs, attrs, out=None, ctx=None):
    """Run ``op`` eagerly on NDArrays ``inputs`` with parsed ``attrs``.

    Returns one NDArray, or a list when the op has several visible outputs. ``ctx`` picks the
    device of ops without inputs (creation ops); it defaults to the current context.
    """
    n = len(inputs)
    if n:
        ctx = inputs[0]._ctx
        if n > 1 and (n > 2 or inputs[1]._ctx is not ctx):
            ctx = _common_context(op, inputs)
    elif ctx is None:
        ctx = current_context()
    if op.plain and not ctx.is_gpu:  # the hot path: cpu, no rng, no mode
        try:
            if n == 2 and not attrs:
                result = op.compute(ctx._xp, inputs[0]._data, inputs[1]._data)
            elif n == 1:
                result = op.compute(ctx._xp, inputs[0]._data, **attrs)
            else:
                result = op.compute(ctx._xp, *[x._data for x in inputs], **attrs)
        except MXNetError:
            raise
        except (ValueError, TypeError, IndexError, ZeroDivisionError) as err:
            raise _compute_error(op, [x._data for x in inputs], attrs, err) from None
    else:
        result = _run_compute(op, ctx, [x._data for x in inputs], attrs)
    if type(result) is not tuple:
        output = NDArray(result, ctx)
        if modes.is_recording():
            tape.record(op, attrs, inputs, [output])
        return output if out is None else _write_out(op, [output], out)[0]
    outputs = [NDArray(r, ctx) for r in result]
    if modes.is_recording():
        tape.record(op, attrs, inputs, outputs)
    visible = outputs[:op.num_visible_outputs(attrs)]
    if out is not None:
        visible = _write_out(op, visible, out)
    return visible[0] if len(visible) == 1 else visible


def _write_out(op, results, out):
    outs = out if isinstance(out, (list, tuple)) else [out]
    if len(outs) != len(results):
        raise MXNetError(f"{op.name}: out= has {len(outs)} arrays, the op has "
                         f"{len(results)} outputs")
    for dst, src in zip(outs, results):
        if dst.shape != src.shape:
            raise MXNetError(f"{op.name}: out= has shape {dst.shape}, the result has "
                             f"{src.shape}")
        if dst._ctx != src._ctx:
            src = src.as_in_context(dst._ctx)
        dst._data[...] = src._data
    return list(outs)
