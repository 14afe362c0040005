"""The GPU path against the real CuPy (cupy-cuda13x 14.2 imports without a GPU or a driver):

* every CuPy call the GPU runtime makes on the virtual GPU (recorded by ``vgpu.recorder``
  while gpucheck's smoke stage runs: GEMM, fused kernel, capture and replay, TrainStep, NCCL
  across two devices; and the calls recorded over gpu test files, in
  tests/fixtures/cupy_calls.json) binds against the real CuPy object, with Cython-typed
  parameters given types Cython accepts (``vgpu.cupy_signatures``);
* the checker itself rejects what the real CuPy rejects (an int grid, a list of options...);
* every kernel source the smoke stage generates compiles through CuPy's own RawModule
  compile path for sm_90 (``vgpu.nvrtc_check``);
* what else runs without a driver: ``cupy.cuda.runtime``, NVRTC located by
  ``cuda.pathfinder`` and CuPy, hybridgpu's clear error for ``mx.gpu(0)``.

The real CuPy runs in subprocesses, away from the virtual GPU's ``cupyx`` stand-in.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from hybridgpu.vgpu import nvrtc_check

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "cupy_calls.json")


def _has_cupy():
    try:
        return importlib.util.find_spec("cupy") is not None
    except ValueError:  # a module object without a spec in sys.modules
        return False


pytestmark = pytest.mark.skipif(not _has_cupy(), reason="needs the real cupy-cuda13x "
                                "(pip install -e '.[test]'; it imports without a GPU)")


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("HYBRIDGPU_VGPU_RECORD", "HYBRIDGPU_VIRTUAL_GPU")}
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _check(paths):
    """Problems of the recorded calls at ``paths``, checked in a fresh process."""
    done = subprocess.run([sys.executable, "-m", "hybridgpu.vgpu.cupy_signatures", "--json",
                           *map(str, paths)], capture_output=True, text=True, timeout=120,
                          env=_env(), cwd=ROOT)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# Calls the real CuPy refuses that are made by code outside these files, reported to its
# owners: (name, positional types) -> what is wrong.
KNOWN = {
    ("cupy.cuda.nccl.NcclError", ("int", "str")):
        "vgpu/nccl.py's NcclError(status, detail) takes a detail CuPy's NcclError(int status) "
        "refuses; tests/test_multidevice_gpu.py passes one",
}


def _real(problems):
    """The problems not in KNOWN ('unchecked' ones count: every call must be checkable)."""
    return [p for p in problems if (p["name"], tuple(p["args"])) not in KNOWN]


@pytest.fixture(scope="module")
def smoke_record(tmp_path_factory):
    """gpucheck's smoke stage on two virtual GPUs, recording its CuPy calls and sources."""
    folder = tmp_path_factory.mktemp("smoke")
    done = subprocess.run([sys.executable, "-m", "hybridgpu", "gpucheck", "--smoke", "--out",
                           str(folder / "out")], capture_output=True, text=True, timeout=300,
                          env=_env(HYBRIDGPU_VIRTUAL_GPU="2",
                                   HYBRIDGPU_VGPU_RECORD=str(folder / "calls")), cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "calls"


def test_smoke_stage_calls_bind_against_the_real_cupy(smoke_record):
    result = _check([smoke_record])
    recorded = json.loads(next(smoke_record.glob("cupy-calls-*")).read_text())
    names = {p["name"] for p in recorded}
    assert {"cupy.RawModule", "cupy.RawModule.get_function", "cupy.RawKernel.__call__",
            "cupy.cuda.Stream", "cupy.cuda.Stream.begin_capture", "cupy.cuda.Graph.launch",
            "cupy.cuda.runtime.memcpyAsync", "cupy.cuda.Event.record"} <= names, names
    assert result["checked"] >= 30
    assert not _real(result["problems"]), json.dumps(_real(result["problems"]), indent=1)


def test_gpu_test_files_calls_bind_against_the_real_cupy():
    """The calls recorded over the gpu test files (tests/fixtures/make_cupy_calls.py)."""
    with open(FIXTURE, encoding="utf-8") as f:
        recorded = json.load(f)
    assert len(recorded) > 100
    result = _check([FIXTURE])
    assert not _real(result["problems"]), json.dumps(_real(result["problems"]), indent=1)


# What the real CuPy rejects must be rejected by the checker (each case: a recorded call
# and a piece of the problem it must report).
BAD = {
    "grid-int": ({"name": "cupy.RawKernel.__call__", "args": ["int", "tuple[int]",
                                                              "tuple[cupy.ndarray]"],
                  "kwargs": {}}, "'grid' is declared 'tuple'"),
    "block-list": ({"name": "cupy.RawKernel.__call__", "args": ["tuple[int]", "list[int]",
                                                                "tuple[]"], "kwargs": {}},
                   "'block' is declared 'tuple'"),
    "shared-mem-float": ({"name": "cupy.RawKernel.__call__",
                          "args": ["tuple[int]", "tuple[int]", "tuple[]"],
                          "kwargs": {"shared_mem": "float"}}, "'shared_mem' is declared"),
    "kernel-arg-host-array": ({"name": "cupy.RawKernel.__call__",
                               "args": ["tuple[int]", "tuple[int]",
                                        "tuple[cupy.ndarray|numpy.ndarray]"], "kwargs": {}},
                              "holds numpy.ndarray"),
    "kernel-arg-list": ({"name": "cupy.RawKernel.__call__",
                         "args": ["tuple[int]", "tuple[int]", "tuple[list[int]]"],
                         "kwargs": {}}, "holds list"),
    "options-list": ({"name": "cupy.RawModule", "args": [],
                      "kwargs": {"code": "str", "options": "list[str]"}},
                     "'options' is declared 'tuple'"),
    "code-bytes": ({"name": "cupy.RawModule", "args": [], "kwargs": {"code": "bytes"}},
                   "'code' is declared 'str'"),
    "raw-module-positional-path": ({"name": "cupy.RawModule", "args": ["str", "str"],
                                    "kwargs": {}}, "does not bind"),
    "memcpy-float-size": ({"name": "cupy.cuda.runtime.memcpyAsync",
                           "args": ["int", "int", "float", "int", "int"], "kwargs": {}},
                          "'size' is declared 'size_t'"),
    "memcpy-missing-stream": ({"name": "cupy.cuda.runtime.memcpyAsync",
                               "args": ["int", "int", "int", "int"], "kwargs": {}},
                              "does not bind"),
    "memory-pointer-of-array": ({"name": "cupy.cuda.MemoryPointer",
                                 "args": ["cupy.ndarray", "int"], "kwargs": {}},
                                "'mem' is declared 'BaseMemory'"),
    "unknown-keyword": ({"name": "cupy.cuda.Stream", "args": [],
                         "kwargs": {"blocking": "bool"}}, "does not bind"),
    "not-in-cupy": ({"name": "cupy.cuda.runtime.streamBeginCaptureToGraph", "args": [],
                     "kwargs": {}}, "not in the real CuPy"),
    "astype-extra-positional": ({"name": "cupy.ndarray.astype",
                                 "args": ["str", "str", "str", "bool", "bool", "bool"],
                                 "kwargs": {}}, "does not bind"),
}
GOOD = [
    {"name": "cupy.RawKernel.__call__", "args": ["tuple[int]", "tuple[int]",
                                                 "tuple[cupy.ndarray|numpy.int32|int]"],
     "kwargs": {"shared_mem": "numpy.int64"}},
    {"name": "cupy.RawModule", "args": [], "kwargs": {"code": "str", "options": "tuple[str]",
                                                      "name_expressions": "tuple[str]"}},
    {"name": "cupy.cuda.MemoryPointer", "args": ["cupy.cuda.Memory", "int"], "kwargs": {}},
    {"name": "cupy.cuda.runtime.memcpyAsync", "args": ["int", "int", "numpy.uint64", "int",
                                                       "int"], "kwargs": {}},
    {"name": "cupy.add.reduce", "args": ["cupy.ndarray"], "kwargs": {"axis": "int"}},
]


@pytest.fixture(scope="module")
def checked_cases(tmp_path_factory):
    path = tmp_path_factory.mktemp("cases") / "cases.json"
    path.write_text(json.dumps([case for case, _ in BAD.values()] + GOOD))
    return _check([path])["problems"]


@pytest.mark.parametrize("case", sorted(BAD))
def test_the_check_rejects_what_cupy_rejects(case, checked_cases):
    record, want = BAD[case]
    mine = [p["problem"] for p in checked_cases
            if p["name"] == record["name"] and p["args"] == record["args"]
            and p["kwargs"] == record["kwargs"]]
    assert any(want in p for p in mine), f"{case}: want {want!r}, got {mine}"


def test_the_check_accepts_what_cupy_accepts(checked_cases):
    good = [json.dumps([g["name"], g["args"], g["kwargs"]]) for g in GOOD]
    wrong = [p for p in checked_cases if json.dumps([p["name"], p["args"], p["kwargs"]]) in good]
    assert not wrong, wrong


def test_forwarded_declarations_name_the_compiled_parameters():
    """RawKernel.__call__ hands its arguments to Function.__call__, a slot without a
    signature: each parameter of the declaration the check uses is in that compiled module."""
    from hybridgpu.vgpu.cupy_signatures import FORWARDED, parse_signature

    for name, (module, line) in FORWARDED.items():
        origin = importlib.util.find_spec(module.replace("/", ".")).origin
        with open(origin, "rb") as f:
            binary = f.read()
        for param in list(parse_signature(line).parameters)[1:]:
            assert f"__pyx_v_{param}".encode() in binary, (name, param, origin)


def test_smoke_kernels_compile_through_cupys_own_path(smoke_record):
    sources = nvrtc_check.recorded_sources(str(smoke_record))
    assert len(sources) >= 3, "the smoke stage generated too few kernel sources"
    for entry in sources:
        report = nvrtc_check.compile_for_sm90(entry["code"], name=entry["site"],
                                              options=tuple(entry["options"]))
        assert report.cubin_bytes > 0 and report.kernels, entry["site"]
        assert {"-ftz=true", "-arch=sm_90", *entry["options"]} <= set(report.options)


REAL_PATH = r"""
import json
import cupy
from cupy.cuda import runtime, nvrtc
from cuda import pathfinder
import hybridgpu as mx
out = {"runtime_version": runtime.runtimeGetVersion(), "nvrtc": list(nvrtc.getVersion()),
       "is_hip": runtime.is_hip,
       "nvrtc_lib": pathfinder.load_nvidia_dynamic_lib("nvrtc").abs_path,
       "fp16_header": pathfinder.find_nvidia_header_directory("cudart"),
       "num_gpus": mx.context.num_gpus()}
try:
    runtime.getDeviceCount()
    out["device_count_error"] = None
except runtime.CUDARuntimeError as err:
    out["device_count_error"] = str(err)
try:
    mx.nd.ones(2, ctx=mx.gpu(0))
    out["gpu_error"] = None
except mx.base.MXNetError as err:
    out["gpu_error"] = str(err)
print(json.dumps(out))
"""


def test_the_real_path_without_a_driver():
    done = subprocess.run([sys.executable, "-c", REAL_PATH], capture_output=True, text=True,
                          timeout=120, env=_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if got["device_count_error"] is None:
        pytest.skip("a CUDA driver is present here")
    assert got["runtime_version"] // 1000 == 13 and got["nvrtc"][0] == 13
    assert got["is_hip"] is False
    assert os.path.basename(got["nvrtc_lib"]).startswith("libnvrtc.so.13")
    assert os.path.isfile(os.path.join(got["fp16_header"], "cuda_fp16.h"))
    assert got["num_gpus"] == 0
    assert "gpu(0) is not available" in got["gpu_error"] and "driver" in got["gpu_error"]
