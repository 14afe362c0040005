"""gluon.utils: split_data / split_and_load slicing, clip_global_norm, file helpers.

Values marked "MXNet 1.9.1" were read off the real library (.oracle); the clipping results are
recomputed here in float32 exactly as MXNet computes them (and were bit-identical to it).
"""

from __future__ import annotations

import hashlib
import os
import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd
from hybridgpu.gluon import utils
from hybridgpu.gluon.utils import (
    check_sha1,
    clip_global_norm,
    download,
    replace_file,
    shape_is_known,
    split_and_load,
    split_data,
)


def _lists(slices):
    return [s.asnumpy().tolist() if isinstance(s, nd.NDArray) else s.tolist() for s in slices]


# -- split_data -----------------------------------------------------------------------------------
@pytest.mark.parametrize("size, num_slice, lengths", [
    (7, 3, [3, 2, 2]), (8, 3, [3, 3, 2]), (5, 2, [3, 2]), (5, 3, [2, 2, 1]),
    (3, 4, [1, 1, 1, 0]), (5, 6, [1, 1, 1, 1, 1, 0]), (8, 4, [2, 2, 2, 2]),
])
def test_split_data_uneven_lengths_match_mxnet(size, num_slice, lengths):
    data = nd.arange(size * 2).reshape(size, 2)
    slices = split_data(data, num_slice, even_split=False)
    assert [s.shape[0] for s in slices] == lengths
    assert np.concatenate([s.asnumpy() for s in slices]).tolist() == data.asnumpy().tolist()


def test_split_data_values():
    x = nd.arange(10).reshape(5, 2)
    assert _lists(split_data(x, 2, even_split=False)) == [[[0, 1], [2, 3], [4, 5]],
                                                          [[6, 7], [8, 9]]]
    assert _lists(split_data(nd.arange(8), 4)) == [[0, 1], [2, 3], [4, 5], [6, 7]]
    whole = split_data(x, 1)
    assert len(whole) == 1 and whole[0] is x
    # Along another axis (MXNet 1.9.1 values), negative axes too.
    grid = nd.arange(12).reshape(2, 6)
    expected = [[[0, 1], [6, 7]], [[2, 3], [8, 9]], [[4], [10]], [[5], [11]]]
    assert _lists(split_data(grid, 4, batch_axis=1, even_split=False)) == expected
    assert _lists(split_data(grid, 4, batch_axis=-1, even_split=False)) == expected
    assert _lists(split_data(grid, 2, batch_axis=-1)) == [[[0, 1, 2], [6, 7, 8]],
                                                          [[3, 4, 5], [9, 10, 11]]]
    assert _lists(split_data(x, 2, batch_axis=1)) == [[[0], [2], [4], [6], [8]],
                                                      [[1], [3], [5], [7], [9]]]


def test_split_data_views_along_axis_0_copies_along_others():
    x = nd.zeros((4, 2))
    split_data(x, 2)[1][:] = 5
    assert x.asnumpy()[:, 0].tolist() == [0, 0, 5, 5]  # axis 0: views, as in MXNet
    y = nd.zeros((2, 4))
    split_data(y, 2, batch_axis=1)[1][:] = 5
    assert y.asnumpy().sum() == 0  # other axes: new arrays (MXNet's split op copies)


def test_split_data_numpy_input():
    slices = split_data(np.arange(6), 2)
    assert all(isinstance(s, np.ndarray) for s in slices)
    assert _lists(slices) == [[0, 1, 2], [3, 4, 5]]


def test_split_data_errors():
    x = nd.arange(10).reshape(5, 2)
    message = ("data with shape (5, 2) cannot be evenly split into 2 slices along axis 0. Use a "
               "batch size that's multiple of 2 or set even_split=False to allow uneven "
               "partitioning of data.")
    with pytest.raises(ValueError) as err:
        split_data(x, 2)
    assert str(err.value) == message  # MXNet 1.9.1's message
    with pytest.raises(ValueError, match="num_slice must be a positive integer"):
        split_data(x, 0)
    with pytest.raises(IndexError, match="batch_axis 2 is out of range"):
        split_data(x, 2, batch_axis=2)


def test_split_data_more_slices_than_columns_gives_empty_slices():
    # MXNet 1.9.1 raises from its slice op here; hybridgpu gives empty slices as on axis 0.
    parts = split_data(nd.arange(10).reshape(5, 2), 3, batch_axis=1, even_split=False)
    assert [p.shape for p in parts] == [(5, 1), (5, 1), (5, 0)]


# -- split_and_load -------------------------------------------------------------------------------
def test_split_and_load_on_two_cpu_contexts():
    x = nd.arange(10).reshape(5, 2)
    parts = split_and_load(x, [mx.cpu(0), mx.cpu(1)], even_split=False)
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    assert _lists(parts) == [[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9]]]
    with pytest.raises(ValueError, match="cannot be evenly split into 2 slices"):
        split_and_load(x, [mx.cpu(0), mx.cpu(1)])
    evens = split_and_load(nd.arange(8).reshape(4, 2), [mx.cpu(1), mx.cpu(0)], batch_axis=0)
    assert [(p.shape, p.context) for p in evens] == [((2, 2), mx.cpu(1)), ((2, 2), mx.cpu(0))]


def test_split_and_load_one_context():
    x = nd.arange(10).reshape(5, 2)
    assert split_and_load(x, [mx.cpu(0)])[0] is x  # MXNet 1.9.1: the array itself
    (moved,) = split_and_load(x, [mx.cpu(1)])  # no even-split check with one context
    assert moved.context == mx.cpu(1) and moved.asnumpy().tolist() == x.asnumpy().tolist()
    assert split_and_load(x, mx.cpu(1))[0].context == mx.cpu(1)  # hybridgpu: a bare Context


def test_split_and_load_converts_numpy_and_lists_to_float32():
    parts = split_and_load(np.arange(6).reshape(3, 2), [mx.cpu(0), mx.cpu(1)], even_split=False)
    assert [(p.dtype, p.context) for p in parts] == [(np.float32, mx.cpu(0)),
                                                     (np.float32, mx.cpu(1))]
    assert _lists(parts) == [[[0, 1], [2, 3]], [[4, 5]]]
    (whole,) = split_and_load([[1, 2], [3, 4]], [mx.cpu(1)])
    assert (whole.dtype, whole.context, whole.shape) == (np.float32, mx.cpu(1), (2, 2))
    with pytest.raises(ValueError, match="ctx_list is empty"):
        split_and_load(nd.ones(2), [])


# -- clip_global_norm -----------------------------------------------------------------------------
def _expected_clip(arrays, max_norm):
    """MXNet's computation in float32: norm, scale = max_norm / (norm + 1e-8), capped at 1."""
    f32 = np.float32
    norm = np.sqrt(sum(f32(np.dot(a.ravel(), a.ravel())) for a in arrays), dtype=f32)
    scale = f32(max_norm) / (norm + f32(1e-8))
    scale = min(scale, f32(1.0))
    return f32(norm), [a * scale for a in arrays]


@pytest.mark.parametrize("max_norm", [1.0, 0.5, 13.0, 1e6])
@pytest.mark.parametrize("check_isfinite", [True, False])
def test_clip_global_norm_values(max_norm, check_isfinite):
    rng = np.random.RandomState(0)
    hosts = [rng.randn(5, 3).astype("float32"), rng.randn(7).astype("float32")]
    arrays = [nd.array(h) for h in hosts]
    norm = clip_global_norm(arrays, max_norm, check_isfinite=check_isfinite)
    expected_norm, expected = _expected_clip(hosts, max_norm)
    if check_isfinite:
        assert type(norm) is np.float32  # MXNet 1.9.1 returns a NumPy float32 scalar
        assert norm == expected_norm
    else:
        assert isinstance(norm, nd.NDArray) and norm.shape == (1,)
        assert norm.asnumpy()[0] == expected_norm
    for arr, exp in zip(arrays, expected):
        np.testing.assert_array_equal(arr.asnumpy(), exp)


def test_clip_global_norm_mxnet_example():
    arrays = [nd.array([3.0, 4.0]), nd.array([[12.0]])]
    assert clip_global_norm(arrays, 1.0) == np.float32(13.0)
    # MXNet 1.9.1's results, bit for bit:
    assert arrays[0].asnumpy().tolist() == np.array([0.23076925, 0.30769232], "float32").tolist()
    assert arrays[1].asnumpy().tolist() == np.array([[0.923077]], "float32").tolist()
    untouched = [nd.array([3.0, 4.0])]
    assert clip_global_norm(untouched, 100.0) == 5.0
    assert untouched[0].asnumpy().tolist() == [3.0, 4.0]


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_clip_global_norm_nan_and_inf_warn_like_mxnet():
    with pytest.warns(UserWarning, match="nan or inf is detected"):
        norm = clip_global_norm([nd.array([np.inf, 4.0])], 1.0)
    assert np.isinf(norm)
    with pytest.warns(UserWarning, match="nan or inf is detected"):
        arrays = [nd.array([np.nan, 4.0])]
        assert np.isnan(clip_global_norm(arrays, 1.0))
    assert np.isnan(arrays[0].asnumpy()).all()  # MXNet: scaled by NaN
    inf_arrays = [nd.array([np.inf, 4.0])]
    with pytest.warns(UserWarning):
        clip_global_norm(inf_arrays, 1.0)
    assert np.isnan(inf_arrays[0].asnumpy()[0]) and inf_arrays[0].asnumpy()[1] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unchecked = [nd.array([np.nan, 4.0])]
        assert np.isnan(clip_global_norm(unchecked, 1.0, check_isfinite=False).asnumpy()).all()


def test_clip_global_norm_across_contexts_and_dtypes():
    arrays = [nd.array([1.0, 2.0]), nd.array([3.0, 4.0], ctx=mx.cpu(1))]
    norm = clip_global_norm(arrays, 1.0)
    assert np.isclose(norm, np.sqrt(30.0), rtol=1e-6)
    assert [a.context for a in arrays] == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_allclose(arrays[1].asnumpy(), [3 / np.sqrt(30), 4 / np.sqrt(30)],
                               rtol=1e-6)
    # float64 and float16 work (MXNet 1.9.1 fails on both); int arrays are refused.
    wide = [nd.array([3.0, 4.0], dtype="float64")]
    assert clip_global_norm(wide, 1.0) == 5.0 and wide[0].dtype == np.float64
    np.testing.assert_allclose(wide[0].asnumpy(), [0.6, 0.8])
    half = [nd.array([300.0, 400.0], dtype="float16")]
    assert clip_global_norm(half, 1.0) == 500.0 and half[0].dtype == np.float16
    with pytest.raises(TypeError, match="only floating-point arrays"):
        clip_global_norm([nd.array([1, 2], dtype="int32")], 1.0)


def test_clip_global_norm_argument_errors():
    with pytest.raises(AssertionError):  # MXNet's type
        clip_global_norm([], 1.0)
    with pytest.raises(TypeError, match="not an NDArray"):
        clip_global_norm([np.array([1.0, 2.0])], 1.0)
    with pytest.raises(TypeError, match="wrap it in a list"):
        clip_global_norm(nd.ones(2), 1.0)


# -- files ----------------------------------------------------------------------------------------
def test_check_sha1(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"hello" * 300000)
    digest = hashlib.sha1(b"hello" * 300000).hexdigest()
    assert check_sha1(str(path), digest) is True
    assert check_sha1(str(path), digest[:8]) is False  # MXNet 1.9.1: the full digest only
    assert check_sha1(str(path), digest.upper()) is False
    with pytest.raises(FileNotFoundError):
        check_sha1(str(tmp_path / "missing"), digest)


def test_download_copies_file_urls(tmp_path, capsys):
    src = tmp_path / "src" / "data.bin"
    src.parent.mkdir()
    src.write_bytes(b"payload")
    digest = hashlib.sha1(b"payload").hexdigest()
    dest_dir = tmp_path / "out" / "nested"
    dest_dir.mkdir(parents=True)
    out = download(src.as_uri(), path=str(dest_dir), sha1_hash=digest)
    assert out == os.path.join(str(dest_dir), "data.bin")
    with open(out, "rb") as f:
        assert f.read() == b"payload"
    assert "Downloading" in capsys.readouterr().out
    target = tmp_path / "new_dir" / "copy.bin"  # missing folders are made
    assert download(src.as_uri(), path=str(target)) == str(target)
    assert target.read_bytes() == b"payload"
    assert [p.name for p in target.parent.iterdir()] == ["copy.bin"]  # no temp file left
    with pytest.raises(UserWarning, match="content hash does not match"):
        download(src.as_uri(), path=str(tmp_path / "bad.bin"), sha1_hash="0" * 40)
    with pytest.raises(FileNotFoundError):
        download((tmp_path / "nope.bin").as_uri(), path=str(tmp_path / "x.bin"))


def test_download_never_uses_the_network(tmp_path):
    existing = tmp_path / "a.bin"
    existing.write_bytes(b"hello")
    url = "http://example.invalid/x/a.bin"
    # A file already in place is returned without fetching (MXNet 1.9.1 too).
    assert download(url, path=str(tmp_path)) == str(existing)
    assert download(url, path=str(existing)) == str(existing)
    assert download(url, path=str(tmp_path),
                    sha1_hash=hashlib.sha1(b"hello").hexdigest()) == str(existing)
    for kwargs in ({"overwrite": True}, {"sha1_hash": "0" * 40}):
        with pytest.raises(ConnectionError, match=r"no network access.*place it at"):
            download(url, path=str(tmp_path), **kwargs)
    with pytest.raises(OSError, match="example.invalid"):
        download(url, path=str(tmp_path / "other.bin"))
    with pytest.raises(AssertionError, match="Can't construct file-name from this URL"):
        download("http://example.invalid/x/")
    with pytest.raises(AssertionError, match="Number of retries should be at least 0, "
                                             "currently it's -1"):
        download(url, path=str(tmp_path), retries=-1)


def test_replace_file(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.write_text("new")
    dst.write_text("old")
    assert replace_file(str(src), str(dst)) is None
    assert dst.read_text() == "new" and not src.exists()
    with pytest.raises(OSError, match="Moving downloaded temp file"):
        replace_file(str(src), str(dst))
    src.write_text("x")
    with pytest.raises(OSError, match="Please retry the download"):
        replace_file(str(src), str(tmp_path / "no_such_dir" / "dst"))
    assert not src.exists()  # the temporary file is removed, as in MXNet


def test_shape_is_known_legacy_convention():
    assert shape_is_known((2, 3)) is True
    assert shape_is_known((2, 0)) is False
    assert shape_is_known(None) is False and shape_is_known(()) is False
    assert shape_is_known((0, -1)) is False
    with pytest.raises(AssertionError, match="cannot be less than 0, while received -1"):
        shape_is_known((2, -1))


def test_namespace():
    for name in ("split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
                 "replace_file", "shape_is_known", "HookHandle"):
        assert hasattr(utils, name), name
    assert utils.HookHandle is mx.gluon.block.HookHandle
    assert issubclass(utils.ArgumentError, ValueError)


@pytest.mark.gpu
def test_split_and_load_and_clip_on_gpu(gpu_available):
    gpu = gpu_available
    x = nd.arange(10).reshape(5, 2)
    parts = split_and_load(x, [mx.cpu(0), gpu], even_split=False)
    assert [p.context for p in parts] == [mx.cpu(0), gpu]
    assert _lists(parts) == [[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9]]]
    hosts = [np.array([3.0, 4.0], "float32"), np.array([[12.0]], "float32")]
    arrays = [nd.array(hosts[0], ctx=gpu), nd.array(hosts[1], ctx=mx.cpu(0))]
    assert clip_global_norm(arrays, 1.0) == np.float32(13.0)
    _, expected = _expected_clip(hosts, 1.0)
    for arr, exp in zip(arrays, expected):
        np.testing.assert_allclose(arr.asnumpy(), exp, rtol=1e-6)
    assert arrays[0].context == gpu
