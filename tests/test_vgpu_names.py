"""Every CuPy name the virtual GPU's stand-in offers exists in the real CuPy (cupy-cuda13x
imports on a machine without a GPU), so code that runs on the virtual GPU cannot use a name
CuPy lacks. The real CuPy is imported in a subprocess, away from the stand-in's ``cupyx``."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import functions, standin

try:
    import importlib.util

    HAS_CUPY = importlib.util.find_spec("cupy") is not None
except ValueError:  # a stand-in module object in sys.modules has no spec
    HAS_CUPY = False

# the stand-in's own additions (not CuPy names)
VIRTUAL_ONLY = {"is_virtual", "virtual_cublas_library"}

CHECK = r"""
import json, sys
import cupy, cupyx, cupyx.scipy.special
names = json.load(sys.stdin)
roots = {"cupy": cupy, "cupyx": cupyx}
missing = []
for dotted in names:
    head, *rest = dotted.split(".")
    obj = roots[head]
    for part in rest:
        if not hasattr(obj, part):
            missing.append(dotted)
            break
        obj = getattr(obj, part)
print(json.dumps(missing))
"""


def _public(obj):
    return [n for n in vars(obj) if not n.startswith("_")] if isinstance(obj, types.ModuleType) \
        else [n for n in dir(obj) if not n.startswith("_")]


def stand_in_names():
    """Dotted names of everything the stand-in offers as CuPy (and cupyx)."""
    xp = vgpu.module(1)
    names = []

    def walk(prefix, module):
        for name in _public(module):
            if name in VIRTUAL_ONLY:
                continue
            value = getattr(module, name)
            names.append(f"{prefix}.{name}")
            if isinstance(value, types.ModuleType) and not name.startswith("__"):
                walk(f"{prefix}.{name}", value)

    walk("cupy", xp)
    names = [n for n in names if not n.startswith("cupy.cuda.nccl")]  # checked on its own
    names += [f"cupy.ndarray.{n}" for n in _public(xp.ndarray)]
    names += [f"cupy.random.RandomState.{n}" for n in functions.RandomState.METHODS]
    names += [f"cupy.cuda.Stream.{n}" for n in _public(xp.cuda.Stream) if n != "submit"]
    names += [f"cupy.cuda.Graph.{n}" for n in _public(xp.cuda.Graph) if n != "steps"]
    names += [f"cupy.cuda.Event.{n}" for n in _public(xp.cuda.Event)]
    names += [f"cupy.cuda.Device.{n}" for n in _public(xp.cuda.Device)]
    names += [f"cupy.RawModule.{n}" for n in ("get_function",)]
    modules = standin.cupyx_modules()
    names += [f"cupyx.{n}" for n in _public(modules["cupyx"]) if n not in ("scipy", "is_virtual")]
    names += [f"cupyx.scipy.special.{n}" for n in _public(modules["cupyx.scipy.special"])]
    return sorted(set(names))


@pytest.mark.skipif(not HAS_CUPY, reason="needs cupy-cuda13x installed (imports without a GPU)")
def test_every_stand_in_name_exists_in_cupy():
    names = stand_in_names()
    assert len(names) > 300, "the walk found too few names to mean anything"
    done = subprocess.run([sys.executable, "-c", CHECK], input=json.dumps(names),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert not missing, f"names the virtual GPU offers that CuPy lacks: {missing}"


NCCL_CHECK = r"""
import json, sys
import cupy.cuda.nccl as nccl
if not nccl.available:
    print(json.dumps(None))
    raise SystemExit
names = json.load(sys.stdin)
missing = []
for dotted in names:
    obj = nccl
    for part in dotted.split(".")[3:]:
        if not hasattr(obj, part):
            missing.append(dotted)
            break
        obj = getattr(obj, part)
print(json.dumps(missing))
"""


def nccl_stand_in_names():
    """Dotted names the stand-in offers as ``cupy.cuda.nccl`` (and its communicator's)."""
    nccl = vgpu.module(1).cuda.nccl
    names = [f"cupy.cuda.nccl.{n}" for n in _public(nccl)]
    names += [f"cupy.cuda.nccl.NcclCommunicator.{n}" for n in _public(nccl.NcclCommunicator)]
    return sorted(names)


@pytest.mark.skipif(not HAS_CUPY, reason="needs cupy-cuda13x installed (imports without a GPU)")
def test_every_nccl_stand_in_name_exists_in_cupy():
    names = nccl_stand_in_names()
    assert {"cupy.cuda.nccl.NcclCommunicator.initAll", "cupy.cuda.nccl.groupStart",
            "cupy.cuda.nccl.NCCL_SUM"} <= set(names)
    done = subprocess.run([sys.executable, "-c", NCCL_CHECK], input=json.dumps(names),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    missing = json.loads(done.stdout.strip().splitlines()[-1])
    if missing is None:
        pytest.skip("CuPy found no NCCL library (pip install nvidia-nccl-cu13)")
    assert not missing, f"names the virtual GPU's NCCL offers that cupy.cuda.nccl lacks: {missing}"


# Where the stand-in's own parameters are looser than CuPy's, in files of the stand-in's API
# (standin.py, kernels.py, streams.py, memory.py): reported to their owners. A new entry
# fails the test; fixing one only needs its line removed.
LOOSER = {
    "cupy.RawModule": "path, options, backend, translate_cucomplex positional (keyword-only "
                      "in CuPy)",
    "cupy.RawKernel": "enable_cooperative_groups, jitify positional (keyword-only in CuPy)",
    "cupy.cuda.runtime.memcpyAsync": "parameters named nbytes/stream_ptr (CuPy: size/stream)",
    "cupy.cuda.runtime.setDevice": "parameter named i (CuPy: device)",
    "cupy.random.seed": "parameter named value (CuPy: seed)",
    "cupy.from_dlpack": "parameter named obj (CuPy: array)",
    "cupy.cuda.Memory": "an extra device_id parameter",
}

SIGNATURE_CHECK = r"""
import json, sys
from hybridgpu.vgpu.cupy_signatures import looser_than_cupy
found = {}
for name, params in json.load(sys.stdin).items():
    try:
        issues = looser_than_cupy(name, params)
    except AttributeError as err:
        issues = [f"not in the real CuPy: {err}"]
    if issues:
        found[name] = issues
print(json.dumps(found))
"""


def stand_in_signatures():
    """``{cupy dotted name: [(parameter, kind)]}`` of the callables the stand-in writes itself
    (functions it wraps from NumPy are checked through the recorded calls instead)."""
    import inspect

    def ours(obj):
        if getattr(obj, "__vgpu_recorded__", False):  # vgpu.recorder's wrapper: look inside
            obj = obj.__wrapped__
        return (getattr(obj, "__module__", "") or "").startswith("hybridgpu.vgpu") and \
            not hasattr(obj, "__wrapped__")

    def params(obj, method=False):
        found = [(p.name, p.kind.name) for p in inspect.signature(obj).parameters.values()]
        return found[1:] if method else found

    out = {}

    def walk(prefix, module):
        for name, value in vars(module).items():
            if name.startswith("_") or name in VIRTUAL_ONLY:
                continue
            dotted = f"{prefix}.{name}"
            if isinstance(value, types.ModuleType):
                walk(dotted, value)
            elif isinstance(value, type) and ours(value) and not issubclass(value, Exception):
                out[dotted] = params(value)
                for attr, raw in vars(value).items():
                    if isinstance(raw, staticmethod):
                        out[f"{dotted}.{attr}"] = params(raw.__func__)
                    elif inspect.isfunction(raw) and not attr.startswith("_"):
                        out[f"{dotted}.{attr}"] = params(raw, method=True)
            elif inspect.isfunction(value) and ours(value):
                out[dotted] = params(value)

    walk("cupy", vgpu.module(1))
    return out


@pytest.mark.skipif(not HAS_CUPY, reason="needs cupy-cuda13x installed (imports without a GPU)")
def test_stand_in_parameters_are_no_looser_than_cupys():
    import os

    found = stand_in_signatures()
    assert {"cupy.asarray", "cupy.RawModule", "cupy.cuda.Stream.begin_capture"} <= set(found)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    done = subprocess.run([sys.executable, "-c", SIGNATURE_CHECK], input=json.dumps(found),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": src})
    assert done.returncode == 0, done.stderr[-2000:]
    looser = json.loads(done.stdout.strip().splitlines()[-1])
    looser = {k: v for k, v in looser.items() if not k.startswith("cupy.cuda.Stream.submit")}
    new = {k: v for k, v in looser.items() if k not in LOOSER}
    assert not new, f"stand-in callables that accept calls the real CuPy refuses: {new}"
