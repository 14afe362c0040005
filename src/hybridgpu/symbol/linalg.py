"""Symbol functions of the ``linalg`` namespace, generated from the op registry."""

from .register import populate

populate(globals(), "linalg")
