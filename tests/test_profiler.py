"""``mx.profiler``: per-op statistics for eager calls and for the steps of hybridized programs,
the Chrome-trace file, user annotations (Task, Frame, Event, Counter, Marker, scope), and
clear errors for bad options."""

from __future__ import annotations

import json

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.executor.cpu import CpuExecutable

profiler = mx.profiler


@pytest.fixture
def trace_file(tmp_path):
    """A clean profiler writing to a temporary file; stopped and cleared afterwards."""
    path = tmp_path / "profile.json"
    profiler.set_config(filename=str(path), aggregate_stats=True)
    profiler.dumps(reset=True)
    yield path
    profiler.set_state("stop")
    profiler.dumps(reset=True)
    profiler.dump(finished=True)


def _stats():
    return json.loads(profiler.dumps(format="json"))["Time"]


def test_eager_ops_are_counted_and_timed(trace_file):
    x = mx.nd.ones((16, 16))
    profiler.set_state("run")
    for _ in range(3):
        mx.nd.dot(x, x)
    mx.nd.relu(x)
    profiler.set_state("stop")
    mx.nd.dot(x, x)  # after stop: not counted
    stats = _stats()["operator"]
    assert stats["dot"]["Count"] == 3 and stats["relu"]["Count"] == 1
    dot = stats["dot"]
    assert 0 <= dot["Min"] <= dot["Avg"] <= dot["Max"] <= dot["Total"]
    assert "dot" in profiler.dumps() and "Total Count" in profiler.dumps()


def test_hybridized_program_is_timed_step_by_step(trace_file):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(8, activation="relu"), mx.gluon.nn.Dense(2))
    net.initialize()
    net.hybridize()
    x = mx.nd.random.uniform(shape=(3, 5))
    compiled = net(x).asnumpy()
    original_call = CpuExecutable.__call__
    profiler.set_state("run")
    profiled = net(x).asnumpy()
    profiler.set_state("stop")
    np.testing.assert_allclose(profiled, compiled, rtol=1e-6)
    stats = _stats()
    assert stats["program"]["hybridized program"]["Count"] == 1
    assert stats["operator"]["FullyConnected"]["Count"] == 2
    assert CpuExecutable.__call__ is original_call  # compiled code again after stop
    assert all(not hasattr(op.compute, "__wrapped__") for op in ops.all_ops())


def test_chrome_trace_file(trace_file):
    profiler.set_state("run")
    mx.nd.exp(mx.nd.ones((2, 2)))
    domain = profiler.Domain("train")
    with domain.new_task("step"):
        mx.nd.ones((2,))
    counter = domain.new_counter("queue", 1)
    counter += 2
    counter -= 1
    domain.new_marker("epoch end").mark("global")
    frame = profiler.Frame(domain, "frame")
    frame.start()
    frame.stop()
    profiler.set_state("stop")
    profiler.dump()
    trace = json.loads(trace_file.read_text())
    events = trace["traceEvents"]
    ranges = [e for e in events if e["ph"] == "X"]
    assert {"exp", "step", "frame"} <= {e["name"] for e in ranges}
    assert all(e["dur"] >= 0 and {"ts", "pid", "tid", "cat"} <= set(e) for e in ranges)
    assert [e["args"]["queue"] for e in events if e["ph"] == "C"] == [1, 3, 2]
    marks = [e for e in events if e["ph"] == "i"]
    assert marks[0]["name"] == "epoch end" and marks[0]["s"] == "g"
    assert _stats()["train"]["step"]["Count"] == 1
    profiler.dump()  # finished=True dropped the written events
    assert [e["ph"] for e in json.loads(trace_file.read_text())["traceEvents"]] == ["M"]


def test_pause_resume_and_scope(trace_file):
    x = mx.nd.ones((2,))
    profiler.set_state("run")
    profiler.pause()
    mx.nd.relu(x)
    profiler.resume()
    with profiler.scope("outer:"):
        mx.nd.relu(x)
        with profiler.scope("inner:", append_mode=True):
            mx.nd.sigmoid(x)
    profiler.set_state("stop")
    stats = _stats()["operator"]
    assert "relu" not in stats
    assert stats["outer:relu"]["Count"] == 1 and stats["outer:inner:sigmoid"]["Count"] == 1


def test_sorting_and_reset(trace_file):
    x = mx.nd.ones((2,))
    profiler.set_state("run")
    for _ in range(3):
        mx.nd.relu(x)
    mx.nd.sigmoid(x)
    profiler.set_state("stop")
    by_count = list(json.loads(profiler.dumps(format="json", sort_by="count",
                                              ascending=True))["Time"]["operator"])
    assert by_count == ["sigmoid", "relu"]
    profiler.dumps(reset=True)
    assert _stats() == {}


def test_bad_input_is_refused():
    with pytest.raises(MXNetError, match="unknown option 'file_name'"):
        profiler.set_config(file_name="x.json")
    with pytest.raises(ValueError, match="'run' or 'stop'"):
        profiler.set_state("start")
    with pytest.raises(ValueError, match="'table' or 'json'"):
        profiler.dumps(format="csv")
    with pytest.raises(MXNetError, match="stop\\(\\) before start\\(\\)"):
        profiler.Event("e").stop()
    with pytest.raises(ValueError, match="scope must be one of"):
        profiler.Marker(profiler.Domain("d"), "m").mark("galaxy")
