"""``mx.image`` against MXNet 1.9.1 (fixtures from ``make_mxnet_image_fixtures.py``): decoding is
exact, OpenCV-style resizes within one level, crops and normalization exact."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

pytest.importorskip("PIL")
sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_image_fixtures as gen  # noqa: E402

EXPECTED = dict(np.load(pathlib.Path(__file__).parent / "fixtures" / "mxnet_image" /
                        "images.npz"))
PNG = EXPECTED["png"].tobytes()
mx.image.nd = mx.nd  # the cases build their mean/std arrays with im.nd.array
EXACT = ["rgb", "gray", "bgr", "nearest", "center", "normalized"]


@pytest.mark.parametrize("case", sorted(gen.CASES))
def test_matches_mxnet(case):
    img = mx.image.imdecode(PNG)
    got = gen.CASES[case](mx.image, img, PNG).asnumpy()
    expected = EXPECTED[case]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if case in EXACT:
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    else:
        assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1


def test_imread_and_errors(tmp_path):
    path = tmp_path / "x.png"
    path.write_bytes(PNG)
    np.testing.assert_array_equal(mx.image.imread(path).asnumpy(), EXPECTED["rgb"])
    with pytest.raises(MXNetError, match="invalid image data"):
        mx.image.imdecode(b"garbage")
    with pytest.raises(MXNetError, match="cannot read"):
        mx.image.imread(tmp_path / "missing.png")
    with pytest.raises(MXNetError, match="positive"):
        mx.image.imresize(mx.image.imdecode(PNG), 0, 3)


def test_small_source_center_crop_scales_up():
    img = mx.image.imdecode(PNG)
    out, box = mx.image.center_crop(img, (40, 40))
    assert out.shape == (40, 40, 3) and box == (2, 0, 13, 13)
