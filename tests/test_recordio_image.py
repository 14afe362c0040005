"""``mx.recordio`` and ``mx.image`` against files and numbers written by MXNet 1.9.1
(``tests/fixtures/make_mxnet_image_fixtures.py``), plus hostile-file checks."""

from __future__ import annotations

import json
import io
import os
import pickle
import shutil
import struct

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import image, recordio

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_image")
ARRAYS = np.load(os.path.join(FIX, "arrays.npz"))
with open(os.path.join(FIX, "records.json")) as _f:
    RECORDS = json.load(_f)


def _payloads():
    magic = struct.pack("<I", 0xCED7230A)
    return [b"abc", b"", magic * 2 + b"tail", b"x" * 13 + magic + b"yz", b"\x00" * 8,
            recordio.pack(recordio.IRHeader(0, 3.5, 7, 9), b"one label"),
            recordio.pack(recordio.IRHeader(0, [1.0, 2.5, -3.0], 8, 0), b"three")]


def test_reads_mxnet_written_records():
    reader = recordio.MXRecordIO(os.path.join(FIX, "records.rec"), "r")
    got = []
    while (item := reader.read()) is not None:
        got.append(item.hex())
    assert got == RECORDS["read"]
    indexed = recordio.MXIndexedRecordIO(os.path.join(FIX, "records.idx"),
                                         os.path.join(FIX, "records.rec"), "r")
    assert indexed.keys == RECORDS["keys"]
    header, body = recordio.unpack(indexed.read_idx(60))
    assert header.flag == 3 and header.id == 8
    np.testing.assert_array_equal(header.label, np.float32(RECORDS["multi_label"]))
    assert body.hex() == RECORDS["multi_body"]


def test_writes_the_bytes_mxnet_writes(tmp_path):
    rec, idx = str(tmp_path / "r.rec"), str(tmp_path / "r.idx")
    writer = recordio.MXIndexedRecordIO(idx, rec, "w")
    for key, item in enumerate(_payloads()):
        writer.write_idx(key * 10, item)
    writer.close()
    with open(rec, "rb") as a, open(os.path.join(FIX, "records.rec"), "rb") as b:
        assert a.read() == b.read()
    with open(idx) as a, open(os.path.join(FIX, "records.idx")) as b:
        assert a.read() == b.read()


def test_reader_reset_pickle_and_mode_errors(tmp_path):
    path = str(tmp_path / "r.rec")
    shutil.copy(os.path.join(FIX, "records.rec"), path)
    reader = recordio.MXRecordIO(path, "r")
    first = reader.read()
    reader.read()
    reader.reset()
    assert reader.read() == first
    clone = pickle.loads(pickle.dumps(reader))
    assert clone.read() == first  # reopened at the start
    with pytest.raises(mx.MXNetError, match="needs flag='w'"):
        reader.write(b"x")
    reader.close()
    with pytest.raises(mx.MXNetError, match="closed"):
        reader.read()
    with pytest.raises(ValueError, match="flag"):
        recordio.MXRecordIO(path, "a")


@pytest.mark.parametrize("cut", [3, 8, 13, 30, 187])
def test_truncated_or_corrupted_files_raise(tmp_path, cut):
    with open(os.path.join(FIX, "records.rec"), "rb") as f:
        data = f.read()
    path = tmp_path / "bad.rec"
    path.write_bytes(data[:cut])
    reader = recordio.MXRecordIO(str(path), "r")
    with pytest.raises(mx.MXNetError, match="bad.rec"):
        while reader.read() is not None:
            pass


def test_bad_magic_and_broken_split_records(tmp_path):
    path = tmp_path / "bad.rec"
    path.write_bytes(struct.pack("<II", 0x12345678, 0))
    with pytest.raises(mx.MXNetError, match="bad magic"):
        recordio.MXRecordIO(str(path), "r").read()
    # a middle part with no start
    path.write_bytes(struct.pack("<II", 0xCED7230A, 2 << 29))
    with pytest.raises(mx.MXNetError, match="no record was started"):
        recordio.MXRecordIO(str(path), "r").read()
    # a start with no end
    path.write_bytes(struct.pack("<II", 0xCED7230A, 1 << 29))
    with pytest.raises(mx.MXNetError, match="no end"):
        recordio.MXRecordIO(str(path), "r").read()
    # a length past the end of the file allocates nothing
    path.write_bytes(struct.pack("<II", 0xCED7230A, (1 << 29) - 1))
    with pytest.raises(mx.MXNetError, match="truncated"):
        recordio.MXRecordIO(str(path), "r").read()


def test_pack_unpack_round_trip_and_errors():
    header = recordio.IRHeader(0, [1.0, 2.0], 5, 6)
    back, body = recordio.unpack(recordio.pack(header, b"body"))
    assert back.flag == 2 and (back.id, back.id2) == (5, 6) and body == b"body"
    np.testing.assert_array_equal(back.label, [1.0, 2.0])
    with pytest.raises(mx.MXNetError, match="at least 24 bytes"):
        recordio.unpack(b"short")
    with pytest.raises(mx.MXNetError, match="says 9 labels"):
        recordio.unpack(struct.pack("<IfQQ", 9, 0.0, 0, 0) + b"abcd")


def test_pack_img_round_trips_bgr_png():
    pytest.importorskip("PIL")
    bgr = ARRAYS["image"][:, :, ::-1].copy()
    header, img = recordio.unpack_img(recordio.pack_img(recordio.IRHeader(0, 1.0, 2, 0), bgr,
                                                        img_fmt=".png"))
    np.testing.assert_array_equal(img, bgr)
    _, grey = recordio.unpack_img(recordio.pack_img(recordio.IRHeader(0, 1.0, 2, 0), bgr,
                                                    img_fmt=".png"), iscolor=0)
    assert grey.shape == bgr.shape[:2]
    smooth = np.stack(list(np.meshgrid(np.arange(32) * 8, np.arange(24) * 10)) + [
        np.full((24, 32), 128)], axis=-1).astype(np.uint8)
    _, jpeg = recordio.unpack_img(recordio.pack_img(recordio.IRHeader(0, 1.0, 2, 0), smooth))
    assert jpeg.shape == smooth.shape and np.abs(jpeg.astype(int) - smooth).mean() < 3


def test_unpack_img_decodes_only_what_imdecode_decodes():
    """A record holding a GIF (which MXNet's OpenCV does not decode) is refused by name, before
    Pillow sees it, as by ``mx.image.imdecode``."""
    pil = pytest.importorskip("PIL.Image")
    gif = io.BytesIO()
    pil.fromarray(np.zeros((4, 4, 3), np.uint8)).save(gif, format="GIF")
    record = recordio.pack(recordio.IRHeader(0, 1.0, 2, 0), gif.getvalue())
    with pytest.raises(mx.MXNetError, match="GIF"):
        recordio.unpack_img(record)


# -- mx.image ------------------------------------------------------------------------------------

def _png():
    with open(os.path.join(FIX, "image.png"), "rb") as f:
        return f.read()


def test_imdecode_matches_mxnet():
    pytest.importorskip("PIL")
    np.testing.assert_array_equal(image.imdecode(_png()).asnumpy(), ARRAYS["decoded"])
    np.testing.assert_array_equal(image.imdecode(_png(), flag=0).asnumpy(),
                                  ARRAYS["decoded_grey"])
    np.testing.assert_array_equal(image.imdecode(_png(), to_rgb=0).asnumpy(),
                                  ARRAYS["decoded_bgr"])
    with pytest.raises(mx.MXNetError, match="not an image"):
        image.imdecode(b"not a png")


@pytest.mark.parametrize("interp", range(5))
@pytest.mark.parametrize("size", [(7, 5), (30, 20), (21, 15)])
def test_imresize_matches_mxnet(size, interp):
    want = ARRAYS[f"resize_{size[0]}x{size[1]}_{interp}"].astype(int)
    got = image.imresize(mx.nd.array(ARRAYS["image"], dtype="uint8"), *size,
                         interp=interp).asnumpy().astype(int)
    assert got.shape == want.shape
    # OpenCV computes uint8 in fixed point: one grey level apart at most, nearest exact
    assert np.abs(got - want).max() <= (0 if interp == 0 else 1)


def test_resize_short_and_crops_match_mxnet():
    src = mx.nd.array(ARRAYS["image"], dtype="uint8")
    np.testing.assert_allclose(image.resize_short(src, 10).asnumpy(), ARRAYS["resize_short_10"],
                               atol=1)
    crop, box = image.center_crop(src, (8, 6))
    assert box == tuple(ARRAYS["center_crop_box"])
    np.testing.assert_allclose(crop.asnumpy(), ARRAYS["center_crop_8x6"], atol=1)
    with pytest.raises(mx.MXNetError, match="outside the image"):
        image.fixed_crop(src, 15, 0, 10, 3)
    out, (x0, y0, w, h) = image.random_crop(src, (4, 4))
    assert out.shape == (4, 4, 3) and 0 <= x0 <= 21 - w and 0 <= y0 <= 15 - h


def test_color_normalize():
    src = mx.nd.array(ARRAYS["image"].astype(np.float32))
    out = image.color_normalize(src, mx.nd.array([1, 2, 3]), mx.nd.array([2, 2, 2]))
    np.testing.assert_allclose(out.asnumpy(), (ARRAYS["image"] - [1, 2, 3]) / 2.0, rtol=1e-6)
