"""File formats: MXNet's binary NDArray-list format (``.params``, ``nd.save``/``nd.load``);
``image_formats``: which encoded images may be decoded (imdecode, recordio).

Example:
    >>> import numpy as np
    >>> from hybridgpu import serialization
    >>> blob = serialization.dumps([np.ones(2)], names=["w"])
    >>> recs, names = serialization.loads(blob)
    >>> recs[0].data.tolist(), names
    ([1.0, 1.0], ['w'])
"""

from .ndarray_file import (
    DTYPE_FLAGS,
    LIST_MAGIC,
    V1_MAGIC,
    V2_MAGIC,
    V3_MAGIC,
    ArrayRecord,
    LoadedArray,
    dumps,
    load,
    loads,
    save,
)

__all__ = ["DTYPE_FLAGS", "LIST_MAGIC", "V1_MAGIC", "V2_MAGIC", "V3_MAGIC", "ArrayRecord",
           "LoadedArray", "dumps", "load", "loads", "save"]
