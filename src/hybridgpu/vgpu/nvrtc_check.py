"""Compile CUDA C sources the way the real CuPy's ``RawModule`` does, for ``sm_90``, without a
GPU, and report registers and spills per kernel (ptxas' ``-v`` output).

The source goes through CuPy's own code path: ``cupy._core.raw._get_raw_module`` (what
``RawModule.compile`` runs), ``cupy._core.core.compile_with_cache`` and
``cupy.cuda.compiler._compile_with_cache_cuda``, so NVRTC gets CuPy's options: its include
folders (CCCL, ``cupy/_core/include``, the CUDA wheel's headers), ``-ftz=true``,
``-arch=sm_90``, ``--device-as-default-execution-space``, after the caller's. Only the three
places that need a driver are pointed elsewhere while it runs (``without_device``): the
device's compute capability (``compiler._get_arch``) gives ``90``, the per-device memo of
the arch options is bypassed (CuPy's undecorated function runs), and the compiled cubin is
kept instead of loaded (``Module.load``). ``CUPY_CACHE_IN_MEMORY=1`` keeps CuPy's disk cache
out of it. ``-Xptxas=-v`` is added for the register report (it changes no code).

Needs ``cupy-cuda13x`` and the CUDA 13 NVRTC and runtime wheels (as the GPU machine);
``available()`` says whether they are installed, so tests can skip cleanly. A compile error
raises ``NvrtcCompileError`` with NVRTC's log, the options and the numbered source.

From the shell, ``python -m hybridgpu.vgpu.nvrtc_check [--max-spill N] file.cu ...`` prints
the report of each file; ``--recorded DIR`` compiles every kernel source recorded there by
``vgpu.recorder``, ``--jobs N`` in N processes (exit status 1 on a compile error or more
spill bytes than N).

Example:
    >>> src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'
    >>> if available():
    ...     report = compile_for_sm90(src)
    ...     assert report.kernels["k"].spill_bytes == 0 and report.kernels["k"].registers > 0
    ...     assert "-ftz=true" in report.options and "-arch=sm_90" in report.options
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import threading
from dataclasses import dataclass, field

__all__ = ["available", "compile_for_sm90", "without_device", "NvrtcCompileError",
           "KernelReport", "Report", "recorded_sources", "ARCH"]

ARCH = "90"
_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'(.*?)(?=Compiling entry|\Z)",
                    re.S)
_lock = threading.Lock()


class NvrtcCompileError(RuntimeError):
    """NVRTC rejected the source; the message has its log, the options and the numbered
    source."""


@dataclass
class KernelReport:
    """What ptxas says about one kernel compiled for sm_90."""

    name: str
    registers: int
    spill_bytes: int  # spill stores + spill loads
    shared_bytes: int


@dataclass
class Report:
    """The result of ``compile_for_sm90``: the cubin's size, the options NVRTC got from
    CuPy, one KernelReport a kernel and NVRTC's log."""

    cubin_bytes: int
    options: tuple = ()
    kernels: dict = field(default_factory=dict)
    log: str = ""


def available():
    """True when the real CuPy and its NVRTC (the CUDA 13 wheels) can be loaded."""
    try:
        from cupy.cuda import compiler, nvrtc

        return bool(nvrtc.getVersion()) and hasattr(compiler, "_compile_with_cache_cuda")
    except Exception:  # ImportError, or the library missing behind CuPy
        return False


def _numbered(source):
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


@contextlib.contextmanager
def without_device(arch=ARCH):
    """While the block runs, CuPy's compile path works without a driver: the device's
    compute capability reads ``arch``, and compiled modules keep their cubin
    (``module.cubin``) instead of loading it. Yields the list of option tuples NVRTC gets."""
    from cupy.cuda import compiler, function

    class KeptModule(function.Module):
        cubin = b""

        def load(self, cubin):
            self.cubin = cubin

    seen = []
    compile_program = compiler._NVRTCProgram.compile

    def recording_compile(self, options=(), log_stream=None):
        seen.append(tuple(options))
        return compile_program(self, options, log_stream)

    saved = {name: getattr(compiler, name) for name in
             ("_get_arch", "_get_arch_for_options_for_nvrtc", "function")}
    shim = type("function", (), {"Module": KeptModule, "LinkState": function.LinkState})
    env = os.environ.get("CUPY_CACHE_IN_MEMORY")
    with _lock:
        compiler._get_arch = lambda: arch
        compiler._get_arch_for_options_for_nvrtc = \
            saved["_get_arch_for_options_for_nvrtc"].__wrapped__
        compiler.function = shim
        compiler._NVRTCProgram.compile = recording_compile
        os.environ["CUPY_CACHE_IN_MEMORY"] = "1"
        try:
            yield seen
        finally:
            for name, value in saved.items():
                setattr(compiler, name, value)
            compiler._NVRTCProgram.compile = compile_program
            if env is None:
                os.environ.pop("CUPY_CACHE_IN_MEMORY", None)
            else:
                os.environ["CUPY_CACHE_IN_MEMORY"] = env


def _kernel_reports(log):
    reports = {}
    for name, _arch, body in _ENTRY.findall(log):
        registers = re.search(r"Used (\d+) registers", body)
        spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", body)
        shared = re.search(r"(\d+) bytes smem", body)
        reports[name] = KernelReport(name, int(registers.group(1)) if registers else 0,
                                     sum(map(int, spills)),
                                     int(shared.group(1)) if shared else 0)
    return reports


def compile_for_sm90(source, name="kernel.cu", options=("-std=c++17",),
                     name_expressions=None):
    """Compile ``source`` through CuPy's RawModule path for sm_90 (``options`` as given to
    ``RawModule``); a Report. Raises NvrtcCompileError (log, options, numbered source)."""
    if not available():
        raise NvrtcCompileError("the real CuPy and NVRTC are not installed: pip install "
                                "'cupy-cuda13x>=14.2' 'nvidia-cuda-nvrtc>=13,<14' "
                                "'nvidia-cuda-runtime>=13,<14'")
    import cupy
    from cupy._core import raw
    from cupy.cuda.compiler import CompileException

    given = tuple(options)
    module = cupy.RawModule(code=source, options=given + ("-Xptxas=-v",),
                            name_expressions=name_expressions)
    log = io.StringIO()
    with without_device() as seen:
        try:
            compiled = raw._get_raw_module.__wrapped__(
                module.code, None, module.options, module.backend, False,
                module.enable_cooperative_groups, False, module.name_expressions, log)
        except CompileException as err:
            used = " ".join(seen[-1]) if seen else " ".join(module.options)
            raise NvrtcCompileError(f"NVRTC (through CuPy) could not compile {name} for "
                                    f"sm_{ARCH}:\n{str(err).strip()}\n\noptions: {used}"
                                    f"\n\nsource:\n{_numbered(source)}") from None
    text = log.getvalue()
    return Report(len(compiled.cubin), seen[-1] if seen else (), _kernel_reports(text), text)


def recorded_sources(folder):
    """The distinct ``{"code", "options", "site"}`` kernel sources ``vgpu.recorder`` wrote
    into ``folder`` (``cupy-sources-*.json``)."""
    found, seen = [], set()
    for file in sorted(os.listdir(folder)):
        if file.startswith("cupy-sources-") and file.endswith(".json"):
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                for entry in json.load(f):
                    key = (entry["code"], tuple(entry["options"]))
                    if key not in seen:
                        seen.add(key)
                        found.append(entry)
    return found


def _report_one(job):
    """``(failures, printed text)`` of compiling one ``(label, source, options, max_spill)``
    (a top-level function: worker processes run it)."""
    label, source, options, max_spill = job
    try:
        report = compile_for_sm90(source, name=label, options=options)
    except NvrtcCompileError as err:
        return 1, f"ERROR {label}\n{err}"
    lines = [f"ok {label}: cubin {report.cubin_bytes} B"]
    failed = 0
    for kernel in report.kernels.values():
        lines.append(f"   {kernel.name}: {kernel.registers} registers, {kernel.spill_bytes} B "
                     f"spill, {kernel.shared_bytes} B shared")
        failed += kernel.spill_bytes > max_spill
    return failed, "\n".join(lines)


def _run_jobs(jobs, workers):
    if workers <= 1 or len(jobs) <= 1:
        yield from map(_report_one, jobs)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        yield from pool.map(_report_one, jobs)


def main(argv=None):
    """The command line: compile each ``.cu`` file (or every recorded source), print
    registers and spills per kernel."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m hybridgpu.vgpu.nvrtc_check")
    parser.add_argument("files", nargs="*", help="CUDA C sources")
    parser.add_argument("--recorded", help="a folder of vgpu.recorder's cupy-sources-*.json")
    parser.add_argument("--max-spill", type=int, default=0, help="spill bytes allowed a kernel")
    parser.add_argument("--jobs", type=int, default=1, help="compile in this many processes")
    args = parser.parse_args(argv)
    jobs = []
    for path in args.files:
        with open(path) as f:
            jobs.append((path, f.read(), ("-std=c++17",), args.max_spill))
    entries = recorded_sources(args.recorded) if args.recorded else []
    jobs += [(f"source from {entry.get('site', '?')}", entry["code"], tuple(entry["options"]),
              args.max_spill) for entry in entries]
    failed = 0
    for fails, text in _run_jobs(jobs, args.jobs):
        print(text, flush=True)
        failed += fails
    if args.recorded:
        print(f"{len(entries)} recorded sources compiled through CuPy for sm_{ARCH}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
