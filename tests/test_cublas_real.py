"""The cuBLAS binding against the real library from NVIDIA's wheel, without a GPU or a driver
(issue 19): the loader finds and loads ``libcublas.so.13`` (through ``cuda.pathfinder``, and
through CuPy's ``cupy.cuda.cublas`` attribute: ``import cupy.cuda.cublas`` is no module on CuPy
13/14), resolves every symbol it binds, every prototype and constant it declares matches
``cublas_api.h`` from the same wheel (parsed here), and a status from the real library (no
driver: ``cublasCreate`` fails) is reported by name.

Skipped without ``nvidia-cublas`` and ``cuda-pathfinder`` (both in the ``test`` extra)."""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys

import pytest

from hybridgpu.base import MXNetError
from hybridgpu.executor.gpu import cublas

pytest.importorskip("cuda.pathfinder", reason="the test extra's cuda-pathfinder")


@pytest.fixture(scope="module")
def library():
    try:
        return cublas.load_library()
    except MXNetError as err:
        pytest.skip(f"the nvidia-cublas wheel is not installed: {err}")


@pytest.fixture(scope="module")
def headers(library):
    include = os.path.join(os.path.dirname(os.path.dirname(library._name)), "include")
    paths = [os.path.join(include, n) for n in ("cublas_api.h", "library_types.h",
                                                  "driver_types.h")]
    if not all(os.path.exists(p) for p in paths):
        pytest.skip(f"the wheel ships no cuBLAS headers in {include}")
    text = ""
    for path in paths:
        with open(path) as f:
            text += f.read() + "\n"
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def test_the_loader_loads_the_wheels_libcublas_13_and_binds_every_symbol(library):
    assert os.path.basename(library._name) == "libcublas.so.13"
    for name, argtypes in cublas.SIGNATURES.items():
        func = getattr(library, name)
        assert func.argtypes == argtypes and func.restype is ctypes.c_int, name
    assert cublas.load_library() is library


def test_cupys_package_attribute_finds_the_library_in_a_fresh_process():
    code = ("from hybridgpu.executor.gpu import cublas; import ctypes\n"
            "path = cublas._through_cupy(); lib = ctypes.CDLL(path)\n"
            "missing = [n for n in cublas.SIGNATURES if not hasattr(lib, n)]\n"
            "print(path, missing)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    if "cupy.cuda.cublas: " in done.stderr and "No module named 'cupy'" in done.stderr:
        pytest.skip("needs the real CuPy")
    assert done.returncode == 0, done.stderr
    path, missing = done.stdout.split(" ", 1)
    assert path.endswith("/libcublas.so.13") and missing.strip() == "[]"


def test_without_either_route_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(cublas, "_real", [None])

    def fail(why):
        def find():
            raise LookupError(why)
        return find

    monkeypatch.setattr(cublas, "_through_pathfinder", fail("cuda.pathfinder: gone"))
    monkeypatch.setattr(cublas, "_through_cupy", fail("cupy.cuda.cublas: gone"))
    with pytest.raises(MXNetError, match=r"pip install 'nvidia-cublas>=13,<14'.*"
                                         r"cuda.pathfinder: gone; cupy.cuda.cublas: gone"):
        cublas.load_library()


def _typedefs(text):
    """``{name: 'pointer' | 'enum'}`` of the header's pointer and enum typedefs."""
    kinds = {}
    for name in re.findall(r"typedef\s+(?:__device_builtin__\s+)?struct\s+\w+\s*\*\s*(\w+)\s*;",
                           text):
        kinds[name] = "pointer"
    for name in re.findall(r"typedef\s+enum\s*\w*\s*\{[^}]*\}\s*(\w+)\s*;", text):
        kinds[name] = "enum"
    return kinds


def _c_kind(ctype, typedefs):
    """What a C parameter type is as ctypes passes it: ('pointer',) or ('int', size, signed)."""
    words = [w for w in ctype.replace("*", " * ").split() if w not in ("const", "volatile")]
    if "*" in words or typedefs.get(words[-1]) == "pointer":
        return ("pointer",)
    if typedefs.get(words[-1]) == "enum":
        return ("int", ctypes.sizeof(ctypes.c_int), True)
    plain = {"int": ctypes.c_int, "long long int": ctypes.c_longlong, "long long":
             ctypes.c_longlong, "size_t": ctypes.c_size_t, "int64_t": ctypes.c_int64}
    if " ".join(words) not in plain:
        raise AssertionError(f"the test cannot classify C type {ctype!r}")
    ct = plain[" ".join(words)]
    return ("int", ctypes.sizeof(ct), ct(-1).value == -1)


def _ctypes_kind(ct):
    if ct is ctypes.c_void_p:
        return ("pointer",)
    return ("int", ctypes.sizeof(ct), ct(-1).value == -1)


def test_every_declared_prototype_matches_cublas_api_h(headers):
    typedefs = _typedefs(headers)
    assert typedefs.get("cublasHandle_t") == "pointer"
    assert typedefs.get("cudaStream_t") == "pointer"
    for name, argtypes in cublas.SIGNATURES.items():
        found = re.findall(r"cublasStatus_t\s+CUBLASWINAPI\s+" + name + r"\s*\(([^)]*)\)\s*;",
                           headers)
        assert len(found) == 1, f"{name}: {len(found)} exported declarations"
        params = [p.strip() for p in found[0].split(",")]
        types = [re.sub(r"\s*\b\w+\s*$", "", p) for p in params]  # drop the parameter name
        want = [_c_kind(t, typedefs) for t in types]
        assert [_ctypes_kind(a) for a in argtypes] == want, (name, types)


def _enumerators(text):
    number = r"(-?(?:0x[0-9a-fA-F]+|\d+))"
    return {k: int(v, 0) for k, v in re.findall(r"\b(\w+)\s*=\s*" + number + r"\s*[,}\n]", text)}


def test_the_constants_the_binding_passes_match_the_headers(headers):
    values = _enumerators(headers)
    assert values["CUBLAS_OP_N"] == 0 and values["CUBLAS_OP_T"] == 1  # gemm.py's transa/transb
    assert values["CUBLAS_DEFAULT_MATH"] == cublas.MATH_MODES["default"]
    assert values["CUBLAS_TF32_TENSOR_OP_MATH"] == cublas.MATH_MODES["tf32"]
    assert values["CUDA_R_16F"] == cublas.CUDA_R_16F
    assert values["CUBLAS_COMPUTE_32F"] == cublas.CUBLAS_COMPUTE_32F
    assert values["CUBLAS_GEMM_DEFAULT"] == cublas.CUBLAS_GEMM_DEFAULT
    statuses = {k[len("CUBLAS_STATUS_"):]: v for k, v in values.items()
                if k.startswith("CUBLAS_STATUS_")}
    assert statuses == {name: code for code, name in cublas.STATUS.items()}


def test_a_status_of_the_real_library_is_reported_by_name():
    """No driver here: the real ``cublasCreate`` fails, and the error names the call and
    the status (run in a child process: nothing of the failed create stays in this one)."""
    code = ("import cupy\nfrom hybridgpu.executor.gpu import cublas\n"
            "try:\n    cublas.Cublas(cupy, 0)\nexcept Exception as err:\n    print(err)\n"
            "else:\n    print('created')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    if "No module named 'cupy'" in done.stderr:
        pytest.skip("needs the real CuPy")
    assert done.returncode == 0, done.stderr
    if done.stdout.strip() == "created":
        pytest.skip("a GPU and a driver are present: cublasCreate succeeded")
    assert re.fullmatch(r"cuBLAS cublasCreate_v2 failed on device 0 with CUBLAS_STATUS_\w+",
                        done.stdout.strip()), done.stdout
