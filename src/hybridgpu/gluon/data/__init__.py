"""``mx.gluon.data``: datasets, samplers and the ``DataLoader`` (MXNet 1.9's API).

``num_workers > 0`` loads batches in threads, in order; ``RandomSampler`` (``shuffle=True``)
draws from NumPy's global generator, as MXNet does: seed it with ``numpy.random.seed``.

Example:
    >>> import numpy as np
    >>> from hybridgpu.gluon import data
    >>> ds = data.ArrayDataset(np.arange(8, dtype="float32").reshape(4, 2), [0, 1, 1, 0])
    >>> loader = data.DataLoader(ds, batch_size=3, last_batch="rollover")
    >>> [(x.shape, y.asnumpy().tolist()) for x, y in loader]
    [((3, 2), [0, 1, 1])]
    >>> [(x.shape, y.asnumpy().tolist()) for x, y in loader]
    [((3, 2), [0, 0, 1])]
"""

from . import dataloader, dataset, sampler, vision
from .dataloader import DataLoader
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import BatchSampler, FilterSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset", "Sampler",
           "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler", "DataLoader",
           "dataset", "sampler", "dataloader", "vision"]
