"""Compile CUDA C sources with NVRTC for ``compute_90`` (PTX) and ``sm_90`` (a cubin) without a
GPU, and report registers and spills per kernel (ptxas' ``-v`` output).

Needs pip ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` (the CUDA 13 line, as the GPU machine's
``cupy-cuda13x``), and ``nvidia-cuda-runtime`` for ``cuda_fp16.h``; ``available()`` says
whether they are installed, so tests can skip cleanly. A compile error raises
``NvrtcCompileError`` with NVRTC's log and the numbered source.

From the shell, ``python -m hybridgpu.vgpu.nvrtc_check [--max-spill N] file.cu ...`` prints
the report of each file (exit status 1 on a compile error or more spill bytes than N).

Example:
    >>> src = 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }'
    >>> if available():
    ...     report = compile_for_sm90(src)
    ...     assert report.kernels["k"].spill_bytes == 0 and report.kernels["k"].registers > 0
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["available", "compile_for_sm90", "NvrtcCompileError", "KernelReport", "Report"]

_ENTRY = re.compile(r"Compiling entry function '(\w+)' for '(\w+)'(.*?)(?=Compiling entry|\Z)",
                    re.S)


class NvrtcCompileError(RuntimeError):
    """NVRTC rejected the source; the message has its log and the numbered source."""


@dataclass
class KernelReport:
    """What ptxas says about one kernel compiled for sm_90."""

    name: str
    registers: int
    spill_bytes: int  # spill stores + spill loads
    shared_bytes: int


@dataclass
class Report:
    """The result of ``compile_for_sm90``: PTX and cubin sizes, and one KernelReport a
    kernel."""

    ptx_bytes: int
    cubin_bytes: int
    kernels: dict = field(default_factory=dict)
    log: str = ""


def available():
    """True when NVRTC (cuda-bindings + nvidia-cuda-nvrtc) can be loaded."""
    try:
        from cuda.bindings import nvrtc

        return nvrtc.nvrtcVersion()[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    except Exception:  # ImportError, or the library missing behind the bindings
        return False


def _include_options():
    try:
        from cuda import pathfinder

        folder = pathfinder.find_nvidia_header_directory("cudart")
    except Exception:
        folder = None
    return [f"-I{folder}"] if folder else []


def _numbered(source):
    return "\n".join(f"{i:4d}  {line}" for i, line in enumerate(source.splitlines(), 1))


def _compile(source, name, arch, options):
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcCompileError(f"nvrtcCreateProgram failed: {err}")
    try:
        opts = [o.encode() for o in (*options, f"-arch={arch}")]
        result = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
        log = bytes(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = log.rstrip(b"\0").decode(errors="replace")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcCompileError(f"NVRTC could not compile {name} for {arch}:\n{log.strip()}"
                                    f"\n\nsource:\n{_numbered(source)}")
        getter = nvrtc.nvrtcGetCUBINSize if arch.startswith("sm_") else nvrtc.nvrtcGetPTXSize
        return log, getter(prog)[1]
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


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


def compile_for_sm90(source, name="kernel.cu", options=("-std=c++17",)):
    """Compile ``source`` for compute_90 and sm_90; a Report with registers and spills per
    kernel. Raises NvrtcCompileError (log + numbered source) on a compile error."""
    if not available():
        raise NvrtcCompileError("NVRTC is not installed: pip install 'cuda-bindings>=13,<14' "
                                "'nvidia-cuda-nvrtc>=13,<14' 'nvidia-cuda-runtime>=13,<14'")
    options = [*options, *_include_options()]
    _, ptx_bytes = _compile(source, name, "compute_90", options)
    log, cubin_bytes = _compile(source, name, "sm_90", [*options, "-Xptxas=-v"])
    return Report(ptx_bytes, cubin_bytes, _kernel_reports(log), log)


def main(argv=None):
    """The command line: compile each ``.cu`` file, print registers and spills per kernel."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m hybridgpu.vgpu.nvrtc_check")
    parser.add_argument("files", nargs="+", help="CUDA C sources")
    parser.add_argument("--max-spill", type=int, default=0, help="spill bytes allowed a kernel")
    args = parser.parse_args(argv)
    failed = 0
    for path in args.files:
        with open(path) as f:
            source = f.read()
        try:
            report = compile_for_sm90(source, name=path)
        except NvrtcCompileError as err:
            print(f"ERROR {path}\n{err}")
            failed += 1
            continue
        print(f"ok {path}: PTX {report.ptx_bytes} B, cubin {report.cubin_bytes} B")
        for kernel in report.kernels.values():
            print(f"   {kernel.name}: {kernel.registers} registers, {kernel.spill_bytes} B spill, "
                  f"{kernel.shared_bytes} B shared")
            failed += kernel.spill_bytes > args.max_spill
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
