"""``mx.io``: ``NDArrayIter`` batches against MXNet 1.9.1's (fixtures written by
``tests/fixtures/make_mxnet_module_fixtures.py``), ``DataBatch``/``DataDesc``, and bad input.

Run: ``PYTHONPATH=src python -m pytest -q tests/test_io.py``
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fixtures"))

import make_mxnet_module_fixtures as gen  # noqa: E402

ITERATORS = json.loads((HERE / "fixtures" / "mxnet_module" / "iterators.json").read_text())


def _describe(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in descs]


def _run_epochs(it, epochs):
    out = []
    for _ in range(epochs):
        out.append([{"data": [d.asnumpy().tolist() for d in b.data],
                     "label": [lb.asnumpy().tolist() for lb in b.label or []],
                     "pad": b.pad, "index": b.index} for b in it])
        it.reset()
    return out


@pytest.mark.parametrize("case", sorted(gen.ITER_CASES))
def test_ndarray_iter_batches_match_mxnet(case):
    kind, batch_size, shuffle, handle, extra = gen.ITER_CASES[case]
    data, label = gen.iter_inputs(kind)
    np.random.seed(gen.ITER_SEED)
    it = mx.io.NDArrayIter(data, label, batch_size=batch_size, shuffle=shuffle,
                           last_batch_handle=handle, **extra)
    expected = ITERATORS[case]
    assert _run_epochs(it, gen.EPOCHS) == expected["epochs"]
    assert _describe(it.provide_data) == expected["provide_data"]
    assert _describe(it.provide_label) == expected["provide_label"]


def test_roll_over_carries_the_short_batch_and_hard_reset_drops_it():
    it = mx.io.NDArrayIter(np.arange(5.0), batch_size=2, last_batch_handle="roll_over")
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0.0, 1.0], [2.0, 3.0]]
    it.hard_reset()
    first = next(it)
    assert first.data[0].asnumpy().tolist() == [0.0, 1.0] and first.pad == 0


def test_getpad_getdata_and_manual_iteration():
    it = mx.io.NDArrayIter(np.arange(6.0).reshape(3, 2), np.arange(3.0), batch_size=2)
    assert it.iter_next() and it.getpad() == 0
    assert it.getdata()[0].asnumpy().tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert it.iter_next() and it.getpad() == 1
    assert it.getlabel()[0].asnumpy().tolist() == [2.0, 0.0]
    assert it.getindex() is None
    assert not it.iter_next()


def test_ndarray_inputs_keep_their_context_and_dtype():
    x = mx.nd.array(np.arange(4).reshape(4, 1), dtype="int32")
    it = mx.io.NDArrayIter(x, batch_size=2, shuffle=True)
    batch = next(it)
    assert batch.data[0].dtype == np.int32 and batch.data[0].context == mx.cpu()
    assert sorted(np.concatenate([batch.data[0].asnumpy().ravel(),
                                  next(it).data[0].asnumpy().ravel()]).tolist()) == [0, 1, 2, 3]


def test_layout_with_batch_axis_one():
    x = np.arange(12.0).reshape(2, 6)   # (T, N) with N = 6
    it = mx.io.NDArrayIter(x, batch_size=4, layout="TN", last_batch_handle="discard")
    assert it.provide_data[0].shape == (2, 4)
    assert [b.data[0].shape for b in it] == [(2, 4)]


@pytest.mark.parametrize("kwargs, message", [
    ({"last_batch_handle": "keep"}, "last_batch_handle must be one of"),
    ({"batch_size": 0}, "batch_size must be a positive int"),
])
def test_bad_arguments_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mx.io.NDArrayIter(np.ones((4, 2)), **kwargs)


def test_mismatched_example_counts_raise():
    with pytest.raises(ValueError, match="same number of examples"):
        mx.io.NDArrayIter(np.ones((4, 2)), np.ones(5))


def test_bad_data_types_raise():
    with pytest.raises(TypeError, match="input must be an NDArray"):
        mx.io.NDArrayIter(42)
    with pytest.raises(ValueError, match="data must be given"):
        mx.io.NDArrayIter(None)


def test_data_batch_and_desc():
    desc = mx.io.DataDesc("x", (4, 3), "float16", "NC")
    assert desc == ("x", (4, 3)) and desc.dtype == "float16" and desc.layout == "NC"
    assert mx.io.DataDesc.get_list([("x", (1,))], [("x", "int8")])[0].dtype == "int8"
    with pytest.raises(TypeError, match="data must be a list"):
        mx.io.DataBatch(mx.nd.ones(2))
    assert str(mx.io.DataBatch([mx.nd.ones((2, 1))])) == \
        "DataBatch: data shapes: [(2, 1)] label shapes: None"
