"""Benchmark fixtures: the device under test and the metadata saved with every JSON result."""

from __future__ import annotations

import datetime
import platform
import subprocess

import pytest

import hybridgpu as mx


def _commit():
    out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() or "unknown"


def _device_name():
    if mx.context.num_gpus() > 0:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        return props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f"cpu: {platform.processor() or platform.machine()}"


def pytest_benchmark_update_json(config, benchmarks, output_json):
    from hybridgpu.bench_env import blas_limit, device_choice, environment

    ctx, reason = device_choice()
    blas = _SESSION.get("blas")  # what blas_threads fixed (its scope has ended by now)
    if blas is None:
        with blas_limit(0) as blas:
            pass
    env = environment(ctx, reason, blas)
    output_json["hybridgpu"] = {
        **env,
        "device": _device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "commit": _commit(),
        "version": mx.__version__,
    }


@pytest.fixture(scope="session", autouse=True)
def blas_threads():
    """One BLAS thread for the whole benchmark session, as ``python -m hybridgpu bench``
    (more threads oversubscribe a small shared machine and the timings swing)."""
    from hybridgpu.bench_env import blas_limit

    with blas_limit(1) as blas:
        _SESSION["blas"] = blas
        yield blas


_SESSION: dict = {}


@pytest.fixture(scope="session")
def bench_ctx():
    """gpu(0) when there is one, else cpu(0)."""
    return mx.gpu(0) if mx.context.num_gpus() > 0 else mx.cpu(0)
