"""``mx.gluon.data.vision``: MNIST, Fashion-MNIST and CIFAR read from local files (nothing is
downloaded) and the image transforms that need no image decoding.

Example:
    >>> from hybridgpu.gluon.data.vision import transforms
    >>> from hybridgpu import nd
    >>> transforms.ToTensor()(nd.zeros((28, 28, 1), dtype="uint8")).shape
    (1, 28, 28)
"""

from . import datasets, transforms
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST
from .image_datasets import ImageFolderDataset, ImageRecordDataset

__all__ = ["datasets", "transforms", "MNIST", "FashionMNIST", "CIFAR10", "CIFAR100",
           "ImageRecordDataset", "ImageFolderDataset"]
