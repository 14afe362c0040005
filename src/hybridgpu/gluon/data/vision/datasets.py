"""Vision datasets read from local files: ``MNIST``, ``FashionMNIST``, ``CIFAR10``, ``CIFAR100``.

hybridgpu never downloads. Put the original files in ``root`` (MXNet's default folders, under
``$MXNET_HOME`` or ``~/.mxnet``): MNIST's ``train-images-idx3-ubyte.gz`` and friends (gzipped or
not), CIFAR's binary batches (``data_batch_1.bin``... or ``train.bin``/``test.bin``) in ``root``
as MXNet keeps them, or the official ``cifar-10-binary.tar.gz`` / ``cifar-100-binary.tar.gz``
(extracted on first use) or its extracted folder. A missing file raises ``FileNotFoundError``
naming the files and where to get them. Samples are what MXNet 1.9 gives: ``(image, label)``
with the image a uint8 NDArray of shape ``(H, W, C)`` and the label a NumPy ``int32``;
``transform(image, label)`` is applied to each when given. SHA-1 checksums are not checked
(any file in the format is read).

Example:
    >>> import gzip, os, struct, tempfile
    >>> import numpy as np
    >>> root = tempfile.mkdtemp()
    >>> with gzip.open(os.path.join(root, "t10k-labels-idx1-ubyte.gz"), "wb") as f:
    ...     _ = f.write(struct.pack(">II", 2049, 2) + bytes([7, 2]))
    >>> with gzip.open(os.path.join(root, "t10k-images-idx3-ubyte.gz"), "wb") as f:
    ...     _ = f.write(struct.pack(">IIII", 2051, 2, 28, 28) + bytes(2 * 28 * 28))
    >>> test = MNIST(root=root, train=False)
    >>> image, label = test[0]
    >>> len(test), image.shape, image.dtype.__name__, int(label)
    (2, (28, 28, 1), 'uint8', 7)
"""

from __future__ import annotations

import gzip
import os
import struct
import tarfile

import numpy as np

from .... import ndarray as nd
from ..dataset import Dataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100"]


def _default_root(name):
    """MXNet's default folder of a dataset: ``$MXNET_HOME/datasets/<name>`` (``~/.mxnet``)."""
    home = os.path.expanduser(os.environ.get("MXNET_HOME", os.path.join("~", ".mxnet")))
    return os.path.join(home, "datasets", name)


_ROOTS = {name: _default_root(name)
          for name in ("mnist", "fashion-mnist", "cifar10", "cifar100")}


def _missing(name, root, files, url):
    listed = ", ".join(files)
    return FileNotFoundError(
        f"{name}: {listed} not found in {root}. hybridgpu does not download datasets (no network "
        f"access): get the files from {url} yourself and put them in {root}, or pass "
        f"root= the folder that holds them.")


class _LocalDataset(Dataset):
    """An in-memory image dataset: ``_data`` (NDArray of images) and ``_label`` (NumPy)."""

    def __init__(self, root, transform):
        self._root = os.path.expanduser(root)
        self._transform = transform
        self._data = None
        self._label = None
        self._get_data()

    def _get_data(self):
        raise NotImplementedError

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


def _read_idx(path, magic, ndim):
    """The array of an IDX file (MNIST's format), gzipped or not."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        header = f.read(4 + 4 * ndim)
        if len(header) < 4 + 4 * ndim or struct.unpack(">I", header[:4])[0] != magic:
            raise ValueError(f"{path} is not an IDX file with magic number {magic}")
        shape = struct.unpack(f">{ndim}I", header[4:])
        body = f.read()
    if len(body) != int(np.prod(shape)):
        raise ValueError(f"{path}: the header says shape {shape} ({int(np.prod(shape))} bytes) "
                         f"but the file holds {len(body)} bytes")
    return np.frombuffer(body, dtype=np.uint8).reshape(shape)


class MNIST(_LocalDataset):
    """MNIST handwritten digits (http://yann.lecun.com/exdb/mnist), from local files: samples
    are ``(uint8 NDArray (28, 28, 1), int32 label)``."""

    _URL = "http://yann.lecun.com/exdb/mnist"
    _FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

    def __init__(self, root=_ROOTS["mnist"], train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _find(self, name):
        for candidate in (name + ".gz", name):
            path = os.path.join(self._root, candidate)
            if os.path.isfile(path):
                return path
        return None

    def _get_data(self):
        names = self._FILES[bool(self._train)]
        paths = [self._find(name) for name in names]
        if None in paths:
            files = [n + ".gz" for n, p in zip(names, paths) if p is None]
            raise _missing(type(self).__name__, self._root, files, self._URL)
        images = _read_idx(paths[0], 2051, 3)
        labels = _read_idx(paths[1], 2049, 1).astype(np.int32)
        if len(images) != len(labels):
            raise ValueError(f"{type(self).__name__}: {len(images)} images but {len(labels)} "
                             "labels")
        data = images.reshape(len(labels), images.shape[1], images.shape[2], 1)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = labels


class FashionMNIST(MNIST):
    """Fashion-MNIST (https://github.com/zalandoresearch/fashion-mnist): MNIST's file names and
    format, clothing images."""

    _URL = "https://github.com/zalandoresearch/fashion-mnist"

    def __init__(self, root=_ROOTS["fashion-mnist"], train=True,
                 transform=None):
        super().__init__(root, train, transform)


def _extract(archive, root):
    """Extract a tar archive into ``root``, refusing members that would land outside it."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(root, filter="data")
            return
        base = os.path.realpath(root)
        for member in tar.getmembers():
            target = os.path.realpath(os.path.join(root, member.name))
            if not (member.isfile() or member.isdir()) or \
                    os.path.commonpath([base, target]) != base:
                raise ValueError(f"{archive}: refusing to extract {member.name!r}")
        tar.extractall(root)  # noqa: S202  (members checked above)


def _read_cifar_batch(path, label_bytes, label_index):
    raw = np.fromfile(path, dtype=np.uint8)
    record = 3072 + label_bytes
    if raw.size % record:
        raise ValueError(f"{path}: {raw.size} bytes is not a whole number of {record}-byte "
                         "CIFAR records")
    raw = raw.reshape(-1, record)
    images = raw[:, label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return images, raw[:, label_index].astype(np.int32)


class CIFAR10(_LocalDataset):
    """CIFAR-10 (https://www.cs.toronto.edu/~kriz/cifar.html), binary version, from local
    files: samples are ``(uint8 NDArray (32, 32, 3), int32 label)``."""

    _ARCHIVE, _FOLDER = "cifar-10-binary.tar.gz", "cifar-10-batches-bin"
    _TRAIN = [f"data_batch_{i}.bin" for i in range(1, 6)]
    _TEST = ["test_batch.bin"]
    _LABEL_BYTES = 1

    def __init__(self, root=_ROOTS["cifar10"], train=True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _label_index(self):
        return 0

    def _find_files(self, names):
        """The batch files: in ``root`` (MXNet's layout) or in the official archive's folder
        under it; the archive, when present, is extracted if neither has them."""
        for attempt in range(2):
            for folder in (self._root, os.path.join(self._root, self._FOLDER)):
                paths = [os.path.join(folder, name) for name in names]
                if all(map(os.path.isfile, paths)):
                    return paths
            archive = os.path.join(self._root, self._ARCHIVE)
            if attempt or not os.path.isfile(archive):
                break
            _extract(archive, self._root)
        wanted = f"{self._ARCHIVE} (or {', '.join(names)})"
        raise _missing(type(self).__name__, self._root, [wanted],
                       "https://www.cs.toronto.edu/~kriz/cifar.html")

    def _get_data(self):
        paths = self._find_files(self._TRAIN if self._train else self._TEST)
        parts = [_read_cifar_batch(p, self._LABEL_BYTES, self._label_index()) for p in paths]
        data = np.concatenate([images for images, _ in parts])
        self._data = nd.array(data, dtype=data.dtype)
        self._label = np.concatenate([labels for _, labels in parts])


class CIFAR100(CIFAR10):
    """CIFAR-100, binary version: ``fine_label=True`` gives the 100 fine classes, else the 20
    coarse ones."""

    _ARCHIVE, _FOLDER = "cifar-100-binary.tar.gz", "cifar-100-binary"
    _TRAIN, _TEST = ["train.bin"], ["test.bin"]
    _LABEL_BYTES = 2

    def __init__(self, root=_ROOTS["cifar100"], fine_label=False,
                 train=True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_index(self):
        return 1 if self._fine_label else 0
