"""A hybridized block under ``autograd.record()`` is one tape node: its forward graph also
returns the values its backward needs, and its backward is itself a compiled graph (the
symbolic gradient of the traced graph), built once per (signature, set of tracked inputs).

Example:
    >>> import hybridgpu as mx
    >>> net = mx.gluon.nn.Dense(2, in_units=3)
    >>> net.initialize(); net.hybridize()
    >>> x = mx.nd.ones((1, 3))
    >>> with mx.autograd.record():
    ...     y = net(x).sum()
    >>> y.backward()
    >>> net.bias.grad().asnumpy().tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from .. import modes, random_state, tape
from ..compiler import compile_graph
from ..graph import infer_shapes, infer_types
from ..ndarray import NDArray
from ..symbol.gradient import build_gradient, plan_backward

__all__ = ["run_recorded"]


class _Plan:
    """Compiled forward-with-saves and backward graphs of one trace for one ``wrt`` set."""

    def __init__(self, trace, wrt, ctx, is_train):
        graph = trace.graph
        shapes = {n.name: graph.shapes.get((i, 0)) for i, n in enumerate(graph.nodes)
                  if n.is_variable}
        dtypes = {n.name: graph.dtypes.get((i, 0)) for i, n in enumerate(graph.nodes)
                  if n.is_variable}
        plan = plan_backward(build_gradient(trace.symbol, wrt, shapes=shapes, dtypes=dtypes))
        self.plan = plan
        self.wrt = wrt
        _annotate(plan, shapes, dtypes)  # so the compiler can fuse and plan both graphs
        self.forward = compile_graph(plan.forward, ctx, is_train)
        self.backward = compile_graph(plan.backward, ctx, is_train)


def _annotate(plan, shapes, dtypes):
    """Infer shapes and dtypes of the forward-with-saves graph from the trace's variables,
    then of the backward graph from those (saved values and head gradients take the shapes
    of the forward values they stand for)."""
    known = {k: v for k, v in shapes.items() if v is not None}
    types = {k: v for k, v in dtypes.items() if v is not None}
    infer_types(plan.forward, types)
    infer_shapes(plan.forward, known)
    outs = plan.forward.outputs
    values = [plan.forward.key(e) for e in outs]
    names = plan.head_names[:plan.num_outputs] + plan.saved_names
    for name, key in zip(names, values):
        if plan.forward.shapes.get(key) is not None:
            known[name] = plan.forward.shapes[key]
        if plan.forward.dtypes.get(key) is not None:
            types[name] = plan.forward.dtypes[key]
    infer_types(plan.backward, types)
    infer_shapes(plan.backward, known)


class _TracedGradient:
    """The tape entry's op: runs the backward graph with this call's saved values."""

    def __init__(self, block, plan, values, ctx):
        self.name = f"{type(block).__name__} {block.name!r} (hybridized)"
        self.plan, self.values, self.ctx = plan, values, ctx

    def grad(self, F, ins, outs, gouts):
        p = self.plan.plan
        values = dict(self.values)
        for i in p.needed_heads:
            values[p.head_names[i]] = gouts[i].as_in_context(self.ctx)._data
        grads = self.plan.backward(values, rng=random_state.generator(self.ctx))
        return [NDArray(g, self.ctx) for g in grads]


def _plan_for(trace, wrt, ctx, is_train):
    plans = trace.__dict__.setdefault("backward_plans", {})
    key = (tuple(wrt), is_train)
    if key not in plans:
        plans[key] = _Plan(trace, list(wrt), ctx, is_train)
    return plans[key]


def run_recorded(block, trace, flat, ctx):
    """Run ``trace`` on ``flat`` inputs and record it as one tape node; returns the flat
    output NDArrays, or None when nothing is tracked (the caller replays normally)."""
    arrays = dict(zip(trace.input_names, flat))
    arrays.update({name: param.data(ctx) for name, param in trace.params})
    tracked = {n: a for n, a in arrays.items() if a._ag is not None and (
        a._ag.node is not None or a._ag.grad_req != "null")}
    if not tracked:
        return None
    wrt = [n for n in arrays if n in tracked]
    is_train = modes.is_training()
    plan = _plan_for(trace, wrt, ctx, is_train)
    values = {n: a._data for n, a in arrays.items()}
    results = plan.forward(values, rng=random_state.generator(ctx))
    count = plan.plan.num_outputs
    values.update(zip(plan.plan.saved_names, results[count:]))
    outputs = [NDArray(r, ctx) for r in results[:count]]
    tape.record(_TracedGradient(block, plan, values, ctx), {}, [arrays[n] for n in wrt], outputs)
    return outputs
