"""``mx.runtime``: which of MXNet 1.x's build features this installation has.

MXNet reports how libmxnet was compiled. hybridgpu has no compiled library, so each feature
says whether hybridgpu offers the same thing here: ``CUDA`` when CuPy is importable (the gpu
path), ``NCCL`` and ``CUDA_RTC`` with CuPy's NCCL and NVRTC bindings, ``DIST_KVSTORE`` with
mpi4py, ``PROFILER`` always, the ``CPU_*`` flags from the instruction sets NumPy detected.
What needs a library hybridgpu does not use (cuDNN, TensorRT, MKL-DNN, OpenCV, TVM, ...) is
off. ``INT64_TENSOR_SIZE`` is off, as in MXNet 1.x's default build, whose index dtypes
hybridgpu follows.

Example:
    >>> features = Features()
    >>> features.is_enabled("PROFILER"), features.is_enabled("TENSORRT")
    (True, False)
    >>> "CUDA" in features
    True
"""

from __future__ import annotations

import collections
import importlib.util

__all__ = ["Feature", "Features", "feature_list"]

#: MXNet 1.9.1's feature names, in its order.
FEATURE_NAMES = (
    "CUDA", "CUDNN", "NCCL", "CUDA_RTC", "TENSORRT", "CPU_SSE", "CPU_SSE2", "CPU_SSE3",
    "CPU_SSE4_1", "CPU_SSE4_2", "CPU_SSE4A", "CPU_AVX", "CPU_AVX2", "OPENMP", "SSE", "F16C",
    "JEMALLOC", "BLAS_OPEN", "BLAS_ATLAS", "BLAS_MKL", "BLAS_APPLE", "LAPACK", "MKLDNN",
    "OPENCV", "CAFFE", "PROFILER", "DIST_KVSTORE", "CXX14", "INT64_TENSOR_SIZE",
    "SIGNAL_HANDLER", "DEBUG", "TVM_OP")

# MXNet's CPU feature name -> NumPy's name for the same instruction set
_CPU = {"CPU_SSE": "SSE", "CPU_SSE2": "SSE2", "CPU_SSE3": "SSE3", "CPU_SSE4_1": "SSE41",
        "CPU_SSE4_2": "SSE42", "CPU_AVX": "AVX", "CPU_AVX2": "AVX2", "F16C": "F16C"}


def _has_module(name):
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _numpy_cpu_features():
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return __cpu_features__


def _enabled():
    """``{feature name: bool}`` for this installation."""
    cupy = _has_module("cupy")
    cpu = _numpy_cpu_features()
    found = {name: bool(cpu.get(numpy_name)) for name, numpy_name in _CPU.items()}
    found.update(CUDA=cupy, CUDA_RTC=cupy, NCCL=cupy and _has_module("cupy.cuda.nccl"),
                 PROFILER=True, DIST_KVSTORE=_has_module("mpi4py"), LAPACK=True)
    return {name: found.get(name, False) for name in FEATURE_NAMES}


class Feature:
    """One feature: ``name`` and whether it is ``enabled``."""

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self):
        return f"{'✔' if self.enabled else '✖'} {self.name}"


def feature_list():
    """Every feature, in MXNet's order, as ``Feature`` objects."""
    return [Feature(name, on) for name, on in _enabled().items()]


class Features(collections.OrderedDict):
    """``{name: Feature}`` of every feature; ``is_enabled(name)`` asks for one."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether the feature is on; a name MXNet does not know raises RuntimeError."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature {feature_name!r} is unknown, known features are: "
                               f"{list(self)}")
        return self[name].enabled
