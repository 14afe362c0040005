"""``mx.recordio`` against MXNet 1.9.1: files MXNet wrote (``tests/fixtures/mxnet_recordio``,
from ``make_mxnet_recordio_fixtures.py``) read back record for record, hybridgpu writes the same
bytes, image records round trip through Pillow, and damaged files raise clear errors."""

from __future__ import annotations

import pathlib
import pickle
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_recordio_fixtures as gen  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "mxnet_recordio"
recordio = mx.recordio


def _read_all(reader):
    out = []
    while (record := reader.read()) is not None:
        out.append(record)
    return out


def test_reads_mxnet_sequential_file():
    reader = recordio.MXRecordIO(FIXTURES / "sequential.rec", "r")
    assert _read_all(reader) == gen.records()
    reader.reset()
    assert reader.read() == gen.records()[0]


def test_writes_mxnet_bytes(tmp_path):
    writer = recordio.MXRecordIO(tmp_path / "out.rec", "w")
    for record in gen.records():
        writer.write(record)
    writer.close()
    assert (tmp_path / "out.rec").read_bytes() == (FIXTURES / "sequential.rec").read_bytes()


def test_indexed_file_both_ways(tmp_path):
    reader = recordio.MXIndexedRecordIO(FIXTURES / "indexed.idx", FIXTURES / "indexed.rec", "r")
    assert reader.keys == list(gen.KEYS)
    for key in reversed(list(gen.KEYS)):
        header, payload = recordio.unpack(reader.read_idx(key))
        label, id2, expected = gen.KEYS[key]
        assert (header.id, header.id2, payload) == (key, id2, expected)
        if isinstance(label, list):
            assert header.flag == len(label)
            np.testing.assert_array_equal(header.label, np.float32(label))
        else:
            assert header.flag == 0 and header.label == label
    writer = recordio.MXIndexedRecordIO(tmp_path / "x.idx", tmp_path / "x.rec", "w")
    for key, (label, id2, payload) in gen.KEYS.items():
        writer.write_idx(key, recordio.pack(recordio.IRHeader(0, label, key, id2), payload))
    writer.close()
    for name in ("x.idx", "x.rec"):
        fixture = "indexed" + name[1:]
        assert (tmp_path / name).read_bytes() == (FIXTURES / fixture).read_bytes()


def test_image_records_round_trip():
    pytest.importorskip("PIL")
    rng = np.random.RandomState(0)
    bgr = rng.randint(0, 256, (6, 5, 3)).astype(np.uint8)
    header = recordio.IRHeader(0, 2.0, 11, 0)
    back_header, decoded = recordio.unpack_img(recordio.pack_img(header, bgr, img_fmt=".png"))
    assert back_header == header
    np.testing.assert_array_equal(decoded, bgr)  # PNG is lossless; BGR order kept
    gray = recordio.unpack_img(recordio.pack_img(header, bgr, img_fmt=".png"), iscolor=0)[1]
    assert gray.shape == (6, 5)
    smooth = np.full((8, 8, 3), (10, 120, 240), np.uint8)
    jpeg = recordio.unpack_img(recordio.pack_img(header, smooth, quality=95))[1]
    assert np.abs(jpeg.astype(int) - smooth).max() <= 3


def test_reader_pickles_for_data_loader_workers():
    reader = recordio.MXRecordIO(FIXTURES / "sequential.rec", "r")
    clone = pickle.loads(pickle.dumps(reader))
    assert _read_all(clone) == gen.records()


def test_damaged_files_and_misuse(tmp_path):
    data = (FIXTURES / "sequential.rec").read_bytes()
    (tmp_path / "cut.rec").write_bytes(data[:30])
    reader = recordio.MXRecordIO(tmp_path / "cut.rec", "r")
    with pytest.raises(MXNetError, match="the file ends first"):
        _read_all(reader)
    (tmp_path / "bad.rec").write_bytes(b"\0" * 16)
    with pytest.raises(MXNetError, match="bad magic number 0x0 at byte 0"):
        recordio.MXRecordIO(tmp_path / "bad.rec", "r").read()
    with pytest.raises(ValueError, match="Invalid flag x"):
        recordio.MXRecordIO(tmp_path / "y.rec", "x")
    with pytest.raises(MXNetError, match="cannot open"):
        recordio.MXRecordIO(tmp_path / "missing" / "z.rec", "r")
    with pytest.raises(MXNetError, match="cannot write"):
        recordio.MXRecordIO(FIXTURES / "sequential.rec", "r").write(b"x")
    with pytest.raises(MXNetError, match="shorter than the 24-byte header"):
        recordio.unpack(b"abc")
    (tmp_path / "bad.idx").write_text("1\t0\tjunk\n")
    with pytest.raises(MXNetError, match="line 1"):
        recordio.MXIndexedRecordIO(tmp_path / "bad.idx", FIXTURES / "sequential.rec", "r")
