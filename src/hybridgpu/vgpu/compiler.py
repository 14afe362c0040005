"""Compile CUDA C kernel sources for the CPU: g++ through ``cuda_shim.h``, one shared library
per source (all its kernels in one translation unit), cached on disk by source hash.

The cache folder is ``$HYBRIDGPU_CACHE/vgpu`` (or ``~/.cache/hybridgpu/vgpu``); a library is
built under a temporary name and renamed into place, so concurrent processes share it safely.
The shim header is precompiled once per cache (``shim-<hash>.h.gch``) when that is faster.

Example:
    >>> src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1; }'
    >>> kernel_signatures(src)
    {'k': [('float*', 'x')]}
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading

from .errors import KernelCompileError

__all__ = ["build", "kernel_signatures", "cache_dir", "uses_barriers", "SHIM", "numbered"]

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM = os.path.join(HERE, "cuda_shim.h")
INCLUDE = os.path.join(HERE, "include")
CXX = os.environ.get("CXX", "g++")
# -fno-weak: one translation unit a library, so inline functions' static __shared__ arrays need
# no COMDAT copy and may join the shim's vgpu_shared section (poisoned at each block's start)
FLAGS = ["-std=c++17", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-U_FORTIFY_SOURCE",
         "-w", "-fno-weak"]
_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_KERNEL = re.compile(r'extern\s+"C"\s+' + _BOUNDS + r"__global__\s+" + _BOUNDS + r"void\s+"
                     + _BOUNDS + r"(\w+)\s*\(([^)]*)\)")
_DYN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?"
                         r"([\w:]+(?:\s+[\w:]+)*?)\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?(\w+)\s*"
                         r"\[\s*\]\s*;")
_BARRIERS = re.compile(r"__syncthreads|__syncwarp|__shfl_|__ballot_sync|__any_sync|__all_sync")
_lock = threading.Lock()
_loaded: dict = {}


def cache_dir():
    """The folder holding compiled kernels (created on first use)."""
    root = os.environ.get("HYBRIDGPU_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "hybridgpu")
    path = os.path.join(root, "vgpu")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:  # an unwritable home: a per-user folder in the temporary directory
        path = os.path.join(tempfile.gettempdir(), f"hybridgpu-vgpu-{os.getuid()}")
        os.makedirs(path, exist_ok=True)
    return path


def kernel_signatures(source):
    """``{kernel name: [(C type, parameter name), ...]}`` of the ``extern "C" __global__``
    kernels in ``source``."""
    found = {}
    for name, params in _KERNEL.findall(_strip_comments(source)):
        found[name] = [_split_param(p) for p in params.split(",") if p.strip()]
    return found


def _strip_comments(source):
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", " ", source)


def _split_param(text):
    text = " ".join(text.replace("*", " * ").split())
    words = text.split(" ")
    name = words[-1] if words[-1] != "*" else ""
    ctype = " ".join(w for w in words[:-1] if w not in ("const", "__restrict__", "volatile",
                                                         "restrict", "__restrict"))
    return ctype.replace(" *", "*"), name


def uses_barriers(source):
    """True when the source synchronises threads (its kernels then run threads as fibers)."""
    return bool(_BARRIERS.search(source))


def numbered(source):
    """The source with line numbers, for error messages."""
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


def _translation_unit(source, names):
    """The source as g++ compiles it: dynamic shared arrays become the launch's buffer, and
    each kernel gets an exported launcher."""
    def dynamic(m):
        ctype, name = m.group(1), m.group(2)
        return f"\n#define {name} (reinterpret_cast<{ctype}*>(::shim::dyn_shared))\n"

    body = _DYN_SHARED.sub(dynamic, source)
    exports = "".join(f"VGPU_EXPORT({n})\n" for n in names)
    return f"#line 1 \"kernel.cu\"\n{body}\n{exports}"


def _run(command):
    try:
        return subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise KernelCompileError(f"the virtual GPU compiles kernels with a C++ compiler, and "
                                 f"{command[0]!r} is not installed (install g++, or set CXX)"
                                 ) from None


def _shim_key():
    with open(SHIM, "rb") as f:
        return hashlib.sha256(f.read() + " ".join([CXX, *FLAGS]).encode()).hexdigest()[:16]


def _precompiled_shim(folder):
    """The path of the shim copy to ``-include`` (with its .gch beside it when it builds)."""
    key = _shim_key()
    header = os.path.join(folder, f"shim-{key}.h")
    if not os.path.exists(header + ".gch"):
        tmp = tempfile.mkdtemp(dir=folder)
        try:
            shutil.copy(SHIM, os.path.join(tmp, "shim.h"))
            flags = [f for f in FLAGS if f != "-shared"]
            done = _run([CXX, *flags, "-x", "c++-header", os.path.join(tmp, "shim.h"), "-o",
                         os.path.join(tmp, "shim.h.gch")])
            if done.returncode == 0:
                os.replace(os.path.join(tmp, "shim.h.gch"), header + ".gch")
            os.replace(os.path.join(tmp, "shim.h"), header)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if not os.path.exists(header):
        shutil.copy(SHIM, header)
    return header


def macro_options(options):
    """The options of a RawModule that change the source (``-DNAME[=V]``, ``-UNAME``, also as
    ``--define-macro=``/``--undefine-macro=``), as g++ takes them; others are NVRTC's own."""
    found = []
    for option in options:
        for long, short in (("--define-macro=", "-D"), ("--undefine-macro=", "-U")):
            if option.startswith(long):
                option = short + option[len(long):]
        if option.startswith(("-D", "-U")) and len(option) > 2:
            found.append(option)
    return tuple(found)


def build(source, macros=()):
    """The loaded library (ctypes.CDLL) of ``source``'s kernels (with the ``-D``/``-U``
    options ``macros``), compiled on first use."""
    key = hashlib.sha256("\0".join([_shim_key(), *macros, source]).encode()).hexdigest()[:24]
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib
        folder = cache_dir()
        path = os.path.join(folder, f"k-{key}.so")
        if not os.path.exists(path):
            _compile(source, path, folder, macros)
        lib = _loaded[key] = ctypes.CDLL(path)
        return lib


def _compile(source, path, folder, macros=()):
    names = list(kernel_signatures(source))
    if not names:
        raise KernelCompileError('no `extern "C" __global__ void name(...)` kernel in the '
                                 f"source:\n{numbered(source)}")
    shim = _precompiled_shim(folder)
    fd, cu = tempfile.mkstemp(suffix=".cpp", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(_translation_unit(source, names))
    tmp = path + f".{os.getpid()}.tmp"
    try:
        done = _run([CXX, *FLAGS, *macros, "-include", shim, "-I", INCLUDE, "-x", "c++", cu,
                     "-o", tmp])
        if done.returncode != 0:
            raise KernelCompileError(f"g++ could not compile the kernel source (through the "
                                     f"virtual GPU's cuda_shim.h):\n{done.stderr.strip()}\n\n"
                                     f"source:\n{numbered(source)}")
        os.replace(tmp, path)
    finally:
        for leftover in (cu, tmp):
            if os.path.exists(leftover):
                os.remove(leftover)
