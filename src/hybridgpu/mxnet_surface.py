"""Every top-level name of MXNet 1.9.1's ``mxnet`` package and its status in hybridgpu, so
nothing is missing silently: ``mx.<name>`` for a name MXNet has and hybridgpu does not raises an
``AttributeError`` that says why and points to ``docs/coming_from_mxnet.md``.

``SURFACE[name] = (status, note)``; status ``"supported"`` (same name, same use), ``"alias"``
(the note names the hybridgpu module it stands for), ``"differs"`` (present, with the note's
difference) or ``"missing"`` (the note says why and what to use).

Example:
    >>> import hybridgpu as mx
    >>> mx.rtc
    Traceback (most recent call last):
    ...
    AttributeError: mx.rtc (MXNet's mx.rtc) is not in hybridgpu: ...
"""

from __future__ import annotations

__all__ = ["SURFACE", "missing_attribute", "GUIDE"]

GUIDE = "docs/coming_from_mxnet.md"

_NUMPY_MODE = ("MXNet's internal NumPy-mode modules (the Symbol side of mx.np, the NumPy "
               "dispatch protocol and fallback) are not ported; use mx.np and mx.npx, whose "
               "functions also take Symbols inside hybrid_forward")

_NUMPY_PORTED = ("MXNet 1.9's NumPy interface over the same op registry as nd; the functions "
                 "it still lacks are listed in docs/numpy_mode.md")

_NUMPY_SWITCHES = ("the NumPy-mode switches (mx.util) keep their flags as MXNet does (per "
                   "thread, or for all threads after set_np_shape(2)), but nd/sym keep MXNet "
                   "1.x's legacy shapes (0 = unknown) and there are no mx.np arrays")

SURFACE = {
    # supported: same name, same use
    **{name: ("supported", "") for name in (
        "attribute", "autograd", "base", "callback", "context", "gluon", "image", "init",
        "initializer", "io", "kv", "kvstore", "lr_scheduler", "metric", "mod", "model",
        "module", "name", "nd", "ndarray", "onnx", "operator", "optimizer", "profiler",
        "random", "recordio", "registry", "sym", "symbol", "test_utils", "viz", "visualization",
        "AttrScope", "Context", "MXNetError", "cpu", "cpu_pinned", "current_context", "gpu")},
    "img": ("alias", "image"),
    "rnd": ("alias", "random"),
    "error": ("alias", "base"),
    **{name: ("differs", _NUMPY_PORTED) for name in ("np", "npx", "numpy",
                                                      "numpy_extension")},
    "np_symbol": ("missing", _NUMPY_MODE), "numpy_dispatch_protocol": ("missing", _NUMPY_MODE),
    "numpy_op_fallback": ("missing", _NUMPY_MODE),
    "numpy_op_signature": ("missing", _NUMPY_MODE),
    "contrib": ("differs", "amp (loss scaling; ops are not cast to float16) and text; "
                "quantization, TensorRT, ONNX-in-contrib, SVRG are not ported"),
    "rnn": ("missing", "the pre-Gluon symbolic RNN cells (mx.rnn) are not ported; use "
            "mx.gluon.rnn"),
    "executor": ("differs", "hybridgpu.executor holds the backends that run compiled "
                 "programs; MXNet's Executor is what Symbol.bind / simple_bind return "
                 "(hybridgpu.symbol.executor)"),
    "executor_manager": ("missing", "internal to MXNet's old FeedForward/Module; use mx.mod"),
    "engine": ("missing", "hybridgpu has no asynchronous engine to configure: NumPy runs "
               "eagerly, CuPy on CUDA streams (nd.waitall() synchronizes)"),
    "rtc": ("missing", "CUDA runtime compilation: use cupy.RawKernel/RawModule directly"),
    "library": ("missing", "loading MXNet C++ extension libraries (.so) cannot work without "
                "libmxnet; write a CustomOp (mx.operator) instead"),
    "libinfo": ("missing", "there is no libmxnet shared library to find"),
    "runtime": ("supported", ""),
    "tvmop": ("missing", "TVM-generated operators are not ported"),
    "torch": ("missing", "MXNet's Lua Torch bridge was removed long ago"),
    "th": ("missing", "MXNet's Lua Torch bridge was removed long ago"),
    "monitor": ("missing", "use Block.register_forward_hook or the profiler"),
    "mon": ("missing", "use Block.register_forward_hook or the profiler"),
    "notebook": ("missing", "Jupyter callbacks for the old Module API are not ported"),
    "log": ("missing", "use Python's logging module"),
    "util": ("supported", ""),
    "api": ("missing", "MXNet 2.0's FFI registry"),
    "ndarray_doc": ("missing", "internal to MXNet's docs"),
    "symbol_doc": ("missing", "internal to MXNet's docs"),
    **{name: ("differs", _NUMPY_SWITCHES) for name in (
        "is_np_array", "is_np_shape", "np_array", "np_shape", "set_np_shape", "use_np",
        "use_np_array", "use_np_shape")},
}

_WHAT = {"np": "MXNet's NumPy-compatible arrays", "npx": "MXNet's NumPy-extension operators"}


def missing_attribute(name):
    """The AttributeError for ``mx.<name>`` (MXNet's name or not)."""
    status, note = SURFACE.get(name, (None, None))
    if status == "missing":
        what = _WHAT.get(name, f"MXNet's mx.{name}")
        return AttributeError(f"mx.{name} ({what}) is not in hybridgpu: {note}; see {GUIDE}")
    if status is not None:
        return AttributeError(f"mx.{name} should be here but failed to import; please report "
                              f"it (see {GUIDE})")
    return AttributeError(f"module 'hybridgpu' has no attribute {name!r} (MXNet 1.9.1 has "
                          f"none of that name either; see {GUIDE})")
