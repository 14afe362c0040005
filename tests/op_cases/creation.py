"""Cases for ``ops/creation.py`` (ops without inputs: ``shapes=[]``, the attributes say what to
make) and the list of random ops (``ops/random.py``), which ``tests/test_creation_random.py``
covers: their values cannot be compared with a reference."""

from __future__ import annotations

import math

import numpy as np

from op_harness import OpCase

_ONE = ("float32",)  # no inputs: the harness dtype changes nothing, the attrs pick the dtype


def _fill_ref(fill):
    def ref(shape, dtype="float32", value=None):
        return np.full(shape, fill if value is None else value).astype(dtype)

    return ref


def _arange_ref(start, stop=None, step=1.0, repeat=1, dtype="float32", **_):
    """MXNet's arange: the count from the float range, start and step in the output dtype."""
    if stop is None:
        start, stop = 0.0, start
    count = math.ceil((stop - start) / step)
    kind = np.dtype(dtype).type
    values = np.array([kind(start) + kind(step) * i for i in range(count)], dtype=dtype)
    return np.repeat(values, repeat)


def _linspace_ref(start, stop, num, endpoint=True, dtype="float32"):
    return np.linspace(start, stop, num, endpoint=endpoint).astype(dtype)


def _eye_ref(N, M=0, k=0, dtype="float32"):
    return np.eye(N, M or N, k).astype(dtype)


def _creation(op, attrs, ref, case_id):
    return OpCase(op, shapes=[], attrs=attrs, ref=ref, grad=False, dtypes=_ONE, id=case_id)


CASES = [
    _creation("_zeros", {"shape": (2, 3)}, _fill_ref(0), "f32"),
    _creation("_zeros", {"shape": (4,), "dtype": "int32"}, _fill_ref(0), "int32"),
    _creation("_ones", {"shape": (2, 1, 3), "dtype": "float64"}, _fill_ref(1), "f64"),
    _creation("_ones", {"shape": 5, "dtype": "uint8"}, _fill_ref(1), "int-shape"),
    _creation("_full", {"shape": (2, 2), "value": 7.5}, _fill_ref(None), "f32"),
    _creation("_full", {"shape": (3,), "value": -2.5, "dtype": "int32"}, _fill_ref(None),
              "int-truncates"),
    _creation("_arange", {"start": 0, "stop": 10, "step": 3}, _arange_ref, "step3"),
    _creation("_arange", {"start": 5}, _arange_ref, "stop-none"),
    _creation("_arange", {"start": 0, "stop": 3, "repeat": 2}, _arange_ref, "repeat"),
    _creation("_arange", {"start": 4, "stop": -1, "step": -1.5}, _arange_ref, "negative"),
    _creation("_arange", {"start": -1, "stop": 1, "step": 0.3}, _arange_ref, "float-step"),
    _creation("_arange", {"start": 2.5, "stop": 7, "step": 1.5, "dtype": "int32"},
              _arange_ref, "int-dtype"),
    _creation("_linspace", {"start": 0, "stop": 1, "num": 5}, _linspace_ref, "endpoint"),
    _creation("_linspace", {"start": -1, "stop": 2, "num": 6, "endpoint": False,
                            "dtype": "float64"}, _linspace_ref, "no-endpoint"),
    _creation("_linspace", {"start": 0, "stop": 1, "num": 5, "dtype": "int32"},
              _linspace_ref, "int-truncates"),
    _creation("_eye", {"N": 3}, _eye_ref, "square"),
    _creation("_eye", {"N": 2, "M": 4, "k": 1, "dtype": "int64"}, _eye_ref, "upper"),
    _creation("_eye", {"N": 4, "M": 3, "k": -2}, _eye_ref, "lower"),
    OpCase("zeros_like", shapes=[(2, 3)], ref=np.zeros_like),
    OpCase("ones_like", shapes=[(3, 1, 2)], ref=np.ones_like),
]

_RANDOM = "tests/test_creation_random.py (random values: seeding, moments, ranges)"
TESTED_ELSEWHERE = {name: _RANDOM for name in (
    "_random_uniform", "_random_normal", "_random_randint", "_random_uniform_like",
    "_random_normal_like", "_sample_uniform", "_sample_normal", "_shuffle")}
