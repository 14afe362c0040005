"""``mx.image.imdecode`` decodes only the formats MXNet's OpenCV decodes, decided from the
buffer's first bytes before Pillow sees it (``serialization.image_formats``); checked against what MXNet
1.9.1 does with the same files (``tests/fixtures/make_imdecode_format_fixtures.py``)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import image

PIL_Image = pytest.importorskip("PIL.Image")

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "mxnet_imdecode")
with open(os.path.join(FIX, "mxnet.json")) as _f:
    MXNET = json.load(_f)
# decoded by OpenCV builds with these codecs (not MXNet 1.9.1's pip wheel): accepted here
EXTRAS = {"img.ppm", "img.pgm", "img.pgm_ascii", "img.ppm_ascii", "img.pbm", "img.webp"}


def _read(name):
    with open(os.path.join(FIX, name), "rb") as f:
        return f.read()


@pytest.fixture
def pillow_opens(monkeypatch):
    """The buffers handed to ``PIL.Image.open`` during the test."""
    seen = []
    real_open = PIL_Image.open

    def spy(fp, *args, **kwargs):
        seen.append(fp.getvalue()[:16])
        return real_open(fp, *args, **kwargs)

    monkeypatch.setattr(PIL_Image, "open", spy)
    return seen


@pytest.mark.parametrize("name", sorted(n for n, r in MXNET.items() if "decoded" in r))
def test_decodes_what_mxnet_decodes_with_its_pixels(name):
    want = MXNET[name]["decoded"]
    got = image.imdecode(_read(name)).asnumpy()
    assert list(got.shape) == want[:3]
    first = got.ravel()[:12].astype(int)
    # JPEG: two libjpeg builds may round an IDCT a level apart; the lossless ones are exact
    tolerance = 2 if name.endswith(".jpg") else 0
    assert np.abs(first - np.array(want[3:])).max() <= tolerance, (first, want[3:])


@pytest.mark.parametrize("name", sorted(n for n, r in MXNET.items()
                                        if "refused" in r and n not in EXTRAS))
def test_refuses_what_mxnet_refuses_before_pillow_sees_it(name, pillow_opens):
    with pytest.raises(mx.MXNetError, match=r"imdecode: the buffer \(\d+ bytes\) .*refuses"):
        image.imdecode(_read(name))
    assert pillow_opens == []


def test_netpbm_and_webp_decode_to_the_pngs_pixels():
    png = image.imdecode(_read("img.png")).asnumpy()
    np.testing.assert_array_equal(image.imdecode(_read("img.ppm")).asnumpy(), png)
    np.testing.assert_array_equal(image.imdecode(_read("img.webp")).asnumpy(), png)
    grey = image.imdecode(_read("img.pgm")).asnumpy()
    assert grey.shape == png.shape and (grey[..., 0] == grey[..., 2]).all()
    ascii_grey = image.imdecode(_read("img.pgm_ascii")).asnumpy()
    assert ascii_grey[:, :, 0].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert image.imdecode(_read("img.ppm_ascii")).asnumpy().tolist() == [[[1, 2, 3],
                                                                          [4, 5, 6]]]


@pytest.mark.filterwarnings("ignore:Corrupt EXIF")
def test_a_disguised_eps_reaches_only_the_plugin_its_magic_names(monkeypatch):
    eps_plugin = pytest.importorskip("PIL.EpsImagePlugin")
    opened = []
    monkeypatch.setattr(eps_plugin.EpsImageFile, "_open",
                        lambda self: opened.append(1) or (_ for _ in ()).throw(SyntaxError))
    eps = _read("img.eps")
    with pytest.raises(mx.MXNetError, match="looks like a PostScript/EPS file"):
        image.imdecode(eps)
    for magic in (b"\x89PNG\r\n\x1a\n", b"BM", b"\xff\xd8\xff", b"II*\x00", b"P6\n"):
        with pytest.raises(mx.MXNetError, match="starts as .* but is not an image"):
            image.imdecode(magic + eps)
    assert opened == []


def test_empty_and_unknown_buffers_name_what_was_wrong():
    with pytest.raises(mx.MXNetError, match="empty buffer"):
        image.imdecode(b"")
    with pytest.raises(mx.MXNetError, match=r"starts with b'not a pn'"):
        image.imdecode(b"not a png")
    with pytest.raises(mx.MXNetError, match="RIFF file"):
        image.imdecode(b"RIFF\x00\x00\x00\x00WAVEfmt ")
    ndarray_buffer = mx.nd.array(np.frombuffer(_read("img.gif"), np.uint8), dtype="uint8")
    with pytest.raises(mx.MXNetError, match="GIF image"):
        image.imdecode(ndarray_buffer)
