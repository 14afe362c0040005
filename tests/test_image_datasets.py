"""``gluon.data.vision.ImageRecordDataset`` and ``ImageFolderDataset``: a RecordIO file written
by MXNet 1.9.1 reads to MXNet's images and labels (``make_mxnet_image_dataset_fixtures.py``);
folders give sorted class names and labels, skipping other files with a warning."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx

pytest.importorskip("PIL")
sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_image_dataset_fixtures as gen  # noqa: E402

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "mxnet_image_datasets"
EXPECTED = dict(np.load(FIXTURES / "expected.npz"))
vision = mx.gluon.data.vision


def test_record_dataset_matches_mxnet():
    colour = vision.ImageRecordDataset(str(FIXTURES / "images.rec"))
    gray = vision.ImageRecordDataset(str(FIXTURES / "images.rec"), flag=0)
    assert len(colour) == len(gen.samples())
    for i in range(len(colour)):
        image, label = colour[i]
        assert image.dtype == np.uint8
        np.testing.assert_array_equal(image.asnumpy(), EXPECTED[f"{i}/image"])
        np.testing.assert_array_equal(gray[i][0].asnumpy(), EXPECTED[f"{i}/gray"])
        np.testing.assert_array_equal(np.asarray(label, np.float32), EXPECTED[f"{i}/label"])


def test_record_dataset_transform_and_loader():
    dataset = vision.ImageRecordDataset(str(FIXTURES / "images.rec"),
                                        transform=lambda x, y: (x.astype("float32") / 255, y))
    image, label = dataset[0]
    np.testing.assert_allclose(image.asnumpy(), EXPECTED["0/image"] / 255, rtol=1e-6)
    assert label == 0.5


def test_folder_dataset(tmp_path):
    from PIL import Image

    for name, value in (("zebra", 9), ("ant", 3)):
        (tmp_path / name).mkdir()
        Image.fromarray(np.full((2, 4, 3), value, np.uint8)).save(tmp_path / name / "x.png")
    (tmp_path / "ant" / "notes.txt").write_text("not an image")
    (tmp_path / "readme.md").write_text("not a folder")
    with pytest.warns(UserWarning, match="Ignoring"):
        dataset = vision.ImageFolderDataset(str(tmp_path))
        gray = vision.ImageFolderDataset(str(tmp_path), flag=0)
    assert dataset.synsets == ["ant", "zebra"] and len(dataset) == 2
    image, label = dataset[1]
    assert label == 1 and int(image[0, 0, 0].asscalar()) == 9
    assert gray[0][0].shape == (2, 4, 1)
    with pytest.raises(FileNotFoundError, match="no such folder"):
        vision.ImageFolderDataset(str(tmp_path / "missing"))
