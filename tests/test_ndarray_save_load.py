"""``nd.save`` / ``nd.load`` / ``nd.load_frombuffer``: MXNet's binary ``.params`` format.

The fixtures in ``fixtures/mxnet_params/`` were written by MXNet 1.9.1
(``fixtures/make_mxnet_params_fixtures.py``); their contents are recomputed here from the same
``values`` function, and hybridgpu must write the same bytes for the same arrays.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import pickle
import random
import struct
import subprocess
import tracemalloc

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError
from hybridgpu.serialization import ndarray_file

nd = mx.nd
HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_params"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"

_spec = importlib.util.spec_from_file_location(
    "make_mxnet_params_fixtures", HERE / "fixtures" / "make_mxnet_params_fixtures.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

DTYPES = gen.DTYPES
V2 = ndarray_file.V2_MAGIC


def fixture_bytes(stem):
    return (FIXTURES / f"{stem}.params").read_bytes()


def expected(stem):
    """(kind, [(name, numpy array, context)]) that fixture ``stem`` holds."""
    case = gen.CASES[stem]
    items = [(s["name"], gen.values(s["dtype"], s["shape"], s["seed"]), s["ctx"])
             for s in case["arrays"]]
    return case["kind"], items


def make_ndarrays(stem):
    """The NDArrays (list, dict or single NDArray) hybridgpu saves for fixture ``stem``."""
    kind, items = expected(stem)
    arrays = [nd.array(host, ctx=mx.Context(*ctx), dtype=host.dtype) for _, host, ctx in items]
    if kind == "dict":
        return {name: a for (name, _, _), a in zip(items, arrays)}
    return arrays[0] if kind == "single" else arrays


def assert_same(got, want):
    assert isinstance(got, nd.NDArray)
    assert got.shape == want.shape and got.dtype == want.dtype.type, (got.shape, got.dtype)
    np.testing.assert_array_equal(got.asnumpy(), want)


def assert_loaded(loaded, kind, items):
    if kind == "dict" and items:
        assert isinstance(loaded, dict)
        assert list(loaded) == [name for name, _, _ in items]
        values = list(loaded.values())
    else:
        assert isinstance(loaded, list)  # MXNet returns a list for a file without names
        values = loaded
    assert len(values) == len(items)
    for got, (_, want, _) in zip(values, items):
        assert_same(got, want)
        assert got.context == mx.cpu(0)


def build(records, names=(), header=(ndarray_file.LIST_MAGIC, 0), count=None):
    """A file from raw record bytes and names (bytes), with an optional forged header/count."""
    count = len(records) if count is None else count
    out = struct.pack("<QQQ", *header, count) + b"".join(records)
    out += struct.pack("<Q", len(names))
    return out + b"".join(struct.pack("<Q", len(n)) + n for n in names)


def v2_record(shape=(3,), flag=0, data=None, stype=0, device=(1, 0), magic=V2, dims_fmt="q"):
    if data is None:
        data = np.arange(int(np.prod(shape)), dtype=ndarray_file.DTYPE_FLAGS[flag]).tobytes()
    return (struct.pack("<Iii", magic, stype, len(shape))
            + struct.pack(f"<{len(shape)}{dims_fmt}", *shape)
            + struct.pack("<iii", *device, flag) + data)


def load_error(blob):
    with pytest.raises(MXNetError) as info:
        nd.load_frombuffer(blob)
    return str(info.value)


# -- MXNet-written fixtures -------------------------------------------------------------------
@pytest.mark.parametrize("stem", sorted(gen.CASES))
def test_loading_mxnet_fixture_gives_the_generated_arrays(stem):
    kind, items = expected(stem)
    assert_loaded(nd.load(str(FIXTURES / f"{stem}.params")), kind, items)
    assert_loaded(nd.load_frombuffer(fixture_bytes(stem)), kind, items)


@pytest.mark.parametrize("stem", sorted(s for s, c in gen.CASES.items() if not c.get("np_shape")))
def test_save_writes_mxnets_bytes(tmp_path, stem):
    path = tmp_path / "out.params"
    nd.save(str(path), make_ndarrays(stem))
    assert path.read_bytes() == fixture_bytes(stem)


def test_np_shape_file_loads_and_zero_d_arrays_get_a_v1_record(tmp_path):
    """MXNet in numpy-shape mode writes V3 records; hybridgpu reads them, and writes a 0-d array
    as a V1 record (MXNet's V2 cannot hold one) and everything else as MXNet's V2."""
    loaded = nd.load(FIXTURES / "np_shape_v3.params")
    assert [a.shape for a in loaded] == [(), (2, 0), (3,), ()]
    nd.save(tmp_path / "x.params", loaded)
    records, _ = ndarray_file.load(tmp_path / "x.params")
    assert [r.version for r in records] == [1, 2, 2, 1]
    assert_loaded(nd.load(tmp_path / "x.params"), *expected("np_shape_v3"))


@pytest.mark.parametrize("stem", sorted(gen.CRAFTED))
def test_legacy_v1_and_pre_v1_records_load(stem):
    """MXNet 1.9 still reads V1 and pre-V1 records (the generator checked it); so do we."""
    assert fixture_bytes(stem) == gen.crafted_bytes(stem)
    records, names = gen.CRAFTED[stem]
    loaded = nd.load(FIXTURES / f"{stem}.params")
    got = [loaded[n] for n in names] if names else loaded
    assert isinstance(loaded, dict if names else list) and len(got) == len(records)
    for array, (_, dtype, shape, seed) in zip(got, records):
        assert_same(array, gen.values(dtype, shape, seed))


@pytest.mark.parametrize("stem,message", sorted(gen.REFUSED.items()))
def test_files_hybridgpu_cannot_represent_are_refused_clearly(stem, message):
    with pytest.raises(MXNetError, match="cannot load .*" + stem) as info:
        nd.load(FIXTURES / f"{stem}.params")
    assert message in str(info.value)


def test_fixtures_are_small():
    assert sum(p.stat().st_size for p in FIXTURES.iterdir()) < 40_000


# -- round trips -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (5,), (2, 3, 4)])
def test_round_trip_every_dtype_and_shape(tmp_path, dtype, shape):
    host = gen.values(dtype, shape, 7)
    nd.save(tmp_path / "a.params", {"x": nd.array(host, dtype=dtype)})
    (got,) = nd.load(tmp_path / "a.params").values()
    assert_same(got, host)


def test_round_trip_list_tuple_single_and_empty(tmp_path):
    a, b = nd.array([[1, 2], [3, 4]]), nd.array([5], dtype="int64")
    path = tmp_path / "l.params"
    for data, want in [([a, b], [a, b]), ((a, b), [a, b]), (a, [a]), ([], []), ({}, [])]:
        nd.save(path, data)
        loaded = nd.load(path)
        assert isinstance(loaded, list) and len(loaded) == len(want)
        for got, ref in zip(loaded, want):
            assert_same(got, ref.asnumpy())


def test_round_trip_dict_keeps_order_and_names(tmp_path):
    data = {"z": nd.array([1]), "": nd.array([2]), "é✓/name": nd.array([3]), "a": nd.array([4])}
    nd.save(tmp_path / "d.params", data)
    loaded = nd.load(tmp_path / "d.params")
    assert list(loaded) == list(data)
    for name in data:
        assert_same(loaded[name], data[name].asnumpy())


def test_round_trip_non_contiguous_and_from_buffer(tmp_path):
    base = nd.array(np.arange(12.0).reshape(3, 4))
    view = nd.NDArray(base.handle[:, ::2], mx.cpu())
    nd.save(tmp_path / "v.params", [view])
    blob = (tmp_path / "v.params").read_bytes()
    for buf in (blob, bytearray(blob), memoryview(blob)):
        assert_same(nd.load_frombuffer(buf)[0], view.asnumpy())


def test_loaded_arrays_are_writable_copies():
    blob = fixture_bytes("dtypes_list")
    first = nd.load_frombuffer(blob)[0]
    first[0] = 100
    assert nd.load_frombuffer(blob)[0].asnumpy()[0, 0] != 100


def test_paths_may_be_pathlike_and_load_of_missing_file_is_mxnet_error(tmp_path):
    nd.save(tmp_path / "p.params", [nd.array([1])])
    assert nd.load(tmp_path / "p.params")[0].asscalar() == 1
    with pytest.raises(MXNetError, match="missing.params"):
        nd.load(tmp_path / "missing.params")
    with pytest.raises(MXNetError, match="cannot load"):
        nd.load(tmp_path)
    with pytest.raises(TypeError):
        nd.load(3)
    with pytest.raises(TypeError, match="bytes-like"):
        nd.load_frombuffer("abc")


def test_save_rejects_what_mxnet_rejects(tmp_path):
    path = tmp_path / "bad.params"
    a = nd.array([1])
    for data in (3, np.zeros(2), "x", None):
        with pytest.raises(ValueError, match="data needs to either be a NDArray"):
            nd.save(path, data)
    for data in ([a, 1], [np.zeros(2)], {1: a}, {"a": np.zeros(2)}):
        with pytest.raises(TypeError, match="save only accept"):
            nd.save(path, data)
    with pytest.raises(MXNetError, match="dtype int16 cannot be saved"):
        nd.save(path, {"w": nd.array([1], dtype="int16")})
    with pytest.raises(MXNetError, match="not valid UTF-8"):
        nd.save(path, {"bad\ud800": a})
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":  # NumPy 1.x stops at 32 dims itself
        with pytest.raises(MXNetError, match="33 dims; at most 32"):
            nd.save(path, [nd.array(np.zeros((1,) * 33))])
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_saved_context_is_recorded_and_loads_onto_cpu(tmp_path, monkeypatch):
    nd.save(tmp_path / "c.params", [nd.array([1], ctx=mx.cpu(3))])
    assert ndarray_file.load(tmp_path / "c.params")[0][0].device == ("cpu", 3)
    assert nd.load(tmp_path / "c.params")[0].context == mx.cpu(0)
    # A gpu array with no such gpu loads onto cpu(0) (MXNet's CPU builds do the same).
    monkeypatch.setattr(mx.nd.utils, "num_gpus", lambda: 0)
    blob = build([v2_record(device=(2, 1))], [b"w"])
    got = nd.load_frombuffer(blob)["w"]
    assert got.context == mx.cpu(0) and got.asnumpy().tolist() == [0, 1, 2]


def test_gpu_record_bytes():
    rec = ndarray_file.ArrayRecord.from_numpy(np.zeros(1, np.float32), device_type=2, device_id=1)
    blob = ndarray_file.dumps([rec])
    assert blob[24 + 20:24 + 32] == struct.pack("<iii", 2, 1, 0)


@pytest.mark.gpu
def test_gpu_arrays_save_from_host_and_load_onto_their_gpu(tmp_path, gpu_available):
    x = nd.array(np.arange(6.0).reshape(2, 3), ctx=gpu_available)
    nd.save(tmp_path / "g.params", {"x": x})
    assert ndarray_file.load(tmp_path / "g.params")[0][0].device == ("gpu", 0)
    got = nd.load(tmp_path / "g.params")["x"]
    assert got.context == gpu_available
    np.testing.assert_array_equal(got.asnumpy(), x.asnumpy())


# -- atomic save -------------------------------------------------------------------------------
class _Exploding(nd.NDArray):
    __slots__ = ()

    def asnumpy(self):
        raise RuntimeError("conversion failed")


def test_failed_save_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "model.params"
    nd.save(path, {"old": nd.array([1, 2])})
    before = path.read_bytes()
    bad = _Exploding(np.zeros(2, np.float32), mx.cpu())
    with pytest.raises(RuntimeError, match="conversion failed"):
        nd.save(path, {"a": nd.array(np.ones(1000)), "b": bad})
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.params"]


def test_save_keeps_mode_follows_symlinks_and_reports_bad_directories(tmp_path):
    path = tmp_path / "m.params"
    nd.save(path, [nd.array([1])])
    os.chmod(path, 0o640)
    nd.save(path, [nd.array([2])])
    assert (path.stat().st_mode & 0o777) == 0o640
    link = tmp_path / "link.params"
    link.symlink_to(path)
    nd.save(link, [nd.array([3])])
    assert link.is_symlink() and nd.load(path)[0].asscalar() == 3
    with pytest.raises(MXNetError, match="cannot save"):
        nd.save(tmp_path / "no" / "such" / "dir.params", [nd.array([1])])


# -- hostile input ------------------------------------------------------------------------------
@pytest.mark.parametrize("stem", ["dtypes_dict", "zero_size", "np_shape_v3", "legacy_v0",
                                  "mixed_versions", "single", "empty_dict"])
def test_truncation_at_every_offset_is_an_error(stem):
    blob = fixture_bytes(stem)
    for cut in range(len(blob)):
        with pytest.raises(MXNetError, match="cannot load"):
            nd.load_frombuffer(blob[:cut])


def test_truncated_file_on_disk_names_the_file(tmp_path):
    path = tmp_path / "t.params"
    path.write_bytes(fixture_bytes("largeish")[:5000])
    with pytest.raises(MXNetError, match=r"t\.params: array 0: shape \(48, 40\) float32 needs "
                                         r"7680 bytes but 4936 bytes remain \(byte offset 64\)"):
        nd.load(path)
    path.write_bytes(fixture_bytes("dtypes_list")[:100])
    with pytest.raises(MXNetError, match=r"t\.params: header: 8 arrays need at least 104 bytes"):
        nd.load(path)


def test_bad_magics():
    blob = bytearray(fixture_bytes("dtypes_list"))
    blob[0] ^= 0xFF
    assert "bad file magic" in load_error(bytes(blob))
    blob = bytearray(fixture_bytes("dtypes_list"))
    blob[24] ^= 0x01  # the first record's magic: 0xF993FAC8 is V1, so flip another bit
    blob[25] ^= 0x10
    assert "array 0: unknown record magic" in load_error(bytes(blob))


def test_reserved_header_field_is_ignored_like_mxnet():
    blob = build([v2_record()], header=(ndarray_file.LIST_MAGIC, 12345))
    assert nd.load_frombuffer(blob)[0].asnumpy().tolist() == [0, 1, 2]


@pytest.mark.parametrize("count", [2, 10 ** 6, 2 ** 40, 2 ** 63, 2 ** 64 - 1])
def test_huge_array_counts(count):
    msg = load_error(build([v2_record()], count=count))
    assert "arrays need at least" in msg or "truncated" in msg


@pytest.mark.parametrize("ndim,fragment", [
    (33, "ndim 33 is out of range"), (10 ** 6, "out of range"), (2 ** 31 - 1, "out of range"),
    (-1, "ndim -1 is out of range"), (-2, "ndim -2"), (0, "'none' record")])
def test_bad_ndims(ndim, fragment):
    record = struct.pack("<Iii", V2, 0, ndim) + b"\0" * 64
    assert fragment in load_error(build([record]))


def test_huge_shape_names_the_array_and_allocates_nothing():
    huge = v2_record(shape=(10 ** 9, 10 ** 9), data=b"\0" * 12)
    blob = build([v2_record(), v2_record(), v2_record(), huge])
    tracemalloc.start()
    try:
        msg = load_error(blob)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "array 3: shape (1000000000, 1000000000) float32 needs 4e+18 bytes but" in msg
    assert "20 bytes remain" in msg  # 12 data bytes and the names count
    assert peak < 1_000_000


def test_negative_and_impossible_dims():
    assert "negative dim" in load_error(build([v2_record(shape=(2, -3), data=b"")]))
    assert "negative dim" in load_error(build([v2_record(shape=(-1,), data=b"")]))
    assert "too large to describe" in load_error(build([v2_record(shape=(0, 2 ** 62), data=b"")]))
    # A legacy (pre-V1) record's u32 dims cannot be negative, but can be huge.
    legacy = struct.pack("<II", 1, 2 ** 32 - 1) + struct.pack("<iii", 1, 0, 0)
    assert "needs 17179869180 bytes" in load_error(build([legacy]))


@pytest.mark.parametrize("flag,fragment", [
    (8, "dtype int16 (flag 8) is not supported"), (12, "bfloat16 (flag 12)"),
    (13, "unknown dtype flag 13"), (-1, "unknown dtype flag -1"), (2 ** 31 - 1, "unknown")])
def test_unknown_dtype_flags(flag, fragment):
    record = v2_record(data=b"\0" * 24)[:-24 - 4] + struct.pack("<i", flag) + b"\0" * 24
    assert fragment in load_error(build([record]))


@pytest.mark.parametrize("stype,fragment", [
    (1, "array 0: storage type row_sparse (sparse) is not supported"),
    (2, "storage type csr"), (5, "unknown storage type 5"), (-1, "unknown storage type -1")])
def test_storage_types(stype, fragment):
    assert fragment in load_error(build([v2_record(stype=stype)]))


@pytest.mark.parametrize("device,fragment", [
    ((0, 0), "unknown device type 0"), ((4, 0), "unknown device type 4"),
    ((1, -1), "negative device id -1")])
def test_bad_devices(device, fragment):
    assert fragment in load_error(build([v2_record(device=device)]))


def test_bad_names():
    two = [v2_record(), v2_record()]
    assert "1 names for 2 arrays" in load_error(build(two, [b"a"]))
    assert "3 names for 2 arrays" in load_error(build(two, [b"a", b"b", b"c"]))
    assert "duplicate name 'a'" in load_error(build(two, [b"a", b"a"]))
    assert "name of array 0: name b'\\xff' is not valid UTF-8" in load_error(
        build(two, [b"\xff", b"a"]))
    for length in (2 ** 20, 2 ** 63, 2 ** 64 - 1):
        blob = build(two, [b"a", b"b"])
        blob = blob[:-9] + struct.pack("<Q", length) + b"b"
        assert "name of array 1: truncated file" in load_error(blob)
    blob = build(two)[:-8] + struct.pack("<Q", 2 ** 62)
    assert "2 arrays" in load_error(blob)


def test_trailing_bytes_are_an_error():
    """MXNet ignores bytes after the names; hybridgpu refuses them as a sign of corruption."""
    for tail in (b"\0", b"garbage!", b"\0" * 8):
        assert "unexpected bytes after the names" in load_error(fixture_bytes("single") + tail)


def test_empty_and_tiny_buffers():
    for blob in (b"", b"\x12", struct.pack("<Q", ndarray_file.LIST_MAGIC)):
        assert "truncated file: the file header" in load_error(blob)


def test_random_corruption_never_escapes_as_another_error():
    rng = random.Random(1234)
    sources = [fixture_bytes(s) for s in ("dtypes_dict", "zero_size", "legacy_v1", "contexts")]
    for trial in range(1500):
        blob = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(len(blob))
            blob[pos] = rng.randrange(256) if trial % 2 else blob[pos] ^ (1 << rng.randrange(8))
        try:
            loaded = nd.load_frombuffer(bytes(blob))
        except MXNetError:
            continue
        arrays = loaded.values() if isinstance(loaded, dict) else loaded
        assert all(isinstance(a, nd.NDArray) for a in arrays)


def test_nothing_is_unpickled(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unpickling attempted")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    monkeypatch.setattr(np, "load", refuse)
    for stem in gen.CASES:
        nd.load(FIXTURES / f"{stem}.params")


# -- the real MXNet reads what hybridgpu writes ------------------------------------------------
_ORACLE_SCRIPT = """
import json, sys
import mxnet as mx
import numpy as np
loaded = mx.nd.load(sys.argv[1])
items = loaded.items() if isinstance(loaded, dict) else enumerate(loaded)
out = [[str(k), list(v.shape), np.dtype(v.dtype).name, v.asnumpy().ravel().tolist()]
       for k, v in items]
print(json.dumps({"kind": type(loaded).__name__, "arrays": out}))
"""


@pytest.mark.oracle
@pytest.mark.parametrize("as_dict", [True, False])
def test_mxnet_loads_what_hybridgpu_writes(tmp_path, as_dict):
    if not ORACLE.exists():
        pytest.skip("needs the real MXNet in .oracle/")
    hosts = {f"{dt}_{i}": gen.values(dt, shape, i)
             for i, shape in enumerate([(), (0, 2), (2, 3), (1,)]) for dt in DTYPES}
    arrays = {k: nd.array(v, dtype=v.dtype) for k, v in hosts.items()}
    path = tmp_path / "hybrid.params"
    nd.save(path, arrays if as_dict else list(arrays.values()))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(ORACLE), "-c", _ORACLE_SCRIPT, str(path)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["kind"] == ("dict" if as_dict else "list")
    assert len(result["arrays"]) == len(hosts)
    for (key, shape, dtype, flat), (name, want) in zip(result["arrays"], hosts.items()):
        assert key == (name if as_dict else str(list(hosts).index(name)))
        assert tuple(shape) == want.shape and dtype == want.dtype.name
        assert flat == want.ravel().tolist()
