"""Contributed ops (``_contrib_*`` in MXNet), as ``mx.nd.contrib``."""

from .register import populate

populate(globals(), "contrib")
