"""Shared fixtures: ``gpu_available`` skips a test cleanly without CuPy or a CUDA device.

gpu-marked tests run on a real GPU, or on the virtual GPU when ``HYBRIDGPU_VIRTUAL_GPU=N`` is
set (CI's second pass: ``HYBRIDGPU_VIRTUAL_GPU=2 python -m pytest -q -m gpu``).
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import hybridgpu as mx  # noqa: E402


def _has_gpu():
    return mx.context.num_gpus() > 0


@pytest.fixture
def gpu_available():
    if not _has_gpu():
        pytest.skip("needs CuPy and a CUDA device (or HYBRIDGPU_VIRTUAL_GPU=N)")
    return mx.gpu(0)


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA device (or HYBRIDGPU_VIRTUAL_GPU=N)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
