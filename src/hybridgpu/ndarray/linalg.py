"""Linear algebra ops (``_linalg_*`` in MXNet), as ``mx.nd.linalg``: ``gemm2``, ...

Example:
    >>> from hybridgpu import nd
    >>> nd.linalg.gemm2(nd.ones((2, 3)), nd.ones((3, 4))).shape
    (2, 4)
"""

from .register import populate

populate(globals(), "linalg")
