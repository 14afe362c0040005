"""Every op whose MXNet name starts with ``_`` (``_plus_scalar``, ``_zeros``, ...), as in
``mx.nd._internal``.

Example:
    >>> from hybridgpu import nd
    >>> nd._internal._plus_scalar(nd.ones((1,)), scalar=2).asnumpy()
    array([3.], dtype=float32)
"""

from .register import populate

populate(globals(), "_internal")
