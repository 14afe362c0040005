"""``hypothesis`` when it is installed, else stand-ins that skip the property tests: the GPU
machines of this project have pytest, NumPy, CuPy and torch but no hypothesis (and no network),
and the gpu-marked test files must still run there (``python -m hybridgpu gpucheck``).

Example:
    >>> from optional_hypothesis import given, st
    >>> callable(given(st.integers()))
    True
"""

from __future__ import annotations

import pytest

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - exercised on the GPU machine
    class _Anything:
        """Any strategy expression built at import time (``st.lists(st.text()).map(f)``)."""

        def __getattr__(self, name):
            return self

        def __call__(self, *args, **kwargs):
            return self

        def __or__(self, other):
            return self

        def __iter__(self):
            return iter(())

    st = HealthCheck = _Anything()

    def given(*args, **kwargs):
        return pytest.mark.skip(reason="hypothesis is not installed")

    def settings(*args, **kwargs):
        return lambda fn: fn

__all__ = ["given", "settings", "st", "HealthCheck"]
