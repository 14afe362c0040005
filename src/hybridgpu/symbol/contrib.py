"""Symbol functions of the ``contrib`` namespace, generated from the op registry."""

from .register import populate

populate(globals(), "contrib")
