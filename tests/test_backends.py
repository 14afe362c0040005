"""Backends are registered by device type, plan memory through ``plan_memory`` with their own
policy, and run exactly that plan: the cpu program allocates the plan's buffers once and,
per call, the plan's fresh outputs (and what compute fallbacks allocate), nothing else."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.compiler import compile_graph, pipeline
from hybridgpu.compiler.passes import MemoryPlan, plan_memory
from hybridgpu.compiler.passes.plan_memory import MemoryPolicy, NodeMemory
from hybridgpu.executor import CpuExecutable
from hybridgpu.gluon import nn
from hybridgpu.graph import Graph, evaluate, infer_shapes, infer_types


def _mlp(batch):
    from hybridgpu.bench import seed_mlp

    net = seed_mlp()
    net.initialize()
    x = np.random.RandomState(0).randn(batch, 512).astype(np.float32)
    net(mx.nd.array(x))
    return net, x


def _traced(net, x):
    net.hybridize()
    net(mx.nd.array(x))
    trace = net._last_trace
    values = {name: p.data().asnumpy() for name, p in trace.params}
    values["data"] = x
    return trace, values


def _conv_net():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("sigmoid"),
            nn.Conv2D(4, 3, strides=2), nn.Flatten(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    x = np.random.RandomState(1).rand(2, 3, 8, 8).astype(np.float32)
    net(mx.nd.array(x))
    return net, x


def _owned_bytes(namespace):
    """Bytes of the arrays a program instance owns at module level (its buffers)."""
    return sum(v.nbytes for v in namespace.values()
               if isinstance(v, np.ndarray) and v.base is None)


def _bytes_allocated_by_a_call(exe, values):
    """Bytes of NumPy data a call allocates and hands back (alive after the call)."""
    exe(values)
    domain = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(domain)
        outputs = exe(values)
        after = tracemalloc.take_snapshot().filter_traces(domain)
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    return grown, outputs


@pytest.mark.parametrize("make", [lambda: _mlp(1), lambda: _mlp(64), _conv_net],
                         ids=["mlp-batch1", "mlp-batch64", "conv-net"])
def test_the_program_allocates_what_the_plan_says(make):
    net, x = make()
    trace, values = _traced(net, x)
    exe = trace.executable
    assert isinstance(exe, CpuExecutable) and isinstance(exe.plan, MemoryPlan)
    plan = exe.plan
    instance = dict(exe.program.namespace)
    exec(exe._code, instance)
    assert _owned_bytes(instance) == plan.buffer_bytes == exe.program.buffer_bytes
    assert f"{len(plan.buffers)} buffer" in exe.source.splitlines()[1]
    grown, outputs = _bytes_allocated_by_a_call(exe, values)
    fresh = sum(o.nbytes for o in outputs)
    assert fresh == plan.planned_bytes - plan.buffer_bytes
    if not exe.program.fallback:  # every node writes into the plan's memory
        assert grown == fresh
    np.testing.assert_allclose(outputs[0], evaluate(trace.graph, values, np)[0], rtol=1e-5,
                               atol=1e-6)


def test_plan_knows_views_and_keeps_their_buffer_alive():
    x = mx.sym.var("x")
    a = mx.sym.exp(x)
    flat = mx.sym.Reshape(a, shape=(-1,))       # a view of a's buffer
    b = mx.sym.sqrt(mx.sym.abs(x)) + 1          # would reuse a's buffer without the view
    out = mx.sym.broadcast_add(flat, mx.sym.Reshape(b, shape=(-1,)))
    graph = Graph(out._outputs)
    infer_types(graph, {"x": "float32"})
    infer_shapes(graph, {"x": (2, 3)})
    exe = compile_graph(graph, mx.cpu(), False, {"passes": ()})
    plan = exe.plan
    view = graph.key(flat._outputs[0])
    a_key = graph.key(a._outputs[0])
    assert plan.aliases[view] == {view, a_key} and view not in plan.storage
    assert plan.ends[a_key] >= graph.key(out._outputs[0])[0]
    plan.check()
    values = {"x": np.random.RandomState(0).randn(2, 3).astype(np.float32)}
    np.testing.assert_array_equal(exe(values)[0], evaluate(graph, values, np)[0])


class _Arena(MemoryPolicy):
    outputs = "arena"


def test_arena_outputs_are_planned_never_reused_and_copied_out():
    x = mx.sym.var("x")
    y = mx.sym.relu(x) * 2
    g = Graph(mx.sym.Group([y, mx.sym.exp(y), x])._outputs)
    infer_types(g, {"x": "float32"})
    infer_shapes(g, {"x": (8,)})
    plan = plan_memory(g, policy=_Arena())
    outs = [g.key(e) for e in g.outputs]
    assert not plan.fresh and plan.output_copies == [0, 1, 2]
    assert all(k in plan.storage for k in outs[:2])
    assert plan.ends[outs[0]] == len(g.nodes) and plan.inplace.get(outs[1]) != outs[0]
    plan.check()


class _Recorder:
    """A backend that records what the pipeline hands it and interprets the graph."""

    def __init__(self):
        self.calls, self.policies = [], []

    def build(self, graph, plan, ctx, is_train, flags):
        self.calls.append((plan, dict(flags)))
        return pipeline.InterpretedExecutable(graph, ctx, is_train, plan)

    def policy(self, graph, is_train, flags):
        policy = MemoryPolicy()
        self.policies.append(policy)
        return policy


def test_backends_are_looked_up_by_device_type_and_get_the_hybridize_flags(monkeypatch):
    monkeypatch.setattr(pipeline, "_BACKENDS", dict(pipeline._BACKENDS))
    assert pipeline.backend_for(mx.cpu()).build is not None
    assert pipeline.backend_for("cpu_pinned") is pipeline.backend_for("cpu")
    assert pipeline.backend_for("cpu", {"executor": "interpreter"}) is pipeline.INTERPRETER
    recorder = _Recorder()
    pipeline.register_backend("cpu", recorder.build, recorder.policy)
    net, x = _mlp(2)
    want = net(mx.nd.array(x)).asnumpy()
    net.hybridize(static_alloc=True, static_shape=True)
    got = net(mx.nd.array(x)).asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    (plan, flags), = recorder.calls
    hybridize_flags = ("static_alloc", "static_shape", "cuda_graph", "static_output")
    assert {k: flags[k] for k in hybridize_flags} == {
        "static_alloc": True, "static_shape": True, "cuda_graph": True, "static_output": False}
    assert flags["block"] == net.name and flags["data_inputs"] == ("data",)
    assert plan.policy is recorder.policies[0]


def test_the_cpu_backend_keeps_the_flags_it_was_built_with():
    net, x = _mlp(1)
    net.hybridize(static_alloc=True)
    net(mx.nd.array(x))
    exe = net._last_trace.executable
    assert isinstance(exe, CpuExecutable) and exe.flags["static_alloc"] is True
    data = mx.nd.array(x)
    data.attach_grad()
    with mx.autograd.record():  # the forward-with-saves and backward graphs get them too
        net(data).sum().backward()
    (compiled,) = net._last_trace.backward_plans.values()
    assert compiled.forward.flags["static_alloc"] and compiled.backward.flags["static_alloc"]


def test_a_node_memory_policy_can_refuse_in_place():
    class NoInPlace(MemoryPolicy):
        def node(self, graph, i):
            return NodeMemory("out")

    x = mx.sym.var("x")
    g = Graph(mx.sym.sum(mx.sym.exp(mx.sym.relu(x)))._outputs)
    infer_types(g, {"x": "float32"})
    infer_shapes(g, {"x": (16,)})
    assert plan_memory(g).inplace and not plan_memory(g, policy=NoInPlace()).inplace


def test_private_buffers_are_planned_apart_and_counted():
    class Private(MemoryPolicy):
        def node(self, graph, i):
            return NodeMemory("out", (), [((4,), "float32")], [((8,), "float64")])

    x = mx.sym.var("x")
    g = Graph(mx.sym.sum(mx.sym.exp(mx.sym.relu(x)))._outputs)
    infer_types(g, {"x": "float32"})
    infer_shapes(g, {"x": (16,)})
    plain, plan = plan_memory(g), plan_memory(g, policy=Private())
    assert plan.private_bytes == 3 * 64 and set(plan.private) == {1, 2, 3}
    assert plan.buffer_bytes == sum(plan.buffers) + 3 * 64
    assert all(len(bufs) == 1 for bufs in plan.scratch.values())
    assert plan.naive_bytes == plain.naive_bytes + 3 * (64 + 16)
    plan.check()
