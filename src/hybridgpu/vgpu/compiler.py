"""Compile CUDA C kernel sources for the CPU: g++ through ``cuda_shim.h``, one shared library
per source (all its kernels in one translation unit), cached on disk by source hash.

The cache folder is ``$HYBRIDGPU_CACHE/vgpu`` (or ``~/.cache/hybridgpu/vgpu``), private to
the user and checked before use, and a file there is loaded only when its recorded digest
matches (``cache.py``); a library is built under a temporary name and renamed into place, so
concurrent processes share it safely. The shim header is precompiled once per cache and flag
set (``shim-<hash>.h.gch``) when that is faster.

Kernels round as on a GPU (``rounding.py``): FMA contraction unless the module's options say
``--fmad=false``, and float denormals flushed to zero at each launch (CuPy's ``-ftz=true``).

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

from . import cache, rounding
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
    """The folder holding compiled kernels (created private on first use; CacheError when it
    is not this user's alone)."""
    return cache.folder()


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


def _translation_unit(source, names, flush=False):
    """The source as g++ compiles it: dynamic shared arrays become the launch's buffer, and
    each kernel gets an exported launcher (run with float denormals flushed when
    ``flush``)."""
    def dynamic(m):
        ctype, name = m.group(1), m.group(2)
        return f"\n#define {name} (reinterpret_cast<{ctype}*>(::shim::dyn_shared))\n"

    body = _DYN_SHARED.sub(dynamic, source)
    exports = rounding.launch_wrappers(names, flush)
    return f"#line 1 \"kernel.cu\"\n{body}\n{exports}"


def _run(command):
    try:
        return subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise KernelCompileError(f"the virtual GPU compiles kernels with a C++ compiler, and "
                                 f"{command[0]!r} is not installed (install g++, or set CXX)"
                                 ) from None


def _shim_key(flags):
    with open(SHIM, "rb") as f:
        return hashlib.sha256(f.read() + " ".join([CXX, *flags]).encode()).hexdigest()[:16]


_checked_headers: dict = {}  # header path -> the stat it had when its digests matched


def _precompiled_shim(folder, flags):
    """The path of the shim copy to ``-include`` (with its .gch beside it when it builds),
    built for ``flags``; a copy whose digests do not match its records is rebuilt."""
    key = _shim_key(flags)
    header = os.path.join(folder, f"shim-{key}.h")
    if not _header_verified(header):
        tmp = tempfile.mkdtemp(dir=folder)
        try:
            shutil.copy(SHIM, os.path.join(tmp, "shim.h"))
            done = _run([CXX, *[f for f in flags if f != "-shared"], "-x", "c++-header",
                         os.path.join(tmp, "shim.h"), "-o", os.path.join(tmp, "shim.h.gch")])
            if done.returncode == 0:
                cache.record(os.path.join(tmp, "shim.h.gch"))
                os.replace(os.path.join(tmp, "shim.h.gch.sha256"), header + ".gch.sha256")
                os.replace(os.path.join(tmp, "shim.h.gch"), header + ".gch")
            elif os.path.exists(header + ".gch"):
                os.remove(header + ".gch")
            cache.record(os.path.join(tmp, "shim.h"))
            os.replace(os.path.join(tmp, "shim.h.sha256"), header + ".sha256")
            os.replace(os.path.join(tmp, "shim.h"), header)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        _header_verified(header)
    return header


def _header_verified(header):
    """True when the shim copy (and its .gch, if any) match their recorded digests; checked
    once a process while the files stay the same."""
    try:
        state = tuple((os.stat(p).st_ino, os.stat(p).st_mtime_ns, os.stat(p).st_size)
                      if os.path.exists(p) else None for p in (header, header + ".gch"))
    except OSError:
        return False
    if _checked_headers.get(header) == state:
        return True
    good = cache.verified(header) and (state[1] is None or cache.verified(header + ".gch"))
    if good:
        _checked_headers[header] = state
    return good


def macro_options(options):
    """The options of a RawModule that change what g++ builds: the macros (``-DNAME[=V]``,
    ``-UNAME``, also as ``--define-macro=``/``--undefine-macro=``), as g++ takes them, and
    ``--fmad=false`` when the options turn FMA contraction off; others are NVRTC's own."""
    found = [] if rounding.fmad_enabled(options) else [NO_FMAD]
    for option in options:
        for long, short in (("--define-macro=", "-D"), ("--undefine-macro=", "-U")):
            if option.startswith(long):
                option = short + option[len(long):]
        if option.startswith(("-D", "-U")) and len(option) > 2:
            found.append(option)
    return tuple(found)


#: What ``macro_options`` passes on for ``--fmad=false`` (``build`` compiles without FMA).
NO_FMAD = "--fmad=false"


def build(source, macros=()):
    """The loaded library (ctypes.CDLL) of ``source``'s kernels (with the ``-D``/``-U``
    options ``macros``, and ``--fmad=false`` when there), compiled on first use."""
    defines = tuple(m for m in macros if m != NO_FMAD)
    flags = [*FLAGS, *rounding.compile_flags(fmad=NO_FMAD not in macros)]
    flush = rounding.flushes()
    key = hashlib.sha256("\0".join([_shim_key(flags), f"flush={flush}", *defines,
                                     source]).encode()).hexdigest()[:24]
    with _lock:
        lib = _loaded.get(key)
        if lib is not None:
            return lib
        folder = cache_dir()
        path = os.path.join(folder, f"k-{key}.so")
        if not cache.verified(path):  # absent, or not the library this user compiled
            _compile(source, path, folder, defines, flags, flush)
        lib = _loaded[key] = ctypes.CDLL(path)
        return lib


def _compile(source, path, folder, macros, flags, flush):
    names = list(kernel_signatures(source))
    if not names:
        raise KernelCompileError('no `extern "C" __global__ void name(...)` kernel in the '
                                 f"source:\n{numbered(source)}")
    shim = _precompiled_shim(folder, flags)
    fd, cu = tempfile.mkstemp(suffix=".cpp", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(_translation_unit(source, names, flush))
    tmp = path + f".{os.getpid()}.tmp"
    try:
        done = _run([CXX, *flags, *macros, "-include", shim, "-I", INCLUDE, "-x", "c++", cu,
                     "-o", tmp])
        if done.returncode != 0:
            raise KernelCompileError(f"g++ could not compile the kernel source (through the "
                                     f"virtual GPU's cuda_shim.h):\n{done.stderr.strip()}\n\n"
                                     f"source:\n{numbered(source)}")
        cache.record(tmp)
        os.replace(tmp + ".sha256", path + ".sha256")
        os.replace(tmp, path)
    finally:
        for leftover in (cu, tmp, tmp + ".sha256"):
            if os.path.exists(leftover):
                os.remove(leftover)
