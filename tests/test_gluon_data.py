"""gluon.data: samplers, datasets, batchify and the DataLoader, against MXNet 1.9.1's behaviour.

Expected values marked "MXNet 1.9.1" were read off the real library (.oracle) and are
restated here; the rest is computed in the test.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import types

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd
from hybridgpu.gluon import data as gdata
from hybridgpu.gluon.data import (
    ArrayDataset,
    BatchSampler,
    DataLoader,
    Dataset,
    FilterSampler,
    RandomSampler,
    RecordFileDataset,
    Sampler,
    SequentialSampler,
    SimpleDataset,
)
from hybridgpu.gluon.data.dataloader import default_batchify_fn


def _values(batch):
    """Nested lists of NDArrays as nested Python lists (for comparing whole passes)."""
    if isinstance(batch, nd.NDArray):
        return (batch.asnumpy().tolist(), np.dtype(batch.dtype).name, str(batch.context))
    if isinstance(batch, (list, tuple)):
        return [_values(b) for b in batch]
    return batch


# -- samplers -------------------------------------------------------------------------------------
def test_sequential_sampler():
    assert list(SequentialSampler(5)) == [0, 1, 2, 3, 4]
    assert list(SequentialSampler(5, start=2)) == [2, 3, 4, 5, 6]
    assert len(SequentialSampler(5, start=2)) == 5
    assert all(type(i) is int for i in SequentialSampler(3))


def test_random_sampler_uses_numpy_global_rng_like_mxnet():
    np.random.seed(0)
    order = list(RandomSampler(6))
    assert [int(i) for i in order] == [5, 2, 1, 3, 0, 4]  # MXNet 1.9.1, np.random.seed(0)
    assert all(type(i) is np.int64 for i in order)
    np.random.seed(0)
    expected = np.random.permutation(6).tolist()
    np.random.seed(0)
    assert [int(i) for i in RandomSampler(6)] == expected
    # mx.random.seed does not drive it (MXNet neither): two passes after the same mx seed differ
    # only through NumPy's state.
    np.random.seed(1)
    mx.random.seed(0)
    first = [int(i) for i in RandomSampler(50)]
    np.random.seed(1)
    mx.random.seed(123)
    assert [int(i) for i in RandomSampler(50)] == first
    assert sorted(first) == list(range(50))
    assert len(RandomSampler(7)) == 7


def test_sampler_base_is_abstract():
    with pytest.raises(NotImplementedError):
        iter(Sampler())
    with pytest.raises(NotImplementedError):
        len(Sampler())


def test_filter_sampler():
    sampler = FilterSampler(lambda x: x % 2 == 0, [5, 6, 7, 8])
    assert list(sampler) == [1, 3]
    assert len(sampler) == 2


@pytest.mark.parametrize("last_batch, expected, length", [
    ("keep", [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]], 4),
    ("discard", [[0, 1, 2], [3, 4, 5], [6, 7, 8]], 3),
])
def test_batch_sampler_keep_discard(last_batch, expected, length):
    sampler = BatchSampler(SequentialSampler(10), 3, last_batch)
    for _ in range(3):
        assert len(sampler) == length
        assert list(sampler) == expected


def test_batch_sampler_rollover_across_epochs():
    sampler = BatchSampler(SequentialSampler(10), 3, "rollover")
    # MXNet 1.9.1: the leftovers lead the next pass, and len() counts them.
    passes = [[[0, 1, 2], [3, 4, 5], [6, 7, 8]],
              [[9, 0, 1], [2, 3, 4], [5, 6, 7]],
              [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]],
              [[0, 1, 2], [3, 4, 5], [6, 7, 8]]]
    for expected in passes:
        assert len(sampler) == len(expected)
        assert list(sampler) == expected


def test_batch_sampler_edges_and_errors():
    assert list(BatchSampler(SequentialSampler(10), 12, "discard")) == []
    assert len(BatchSampler(SequentialSampler(10), 12, "rollover")) == 0
    assert list(BatchSampler([3, 1, 2], 2)) == [[3, 1], [2]]
    with pytest.raises(ValueError, match="last_batch must be one of 'keep', 'discard', or "
                                         "'rollover', but got foo"):
        BatchSampler(SequentialSampler(10), 3, "foo")
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size must be a positive integer"):
            BatchSampler(SequentialSampler(10), bad)


# -- datasets -------------------------------------------------------------------------------------
def test_simple_dataset_and_transforms():
    ds = SimpleDataset([1, 2, 3, 4, 5])
    assert (len(ds), ds[0], ds[-1]) == (5, 1, 5)
    lazy = ds.transform(lambda x: x * 10)
    assert not isinstance(lazy, SimpleDataset) and isinstance(lazy, Dataset)
    assert (len(lazy), lazy[1], list(lazy)) == (5, 20, [10, 20, 30, 40, 50])
    calls = []
    eager = ds.transform(lambda x: calls.append(x) or x * 10, lazy=False)
    assert type(eager) is SimpleDataset and calls == [1, 2, 3, 4, 5]
    assert eager[1] == 20 and len(calls) == 5  # not called again
    assert SimpleDataset(nd.arange(3))[1].asnumpy().tolist() == [1.0]


def test_transform_versus_transform_first():
    pairs = SimpleDataset([(1, 2), (3, 4)])
    assert pairs.transform(lambda a, b: (a + b, b))[0] == (3, 2)  # tuples are unpacked
    assert pairs.transform(lambda a, b: a + b)[0] == 3
    assert pairs.transform_first(lambda a: a * 10)[0] == (10, 2)  # label untouched
    assert list(pairs.transform_first(lambda a: a * 10, lazy=False)) == [(10, 2), (30, 4)]
    # MXNet 1.9.1: non-tuple samples are passed whole; a 1-tuple gives the bare result.
    assert SimpleDataset([1, 2]).transform_first(lambda a: a * 10)[0] == 10
    assert SimpleDataset([(1,), (3,)]).transform_first(lambda a: a * 10)[0] == 10
    assert SimpleDataset([[1, 2]]).transform_first(lambda a: a * 2)[0] == [1, 2, 1, 2]
    with pytest.raises(TypeError):
        SimpleDataset([[1, 2]]).transform(lambda a, b: a)[0]  # lists are not unpacked


def test_filter_take_sample():
    ds = SimpleDataset([1, 2, 3, 4, 5])
    odd = ds.filter(lambda x: x % 2 == 1)
    assert (len(odd), list(odd)) == (3, [1, 3, 5])
    assert list(ds.transform(lambda x: x * 10).filter(lambda x: x > 25)) == [30, 40, 50]
    assert (list(ds.take(2)), len(ds.take(None)), len(ds.take(99)), len(ds.take(0))) == (
        [1, 2], 5, 5, 0)
    with pytest.raises(ValueError, match="non-negative"):
        ds.take(-1)
    assert list(ds.take(3).transform(lambda x: x + 1)) == [2, 3, 4]
    assert list(ds.sample(SequentialSampler(3, start=1))) == [2, 3, 4]
    assert list(ds.sample(FilterSampler(lambda x: x > 2, ds))) == [3, 4, 5]
    for bad in ([4, 0], 3):
        with pytest.raises(TypeError, match="Expected gluon.data.Sampler instead"):
            ds.sample(bad)


def test_shard_matches_mxnet():
    ten = SimpleDataset(list(range(10)))
    assert [list(ten.shard(4, i)) for i in range(4)] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert [list(ten.shard(3, i)) for i in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    five = SimpleDataset([1, 2, 3, 4, 5])
    assert [list(five.shard(3, i)) for i in range(3)] == [[1, 2], [3, 4], [5]]
    assert list(five.shard(7, 6)) == []
    with pytest.raises(AssertionError, match="Shard index of out bound: 3 out of 3"):
        five.shard(3, 3)
    with pytest.raises(AssertionError, match="Index must be non-negative"):
        five.shard(3, -1)


def test_computed_dataset_iterates_len_samples():
    class Squares(Dataset):
        def __getitem__(self, idx):
            return idx * idx  # never raises IndexError

        def __len__(self):
            return 4

    # MXNet 1.9.1's Dataset has no __iter__, so list() of this dataset never ends there.
    assert list(Squares()) == [0, 1, 4, 9]
    assert list(Squares().transform(lambda x: x + 1)) == [1, 2, 5, 10]
    assert [b.asnumpy().tolist() for b in DataLoader(Squares(), batch_size=3)] == [[0, 1, 4], [9]]


def test_dataset_base_is_abstract():
    with pytest.raises(NotImplementedError):
        Dataset()[0]
    with pytest.raises(NotImplementedError):
        len(Dataset())


def test_array_dataset():
    ds = ArrayDataset(nd.arange(3), np.arange(3) * 2)
    assert len(ds) == 3
    data, label = ds[1]
    # MXNet 1.9.1: 1-D NDArrays become NumPy arrays, so samples are NumPy scalars.
    assert type(data) is np.float32 and data == 1.0
    assert type(label) is np.int64 and label == 2
    assert isinstance(ds._data[0], np.ndarray)
    rows = ArrayDataset(nd.arange(6).reshape(3, 2))
    assert isinstance(rows[0], nd.NDArray) and rows[0].asnumpy().tolist() == [0.0, 1.0]
    assert ArrayDataset([1, 2, 3])[1] == 2  # one array: the sample itself, not a tuple
    assert ArrayDataset([1, 2, 3], [4, 5, 6])[1] == (2, 5)
    assert ArrayDataset(range(3))[1] == 1 and ArrayDataset("abc")[1] == "b"
    first, second = ArrayDataset(nd.arange(4), [1, 2, 3, 4])[1:3]
    assert first.tolist() == [1.0, 2.0] and second == [2, 3]


def test_array_dataset_errors():
    with pytest.raises(ValueError, match=r"array\[0\] has length 3 while array\[2\] has length "
                                         "2"):
        ArrayDataset([1, 2, 3], [4, 5, 6], [7, 8])
    with pytest.raises(AssertionError, match="Needs at least 1 arrays"):  # MXNet's type
        ArrayDataset()
    with pytest.raises(TypeError):
        ArrayDataset(5)


# RecordIO file written by MXNet 1.9.1's MXIndexedRecordIO (keys 0..5). Records 1 and 4 hold the
# magic number at a 4-byte boundary, so MXNet split them into parts.
_MAGIC = bytes.fromhex("0a23d7ce")
_REC_PAYLOADS = [b"abc", b"12345678" + _MAGIC + b"xyz", _MAGIC, b"",
                 b"ab" + _MAGIC + b"cd" + _MAGIC, b"q" * 13]
_REC_HEX = ("0a23d7ce03000000616263000a23d7ce0800002031323334353637380a23d7ce0300006078797a00"
            "0a23d7ce000000200a23d7ce000000600a23d7ce000000000a23d7ce0800002061620a23d7ce6364"
            "0a23d7ce000000600a23d7ce0d00000071717171717171717171717171000000")
_REC_IDX = "0\t0\n1\t12\n2\t40\n3\t56\n4\t64\n5\t88\n"


def test_record_file_dataset_reads_mxnet_files(tmp_path):
    rec = tmp_path / "data.rec"
    rec.write_bytes(bytes.fromhex(_REC_HEX))
    (tmp_path / "data.idx").write_text(_REC_IDX)
    ds = RecordFileDataset(str(rec))
    assert len(ds) == 6
    assert [ds[i] for i in range(6)] == _REC_PAYLOADS
    assert ds[-1] == b"q" * 13
    loaded = list(DataLoader(ds, batch_size=2, batchify_fn=list, num_workers=3))
    assert loaded == [_REC_PAYLOADS[0:2], _REC_PAYLOADS[2:4], _REC_PAYLOADS[4:6]]


def test_record_file_dataset_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        RecordFileDataset(str(tmp_path / "missing.rec"))
    rec = tmp_path / "d.rec"
    rec.write_bytes(bytes.fromhex(_REC_HEX))
    with pytest.raises(FileNotFoundError, match="index"):
        RecordFileDataset(str(rec))
    (tmp_path / "d.idx").write_text("0\t4\n")
    with pytest.raises(ValueError, match="bad magic number"):
        RecordFileDataset(str(rec))[0]
    rec.write_bytes(bytes.fromhex(_REC_HEX)[:20])
    (tmp_path / "d.idx").write_text("0\t12\n")
    with pytest.raises(ValueError, match="truncated"):
        RecordFileDataset(str(rec))[0]


# -- batchify -------------------------------------------------------------------------------------
def test_default_batchify_nested_tuples():
    batch = default_batchify_fn([(1, (2, 3.5)), (4, (5, 6.5))])
    assert _values(batch) == [([1, 4], "int64", "cpu(0)"),
                              [([2, 5], "int64", "cpu(0)"), ([3.5, 6.5], "float64", "cpu(0)")]]
    assert isinstance(batch, list) and isinstance(batch[1], list)  # MXNet gives lists


def test_default_batchify_types():
    assert _values(default_batchify_fn([[1, 2], [3, 4]])) == ([[1, 2], [3, 4]], "int64",
                                                               "cpu(0)")
    stacked = default_batchify_fn([nd.ones(2, dtype="int32"), nd.zeros(2, dtype="int32")])
    assert _values(stacked) == ([[1, 1], [0, 0]], "int32", "cpu(0)")
    on_cpu1 = default_batchify_fn([nd.ones(2, ctx=mx.cpu(1)), nd.zeros(2, ctx=mx.cpu(1))])
    assert on_cpu1.context == mx.cpu(1)
    assert default_batchify_fn([np.ones(2), np.zeros(2)]).dtype == np.float64
    assert default_batchify_fn([np.float32(1), np.float32(2)]).dtype == np.float32
    assert default_batchify_fn([True, False]).dtype == np.bool_
    mixed = default_batchify_fn([(nd.ones(2), 1), (nd.zeros(2), 2)])
    assert _values(mixed) == [([[1.0, 1.0], [0.0, 0.0]], "float32", "cpu(0)"),
                              ([1, 2], "int64", "cpu(0)")]


def test_default_batchify_errors_are_clear():
    with pytest.raises(ValueError, match=r"same shape, got shape \(2,\) and shape \(3,\)"):
        default_batchify_fn([nd.ones(2), nd.zeros(3)])
    with pytest.raises(ValueError, match="same shape"):
        default_batchify_fn([np.ones(2), np.zeros(3)])
    with pytest.raises(TypeError, match="cannot batch samples of type str"):
        default_batchify_fn(["a", "b"])
    with pytest.raises(TypeError, match="cannot batch samples of type dict"):
        default_batchify_fn([{"a": 1}, {"a": 2}])
    with pytest.raises(ValueError, match="empty"):
        default_batchify_fn([])


# -- DataLoader: arguments ------------------------------------------------------------------------
def _dataset():
    return ArrayDataset(nd.arange(10), np.arange(10) * 2)


def test_dataloader_argument_errors_match_mxnet():
    ds = _dataset()
    batches = BatchSampler(SequentialSampler(10), 3)
    with pytest.raises(ValueError, match="batch_size must be specified unless batch_sampler"):
        DataLoader(ds)
    conflict = "batch_size, shuffle, sampler and last_batch must not be specified"
    for kwargs in ({"batch_size": 3}, {"shuffle": True}, {"last_batch": "keep"},
                   {"sampler": SequentialSampler(10)}):
        with pytest.raises(ValueError, match=conflict):
            DataLoader(ds, batch_sampler=batches, **kwargs)
    with pytest.raises(ValueError, match="shuffle must not be specified if sampler is specified"):
        DataLoader(ds, batch_size=3, shuffle=True, sampler=SequentialSampler(10))
    with pytest.raises(ValueError, match="last_batch must be one of"):
        DataLoader(ds, batch_size=3, last_batch="foo")
    with pytest.raises(TypeError, match="num_workers must be an integer"):
        DataLoader(ds, batch_size=3, num_workers=2.5)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(ds, batch_size=3, timeout=0)


def test_dataloader_defaults_like_mxnet():
    ds = _dataset()
    assert DataLoader(ds, batch_size=3, num_workers=-1)._num_workers == 0
    assert DataLoader(ds, batch_size=3, prefetch=-1)._prefetch == 0
    assert DataLoader(ds, batch_size=3, num_workers=2)._prefetch == 4
    assert DataLoader(ds, batch_size=3, num_workers=2, prefetch=1)._prefetch == 1
    assert DataLoader(ds, batch_size=4, batchify_fn=len)._batchify_fn is len
    assert [len(DataLoader(ds, batch_size=3, last_batch=mode))
            for mode in ("keep", "discard", "rollover")] == [4, 3, 3]
    assert len(DataLoader(ds, batch_sampler=BatchSampler(SequentialSampler(10), 4))) == 3
    assert list(DataLoader(ds, batch_size=4, batchify_fn=len)) == [4, 4, 2]


# -- DataLoader: batches --------------------------------------------------------------------------
def test_dataloader_batches_and_dtypes():
    batches = list(DataLoader(_dataset(), batch_size=4))
    assert _values(batches) == [
        [([0.0, 1.0, 2.0, 3.0], "float32", "cpu(0)"), ([0, 2, 4, 6], "int64", "cpu(0)")],
        [([4.0, 5.0, 6.0, 7.0], "float32", "cpu(0)"), ([8, 10, 12, 14], "int64", "cpu(0)")],
        [([8.0, 9.0], "float32", "cpu(0)"), ([16, 18], "int64", "cpu(0)")]]
    assert _values(list(DataLoader(SimpleDataset([1, 2, 3]), batch_size=2))) == [
        ([1, 2], "int64", "cpu(0)"), ([3], "int64", "cpu(0)")]
    assert list(DataLoader([1.5, 2.0, 3.0], batch_size=2))[0].dtype == np.float64
    rows = list(DataLoader(nd.arange(6).reshape(3, 2), batch_size=2))
    assert [r.shape for r in rows] == [(2, 2), (1, 2)]
    sampled = list(DataLoader(_dataset(), batch_size=2, sampler=[1, 2, 3]))
    assert _values(sampled)[1] == [([3.0], "float32", "cpu(0)"), ([6], "int64", "cpu(0)")]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_last_batch_modes(num_workers):
    ds = SimpleDataset(list(range(10)))

    def run(mode):
        loader = DataLoader(ds, batch_size=3, last_batch=mode, num_workers=num_workers)
        return [[b.asnumpy().tolist() for b in loader] for _ in range(3)]

    assert run("keep") == [[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]] * 3
    assert run("discard") == [[[0, 1, 2], [3, 4, 5], [6, 7, 8]]] * 3
    assert run("rollover") == [[[0, 1, 2], [3, 4, 5], [6, 7, 8]],
                               [[9, 0, 1], [2, 3, 4], [5, 6, 7]],
                               [[8, 9, 0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]]


def test_dataloader_shuffle_order_follows_numpy_seed():
    ds = SimpleDataset(list(range(10)))
    np.random.seed(3)
    order = np.random.permutation(10).tolist()
    np.random.seed(3)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    assert [v for b in loader for v in b.asnumpy().tolist()] == order
    second = [v for b in loader for v in b.asnumpy().tolist()]
    assert sorted(second) == list(range(10)) and second != order


def test_dataloader_pin_memory_and_current_context():
    pinned = list(DataLoader(_dataset(), batch_size=4, pin_memory=True, pin_device_id=1))
    assert {b.context for batch in pinned for b in batch} == {mx.Context("cpu_pinned", 1)}
    with mx.cpu(1):
        for workers in (0, 2):
            loader = DataLoader(SimpleDataset([1, 2, 3]), batch_size=2, num_workers=workers)
            assert {b.context for b in loader} == {mx.cpu(1)}


# -- DataLoader: threads --------------------------------------------------------------------------
class _SlowDataset(Dataset):
    """Samples that take a random time to read, so threads finish out of order."""

    def __init__(self, n, fail_at=None):
        self._n, self._fail_at = n, fail_at
        self._rng = random.Random(0)

    def __len__(self):
        return self._n

    def __getitem__(self, idx):
        time.sleep(self._rng.random() * 0.004)
        if idx == self._fail_at:
            raise KeyError(f"sample {idx} is broken")
        return np.full((2,), idx, dtype="float32"), idx % 3


def _loader_threads():
    return [t for t in threading.enumerate() if t.name.startswith("hybridgpu-DataLoader")]


def _wait_no_loader_threads():
    deadline = time.time() + 5
    while _loader_threads() and time.time() < deadline:
        time.sleep(0.01)
    return _loader_threads()


@pytest.mark.parametrize("num_workers, prefetch", [(1, None), (3, None), (4, 1), (2, 0)])
def test_threaded_loader_matches_single_thread(num_workers, prefetch):
    ds = _SlowDataset(23)
    reference = _values(list(DataLoader(ds, batch_size=3)))
    loader = DataLoader(ds, batch_size=3, num_workers=num_workers, prefetch=prefetch)
    assert _values(list(loader)) == reference
    assert _values(list(loader)) == reference  # a second pass too
    assert _wait_no_loader_threads() == []


def test_threaded_loader_uses_threads_and_shuts_down_when_abandoned():
    seen = set()

    def fn(x):
        seen.add(threading.current_thread().name)
        return x

    loader = DataLoader(SimpleDataset(list(range(40))).transform(fn), batch_size=2,
                        num_workers=3)
    for i, _ in enumerate(loader):
        if i == 2:
            break
    assert seen and all(name.startswith("hybridgpu-DataLoader") for name in seen)
    assert _wait_no_loader_threads() == []
    it = iter(loader)
    next(it)
    it.close()
    assert _wait_no_loader_threads() == []


def test_threaded_loader_raises_worker_errors_in_order():
    loader = DataLoader(_SlowDataset(12, fail_at=7), batch_size=2, num_workers=3)
    got = []
    with pytest.raises(KeyError, match="sample 7 is broken"):
        for x, _ in loader:
            got.append(x.asnumpy()[:, 0].tolist())
    assert got == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert _wait_no_loader_threads() == []


def test_threaded_loader_timeout():
    slow = SimpleDataset([1, 2]).transform(lambda x: time.sleep(0.5) or x)
    with pytest.raises(TimeoutError, match="more than 0.05 s"):
        list(DataLoader(slow, batch_size=1, num_workers=1, timeout=0.05))


def test_threaded_loader_pin_memory():
    loader = DataLoader(_dataset(), batch_size=4, pin_memory=True, num_workers=2)
    assert {b.context for batch in loader for b in batch} == {mx.Context("cpu_pinned", 0)}


def test_auto_reload_prefetches_next_pass():
    calls = []
    ds = SimpleDataset(list(range(4))).transform(lambda x: calls.append(x) or x)
    loader = DataLoader(ds, batch_size=2, num_workers=1, auto_reload=True)
    deadline = time.time() + 5
    while len(calls) < 4 and time.time() < deadline:  # the first pass starts at construction
        time.sleep(0.01)
    assert sorted(calls) == [0, 1, 2, 3]
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3]]
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3]]
    loader.close()
    assert _wait_no_loader_threads() == []


# -- DataLoader: progress bar ---------------------------------------------------------------------
def test_progress_bar_with_tqdm(monkeypatch):
    made = []

    def fake_tqdm(iterable, total=None, **kwargs):
        made.append((total, kwargs))
        yield from iterable

    monkeypatch.setitem(sys.modules, "tqdm", types.SimpleNamespace(tqdm=fake_tqdm))
    loader = DataLoader(SimpleDataset(list(range(5))), batch_size=2, progress={"desc": "train"})
    assert [b.asnumpy().tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    assert made == [(3, {"desc": "train"})]
    assert len(list(DataLoader([1, 2, 3], batch_size=2, progress=True))) == 2
    assert made[-1] == (2, {})


def test_progress_bar_without_tqdm_warns(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # makes `import tqdm` fail
    with pytest.warns(UserWarning, match="needs the tqdm package"):
        loader = DataLoader([1, 2, 3], batch_size=2, progress=True)
    assert [b.asnumpy().tolist() for b in loader] == [[1, 2], [3]]


def test_namespace():
    assert gdata.DataLoader is DataLoader
    assert gdata.dataloader.default_batchify_fn is default_batchify_fn
    for name in ("ArrayDataset", "BatchSampler", "DataLoader", "Dataset", "FilterSampler",
                 "RandomSampler", "RecordFileDataset", "Sampler", "SequentialSampler",
                 "SimpleDataset", "dataloader", "dataset", "sampler", "vision"):
        assert hasattr(gdata, name), name
    assert os.path.basename(gdata.__file__) == "__init__.py"


# -- vision ---------------------------------------------------------------------------------------
def _write_idx(path, magic, array, compress=True):
    import gzip
    import struct

    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.tobytes())


def test_mnist_reads_local_idx_files(tmp_path):
    from hybridgpu.gluon.data.vision import MNIST, FashionMNIST

    rng = np.random.RandomState(0)
    images = rng.randint(0, 256, size=(5, 28, 28)).astype("uint8")
    labels = np.array([3, 1, 4, 1, 5], dtype="uint8")
    _write_idx(str(tmp_path / "train-images-idx3-ubyte.gz"), 2051, images)
    _write_idx(str(tmp_path / "train-labels-idx1-ubyte"), 2049, labels, compress=False)
    ds = MNIST(root=str(tmp_path))
    assert len(ds) == 5
    image, label = ds[2]
    assert isinstance(image, nd.NDArray) and (image.shape, image.dtype) == ((28, 28, 1), np.uint8)
    assert np.array_equal(image.asnumpy()[:, :, 0], images[2])
    assert type(label) is np.int32 and label == 4
    scaled = MNIST(root=str(tmp_path), transform=lambda x, y: (x.astype("float32") / 255, y + 1))
    assert scaled[0][0].dtype == np.float32 and scaled[0][1] == 4
    batches = list(DataLoader(ds, batch_size=2, num_workers=2))
    assert [(x.shape, y.asnumpy().tolist()) for x, y in batches] == [
        ((2, 28, 28, 1), [3, 1]), ((2, 28, 28, 1), [4, 1]), ((1, 28, 28, 1), [5])]
    assert len(FashionMNIST(root=str(tmp_path))) == 5
    with pytest.raises(FileNotFoundError, match=r"t10k-images-idx3-ubyte.gz.*does not download"):
        MNIST(root=str(tmp_path), train=False)
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte.gz"), 2051, images)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte.gz"), 2051, labels)
    with pytest.raises(ValueError, match="magic number 2049"):
        MNIST(root=str(tmp_path), train=False)


def _cifar_bytes(labels, images):
    """CIFAR binary records: label byte(s) then the 3072 channel-major pixels."""
    rows = [bytes(lab) + img.transpose(2, 0, 1).tobytes() for lab, img in zip(labels, images)]
    return b"".join(rows)


def test_cifar_reads_local_archives_and_folders(tmp_path):
    import io
    import tarfile

    from hybridgpu.gluon.data.vision import CIFAR10, CIFAR100

    rng = np.random.RandomState(1)
    images = rng.randint(0, 256, size=(3, 32, 32, 3)).astype("uint8")
    archive = tmp_path / "cifar-100-binary.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, labs in (("train.bin", [(1, 7), (2, 8), (3, 9)]), ("test.bin", [(4, 5)])):
            blob = _cifar_bytes(labs, images[:len(labs)])
            info = tarfile.TarInfo(f"cifar-100-binary/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    coarse = CIFAR100(root=str(tmp_path))
    assert len(coarse) == 3 and [int(coarse[i][1]) for i in range(3)] == [1, 2, 3]
    fine = CIFAR100(root=str(tmp_path), fine_label=True)
    assert [int(fine[i][1]) for i in range(3)] == [7, 8, 9]
    assert fine[1][0].shape == (32, 32, 3) and np.array_equal(fine[1][0].asnumpy(), images[1])
    assert len(CIFAR100(root=str(tmp_path), train=False)) == 1
    folder = tmp_path / "c10" / "cifar-10-batches-bin"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        (folder / f"data_batch_{i}.bin").write_bytes(_cifar_bytes([(i,)], images[:1]))
    (folder / "test_batch.bin").write_bytes(_cifar_bytes([(0,), (9,)], images[:2]))
    train = CIFAR10(root=str(tmp_path / "c10"))
    assert len(train) == 5 and train._label.tolist() == [1, 2, 3, 4, 5]
    assert train._label.dtype == np.int32 and train[0][0].dtype == np.uint8
    assert [int(y) for _, y in CIFAR10(root=str(tmp_path / "c10"), train=False)] == [0, 9]
    with pytest.raises(FileNotFoundError, match="cifar-10-binary.tar.gz"):
        CIFAR10(root=str(tmp_path / "empty"))
    flat = tmp_path / "flat"  # MXNet's own cache layout: the .bin files directly in root
    flat.mkdir()
    (flat / "train.bin").write_bytes(_cifar_bytes([(6, 60)], images[2:3]))
    (flat / "test.bin").write_bytes(b"")
    mxnet_layout = CIFAR100(root=str(flat), fine_label=True)
    assert len(mxnet_layout) == 1 and int(mxnet_layout[0][1]) == 60
    assert np.array_equal(mxnet_layout[0][0].asnumpy(), images[2])


def test_vision_transforms_match_mxnet():
    from hybridgpu.gluon.data.vision import transforms

    image = nd.array(np.arange(12).reshape(2, 2, 3), dtype="uint8")
    tensor = transforms.ToTensor()(image)
    assert (tensor.shape, tensor.dtype) == ((3, 2, 2), np.float32)
    np.testing.assert_allclose(tensor.asnumpy(),
                               np.arange(12).reshape(2, 2, 3).transpose(2, 0, 1) / 255, rtol=1e-6)
    assert transforms.ToTensor()(nd.stack(image, image)).shape == (2, 3, 2, 2)
    # MXNet 1.9.1 values:
    np.testing.assert_allclose(transforms.Normalize(0.5, 0.25)(tensor).asnumpy()[0, 0],
                               [-2.0, -1.9529412], rtol=1e-6)
    per_channel = transforms.Normalize((0.1, 0.2, 0.3), (1, 2, 4))
    np.testing.assert_allclose(per_channel(tensor).asnumpy()[:, 0, 0],
                               [-0.1, -0.09803922, -0.07303922], rtol=1e-6)
    assert per_channel(nd.stack(tensor, tensor)).shape == (2, 3, 2, 2)
    with pytest.raises(mx.MXNetError, match="mean must have either 1 or 3 elements"):
        transforms.Normalize((0.1, 0.2), (1, 2))(tensor)
    with pytest.raises(mx.MXNetError, match=r"Input image must have shape"):
        transforms.ToTensor()(nd.ones((2, 2)))
    assert transforms.Cast("float16")(image).dtype == np.float16
    composed = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.25),
                                   lambda x: x * 2])
    np.testing.assert_allclose(composed(image).asnumpy()[0, 0], [-4.0, -3.9058824], rtol=1e-6)
    assert type(composed[0]).__name__ == "HybridSequential" and len(composed) == 2
    with pytest.raises(AttributeError, match="image operators"):
        transforms.RandomHue  # noqa: B018  (RandomResizedCrop, RandomLighting are here: issue 21)
