"""Image ops (``_image_*`` in MXNet), as ``mx.sym.image``: ``to_tensor``, ``normalize``."""

from .register import populate

populate(globals(), "image")
