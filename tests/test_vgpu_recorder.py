"""``vgpu.recorder`` keeps one record per CuPy call shape made from outside the stand-in (the
calls the real CuPy would get), with the Python types the checker needs, and every kernel
source with its options; ``HYBRIDGPU_VGPU_RECORD`` writes them at exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from hybridgpu import vgpu
from hybridgpu.vgpu import recorder

SRC = 'extern "C" __global__ void k(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = n; }'


def _mine(name):
    return [c for c in recorder.calls() if c["name"] == name]


def test_one_record_per_call_shape_with_argument_types():
    xp = vgpu.module(2)
    recorder.clear()
    with recorder.recording(xp):
        xp.zeros((2, 3), dtype="float32")
        xp.zeros((4, 5), dtype="float32")  # the same shape of call: kept once
        xp.zeros(7, np.float64)
        y = xp.empty((8,), dtype=xp.float32)
        y.astype(np.dtype("float16"), copy=False)
        xp.exp(y)
    xp.ones(3)  # outside the block: not recorded
    zeros = _mine("cupy.zeros")
    assert [(z["args"], z["kwargs"]) for z in zeros] == [
        (["int", "type"], {}), (["tuple[int]"], {"dtype": "str"})]
    assert _mine("cupy.ndarray.astype")[0]["args"] == ["numpy.dtype"]
    assert _mine("cupy.ndarray.astype")[0]["kwargs"] == {"copy": "bool"}
    assert _mine("cupy.exp")[0]["args"] == ["cupy.ndarray"]
    assert not _mine("cupy.ones")
    assert zeros[0]["site"].startswith("test_vgpu_recorder.py:")


def test_kernel_launches_and_sources_are_recorded_but_not_the_stand_ins_own_calls():
    xp = vgpu.module(2)
    recorder.clear()
    with recorder.recording(xp):
        module = xp.RawModule(code=SRC, options=("-std=c++17", "--fmad=false"))
        kernel = module.get_function("k")
        y = xp.zeros(32, dtype=xp.float32)
        kernel((1,), (32,), (y, np.int32(5)))
        xp.cuda.Stream(non_blocking=True)
    launch = _mine("cupy.RawKernel.__call__")
    assert launch[0]["args"] == ["tuple[int]", "tuple[int]", "tuple[cupy.ndarray|numpy.int32]"]
    assert _mine("cupy.RawModule")[0]["kwargs"] == {"code": "str", "options": "tuple[str]"}
    assert _mine("cupy.cuda.Stream")[0]["kwargs"] == {"non_blocking": "bool"}
    # get_function builds a RawKernel inside the stand-in: that is not a call CuPy gets
    assert not _mine("cupy.RawKernel")
    assert recorder.sources() == [{"code": SRC, "options": ["-std=c++17", "--fmad=false"],
                                   "site": recorder.sources()[0]["site"]}]


def test_the_environment_variable_writes_calls_and_sources_at_exit(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = ("import hybridgpu as mx\n"
              "x = mx.nd.ones((4, 4), ctx=mx.gpu(0))\n"
              "net = mx.gluon.nn.Dense(3, in_units=4)\n"
              "net.initialize(ctx=mx.gpu(0)); net.hybridize()\n"
              "net(x); net(x); print(net(x).asnumpy().shape)\n")
    env = {**os.environ, "HYBRIDGPU_VIRTUAL_GPU": "1", "HYBRIDGPU_VGPU_RECORD": str(tmp_path),
           "PYTHONPATH": os.path.join(root, "src")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    (calls,) = tmp_path.glob("cupy-calls-*.json")
    (sources,) = tmp_path.glob("cupy-sources-*.json")
    names = {c["name"] for c in json.loads(calls.read_text())}
    assert {"cupy.RawModule", "cupy.RawKernel.__call__", "cupy.cuda.Graph.launch"} <= names
    assert all("__global__" in s["code"] for s in json.loads(sources.read_text()))
