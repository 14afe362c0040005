"""Image datasets on disk: ``ImageRecordDataset`` (a RecordIO file of packed images, as
``im2rec`` writes) and ``ImageFolderDataset`` (one folder per class), decoded with
``mx.image.imdecode`` into HxWxC uint8 NDArrays (``flag=0``: one gray channel).

Example:
    >>> import io, os, tempfile
    >>> import numpy as np
    >>> from PIL import Image
    >>> root = tempfile.mkdtemp()
    >>> for label in ("cat", "dog"):
    ...     os.mkdir(os.path.join(root, label))
    ...     Image.fromarray(np.zeros((2, 3, 3), np.uint8)).save(os.path.join(root, label, "a.png"))
    >>> folder = ImageFolderDataset(root)
    >>> folder.synsets, len(folder), folder[1][0].shape, folder[1][1]
    (['cat', 'dog'], 2, (2, 3, 3), 1)
"""

from __future__ import annotations

import os
import warnings

from .... import image, recordio
from ..dataset import Dataset, RecordFileDataset

__all__ = ["ImageRecordDataset", "ImageFolderDataset"]


class ImageRecordDataset(RecordFileDataset):
    """The images of a RecordIO file (``.rec`` with its ``.idx``): each sample is
    ``(image NDArray, label)``, the label a float or an array of floats (``IRHeader``), passed
    through ``transform(image, label)`` when given."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        header, payload = recordio.unpack(super().__getitem__(idx))
        img = image.imdecode(payload, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(Dataset):
    """Images in ``root/<class name>/<file>``: ``synsets`` are the class names (sorted), the
    label of an image the index of its folder; ``items`` lists ``(path, label)``. Files other
    than .jpg, .jpeg and .png are skipped with a warning."""

    _EXTENSIONS = (".jpg", ".jpeg", ".png")

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self._root):
            raise FileNotFoundError(f"ImageFolderDataset: no such folder {self._root}")
        self._flag = flag
        self._transform = transform
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=2)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._EXTENSIONS:
                    warnings.warn(f"Ignoring {os.path.join(path, filename)} of type {ext}. "
                                  f"Only support {', '.join(self._EXTENSIONS)}", stacklevel=2)
                    continue
                self.items.append((os.path.join(path, filename), label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        path, label = self.items[idx]
        img = image.imread(path, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label
